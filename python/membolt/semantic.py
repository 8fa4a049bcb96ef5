"""§15.4: recall by meaning, the store's side. :class:`SemanticStore` is a
base of :class:`membolt.MemoryStore`; everything here is a no-op for a
store without an embedder.

* **Writes**: after each transaction that saved entries (``save``,
  ``save_many``, a ``batch()`` block), one ``embed`` call for the saved
  entries' ``key + "\\n" + value``, and their vectors handed to the core,
  which keeps them beside the entries (a companion file, or a table on
  PostgreSQL). The entries are committed first: an embedder that fails, or
  a vector that cannot be stored, loses nothing, and the entry is embedded
  at a later chance.
* **Searches** (``search_words``, ``search_words_scored``,
  ``search_words_ranked`` behind the ``memory_search`` tool, ``render``
  and ``prompt_parts`` for the focus): the query's vector is passed to the
  core, which fuses the cosine ranking with the words'. Before it, a
  bounded catch-up embeds up to :data:`CATCH_UP` entries that have no
  vector (a new model, a failed save, another process's writes); a query
  the embedder cannot embed is ranked by words alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, cast

from . import _core
from ._core import Entry
from .embedding import DEFAULT_EMBED_TIMEOUT, Embedder, Embedding, pair_text
from .errors import MemboltError

if TYPE_CHECKING:
    from .store import BatchOp

#: Entries without a vector embedded before a search, at most.
CATCH_UP: Final = 64
#: Entries per ``embed`` call of :meth:`SemanticStore.embed_missing`.
EMBED_BATCH: Final = 256
#: Texts whose embedding failed are not tried again by the catch-up of this
#: process (``embed_missing`` tries them all again); at most this many.
FAILED_LIMIT: Final = 10_000

Pair = tuple[str, str]


class SemanticStore(_core.Store):
    """The embedder's part of a store (see the module's notes)."""

    _embedding: Embedding | None = None
    _failed: set[Pair]

    def __new__(
        cls,
        *args: Any,
        embedder: Embedder | None = None,
        embed_timeout: float | None = DEFAULT_EMBED_TIMEOUT,
        **kwargs: Any,
    ) -> SemanticStore:
        return cast("SemanticStore", super().__new__(cls, *args, **kwargs))

    def __init__(
        self,
        *args: Any,
        embedder: Embedder | None = None,
        embed_timeout: float | None = DEFAULT_EMBED_TIMEOUT,
        **kwargs: Any,
    ) -> None:
        self._embedding = None if embedder is None else Embedding(embedder, embed_timeout)
        self._failed = set()

    @property
    def embedder(self) -> Embedder | None:
        """The embedder this store was given, if any."""
        return None if self._embedding is None else self._embedding.embedder

    @property
    def embedding(self) -> Embedding | None:
        """How the embedder is used (its failures, the last error)."""
        return self._embedding

    # ----- storing vectors ----------------------------------------------------

    def _embed_pairs(self, pairs: Sequence[Pair]) -> int:
        """Embeds ``pairs`` in one call and stores their vectors; returns
        how many were stored. Never raises for the embedder or the vectors'
        storage."""
        embedding = self._embedding
        if embedding is None or not pairs:
            return 0
        vectors = embedding.embed([pair_text(k, v) for k, v in pairs])
        if vectors is None:
            if len(self._failed) < FAILED_LIMIT:
                self._failed.update(pairs)
            return 0
        try:
            stored = self._vectors_put(embedding.name, embedding.dims, list(pairs), vectors)
        except (MemboltError, OSError, ValueError) as error:
            embedding.failures += 1
            embedding.last_error = f"storing vectors: {error}"
            return 0
        if stored < len(pairs):
            # Some vectors held a NaN or an infinity, or were all zeros.
            embedding.last_error = f"{len(pairs) - stored} vectors were not finite or all zeros"
            if len(self._failed) < FAILED_LIMIT:
                self._failed.update(pairs)
        return stored

    def _embed_entries(self, entries: Iterable[object]) -> None:
        """Embeds the saved entries whose text has no vector yet."""
        embedding = self._embedding
        if embedding is None:
            return
        saved = [e for e in entries if isinstance(e, Entry)]
        # A new entry's text has no vector (almost surely: the same text may
        # have been saved before under this key, and is embedded again); an
        # overwritten one may be unchanged, which the core is asked.
        new = {(e.key, e.value): None for e in saved if e.created_at == e.updated_at}
        old = [(e.key, e.value) for e in saved if e.created_at != e.updated_at]
        old = [pair for pair in dict.fromkeys(old) if pair not in new]
        if old:
            try:
                lacking = self._vectors_lacking(embedding.name, embedding.dims, old)
            except (MemboltError, OSError):
                lacking = list(range(len(old)))
            old = [old[at] for at in lacking]
        self._embed_pairs([*new, *old])

    def _catch_up(self) -> None:
        """Embeds up to :data:`CATCH_UP` entries that have no vector."""
        embedding = self._embedding
        if embedding is None:
            return
        try:
            missing = self._vectors_missing(
                embedding.name, embedding.dims, CATCH_UP + min(len(self._failed), CATCH_UP)
            )
        except (MemboltError, OSError):
            return
        pairs = [pair for pair in missing if pair not in self._failed][:CATCH_UP]
        self._embed_pairs(pairs)

    def embed_missing(self, batch: int = EMBED_BATCH) -> int:
        """Embeds every entry that has no vector of this store's embedder
        (after a change of model, or saves whose embedding failed), ``batch``
        texts per call. Returns how many vectors were stored; stops at the
        first failing call."""
        embedding = self._embedding
        if embedding is None:
            raise ValueError("this store has no embedder")
        self._failed.clear()
        stored = 0
        while True:
            missing = self._vectors_missing(embedding.name, embedding.dims, batch)
            missing = [pair for pair in missing if pair not in self._failed]
            if not missing:
                return stored
            done = self._embed_pairs(missing)
            if done == 0:
                return stored
            stored += done
            if done < len(missing):
                self._failed.update(missing)

    def vector_status(self) -> dict[str, Any]:
        """For doctor: the model, how many entries have a vector of it and
        how many lack one, and how many stored vectors could not be read."""
        embedding = self._embedding
        if embedding is None:
            raise ValueError("this store has no embedder")
        entries, with_vector, damaged = self._vectors_status(embedding.name, embedding.dims)
        return {
            "model": embedding.name,
            "dims": embedding.dims,
            "entries": entries,
            "with_vector": with_vector,
            "without_vector": entries - with_vector,
            "damaged": damaged,
            "embed_failures": embedding.failures,
            "last_error": embedding.last_error,
        }

    def vectors_of(self, entries: Sequence[Entry]) -> list[bytes | None]:
        """The stored vector (float32 bytes, normalised) of each entry's
        current text, or ``None``."""
        embedding = self._embedding
        if embedding is None:
            return [None] * len(entries)
        pairs = [(e.key, e.value) for e in entries]
        return self._vectors_get(embedding.name, embedding.dims, pairs)

    # ----- writes: entries first, then their vectors -------------------------

    def _save(self, request: _core.SaveRequest) -> Entry:
        entry = super()._save(request)
        self._embed_entries([entry])
        return entry

    def _save_many(
        self,
        requests: Iterable[_core.SaveRequest],
        *,
        caps: Iterable[_core.Cap],
        then: Iterable[_core.SaveRequest],
    ) -> list[Entry]:
        then = list(then)
        saved = super()._save_many(requests, caps=caps, then=then)
        if self._embedding is not None:
            later = [self.get(r.key) for r in then] if then else []
            self._embed_entries([*saved, *later])
        return saved

    def _apply_batch(self, ops: Iterable[BatchOp]) -> list[Any]:
        outcomes = super()._apply_batch(ops)
        self._embed_entries(outcomes)
        return outcomes

    # ----- searches: the query's vector beside its words ----------------------

    def _query(self, query: object) -> tuple[str, bytes] | None:
        if self._embedding is None or not isinstance(query, str) or not query.strip():
            return None
        self._catch_up()
        return self._embedding.embed_query(query)

    def search_words(
        self, query: str, limit: int | None = None, *, embedding: Any = None
    ) -> list[Entry]:
        return super().search_words(query, limit, embedding=embedding or self._query(query))

    def search_words_scored(
        self, query: str, limit: int | None = None, *, embedding: Any = None
    ) -> list[tuple[Entry, float]]:
        return super().search_words_scored(query, limit, embedding=embedding or self._query(query))

    def search_words_ranked(
        self, query: str, limit: int, *, embedding: Any = None
    ) -> tuple[int, list[Entry]]:
        return super().search_words_ranked(query, limit, embedding=embedding or self._query(query))

    def render(
        self,
        focus: str = "",
        max_tokens: int = 500,
        now_ms: int | None = None,
        *,
        embedding: Any = None,
    ) -> str:
        return super().render(focus, max_tokens, now_ms, embedding=embedding or self._query(focus))

    def prompt_parts(
        self,
        focus: str,
        *,
        max_tokens: int,
        now_ms: int | None,
        key_limit: int,
        embedding: Any = None,
    ) -> tuple[str, list[str], int]:
        return super().prompt_parts(
            focus,
            max_tokens=max_tokens,
            now_ms=now_ms,
            key_limit=key_limit,
            embedding=embedding or self._query(focus),
        )
