"""after_turn and after_tool on a 100k-entry store. Each hook ends in one
durable commit; the target is the cost beyond that commit (<= 1 ms p50),
so the durable save of one entry is measured in the same run to subtract."""

from __future__ import annotations

import itertools
from collections.abc import Callable

from pytest_benchmark.fixture import BenchmarkFixture

from membolt import MemoryStore
from membolt.agent import AgentMemory

RESPONSE = """I looked at the failing handler.
Fixed the nil check in the users handler before the migration step.
Edited src/api/handler.go and src/api/middleware.go
STATUS: tests green locally
## Progress
handler fixed; middleware updated; CI pending
"""


def test_durable_save_baseline(
    benchmark: BenchmarkFixture, built_store: Callable[[int], MemoryStore]
) -> None:
    store = built_store(100_000)
    counter = itertools.count()
    benchmark(lambda: store.save(f"baseline:{next(counter)}", "v" * 200))


def test_after_turn(benchmark: BenchmarkFixture, built_store: Callable[[int], MemoryStore]) -> None:
    memory = AgentMemory(built_store(100_000))
    counter = itertools.count()
    benchmark(lambda: memory.after_turn(f"fix the handler {next(counter)}", RESPONSE))


def test_after_tool(benchmark: BenchmarkFixture, built_store: Callable[[int], MemoryStore]) -> None:
    memory = AgentMemory(built_store(100_000))
    counter = itertools.count()
    benchmark(
        lambda: memory.after_tool(
            "bash_exec", '{"cmd": "pytest"}', f"{next(counter)} passed in 3.1s\nall green"
        )
    )
