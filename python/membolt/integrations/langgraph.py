"""membolt behind LangGraph's store: :class:`MemboltStore` and
:class:`AsyncMemboltStore`, drop-in ``BaseStore`` implementations
(``pip install 'membolt[langgraph]'``)::

    from membolt.integrations.langgraph import MemboltStore

    with MemboltStore.from_conn_string("memory.redb") as store:  # or ":memory:",
        store.put(("users", "42"), "prefs", {"theme": "dark"})    # or postgresql://
        store.search(("users",), query="theme")

The mapping onto membolt's public API (:class:`membolt.MemoryStore`):

* An item is one entry. Its key is ``key_prefix`` (``"langgraph:"``) then
  the namespace's labels and the item's key joined by ``/``, each with ``%``
  written ``%25`` and ``/`` written ``%2F``; so ``("users", "42"), "prefs"``
  is ``langgraph:users/42/prefs``, the last ``/`` always ends the namespace,
  and a namespace prefix is a key prefix that stops at a label boundary.
  The value is the item as JSON text; the entry's type is ``langgraph``,
  which has no automatic parent (§3.1), and its namespace field holds the
  joined labels. ``created_at``/``updated_at`` are the entry's (§1.2).
* A batch's reads see the store as it was before the batch (as LangGraph's
  SQLite and Postgres stores do); its puts and deletes, deduplicated (the
  last one of a key wins), are one membolt transaction (§1.3): all of them
  or none, also with other processes and machines writing.
* ``search(query=...)`` without an ``index`` config ranks by membolt's
  recall (§15, ``search_words_scored``): the items holding a term of the
  query first, in §15.2's order, with their BM25 score; then the others in
  scope with score ``0.0``, newest first. Without a query, items come
  newest first with no score. Filters take ``$eq $ne $gt $gte $lt $lte`` on
  dotted paths, with the SQL stores' meaning of a missing field (it matches
  only ``None``).
* With LangGraph's ``index`` config (``dims``, ``embed``: an
  ``Embeddings``, a function or a ``"provider:model"`` string, ``fields``
  or the SQLite store's ``text_fields``, default ``["$"]``), the store's
  embedder (§15.4) is an :class:`IndexEmbedder`: an item's texts are what
  LangGraph's ``get_text_at_path`` finds at its fields (or at ``put``'s
  ``index=[...]`` paths; none for ``index=False``), each a vector of the
  entry's set. ``search(query=...)`` then ranks the items in scope by the
  cosine of the query with the best of their vectors
  (``search_vectors_scored``), with that cosine as ``score``, as
  LangGraph's SQLite, Postgres and in-memory stores do; the items without
  a vector follow, newest first, with no score. A query the embedder cannot
  embed is ranked by words, as above. A ``put`` whose ``index`` differs
  from the config keeps it in a second entry under ``key_prefix +
  ".index/"``, so that the item is embedded the same way again (another
  process, a change of model).
* TTL (LangGraph's ``ttl`` config, ``put(..., ttl=)``, ``sweep_ttl``,
  ``start_ttl_sweeper``) keeps each expiry in a second entry under
  ``key_prefix + ".ttl/"`` (a ``.`` never starts a label: keys under
  ``key_prefix + "."`` are never items), so that refreshing an expiry on
  read leaves the item's ``updated_at`` alone.
  Refresh and sweep hold the store (other processes wait) while they check
  and write, so an expiry never outlives a put without TTL that raced it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import json
import logging
import tempfile
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager, nullcontext
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal

from langchain_core.embeddings import Embeddings
from langgraph.store.base import (
    BaseStore,
    GetOp,
    IndexConfig,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
    validate_op_namespace,
)
from langgraph.store.base.batch import AsyncBatchedBaseStore
from langgraph.store.base.embed import EmbeddingsLambda

from .._core import Entry
from ..embedding import EmbedderError
from ..store import DEFAULT_TIMEOUT, STORE_FILE_NAME, MemoryStore, open_store

__all__ = [
    "DEFAULT_KEY_PREFIX",
    "ENTRY_TYPE",
    "AsyncMemboltStore",
    "IndexEmbedder",
    "MemboltIndexConfig",
    "MemboltStore",
]

logger = logging.getLogger(__name__)

DEFAULT_KEY_PREFIX: Final = "langgraph:"
#: The type of an item's entry, and of the entry holding an item's expiry;
#: neither has an automatic parent (§3.1).
ENTRY_TYPE: Final = "langgraph"
TTL_ENTRY_TYPE: Final = "langgraph_ttl"
INDEX_ENTRY_TYPE: Final = "langgraph_index"
#: The first segment of the expiry entries' keys: never a namespace label,
#: since LangGraph refuses a label holding a ``.``.
TTL_SEGMENT: Final = ".ttl"
#: The first segment of the entries holding a put's own ``index`` argument.
INDEX_SEGMENT: Final = ".index"
#: The filter keys LangGraph's SQL stores accept (dotted paths).
_FILTER_KEY_CHARACTERS = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-"
)
_ORDERED = ("$gt", "$gte", "$lt", "$lte")
_OPERATORS = ("$eq", "$ne", *_ORDERED)


def _escape(text: str) -> str:
    if "%" in text:
        text = text.replace("%", "%25")
    if "/" in text:
        text = text.replace("/", "%2F")
    return text


def _unescape(text: str) -> str:
    # Every "%" starts an escape, so "%2F" first, then "%25", is unambiguous.
    if "%" in text:
        text = text.replace("%2F", "/").replace("%25", "%")
    return text


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


# Both caches serve the reads of an agent's hot items (its own namespaces,
# the stamps of the items it reads every step); each entry is immutable.
@functools.lru_cache(maxsize=4096)
def _timestamp(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)


@functools.lru_cache(maxsize=1024)
def _labels(namespace: tuple[str, ...]) -> str:
    """The namespace's part of a key: each label escaped and followed by
    ``/`` (``""`` for the empty namespace). A label LangGraph refuses raises
    ``InvalidNamespaceError`` (and is not cached)."""
    validate_op_namespace(GetOp(namespace, ""))
    return "".join(f"{_escape(label)}/" for label in namespace)


def _labels_of(namespace: Iterable[str]) -> str:
    try:
        return _labels(tuple(namespace))
    except TypeError:  # a label that cannot be hashed is no string either
        validate_op_namespace(GetOp(tuple(namespace), ""))
        raise


def _dump(value: Mapping[str, Any]) -> str:
    return json.dumps(dict(value), ensure_ascii=False, separators=(",", ":"))


def _load(entry: Entry) -> dict[str, Any]:
    try:
        value = json.loads(entry.value)
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise ValueError(
            f"the entry {entry.key!r} is not a LangGraph item (its value is not a JSON "
            "object); keep other entries out of the adapter's key prefix"
        )
    return value


# ----- filters ----------------------------------------------------------------------

Condition = tuple[list[str], str, Any]


def _conditions(filter: Mapping[str, Any] | None) -> list[Condition]:
    """The filter as (path, operator, operand) triples, checked before the
    batch runs: an unknown operator or a key outside LangGraph's filter-key
    alphabet is a ``ValueError``."""
    conditions: list[Condition] = []
    for key, expected in (filter or {}).items():
        if not isinstance(key, str) or not key or not _FILTER_KEY_CHARACTERS.issuperset(key):
            raise ValueError(
                f"Invalid filter key: '{key}'. Filter keys must contain only alphanumeric "
                "characters, underscores, dots, and hyphens."
            )
        path = key.split(".")
        if isinstance(expected, Mapping) and any(str(k).startswith("$") for k in expected):
            for operator, operand in expected.items():
                if operator not in _OPERATORS:
                    raise ValueError(f"Unsupported operator: {operator}")
                conditions.append((path, operator, operand))
        else:
            conditions.append((path, "$eq", expected))
    return conditions


def _field(value: Any, path: list[str]) -> Any:
    for part in path:
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "other"


def _json_equal(left: Any, right: Any) -> bool:
    """JSON equality: ``true`` is not ``1``, ``1`` is ``1.0``, NaN equals nothing."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        return len(left) == len(right) and all(map(_json_equal, left, right))
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        return left.keys() == right.keys() and all(_json_equal(left[k], right[k]) for k in left)
    if isinstance(left, list | tuple | Mapping) or isinstance(right, list | tuple | Mapping):
        return False
    return bool(left == right)


def _holds(value: dict[str, Any], conditions: list[Condition]) -> bool:
    return all(_compare(_field(value, path), op, operand) for path, op, operand in conditions)


def _compare(actual: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return _json_equal(actual, operand)
    if actual is None:  # a missing field (or null) matches only $eq None
        return False
    if operator == "$ne":
        return not _json_equal(actual, operand)
    if _kind(actual) != _kind(operand) or _kind(actual) not in ("number", "string"):
        return False
    if operator == "$gt":
        return bool(actual > operand)
    if operator == "$gte":
        return bool(actual >= operand)
    if operator == "$lt":
        return bool(actual < operand)
    return bool(actual <= operand)


def _namespace_matches(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(f"Unsupported match type: {condition.match_type}")
    return all(wanted in ("*", label) for label, wanted in pairs)


# ----- vectors ----------------------------------------------------------------------


class MemboltIndexConfig(IndexConfig, total=False):
    """LangGraph's ``IndexConfig`` with the keys the adapter also reads."""

    #: The SQLite store's name for ``fields`` (read when ``fields`` is not given).
    text_fields: list[str] | str | None
    #: Only ``"cosine"``: scores are cosine similarities.
    distance_type: Literal["cosine"]
    #: The model's name, which tags its stored vectors (§15.4); by default
    #: made of ``embed``: the provider string, or the class or function's
    #: qualified name and its ``model`` attribute. Give one when that does
    #: not tell two models apart.
    name: str


def _model_name(embed: object) -> str:
    """The default model name of ``embed`` (see :class:`MemboltIndexConfig`):
    the same in every process."""
    if isinstance(embed, str):
        return embed
    if isinstance(embed, EmbeddingsLambda):
        embed = getattr(embed, "func", None) or getattr(embed, "afunc", None)
    # A function by its own name; an object (Embeddings, a callable) by its class's.
    kind = embed if hasattr(embed, "__qualname__") else type(embed)
    name = f"{getattr(kind, '__module__', '')}.{getattr(kind, '__qualname__', '')}"
    for attribute in ("model", "model_name"):
        model = getattr(embed, attribute, None)
        if isinstance(model, str):
            return f"{name}({model})"
    return name


def _fields(index: Mapping[str, Any]) -> list[str]:
    fields = index.get("fields")
    if fields is None:
        fields = index.get("text_fields")
    if fields is None:
        return ["$"]
    if isinstance(fields, str):
        return [fields]
    if not isinstance(fields, Sequence) or not all(isinstance(f, str) for f in fields):
        raise ValueError(f"index fields must be a list of paths, not {fields!r}")
    return list(fields) or ["$"]


class IndexEmbedder:
    """LangGraph's embeddings as membolt's embedder (§15.4): what
    :class:`MemboltStore` gives its store for an ``index`` config.

    ``embed`` and ``embed_query`` are the embeddings' ``embed_documents`` and
    ``embed_query`` (their async twins, run to completion, for an async
    function). ``entry_texts`` is LangGraph's rule for an item: the texts
    ``get_text_at_path`` finds at the config's fields, or at the paths of
    the ``index`` argument of the item's last ``put`` (kept in the entry
    under ``key_prefix + ".index/"``: nothing for ``index=False``), empty
    texts left out. The adapter's other entries (``key_prefix + "."``) have
    none; an entry outside ``key_prefix`` has membolt's default text."""

    def __init__(self, index: Mapping[str, Any], key_prefix: str = DEFAULT_KEY_PREFIX) -> None:
        dims = index.get("dims")
        if not isinstance(dims, int) or isinstance(dims, bool) or dims < 1:
            raise ValueError(f"index dims must be a positive int, not {dims!r}")
        distance = index.get("distance_type", "cosine")
        if distance != "cosine":
            raise ValueError(
                f"distance_type {distance!r}: membolt scores by cosine similarity only"
            )
        embed = index.get("embed")
        self.embeddings: Embeddings = ensure_embeddings(embed)
        self.fields = _fields(index)
        self._paths: list[str | list[str]] = [
            "$" if field == "$" else tokenize_path(field) for field in self.fields
        ]
        self.dims = dims
        self.key_prefix = key_prefix
        model = index.get("name") or _model_name(embed)
        self.name = f"langgraph {model} fields={json.dumps(self.fields)} prefix={key_prefix}"
        self._async = isinstance(self.embeddings, EmbeddingsLambda) and not hasattr(
            self.embeddings, "func"
        )
        self._store: weakref.ref[MemoryStore] | None = None

    def attach(self, store: MemoryStore) -> None:
        """Reads the items' own ``index`` arguments from ``store``."""
        self._store = weakref.ref(store)

    def embed(self, texts: list[str]) -> list[list[float]]:
        if self._async:
            return asyncio.run(self.embeddings.aembed_documents(texts))
        return self.embeddings.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        if self._async:
            return asyncio.run(self.embeddings.aembed_query(text))
        return self.embeddings.embed_query(text)

    def entry_texts(self, key: str, value: str) -> list[str]:
        prefix = self.key_prefix
        if not key.startswith(prefix):
            return [f"{key}\n{value}"]
        if key.startswith(prefix + "."):
            return []
        store = self._store() if self._store is not None else None
        if store is None:
            raise EmbedderError("the LangGraph adapter's embedder is not attached to its store")
        paths: Sequence[str | list[str]] = self._paths
        own = store.get(f"{prefix}{INDEX_SEGMENT}/{key[len(prefix) :]}")
        if own is not None:
            paths = json.loads(own.value) or []
        try:
            item = json.loads(value)
        except ValueError:
            return []
        if not isinstance(item, dict):
            return []
        return [text for path in paths for text in get_text_at_path(item, path) if text.strip()]


# ----- opening ----------------------------------------------------------------------

_write_locks: dict[str, threading.Lock] = {}
_write_locks_guard = threading.Lock()


def _write_lock(store: MemoryStore) -> threading.Lock:
    """One lock per store location in this process, so that the adapters'
    check-then-write steps (TTL refresh and sweep) never interleave with a
    put of another thread; other processes are kept out by ``hold()``."""
    with _write_locks_guard:
        return _write_locks.setdefault(store.location, threading.Lock())


@contextmanager
def _opened(
    conn_string: str,
    project: str | None,
    timeout: float,
    index: IndexConfig | None,
    key_prefix: str,
) -> Iterator[MemoryStore]:
    # With an index, the store is opened with its embedder (not $MEMBOLT_EMBEDDER's).
    embedder = None if index is None else IndexEmbedder(index, key_prefix)
    if conn_string == ":memory:":
        # membolt has no memory-only store: a file that lives as long as the block.
        with (
            tempfile.TemporaryDirectory(prefix="membolt-langgraph-") as directory,
            MemoryStore(
                Path(directory) / STORE_FILE_NAME, timeout=timeout, embedder=embedder
            ) as store,
        ):
            yield store
    else:
        with open_store(conn_string, project=project, timeout=timeout, embedder=embedder) as store:
            yield store


def _index_embedder(store: MemoryStore, index: IndexConfig, key_prefix: str) -> IndexEmbedder:
    """The store's embedder for ``index``: given to it when it has none."""
    wanted = IndexEmbedder(index, key_prefix)
    current = store.embedder
    if current is None:
        store.embedder = current = wanted
    elif not (
        isinstance(current, IndexEmbedder)
        and (current.name, current.dims) == (wanted.name, wanted.dims)
    ):
        raise ValueError(
            f"the store embeds with {getattr(current, 'name', current)!r}; an index config "
            "needs a store without an embedder (the adapter gives it the index's)"
        )
    current.attach(store)
    return current


def _new_item(namespace: tuple[str, ...], key: str, entry: Entry) -> Item:
    return Item(
        value=_load(entry),
        key=key,
        namespace=namespace,
        created_at=_timestamp(entry.created_at),
        updated_at=_timestamp(entry.updated_at),
    )


class MemboltStore(BaseStore):
    """LangGraph's ``BaseStore`` over a membolt store (see the module's
    documentation for the mapping). ``store`` stays the caller's: this
    object never closes it (``from_conn_string`` opens and closes one)."""

    supports_ttl = True

    def __init__(
        self,
        store: MemoryStore,
        *,
        key_prefix: str = DEFAULT_KEY_PREFIX,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        if not isinstance(key_prefix, str) or not key_prefix:
            raise ValueError("key_prefix must be a non-empty string")
        super().__init__()
        self.store = store
        self.key_prefix = key_prefix
        self.index_config = index
        self.ttl_config = ttl
        #: LangGraph's embeddings of the index config (None without one).
        self.embeddings: Embeddings | None = None
        self._embedder: IndexEmbedder | None = None
        if index is not None:
            self._embedder = _index_embedder(store, index, key_prefix)
            self.embeddings = self._embedder.embeddings
        self._ttl_prefix = f"{key_prefix}{TTL_SEGMENT}/"
        self._index_prefix = f"{key_prefix}{INDEX_SEGMENT}/"
        self._lock = _write_lock(store)
        self._sweeper: threading.Thread | None = None
        self._sweeper_stop = threading.Event()

    @classmethod
    @contextmanager
    def from_conn_string(
        cls,
        conn_string: str,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        project: str | None = None,
        key_prefix: str = DEFAULT_KEY_PREFIX,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> Iterator[MemboltStore]:
        """A store for the block: ``":memory:"`` (a new store, deleted at the
        end), a store file, or a ``postgresql://`` URL with ``project``
        (default: :func:`membolt.open_store`'s, ``$MEMBOLT_PROJECT`` or the
        working directory's name, §12). With ``index``, the store's embedder
        is the index's."""
        with _opened(conn_string, project, timeout, index, key_prefix) as store:
            adapter = cls(store, key_prefix=key_prefix, index=index, ttl=ttl)
            try:
                yield adapter
            finally:
                adapter.stop_ttl_sweeper()

    def setup(self) -> None:
        """Nothing to do: a membolt store needs no migration step. Here so that
        code written for LangGraph's SQL stores runs unchanged."""

    # ----- keys -------------------------------------------------------------------

    def _path(self, namespace: Iterable[str], key: str) -> str:
        return self.key_prefix + _labels_of(namespace) + _escape(key)

    def _scope(self, namespace_prefix: Iterable[str]) -> str:
        return self.key_prefix + _labels_of(namespace_prefix)

    def _ttl_path(self, path: str) -> str:
        return self._ttl_prefix + path[len(self.key_prefix) :]

    def _index_path(self, path: str) -> str:
        return self._index_prefix + path[len(self.key_prefix) :]

    def _item_keys_under(self, prefix: str) -> list[str]:
        # The adapter's own entries (expiries, index arguments) start with "<prefix>.".
        own = self.key_prefix + "."
        return [k for k in self.store.keys_under(prefix) if not k.startswith(own)]

    @staticmethod
    def _split(rest: str) -> tuple[str, str]:
        """(the escaped labels joined by "/", the escaped key) of a key without
        its prefix."""
        labels, _, key = rest.rpartition("/")
        return labels, key

    @staticmethod
    def _namespace(labels: str) -> tuple[str, ...]:
        return tuple(map(_unescape, labels.split("/"))) if labels else ()

    # ----- batch -------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        for op in ops:  # every op is checked before anything runs
            if not isinstance(op, GetOp | PutOp | SearchOp | ListNamespacesOp):
                raise ValueError(f"Unknown operation type: {type(op)}")
            validate_op_namespace(op)
            if isinstance(op, SearchOp):
                _conditions(op.filter)
        now = _now_ms()
        refresh: set[str] = set()
        results: list[Result] = []
        puts: dict[str, PutOp] = {}
        for op in ops:
            if isinstance(op, GetOp):
                results.append(self._get(op, now, refresh))
            elif isinstance(op, SearchOp):
                results.append(self._search(op, now, refresh))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op, now))
            else:
                puts[self._path(op.namespace, str(op.key))] = op
                results.append(None)
        if puts or refresh:
            self._write(puts, refresh)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    def get(
        self, namespace: tuple[str, ...], key: str, *, refresh_ttl: bool | None = None
    ) -> Item | None:
        """``BaseStore.get``, without a batch when no TTL can be refreshed
        (the call of every agent step: see benches/bench_adapters.py)."""
        if self.ttl_config is not None:
            if refresh_ttl is None:  # LangGraph's default, as BaseStore.get takes it
                refresh_ttl = self.ttl_config.get("refresh_on_read", True)
            return self.batch([GetOp(namespace, str(key), refresh_ttl)])[0]  # type: ignore[return-value]
        key = str(key)
        entry = self.store.get(self._path(namespace, key))
        return None if entry is None else _new_item(tuple(namespace), key, entry)

    # ----- reads -------------------------------------------------------------------

    def _item(self, entry: Entry, cls: Callable[..., Item] = Item, **score: Any) -> Any:
        labels, key = self._split(entry.key[len(self.key_prefix) :])
        return cls(
            namespace=self._namespace(labels),
            key=_unescape(key),
            value=_load(entry),
            created_at=_timestamp(entry.created_at),
            updated_at=_timestamp(entry.updated_at),
            **score,
        )

    def _expiry_checks(self, refresh_ttl: bool) -> tuple[bool, bool]:
        """(omit expired items, refresh the expiry of those read)."""
        config = self.ttl_config
        if config is None:
            return False, False
        # As LangGraph's SQLite store (and its TTL suite): reads refresh only
        # when the config asks for it.
        refresh = refresh_ttl and config.get("refresh_on_read", False)
        return config.get("omit_expired", False), refresh

    def _expiry(self, path: str) -> tuple[int, float] | None:
        """(when the item at ``path`` expires, in ms; its TTL in minutes), if it has one."""
        entry = self.store.get(self._ttl_path(path))
        if entry is None:
            return None
        try:
            fields = json.loads(entry.value)
            return int(fields["expires_at"]), float(fields["ttl"])
        except (ValueError, KeyError, TypeError):
            return None

    def _live(self, paths: list[str], refresh_ttl: bool, now: int, refresh: set[str]) -> list[str]:
        """``paths`` less the expired ones when the config omits them; the
        others with an expiry are noted in ``refresh`` when reads refresh.

        A refresh is a write that holds the store, so it is skipped when it
        would move the expiry by less than 1% of the TTL: an item read many
        times a second costs one write per 1% of its TTL, not one a read."""
        omit, renew = self._expiry_checks(refresh_ttl)
        if not omit and not renew:
            return paths
        live = []
        for path in paths:
            expiry = self._expiry(path)
            if expiry is not None:
                expires, minutes = expiry
                if omit and expires <= now:
                    continue
                if renew and now + minutes * 60_000 - expires > minutes * 600:
                    refresh.add(path)
            live.append(path)
        return live

    def _get(self, op: GetOp, now: int, refresh: set[str]) -> Item | None:
        key = str(op.key)
        path = self._path(op.namespace, key)
        entry = self.store.get(path)
        if entry is None or not self._live([path], op.refresh_ttl, now, refresh):
            return None
        return _new_item(tuple(op.namespace), key, entry)

    def _search(self, op: SearchOp, now: int, refresh: set[str]) -> list[SearchItem]:
        conditions = _conditions(op.filter)
        paths = self._item_keys_under(self._scope(tuple(op.namespace_prefix)))
        paths = self._live(paths, False, now, refresh)
        in_scope: dict[str, Entry] = {}
        for path in paths:
            entry = self.store.get(path)
            if entry is not None:
                in_scope[path] = entry
        values: dict[str, dict[str, Any]] = {}

        def passes(entry: Entry) -> bool:
            if not conditions:
                return True
            value = values.get(entry.key)
            if value is None:
                value = values[entry.key] = _load(entry)
            return _holds(value, conditions)

        newest_first = sorted(in_scope.values(), key=lambda e: e.updated_at, reverse=True)
        wanted = max(op.offset, 0) + max(op.limit, 0)
        chosen: list[tuple[Entry, float | None]] | None = None
        if op.query and self._embedder is not None:
            chosen = self._by_meaning(op.query, in_scope, passes, newest_first)
        if chosen is None and op.query:
            chosen = self._ranked(op.query, in_scope, passes, wanted)
            if len(chosen) < wanted:
                ranked = {entry.key for entry, _ in chosen}
                chosen += [(e, 0.0) for e in newest_first if e.key not in ranked and passes(e)]
        elif chosen is None:
            chosen = [(e, None) for e in newest_first if passes(e)]
        page = chosen[max(op.offset, 0) : wanted]
        self._live([e.key for e, _ in page], op.refresh_ttl, now, refresh)
        return [self._item(e, SearchItem, score=score) for e, score in page]

    def _by_meaning(
        self,
        query: str,
        in_scope: dict[str, Entry],
        passes: Callable[[Entry], bool],
        newest_first: list[Entry],
    ) -> list[tuple[Entry, float | None]] | None:
        """The items in scope by the cosine of ``query`` with the best of
        their vectors, with it; then those without a vector, newest first,
        with no score. ``None`` when the query cannot be embedded."""
        try:
            scored = self.store.search_vectors_scored(query, keys=list(in_scope))
        except EmbedderError as error:
            logger.warning("membolt: %s; the query is ranked by words", error)
            return None
        chosen: list[tuple[Entry, float | None]] = [
            (in_scope[e.key], score) for e, score in scored if passes(in_scope[e.key])
        ]
        scored_keys = {e.key for e, _ in scored}
        chosen += [(e, None) for e in newest_first if e.key not in scored_keys and passes(e)]
        return chosen

    def _ranked(
        self,
        query: str,
        in_scope: dict[str, Entry],
        passes: Callable[[Entry], bool],
        wanted: int,
    ) -> list[tuple[Entry, float | None]]:
        """The items in scope that hold a term of ``query``, in §15.2's order,
        with their scores: at least ``wanted`` of them, or all."""
        limit = max(4 * wanted, 64)
        while True:
            scored = self.store.search_words_scored(query, limit=limit)
            ranked: list[tuple[Entry, float | None]] = [
                (in_scope[e.key], score) for e, score in scored if e.key in in_scope
            ]
            ranked = [(e, s) for e, s in ranked if passes(e)]
            # Short of ``wanted`` only when every qualifying item is known.
            if len(scored) < limit or len(ranked) >= wanted:
                return ranked
            limit *= 8

    def _list_namespaces(self, op: ListNamespacesOp, now: int) -> list[tuple[str, ...]]:
        conditions = [c for c in op.match_conditions or () if c.path]
        cut = len(self.key_prefix)
        namespaces: set[tuple[str, ...]] = set()
        seen: set[str] = set()
        paths = self._live(self._item_keys_under(self.key_prefix), False, now, set())
        for path in paths:
            labels, _ = self._split(path[cut:])
            if labels in seen:
                continue
            seen.add(labels)
            namespace = self._namespace(labels)
            if all(_namespace_matches(namespace, c) for c in conditions):
                namespaces.add(namespace if op.max_depth is None else namespace[: op.max_depth])
        offset = max(op.offset, 0)
        return sorted(namespaces)[offset : offset + max(op.limit, 0)]

    # ----- writes ------------------------------------------------------------------

    def _write(self, puts: dict[str, PutOp], refresh: set[str]) -> None:
        now = _now_ms()
        # A refresh is a check then a write: the store is held (other processes
        # wait) and the lock taken (other threads wait), so an item put without
        # TTL meanwhile does not get its old expiry back.
        held = self.store.hold() if refresh else nullcontext()
        with self._lock, held:
            renewed = {}
            for path in refresh:  # again, now that nothing else writes
                expiry = self._expiry(path)
                if expiry is not None:
                    renewed[self._ttl_path(path)] = expiry[1]
            values = {path: _dump(op.value) for path, op in puts.items() if op.value is not None}
            again = self._embedded_again(puts, values)
            with self.store.batch() as batch:
                for ttl_key, minutes in renewed.items():
                    batch.save(ttl_key, _expiry_value(minutes, now), type=TTL_ENTRY_TYPE)
                for path, op in puts.items():
                    ttl_key = self._ttl_path(path)
                    if op.value is None:
                        batch.delete(path)
                        batch.delete(ttl_key)
                        batch.delete(self._index_path(path))
                        continue
                    labels, _ = self._split(path[len(self.key_prefix) :])
                    batch.save(path, values[path], type=ENTRY_TYPE, namespace=labels)
                    if op.ttl is None:
                        batch.delete(ttl_key)
                    else:
                        batch.save(ttl_key, _expiry_value(op.ttl, now), type=TTL_ENTRY_TYPE)
                    if self._embedder is not None:
                        own = _own_index(op)
                        if own is None:
                            batch.delete(self._index_path(path))
                        else:
                            batch.save(self._index_path(path), own, type=INDEX_ENTRY_TYPE)
            if again:
                # Their texts changed with their index argument, not their value.
                self.store.embed_entries(again)

    def _embedded_again(self, puts: dict[str, PutOp], values: dict[str, str]) -> list[str]:
        """The items ``puts`` writes with their stored value but another
        ``index`` argument than their last put's: their stored vectors are
        of the old texts, so they are embedded again after the write."""
        if self._embedder is None:
            return []
        again = []
        for path, op in puts.items():
            if op.value is None:
                continue
            before = self.store.get(self._index_path(path))
            if (None if before is None else before.value) == _own_index(op):
                continue
            entry = self.store.get(path)
            if entry is not None and entry.value == values[path]:
                again.append(path)
        return again

    # ----- TTL ---------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Deletes the expired items; returns how many."""
        now = _now_ms()
        with self._lock, self.store.hold():
            expired = []
            for ttl_key in self.store.keys_under(self._ttl_prefix):
                path = self.key_prefix + ttl_key[len(self._ttl_prefix) :]
                expiry = self._expiry(path)
                if expiry is not None and expiry[0] <= now:
                    expired.append((path, ttl_key))
            if not expired:
                return 0
            with self.store.batch() as batch:
                for path, ttl_key in expired:
                    batch.delete(path)
                    batch.delete(ttl_key)
                    batch.delete(self._index_path(path))
            return sum(1 for deleted in batch.results[::3] if deleted)

    def start_ttl_sweeper(
        self, sweep_interval_minutes: int | None = None
    ) -> concurrent.futures.Future[None]:
        """Sweeps every ``sweep_interval_minutes`` (default: the ttl config's,
        else 5) in a daemon thread until :meth:`stop_ttl_sweeper`; without a
        ttl config, does nothing."""
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        if not self.ttl_config:
            future.set_result(None)
            return future
        future.add_done_callback(lambda f: self._sweeper_stop.set() if f.cancelled() else None)
        if self._sweeper is not None and self._sweeper.is_alive():
            return future
        self._sweeper_stop.clear()
        interval = float(
            sweep_interval_minutes or self.ttl_config.get("sweep_interval_minutes") or 5
        )

        def sweep_until_stopped() -> None:
            while not self._sweeper_stop.wait(interval * 60):
                try:
                    self.sweep_ttl()
                except Exception:
                    logger.exception("membolt: a TTL sweep failed")
            if not future.done():
                future.set_result(None)

        self._sweeper = threading.Thread(
            target=sweep_until_stopped, daemon=True, name="membolt-ttl-sweeper"
        )
        self._sweeper.start()
        return future

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stops the sweeper; False when it did not stop within ``timeout`` seconds."""
        if self._sweeper is None or not self._sweeper.is_alive():
            return True
        self._sweeper_stop.set()
        self._sweeper.join(timeout)
        if self._sweeper.is_alive():
            return False
        self._sweeper = None
        return True


def _own_index(op: PutOp) -> str | None:
    """A put's ``index`` argument as its entry's value: ``None`` for the
    config's fields (no entry)."""
    if op.index is False:
        return "false"
    if isinstance(op.index, list | tuple):
        return json.dumps(list(op.index))
    return None


def _expiry_value(minutes: float, now: int) -> str:
    return json.dumps({"ttl": minutes, "expires_at": now + round(minutes * 60_000)})


class AsyncMemboltStore(AsyncBatchedBaseStore):
    """:class:`MemboltStore` for asyncio: each batch runs in a worker thread
    (membolt's calls release the GIL), and concurrent calls made in one tick
    of the event loop are batched together as LangGraph's async stores do.
    The synchronous methods work from other threads and refuse the loop's
    own (``asyncio.InvalidStateError``), as LangGraph's async stores."""

    supports_ttl = True

    def __init__(
        self,
        store: MemoryStore,
        *,
        key_prefix: str = DEFAULT_KEY_PREFIX,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
    ) -> None:
        super().__init__()
        self._sync = MemboltStore(store, key_prefix=key_prefix, index=index, ttl=ttl)
        self.store = store
        self.key_prefix = key_prefix
        self.index_config = index
        self.ttl_config = ttl
        self.embeddings = self._sync.embeddings
        self._sweeper_task: asyncio.Task[None] | None = None
        self._sweeper_stop = asyncio.Event()

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls,
        conn_string: str,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        project: str | None = None,
        key_prefix: str = DEFAULT_KEY_PREFIX,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> AsyncIterator[AsyncMemboltStore]:
        """As :meth:`MemboltStore.from_conn_string`."""
        with _opened(conn_string, project, timeout, index, key_prefix) as store:
            adapter = cls(store, key_prefix=key_prefix, index=index, ttl=ttl)
            try:
                yield adapter
            finally:
                await adapter.stop_ttl_sweeper()

    async def setup(self) -> None:
        """Nothing to do (see :meth:`MemboltStore.setup`)."""

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self._sync.batch, list(ops))

    async def sweep_ttl(self) -> int:
        """Deletes the expired items; returns how many."""
        return await asyncio.to_thread(self._sync.sweep_ttl)

    async def start_ttl_sweeper(
        self, sweep_interval_minutes: int | None = None
    ) -> asyncio.Task[None]:
        """Sweeps every ``sweep_interval_minutes`` (default: the ttl config's,
        else 5) in a task until :meth:`stop_ttl_sweeper`; without a ttl
        config, does nothing."""
        if not self.ttl_config:
            return asyncio.create_task(asyncio.sleep(0))
        if self._sweeper_task is not None and not self._sweeper_task.done():
            return self._sweeper_task
        self._sweeper_stop.clear()
        interval = float(
            sweep_interval_minutes or self.ttl_config.get("sweep_interval_minutes") or 5
        )

        async def sweep_until_stopped() -> None:
            while True:
                try:
                    await asyncio.wait_for(self._sweeper_stop.wait(), timeout=interval * 60)
                    return
                except asyncio.TimeoutError:
                    pass
                try:
                    await self.sweep_ttl()
                except Exception:
                    logger.exception("membolt: a TTL sweep failed")

        self._sweeper_task = asyncio.create_task(sweep_until_stopped(), name="membolt-ttl-sweeper")
        return self._sweeper_task

    async def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stops the sweeper; False when it did not stop within ``timeout`` seconds."""
        task = self._sweeper_task
        if task is None or task.done():
            return True
        self._sweeper_stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout=timeout)
        except asyncio.TimeoutError:
            return False
        self._sweeper_task = None
        return True

    async def __aenter__(self) -> AsyncMemboltStore:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._sweeper_stop.set()
