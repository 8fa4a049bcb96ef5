"""§4: how memory_search ranks and cuts its hits, ties included."""

from __future__ import annotations

import gc
import json

from membolt import AgentMemory, MemoryStore
from membolt.transfer import import_entries, parse

# ---------------------------------------------------------------------------
# §4: memory_search ranking ties go to the smaller key
# ---------------------------------------------------------------------------


def import_at(store: MemoryStore, rows: list[tuple[str, str, int]]) -> None:
    """Entries with explicit stamps, through the JSONL import."""
    lines = [
        json.dumps({"key": key, "value": value, "createdAt": stamp, "updatedAt": stamp})
        for key, value, stamp in rows
    ]
    assert import_entries(store, parse(lines)) == len(rows)


def test_search_ties_on_stamp_are_key_ascending(store: MemoryStore) -> None:
    import_at(
        store,
        [
            ("c:x", "needle", 100),
            ("needle:c", "x", 50),
            ("b:x", "needle", 100),
            ("needle:b", "x", 100),
            ("z:x", "needle", 200),
            ("a:x", "needle", 100),
            ("needle:a", "x", 100),
        ],
    )
    expected = (
        "Found 7 memory entries:\n"
        "- needle:a: x\n"  # key hits first; equal stamps: key ascending
        "- needle:b: x\n"
        "- needle:c: x\n"  # older key hit
        "- z:x: needle\n"  # value-only hits: newest first
        "- a:x: needle\n"  # then equal stamps: key ascending
        "- b:x: needle\n"
        "- c:x: needle\n"
    )
    memory = AgentMemory(store)
    assert memory.call_tool("memory_search", {"query": "needle"}) == expected
    assert memory.call_tool("recall", {"query": "NEEDLE"}) == expected


def test_search_ties_past_the_20_line_cut(store: MemoryStore) -> None:
    # 25 value hits on one stamp: the 20 smallest keys are listed.
    import_at(store, [(f"k{i:02d}", "needle", 100) for i in reversed(range(25))])
    answer = AgentMemory(store).call_tool("memory_search", {"query": "needle"})
    assert answer == (
        "Found 25 memory entries:\n"
        + "".join(f"- k{i:02d}: needle\n" for i in range(20))
        + "... and 5 more (refine the query)\n"
    )


# ---------------------------------------------------------------------------
# §4 (0.2): the word fallback, when no entry holds the whole query
# ---------------------------------------------------------------------------


def test_words_fall_back_when_nothing_holds_the_whole_query(store: MemoryStore) -> None:
    store.save("decision:billing", "we use stripe as the payment provider")  # 3 words
    store.save("a", "Billing provider and the decision made")  # 3 words, none in the key
    store.save("providers", "billing")  # 2 words, one in the key
    store.save("b", "billing only")  # 1 word: under half of 3
    store.save("c", "rebilling is not billing's prefix")  # "rebilling" hits nothing
    memory = AgentMemory(store)
    assert memory.call_tool("memory_search", {"query": "billing provider decision"}) == (
        "No entry holds the whole query; 3 memory entries match its words:\n"
        "- decision:billing: we use stripe as the payment provider\n"
        "- a: Billing provider and the decision made\n"
        "- providers: billing\n"
    )
    assert [e.key for e in store.search_words("billing provider decision")] == [
        "decision:billing",
        "a",
        "providers",
    ]
    assert [e.key for e in store.search_words("billing provider decision", limit=1)] == [
        "decision:billing"
    ]


def test_half_the_words_rounded_up_is_enough(store: MemoryStore) -> None:
    store.save("one", "alpha")
    store.save("two", "alpha gamma")
    # Four words: two are half.
    assert [e.key for e in store.search_words("alpha gamma delta omega")] == ["two"]
    # Two words: one is half.
    assert sorted(e.key for e in store.search_words("alpha zzzz")) == ["one", "two"]


def test_word_ties_go_to_the_newest_then_the_smaller_key(store: MemoryStore) -> None:
    import_at(store, [("b", "alpha gamma", 5), ("a", "alpha gamma", 5)])
    store.save("c", "alpha gamma")  # the newest
    assert [e.key for e in store.search_words("alpha gamma")] == ["c", "a", "b"]


def test_one_significant_word_never_falls_back(store: MemoryStore) -> None:
    store.save("k", "billing provider")
    memory = AgentMemory(store)
    # "the", "of" are stopwords and "pr" is too short: one word is left.
    assert memory.call_tool("memory_search", {"query": "the billingx of pr"}) == (
        "No memory entries found."
    )
    assert store.search_words("billing") == []
    assert store.search_words("billing billing") == []  # distinct words count


def test_the_fallback_lists_20_and_counts_the_rest(store: MemoryStore) -> None:
    store.save_many([(f"k{i:02d}", f"alpha gamma line\nnumber {i}") for i in range(25)])
    text = AgentMemory(store).call_tool("memory_search", {"query": "gamma alpha zeta"})
    lines = text.splitlines()
    assert lines[0] == "No entry holds the whole query; 25 memory entries match its words:"
    assert len(lines) == 22
    assert lines[1].startswith("- k24: alpha gamma line / number 24")  # flattened, newest
    assert lines[-1] == "... and 5 more (refine the query)"


def test_no_word_match_says_nothing_was_found(store: MemoryStore) -> None:
    store.save("k", "something else entirely")
    assert AgentMemory(store).call_tool("memory_search", {"query": "billing provider"}) == (
        "No memory entries found."
    )


def test_a_large_answer_leaves_the_garbage_collector_as_it_was(store: MemoryStore) -> None:
    # Large lists of entries are built with the cyclic collector paused.
    store.save_many([(f"k{i:05d}", "common words") for i in range(5000)])
    assert gc.isenabled()
    assert len(store.search("common")) == 5000
    assert gc.isenabled()
    gc.disable()
    try:
        assert len(store.entries()) == 5000
        assert not gc.isenabled()
    finally:
        gc.enable()
