"""§9 through the Python API and the memory_query tool.

The engine's own table of expressions lives in rust/tests (cargo test); here:
the relations, the §9.3 result shape and limits, errors with positions, the
seed's examples (F8, F11, F12), and fuzzing across the FFI boundary.
"""

from __future__ import annotations

import contextlib
import json
import math
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from membolt import MemoryStore, QueryError
from membolt.agent import AgentMemory


@pytest.fixture
def memory(store: MemoryStore) -> AgentMemory:
    store.save("prompt:build", "Add /users endpoint")
    store.save("tool:write_users", "wrote handlers/users.go")
    store.save("error:migration", "migrate step 3 panics")
    store.save("decision:db", "use redb")
    return AgentMemory(store)


def tool(memory: AgentMemory, query: str, **extra: object) -> object:
    return json.loads(memory.call_tool("memory_query", {"query": query, **extra}))


class TestSeedExamples:
    def test_filter(self, memory: AgentMemory) -> None:
        result = tool(memory, 'filter(memory, .type == "error")')
        assert isinstance(result, dict)
        assert result["count"] == 1
        assert result["truncated"] is False
        assert [row["key"] for row in result["rows"]] == ["error:migration"]
        assert set(result["rows"][0]) == {
            "key", "value", "namespace", "type", "references", "createdAt", "updatedAt",
        }  # fmt: skip

    def test_map_literal_predicate_f8(self, memory: AgentMemory) -> None:
        result = tool(memory, "map(memory, {key: .key, value: .value})")
        assert result == {
            "count": 4,
            "rows": [
                {"key": "decision:db", "value": "use redb"},
                {"key": "error:migration", "value": "migrate step 3 panics"},
                {"key": "prompt:build", "value": "Add /users endpoint"},
                {"key": "tool:write_users", "value": "wrote handlers/users.go"},
            ],
            "truncated": False,
        }
        assert memory.query("map(memory, {{key: .key}})")["count"] == 4

    def test_union_f8(self, memory: AgentMemory) -> None:
        result = memory.query(
            'union(filter(memory, .type == "error"), filter(memory, .type == "decision"))'
        )
        assert [row["key"] for row in result["rows"]] == ["error:migration", "decision:db"]

    def test_join_tool_calls_with_memory(self, memory: AgentMemory) -> None:
        memory.call_tool("memory_save", {"key": "memory_save", "value": "a key named as a tool"})
        result = memory.query('join(tool_calls, memory, "name", "key")')
        assert result["count"] == 1
        row = result["rows"][0]
        assert row["left_name"] == "memory_save"
        assert row["right_key"] == "memory_save"
        assert row["left_result"].startswith("Saved memory entry")

    def test_works_outside_an_agent_loop_f11(self, store: MemoryStore) -> None:
        memory = AgentMemory(store)
        assert memory.query("tool_calls") == {"count": 0, "rows": [], "truncated": False}
        assert memory.query("tasks") == {"count": 0, "rows": [], "truncated": False}
        assert memory.query("len(memory)") == 0

    def test_memory_holds_every_entry_f12(self, store: MemoryStore) -> None:
        store.save_many([(f"n{i:04d}", "v") for i in range(1200)], caps=False)
        memory = AgentMemory(store)
        assert memory.query("len(memory)") == 1200
        assert memory.query("len(memory)", memory_cap=10) == 10
        newest = memory.query("map(memory, .key)", memory_cap=3)
        assert newest == ["n1197", "n1198", "n1199"]


class TestRelations:
    def test_tasks_rows(self, memory: AgentMemory) -> None:
        memory.tasks = [
            {"id": 1, "desc": "write handler", "status": "done", "rounds": 2, "note": ""},
            {"id": 2, "desc": "tests", "status": "active", "rounds": 1, "note": "flaky"},
        ]
        assert memory.query('filter(tasks, .status == "active")')["rows"] == [
            {"id": 2, "desc": "tests", "status": "active", "rounds": 1, "note": "flaky"}
        ]

    def test_tool_calls_rows(self, memory: AgentMemory) -> None:
        memory.call_tool("memory_list", {})
        calls = memory.query("tool_calls")["rows"]
        assert set(calls[0]) == {"name", "args", "result", "timestamp"}
        assert calls[0]["name"] == "memory_list"


class TestResultShape:
    def test_non_row_results_are_plain_json(self, memory: AgentMemory) -> None:
        assert tool(memory, "1 + 2") == 3
        assert tool(memory, "7 / 2") == 3.5
        assert tool(memory, "{b: 1, a: [true, nil]}") == {"a": [True, None], "b": 1}
        assert memory.call_tool("memory_query", {"query": '{b: 1, a: "é"}'}) == (
            '{"a": "é", "b": 1}'
        )
        assert tool(memory, "map(memory, .key)") == [
            "decision:db", "error:migration", "prompt:build", "tool:write_users",
        ]  # fmt: skip

    def test_keys_are_sorted_in_rows(self, memory: AgentMemory) -> None:
        text = memory.call_tool("memory_query", {"query": "[{z: 1, a: 2}]"})
        assert text == '{"count": 1, "rows": [{"a": 2, "z": 1}], "truncated": false}'

    def test_empty_list_is_a_row_list(self, memory: AgentMemory) -> None:
        assert tool(memory, "[]") == {"count": 0, "rows": [], "truncated": False}

    @pytest.mark.parametrize(
        ("limit", "rows"),
        [
            (None, 50),
            (2, 2),
            (2.9, 2),
            (0, 50),
            (-5, 50),
            (True, 50),
            ("3", 50),
            (math.nan, 50),
            (10_000, 500),
            (math.inf, 500),
            (-math.inf, 50),
            (10**400, 500),
            (-(10**400), 50),
            (499.5, 499),
        ],
    )
    def test_limit_rules(self, store: MemoryStore, limit: object, rows: int) -> None:
        store.save_many([(f"n{i:04d}", "v") for i in range(600)], caps=False)
        memory = AgentMemory(store)
        result = memory.query("memory", limit)
        assert len(result["rows"]) == rows
        assert result["count"] == 600
        assert result["truncated"] is True
        # The tool on rows small enough for its 64 KiB text (§14).
        query = "map(memory, {key: .key})"
        arguments = {"query": query} if limit is None else {"query": query, "limit": limit}
        assert len(json.loads(memory.call_tool("memory_query", arguments))["rows"]) == rows
        # The same through JSON text: Python's json reads NaN and ±Infinity.
        text = json.dumps(arguments)
        assert len(json.loads(memory.call_tool("memory_query", text))["rows"]) == rows


class TestErrors:
    def test_compile_error_has_a_position(self, memory: AgentMemory) -> None:
        with pytest.raises(QueryError) as raised:
            memory.query("filter(memory, .type ==)")
        assert raised.value.kind == "compile"
        assert raised.value.position == (1, 24)
        assert isinstance(raised.value, ValueError)
        error = tool(memory, "filter(memory, .type ==)")
        assert error == {"error": "memory_query: compile: " + str(raised.value)[9:]}
        assert error["error"].endswith("(1:24)")

    def test_run_error(self, memory: AgentMemory) -> None:
        with pytest.raises(QueryError) as raised:
            memory.query("[1, 2][5]")
        assert raised.value.kind == "run"
        assert tool(memory, "[1, 2][5]")["error"].startswith("memory_query: run: index 5")

    def test_unknown_name_is_a_compile_error(self, memory: AgentMemory) -> None:
        assert tool(memory, "nothing_here")["error"].startswith("memory_query: compile:")

    def test_query_argument_required(self, memory: AgentMemory) -> None:
        assert tool(memory, "") == {"error": "memory_query: query is required"}
        assert json.loads(memory.call_tool("memory_query", {"limit": 3})) == {
            "error": "memory_query: query is required"
        }
        bad = json.loads(memory.call_tool("memory_query", {"query": 5}))
        assert bad["error"].startswith("memory_query: query must be a string")

    def test_runaway_query_stops_with_a_run_error(self, store: MemoryStore) -> None:
        memory = AgentMemory(store)
        memory.tasks = [{"id": i} for i in range(200)]
        error = tool(memory, "map(tasks, map(tasks, map(tasks, map(tasks, #))))")
        assert error["error"].startswith("memory_query: run:")

    def test_deep_nesting_is_a_compile_error(self, memory: AgentMemory) -> None:
        assert tool(memory, "(" * 150 + "1" + ")" * 150)["error"].startswith(
            "memory_query: compile:"
        )


@settings(max_examples=300, deadline=None)
@given(text=st.text(max_size=120))
def test_arbitrary_text_only_raises_query_error(text: str) -> None:
    memory = _FUZZ_MEMORY
    with contextlib.suppress(QueryError):
        memory.query(text)
    out = json.loads(memory.call_tool("memory_query", {"query": text}))
    assert out is None or isinstance(out, int | float | str | bool | list | dict)


_ATOMS = st.sampled_from(
    ["memory", "tool_calls", "tasks", "#", ".key", ".type", "1", "2.5", '"a"', "nil", "true",
     "[1, 2]", "{a: 1}", ".references", "len(memory)"]
)  # fmt: skip
_BINARY = st.sampled_from(
    ["+", "-", "*", "/", "%", "==", "!=", "<", ">=", "and", "or", "in", "??", "contains"]
)
_CALLS = st.sampled_from(
    ["filter", "map", "all", "any", "none", "one", "count", "find", "sortBy", "groupBy",
     "len", "first", "last", "keys", "values", "uniq", "lower", "upper", "trim", "sum"]
)  # fmt: skip


def _expressions() -> st.SearchStrategy[str]:
    return st.recursive(
        _ATOMS,
        lambda inner: st.one_of(
            st.tuples(inner, _BINARY, inner).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
            st.tuples(_CALLS, inner, inner).map(lambda t: f"{t[0]}({t[1]}, {t[2]})"),
            st.tuples(_CALLS, inner).map(lambda t: f"{t[0]}({t[1]})"),
            st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} ? {t[1]} : {t[2]})"),
            st.tuples(inner, inner).map(lambda t: f'join({t[0]}, {t[1]}, "key", "name")'),
            st.tuples(inner, inner).map(lambda t: f"union({t[0]}, {t[1]})"),
            st.tuples(inner, inner).map(lambda t: f"let x = {t[0]}; {t[1]}"),
            inner.map(lambda e: f"{e} | len()"),
        ),
        max_leaves=12,
    )


@settings(max_examples=300, deadline=None)
@given(expression=_expressions())
def test_well_formed_expressions_never_crash(expression: str) -> None:
    try:
        result = _FUZZ_MEMORY.query(expression)
    except QueryError as error:
        kind = error.kind
    else:
        json.dumps(result)
        kind = "ok"
    assert kind in ("compile", "run", "ok")


_FUZZ_DIRECTORY = tempfile.TemporaryDirectory(prefix="membolt-fuzz-")


def _fuzz_memory() -> AgentMemory:
    store = MemoryStore(Path(_FUZZ_DIRECTORY.name) / "memory.redb")
    store.save("prompt:x", "goal")
    store.save("error:y", "boom", references=["prompt:x"])
    memory = AgentMemory(store)
    memory.tasks = [{"id": 1, "desc": "d", "status": "active", "rounds": 0, "note": ""}]
    memory.call_tool("memory_list", {})
    return memory


_FUZZ_MEMORY = _fuzz_memory()
