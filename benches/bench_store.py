"""Store operations at 1k, 10k and 100k entries (see compare.py for baselines)."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
from pytest_benchmark.fixture import BenchmarkFixture
from workload import Workload

from membolt import MemoryStore

SIZES = [1_000, 10_000, 100_000]


@pytest.mark.parametrize("size", SIZES)
def test_save(
    benchmark: BenchmarkFixture, built_store: Callable[[int], MemoryStore], size: int
) -> None:
    store = built_store(size)
    counter = itertools.count()
    value = "v" * 200
    benchmark.pedantic(lambda: store.save(f"bench:{next(counter)}", value), rounds=200)


@pytest.mark.parametrize("size", SIZES)
def test_get(
    benchmark: BenchmarkFixture, built_store: Callable[[int], MemoryStore], size: int
) -> None:
    store = built_store(size)
    keys = itertools.cycle(store.keys()[:: max(1, size // 1000)])
    benchmark(lambda: store.get(next(keys)))


@pytest.mark.parametrize("size", SIZES)
def test_search(
    benchmark: BenchmarkFixture, built_store: Callable[[int], MemoryStore], size: int
) -> None:
    store = built_store(size)
    queries = itertools.cycle(Workload(size).queries())
    benchmark(lambda: store.search(next(queries)))
