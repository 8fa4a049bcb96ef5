"""The spool of events kept for a busy store (§13.1), its rules alone.

Each record is applied once and in order: a drain starts after the id of
the last record applied, so a drainer that died mid-drain leaves at most one
record to apply again; a record its applier refuses is skipped; a store that
is busy again stops the drain with the rest kept; a line cut by a crash
does not swallow the next record. Every write of the store applies the
spool first, and nothing else reads it. The Claude Code hooks' use of it,
through real processes, is in test_claude_code.py.
"""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

import membolt
from membolt import spool
from membolt.errors import StoreBusyError


def records(path: Path) -> list[str]:
    return [json.loads(line)["data"]["n"] for line in path.read_text().splitlines() if line]


def spool_with(path: Path, *names: str) -> list[spool.Record]:
    return [spool.append(path, "test", {"n": name}, 1_000 + i) for i, name in enumerate(names)]


def test_append_keeps_a_private_file_of_json_lines(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "store.spool"
    first, second = spool_with(path, "a", "b")
    assert first.id != second.id
    assert records(path) == ["a", "b"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    line = json.loads(path.read_text().splitlines()[0])
    assert line == {"id": first.id, "at": 1_000, "source": "test", "data": {"n": "a"}}


def test_a_line_cut_by_a_crash_does_not_swallow_the_next_record(tmp_path: Path) -> None:
    path = tmp_path / "store.spool"
    spool_with(path, "a")
    with path.open("ab") as out:
        out.write(b'{"id": "cut", "at": 1, "sou')  # a writer died here
    spool_with(path, "b")
    applied: list[str] = []
    assert spool.drain(path, lambda record: applied.append(record.data["n"])) == 2
    assert applied == ["a", "b"]
    assert path.read_bytes() == b""


def test_a_drain_applies_in_order_once_and_empties_the_spool(tmp_path: Path) -> None:
    path = tmp_path / "store.spool"
    spool_with(path, "a", "b", "c")
    applied: list[str] = []
    assert spool.drain(path, lambda record: applied.append(record.data["n"])) == 3
    assert applied == ["a", "b", "c"]
    assert not spool.pending(path)
    assert spool.drain(path, lambda record: applied.append(record.data["n"])) == 0
    assert applied == ["a", "b", "c"]
    assert not Path(f"{path}{spool.APPLIED_SUFFIX}").exists()


def test_a_drain_starts_after_the_last_record_applied(tmp_path: Path) -> None:
    """A drainer that died after applying ``b`` left its id behind."""
    path = tmp_path / "store.spool"
    _, second, _ = spool_with(path, "a", "b", "c")
    Path(f"{path}{spool.APPLIED_SUFFIX}").write_text(second.id)
    applied: list[str] = []
    spool.drain(path, lambda record: applied.append(record.data["n"]))
    assert applied == ["c"]
    # A stale id (one the spool does not hold) applies the whole spool.
    spool_with(path, "d", "e")
    Path(f"{path}{spool.APPLIED_SUFFIX}").write_text(second.id)
    spool.drain(path, lambda record: applied.append(record.data["n"]))
    assert applied == ["c", "d", "e"]


def test_a_busy_store_stops_the_drain_and_keeps_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "store.spool"
    spool_with(path, "a", "b", "c")
    applied: list[str] = []
    busy = [True]

    def apply(record: spool.Record) -> None:
        if record.data["n"] == "b" and busy[0]:
            raise StoreBusyError("busy")
        applied.append(record.data["n"])

    with pytest.raises(StoreBusyError):
        spool.drain(path, apply)
    assert applied == ["a"]
    assert records(path) == ["a", "b", "c"]
    busy[0] = False
    spool.drain(path, apply)
    assert applied == ["a", "b", "c"]


def test_a_record_its_applier_refuses_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "store.spool"
    spool_with(path, "a", "bad", "c")
    applied: list[str] = []

    def apply(record: spool.Record) -> None:
        if record.data["n"] == "bad":
            raise KeyError("a field the applier needs")
        applied.append(record.data["n"])

    assert spool.drain(path, apply) == 2
    assert applied == ["a", "c"]
    assert not spool.pending(path)


def test_every_write_of_a_store_applies_its_spool_first(tmp_path: Path) -> None:
    store = membolt.MemoryStore(tmp_path / "memory.redb")
    assert store.spool_path == tmp_path / "memory.redb.spool"
    writes = [
        lambda: store.save("k", "v"),
        lambda: store.save_many([("k2", "v")]),
        lambda: store.delete("k2"),
        lambda: store.link("k", "k0"),
        lambda: store.unlink("k", "k0"),
        lambda: store.import_entries([]),
    ]
    store.save("k0", "v")
    for n, write in enumerate(writes):
        # A record of no known source: applying it fails, it is skipped,
        # and the spool is emptied before the write.
        spool.append(store.spool_path, "nobody", {"n": n}, 1)
        write()
        assert not spool.pending(store.spool_path), n
    with store.batch() as batch:
        spool.append(store.spool_path, "nobody", {}, 1)
        batch.save("k3", "v")
    assert not spool.pending(store.spool_path)
    # Reads leave it alone.
    spool.append(store.spool_path, "nobody", {}, 1)
    store.get("k")
    store.render("", 500)
    assert spool.pending(store.spool_path)


def test_a_database_store_spools_under_the_store_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMBOLT_HOME", str(tmp_path))
    first = membolt.MemoryStore("postgresql://u@127.0.0.1:1/db", project="a")
    second = membolt.MemoryStore("postgresql://u@127.0.0.1:1/db", project="b")
    assert first.spool_path.parent == tmp_path / "postgresql-spool"
    assert first.spool_path != second.spool_path  # a file per project
    assert first.spool_path.suffix == ".spool"
