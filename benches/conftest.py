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
from workload import Workload, build_store

CACHE = Path(os.environ.get("MEMBOLT_BENCH_CACHE", "/tmp/membolt-bench-cache"))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("benchmark_enable", False) and membolt._core.DEBUG_BUILD:
        pytest.exit("benchmarks need a release build: maturin develop --release", returncode=2)


@pytest.fixture(scope="session")
def built_store(tmp_path_factory: pytest.TempPathFactory) -> Callable[[int], membolt.MemoryStore]:
    """A private copy of a store of `size` workload entries."""

    def make(size: int) -> membolt.MemoryStore:
        cached = CACHE / f"workload-{size}.redb"
        if not cached.exists():
            CACHE.mkdir(parents=True, exist_ok=True)
            partial = cached.with_suffix(".partial")
            partial.unlink(missing_ok=True)
            build_store(partial, Workload(size)).close()
            membolt._core._release_all()
            partial.rename(cached)
        copy = tmp_path_factory.mktemp(f"store-{size}") / "memory.redb"
        shutil.copyfile(cached, copy)
        return membolt.MemoryStore(copy)

    return make
