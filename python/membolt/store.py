"""The public store: where a project's memory lives, and the Python-side
rules applied before the Rust core writes (type inference, parent types,
the extraction caps when asked for).

Reads (``get``, ``search``, ``keys``, ``render``, ``query`` …) are inherited
unchanged from the Rust ``Store``; this class only adds what needs a Python
rule table or a Python protocol (context managers, class-method
constructors). Every write reaches the core as a typed ``SaveRequest``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

from . import _core
from ._core import Entry, SaveRequest
from .caps import extraction_caps
from .classify import DEFAULT_TYPE, classify, parent_type
from .embedding import DEFAULT_EMBED_TIMEOUT, Embedder
from .errors import ArgumentTypeError
from .semantic import SemanticStore

STORE_FILE_NAME = "memory.redb"
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
    """``$MEMBOLT_HOME`` if set, else ``~/.membolt/memory``."""
    home = os.environ.get("MEMBOLT_HOME")
    if home:
        return Path(home)
    return Path.home() / ".membolt" / "memory"


def project_store_path(
    cwd: str | os.PathLike[str] | None = None,
    base_dir: str | os.PathLike[str] | None = None,
) -> Path:
    """The store file of the project at ``cwd`` (default: the working directory).

    A relative ``cwd`` is made absolute first, so every caller in the same
    project reaches the same store whatever its own working directory.
    """
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

    @classmethod
    def for_project(
        cls,
        cwd: str | os.PathLike[str] | None = None,
        base_dir: str | os.PathLike[str] | None = None,
        *,
        url: str | None = None,
        project: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        embedder: Embedder | None = None,
        embed_timeout: float | None = DEFAULT_EMBED_TIMEOUT,
    ) -> MemoryStore:
        """The store of the project at ``cwd``: on the PostgreSQL server
        ``url`` or ``$MEMBOLT_DATABASE_URL`` when either is set, as
        ``project`` (default ``$MEMBOLT_PROJECT``, else ``encode_cwd(cwd)``,
        §12); otherwise its file under ``base_dir`` (§1.1)."""
        if url is not None and not is_database_url(url):
            raise ValueError("url must be a postgresql:// (or postgres://) address")
        if url is not None and base_dir is not None:
            raise ValueError("url and base_dir choose two different stores; give one")
        return _open(
            cls,
            url,
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
        return self._save(save_request(key, value, type, namespace, references))

    def save_many(
        self,
        items: Iterable[BatchItem],
        *,
        caps: bool = False,
        then: Iterable[tuple[str, str]] = (),
    ) -> list[Entry]:
        """The batch save of §3.3: one transaction, chained links.

        Items are ``(key, value)``, ``(key, value, type)`` or ``(key, value,
        type, references)``. A new entry links to the previous key of the batch
        (tool results and the first entry: to their automatic parent) unless
        it has references; an existing entry keeps its creation time and
        references. With ``caps=True`` the §6.7 caps of the extraction hooks
        are applied in the same transaction (see ``membolt.caps``); without,
        nothing is deleted. ``then`` holds ``(key, value)`` pairs saved with
        the plain rules of :meth:`save` after the batch, in the same
        transaction (their entries are not returned).
        """
        if not isinstance(caps, bool):
            raise ArgumentTypeError(f"caps must be a bool, not {type(caps).__name__}")
        requests = []
        for item in items:
            fields = (*_fields(item, 2, 4, "save_many item"), None, None)
            key, value, explicit, references = fields[:4]
            requests.append(save_request(key, value, explicit, None, references))
        plain = [save_request(*_fields(pair, 2, 2, "then item")) for pair in then]
        applied = extraction_caps(request.key for request in requests) if caps else []
        return self._save_many(requests, caps=applied, then=plain)

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
            self.results = self._store._apply_batch(ops)


_batches = threading.local()


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
