"""The public store: where a project's memory lives, and the Python-side
rules applied before the Rust core writes (type inference, parent types).
Caps are data handed in by the caller (the agent layer passes the §6.7
caps of ``membolt.caps``); the store has no cap policy of its own.

Reads (``get``, ``search``, ``keys``, ``render``, ``query`` …) are inherited
unchanged from the Rust ``Store``; this class only adds what needs a Python
rule table or a Python protocol (context managers, class-method
constructors). Every write reaches the core as a typed ``SaveRequest``.
"""

from __future__ import annotations

import bisect
import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from . import _core
from ._core import Cap, Entry, SaveRequest
from .classify import DEFAULT_TYPE, classify, parent_type
from .embedding import DEFAULT_EMBED_TIMEOUT, Embedder
from .errors import ArgumentTypeError
from .semantic import SemanticStore

if TYPE_CHECKING:
    # At run time pathlib is imported where a path is made: with urllib.parse
    # and ipaddress it costs a new process ~4 ms before its first store call.
    from pathlib import Path

STORE_FILE_NAME = "memory.redb"
#: §13.1: where the spools of PostgreSQL projects live, under the store home.
DATABASE_SPOOL_DIRECTORY = "postgresql-spool"
#: §1.4: where the images of PostgreSQL projects live, under the store home.
DATABASE_IMAGE_DIRECTORY = "postgresql-images"
DEFAULT_TIMEOUT = _core.DEFAULT_TIMEOUT
#: §12: the PostgreSQL server of a team's memory, and the project's name on it.
DATABASE_URL_VARIABLE = "MEMBOLT_DATABASE_URL"
PROJECT_VARIABLE = "MEMBOLT_PROJECT"


def encode_cwd(path: str | os.PathLike[str]) -> str:
    """§1.1: the directory name of a project's store.

    Leading ``/`` and ``\\`` are stripped, every ``/``, ``\\`` and ``:``
    becomes ``-``, and the result is wrapped in ``--``.
    """
    text = os.fspath(path).lstrip("/\\")
    for separator in "/\\:":
        text = text.replace(separator, "-")
    return f"--{text}--"


def default_base_dir() -> Path:
    """``$MEMBOLT_HOME`` if set, else ``~/.membolt/memory`` (§1.1).

    A leading ``~`` of ``$MEMBOLT_HOME`` is the home directory, as a shell
    would expand it; a relative path is refused (ValueError): it would
    name a different place from every working directory, so processes of
    one project would not find each other's store.
    """
    from pathlib import Path

    home = os.environ.get("MEMBOLT_HOME")
    if home:
        base = Path(home).expanduser()
        if not base.is_absolute():
            raise ValueError(
                f"MEMBOLT_HOME must be an absolute path (or start with ~), not {home!r}: "
                "a relative one would name another place from every working directory"
            )
        return base
    return Path.home() / ".membolt" / "memory"


def project_store_path(
    cwd: str | os.PathLike[str] | None = None,
    base_dir: str | os.PathLike[str] | None = None,
) -> Path:
    """The store file of the project at ``cwd`` (default: the working directory).

    A relative ``cwd`` is made absolute first, so every caller in the same
    project reaches the same store whatever its own working directory.
    """
    from pathlib import Path

    base = Path(base_dir) if base_dir is not None else default_base_dir()
    return base / encode_cwd(_absolute(cwd)) / STORE_FILE_NAME


def is_database_url(text: object) -> bool:
    """§12: whether ``text`` is a ``postgresql://`` (or ``postgres://``) URL
    rather than a store file."""
    return isinstance(text, str) and _core.is_database_url(text)


def open_store(
    db: str | os.PathLike[str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    project: str | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    base_dir: str | os.PathLike[str] | None = None,
    embedder: Embedder | str | None = None,
) -> MemoryStore:
    """The store a caller means: the one place that decides it, for the
    library (:meth:`MemoryStore.for_project`), the CLI, the MCP server and
    the hooks.

    * ``db``, a ``postgresql://`` URL or a store file, when given;
    * else ``$MEMBOLT_DATABASE_URL`` when it is set (and ``base_dir`` is
      not: a base directory asks for a file);
    * else the file of the project at ``cwd`` under ``base_dir`` (§1.1).

    On a PostgreSQL server the project is ``project``, else
    ``$MEMBOLT_PROJECT``, else ``encode_cwd(cwd)`` (§12). A ``project`` for
    a store file is a ``ValueError``: a file holds one project.

    §15.4: ``embedder``, an embedder or a setting naming one (see
    ``membolt.embedders``), else ``$MEMBOLT_EMBEDDER``. A setting that names
    no usable embedder is reported on stderr and the store opened without
    one: memory never depends on a model.
    """
    from .embedders import choose

    chosen = choose(embedder)
    return _open(MemoryStore, db, cwd, project, timeout=timeout, base_dir=base_dir, embedder=chosen)


def _open(
    cls: type[MemoryStore],
    db: str | os.PathLike[str] | None,
    cwd: str | os.PathLike[str] | None,
    project: str | None,
    *,
    timeout: float,
    base_dir: str | os.PathLike[str] | None,
    embedder: Embedder | None = None,
    embed_timeout: float | None = DEFAULT_EMBED_TIMEOUT,
) -> MemoryStore:
    semantic: dict[str, Any] = {"embedder": embedder, "embed_timeout": embed_timeout}
    if db is None and base_dir is None:
        db = os.environ.get(DATABASE_URL_VARIABLE) or None
    if is_database_url(db):
        assert isinstance(db, str)
        name = project
        if name is None:
            name = os.environ.get(PROJECT_VARIABLE) or encode_cwd(_absolute(cwd))
        return cls(db, project=name, timeout=timeout, **semantic)
    if project is not None:
        raise ValueError(
            "a project is chosen on a PostgreSQL server (a postgresql:// URL); "
            "a store file holds one project"
        )
    if db is None:
        db = project_store_path(cwd, base_dir)
    return cls(db, timeout=timeout, **semantic)


def _absolute(cwd: str | os.PathLike[str] | None) -> str:
    return os.path.abspath(os.fspath(cwd) if cwd is not None else os.getcwd())


#: One operation of a ``batch()`` block, as the core takes it.
BatchOp = (
    tuple[Literal["save"], SaveRequest]
    | tuple[Literal["delete"], str]
    | tuple[Literal["link", "unlink"], str, str]
)
BatchItem = (
    tuple[str, str]
    | tuple[str, str, str | None]
    | tuple[str, str, str | None, Sequence[str] | None]
)


def save_request(
    key: object,
    value: object,
    type: object = None,
    namespace: object = None,
    references: object = None,
) -> SaveRequest:
    """A save as the core takes it: the caller's fields, with the Python rules
    filled in (the type the key implies, the parent type of the new type).
    Wrong argument types are refused here, naming the argument."""
    inferred = classify(key) if isinstance(key, str) else DEFAULT_TYPE
    new_type = type if isinstance(type, str) else inferred
    return SaveRequest(
        key,
        value,
        type=type,
        inferred_type=inferred,
        namespace=namespace,
        references=references,
        parent_type=parent_type(new_type),
    )


def _fields(item: object, least: int, most: int, what: str) -> tuple[Any, ...]:
    """The fields of one tuple of ``save_many``; a string (which would unpack
    into characters) or a mapping is refused rather than misread."""
    if not isinstance(item, tuple | list):
        raise ArgumentTypeError(f"{what} must be a tuple, not {type(item).__name__}")
    if not least <= len(item) <= most:
        count = f"{least}" if least == most else f"{least} to {most}"
        raise ValueError(f"{what} must have {count} fields, not {len(item)}")
    return tuple(item)


class MemoryStore(SemanticStore):
    """A persistent, project-scoped memory store: one redb file, or (§12) one
    project on a PostgreSQL server, ``MemoryStore("postgresql://user:pw@host/db",
    project="acme")``.

    Safe to use from several threads and several processes at once. A file
    is opened only for the duration of a burst of calls, so other processes
    can use it in between; when another process holds the store longer than
    ``timeout`` seconds, calls raise :class:`~membolt.StoreBusyError`.

    §15.4: ``embedder=E`` (an object with ``name``, ``dims`` and
    ``embed(texts)``) adds recall by meaning; ``embed_timeout`` bounds each
    of its calls (seconds; ``None``: no bound, no worker thread). See
    :mod:`membolt.semantic`.
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> MemoryStore:
        # §1.4: a PostgreSQL project's image lives under the store home (a
        # store file keeps its own beside it).
        # A bad MEMBOLT_HOME means no image, nothing more.
        if args and is_database_url(args[0]) and "image_dir" not in kwargs:
            with contextlib.suppress(ValueError):
                kwargs["image_dir"] = default_base_dir() / DATABASE_IMAGE_DIRECTORY
        store = super().__new__(cls, *args, **kwargs)
        assert isinstance(store, MemoryStore)
        return store

    @classmethod
    def for_project(
        cls,
        cwd: str | os.PathLike[str] | None = None,
        base_dir: str | os.PathLike[str] | None = None,
        *,
        db: str | None = None,
        project: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        embedder: Embedder | None = None,
        embed_timeout: float | None = DEFAULT_EMBED_TIMEOUT,
        url: str | None = None,
    ) -> MemoryStore:
        """The store of the project at ``cwd``: on the PostgreSQL server
        ``db`` or ``$MEMBOLT_DATABASE_URL`` when either is set, as
        ``project`` (default ``$MEMBOLT_PROJECT``, else ``encode_cwd(cwd)``,
        §12); otherwise its file under ``base_dir`` (§1.1).

        ``db`` is named as in :func:`open_store` and the command line's
        ``--db``; ``url`` is its name before 0.3, still accepted with a
        ``DeprecationWarning``."""
        if url is not None:
            import warnings

            if db is not None:
                raise ValueError("db and url name the same server; give db only")
            warnings.warn(
                "MemoryStore.for_project(url=...) is now for_project(db=...)",
                DeprecationWarning,
                stacklevel=2,
            )
            db = url
        if db is not None and not is_database_url(db):
            raise ValueError(
                "db must be a postgresql:// (or postgres://) address; "
                "open a store file with MemoryStore(path)"
            )
        if db is not None and base_dir is not None:
            raise ValueError("db and base_dir choose two different stores; give one")
        return _open(
            cls,
            db,
            cwd,
            project,
            timeout=timeout,
            base_dir=base_dir,
            embedder=embedder,
            embed_timeout=embed_timeout,
        )

    def save(
        self,
        key: str,
        value: str,
        type: str | None = None,
        namespace: str | None = None,
        references: Sequence[str] | None = None,
    ) -> Entry:
        """Create or overwrite one entry (§1.3) and return it.

        A new key gets ``type`` or the inferred type (§2), ``namespace`` or
        ``""``, and ``references`` or its automatic parent (§3.2). An existing
        key keeps its type, namespace and references unless given.
        """
        request = save_request(key, value, type, namespace, references)
        self.apply_spool()
        return self._save(request)

    def save_many(
        self,
        items: Iterable[BatchItem],
        *,
        caps: CapsArgument = None,
        then: Iterable[tuple[str, str]] = (),
    ) -> list[Entry]:
        """The batch save of §3.3: one transaction, chained links.

        Items are ``(key, value)``, ``(key, value, type)`` or ``(key, value,
        type, references)``. A new entry links to the previous key of the batch
        (tool results and the first entry: to their automatic parent) unless
        it has references; an existing entry keeps its creation time and
        references. ``caps`` are applied in the same transaction: a sequence
        of :class:`Cap`, or a function of the batch's keys that returns one
        (``membolt.extraction_caps``, the §6.7 caps the extraction hooks
        apply); with none (``None`` or ``False``) nothing is deleted. The
        store applies whatever caps it is handed and has no policy of its
        own. ``then`` holds ``(key, value)`` pairs saved with
        the plain rules of :meth:`save` after the batch, in the same
        transaction (their entries are not returned).
        """
        requests = []
        for item in items:
            fields = (*_fields(item, 2, 4, "save_many item"), None, None)
            key, value, explicit, references = fields[:4]
            requests.append(save_request(key, value, explicit, None, references))
        plain = [save_request(*_fields(pair, 2, 2, "then item")) for pair in then]
        applied = _caps_for([request.key for request in requests], caps)
        self.apply_spool()
        return self._save_many(requests, caps=applied, then=plain)

    def delete(self, key: str) -> bool:
        """Delete one entry; True when it existed (§1.3)."""
        self.apply_spool()
        return super().delete(key)

    def link(self, key: str, parent: str) -> bool:
        """Add ``parent`` to the references of ``key`` (§3.4)."""
        self.apply_spool()
        return super().link(key, parent)

    def unlink(self, key: str, parent: str) -> bool:
        """Remove ``parent`` from the references of ``key`` (§3.4)."""
        self.apply_spool()
        return super().unlink(key, parent)

    def import_entries(self, entries: Iterable[Entry]) -> int:
        """Write entries exactly as given (stamps included); returns how many
        changed. Used by ``membolt import``."""
        self.apply_spool()
        return super().import_entries(entries)

    # ----- the spool of events kept for a busy store (§13.1) ----------------

    @property
    def spool_path(self) -> Path:
        """Where events wait when this store was busy (see ``membolt.spool``):
        ``<store file>.spool``; for a PostgreSQL project, a file of its own
        under the store home (``$MEMBOLT_HOME``)."""
        from pathlib import Path

        cached: Path | None = self.__dict__.get("_spool_path")
        if cached is None:
            if self.path is not None:
                cached = Path(f"{os.fspath(self.path)}.spool")
            else:
                import hashlib

                name = hashlib.sha1(self.location.encode("utf-8", "replace")).hexdigest()
                cached = default_base_dir() / DATABASE_SPOOL_DIRECTORY / f"{name}.spool"
            self.__dict__["_spool_path"] = cached
        return cached

    def apply_spool(self) -> int:
        """Applies the events kept in this store's spool, in order, each once
        (§13.1); returns how many. Every write calls it first; when the spool
        is empty it costs one ``stat``. Holds the store meanwhile; raises the
        store's error when it is busy."""
        path = self.spool_path
        try:
            if os.stat(path).st_size == 0:
                return 0
        except OSError:
            return 0  # no spool: the common case, one failed stat
        from . import spool

        draining = _draining_stores()
        if id(self) in draining:
            return 0  # the writes of the records being applied
        with self.hold():
            draining.add(id(self))
            try:
                return spool.drain(path, lambda record: spool.apply_record(self, record))
            finally:
                draining.discard(id(self))

    def keys_under(self, prefix: str) -> list[str]:
        """The keys that start with ``prefix``, sorted (``keys()`` for ``""``).

        For adapters that map a hierarchy onto key prefixes (the framework
        integrations); it walks the sorted keys, so a prefix costs as much
        as ``keys()`` does.
        """
        if not isinstance(prefix, str):
            raise ArgumentTypeError(f"prefix must be a str, not {type(prefix).__name__}")
        keys = self.keys()
        start = bisect.bisect_left(keys, prefix)
        end = start
        while end < len(keys) and keys[end].startswith(prefix):
            end += 1
        return keys[start:end]

    def batch(self) -> Batch:
        """Group plain writes into one transaction::

            with store.batch() as b:
                b.save("k", "v")
                b.delete("old")

        Nothing is written if the block raises. A batch opened inside another
        batch of the same store (in the same thread) joins the outer one: its
        operations are written with the outer batch's, or not at all.
        """
        return Batch(self)

    @contextmanager
    def hold(self) -> Iterator[MemoryStore]:
        """Keep the store open (and other processes out) for the block."""
        self._hold()
        try:
            yield self
        finally:
            self._unhold()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemoryStore({self.location!r})"


class Batch:
    """Operations collected by :meth:`MemoryStore.batch`, applied on exit."""

    def __init__(self, store: MemoryStore) -> None:
        self._store = store
        self._ops: list[BatchOp] = []
        self.results: list[Any] = []

    def save(
        self,
        key: str,
        value: str,
        type: str | None = None,
        namespace: str | None = None,
        references: Sequence[str] | None = None,
    ) -> None:
        self._ops.append(("save", save_request(key, value, type, namespace, references)))

    def delete(self, key: str) -> None:
        self._ops.append(("delete", key))

    def link(self, key: str, parent: str) -> None:
        self._ops.append(("link", key, parent))

    def unlink(self, key: str, parent: str) -> None:
        self._ops.append(("unlink", key, parent))

    def __enter__(self) -> Batch:
        _open_batches().append(self)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        stack = _open_batches()
        stack.remove(self)
        ops, self._ops = self._ops, []
        if exc_type is not None or not ops:
            return
        # A batch inside another batch of the same store (in this thread)
        # joins it: its operations commit with the outer ones, or not at all.
        enclosing = next((b for b in reversed(stack) if b._store is self._store), None)
        if enclosing is not None:
            enclosing._ops.extend(ops)
        else:
            self._store.apply_spool()
            self.results = self._store._apply_batch(ops)


_batches = threading.local()
_drains = threading.local()


def _draining_stores() -> set[int]:
    """The stores whose spool this thread is applying (by ``id``)."""
    stores: set[int] | None = getattr(_drains, "stores", None)
    if stores is None:
        stores = _drains.stores = set()
    return stores


def _open_batches() -> list[Batch]:
    """The batches open in this thread, innermost last."""
    stack: list[Batch] | None = getattr(_batches, "stack", None)
    if stack is None:
        stack = _batches.stack = []
    return stack


_stores: dict[tuple[str, str], MemoryStore] = {}
_stores_lock = threading.Lock()


def get_or_create_store(cwd: str | os.PathLike[str] | None = None) -> MemoryStore:
    """The process-wide store of the project at ``cwd``, created on first use."""
    project = _absolute(cwd)
    # The server in use is part of the key: a process may set the variable.
    key = (os.environ.get(DATABASE_URL_VARIABLE) or "", project)
    with _stores_lock:
        store = _stores.get(key)
        if store is None or store.closed:
            store = MemoryStore.for_project(project)
            _stores[key] = store
        return store


#: What ``save_many(caps=...)`` takes: nothing, caps, or a function of the
#: batch's keys that returns them.
CapsArgument: TypeAlias = bool | Sequence[Cap] | Callable[[Sequence[str]], Sequence[Cap]] | None


def _caps_for(keys: Sequence[str], caps: CapsArgument) -> list[Cap]:
    """The caps a batch that writes ``keys`` applies (see ``save_many``)."""
    if caps is None or caps is False:
        return []
    if caps is True:
        raise ArgumentTypeError(
            "caps=True was replaced in 0.3: pass caps=membolt.extraction_caps "
            "(or a list of membolt.Cap)"
        )
    chosen = caps(keys) if callable(caps) else caps
    if isinstance(chosen, (str, bytes)) or not isinstance(chosen, Sequence):
        raise ArgumentTypeError(f"caps must be a sequence of Cap, not {type(chosen).__name__}")
    for cap in chosen:
        if not isinstance(cap, Cap):
            raise ArgumentTypeError(f"caps must hold Cap objects, not {type(cap).__name__}")
    return list(chosen)
