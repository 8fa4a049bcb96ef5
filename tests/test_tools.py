"""BEHAVIOUR §4: the five tools, their exact outputs, errors and aliases."""

from __future__ import annotations

import json

import pytest

from membolt import MemoryStore
from membolt.agent import AgentMemory
from membolt.tools import TOOL_NAMES, tool_schemas


@pytest.fixture
def memory(store: MemoryStore) -> AgentMemory:
    return AgentMemory(store)


def error_of(text: str) -> str:
    parsed = json.loads(text)
    assert list(parsed) == ["error"]
    message = parsed["error"]
    assert isinstance(message, str)
    return message


class TestSchemas:
    def test_openai(self) -> None:
        schemas = tool_schemas("openai")
        assert [s["function"]["name"] for s in schemas] == list(TOOL_NAMES)
        assert all(s["type"] == "function" for s in schemas)
        save = schemas[0]["function"]
        assert save["parameters"]["required"] == ["key", "value"]
        assert set(save) == {"name", "description", "parameters"}

    def test_anthropic_and_mcp_share_one_definition(self) -> None:
        openai = {s["function"]["name"]: s["function"] for s in tool_schemas("openai")}
        for schema in tool_schemas("anthropic"):
            assert set(schema) == {"name", "description", "input_schema"}
            assert schema["input_schema"] == openai[schema["name"]]["parameters"]
        for schema in tool_schemas("mcp"):
            assert set(schema) == {"name", "title", "description", "inputSchema", "annotations"}
            assert schema["description"] == openai[schema["name"]]["description"]

    def test_schemas_are_json(self) -> None:
        for fmt in ("openai", "anthropic", "mcp"):
            json.dumps(tool_schemas(fmt))  # type: ignore[arg-type]

    def test_unknown_format(self) -> None:
        with pytest.raises(ValueError, match="schema format"):
            tool_schemas("gemini")  # type: ignore[arg-type]

    def test_agent_memory_exports(self, memory: AgentMemory) -> None:
        assert memory.tool_schemas("mcp") == tool_schemas("mcp")


class TestSave:
    def test_output_counts_bytes_and_quotes_key(self, memory: AgentMemory) -> None:
        out = memory.call_tool("memory_save", {"key": 'résumé "x"', "value": "世界"})
        assert out == 'Saved memory entry "résumé \\"x\\"" (6 bytes)'
        assert memory.store.get('résumé "x"').value == "世界"  # type: ignore[union-attr]

    @pytest.mark.parametrize(
        ("arguments", "message"),
        [
            ({"value": "v"}, "memory_save: key is required"),
            ({"key": "", "value": "v"}, "memory_save: key is required"),
            ({"key": "   ", "value": "v"}, "memory_save: key is required"),
            ({"key": "k"}, "memory_save: value is required"),
            ({"key": "k", "value": ""}, "memory_save: value is required"),
            ({"key": None, "value": "v"}, "memory_save: key is required"),
            ({"key": 5, "value": "v"}, "memory_save: key must be a string, not int"),
            ({"key": "k", "value": ["v"]}, "memory_save: value must be a string, not list"),
            ({"key": "k" * 1025, "value": "v"}, "memory_save: key is 1025 bytes long"),
        ],
    )
    def test_errors_write_nothing(
        self, memory: AgentMemory, arguments: dict[str, object], message: str
    ) -> None:
        assert error_of(memory.call_tool("memory_save", arguments)).startswith(message)
        assert len(memory.store) == 0

    @pytest.mark.parametrize("alias", ["remember", "memorize"])
    def test_aliases(self, memory: AgentMemory, alias: str) -> None:
        assert memory.call_tool(alias, {"key": "k", "value": "v"}).startswith("Saved")


class TestSearch:
    def test_golden_example(self, memory: AgentMemory) -> None:
        store = memory.store
        store.save("prompt:build", "Add /users endpoint")
        store.save("tool:write_users", "wrote handlers/users.go")
        store.save("result:build", "compiles; tests pending")
        store.save("status:ci", "waiting on CI")
        store.save("error:migration", "migrate step 3 panics on nil column")
        assert memory.call_tool("memory_search", {"query": "BUILD"}) == (
            "Found 2 memory entries:\n"
            "- result:build: compiles; tests pending\n"
            "- prompt:build: Add /users endpoint\n"
        )

    def test_ranking_key_hits_then_newest_then_key(self, memory: AgentMemory) -> None:
        store = memory.store
        store.save("zzz", "mentions cat in value")
        store.save("cat:b", "x")
        store.save("cat:a", "x")
        with store.batch() as b:  # same batch: distinct but adjacent stamps
            b.save("a-cat", "y")
        out = memory.call_tool("memory_search", {"query": "cat"})
        keys = [line.split(":")[0][2:] for line in out.splitlines()[1:]]
        assert keys == ["a-cat", "cat", "cat", "zzz"]
        assert out.splitlines()[1:4] == ["- a-cat: y", "- cat:a: x", "- cat:b: x"]

    def test_singular_still_uses_plural(self, memory: AgentMemory) -> None:
        memory.store.save("only", "one")
        assert memory.call_tool("recall", {"query": "ONE"}) == (
            "Found 1 memory entries:\n- only: one\n"
        )

    def test_no_hits(self, memory: AgentMemory) -> None:
        memory.store.save("k", "v")
        assert memory.call_tool("memory_search", {"query": "zzz"}) == "No memory entries found."

    def test_more_than_20_hits(self, memory: AgentMemory) -> None:
        memory.store.save_many([(f"item{i:02d}", "common") for i in range(25)], caps=False)
        lines = memory.call_tool("memory_search", {"query": "common"}).split("\n")
        assert lines[0] == "Found 25 memory entries:"
        assert len(lines) == 1 + 20 + 1 + 1  # header, hits, "... more", trailing ""
        assert lines[21] == "... and 5 more (refine the query)"
        assert lines[22] == ""
        assert lines[1] == "- item24: common"  # newest first

    def test_values_flattened_and_cut_to_500_bytes(self, memory: AgentMemory) -> None:
        memory.store.save("multi\nline key", "first\n\n  second  \r\nthird <b>")
        memory.store.save("long", "é" * 400)
        out = memory.call_tool("memory_search", {"query": "first"})
        assert out == "Found 1 memory entries:\n- multi / line key: first / second / third <b>\n"
        long_line = memory.call_tool("memory_search", {"query": "éé"}).split("\n")[1]
        assert long_line == "- long: " + "é" * 250 + "..."

    def test_query_required(self, memory: AgentMemory) -> None:
        assert error_of(memory.call_tool("memory_search", {})) == "memory_search: query is required"
        assert error_of(memory.call_tool("memory_search", {"query": ""})).endswith("required")


class TestDeleteAndList:
    def test_delete_outputs(self, memory: AgentMemory) -> None:
        memory.store.save("k", "v")
        assert memory.call_tool("memory_delete", {"key": "k"}) == 'Deleted memory entry "k".'
        assert memory.call_tool("forget", {"key": "k"}) == 'No memory entry "k".'
        assert error_of(memory.call_tool("memory_delete", {})) == "memory_delete: key is required"

    def test_list(self, memory: AgentMemory) -> None:
        assert memory.call_tool("memory_list", {}) == "No memory entries."
        for key in ["b", "a"]:
            memory.store.save(key, "v")
        assert memory.call_tool("memory_list", {}) == "2 memory entries:\n- a\n- b\n"

    def test_list_over_500_shows_the_newest_sorted(self, memory: AgentMemory) -> None:
        # keys sort in the opposite order of their age
        items = [(f"k{999 - i:03d}", "v") for i in range(510)]
        memory.store.save_many(items, caps=False)
        lines = memory.call_tool("memory_list", None).split("\n")
        assert lines[0] == "510 memory entries:"
        listed = [line[2:] for line in lines[1:501]]
        assert listed == sorted(f"k{999 - i:03d}" for i in range(10, 510))
        assert lines[501] == "... and 10 more (use memory_search to find older entries)"


class TestDispatcher:
    @pytest.mark.parametrize(
        ("name", "arguments", "message"),
        [
            ("nope", {}, "nope: unknown memory tool"),
            (None, {}, "None: unknown memory tool"),
            ("memory_save", "{not json", "memory_save: arguments are not valid JSON"),
            ("memory_save", "[1, 2]", "memory_save: arguments must be a JSON object"),
            ("memory_save", 42, "memory_save: arguments must be a JSON object"),
        ],
    )
    def test_bad_calls_answer_an_error(
        self, memory: AgentMemory, name: str, arguments: object, message: str
    ) -> None:
        assert error_of(memory.call_tool(name, arguments)).startswith(message)  # type: ignore[arg-type]

    def test_json_text_arguments(self, memory: AgentMemory) -> None:
        out = memory.call_tool("memory_save", '{"key": "k", "value": "v"}')
        assert out == 'Saved memory entry "k" (1 bytes)'

    def test_list_accepts_empty_arguments(self, memory: AgentMemory) -> None:
        assert memory.call_tool("memory_list", "") == "No memory entries."

    def test_error_message_cut_to_500_bytes(self, memory: AgentMemory) -> None:
        message = error_of(memory.call_tool("x" * 800, {}))
        assert len(message.encode()) == 503
        assert message.endswith("...")

    @pytest.mark.parametrize("name", ["\ud800", 5, None, b"memory_save"])
    def test_any_tool_name_gets_an_error_text(self, memory: AgentMemory, name: object) -> None:
        assert "unknown memory tool" in error_of(memory.call_tool(name, {}))  # type: ignore[arg-type]

    def test_non_finite_query_results_are_json(self, memory: AgentMemory) -> None:
        assert memory.call_tool("memory_query", {"query": "0/0"}) == "null"
        memory.tasks = [{"id": 1, "a": float("inf")}]
        rows = json.loads(memory.call_tool("memory_query", {"query": "tasks"}))["rows"]
        assert rows == [{"a": None, "id": 1}]

    @pytest.mark.parametrize("tool", ["memory_save", "memory_query"])
    def test_deeply_nested_json_is_an_error(self, memory: AgentMemory, tool: str) -> None:
        assert "nested too deeply" in error_of(memory.call_tool(tool, "[" * 100_000))
        assert len(memory.store) == 0

    def test_store_errors_are_returned(self, memory: AgentMemory) -> None:
        memory.store.close()
        assert "closed" in error_of(memory.call_tool("memory_list", {}))

    def test_calls_are_logged(self, memory: AgentMemory) -> None:
        memory.call_tool("memory_save", {"key": "k", "value": "v"})
        memory.call_tool("memory_list", '{"x": 1}')
        calls = memory.tool_calls
        assert [c["name"] for c in calls] == ["memory_save", "memory_list"]
        assert calls[0]["args"] == '{"key": "k", "value": "v"}'
        assert calls[1]["args"] == '{"x": 1}'  # text kept as given
        assert calls[0]["result"] == 'Saved memory entry "k" (1 bytes)'
        assert isinstance(calls[0]["timestamp"], int)

    def test_log_keeps_the_newest_200(self, memory: AgentMemory) -> None:
        for i in range(205):
            memory.call_tool("memory_delete", {"key": f"k{i}"})
        calls = memory.tool_calls
        assert len(calls) == 200
        assert json.loads(calls[0]["args"]) == {"key": "k5"}
