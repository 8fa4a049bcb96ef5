"""membolt.integrations.anthropic beyond the SDK's own suite (tests/peer/):
the same commands given to the SDK's reference tool and to the adapter
answer the same (hypothesis), paths that leave /memories, the size bound,
what a store is not (a file used as a directory), the entries, and several
processes editing one file."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from anthropic.lib.tools import ToolError
from anthropic.lib.tools._beta_builtin_memory_tool import BetaLocalFilesystemMemoryTool
from anthropic.types.beta import (
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from membolt import MemoryStore
from membolt.integrations.anthropic import AsyncMemboltMemoryTool, MemboltMemoryTool, format_size

from support.adapter_processes import run_workers, worker_location

Command = Any


def view(path: str, view_range: list[int] | None = None) -> Command:
    return BetaMemoryTool20250818ViewCommand(command="view", path=path, view_range=view_range)


def create(path: str, text: str) -> Command:
    return BetaMemoryTool20250818CreateCommand(command="create", path=path, file_text=text)


def replace(path: str, old: str, new: str) -> Command:
    return BetaMemoryTool20250818StrReplaceCommand(
        command="str_replace", path=path, old_str=old, new_str=new
    )


def insert(path: str, line: int, text: str) -> Command:
    return BetaMemoryTool20250818InsertCommand(
        command="insert", path=path, insert_line=line, insert_text=text
    )


def delete(path: str) -> Command:
    return BetaMemoryTool20250818DeleteCommand(command="delete", path=path)


def rename(old: str, new: str) -> Command:
    return BetaMemoryTool20250818RenameCommand(command="rename", old_path=old, new_path=new)


def answer(run: Callable[[Command], object], command: Command) -> tuple[str, str]:
    try:
        return "ok", str(run(command))
    except ToolError as error:
        return "error", str(error)
    except OSError as error:  # the reference's file-system failures
        return "oserror", type(error).__name__


@pytest.fixture
def tool(store: MemoryStore) -> MemboltMemoryTool:
    return MemboltMemoryTool(store)


# ----- the same answers as the reference ---------------------------------------------

NAMES = ["a", "b.md", ".hidden", "dir", "d2"]
paths = st.lists(st.sampled_from(NAMES), min_size=0, max_size=3).map(
    lambda parts: "/".join(["/memories", *parts])
)
texts = st.sampled_from(["", "one", "one\ntwo", "x\ny\nx\n", "line\r\nnext\r\n", "é ü\n"])
commands = st.one_of(
    st.builds(view, paths, st.sampled_from([None, [1, 2], [2, -1], [0, 1]])),
    st.builds(create, paths, texts),
    st.builds(replace, paths, st.sampled_from(["one", "x", "two", "zz"]), texts),
    st.builds(insert, paths, st.integers(-1, 3), texts),
    st.builds(delete, paths),
    st.builds(rename, paths, paths),
)


def prune_empty_directories(root: Path) -> None:
    """A store has no empty directory: the reference's are removed after
    each command, so both sides hold the same tree."""
    for directory, _, _ in sorted(os.walk(root), key=lambda w: -len(w[0])):
        if Path(directory) != root and not any(Path(directory).iterdir()):
            Path(directory).rmdir()


def comparable(text: str) -> str:
    """A listing with the directories' sizes left out: the reference shows
    the file system's (4.0K), the adapter the bytes below."""
    if not text.startswith("Here're the files"):
        return text
    lines = text.split("\n")
    return "\n".join(
        [lines[0], "DIR\t" + lines[1].split("\t", 1)[1]]
        + [("DIR\t" + line.split("\t", 1)[1]) if line.endswith("/") else line for line in lines[2:]]
    )


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(script=st.lists(commands, min_size=1, max_size=12))
def test_the_adapter_answers_as_the_reference_tool(tmp_path: Path, script: list[Command]) -> None:
    folder = tmp_path / "reference"
    shutil.rmtree(folder, ignore_errors=True)
    reference = BetaLocalFilesystemMemoryTool(base_path=str(folder))
    store = MemoryStore(tmp_path / "m.redb")
    try:
        for key in store.keys():
            store.delete(key)
        adapter = MemboltMemoryTool(store)
        for command in script:
            expected = answer(reference.execute, command)
            got = answer(adapter.execute, command)
            prune_empty_directories(reference.memory_root)
            if expected[0] == "oserror":
                assert got[0] == "error", (command, expected, got)
            else:
                assert (got[0], comparable(got[1])) == (expected[0], comparable(expected[1])), (
                    command
                )
        snapshot = {
            str(p.relative_to(reference.memory_root)): p.read_bytes().decode()
            for p in reference.memory_root.rglob("*")
            if p.is_file()
        }
        stored = {k.removeprefix("/memories/"): store.get(k).value for k in store.keys()}  # type: ignore[union-attr]
        assert stored == snapshot
    finally:
        store.close()


def test_directory_sizes_are_the_bytes_below(tool: MemboltMemoryTool) -> None:
    tool.execute(create("/memories/notes/a.md", "x" * 1000))
    tool.execute(create("/memories/notes/deep/b.md", "y" * 1500))
    tool.execute(create("/memories/notes/deep/deeper/c.md", "z" * 100))
    tool.execute(create("/memories/notes/.secret", "s"))
    tool.execute(create("/memories/top.md", ""))
    assert tool.execute(view("/memories")) == (
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden"
        " items:\n2.5K\t/memories\n2.5K\t/memories/notes/\n1000B\t/memories/notes/a.md\n"
        "1.6K\t/memories/notes/deep/\n0B\t/memories/top.md"
    )
    assert [format_size(n) for n in (0, 1023, 1024, 1536, 1 << 20, 3 << 30, 5 << 40)] == [
        "0B",
        "1023B",
        "1K",
        "1.5K",
        "1M",
        "3G",
        "5120G",
    ]


# ----- paths and sizes ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "error"),
    [
        ("/etc/passwd", "Path must start with /memories, got: /etc/passwd"),
        ("memories/a", "Path must start with /memories, got: memories/a"),
        ("/memoriesX/a", "Path must start with /memories, got: /memoriesX/a"),
        ("/memories/../etc/passwd", "Path /memories/../etc/passwd would escape /memories"),
        ("/memories/a/../../x", "Path /memories/a/../../x would escape /memories"),
        ("/memories/a\0b", "contains a NUL character"),
        ("/memories/" + "p" * 1100, "is too long"),
    ],
)
def test_paths_outside_memories_are_refused(tool: MemboltMemoryTool, path: str, error: str) -> None:
    for command in (view(path), create(path, "x"), delete(path), rename(path, "/memories/z")):
        with pytest.raises(ToolError, match=error.replace(".", r"\.")):
            tool.execute(command)
    assert tool.store.keys() == []


def test_dot_segments_inside_memories_are_normalised(tool: MemboltMemoryTool) -> None:
    tool.execute(create("/memories/a/./b/../c.md", "text"))
    assert tool.store.keys() == ["/memories/a/c.md"]
    assert "1\ttext" in tool.execute(view("/memories//a/c.md"))


def test_files_are_bounded_in_size(store: MemoryStore) -> None:
    tool = MemboltMemoryTool(store, max_file_bytes=10)
    with pytest.raises(ToolError, match="would hold 11 bytes, over the limit of 10 bytes"):
        tool.execute(create("/memories/big", "x" * 11))
    tool.execute(create("/memories/f", "0123456789"))
    with pytest.raises(ToolError, match="over the limit"):
        tool.execute(replace("/memories/f", "0", "00"))
    with pytest.raises(ToolError, match="over the limit"):
        tool.execute(insert("/memories/f", 0, "more"))
    assert store.get("/memories/f").value == "0123456789"  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="max_file_bytes"):
        MemboltMemoryTool(store, max_file_bytes=-1)


def test_a_file_is_not_a_directory(tool: MemboltMemoryTool) -> None:
    tool.execute(create("/memories/a", "file"))
    with pytest.raises(ToolError, match="/memories/a is a file, not a directory"):
        tool.execute(create("/memories/a/b", "x"))
    tool.execute(create("/memories/d/x", "x"))
    with pytest.raises(ToolError, match="/memories/a is a file, not a directory"):
        tool.execute(rename("/memories/d", "/memories/a/d"))
    with pytest.raises(ToolError, match="into itself"):
        tool.execute(rename("/memories/d", "/memories/d/e"))
    with pytest.raises(ToolError, match="File /memories/d already exists"):
        tool.execute(create("/memories/d", "x"))
    assert tool.store.keys() == ["/memories/a", "/memories/d/x"]


def test_a_directory_moves_and_goes_as_a_whole(tool: MemboltMemoryTool) -> None:
    for name in ("x", "sub/y", "sub/z"):
        tool.execute(create(f"/memories/d/{name}", name))
    tool.execute(rename("/memories/d", "/memories/e/f"))
    assert tool.store.keys() == ["/memories/e/f/sub/y", "/memories/e/f/sub/z", "/memories/e/f/x"]
    tool.execute(delete("/memories/e/f/sub"))
    assert tool.store.keys() == ["/memories/e/f/x"]
    assert tool.clear_all_memory() == "All memory cleared"
    assert tool.store.keys() == []


def test_files_are_entries_and_a_prefix_keeps_tools_apart(store: MemoryStore) -> None:
    alice = MemboltMemoryTool(store, key_prefix="alice:")
    bob = MemboltMemoryTool(store, key_prefix="bob:")
    alice.execute(create("/memories/prefs.md", "tea"))
    bob.execute(create("/memories/prefs.md", "coffee"))
    entry = store.get("alice:/memories/prefs.md")
    assert entry is not None
    assert (entry.value, entry.type, entry.references) == ("tea", "memory_file", ())
    assert "coffee" in bob.execute(view("/memories/prefs.md"))
    assert [e.key for e in store.search_words("coffee")] == ["bob:/memories/prefs.md"]
    alice.clear_all_memory()
    assert store.keys() == ["bob:/memories/prefs.md"]


def test_the_runner_s_entry_points(tool: MemboltMemoryTool) -> None:
    assert tool.to_dict() == {"type": "memory_20250818", "name": "memory"}
    assert tool.call({"command": "create", "path": "/memories/a", "file_text": "x"}) == (
        "File created successfully at: /memories/a"
    )
    assert tool.call({"command": "view", "path": "/memories/a"}).endswith("1\tx")  # type: ignore[union-attr]


def test_the_async_tool_keeps_line_endings(store: MemoryStore) -> None:
    tool = AsyncMemboltMemoryTool(store)

    async def scenario() -> None:
        await tool.create(create("/memories/crlf.txt", "line1\r\nline2\r\nline3\r\n"))
        shown = await tool.view(view("/memories/crlf.txt"))
        assert shown.endswith("     1\tline1\r\n     2\tline2\r\n     3\tline3\r\n     4\t")
        await tool.str_replace(replace("/memories/crlf.txt", "line2", "LINE2"))
        await tool.insert(insert("/memories/crlf.txt", 1, "Inserted"))
        assert store.get("/memories/crlf.txt").value == (  # type: ignore[union-attr]
            "line1\r\nInserted\nLINE2\r\nline3\r\n"
        )
        await tool.rename(rename("/memories/crlf.txt", "/memories/b.txt"))
        await tool.delete(delete("/memories/b.txt"))
        assert await tool.clear_all_memory() == "All memory cleared"

    asyncio.run(scenario())


# ----- several processes --------------------------------------------------------------


@pytest.fixture
def location(medium: str, store_path: Path, request: pytest.FixtureRequest) -> tuple[str, str]:
    return worker_location(medium, store_path, request)


@pytest.mark.slow
def test_processes_editing_one_file_lose_no_edit(location: tuple[str, str]) -> None:
    where, project = location
    with MemoryStore(where, project=None if project == "-" else project) as store:
        MemboltMemoryTool(store).execute(create("/memories/shared.md", ""))
    run_workers("memory-insert", where, project, count=3, rounds=10)
    with MemoryStore(where, project=None if project == "-" else project) as store:
        lines = store.get("/memories/shared.md").value.splitlines()  # type: ignore[union-attr]
    assert sorted(lines) == sorted(f"w{n}-{i}" for n in range(3) for i in range(10))
    for n in range(3):  # each process's lines in its own order (each went on top)
        mine = [line for line in lines if line.startswith(f"w{n}-")]
        assert mine == [f"w{n}-{i}" for i in reversed(range(10))]
