"""The read-only integrity check behind `membolt doctor`."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import membolt
import membolt.doctor
from membolt import MemoryStore

from support.fixture_stores import copy_fixture_store

# doctor checks store files (a PostgreSQL store's rows are checked by every
# read; see test_postgres.py).
pytestmark = pytest.mark.redb_only


def test_a_healthy_store(store: MemoryStore) -> None:
    store.save("prompt:x", "goal")
    store.save("note", "n", references=["prompt:x", "gone"])
    report = membolt.doctor.inspect(store.path)
    assert report.entries == 2
    assert report.problem_count == 0
    assert report.by_type == {"prompt": 1, "note": 1}
    assert any("1 referenced keys do not exist" in note for note in report.notes)


def test_doctor_never_modifies_the_file(store: MemoryStore) -> None:
    store.save("k", "v")
    membolt._core._release_all()
    before = Path(store.path).read_bytes()
    membolt.doctor.inspect(store.path)
    assert Path(store.path).read_bytes() == before


def test_foreign_and_damaged_files(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.redb"
    copy_fixture_store("foreign", foreign)
    with pytest.raises(membolt.CorruptStoreError, match="without membolt's tables"):
        membolt.doctor.inspect(foreign)
    text = tmp_path / "text.redb"
    text.write_text("hello " * 500)
    with pytest.raises(membolt.CorruptStoreError):
        membolt.doctor.inspect(text)
    newer = tmp_path / "newer.redb"
    copy_fixture_store("newer_schema", newer)
    with pytest.raises(membolt.StoreVersionError):
        membolt.doctor.inspect(newer)


def test_empty_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.redb"
    empty.write_bytes(b"")
    report = membolt.doctor.inspect(empty)
    assert report.entries == 0
    assert report.problem_count == 0


KILLED_WRITER = """
import os, signal, sys
import membolt
store = membolt.MemoryStore(sys.argv[1])
with store.hold():
    store.save_many([(f"k{i}", "value " * 20) for i in range(int(sys.argv[2]))], caps=False)
    os.kill(os.getpid(), signal.SIGKILL)  # the file is still open: not closed cleanly
"""


def killed_writer_store(path: Path, entries: int) -> Path:
    done = subprocess.run(
        [sys.executable, "-c", KILLED_WRITER, str(path), str(entries)], check=False, timeout=120
    )
    assert done.returncode == -signal.SIGKILL
    return path


def doctor_copies() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("membolt-doctor-*")}


def test_a_file_left_by_a_killed_writer_is_checked_in_memory(tmp_path: Path) -> None:
    path = killed_writer_store(tmp_path / "killed.redb", 300)
    before, copies = path.read_bytes(), doctor_copies()
    report = membolt.doctor.inspect(path)
    assert report.entries == 300
    assert report.problem_count == 0
    assert any("not closed cleanly" in n and "succeeds" in n for n in report.notes)
    assert path.read_bytes() == before  # the recovery ran in memory
    assert doctor_copies() == copies  # with no copy on disk


def test_a_truncated_file_is_a_problem(tmp_path: Path) -> None:
    path = killed_writer_store(tmp_path / "killed.redb", 2000)
    truncated = tmp_path / "truncated.redb"
    truncated.write_bytes(path.read_bytes()[:20_000])
    with pytest.raises(membolt.CorruptStoreError, match=r"truncated\.redb"):
        membolt.doctor.inspect(truncated)
    clean = tmp_path / "clean.redb"
    store = MemoryStore(clean)
    store.save_many([(f"k{i}", "value " * 20) for i in range(2000)], caps=False)
    store.close()
    membolt._core._release_all()
    cut = tmp_path / "cut.redb"
    cut.write_bytes(clean.read_bytes()[:20_000])
    with pytest.raises(membolt.CorruptStoreError, match=r"cut\.redb"):
        membolt.doctor.inspect(cut)


def test_flipped_bits_never_escape_as_a_panic(tmp_path: Path) -> None:
    clean = tmp_path / "clean.redb"
    store = MemoryStore(clean)
    store.save_many([(f"k{i}", "hello " * 20) for i in range(500)], caps=False)
    store.close()
    membolt._core._release_all()
    original = clean.read_bytes()
    for offset in range(0, min(len(original), 64 * 1024), 509):
        damaged = bytearray(original)
        damaged[offset] ^= 0x01
        path = tmp_path / "flipped.redb"
        path.write_bytes(bytes(damaged))
        # A report when the flip is in unused space, else a MemboltError; a
        # PanicException (a BaseException) would fail the test.
        with contextlib.suppress(membolt.MemboltError):
            membolt.doctor.inspect(path)
        assert path.read_bytes() == bytes(damaged)


def test_a_flipped_bit_inside_a_value_is_found(tmp_path: Path) -> None:
    # The damaged value still decodes ("hello" -> "iello"); only the page
    # checksums, checked on a copy, show it.
    path = tmp_path / "s.redb"
    store = MemoryStore(path)
    store.save_many([(f"k{i}", f"value {i} zebra-marker-{i}") for i in range(50)], caps=False)
    store.close()
    membolt._core._release_all()
    assert membolt.doctor.inspect(path).problem_count == 0
    data = bytearray(path.read_bytes())
    marker = b"zebra-marker-7"
    at = data.find(marker)
    assert at >= 0
    while at >= 0:  # every copy, live or stale
        data[at] ^= 0x01
        at = data.find(marker, at + 1)
    path.write_bytes(bytes(data))
    try:
        report = membolt.doctor.inspect(path)
    except membolt.CorruptStoreError:
        return
    assert report.problem_count >= 1
    assert any("checksum" in p or "integrity" in p for p in report.problems)
    assert path.read_bytes() == bytes(data)


def test_doctor_creates_no_sidecar(tmp_path: Path) -> None:
    path = tmp_path / "s.redb"
    store = MemoryStore(path)
    store.save("k", "v")
    store.close()
    membolt._core._release_all()
    sidecar = tmp_path / "s.redb.sync"
    sidecar.unlink()
    report = membolt.doctor.inspect(path)
    assert any("no usable .sync sidecar" in note for note in report.notes)
    assert not sidecar.exists()
