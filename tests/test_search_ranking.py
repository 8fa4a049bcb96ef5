"""§4 and §15.3: how memory_search ranks and cuts its hits, ties included."""

from __future__ import annotations

import gc
import json
import random

import pytest

from membolt import AgentMemory, MemoryStore
from membolt.transfer import import_entries, parse

from support import reference_render as ref

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
# §15.3: the ranked search, when no entry holds the whole query
# ---------------------------------------------------------------------------


def model_ranking(store: MemoryStore, query: str) -> list[str]:
    """The §15.2 order of the plain-Python model over the store's entries."""
    entries = [ref.Entry(e.key, e.value, e.type, updated_at=e.updated_at) for e in store.entries()]
    return [entry.key for entry, _ in ref.ranked(entries, query)]


WORDS = [
    "deploy", "deployed", "deploying", "build", "builds", "test", "tests", "testing",
    "error", "errors", "caroline", "went", "support", "group", "the", "of", "it", "is",
    "db", "go", "v2", "東京", "会議", "café",
]  # fmt: skip


def test_rank_order_and_scores_equal_the_model_on_seeded_stores(store: MemoryStore) -> None:
    """§15.2 on random stores: the order of the model, ties included (few
    distinct texts and stamps make equal scores common), and its scores."""
    rng = random.Random(1502)
    stamps = [100, 200, 300]
    for _ in range(4):
        # Keys repeat across rounds: later rounds rewrite entries the index
        # already holds, and delete some.
        rows: dict[str, tuple[str, str, int]] = {}
        for _ in range(40):
            kind = rng.choice(["note", "error", "decision", "fact", "x"])
            key = f"{kind}:{rng.choice(WORDS)}-{rng.randint(0, 3)}"
            value = " ".join(rng.choices(WORDS, k=rng.randint(0, 6)))
            rows[key] = (key, value, rng.choice(stamps))
        import_at(store, list(rows.values()))
        for key in rng.sample(store.keys(), 3):
            store.delete(key)
        entries = [
            ref.Entry(e.key, e.value, e.type, updated_at=e.updated_at) for e in store.entries()
        ]
        for _ in range(15):
            query = " ".join(rng.choices(WORDS, k=rng.randint(1, 4)))
            got = store.search_words_scored(query)
            want = ref.ranked(entries, query)
            assert [e.key for e, _ in got] == [e.key for e, _ in want], query
            for (_, score), (_, expected) in zip(got, want, strict=True):
                assert score == pytest.approx(expected, rel=1e-12)
            limit = rng.randint(1, 5)
            assert [e.key for e in store.search_words(query, limit=limit)] == [
                e.key for e, _ in want[:limit]
            ]


def test_ranked_search_answers_when_nothing_holds_the_whole_query(store: MemoryStore) -> None:
    store.save("decision:billing", "we use stripe as the payment provider")
    store.save("a", "Billing provider and the decision made")
    store.save("providers", "billing")
    store.save("b", "billing only")  # one of three words is enough
    store.save("c", "rebilling is not billing's prefix")  # other terms
    store.save("d", "nothing of the sort")
    query = "billing provider decision"
    ranked = [e.key for e in store.search_words(query)]
    assert ranked == model_ranking(store, query)
    assert sorted(ranked) == ["a", "b", "decision:billing", "providers"]
    # Two of the terms in the key, which counts three times.
    assert ranked[0] == "decision:billing"
    by_key = {e.key: e for e in store.entries()}
    memory = AgentMemory(store)
    assert memory.call_tool("memory_search", {"query": query}) == (
        "No entry holds the whole query; 4 memory entries match its words:\n"
        + "".join(f"- {key}: {by_key[key].value}\n" for key in ranked)
    )
    assert [e.key for e in store.search_words(query, limit=1)] == ranked[:1]


def test_one_matching_term_qualifies_and_rarer_terms_weigh_more(store: MemoryStore) -> None:
    store.save("one", "alpha")
    store.save("two", "alpha gamma")
    store.save_many([(f"filler:{i}", "alpha beta") for i in range(8)])
    # "gamma" is rarer than "alpha": the entry holding it ranks first.
    assert store.search_words("alpha gamma delta omega")[0].key == "two"
    assert len(store.search_words("alpha gamma delta omega")) == 10
    assert [e.key for e in store.search_words("gamma")] == ["two"]


def test_word_ties_go_to_the_newest_then_the_smaller_key(store: MemoryStore) -> None:
    import_at(store, [("b", "alpha gamma", 5), ("a", "alpha gamma", 5)])
    store.save("c", "alpha gamma")  # the newest
    assert [e.key for e in store.search_words("alpha gamma")] == ["c", "a", "b"]


def test_typed_entries_win_ties(store: MemoryStore) -> None:
    store.save("n", "deploy now", type="note")
    store.save("f", "deploy now", type="fact")
    store.save("d", "deploy now", type="decision")
    store.save("e", "deploy now", type="")
    # Same score: the typed entry first, then the newest.
    assert [e.key for e in store.search_words("deploy")] == ["d", "e", "f", "n"]


def test_a_query_without_a_significant_term_finds_nothing(store: MemoryStore) -> None:
    store.save("k", "billing provider of the month")
    memory = AgentMemory(store)
    # "billingx" and "pr" are terms no entry holds; "the", "of" are stopwords.
    assert memory.call_tool("memory_search", {"query": "the billingx of pr"}) == (
        "No memory entries found."
    )
    assert store.search_words("the of") == []
    # Stemming: "providers" finds "provider"; one term is enough.
    assert [e.key for e in store.search_words("providers")] == ["k"]


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
