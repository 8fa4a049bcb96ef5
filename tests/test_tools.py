"""§4: the five tools, their exact outputs, errors and aliases."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import membolt
from membolt import MemoryStore
from membolt import tools as tools_module
from membolt.agent import AgentMemory
from membolt.tools import TOOL_NAMES, tool_schemas

from support.processes import WORKER


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
    @pytest.mark.smoke
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
    @pytest.mark.smoke
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


# ----- MCP annotations ------------------------------------------------------------


class TestAnnotations:
    HINTS = ("readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint")

    def test_every_tool_has_every_hint_and_a_title(self) -> None:
        for schema in tool_schemas("mcp"):
            annotations = schema["annotations"]
            assert set(annotations) == {"title", *self.HINTS}
            assert all(isinstance(annotations[hint], bool) for hint in self.HINTS)
            assert annotations["title"] == schema["title"]
            assert annotations["title"]

    def test_hints_say_what_each_tool_does(self) -> None:
        hints = {
            s["name"]: tuple(s["annotations"][h] for h in self.HINTS) for s in tool_schemas("mcp")
        }
        # (read-only, destructive, idempotent, open world)
        assert hints == {
            # Overwriting a key replaces its fact: destructive, not additive.
            "memory_save": (False, True, True, False),
            "memory_search": (True, False, True, False),
            "memory_delete": (False, True, True, False),
            "memory_list": (True, False, True, False),
            "memory_query": (True, False, True, False),
        }

    @pytest.mark.redb_only
    def test_read_only_tools_write_nothing_and_idempotent_ones_repeat(
        self, memory: AgentMemory
    ) -> None:
        """The hints hold: a read-only call leaves the store's bytes as they
        were; an idempotent call repeated leaves the same entries."""
        memory.call_tool("memory_save", {"key": "decision:db", "value": "use redb"})
        directory = Path(memory.store.path).parent

        def files() -> dict[str, bytes]:
            membolt._core._release_all()  # the lease's handle closed: every byte on disk
            return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}

        before = files()
        flags = {s["name"]: s["annotations"] for s in tool_schemas("mcp")}
        calls = {
            "memory_search": {"query": "redb"},
            "memory_list": {},
            "memory_query": {"query": "memory"},
        }
        for name, arguments in calls.items():
            assert flags[name]["readOnlyHint"]
            assert "decision:db" in memory.call_tool(name, arguments)
        assert files() == before

        def contents() -> list[tuple[str, str, str, tuple[str, ...]]]:
            return [(e.key, e.value, e.type, e.references) for e in memory.store.entries()]

        for name, arguments in [
            ("memory_save", {"key": "progress:x", "value": "half done"}),
            ("memory_delete", {"key": "decision:db"}),
        ]:
            assert flags[name]["idempotentHint"]
            memory.call_tool(name, arguments)
            once = contents()
            memory.call_tool(name, arguments)
            assert contents() == once

    def test_other_formats_carry_no_annotations(self) -> None:
        for fmt in ("openai", "responses", "anthropic"):
            assert "annotations" not in json.dumps(tool_schemas(fmt))  # type: ignore[arg-type]


# ----- arguments: the schema is the contract ----------------------------------------


class TestArguments:
    def test_save_takes_an_optional_type(self, memory: AgentMemory) -> None:
        out = memory.call_tool("memory_save", {"key": "db", "value": "redb", "type": "decision"})
        assert out == 'Saved memory entry "db" (4 bytes)'  # §4 output unchanged
        entry = memory.store.get("db")
        assert entry is not None
        assert entry.type == "decision"
        # Omitted (or null): an existing entry keeps its type (§1.3) ...
        memory.call_tool("memory_save", {"key": "db", "value": "sqlite"})
        memory.call_tool("memory_save", {"key": "db", "value": "sqlite", "type": None})
        assert memory.store.get("db").type == "decision"  # type: ignore[union-attr]
        # ... a new one gets the inferred type.
        memory.call_tool("memory_save", {"key": "error:boot", "value": "x", "type": None})
        assert memory.store.get("error:boot").type == "error"  # type: ignore[union-attr]
        schema = tool_schemas("openai")[0]["function"]["parameters"]
        assert schema["properties"]["type"]["type"] == "string"
        assert schema["required"] == ["key", "value"]

    def test_save_type_must_be_a_string(self, memory: AgentMemory) -> None:
        out = memory.call_tool("memory_save", {"key": "k", "value": "v", "type": 3})
        assert error_of(out) == "memory_save: type must be a string, not int"
        assert len(memory.store) == 0

    @pytest.mark.parametrize(
        ("name", "arguments", "message"),
        [
            (
                "memory_save",
                {"key": "k", "value": "v", "tags": ["a"]},
                'memory_save: unknown argument "tags"; expected key, value, type',
            ),
            (
                "remember",
                {"name": "k", "text": "v"},
                'memory_save: unknown arguments "name", "text"; expected key, value, type',
            ),
            (
                "memory_search",
                {"query": "x", "limit": 3},
                'memory_search: unknown argument "limit"; expected query',
            ),
            (
                "memory_delete",
                {"key": "k", "force": None},  # null is no excuse either
                'memory_delete: unknown argument "force"; expected key',
            ),
            (
                "memory_list",
                '{"prefix": "decision"}',
                'memory_list: unknown argument "prefix"; it takes no arguments',
            ),
            (
                "memory_query",
                {"query": "memory", "offset": 10},
                'memory_query: unknown argument "offset"; expected query, limit',
            ),
            (
                "memory_list",
                {"line\nbreak": 1},
                'memory_list: unknown argument "line\\nbreak"; it takes no arguments',
            ),
        ],
    )
    def test_unknown_arguments_are_named(
        self, memory: AgentMemory, name: str, arguments: object, message: str
    ) -> None:
        memory.store.save("k", "kept")
        assert error_of(memory.call_tool(name, arguments)) == message  # type: ignore[arg-type]
        assert memory.store.keys() == ["k"]
        assert memory.store.get("k").value == "kept"  # type: ignore[union-attr]

    def test_unknown_arguments_come_before_missing_ones(self, memory: AgentMemory) -> None:
        out = memory.call_tool("memory_save", {"name": "k"})
        assert error_of(out).startswith('memory_save: unknown argument "name"')

    def test_every_schema_lists_exactly_what_the_dispatcher_takes(
        self, memory: AgentMemory
    ) -> None:
        for schema in tool_schemas("openai"):
            function = schema["function"]
            assert function["parameters"]["additionalProperties"] is False
            out = memory.call_tool(function["name"], {"surely_not_an_argument": "x"})
            assert "unknown argument" in error_of(out)

    def test_null_is_absent(self, memory: AgentMemory) -> None:
        memory.store.save_many([(f"n{i:03d}", "v") for i in range(60)], caps=False)
        with_null = memory.call_tool("memory_query", {"query": "memory", "limit": None})
        assert with_null == memory.call_tool("memory_query", {"query": "memory"})
        assert json.loads(with_null)["rows"].__len__() == 50
        out = memory.call_tool("memory_save", '{"key": null, "value": "v", "type": null}')
        assert error_of(out) == "memory_save: key is required"

    def test_strict_calls_work(self, memory: AgentMemory) -> None:
        """What a model in strict mode sends: every property, null when unset."""
        for schema in tool_schemas("openai", strict=True):
            function = schema["function"]
            properties = function["parameters"]["properties"]
            arguments = {
                name: ("x" if name != "query" or function["name"] != "memory_query" else "memory")
                if prop["type"] == "string"
                else None
                for name, prop in properties.items()
            }
            assert set(arguments) == set(function["parameters"]["required"])
            out = memory.call_tool(function["name"], json.dumps(arguments))
            assert not out.startswith('{"error"'), (function["name"], out)


# ----- a bounded memory_query text (§14) -------------------------------------------


def cut_notice(shown: str) -> str:
    return (
        f"[output cut at 65,536 bytes{shown}: narrow the query with a smaller limit, "
        "filter(...) to fewer rows, or map(...) to fewer fields]"
    )


class TestBoundedQuery:
    def test_megabytes_are_cut_at_64_kib_between_items_and_say_so(
        self, memory: AgentMemory
    ) -> None:
        # 200 values of 20,001 bytes: the whole result is 4 MB of JSON.
        memory.store.save_many([(f"big{i:03d}", "世" * 6667) for i in range(200)], caps=False)
        query = "map(memory, .value)"  # a list of strings: not rows, so no row limit
        whole = json.loads(tools_module.query_text(memory.query(query)))
        text = memory.call_tool("memory_query", {"query": query})
        head, notice = text.split("\n")
        assert len(head.encode()) <= 65_536
        items = json.loads(head)  # still one valid JSON document
        assert items == whole[: len(items)]
        assert len(items) == 3  # the fourth does not fit
        assert notice == cut_notice(" after 3 of 200 items")

    def test_rows_are_cut_after_a_whole_row(self, memory: AgentMemory) -> None:
        memory.store.save_many([(f"row{i:03d}", "x" * 400) for i in range(300)], caps=False)
        text = memory.call_tool("memory_query", {"query": "memory", "limit": 500})
        head, notice = text.split("\n")
        assert len(head.encode()) <= 65_536
        cut = json.loads(head)
        whole = memory.query("memory", 500)
        assert cut["count"] == 300
        assert cut["truncated"] is True
        shown = len(cut["rows"])
        assert 100 < shown < 300
        assert cut["rows"] == json.loads(json.dumps(whole["rows"][:shown]))
        assert notice == cut_notice(f" after {shown} of 300 rows")

    def test_a_text_within_the_bound_is_whole_json(self, memory: AgentMemory) -> None:
        memory.store.save_many([(f"k{i}", "v" * 100) for i in range(100)], caps=False)
        text = memory.call_tool("memory_query", {"query": "memory", "limit": 500})
        assert "\n" not in text
        assert text == tools_module.query_text(memory.query("memory", 500))
        assert json.loads(text)["count"] == 100

    def test_exactly_at_the_bound_is_not_cut_and_a_long_string_is_cut_inside(self) -> None:
        value = "a" * (65_536 - 2)  # with its quotes: 65,536 bytes
        assert tools_module.query_tool_text(value) == json.dumps(value)
        head, notice = tools_module.query_tool_text(value + "a").split("\n")
        assert notice == cut_notice(" inside the string")
        assert json.loads(head).endswith("...")
        assert len(head.encode()) <= 65_536
        # Escapes count: a string of line breaks is cut twice as short.
        head, _ = tools_module.query_tool_text("\n" * 70_000).split("\n")
        assert len(head.encode()) <= 65_536
        assert len(json.loads(head)) > 30_000

    def test_an_object_is_cut_after_a_whole_field(self) -> None:
        head, notice = tools_module.query_tool_text({"a": "x" * 40_000, "b": "y" * 40_000}).split(
            "\n"
        )
        assert json.loads(head) == {"a": "x" * 40_000}
        assert notice == cut_notice(" after 1 of 2 fields")

    def test_the_command_line_prints_the_whole_result(self, memory: AgentMemory) -> None:
        memory.store.save_many([(f"big{i}", "x" * 10_000) for i in range(10)], caps=False)
        assert len(tools_module.query_text(memory.query("map(memory, .value)"))) > 100_000


def test_memory_list_is_cut_at_64_kib_keeping_the_newest_keys(memory: AgentMemory) -> None:
    keys = [f"{i:04d}:" + "k" * 1000 for i in range(600)]  # keys of about 1 KiB
    memory.store.save_many([(key, "v") for key in keys], caps=False)
    text = memory.call_tool("memory_list", {})
    assert len(text.encode()) <= 65_536
    lines = text.splitlines()
    assert lines[0] == "600 memory entries:"
    listed = [line.removeprefix("- ") for line in lines[1:-1]]
    assert listed == sorted(listed)
    assert listed == keys[-len(listed) :]  # the newest
    assert 50 < len(listed) <= 64  # 64 lines of 1,008 bytes, and the rest
    assert (
        lines[-1] == f"... and {600 - len(listed)} more (use memory_search to find older entries)"
    )


# ----- a busy store ------------------------------------------------------------------


def test_busy_store_tells_the_model_to_retry(store_path: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            WORKER,
            "hold",
            str(store_path),
            "30",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        memory = AgentMemory(MemoryStore(store_path, timeout=0.2))
        out = memory.call_tool("memory_save", {"key": "k", "value": "v"})
        assert out == (
            '{"error": "memory_save: the memory store is busy (another process is using it); '
            'retry in a moment"}'
        )
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert "k" not in MemoryStore(store_path).keys()


# ---------------------------------------------------------------------------
# One table of names and defaults, pinned where it is read
# ---------------------------------------------------------------------------


def test_the_name_table_is_the_tools_the_dispatcher_defines() -> None:
    from membolt import tool_names, tools
    from membolt.extract import MEMORY_TOOLS

    assert tool_names.TOOL_NAMES == tools.TOOL_NAMES
    assert tool_names.ALIASES == tools.ALIASES
    assert set(tool_names.ALIASES.values()) <= set(tools.TOOL_NAMES)
    # The extraction rules never capture any of them.
    assert set(tools.TOOL_NAMES) | set(tools.ALIASES) == MEMORY_TOOLS
    assert MEMORY_TOOLS is tool_names.MEMORY_TOOLS


def test_defaults_are_the_cores_wherever_they_are_read() -> None:
    import inspect

    from membolt import _core, cli, mcp, tools

    assert inspect.signature(_core.Store.render).parameters["max_tokens"].default == (
        _core.DEFAULT_MAX_TOKENS
    )
    assert inspect.signature(_core.Store.query).parameters["limit"].default == (
        _core.DEFAULT_QUERY_LIMIT
    )
    assert tools.QUERY_LIMIT == _core.DEFAULT_QUERY_LIMIT
    assert mcp.BLOCK_TOKENS == _core.DEFAULT_MAX_TOKENS
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices  # type: ignore[attr-defined]
    assert sub["render"].get_default("max_tokens") == _core.DEFAULT_MAX_TOKENS
    assert sub["query"].get_default("limit") == _core.DEFAULT_QUERY_LIMIT
