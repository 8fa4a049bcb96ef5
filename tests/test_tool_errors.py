"""§4: store errors (busy, corrupt) reach the model as ``{"error": ...}`` text
naming the tool and the file, and change nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from membolt import AgentMemory, MemoryStore

from support.processes import hold_store, stop


def error_of(text: str) -> str:
    """The message of a tool's ``{"error": ...}`` answer (and nothing else)."""
    parsed = json.loads(text)
    assert isinstance(parsed, dict)
    assert list(parsed) == ["error"]
    message = parsed["error"]
    assert isinstance(message, str)
    return message


# ---------------------------------------------------------------------------
# §4: store errors (busy, corrupt) come back as {"error": ...} text
# ---------------------------------------------------------------------------

TOOL_CALLS = [
    ("memory_save", {"key": "k", "value": "v"}),
    ("memory_search", {"query": "k"}),
    ("memory_delete", {"key": "k"}),
    ("memory_list", {}),
    ("memory_query", {"query": "len(memory)"}),
    ("remember", {"key": "k", "value": "v"}),
    ("recall", {"query": "k"}),
    ("forget", {"key": "k"}),
]
CANONICAL = {"remember": "memory_save", "recall": "memory_search", "forget": "memory_delete"}


def assert_every_tool_reports(store: MemoryStore, path: Path, detail: str | None = None) -> None:
    """Every tool (and alias) answers an error naming itself and the file
    (or, when given, exactly ``detail`` after the tool name)."""
    memory = AgentMemory(store)
    for name, arguments in TOOL_CALLS:
        answer = memory.call_tool(name, arguments)
        message = error_of(answer)
        assert message.startswith(f"{CANONICAL.get(name, name)}: "), answer
        if detail is None:
            assert str(path) in message
        else:
            assert message == f"{CANONICAL.get(name, name)}: {detail}"


@pytest.mark.slow
def test_busy_store_errors_are_tool_results(store_path: Path) -> None:
    holder = hold_store(store_path, 60)
    try:
        # A busy store tells the model what it can do (wait and retry).
        assert_every_tool_reports(
            MemoryStore(store_path, timeout=0.2),
            store_path,
            "the memory store is busy (another process is using it); retry in a moment",
        )
    finally:
        stop(holder)
    # None of the calls wrote anything.
    assert MemoryStore(store_path).keys() == ["held-by-child"]


def text_file(path: Path) -> None:
    path.write_text("hello, not a database\n" * 100)


def truncated_store(path: Path) -> None:
    source = path.with_name("source.redb")
    with MemoryStore(source) as store:
        for i in range(50):
            store.save(f"key{i}", f"value {i} " * 20)
    path.write_bytes(source.read_bytes()[:100])


@pytest.mark.parametrize("damage", [text_file, truncated_store])
def test_corrupt_store_errors_are_tool_results_and_leave_the_file(
    tmp_path: Path, damage: object
) -> None:
    path = tmp_path / "memory.redb"
    damage(path)  # type: ignore[operator]
    before = path.read_bytes()
    assert_every_tool_reports(MemoryStore(path, timeout=0.5), path)
    assert path.read_bytes() == before
