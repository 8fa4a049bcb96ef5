"""§1.4: how long a call waits for another process, and what it raises then.

The default is written here as the contract states it (5 s), never imported
from membolt, so a change in the implementation fails a test.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

import membolt
from membolt import MemoryStore, project_store_path

from support.processes import hold_store, stop

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
