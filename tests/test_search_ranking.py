"""§4: how memory_search ranks and cuts its hits, ties included."""

from __future__ import annotations

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
