"""The files beside a store (docs/behaviour.md §14.2): readers create none
of them, and a symbolic link planted in a companion file's place is never
followed, by readers or writers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import membolt
from membolt import MemoryStore

pytestmark = pytest.mark.redb_only

READERS = (
    ["list"],
    ["get", "k"],
    ["search", "value"],
    ["render"],
    ["export"],
    ["stats"],
    ["query", "memory"],
)


def membolt_command(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "membolt", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def a_store(tmp_path: Path) -> Path:
    path = tmp_path / "store" / "memory.redb"
    store = MemoryStore(path)
    store.save("k", "a value")
    store.close()
    membolt._core._release_all()
    return path


def test_readers_create_no_file_beside_a_store(tmp_path: Path) -> None:
    path = a_store(tmp_path)
    for companion in ("memory.redb.sync", "memory.redb.journal"):
        (path.parent / companion).unlink()
    before = names(path.parent)
    for command in READERS:
        done = membolt_command(*command, "--db", path)
        assert done.returncode == 0, (command, done.stderr)
        assert names(path.parent) == before, command
    # Through the API, in this process, call after call.
    store = MemoryStore(path)
    assert store.get("k") is not None
    assert store.search("value")
    assert store.render()
    store.close()
    membolt._core._release_all()
    assert names(path.parent) == before


@pytest.mark.parametrize("companion", ["memory.redb.sync", "memory.redb.journal.new"])
def test_a_planted_symbolic_link_is_never_written_through(tmp_path: Path, companion: str) -> None:
    path = a_store(tmp_path)
    if companion.endswith(".new"):
        (path.parent / "memory.redb.journal").unlink()  # the next writer makes one
    else:
        (path.parent / companion).unlink()
    victim = tmp_path / "precious.txt"
    victim.write_text("must stay as it is\n")
    (path.parent / companion).symlink_to(victim)
    for command in (["list"], ["save", "k2", "another value"], ["get", "k2"]):
        done = membolt_command(*command, "--db", path)
        assert done.returncode == 0, (command, done.stderr)
        assert victim.read_text() == "must stay as it is\n", command
    store = MemoryStore(path)
    assert store.get("k2") is not None
    store.save("k3", "in this process")
    store.close()
    membolt._core._release_all()
    assert victim.read_text() == "must stay as it is\n"


def test_a_journal_that_is_a_symbolic_link_is_refused_not_followed(tmp_path: Path) -> None:
    path = a_store(tmp_path)
    journal = path.parent / "memory.redb.journal"
    victim = tmp_path / "precious.bin"
    victim.write_bytes(journal.read_bytes())  # even one that looks like a journal
    journal.unlink()
    journal.symlink_to(victim)
    before = victim.read_bytes()
    for command in (["list"], ["save", "k2", "v"]):
        done = membolt_command(*command, "--db", path)
        assert done.returncode == 1
        assert "memory.redb.journal" in done.stderr
        assert "symbolic link" in done.stderr
    assert victim.read_bytes() == before
    assert journal.is_symlink()  # left for the user to look at
