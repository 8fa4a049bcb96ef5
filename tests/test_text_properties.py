"""Property tests of truncate (§6.8) and search (§4) against plain-Python models."""

from __future__ import annotations

import sys
import tempfile
import unicodedata
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import membolt
from membolt import MemoryStore


def truncate_model(text: str, limit: int) -> str:
    data = text.encode()
    if len(data) <= limit:
        return text
    cut = limit
    while cut > 0 and (data[cut] & 0xC0) == 0x80:  # inside a multi-byte character
        cut -= 1
    return data[:cut].decode() + "..."


@given(text=st.text(), limit=st.integers(min_value=0, max_value=64))
def test_truncate_matches_the_model(text: str, limit: int) -> None:
    cut = membolt.truncate(text, limit)
    assert cut == truncate_model(text, limit)
    if cut != text:
        assert cut.endswith("...")
        assert len(cut.encode()) <= limit + 3


def test_truncate_examples() -> None:
    assert membolt.truncate("abcdefghij", 5) == "abcde..."
    assert membolt.truncate("世" * 10, 10) == "世世世..."
    assert membolt.truncate("short", 5) == "short"


def _lowercase_agrees(char: str) -> bool:
    """Characters whose lowercase Python 3.11 and Rust's newer tables agree on:
    assigned in Python's Unicode version (not Cn) and not surrogates. Letters
    that received a lowercase form in a later Unicode version are excluded by
    the Cn test, since Python 3.11 does not know them."""
    return unicodedata.category(char) not in ("Cn", "Cs")


TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from(list("abcABC xyzXYZ-_:/ΣσςİıẞßÅåéÉ世界\n\t")),
        st.characters(codec="utf-8").filter(_lowercase_agrees),
    ),
    max_size=30,
)


def search_model(entries: dict[str, str], query: str) -> list[str]:
    if not query:
        return []
    needle = query.lower()
    return sorted(k for k, v in entries.items() if needle in k.lower() or needle in v.lower())


_DIRECTORY = tempfile.TemporaryDirectory(prefix="membolt-search-prop-")
_COUNTER = iter(range(sys.maxsize))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    entries=st.dictionaries(TEXT.filter(bool), TEXT, max_size=12),
    queries=st.lists(TEXT, min_size=1, max_size=6),
)
def test_search_matches_the_model(entries: dict[str, str], queries: list[str]) -> None:
    store = MemoryStore(Path(_DIRECTORY.name) / f"{next(_COUNTER)}.redb")
    if entries:
        store.save_many(list(entries.items()), caps=False)
    # Queries taken from the stored text exercise hits, not only misses.
    samples = [k[1:4] for k in entries] + [v[:5] for v in entries.values()]
    for query in queries + samples:
        assert [e.key for e in store.search(query)] == search_model(entries, query), query
        total, ranked = store.search_ranked(query, 20)
        assert total == len(search_model(entries, query))
        assert len(ranked) == min(total, 20)
    store.close()
