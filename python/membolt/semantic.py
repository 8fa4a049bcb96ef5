"""§15.4: recall by meaning, the store's side. :class:`SemanticStore` is a
base of :class:`membolt.MemoryStore`; everything here is a no-op for a
store without an embedder.

* **Writes**: after each transaction that saved entries (``save``,
  ``save_many``, a ``batch()`` block), one ``embed`` call for the saved
  entries' texts (``key + "\\n" + value``, or what the embedder's
  ``entry_texts`` gives: a set of vectors per entry, maybe none), and the
  sets handed to the core, which keeps them beside the entries (a companion
  file, or a table on PostgreSQL). The entries are committed first: an
  embedder that fails, or a vector that cannot be stored, loses nothing,
  and the entry is embedded at a later chance.
* **Searches** (``search_words``, ``search_words_scored``,
  ``search_words_ranked`` behind the ``memory_search`` tool, ``render``
  and ``prompt_parts`` for the focus): the query's vector is passed to the
  core, which fuses the cosine ranking with the words'. Before it, a
  bounded catch-up embeds up to :data:`CATCH_UP` entries that have no
  vector (a new model, a failed save, another process's writes); a query
  the embedder cannot embed is ranked by words alone.
  :meth:`SemanticStore.search_vectors_scored` ranks by meaning alone: the
  cosine of each entry (the best of its set) with the query.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, cast

from . import _core
from ._core import Entry
from .embedding import DEFAULT_EMBED_TIMEOUT, Embedder, EmbedderError, Embedding
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
    _embed_timeout: float | None = DEFAULT_EMBED_TIMEOUT
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
        self._embed_timeout = embed_timeout
        self._failed = set()

    @property
    def embedder(self) -> Embedder | None:
        """The embedder this store was given, if any. Setting it (to an
        embedder, or ``None``) changes how the store embeds from the next
        call on, with the store's ``embed_timeout``."""
        return None if self._embedding is None else self._embedding.embedder

    @embedder.setter
    def embedder(self, embedder: Embedder | None) -> None:
        self._embedding = None if embedder is None else Embedding(embedder, self._embed_timeout)
        self._failed = set()

    @property
    def embedding(self) -> Embedding | None:
        """How the embedder is used (its failures, the last error)."""
        return self._embedding

    # ----- storing vectors ----------------------------------------------------

    def _fail(self, pairs: Iterable[Pair]) -> None:
        """Remembers ``pairs`` as not embeddable by this process's catch-up."""
        if len(self._failed) < FAILED_LIMIT:
            self._failed.update(pairs)

    def _embed_pairs(self, pairs: Sequence[Pair]) -> int:
        """Embeds the texts of ``pairs`` in one call and stores their sets
        of vectors; returns how many sets were stored. Never raises for the
        embedder or the vectors' storage."""
        embedding = self._embedding
        if embedding is None or not pairs:
            return 0
        chosen: list[Pair] = []
        texts: list[list[str]] = []
        for pair in pairs:
            try:
                texts.append(embedding.texts(*pair))
            except Exception as error:  # the embedder's own code: counted, never raised
                embedding.failures += 1
                embedding.last_error = f"entry_texts: {type(error).__name__}: {error}"
                self._fail([pair])
                continue
            chosen.append(pair)
        vectors = embedding.embed([text for each in texts for text in each])
        if vectors is None:
            self._fail(chosen)
            return 0
        try:
            stored = self._vectors_put(
                embedding.name, embedding.dims, chosen, vectors, [len(each) for each in texts]
            )
        except (MemboltError, OSError, ValueError) as error:
            embedding.failures += 1
            embedding.last_error = f"storing vectors: {error}"
            return 0
        if stored < len(chosen):
            # Some vectors held a NaN or an infinity, or were all zeros.
            embedding.last_error = f"{len(chosen) - stored} vectors were not finite or all zeros"
            self._fail(chosen)
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

    def embed_entries(self, keys: Iterable[str]) -> int:
        """Embeds the entries of ``keys`` now, whether or not they have
        vectors, replacing them; returns how many sets were stored (a key
        with no entry is skipped). For an embedder whose ``entry_texts``
        depend on more than an entry's key and value: call it when that
        changed."""
        if self._embedding is None:
            raise ValueError("this store has no embedder")
        entries = [self.get(key) for key in dict.fromkeys(keys)]
        return self._embed_pairs([(e.key, e.value) for e in entries if e is not None])

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
        current text, or ``None`` (also for an entry whose set is not one
        vector: several texts, or none)."""
        embedding = self._embedding
        if embedding is None:
            return [None] * len(entries)
        pairs = [(e.key, e.value) for e in entries]
        one = 4 * embedding.dims
        sets = self._vectors_get(embedding.name, embedding.dims, pairs)
        return [vector if vector is not None and len(vector) == one else None for vector in sets]

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

    def search_vectors_scored(
        self, query: str, limit: int | None = None, *, keys: Iterable[str] | None = None
    ) -> list[tuple[Entry, float]]:
        """Recall by meaning alone (§15.4): the entries (of ``keys``, when
        given) that have a vector, as ``(entry, cosine)`` pairs, by the
        cosine of the query's vector with the best of each entry's vectors,
        any sign, highest first (equal cosines in §15.2's order); the first
        ``limit``. ``[]`` for an empty query. Raises ``ValueError`` without
        an embedder and :class:`~membolt.embedding.EmbedderError` when the
        query cannot be embedded (there is no word ranking to fall back to
        here)."""
        embedding = self._embedding
        if embedding is None:
            raise ValueError("this store has no embedder")
        if not isinstance(query, str):
            raise TypeError(f"query must be a string, not {type(query).__name__}")
        if not query.strip():
            return []
        self._catch_up()
        vector = embedding.embed_query(query)
        if vector is None:
            raise EmbedderError(f"the query could not be embedded: {embedding.last_error}")
        chosen = self.keys() if keys is None else list(keys)
        return self._vectors_ranked(vector, chosen, limit)

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
