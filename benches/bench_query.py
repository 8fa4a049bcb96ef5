"""memory_query at 100k entries: a filter over every entry, and the join of
200 tool calls with memory (targets: <= 20 ms p50 each, release build)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pytest_benchmark.fixture import BenchmarkFixture

from membolt import MemoryStore
from membolt.agent import AgentMemory


@pytest.fixture(scope="module")
def memory(built_store: Callable[[int], MemoryStore]) -> AgentMemory:
    store = built_store(100_000)
    memory = AgentMemory(store)
    keys = store.keys()
    for i in range(200):
        # Half the calls name an existing key, so the join has matches.
        name = keys[i * 97] if i % 2 else f"bash_exec_{i}"
        memory.after_tool(name, "{}", f"result {i}")
    return memory


def test_filter_100k(benchmark: BenchmarkFixture, memory: AgentMemory) -> None:
    result = benchmark(lambda: memory.query('filter(memory, .type == "error")'))
    assert result["count"] > 0


def test_join_200_tool_calls_100k(benchmark: BenchmarkFixture, memory: AgentMemory) -> None:
    result = benchmark(lambda: memory.query('join(tool_calls, memory, "name", "key")'))
    assert result["count"] == 100
