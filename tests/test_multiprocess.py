"""§1.4 tested for real, with subprocesses and SIGKILL."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

import membolt
from membolt import MemoryStore

from support.processes import WORKER

pytestmark = pytest.mark.slow


def spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, WORKER, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def fresh_view(path: Path) -> MemoryStore:
    """A store handle whose mirror is not shared with earlier handles."""
    membolt._core._release_all()
    return MemoryStore(path)


def test_four_processes_writing_and_deleting(store_path: Path) -> None:
    count = 150
    workers = [spawn("write-delete", str(store_path), f"p{n}", str(count)) for n in range(4)]
    for worker in workers:
        _, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err
    keys = set(MemoryStore(store_path).keys())
    for n in range(4):
        for i in range(count):
            deleted = i % 3 == 1 and i + 1 < count
            assert (f"p{n}:w{i}" in keys) is not deleted, f"p{n}:w{i}"
    assert len(keys) == 4 * (count - count // 3)


def test_sigkill_loses_no_write_that_returned(store_path: Path) -> None:
    returned: list[str] = []
    rng = random.Random(7)
    for round_ in range(8):
        worker = spawn("write-forever", str(store_path), f"r{round_}")
        assert worker.stdout is not None
        deadline = time.monotonic() + rng.uniform(0.2, 0.8)
        while time.monotonic() < deadline:
            line = worker.stdout.readline()
            if not line:
                break
            returned.append(line.strip())
        worker.send_signal(signal.SIGKILL)
        rest, _ = worker.communicate()
        returned.extend(line for line in rest.split("\n") if line)
        # The next open repairs the file if needed and sees every write.
        store = fresh_view(store_path)
        keys = set(store.keys())
        missing = [key for key in returned if key not in keys]
        assert not missing, f"round {round_}: lost {missing[:5]}"
    assert len(returned) > 50


def test_held_store_gives_busy_then_works_again(store_path: Path) -> None:
    MemoryStore(store_path).save("before", "x")
    holder = spawn("hold", str(store_path), "2.5")
    assert holder.stdout is not None
    assert holder.stdout.readline().strip() == "held"
    waiter_store = MemoryStore(store_path, timeout=0.3)
    started = time.monotonic()
    with pytest.raises(membolt.StoreBusyError) as raised:
        waiter_store.save("during", "x")
    waited = time.monotonic() - started
    assert 0.3 <= waited < 2.0
    assert isinstance(raised.value, TimeoutError)
    assert str(store_path) in str(raised.value)
    # Reads that need the file (the mirror is stale) wait too.
    with pytest.raises(membolt.StoreBusyError):
        waiter_store.get("held-by-child")
    holder.communicate(timeout=30)
    assert waiter_store.save("after", "x").value == "x"
    assert set(MemoryStore(store_path).keys()) == {"before", "held-by-child", "after"}


@pytest.mark.smoke
def test_reader_sees_other_process_writes_on_next_call(store_path: Path) -> None:
    reader = MemoryStore(store_path)
    reader.save("mine", "1")
    assert reader.keys() == ["mine"]
    membolt._core._release_all()  # let the child in right away
    subprocess.run([sys.executable, WORKER, "save", str(store_path), "theirs", "2"], check=True)
    assert reader.keys() == ["mine", "theirs"]
    assert reader.get("theirs").value == "2"  # type: ignore[union-attr]
    assert [e.key for e in reader.search("2")] == ["theirs"]
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, membolt; membolt.MemoryStore(sys.argv[1]).delete('mine')",
            str(store_path),
        ],
        check=True,
    )
    assert reader.keys() == ["theirs"]
    assert reader.get("mine") is None


def test_writer_applies_only_its_own_changes(store_path: Path) -> None:
    ours = MemoryStore(store_path)
    ours.save("a", "ours")
    membolt._core._release_all()
    subprocess.run([sys.executable, WORKER, "save", str(store_path), "b", "theirs"], check=True)
    ours.save("c", "ours again")  # must not resurrect an old view of "b"
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, membolt; membolt.MemoryStore(sys.argv[1]).delete('a')",
            str(store_path),
        ],
        check=True,
    )
    ours.save("d", "x")
    assert fresh_view(store_path).keys() == ["b", "c", "d"]


def test_threads_share_one_store(store_path: Path) -> None:
    store = MemoryStore(store_path)
    errors: list[BaseException] = []

    def work(n: int) -> None:
        try:
            for i in range(40):
                store.save(f"t{n}:{i}", "v")
                store.get(f"t{n}:{i}")
                store.search(f"t{n}:")
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert len(store) == 160


@pytest.mark.smoke
@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_uses_the_store_safely(store_path: Path) -> None:
    store = MemoryStore(store_path)
    store.save("parent", "1")
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            store.save("child", "2")
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert store.keys() == ["child", "parent"]


# Forks while another thread saves in a loop, in a process of its own (a
# pytest process should not fork with threads running); prints how many
# children were still running 10 s after the fork, killed as hung.
FORK_WHILE_A_THREAD_SAVES = """
import os, sys, threading, time
import membolt
store = membolt.MemoryStore(sys.argv[1])
stop = False
def saver():
    i = 0
    while not stop:
        store.save(f"t{i % 50}", "x" * 200)
        i += 1
threading.Thread(target=saver, daemon=True).start()
time.sleep(0.2)
hung = failed = 0
for n in range(40):
    pid = os.fork()
    if pid == 0:
        try:
            store.save(f"child{n}", "from the child")
            os._exit(0)
        except BaseException:
            os._exit(1)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            failed += os.waitstatus_to_exitcode(status) != 0
            break
        time.sleep(0.01)
    else:
        hung += 1
        os.kill(pid, 9)
        os.waitpid(pid, 0)
stop = True
print(hung, failed, len([k for k in store.keys() if k.startswith("child")]))
"""


def test_fork_while_another_thread_is_in_a_store_call(store_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", FORK_WHILE_A_THREAD_SAVES, str(store_path)],
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    hung, failed, saved_by_children = map(int, done.stdout.split())
    assert (hung, failed, saved_by_children) == (0, 0, 40)


def run_child(code: str, path: Path) -> None:
    subprocess.run([sys.executable, "-c", code, str(path)], check=True)


def test_reader_far_behind_rebuilds_its_mirror(store_path: Path) -> None:
    reader = MemoryStore(store_path)
    reader.save("first", "1")
    membolt._core._release_all()
    # More changes than the sidecar's ring holds (256 KiB of change records).
    run_child(
        "import sys, membolt\n"
        "s = membolt.MemoryStore(sys.argv[1])\n"
        "for n in range(6):\n"
        "    s.save_many([(f'bulk:{n}:{i:05d}:' + 'k' * 40, 'v') for i in range(10000)],"
        " caps=False)\n"
        "s.delete('first')\n",
        store_path,
    )
    assert len(reader) == 60_000
    assert reader.get("first") is None


def test_lost_sidecar_means_a_rebuild_not_a_stale_view(store_path: Path) -> None:
    reader = MemoryStore(store_path)
    reader.save("a", "1")
    membolt._core._release_all()
    Path(f"{store_path}.sync").unlink()
    run_child(
        "import sys, membolt; s = membolt.MemoryStore(sys.argv[1]); s.save('b', '2')",
        store_path,
    )
    assert reader.keys() == ["a", "b"]
    Path(f"{store_path}.sync").write_bytes(b"garbage")
    run_child(
        "import sys, membolt; s = membolt.MemoryStore(sys.argv[1]); s.delete('a')",
        store_path,
    )
    assert reader.keys() == ["b"]


def test_a_store_without_sidecar_is_read_without_making_one(
    store_path: Path, tmp_path: Path
) -> None:
    MemoryStore(store_path).save("a", "1")
    membolt._core._release_all()
    copy = tmp_path / "copy" / "memory.redb"
    copy.parent.mkdir()
    copy.write_bytes(store_path.read_bytes())  # a copied store has no .sync
    reader = MemoryStore(copy)
    assert reader.keys() == ["a"]
    assert reader.keys() == ["a"]
    assert not Path(f"{copy}.sync").exists()  # readers create no file (§14.2)
    run_child("import sys, membolt; membolt.MemoryStore(sys.argv[1]).save('b', '2')", copy)
    assert Path(f"{copy}.sync").exists()  # the writer made one
    assert reader.keys() == ["a", "b"]
