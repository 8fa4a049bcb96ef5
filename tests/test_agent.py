"""AgentMemory hooks: §6 (through the store), §7, §8, and §0 F5-F7, F9, F10."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from membolt import MemoryStore
from membolt.agent import AgentMemory
from membolt.extract import ExtractionConfig

NOW = 1_795_000_000_000


@pytest.fixture
def memory(store: MemoryStore) -> AgentMemory:
    return AgentMemory(store, clock=lambda: NOW)


def values(store: MemoryStore) -> dict[str, str]:
    return {e.key: e.value for e in store.entries()}


class TestAfterTurn:
    @pytest.mark.smoke
    def test_markers_key_lines_action_files_and_sections(self, memory: AgentMemory) -> None:
        response = "\n".join(
            [
                "[MEMORY: db_choice] redb, for its single-file format",
                "STATUS: tests pending",
                "Added rate limiting middleware to the HTTP handler.",
                "Edited src/api/handler.go and src/api/middleware.go",
                "## Progress",
                "handler done, middleware wired in",
                "## Next",
            ]
        )
        count = memory.after_turn("[MEMORY: goal] ship /users", response)
        stored = values(memory.store)
        assert stored["goal"] == "ship /users"
        assert stored["db_choice"] == "redb, for its single-file format"
        assert stored["status"] == "tests pending"
        assert stored["last_action"] == "rate limiting middleware to the HTTP handler"
        assert stored["last_files"] == "src/api/handler.go, src/api/middleware.go"  # F9
        assert stored["progress:progress"] == "handler done, middleware wired in"
        assert count == 6
        types = {e.key: e.type for e in memory.store.entries()}
        assert types["goal"] == "prompt"
        assert types["last_action"] == "action"
        assert types["last_files"] == "file"

    def test_turn_record_is_saved_and_not_counted(self, memory: AgentMemory) -> None:
        assert memory.after_turn("hello", "hi there") == 0
        turn = memory.store.get("turn:last")
        assert turn is not None
        assert turn.value == "turn at 2026-11-18T11:06:40Z | input: hello | response: hi there"

    def test_turn_record_keeps_200_characters(self, memory: AgentMemory) -> None:
        memory.after_turn("é" * 300, "x" * 300)
        turn = memory.store.get("turn:last")
        assert turn is not None
        assert f"input: {'é' * 200} | response: {'x' * 200}" in turn.value

    def test_verbs_match_whole_words_only_f10(self, memory: AgentMemory) -> None:
        memory.after_turn("", "I reset the cache.")
        assert "last_action" not in memory.store

    def test_a_turn_is_one_chained_batch(self, memory: AgentMemory) -> None:
        memory.after_turn("", "DECISION: use redb\nNOTE_X: n")
        decision = memory.store.get("decision")
        note = memory.store.get("note_x")
        assert decision is not None
        assert note is not None
        assert note.references == ("decision",)
        assert note.updated_at > decision.updated_at

    def test_mechanisms_can_be_switched_off(self, store: MemoryStore) -> None:
        config = ExtractionConfig(markers=False, action=False)
        memory = AgentMemory(store, config=config)
        memory.after_turn("[MEMORY: a] b", "Fixed the flaky login test\nSTATUS: green")
        assert set(values(store)) == {"status", "turn:last"}


class TestAfterTool:
    @pytest.mark.smoke
    def test_captured_tool_result(self, memory: AgentMemory) -> None:
        count = memory.after_tool(
            "bash_exec", {"cmd": "pytest"}, "42 passed in 3.1s\nDeployed the build to staging"
        )
        stored = values(memory.store)
        assert stored["tool:bash_exec:42_passed_in_3_1s"].startswith("42 passed")
        assert stored["last_action"] == "the build to staging"
        assert count == 2
        call = memory.tool_calls[-1]
        assert call["name"] == "bash_exec"
        assert json.loads(call["args"]) == {"cmd": "pytest"}

    @pytest.mark.parametrize("tool", ["read_file", "search_local", "list_files", "memory_list"])
    def test_read_only_and_memory_tools_are_not_captured_f6(
        self, memory: AgentMemory, tool: str
    ) -> None:
        assert memory.after_tool(tool, {}, "Edited a/b.py\n[MEMORY: k] v") == 0
        assert len(memory.store) == 0
        assert memory.tool_calls[-1]["name"] == tool

    def test_capture_list_is_configurable(self, store: MemoryStore) -> None:
        memory = AgentMemory(store, config=ExtractionConfig(capture_tools=frozenset({"mytool"})))
        assert memory.after_tool("mytool", "{}", "ok") == 1
        assert memory.after_tool("bash_exec", "{}", "ok") == 0

    def test_at_most_20_results_per_tool_f5(self, memory: AgentMemory) -> None:
        for i in range(25):
            memory.after_tool("bash_exec", "{}", f"run number {i}")
        keys = [k for k in memory.store.keys() if k.startswith("tool:bash_exec:")]
        assert len(keys) == 20
        assert "tool:bash_exec:run_number_24" in keys
        assert "tool:bash_exec:run_number_4" not in keys

    def test_empty_result_is_not_captured_whitespace_is(self, memory: AgentMemory) -> None:
        assert memory.after_tool("bash_exec", "{}", "") == 0
        assert memory.after_tool("bash_exec", "{}", "   \n ") == 1
        assert "tool:bash_exec:output" in memory.store

    def test_text_that_is_not_utf8_is_stored_cleaned(self, memory: AgentMemory) -> None:
        # os.fsdecode of a non-UTF-8 file name gives a lone surrogate.
        name = b"r\xff.txt".decode("utf-8", "surrogateescape")
        assert memory.after_tool("bash_exec", {"cmd": "ls"}, f"{name}\n[MEMORY: f] {name}") > 0
        assert memory.store.get("f").value == "r\ufffd.txt"  # type: ignore[union-attr]
        assert memory.after_turn(f"look at {name}", f"Fixed the {name} listing") > 0
        # One odd call must not break every later query.
        memory.call_tool("memory_search", '{"query": "\ud800"}')
        assert memory.query("len(tool_calls)") == 2
        assert memory.tool_calls[0]["result"].startswith("r\ufffd.txt")

    def test_the_system_prompt_section_cleans_its_focus_like_every_hook(
        self, memory: AgentMemory
    ) -> None:
        memory.store.save("notes:r\ufffd", "about the file r\ufffd.txt")
        section = memory.system_prompt_section("\ud800")
        assert section.startswith("Check memory first.")
        assert memory.system_prompt_section("r\udcff.txt") == memory.system_prompt_section(
            "r\ufffd.txt"
        )

    def test_hooks_and_the_log_survive_any_object(self, memory: AgentMemory) -> None:
        class Hostile:
            def __str__(self) -> str:
                raise RuntimeError("no text")

        deep: list[object] = []
        cursor = deep
        for _ in range(5000):
            cursor.append([])
            cursor = cursor[0]  # type: ignore[assignment]
        assert memory.after_tool(Hostile(), deep, Hostile()) == 0  # type: ignore[arg-type]
        out = memory.call_tool("memory_save", {"key": "k", "value": "v", "extra": deep})
        assert out.startswith('{"error": "memory_save: unknown argument \\"extra\\"; ')
        assert [c["args"] for c in memory.tool_calls] == [
            "<list that is not JSON>",
            "<dict that is not JSON>",
        ]
        assert memory.tool_calls[0]["name"] == "<Hostile>"
        assert memory.after_turn(Hostile(), None) >= 0  # type: ignore[arg-type]
        assert memory.save_thinking(Hostile()) >= 0  # type: ignore[arg-type]
        assert memory.auto_capture(Hostile()) == 0  # type: ignore[arg-type]

    def test_memory_tool_reported_twice_is_logged_once(self, memory: AgentMemory) -> None:
        out = memory.call_tool("memory_save", {"key": "k", "value": "v"})
        memory.after_tool("memory_save", {"key": "k", "value": "v"}, out)
        assert len(memory.tool_calls) == 1

    def test_identical_calls_the_agent_ran_are_each_logged(self, memory: AgentMemory) -> None:
        # §9.2: every call reported to after_tool, even one repeating the last.
        memory.after_tool("bash_exec", {"cmd": "make"}, "ok")
        memory.after_tool("bash_exec", {"cmd": "make"}, "ok")
        out = memory.call_tool("memory_list", {})
        memory.call_tool("memory_list", {})
        memory.after_tool("memory_list", {}, out)  # the echo of the second call only
        assert [c["name"] for c in memory.tool_calls] == ["bash_exec"] * 2 + ["memory_list"] * 2

    def test_logged_args_are_json_dumps_of_a_mapping(self, memory: AgentMemory) -> None:
        arguments = {"path": "café/naïve.txt", "n": 2}
        memory.after_tool("write_file", arguments, "ok")
        memory.call_tool("memory_search", {"query": "café"})
        assert [c["args"] for c in memory.tool_calls] == [
            json.dumps(arguments),
            json.dumps({"query": "café"}),
        ]


class TestThinking:
    def test_save_thinking(self, memory: AgentMemory) -> None:
        assert memory.save_thinking("First, check the migration order.\nThen...") == 1
        entry = memory.store.get(f"thinking:{NOW}:first__check_the_migration_ord")
        assert entry is not None
        assert entry.type == "thinking"
        assert memory.save_thinking("  \n ") == 0

    def test_thinking_cap(self, store: MemoryStore) -> None:
        clock = iter(range(NOW, NOW + 100))
        memory = AgentMemory(store, clock=lambda: next(clock))
        for i in range(25):
            memory.save_thinking(f"thought {i}")
        assert sum(1 for e in store.entries() if e.type == "thinking") == 20


class TestAutoCapture:
    SUMMARY = "\n".join(
        [
            "## Goal",
            "Ship the /users endpoint",
            "## Progress",
            "handler written",
            "tests pending",
            "## Key Decisions",
            "- **Storage**: redb, one file per project",
            "- Use Postgres pool",
            "- Skipped: (none)",
            "## Critical Context",
            "- API base: /v2",
        ]
    )

    def test_checkpoint_and_typed_bullets_f7(self, memory: AgentMemory) -> None:
        memory.store.save("result:build", "compiles")
        assert memory.auto_capture(self.SUMMARY) == 4
        checkpoint = memory.store.get("checkpoint:summary")
        assert checkpoint is not None
        assert checkpoint.type == "status"
        assert checkpoint.value == (
            "Goal: Ship the /users endpoint | Progress: handler written tests pending | "
            "Key Decisions: - **Storage**: redb, one file per project - Use Postgres pool "
            "- Skipped: (none) | Critical Context: - API base: /v2"
        )
        assert checkpoint.references == ("result:build",)
        storage = memory.store.get("storage")
        assert storage is not None
        assert (storage.type, storage.value) == ("decision", "redb, one file per project")
        assert storage.references == ("checkpoint:summary",)
        pool = memory.store.get("use_postgres_pool")
        assert pool is not None
        assert (pool.type, pool.value) == ("decision", "Use Postgres pool")
        api = memory.store.get("api_base")
        assert api is not None
        assert (api.type, api.value) == ("context", "/v2")
        assert "skipped" not in memory.store

    def test_recapture_never_self_references_or_duplicates_f7(self, memory: AgentMemory) -> None:
        memory.auto_capture(self.SUMMARY)
        first = memory.store.get("checkpoint:summary")
        memory.auto_capture(self.SUMMARY)
        again = memory.store.get("checkpoint:summary")
        assert first is not None
        assert again is not None
        assert "checkpoint:summary" not in again.references
        assert again.references == first.references
        assert len(set(again.references)) == len(again.references)

    def test_no_sections_writes_nothing(self, memory: AgentMemory) -> None:
        assert memory.auto_capture("just chatter") == 0
        assert len(memory.store) == 0


class TestSessions:
    def test_start_and_restore(self, memory: AgentMemory, tmp_path: Path) -> None:
        memory.start_session(model="gpt-x", backend="openai", cwd=tmp_path)
        assert memory.store.get("session:started").value == str(tmp_path)  # type: ignore[union-attr]
        assert json.loads(memory.store.get("session:config").value) == {  # type: ignore[union-attr]
            "model": "gpt-x",
            "backend": "openai",
        }
        assert memory.restore_session_config() == {"model": "gpt-x", "backend": "openai"}
        memory.switch_model(model="claude", base_url="http://localhost:8080")
        assert memory.restore_session_config() == {
            "model": "claude",
            "base_url": "http://localhost:8080",
        }
        memory.start_session(resumed=True, cwd=tmp_path)
        assert "session:resumed" in memory.store

    def test_signature_of_section_10(self, memory: AgentMemory) -> None:
        # mem.start_session(model=None, backend=None, base_url=None, resumed=False)
        memory.start_session("m", "openai", "http://localhost:1", True)
        assert "session:resumed" in memory.store
        assert "session:started" not in memory.store
        assert memory.restore_session_config()["base_url"] == "http://localhost:1"

    def test_types_follow_the_classifier(self, memory: AgentMemory) -> None:
        memory.start_session(model="m")
        assert memory.store.get("session:config").type == "context"  # type: ignore[union-attr]
        assert memory.store.get("session:started").type == "note"  # type: ignore[union-attr]

    @pytest.mark.parametrize("stored", ["not json", "[1, 2]", '"text"'])
    def test_invalid_stored_config_gives_empty(self, memory: AgentMemory, stored: str) -> None:
        memory.store.save("session:config", stored)
        assert memory.restore_session_config() == {}

    def test_nothing_stored(self, memory: AgentMemory) -> None:
        assert memory.restore_session_config() == {}


class TestCapsAreDurable:
    def test_caps_hold_after_reopening(self, store_path: Path) -> None:
        store = MemoryStore(store_path)
        clock = iter(range(NOW, NOW + 10_000))
        memory = AgentMemory(store, clock=lambda: next(clock))
        store.save("prompt:main", "the goal")
        store.save("progress:main", "half way")
        for i in range(30):
            memory.after_tool("bash_exec", "{}", f"output {i}")
            memory.save_thinking(f"thinking {i}")
            memory.after_turn("", f"[MEMORY: fact_{i:02d}] value {i}\n[MEMORY: more_{i:02d}] x")
        del memory, store
        script = (
            "import sys, collections, membolt\n"
            "s = membolt.MemoryStore(sys.argv[1])\n"
            "print(collections.Counter(e.type for e in s.entries()).most_common())\n"
            "print(len([k for k in s.keys() if k.startswith('tool:bash_exec:')]))\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", script, str(store_path)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.splitlines()
        counts = dict(eval(out[0]))
        assert int(out[1]) == 20
        assert counts["thinking"] == 20
        assert counts["note"] + counts.get("fact", 0) == 50
        assert counts["prompt"] == 1
        assert counts["progress"] == 1


class TestHostileInput:
    def test_ten_megabyte_tool_result(self, memory: AgentMemory) -> None:
        huge = ("Edited a/b.py and " + "x" * 1000 + "\n") * 10_000
        assert memory.after_tool("bash_exec", "{}", huge) >= 1
        for entry in memory.store.entries():
            assert len(entry.value.encode()) <= 2003
            assert len(entry.key.encode()) <= 1024

    @pytest.mark.parametrize(
        "text",
        [
            "[MEMORY: " * 100_000,
            "\x00\x01\x02 Added \x7f\ud7ff" * 10_000,
            "## Progress\n" * 50_000,
            "A" * 2_000_000,
            "Edited " + "a/" * 500_000,
        ],
    )
    def test_hooks_do_not_raise(self, memory: AgentMemory, text: str) -> None:
        memory.after_turn(text, text)
        memory.after_tool("bash_exec", text, text)
        memory.save_thinking(text)
        memory.auto_capture(text)
        for entry in memory.store.entries():
            assert len(entry.value.encode()) <= 2003

    def test_store_failure_returns_zero(self, memory: AgentMemory) -> None:
        memory.store.close()
        assert memory.after_turn("[MEMORY: a] b", "c") == 0
        assert memory.after_tool("bash_exec", "{}", "out") == 0
        assert memory.save_thinking("t") == 0
        assert memory.auto_capture("## Goal\nship the thing now") == 0
        memory.start_session(model="m")
        assert memory.restore_session_config() == {}


# ---------------------------------------------------------------------------
# §9.2: tool_calls.name is the name as called
# ---------------------------------------------------------------------------


def test_tool_calls_log_the_name_as_called(store: MemoryStore) -> None:
    memory = AgentMemory(store)
    memory.call_tool("remember", {"key": "a", "value": "1"})
    memory.call_tool("memorize", '{"key": "b", "value": "2"}')
    memory.call_tool("recall", {"query": "a"})
    memory.call_tool("forget", {"key": "b"})
    memory.call_tool("memory_list", {})
    called = ["remember", "memorize", "recall", "forget", "memory_list"]
    rows = memory.query("tool_calls")["rows"]
    assert [row["name"] for row in rows] == called
    assert rows[1]["args"] == '{"key": "b", "value": "2"}'  # text arguments as given
    assert memory.query("map(tool_calls, .name)") == called
    answer = json.loads(memory.call_tool("memory_query", {"query": "map(tool_calls, .name)"}))
    assert answer == called
    # The memory_query call itself is logged under its own name afterwards.
    assert memory.query("last(tool_calls).name") == "memory_query"
