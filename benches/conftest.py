"""Benchmarks run only on demand, against a release build:

    maturin develop --release
    pytest benches --benchmark-enable --benchmark-columns=median,min,max,rounds

Built stores are cached (by size) in $MEMBOLT_BENCH_CACHE, default
/tmp/membolt-bench-cache, so repeated runs skip the build.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import membolt

sys.path.insert(0, str(Path(__file__).parent))
# The plain-Python model of the renderer lives with the tests.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from workload import Workload

CACHE = Path(os.environ.get("MEMBOLT_BENCH_CACHE", "/tmp/membolt-bench-cache"))
CHUNK = 10_000


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("benchmark_enable", False) and membolt._core.DEBUG_BUILD:
        pytest.exit("benchmarks need a release build: maturin develop --release", returncode=2)


def _build(path: Path, size: int) -> None:
    store = membolt.MemoryStore(path)
    chunk: list[tuple[str, str]] = []
    for item in Workload(size).entries():
        chunk.append(item)
        if len(chunk) == CHUNK:
            store.save_many(chunk, caps=False)
            chunk = []
    if chunk:
        store.save_many(chunk, caps=False)
    store.close()


@pytest.fixture(scope="session")
def built_store(tmp_path_factory: pytest.TempPathFactory) -> Callable[[int], membolt.MemoryStore]:
    """A private copy of a store of `size` workload entries."""

    def make(size: int) -> membolt.MemoryStore:
        cached = CACHE / f"workload-{size}.redb"
        if not cached.exists():
            CACHE.mkdir(parents=True, exist_ok=True)
            partial = cached.with_suffix(".partial")
            partial.unlink(missing_ok=True)
            _build(partial, size)
            membolt._core._release_all()
            partial.rename(cached)
        copy = tmp_path_factory.mktemp(f"store-{size}") / "memory.redb"
        shutil.copyfile(cached, copy)
        return membolt.MemoryStore(copy)

    return make
