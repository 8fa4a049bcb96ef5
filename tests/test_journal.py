"""The journal (rust/store/redb/journal/): a change is durable once its record is
written; redb is committed when the lease ends. These tests end leases every
way but the normal one and check that nothing that returned is lost."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import membolt
import membolt.doctor
from membolt import MemoryStore

pytestmark = pytest.mark.slow

# Saves, overwrites and deletes inside one lease (``hold``), reports, then
# dies without closing anything: every change lives only in the journal.
KILLED_IN_LEASE = """
import os, signal, sys
import membolt
store = membolt.MemoryStore(sys.argv[1])
count = int(sys.argv[2])
with store.hold():
    for i in range(count):
        store.save(f"k{i}", f"value {i}")
    store.save("k0", "overwritten")
    store.delete("k1")
    store.save_many([("batch:a", "one"), ("batch:b", "two")], caps=False)
    print(store.get("k0").updated_at, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""

# A fresh process's view of a store: every key and value.
READ_ALL = """
import json, sys
import membolt
store = membolt.MemoryStore(sys.argv[1])
print(json.dumps({e.key: e.value for e in store.entries()}))
"""


def run_python(script: str, *args: object) -> subprocess.CompletedProcess[str]:
    """Runs ``script`` in a brand-new interpreter."""
    return subprocess.run(
        [sys.executable, "-c", script, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def killed_in_lease(path: Path, count: int) -> int:
    done = run_python(KILLED_IN_LEASE, path, count)
    assert done.returncode == -signal.SIGKILL, done.stderr
    return int(done.stdout)


def read_in_new_process(path: Path) -> dict[str, str]:
    done = run_python(READ_ALL, path)
    assert done.returncode == 0, done.stderr
    result: dict[str, str] = json.loads(done.stdout)
    return result


def expected(count: int) -> dict[str, str]:
    values = {f"k{i}": f"value {i}" for i in range(count)}
    values["k0"] = "overwritten"
    del values["k1"]
    values.update({"batch:a": "one", "batch:b": "two"})
    return values


def journal_of(path: Path) -> Path:
    return path.with_name(path.name + ".journal")


@pytest.mark.parametrize("count", [5, 400])  # 400 saves fill the journal more than once
def test_a_writer_killed_inside_its_lease_loses_nothing(store_path: Path, count: int) -> None:
    killed_in_lease(store_path, count)
    assert journal_of(store_path).exists()
    # A reader (a brand-new process) sees every change, the delete included.
    assert read_in_new_process(store_path) == expected(count)


def test_the_next_writer_also_sees_every_change_and_stamps_after_them(
    store_path: Path,
) -> None:
    last_stamp = killed_in_lease(store_path, 20)
    store = MemoryStore(store_path)
    entry = store.save("after", "the crash")
    assert entry.updated_at > last_stamp
    values = {e.key: e.value for e in store.entries()}
    assert values == {**expected(20), "after": "the crash"}


def test_the_doctor_counts_journal_changes_without_touching_the_store(
    store_path: Path,
) -> None:
    killed_in_lease(store_path, 30)
    before = store_path.read_bytes(), journal_of(store_path).read_bytes()
    report = membolt.doctor.inspect(store_path)
    assert report.problem_count == 0
    assert report.entries == len(expected(30))
    assert any("only in the journal" in note for note in report.notes)
    assert (store_path.read_bytes(), journal_of(store_path).read_bytes()) == before


def test_another_stores_journal_is_never_applied(tmp_path: Path) -> None:
    crashed = tmp_path / "crashed.redb"
    killed_in_lease(crashed, 10)
    other = tmp_path / "other.redb"
    with MemoryStore(other) as store:
        store.save("mine", "only")
    shutil.copy(journal_of(crashed), journal_of(other))
    assert read_in_new_process(other) == {"mine": "only"}


def test_a_damaged_journal_costs_only_what_it_held(store_path: Path) -> None:
    with MemoryStore(store_path) as store:
        store.save("committed", "at close")
    journal = journal_of(store_path)
    journal.write_bytes(os.urandom(journal.stat().st_size))
    assert read_in_new_process(store_path) == {"committed": "at close"}
    journal.write_bytes(b"short")  # a journal of the wrong size is made anew
    store = MemoryStore(store_path)
    store.save("later", "works")
    assert read_in_new_process(store_path) == {"committed": "at close", "later": "works"}


def test_a_failed_change_inside_a_lease_keeps_the_earlier_ones(store_path: Path) -> None:
    store = MemoryStore(store_path)
    with store.hold():
        store.save("before", "1")
        with pytest.raises(KeyError), store.batch() as batch:
            batch.save("inside", "x")
            batch.link("inside", "no-such-parent")
        store.save("after", "2")
        assert read_only_keys(store) == {"before", "after"}
    assert set(read_in_new_process(store_path)) == {"before", "after"}


def read_only_keys(store: MemoryStore) -> set[str]:
    return set(store.keys())


def test_the_journal_is_private(store_path: Path) -> None:
    MemoryStore(store_path).save("k", "v")
    mode = stat.S_IMODE(journal_of(store_path).stat().st_mode)
    assert mode == 0o600


@pytest.mark.skipif(not Path("/dev/shm").is_dir(), reason="needs a tmpfs at /dev/shm")
def test_a_file_system_without_direct_io_works_the_same(request: pytest.FixtureRequest) -> None:
    # tmpfs refuses O_DIRECT: the journal falls back to O_DSYNC writes.
    directory = Path(tempfile.mkdtemp(prefix="membolt-test-", dir="/dev/shm"))
    request.addfinalizer(lambda: shutil.rmtree(directory, ignore_errors=True))
    path = directory / "memory.redb"
    killed_in_lease(path, 50)
    assert read_in_new_process(path) == expected(50)


def test_a_journal_of_another_size_is_replayed_before_it_is_replaced(store_path: Path) -> None:
    # As another membolt version might leave it: longer than this one's. The
    # first writer must apply its records before making a journal of its own.
    store = MemoryStore(store_path)
    store.save("first", "1")  # this process knows the store: it writes directly
    killed_in_lease(store_path, 10)  # takes the store over while idle
    with journal_of(store_path).open("ab") as journal:
        journal.write(bytes(4096))
    store.save("next", "writer")
    values = {e.key: e.value for e in store.entries()}
    assert values == {"first": "1", **expected(10), "next": "writer"}


def test_a_store_reached_through_a_symlink_shares_one_journal(tmp_path: Path) -> None:
    real = tmp_path / "real.redb"
    MemoryStore(real).save("base", "0")
    membolt._core._release_all()
    link = tmp_path / "link.redb"
    link.symlink_to(real)
    killed_in_lease(link, 10)  # through the link
    assert not journal_of(link).exists()
    assert read_in_new_process(real) == {"base": "0", **expected(10)}


# Inside one lease: a save, the journal deleted behind the store's back,
# another save; then death. Both saves returned.
KILLED_AFTER_JOURNAL_LOSS = """
import os, signal, sys
import membolt
store = membolt.MemoryStore(sys.argv[1])
with store.hold():
    store.save("a", "1")
    os.unlink(sys.argv[1] + ".journal")
    store.save("b", "2")
    store.save("c", "3")
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_journal_deleted_during_a_lease_loses_nothing(store_path: Path) -> None:
    done = run_python(KILLED_AFTER_JOURNAL_LOSS, store_path)
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert read_in_new_process(store_path) == {"a": "1", "b": "2", "c": "3"}


def test_something_else_in_the_journals_place_is_a_clear_error(store_path: Path) -> None:
    with MemoryStore(store_path) as store:
        store.save("k", "v")
    journal = journal_of(store_path)
    journal.unlink()
    os.mkfifo(journal)  # opening a FIFO for reading would block forever
    script = "import sys, membolt; print(membolt.MemoryStore(sys.argv[1], timeout=1).keys())"
    done = run_python(script, store_path)
    assert done.returncode == 1
    assert "StoreError" in done.stderr
    assert "memory.redb.journal" in done.stderr
    assert "not a regular file" in done.stderr
    assert stat.S_ISFIFO(journal.stat().st_mode)  # left as it was
