"""§15.4: how a store uses an embedder, without ever depending on it.

An embedder is any object with ``name`` (a string naming the model: it tags
the stored vectors), ``dims`` (an int) and ``embed(texts)`` returning one
vector per text (lists of floats, arrays, a 2-D numpy array). Two methods
are optional:

* ``entry_texts(key, value)``: the texts of an entry that are embedded
  (default: ``[key + "\n" + value]``). Several give the entry a set of
  vectors, and its cosine with a query is the best of theirs; none leaves
  it out of recall by meaning (it is done, not missing). It is called in
  the saving thread, and its answer is stored under the entry's text, so it
  should depend on the key and the value alone (the name tags the rule
  too); when it depends on more, ``store.embed_entries(keys)`` embeds those
  entries again after that changed.
* ``embed_query(text)``: the vector of a query, for models that embed
  queries and documents differently (default: ``embed([text])[0]``).

membolt calls it from :class:`Embedding`, which

* runs each call in a worker thread with a time limit, so an embedder that
  hangs costs one timeout, after which calls are refused at once until the
  hung call returns (a thread cannot be killed);
* turns the result into little-endian float32 bytes, the form the core
  takes, and refuses a wrong count or a wrong length;
* never raises: a failure is counted, remembered (``last_error``) and
  answered with ``None``, so a save goes on without a vector and a search
  ranks by words alone. (NaN and infinite values are refused by the core,
  row by row.)
"""

from __future__ import annotations

import array
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol, runtime_checkable

#: Seconds one call of the embedder may take before membolt gives up on it.
DEFAULT_EMBED_TIMEOUT: Final = 10.0
#: The most texts of one entry that are embedded (its set of vectors): the
#: first ones of a longer list (the core's MAX_SET).
MAX_TEXTS: Final = 1024


@runtime_checkable
class Embedder(Protocol):
    """What :class:`membolt.MemoryStore` accepts as ``embedder``."""

    @property
    def name(self) -> str: ...

    @property
    def dims(self) -> int: ...

    def embed(self, texts: list[str]) -> Any: ...


class EmbedderError(Exception):
    """An embedder failed (raised, timed out, or answered the wrong shape)."""


def check_embedder(embedder: object) -> tuple[str, int]:
    """``(name, dims)`` of an embedder; a ``TypeError`` or ``ValueError``
    naming what is missing or wrong, so a mistake shows when the store is
    made, not as vectors that never appear."""
    name = getattr(embedder, "name", None)
    dims = getattr(embedder, "dims", None)
    if not callable(getattr(embedder, "embed", None)):
        raise TypeError("an embedder needs an embed(texts) method")
    if not isinstance(name, str) or not name:
        raise TypeError("an embedder needs a name (a non-empty string naming its model)")
    if not isinstance(dims, int) or isinstance(dims, bool) or not 1 <= dims <= 16_384:
        raise ValueError(f"an embedder's dims must be an int from 1 to 16384, not {dims!r}")
    return name, dims


def _row_bytes(vector: object, dims: int) -> bytes:
    """One vector as ``dims`` little-endian float32s."""
    if hasattr(vector, "astype") and hasattr(vector, "tobytes"):  # numpy and alikes
        data: bytes = vector.astype("<f4").tobytes()
    else:
        floats = array.array("f", vector)  # type: ignore[call-overload]
        if sys.byteorder == "big":
            floats.byteswap()
        data = floats.tobytes()
    if len(data) != 4 * dims:
        raise EmbedderError(f"a vector of {len(data) // 4} dimensions, not {dims}")
    return data


def vectors_bytes(result: object, count: int, dims: int) -> bytes:
    """The embedder's answer for ``count`` texts as one block of float32
    bytes, row after row."""
    shape = getattr(result, "shape", None)
    if isinstance(shape, tuple) and len(shape) == 2 and hasattr(result, "astype"):
        if shape != (count, dims):
            raise EmbedderError(f"an array of shape {shape}, not ({count}, {dims})")
        return bytes(result.astype("<f4").tobytes())
    try:
        rows = list(result)  # type: ignore[call-overload]
    except TypeError:
        raise EmbedderError(f"embed returned {type(result).__name__}, not vectors") from None
    if len(rows) != count:
        raise EmbedderError(f"{len(rows)} vectors for {count} texts")
    try:
        return b"".join(_row_bytes(row, dims) for row in rows)
    except (TypeError, ValueError, OverflowError) as error:
        raise EmbedderError(f"a vector is not a sequence of numbers ({error})") from None


class _Call:
    """One request to the embedding thread and, once ``done`` is set, its
    outcome. A plain class, not a dataclass: importing ``dataclasses`` pulls in
    ``inspect`` and costs a new process ~7 ms before its first store call."""

    __slots__ = ("done", "error", "query", "result", "texts")

    def __init__(self, texts: list[str], query: bool = False) -> None:
        self.texts = texts
        #: ``embed_query(texts[0])`` rather than ``embed(texts)``.
        self.query = query
        self.done = threading.Event()
        self.result: object = None
        self.error: BaseException | None = None


class Embedding:
    """One store's use of one embedder (see the module's notes)."""

    def __init__(self, embedder: Embedder, timeout: float | None = DEFAULT_EMBED_TIMEOUT) -> None:
        self.embedder = embedder
        self.name, self.dims = check_embedder(embedder)
        if timeout is not None and not timeout > 0:
            raise ValueError(f"embed_timeout must be positive or None, not {timeout!r}")
        self.timeout = timeout
        #: Calls that failed, and the last failure, for doctor and logs.
        self.failures = 0
        self.last_error: str | None = None
        self._lock = threading.Lock()
        self._pending: _Call | None = None
        self._wake = threading.Condition(self._lock)
        self._worker: threading.Thread | None = None
        #: The vectors of the last few queries (a hook renders one prompt
        #: several times).
        self._queries: dict[str, bytes] = {}

    # ----- calling the embedder ----------------------------------------------

    def _serve(self) -> None:
        while True:
            with self._wake:
                while self._pending is None or self._pending.done.is_set():
                    self._wake.wait()
                job = self._pending
            try:
                job.result = self._run(job)
            except BaseException as error:  # reported to the caller, never raised here
                job.error = error
            with self._lock:
                job.done.set()
                self._pending = None

    def _run(self, job: _Call) -> object:
        if job.query:
            return [self.embedder.embed_query(job.texts[0])]  # type: ignore[attr-defined]
        return self.embedder.embed(job.texts)

    def _call(self, texts: list[str], query: bool = False) -> object:
        if self.timeout is None:
            return self._run(_Call(texts, query))
        with self._lock:
            if self._pending is not None:
                raise EmbedderError("the embedder has not returned from a call that timed out")
            job = self._pending = _Call(texts, query)
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(
                    target=self._serve, name="membolt-embedder", daemon=True
                )
                self._worker.start()
            self._wake.notify()
        if not job.done.wait(self.timeout):
            raise EmbedderError(f"the embedder did not answer within {self.timeout:g} s")
        if job.error is not None:
            raise job.error
        return job.result

    def embed(self, texts: list[str], *, query: bool = False) -> bytes | None:
        """float32 bytes of the vectors of ``texts``, row after row (with
        ``query``, the one text through ``embed_query`` when the embedder
        has it); ``None`` when the embedder failed (counted, never raised)."""
        if not texts:
            return b""
        query = query and callable(getattr(self.embedder, "embed_query", None))
        try:
            return vectors_bytes(self._call(texts, query), len(texts), self.dims)
        except Exception as error:
            self.failures += 1
            self.last_error = f"{type(error).__name__}: {error}"
            return None

    def texts(self, key: str, value: str) -> list[str]:
        """The texts of the entry ``key``, ``value`` that are embedded: the
        embedder's ``entry_texts`` when it has one (its first
        :data:`MAX_TEXTS`), else ``[key + "\n" + value]``. Raises what
        ``entry_texts`` raises, and ``EmbedderError`` when it answers
        something other than strings."""
        entry_texts = getattr(self.embedder, "entry_texts", None)
        if entry_texts is None:
            return [pair_text(key, value)]
        texts = entry_texts(key, value)
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise EmbedderError("entry_texts must return a list of strings")
        return list(texts)[:MAX_TEXTS]

    def embed_query(self, query: str) -> tuple[str, bytes] | None:
        """``(model name, vector)`` of a query for the core's searches, or
        ``None`` (words alone)."""
        vector = self._queries.get(query)
        if vector is None:
            vector = self.embed([query], query=True)
            if vector is None:
                return None
            if len(self._queries) >= 16:
                self._queries.pop(next(iter(self._queries)))
            self._queries[query] = vector
        return (self.name, vector)


def pair_text(key: str, value: str) -> str:
    """The text of an entry that is embedded (§15.4)."""
    return f"{key}\n{value}"


#: A function that makes an embedder from the part of a setting after its
#: scheme (``model2vec:PATH`` → ``PATH``).
Factory = Callable[[str], Embedder]

__all__: Sequence[str] = [
    "DEFAULT_EMBED_TIMEOUT",
    "MAX_TEXTS",
    "Embedder",
    "EmbedderError",
    "Embedding",
    "check_embedder",
    "pair_text",
    "vectors_bytes",
]
