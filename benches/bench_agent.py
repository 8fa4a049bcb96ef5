"""after_turn and after_tool on a 100k-entry store (target: p50 cost
beyond the durable commit <= 1 ms). Each hook is one transaction, so each is
paired with a baseline that commits the very same entries without extracting
anything: the difference of the medians is the hooks' own cost."""

from __future__ import annotations

import itertools
from collections.abc import Callable

from pytest_benchmark.fixture import BenchmarkFixture

from membolt import MemoryStore, extraction_caps
from membolt.agent import AgentMemory
from membolt.extract import extract_tool_result, extract_turn, turn_record

RESPONSE = """I looked at the failing handler.
Fixed the nil check in the users handler before the migration step.
Edited src/api/handler.go and src/api/middleware.go
STATUS: tests green locally
## Progress
handler fixed; middleware updated; CI pending
"""
ROUNDS = 200


def test_after_turn(benchmark: BenchmarkFixture, built_store: Callable[[int], MemoryStore]) -> None:
    memory = AgentMemory(built_store(100_000))
    counter = itertools.count()
    benchmark.pedantic(
        lambda: memory.after_turn(f"fix the handler {next(counter)}", RESPONSE), rounds=ROUNDS
    )


def test_after_turn_commit_only(
    benchmark: BenchmarkFixture, built_store: Callable[[int], MemoryStore]
) -> None:
    store = built_store(100_000)
    items = [(f.key, f.value, f.type) for f in extract_turn("fix the handler", RESPONSE)]
    turn = turn_record("fix the handler", RESPONSE, 1_800_000_000_000)
    benchmark.pedantic(
        lambda: store.save_many(items, caps=extraction_caps, then=[(turn.key, turn.value)]),
        rounds=ROUNDS,
    )


def test_after_tool(benchmark: BenchmarkFixture, built_store: Callable[[int], MemoryStore]) -> None:
    memory = AgentMemory(built_store(100_000))
    counter = itertools.count()
    benchmark.pedantic(
        lambda: memory.after_tool(
            "bash_exec", '{"cmd": "pytest"}', f"{next(counter)} passed in 3.1s\nall green"
        ),
        rounds=ROUNDS,
    )


def test_after_tool_commit_only(
    benchmark: BenchmarkFixture, built_store: Callable[[int], MemoryStore]
) -> None:
    store = built_store(100_000)
    # The same entries after_tool would write, extracted before timing.
    batches = iter(
        [
            [(f.key, f.value, f.type) for f in extract_tool_result("bash_exec", result)]
            for result in (f"{i} passed in 3.1s\nall green" for i in range(ROUNDS + 10))
        ]
    )
    benchmark.pedantic(lambda: store.save_many(next(batches), caps=extraction_caps), rounds=ROUNDS)
