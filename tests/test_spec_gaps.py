"""BEHAVIOUR.md rules that no other test pinned with the spec's own values.

Constants are written here as the spec states them (5 s, 100 keys, ...), never
imported from membolt, so a change in the implementation fails a test.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import membolt
from membolt import AgentMemory, MemoryStore, project_store_path, system_prompt_section
from membolt.transfer import import_entries, parse

WORKER = str(Path(__file__).with_name("store_worker.py"))


def hold_store(path: Path, seconds: float) -> subprocess.Popen[str]:
    """A child process holding the store at ``path`` (see store_worker.py);
    returns once the child holds it."""
    holder = subprocess.Popen(
        [sys.executable, WORKER, "hold", str(path), str(seconds)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "held"
    return holder


def stop(holder: subprocess.Popen[str]) -> None:
    holder.kill()
    holder.communicate(timeout=30)


def error_of(text: str) -> str:
    """The message of a tool's ``{"error": ...}`` answer (and nothing else)."""
    parsed = json.loads(text)
    assert isinstance(parsed, dict)
    assert list(parsed) == ["error"]
    message = parsed["error"]
    assert isinstance(message, str)
    return message


# ---------------------------------------------------------------------------
# §1.4: the busy timeout defaults to 5 s
# ---------------------------------------------------------------------------

SPEC_DEFAULT_TIMEOUT = 5.0


def test_default_timeout_of_an_explicit_path(store_path: Path) -> None:
    assert MemoryStore(store_path).timeout == SPEC_DEFAULT_TIMEOUT


def test_default_timeout_of_a_project_store(tmp_path: Path) -> None:
    project = tmp_path / "project"
    assert MemoryStore.for_project(project, tmp_path / "base").timeout == SPEC_DEFAULT_TIMEOUT
    assert MemoryStore.for_project(project).timeout == SPEC_DEFAULT_TIMEOUT  # $MEMBOLT_HOME
    assert MemoryStore.for_project().timeout == SPEC_DEFAULT_TIMEOUT
    assert membolt.get_or_create_store(project).timeout == SPEC_DEFAULT_TIMEOUT


def test_timeout_is_configurable(tmp_path: Path) -> None:
    assert MemoryStore(tmp_path / "a.redb", timeout=1.5).timeout == 1.5
    assert MemoryStore.for_project(tmp_path, tmp_path / "b", timeout=0.25).timeout == 0.25


@pytest.mark.slow
def test_default_timeout_waits_about_five_seconds_then_raises(tmp_path: Path) -> None:
    project, base = tmp_path / "project", tmp_path / "base"
    path = project_store_path(project, base)
    # Held far longer than 5 s: a store that waited until the holder let go
    # would not raise at all.
    holder = hold_store(path, 60)
    handles = {"path": MemoryStore(path), "for_project": MemoryStore.for_project(project, base)}
    waited: dict[str, float] = {}
    raised: dict[str, Exception | None] = {}

    def wait(name: str, store: MemoryStore) -> None:
        started = time.monotonic()
        try:
            store.save("during", "x")
            raised[name] = None
        except Exception as error:
            raised[name] = error
        waited[name] = time.monotonic() - started

    try:
        # Both wait at once (the GIL is released while waiting).
        threads = [threading.Thread(target=wait, args=item) for item in handles.items()]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=50)
        assert not any(thread.is_alive() for thread in threads)
    finally:
        stop(holder)
    for name in handles:
        assert isinstance(raised[name], membolt.StoreBusyError), (name, raised[name])
        assert isinstance(raised[name], TimeoutError)
        assert waited[name] >= 4.5, (name, waited[name])


# ---------------------------------------------------------------------------
# §5.9: the <memory-keys> block lists the 100 newest keys
# ---------------------------------------------------------------------------


def listed_keys(section: str) -> list[str]:
    keys_block = section.split("\n\n<memory-keys>\n", 1)[1]
    assert keys_block.endswith("\n</memory-keys>")
    return keys_block[: -len("\n</memory-keys>")].split("\n")


@pytest.mark.parametrize(("saved", "more"), [(130, 30), (101, 1), (100, 0), (99, 0)])
def test_memory_keys_lists_the_100_newest(store: MemoryStore, saved: int, more: int) -> None:
    for i in range(saved):
        store.save(f"k{i:03d}", "v", type="note")
    newest_first = [f"k{i:03d}" for i in range(saved - 1, -1, -1)]
    expected = newest_first[:100]
    if more:
        expected.append(f"... and {more} more (use memory_search to find older entries)")
    assert listed_keys(system_prompt_section(store, "", now_ms=0)) == expected
    assert listed_keys(AgentMemory(store).system_prompt_section("")) == expected


# ---------------------------------------------------------------------------
# §7: re-capturing a summary keeps an existing bullet entry's references
# ---------------------------------------------------------------------------

SUMMARY = (
    "## Goal\nship the users endpoint\n"
    "## Key Decisions\n- **Use redb**: one file per project\n"
    "## Critical Context\n- Deploy target: fly.io\n"
)


def test_recapture_keeps_the_references_of_an_existing_bullet(store: MemoryStore) -> None:
    store.save("prompt:users", "ship it")
    store.save("use_redb", "sqlite", type="decision", references=["prompt:users"])
    store.save("deploy_target", "heroku", type="context", references=[])
    memory = AgentMemory(store)
    assert memory.auto_capture(SUMMARY) == 3
    decision = store.get("use_redb")
    context = store.get("deploy_target")
    assert decision is not None
    assert context is not None
    assert decision.value == "one file per project"
    assert context.value == "fly.io"
    # Existing entries keep their references: no link to the checkpoint added.
    assert decision.references == ("prompt:users",)
    assert context.references == ()
    assert store.children("checkpoint:summary") == []


def test_recapture_keeps_references_changed_after_the_first_capture(store: MemoryStore) -> None:
    memory = AgentMemory(store)
    assert memory.auto_capture(SUMMARY) == 3
    assert store.get("use_redb").references == ("checkpoint:summary",)  # type: ignore[union-attr]
    store.save("prompt:users", "ship it")
    store.unlink("use_redb", "checkpoint:summary")
    store.link("use_redb", "prompt:users")
    checkpoint_refs = store.get("checkpoint:summary").references  # type: ignore[union-attr]
    assert memory.auto_capture(SUMMARY.replace("one file", "a file")) == 3
    assert store.get("use_redb").value == "a file per project"  # type: ignore[union-attr]
    assert store.get("use_redb").references == ("prompt:users",)  # type: ignore[union-attr]
    assert store.get("deploy_target").references == ("checkpoint:summary",)  # type: ignore[union-attr]
    assert store.get("checkpoint:summary").references == checkpoint_refs  # type: ignore[union-attr]


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
# §9.2: tool_calls.name is the name as called
# ---------------------------------------------------------------------------


def test_tool_calls_log_the_name_as_called(store: MemoryStore) -> None:
    memory = AgentMemory(store)
    memory.call_tool("remember", {"key": "a", "value": "1"})
    memory.call_tool("memorize", '{"key": "b", "value": "2"}')
    memory.call_tool("recall", {"query": "a"})
    memory.call_tool("forget", {"key": "b"})
    memory.call_tool("memory_list", {})
    called = ["remember", "memorize", "recall", "forget", "memory_list"]
    rows = memory.query("tool_calls")["rows"]
    assert [row["name"] for row in rows] == called
    assert rows[1]["args"] == '{"key": "b", "value": "2"}'  # text arguments as given
    assert memory.query("map(tool_calls, .name)") == called
    answer = json.loads(memory.call_tool("memory_query", {"query": "map(tool_calls, .name)"}))
    assert answer == called
    # The memory_query call itself is logged under its own name afterwards.
    assert memory.query("last(tool_calls).name") == "memory_query"


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
