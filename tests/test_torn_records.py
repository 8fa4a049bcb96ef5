"""A killed writer never bricks a store (docs/behaviour.md §1.4, §14.1).

A journal record larger than a page, written with a buffered ``write``
(tmpfs, overlayfs: no ``O_DIRECT``), can be cut short by SIGKILL: its first
page(s) new, the rest as before. That change never returned to its caller,
so the next open discards it quietly; an acknowledged record damaged the
same way is still refused. The kill campaign checks this on tmpfs and on
the disk the tests run on; the forged tests check every page boundary of
one record, both ways.

``MEMBOLT_KILL_SECONDS`` (default 3 per file system) runs a longer
campaign; the counts are printed (``pytest -s``).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import membolt
import membolt.doctor
from membolt import MemoryStore

from support.torn_writer import KEYS, operation

pytestmark = [pytest.mark.slow, pytest.mark.redb_only]

WRITER = str(Path(__file__).parent / "support" / "torn_writer.py")
SECONDS = float(os.environ.get("MEMBOLT_KILL_SECONDS", "3"))
BLOCK = 4096
SYNC_MARK_OFFSET = 64 + (256 << 10)  # the acknowledgement mark in the .sync file
SYNC_MARK_LEN = 68


@pytest.fixture(params=["tmpfs", "disk"])
def directory(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    if request.param == "disk":
        yield tmp_path
        return
    if not Path("/dev/shm").is_dir():
        pytest.skip("needs a tmpfs at /dev/shm")
    made = Path(tempfile.mkdtemp(prefix="membolt-torn-", dir="/dev/shm"))
    try:
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)


def read_store(path: Path) -> dict[str, str]:
    """Every key and value, read the way a new process reads them."""
    store = MemoryStore(path)
    try:
        return {entry.key: entry.value for entry in store.entries()}
    finally:
        store.close()
        membolt._core._release_all()


def test_a_writer_killed_mid_save_never_bricks_the_store(directory: Path) -> None:
    path = directory / "memory.redb"
    rng = random.Random(20)
    state: dict[str, str] = {}  # what every acknowledged change left
    counts = {"kills": 0, "acknowledged": 0, "in flight landed": 0, "cut short noted": 0}
    deadline = time.monotonic() + SECONDS
    generation = 0
    while time.monotonic() < deadline or counts["kills"] < 3:
        writer = subprocess.Popen(
            [sys.executable, WRITER, str(path), str(generation)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert writer.stdout is not None
        wait_for = rng.randint(0, 3)
        acknowledged = 0
        while acknowledged < wait_for:
            line = writer.stdout.readline()
            assert line, f"the writer ended early: {writer.communicate()[1][-2000:]}"
            acknowledged += 1
        time.sleep(rng.uniform(0, 0.01))
        writer.send_signal(signal.SIGKILL)
        rest, errors = writer.communicate(timeout=60)
        assert writer.returncode == -signal.SIGKILL, errors[-2000:]
        acknowledged += len(rest.split())
        counts["kills"] += 1
        counts["acknowledged"] += acknowledged

        for index in range(acknowledged):
            key, value = operation(generation, index)
            apply(state, key, value)
        # Past the reported ones: a save that returned just before the kill
        # (unreported), and the one in flight; each landed whole or not at
        # all, in order.
        possible = [state]
        for index in (acknowledged, acknowledged + 1):
            key, value = operation(generation, index)
            possible.append(dict(possible[-1]))
            apply(possible[-1], key, value)

        found = read_store(path)  # must open: CorruptStoreError fails the test
        assert set(found) <= set(KEYS)
        assert found in possible, f"generation {generation}: a change was lost or torn"
        counts["in flight landed"] += found != state
        state = found
        report = membolt.doctor.inspect(path)
        assert report.problems == (), report.problems
        counts["cut short noted"] += sum("cut short" in note for note in report.notes)
        generation += 1
    print(f"\nkill campaign on {directory.name}, {SECONDS:g} s: {json.dumps(counts)}")


def apply(state: dict[str, str], key: str, value: str | None) -> None:
    if value is None:
        state.pop(key, None)
    else:
        state[key] = value


# ----- one record, cut short at every page boundary ---------------------------

# Two leases: the first fills the journal with big records (the "old"
# content a cut-short write leaves behind); the second saves two small
# values and waits, then one big value and waits, then is killed.
PAUSING_WRITER = """
import os, signal, sys
import membolt
store = membolt.MemoryStore(sys.argv[1])
with store.hold():
    for i in range(3):
        store.save(f"old:{i}", f"old value {i} " * 12_000)
with store.hold():
    store.save("a", "1")
    store.save("b", "2")
    print("before", flush=True)
    sys.stdin.readline()
    store.save("big", "the big value " * 3_000)
    print("after", flush=True)
    sys.stdin.readline()
    os.kill(os.getpid(), signal.SIGKILL)
"""


def files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in directory.iterdir() if p.is_file()}


@pytest.fixture(scope="module")
def before_and_after(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes]]:
    """The killed writer's store (its files after the big save) and its
    files from just before the big save."""
    directory = tmp_path_factory.mktemp("paused")
    writer = subprocess.Popen(
        [sys.executable, "-c", PAUSING_WRITER, str(directory / "memory.redb")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert writer.stdin is not None
    assert writer.stdout is not None
    assert writer.stdout.readline().strip() == "before"
    before = files(directory)
    writer.stdin.write("\n")
    writer.stdin.flush()
    assert writer.stdout.readline().strip() == "after"
    writer.stdin.write("\n")
    writer.stdin.flush()
    writer.communicate(timeout=60)
    assert writer.returncode == -signal.SIGKILL
    return directory, before


def forge(
    tmp_path: Path,
    killed: Path,
    before: dict[str, bytes],
    pages_written: int | None,
    acknowledged: bool,
) -> tuple[Path, int]:
    """A copy of the killed writer's store whose big record has only its
    first ``pages_written`` pages (``None``: all), the rest as before, and
    whose acknowledgement mark counts the big save or not. Returns the
    store's path and the record's length in pages."""
    target = tmp_path / f"forged-{pages_written}-{acknowledged}"
    shutil.copytree(killed, target)
    journal = target / "memory.redb.journal"
    after = bytearray(journal.read_bytes())
    old = before["memory.redb.journal"]
    changed = [b for b in range(0, len(after), BLOCK) if after[b : b + BLOCK] != old[b : b + BLOCK]]
    first, pages = changed[0], len(changed)
    assert changed == list(range(first, first + pages * BLOCK, BLOCK))
    assert pages >= 10  # the record spans many pages
    if pages_written is not None:
        cut = first + pages_written * BLOCK
        after[cut:] = old[cut:]
    journal.write_bytes(bytes(after))
    if not acknowledged:
        sync = target / "memory.redb.sync"
        marked = bytearray(sync.read_bytes())
        end = SYNC_MARK_OFFSET + SYNC_MARK_LEN
        marked[SYNC_MARK_OFFSET:end] = before["memory.redb.sync"][SYNC_MARK_OFFSET:end]
        sync.write_bytes(bytes(marked))
    return target / "memory.redb", pages


def doctor_status(path: Path) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "membolt", "doctor", "--db", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


def test_a_record_cut_short_at_any_page_is_discarded_quietly(
    tmp_path: Path, before_and_after: tuple[Path, dict[str, bytes]]
) -> None:
    killed, before = before_and_after
    _, pages = forge(tmp_path / "probe", killed, before, None, acknowledged=True)
    for written in range(1, pages):
        path, _ = forge(tmp_path, killed, before, written, acknowledged=False)
        status, output = doctor_status(path)
        assert status == 0, f"{written} of {pages} pages: {output}"
        assert "cut short" in output
        values = read_store(path)
        assert "big" not in values, f"{written} of {pages} pages"
        assert values["a"] == "1"
        assert values["b"] == "2"
        assert values["old:2"] == "old value 2 " * 12_000
        # A writer carries on where the acknowledged changes end.
        MemoryStore(path).save("after", "the kill")
        membolt._core._release_all()
        assert read_store(path)["after"] == "the kill"
        assert doctor_status(path)[0] == 0


def test_an_acknowledged_record_damaged_the_same_way_is_refused(
    tmp_path: Path, before_and_after: tuple[Path, dict[str, bytes]]
) -> None:
    killed, before = before_and_after
    path, _ = forge(tmp_path, killed, before, 3, acknowledged=True)
    snapshot = files(path.parent)
    with pytest.raises(membolt.CorruptStoreError, match="acknowledged"):
        MemoryStore(path).get("a")
    membolt._core._release_all()
    status, output = doctor_status(path)
    assert status == 1
    assert "acknowledged" in output
    assert files(path.parent) == snapshot  # nothing written to a damaged store


def test_a_whole_record_not_yet_counted_as_acknowledged_is_replayed(
    tmp_path: Path, before_and_after: tuple[Path, dict[str, bytes]]
) -> None:
    # Killed after the write returned, before the mark moved: the change is
    # whole, so it is kept (its caller may or may not have seen it return).
    killed, before = before_and_after
    path, _ = forge(tmp_path, killed, before, None, acknowledged=False)
    assert read_store(path)["big"] == "the big value " * 3_000
    assert doctor_status(path)[0] == 0
