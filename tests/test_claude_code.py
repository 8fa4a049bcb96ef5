"""Claude Code integration (§13), end to end through real processes.

``membolt hook claude-code`` runs as Claude Code runs it: a new process per
event, the event's JSON (the payload shapes of Claude Code's hooks reference,
in ``fixtures/claude_code/``) on stdin, in the project's directory. Each
test checks the effect on the project's store and the exact stdout; the
failure tests check that a hook never disturbs the session (exit 0, at most
one stderr line, no stdout, the store as it was). ``membolt install
claude-code`` / ``uninstall`` run against real settings files.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import membolt
from membolt.agent import AgentMemory
from membolt.claude_code import install
from membolt.claude_code.context_cap import MAX_CONTEXT_CHARS, within_ceiling
from membolt.claude_code.hook import TURNS_DIRECTORY
from membolt.claude_code.tool_text import project_path, result_text
from membolt.claude_code.turns import MAX_PROMPT_BYTES, TurnPrompts, session_file_name

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).parent / "fixtures" / "claude_code"
HOOK = [sys.executable, "-m", "membolt.cli", "hook", "claude-code"]


# ----- helpers -------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    directory = tmp_path / "project"
    directory.mkdir()
    return directory


def fixture(name: str, project: Path, **fields: Any) -> dict[str, Any]:
    """A documented payload, its placeholder paths pointing into ``project``."""
    text = (FIXTURES / f"{name}.json").read_text()
    payload: dict[str, Any] = json.loads(text.replace("/Users/...", str(project)))
    payload.update(fields)
    return payload


def hook(
    payload: dict[str, Any] | bytes | str, project: Path, *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    if isinstance(payload, dict):
        data = json.dumps(payload).encode()
    else:
        data = payload.encode() if isinstance(payload, str) else payload
    done = subprocess.run(
        [*HOOK, *args],
        input=data,
        capture_output=True,
        cwd=project,
        env={**os.environ, **env},
        timeout=120,
        check=False,
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


def quiet(done: subprocess.CompletedProcess[str]) -> None:
    """The hook succeeded and printed nothing anywhere."""
    assert (done.returncode, done.stdout, done.stderr) == (0, "", ""), done


def undisturbing(done: subprocess.CompletedProcess[str]) -> str:
    """The hook failed without disturbing the session: exit 0, nothing on
    stdout, exactly one line on stderr (returned)."""
    assert done.returncode == 0
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("membolt hook: ")
    assert "Traceback" not in done.stderr
    return lines[0]


def store_of(project: Path) -> membolt.MemoryStore:
    membolt._core._release_all()
    return membolt.MemoryStore.for_project(project)


def state(project: Path) -> dict[str, tuple[str, str, tuple[str, ...], int]]:
    """Every entry of the project's store with what a write would change."""
    store = store_of(project)
    view = {e.key: (e.value, e.type, e.references, e.updated_at) for e in store.entries()}
    store.close()
    return view


def context_output(event: str, text: str) -> str:
    body = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}
    return json.dumps(body) + "\n"


def turns_dir(project: Path) -> Path:
    return membolt.project_store_path(project).parent / TURNS_DIRECTORY


def seeded(project: Path) -> dict[str, tuple[str, str, tuple[str, ...], int]]:
    store = store_of(project)
    store.save("decision:db", "use redb for the users table")
    store.save("error:users", "the users endpoint returns 500 after the migration")
    store.close()
    return state(project)


# ----- SessionStart ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "key"),
    [
        ("startup", "session:started"),
        ("resume", "session:resumed"),
        ("clear", "session:resumed"),
        ("compact", "session:resumed"),
    ],
)
def test_session_start_records_the_session_and_prints_the_section(
    project: Path, source: str, key: str
) -> None:
    seeded(project)
    done = hook(fixture("session_start", project, source=source), project)
    assert (done.returncode, done.stderr) == (0, "")
    store = store_of(project)
    assert store.get(key).value == str(project)
    assert store.get("session:config").value == "{}"
    # Printed after the writes: the section shows the session entries.
    expected = AgentMemory(store).system_prompt_section("")
    assert done.stdout == context_output("SessionStart", expected)
    assert f"{key} [" in expected


def test_session_start_on_an_empty_project(project: Path) -> None:
    done = hook(fixture("session_start", project), project)
    assert (done.returncode, done.stderr) == (0, "")
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("Check memory first. Before taking ANY action, use memory_search")
    assert "session:started [" in context
    assert set(state(project)) == {"session:started", "session:config"}


# ----- UserPromptSubmit and Stop ---------------------------------------------------------


def test_prompt_without_a_match_prints_nothing_and_keeps_the_prompt(project: Path) -> None:
    before = seeded(project)
    payload = fixture("user_prompt_submit", project, prompt="Please tidy the Makefile")
    quiet(hook(payload, project))
    assert state(project) == before  # the prompt is not a memory entry
    files = list(turns_dir(project).iterdir())
    assert [f.name for f in files] == [session_file_name("abc123")]
    assert files[0].read_text() == "Please tidy the Makefile"
    assert stat.S_IMODE(files[0].stat().st_mode) == 0o600
    assert stat.S_IMODE(turns_dir(project).stat().st_mode) == 0o700


def test_prompt_with_a_match_prints_the_focused_block(project: Path) -> None:
    before = seeded(project)
    payload = fixture("user_prompt_submit", project)  # "... the users endpoint return 500 ..."
    done = hook(payload, project)
    assert (done.returncode, done.stderr) == (0, "")
    store = store_of(project)
    assert done.stdout == context_output(
        "UserPromptSubmit", store.render(payload["prompt"], max_tokens=200)
    )
    assert "error:users" in done.stdout
    assert state(project) == before


@pytest.mark.parametrize(
    ("value", "prompt", "printed"),
    [
        ("the cache is warm", "cache please", True),  # a term of the entry
        ("cache-warming done", "Cache?", True),  # lowered; '-' cuts pieces
        ("the tests passed", "testing", True),  # both stem to "test"
        ("東京で会議", "会議は", True),  # CJK runs as pairs of characters
        ("the precache is warm", "cache please", False),  # a term is a whole word
        ("the cache is warm", "the and that with", False),  # stopwords only
        ("ca is warm", "ca", True),  # words of one or two characters count
        ("the cache is warm", "ca/che", False),  # pieces "ca" and "che": neither a term
    ],
)
def test_prompt_match_follows_the_focus_rule(
    project: Path, value: str, prompt: str, printed: bool
) -> None:
    store = store_of(project)
    store.save("note:x", value, type="note")
    store.close()
    done = hook(fixture("user_prompt_submit", project, prompt=prompt), project)
    assert (done.returncode, done.stderr) == (0, "")
    assert bool(done.stdout) is printed


def test_stop_saves_the_turn_with_its_prompt(project: Path) -> None:
    quiet(hook(fixture("user_prompt_submit", project, prompt="Fix the users handler"), project))
    quiet(hook(fixture("stop", project), project))
    store = store_of(project)
    turn = store.get("turn:last").value
    assert "| input: Fix the users handler | response: Fixed the missing-user check" in turn
    assert store.get("api:missing-user").value == (
        "the users handler answers 404 for a missing user"
    )
    assert store.get("last_action").value == "the missing-user check in the users handler"
    assert store.get("last_files").value == "src/api/handler.ts, src/api/users.ts"
    assert list(turns_dir(project).iterdir()) == []  # the prompt is cleaned up


def test_two_sessions_do_not_mix_their_turns(project: Path) -> None:
    prompt = fixture("user_prompt_submit", project)
    quiet(hook({**prompt, "session_id": "one", "prompt": "first session prompt"}, project))
    quiet(hook({**prompt, "session_id": "two", "prompt": "second session prompt"}, project))
    stop = fixture("stop", project)
    quiet(hook({**stop, "session_id": "one", "last_assistant_message": "reply one"}, project))
    assert (
        store_of(project)
        .get("turn:last")
        .value.endswith("| input: first session prompt | response: reply one")
    )
    quiet(hook({**stop, "session_id": "two", "last_assistant_message": "reply two"}, project))
    assert (
        store_of(project)
        .get("turn:last")
        .value.endswith("| input: second session prompt | response: reply two")
    )


def test_stop_without_a_prompt_saves_the_reply(project: Path) -> None:
    quiet(hook(fixture("stop", project, last_assistant_message="STATUS: green"), project))
    store = store_of(project)
    assert store.get("turn:last").value.endswith("| input:  | response: STATUS: green")
    assert store.get("status").value == "green"


def test_stop_reads_the_reply_from_the_transcript_when_the_payload_lacks_it(
    project: Path,
) -> None:
    stop = fixture("stop", project, transcript_path=str(FIXTURES / "transcript.jsonl"))
    del stop["last_assistant_message"]
    quiet(hook(stop, project))
    store = store_of(project)
    assert store.get("turn:last").value.endswith(
        "| response: Fixed the missing-user check in the users handler."
        "\nSTATUS: handler answers 404"
    )
    assert store.get("status").value == "handler answers 404"


def test_stop_without_any_reply_changes_nothing_but_drops_the_prompt(project: Path) -> None:
    before = seeded(project)
    quiet(hook(fixture("user_prompt_submit", project, prompt="tidy up"), project))
    stop = fixture("stop", project, transcript_path=str(project / "missing.jsonl"))
    del stop["last_assistant_message"]
    assert "last_assistant_message" in undisturbing(hook(stop, project))
    assert state(project) == before
    assert list(turns_dir(project).iterdir()) == []


def test_prompts_are_private_bounded_and_named_safely(tmp_path: Path) -> None:
    turns = TurnPrompts(tmp_path / "a" / "b" / "turns")
    turns.remember("../../escape", "é" * MAX_PROMPT_BYTES)
    (kept,) = (tmp_path / "a" / "b" / "turns").iterdir()
    assert kept.name == b"../../escape".hex() + ".prompt"
    assert len(kept.read_bytes()) <= MAX_PROMPT_BYTES
    for directory in (tmp_path / "a", tmp_path / "a" / "b", kept.parent):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert turns.take("../../escape") == "é" * (MAX_PROMPT_BYTES // 2)
    assert turns.take("../../escape") is None
    with pytest.raises(ValueError, match="longer than"):
        session_file_name("x" * 121)


def test_stale_prompts_are_pruned(tmp_path: Path) -> None:
    turns = TurnPrompts(tmp_path / "turns")
    turns.remember("old", "an interrupted turn")
    turns.remember("new", "a current turn")
    old = tmp_path / "turns" / session_file_name("old")
    os.utime(old, (1_000_000, 1_000_000))
    assert turns.prune() == 1
    assert turns.take("old") is None
    assert turns.take("new") == "a current turn"


# ----- PostToolUse -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "key", "value"),
    [
        (
            "post_tool_use_bash",
            "tool:Bash:tests__41_passed__1_failed",
            "Tests: 41 passed, 1 failed\nFAIL src/api/users.test.ts\nnpm ERR! Test failed.",
        ),
        ("post_tool_use_write", "tool:Write:created_src_api_users_ts", "Created src/api/users.ts"),
        ("post_tool_use_edit", "tool:Edit:edited_src_api_handler_ts", "Edited src/api/handler.ts"),
        (
            "post_tool_use_web_search",
            "tool:WebSearch:redb_migration_guide",
            "redb migration guide\n"
            "- redb: upgrading between file formats https://example.com/redb/upgrade\n"
            "- redb changelog https://example.com/redb/changelog\n"
            "The upgrade guide says to compact the database before switching versions.",
        ),
        (
            "post_tool_use_web_fetch",
            "tool:WebFetch:https___example_com_api",
            "https://example.com/api\nThe API has two endpoints: GET /users and POST /users.",
        ),
    ],
)
def test_tools_that_write_run_or_search_are_captured(
    project: Path, name: str, key: str, value: str
) -> None:
    quiet(hook(fixture(name, project), project))
    entry = store_of(project).get(key)
    assert entry is not None, state(project)
    assert (entry.value, entry.type) == (value, "tool_result")


def test_a_write_records_the_file(project: Path) -> None:
    quiet(hook(fixture("post_tool_use_write", project), project))
    store = store_of(project)
    assert store.get("last_files").value == "src/api/users.ts"
    assert store.get("last_action").value == "src/api/users.ts"


@pytest.mark.parametrize(
    ("name", "tool"),
    [
        ("post_tool_use_read", None),
        ("post_tool_use_grep", None),
        ("post_tool_use_bash", "Glob"),
        ("post_tool_use_bash", "LS"),
        ("post_tool_use_bash", "TodoWrite"),
        ("post_tool_use_mcp", None),  # an MCP tool not on the capture list
    ],
)
def test_read_only_tools_are_not_captured(project: Path, name: str, tool: str | None) -> None:
    # Read's file holds a marker and Grep's output an action sentence: a
    # captured result would produce entries.
    payload = fixture(name, project, **({} if tool is None else {"tool_name": tool}))
    quiet(hook(payload, project))
    assert not membolt.project_store_path(project).exists()  # not even opened


def test_an_mcp_tool_on_the_capture_list_is_captured(project: Path) -> None:
    payload = fixture("post_tool_use_mcp", project)
    quiet(hook(payload, project, "--capture", "mcp__github__create_issue"))
    entry = store_of(project).get("tool:mcp__github__create_issue:created_ticket_42__users_endpo")
    assert entry is not None, state(project)
    assert entry.value == "Created ticket 42: Users endpoint returns 500"


def test_memory_tools_over_mcp_are_never_captured(project: Path) -> None:
    payload = fixture(
        "post_tool_use_mcp",
        project,
        tool_name="mcp__membolt__memory_save",
        tool_response=[{"type": "text", "text": 'Saved memory entry "x" (1 bytes)'}],
    )
    quiet(hook(payload, project, "--capture", "mcp__membolt__memory_save"))
    assert not membolt.project_store_path(project).exists()


def test_result_text_of_other_shapes() -> None:
    assert result_text("Bash", {}, {"stdout": "", "stderr": ""}, "/p") == ""
    assert result_text("Bash", {}, {"stdout": "x", "interrupted": True}, "/p") == "x\n(interrupted)"
    assert result_text("Bash", {}, "plain text output", "/p") == "plain text output"
    assert result_text("Write", {"file_path": "/p/a.py"}, {"type": "update"}, "/p") == (
        "Updated a.py"
    )
    assert result_text("mcp__x__y", {}, {"content": [{"type": "text", "text": "hi"}]}, "/p") == (
        "hi"
    )
    assert result_text("mcp__x__y", {}, {"n": 1}, "/p") == '{"n":1}'
    assert result_text(
        "NotebookEdit", {}, {"notebook_path": "/p/n.ipynb", "error": "bad"}, "/p"
    ) == ("bad (n.ipynb)")
    assert project_path("/p/src/a.py", "/p") == "src/a.py"
    assert project_path("/other/a.py", "/p") == "/other/a.py"
    assert project_path("/pp/a.py", "/p") == "/pp/a.py"


# ----- PostCompact and other events -------------------------------------------------------


def test_post_compact_captures_the_summary(project: Path) -> None:
    quiet(hook(fixture("post_compact", project), project))
    store = store_of(project)
    assert store.get("checkpoint:summary").value.startswith(
        "Goal: Fix the users endpoint after the redb migration. | Progress: Handler returns 404"
    )
    assert store.get("error_codes").value == "missing users give 404, not 500"
    assert store.get("error_codes").type == "decision"
    assert store.get("ci").type == "context"


@pytest.mark.parametrize("event", ["SessionEnd", "Notification", "PreToolUse", "SubagentStop"])
def test_other_events_do_nothing(project: Path, event: str) -> None:
    quiet(hook(fixture("session_end", project, hook_event_name=event), project))
    assert not membolt.project_store_path(project).exists()


# ----- a hook never disturbs the session --------------------------------------------------


def bad_inputs(project: Path) -> Iterator[tuple[str, dict[str, Any] | bytes]]:
    yield "not JSON", b"{not json"
    yield "empty", b""
    yield "not UTF-8", b"\xff\xfe\x00"
    yield "an array", b"[1, 2]"
    yield "a string", b'"SessionStart"'
    yield "too deep", b"[" * 100_000 + b"]" * 100_000
    yield "no event", {"session_id": "abc123", "cwd": str(project)}
    yield "event not a string", {"hook_event_name": 7, "cwd": str(project)}
    start = fixture("session_start", project)
    yield "no cwd", {k: v for k, v in start.items() if k != "cwd"}
    yield "cwd not a string", {**start, "cwd": ["a"]}
    yield "empty cwd", {**start, "cwd": ""}
    yield "source not a string", {**start, "source": 1}
    prompt = fixture("user_prompt_submit", project)
    yield "no prompt", {k: v for k, v in prompt.items() if k != "prompt"}
    yield "no session", {k: v for k, v in prompt.items() if k != "session_id"}
    yield "session too long", {**prompt, "session_id": "s" * 500}
    tool = fixture("post_tool_use_bash", project)
    yield "no tool name", {k: v for k, v in tool.items() if k != "tool_name"}
    yield "no tool response", {k: v for k, v in tool.items() if k != "tool_response"}
    yield "summary not a string", {**fixture("post_compact", project), "compact_summary": None}
    stop = fixture("stop", project)
    yield "stop without session", {k: v for k, v in stop.items() if k != "session_id"}


def test_bad_input_never_disturbs_the_session(project: Path) -> None:
    before = seeded(project)
    for case, payload in bad_inputs(project):
        line = undisturbing(hook(payload, project))
        assert len(line) <= 520, case
        assert state(project) == before, case
    assert not turns_dir(project).exists()


def holder(path: Path) -> subprocess.Popen[str]:
    script = textwrap.dedent(
        """
        import sys, time, membolt
        store = membolt.MemoryStore(sys.argv[1])
        with store.hold():
            print("held", flush=True)
            sys.stdin.readline()
        """
    )
    child = subprocess.Popen(
        [sys.executable, "-c", script, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline() == "held\n"
    return child


def test_a_busy_store_never_disturbs_the_session(project: Path) -> None:
    before = seeded(project)
    child = holder(membolt.project_store_path(project))
    try:
        for name in ("session_start", "user_prompt_submit", "post_tool_use_bash", "post_compact"):
            line = undisturbing(hook(fixture(name, project), project, "--timeout", "0.3"))
            assert "StoreBusyError" in line, name
            if name == "session_start":  # no render after the failed write (a second wait)
                assert "start_session could not save" in line
        # Stop takes the prompt kept above, then cannot save the turn.
        line = undisturbing(hook(fixture("stop", project), project, "--timeout", "0.3"))
        assert "after_turn" in line
        assert "StoreBusyError" in line
        quiet(hook(fixture("post_tool_use_read", project), project, "--timeout", "0.3"))
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=60)
    assert state(project) == before


def test_a_damaged_store_never_disturbs_the_session(project: Path) -> None:
    path = membolt.project_store_path(project)
    path.parent.mkdir(parents=True, mode=0o700)
    path.write_bytes(b"this is not a redb file" * 100)
    damaged = path.read_bytes()
    for name in ("session_start", "user_prompt_submit", "post_tool_use_write", "stop"):
        line = undisturbing(hook(fixture(name, project), project))
        assert "CorruptStoreError" in line, name
    assert path.read_bytes() == damaged


def test_an_unwritable_turns_directory_costs_only_the_turn_record(project: Path) -> None:
    seeded(project)
    turns_dir(project).write_text("a file where the directory should be")
    done = hook(fixture("user_prompt_submit", project), project)
    assert done.returncode == 0
    assert len(done.stderr.splitlines()) == 1
    assert "error:users" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    # Stop cannot read a prompt there: it saves the turn without one.
    assert "Error" in undisturbing(hook(fixture("stop", project), project))
    store = store_of(project)
    assert "| input:  | response: Fixed the missing-user check" in store.get("turn:last").value
    assert store.get("api:missing-user") is not None


def test_db_option_chooses_the_store(project: Path, tmp_path: Path) -> None:
    db = tmp_path / "elsewhere" / "memory.redb"
    quiet(hook(fixture("post_tool_use_write", project), project, "--db", str(db)))
    assert not membolt.project_store_path(project).exists()
    store = membolt.MemoryStore(db)
    assert store.get("tool:Write:created_src_api_users_ts") is not None


def test_the_hook_path_imports_only_what_the_event_needs(project: Path) -> None:
    seeded(project)
    script = textwrap.dedent(
        """
        import io, sys
        sys.argv = ["membolt", "hook", "claude-code"]
        from membolt.cli import main
        main()
        print(sorted(m for m in sys.modules if m.startswith("membolt")), file=sys.stderr)
        """
    )
    for name, absent in (
        ("post_tool_use_read", {"membolt.agent", "membolt.extract", "membolt.claude_code.turns"}),
        ("user_prompt_submit", {"membolt.agent", "membolt.extract", "membolt.tools"}),
    ):
        done = subprocess.run(
            [sys.executable, "-c", script],
            input=json.dumps(fixture(name, project)),
            capture_output=True,
            text=True,
            cwd=project,
            check=True,
        )
        loaded = set(json.loads(done.stderr.splitlines()[-1].replace("'", '"')))
        assert "membolt.claude_code.hook" in loaded, loaded
        assert not loaded & absent, (name, loaded)


# ----- the focus, and the ceiling on what a hook prints ------------------------------------

WORDS = ["cache", "Cache", "precache", "redb", "the", "and", "ab", "users", "user", "x1", "K\u212a"]
TEXT = st.lists(
    st.sampled_from(
        [*WORDS, " ", "-", ".", "(", "'", "\x1c", "\n", "é", "İ", "/", "_", "123", "ß", "\u2003"]
    ),
    max_size=8,
).map("".join)
# Keys are shown as saved only without control characters and line breaks.
KEY_TEXT = st.lists(st.sampled_from([*WORDS, "-", ".", "'", "é", "/", "_", "123"]), max_size=4).map(
    "".join
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(entries=st.lists(st.tuples(KEY_TEXT, TEXT), max_size=6), prompt=TEXT)
def test_the_prompt_block_leads_with_the_best_match(
    tmp_path_factory: pytest.TempPathFactory, entries: list[tuple[str, str]], prompt: str
) -> None:
    """The hook offers a block when the ranked search finds an entry (§15.3);
    that entry is then the block's first focus match, so it is shown (short
    values: the budget holds it)."""
    store = membolt.MemoryStore(tmp_path_factory.mktemp("focus") / "memory.redb")
    for n, (key, value) in enumerate(entries):
        store.save(f"n{n}-{key}", value, type="note")
    store.save("~", "", type="note")
    hits = store.search_words(prompt, limit=1)
    block = store.render(prompt, max_tokens=200)
    shown = [line.split(" [", 1)[0] for line in block.splitlines()[3:-1]]
    if hits:
        assert hits[0].key in shown
    else:
        assert store.search_words(prompt) == []
    store.close()


def test_the_ceiling_halves_the_budget_then_cuts_at_a_line_break() -> None:
    asked: list[int] = []

    def lines_of(budget: int, width: int) -> str:
        asked.append(budget)
        return "\n".join(["x" * width] * (budget + 60))

    # 99-character lines: at most 100 fit (a budget of 40); 31 is the first half that does.
    assert within_ceiling(lambda b: lines_of(b, 99), 500) == lines_of(31, 99)
    assert asked[:5] == [500, 250, 125, 62, 31]
    asked.clear()
    # 199-character lines: even 60 of them are too many; cut after the 50th.
    text = within_ceiling(lambda b: lines_of(b, 199), 7)
    assert asked == [7, 3, 1, 0]
    assert text == "\n".join(["x" * 199] * 50)
    assert len(text) <= MAX_CONTEXT_CHARS
    # One line longer than the ceiling: cut at the ceiling.
    assert within_ceiling(lambda b: "y" * 20_000, 0) == "y" * MAX_CONTEXT_CHARS


def test_hooks_print_at_most_the_ceiling_on_a_large_store(project: Path) -> None:
    """100k entries whose keys fill the key list past 10,000 characters."""
    store = store_of(project)
    items = [("progress:task", "step 1 of the users migration", "progress")]
    items += [
        (f"error:e{n:06d}-" + "x" * 230, f"failure {n} in the users handler", "error")
        for n in range(100_000)
    ]
    store.save_many(items)
    store.close()
    for name, fields in (
        ("session_start", {}),
        ("user_prompt_submit", {"prompt": "why does the users handler fail?"}),
    ):
        done = hook(fixture(name, project, **fields), project)
        assert (done.returncode, done.stderr) == (0, "")
        context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
        assert 0 < len(context) <= MAX_CONTEXT_CHARS, name
        assert context.endswith(">") or "\n" in context


# ----- install and uninstall ---------------------------------------------------------------


def membolt_cli(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "membolt.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, **env},
        timeout=120,
        check=False,
    )


def installs(*args: str, cwd: Path, **env: str) -> str:
    done = membolt_cli(*args, cwd=cwd, **env)
    assert (done.returncode, done.stderr) == (0, ""), done
    return done.stdout


def refused(*args: str, cwd: Path, **env: str) -> str:
    done = membolt_cli(*args, cwd=cwd, **env)
    assert done.returncode == 1, done
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("membolt: error: ")
    return lines[0]


def read(path: Path) -> Any:
    return json.loads(path.read_text())


def files_in(directory: Path) -> set[str]:
    return {str(p.relative_to(directory)) for p in directory.rglob("*")}


def contents(directory: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(directory)): p.read_bytes() for p in directory.rglob("*") if p.is_file()
    }


def our_handlers(settings: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    return {
        event: [h for g in groups for h in g.get("hooks", []) if install.is_membolt_hook(h)]
        for event, groups in settings.get("hooks", {}).items()
    }


def test_install_writes_the_hooks_and_the_server(project: Path) -> None:
    out = installs("install", "claude-code", cwd=project)
    assert "added membolt's hooks" in out
    settings = read(project / ".claude" / "settings.json")
    assert list(settings["hooks"]) == list(install.HOOK_EVENTS)
    command = settings["hooks"]["Stop"][0]["hooks"][0]["command"]
    assert shlex.split(command) == [
        str(Path(sys.executable).parent / "membolt"),
        "hook",
        "claude-code",
    ]
    for event, groups in settings["hooks"].items():
        (group,) = groups
        assert group["hooks"] == [{"type": "command", "command": command, "timeout": 15}]
        if event == "PostToolUse":
            assert group["matcher"] == (
                "^(Bash|Edit|MultiEdit|NotebookEdit|WebFetch|WebSearch|Write)$"
            )
        else:
            assert "matcher" not in group
    assert read(project / ".mcp.json") == {
        "mcpServers": {
            "membolt": {
                "type": "stdio",
                "command": str(Path(sys.executable).parent / "membolt"),
                "args": ["mcp", "--cwd", str(project)],
            }
        }
    }
    assert files_in(project) == {".claude", ".claude/settings.json", ".mcp.json"}


def test_the_installed_command_runs_the_hook(project: Path) -> None:
    installs("install", "claude-code", "--capture", "mcp__github__create_issue", cwd=project)
    hooks = read(project / ".claude" / "settings.json")["hooks"]
    # A module of the project named like membolt's package must not be run
    # instead of membolt (hooks run in the project's directory).
    (project / "membolt.py").write_text("raise SystemExit('the project shadowed membolt')\n")
    post_tool = hooks["PostToolUse"][0]
    assert "mcp__github__create_issue" in post_tool["matcher"]
    done = subprocess.run(
        ["/bin/sh", "-c", post_tool["hooks"][0]["command"]],
        input=json.dumps(fixture("post_tool_use_mcp", project)),
        capture_output=True,
        text=True,
        cwd=project,
        check=False,
    )
    quiet(done)
    assert "tool:mcp__github__create_issue:created_ticket_42__users_endpo" in state(project)


def test_install_twice_is_install_once(project: Path) -> None:
    installs("install", "claude-code", cwd=project)
    # A group the user adds after membolt's stays after it.
    settings_path = project / ".claude" / "settings.json"
    settings = read(settings_path)
    settings["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "say done"}]})
    install.write_json_object(settings_path, settings)
    first = contents(project)
    out = installs("install", "claude-code", cwd=project)
    assert out.count("already") == 2, out
    assert contents(project) == first


OTHER_SETTINGS: dict[str, Any] = {
    "permissions": {"allow": ["Bash(npm test)"]},
    "env": {"FOO": "bar"},
    "hooks": {
        "PostToolUse": [
            {"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "prettier -w ."}]}
        ],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done", "timeout": 5}]}],
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard"}]}],
    },
}
OTHER_SERVERS: dict[str, Any] = {
    "mcpServers": {"github": {"command": "npx", "args": ["-y", "github-mcp"], "env": {}}},
    "other": 1,
}


def test_install_keeps_every_other_setting_and_uninstall_restores_them(project: Path) -> None:
    settings_path = project / ".claude" / "settings.json"
    settings_path.parent.mkdir()
    settings_path.write_text(json.dumps(OTHER_SETTINGS, indent=2) + "\n")
    (project / ".mcp.json").write_text(json.dumps(OTHER_SERVERS, indent=2) + "\n")
    installs("install", "claude-code", cwd=project)
    settings = read(settings_path)
    assert settings["permissions"] == OTHER_SETTINGS["permissions"]
    assert settings["env"] == OTHER_SETTINGS["env"]
    assert settings["hooks"]["PreToolUse"] == OTHER_SETTINGS["hooks"]["PreToolUse"]
    assert settings["hooks"]["PostToolUse"][0] == OTHER_SETTINGS["hooks"]["PostToolUse"][0]
    assert settings["hooks"]["Stop"][0] == OTHER_SETTINGS["hooks"]["Stop"][0]
    assert {event: len(h) for event, h in our_handlers(settings).items()} == {
        "PostToolUse": 1,
        "Stop": 1,
        "PreToolUse": 0,
        "SessionStart": 1,
        "UserPromptSubmit": 1,
        "PostCompact": 1,
    }
    servers = read(project / ".mcp.json")
    assert servers["other"] == 1
    assert servers["mcpServers"]["github"] == OTHER_SERVERS["mcpServers"]["github"]
    out = installs("uninstall", "claude-code", cwd=project)
    assert "removed membolt's hooks" in out
    assert read(settings_path) == OTHER_SETTINGS
    assert read(project / ".mcp.json") == OTHER_SERVERS
    assert settings_path.read_text() == json.dumps(OTHER_SETTINGS, indent=2) + "\n"


def test_uninstall_removes_exactly_what_install_added(project: Path) -> None:
    installs("install", "claude-code", cwd=project)
    settings_path = project / ".claude" / "settings.json"
    settings = read(settings_path)
    # The user adds a handler of their own to membolt's Stop group.
    settings["hooks"]["Stop"][0]["hooks"].append({"type": "command", "command": "say done"})
    settings_path.write_text(json.dumps(settings))
    installs("uninstall", "claude-code", cwd=project)
    assert read(settings_path) == {
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}
    }
    assert not (project / ".mcp.json").exists()  # it held only membolt's server
    out = installs("uninstall", "claude-code", cwd=project)
    assert "membolt's hooks not found in" in out
    assert read(settings_path) == {
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}
    }


def test_uninstall_where_nothing_was_installed_writes_nothing(project: Path) -> None:
    assert installs("uninstall", "claude-code", cwd=project).count("not found in") == 2
    assert files_in(project) == set()


def test_install_then_uninstall_leaves_a_fresh_project_as_it_was(project: Path) -> None:
    installs("install", "claude-code", cwd=project)
    installs("uninstall", "claude-code", cwd=project)
    assert files_in(project) == {".claude"}


@pytest.mark.parametrize(
    ("settings", "servers", "message"),
    [
        ("{not json", None, "is not valid JSON"),
        ("[1, 2]", None, "holds a JSON list, not an object"),
        ('"hooks"', None, "holds a JSON str, not an object"),
        ("", None, "is not valid JSON"),
        ('{"hooks": []}', None, '"hooks" is not a JSON object'),
        ('{"hooks": {"Stop": {}}}', None, '"hooks"."Stop" is not a JSON array'),
        ("{}", "{oops", "is not valid JSON"),
        ("{}", '{"mcpServers": []}', '"mcpServers" is not a JSON object'),
        ("{}", '{"mcpServers": {"membolt": {"command": "other"}}}', "does not run membolt"),
    ],
)
def test_install_refuses_a_file_it_cannot_merge_and_touches_nothing(
    project: Path, settings: str, servers: str | None, message: str
) -> None:
    settings_path = project / ".claude" / "settings.json"
    settings_path.parent.mkdir()
    settings_path.write_text(settings)
    if servers is not None:
        (project / ".mcp.json").write_text(servers)
    before = contents(project)
    assert message in refused("install", "claude-code", cwd=project)
    assert contents(project) == before


def test_uninstall_refuses_invalid_json_too(project: Path) -> None:
    (project / ".mcp.json").write_text("{broken")
    assert "is not valid JSON" in refused("uninstall", "claude-code", cwd=project)
    assert (project / ".mcp.json").read_text() == "{broken"


def test_writes_are_atomic_and_keep_the_mode_and_links(project: Path, tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "settings.json"
    real.parent.mkdir()
    real.write_text('{"model": "opus"}')
    real.chmod(0o640)
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").symlink_to(real)
    installs("install", "claude-code", cwd=project)
    assert (project / ".claude" / "settings.json").is_symlink()
    assert read(real)["model"] == "opus"
    assert "hooks" in read(real)
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    installs("uninstall", "claude-code", cwd=project)
    assert read(real) == {"model": "opus"}
    assert stat.S_IMODE(real.stat().st_mode) == 0o640
    leftovers = [p for p in (*real.parent.iterdir(), *project.rglob("*")) if p.suffix == ".tmp"]
    assert leftovers == []


def test_user_scope(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    state_file = home / ".claude.json"
    state_file.write_text(json.dumps({"numStartups": 3, "projects": {"/x": {}}}))
    installs("install", "claude-code", "--scope", "user", cwd=project, HOME=str(home))
    settings = read(home / ".claude" / "settings.json")
    assert set(our_handlers(settings)) == set(install.HOOK_EVENTS)
    config = read(state_file)
    assert config["numStartups"] == 3
    assert config["projects"] == {"/x": {}}
    assert config["mcpServers"]["membolt"]["args"] == ["mcp"]  # the project Claude runs in
    assert not (project / ".claude").exists()
    installs("uninstall", "claude-code", "--scope", "user", cwd=project, HOME=str(home))
    assert read(state_file) == {"numStartups": 3, "projects": {"/x": {}}}
    assert not (home / ".claude" / "settings.json").exists()


def test_user_scope_follows_claude_config_dir(project: Path, tmp_path: Path) -> None:
    config_dir = tmp_path / "claude-config"
    installs(
        "install", "claude-code", "--scope", "user", cwd=project, CLAUDE_CONFIG_DIR=str(config_dir)
    )
    assert files_in(config_dir) == {"settings.json", ".claude.json"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scope", "user", "--dir", "."], "--dir names a project"),
        (["--dir", "/no/such/dir"], "is not a directory"),
        (["--capture", "bad name"], "is not a tool name"),
        (["--db", "x.redb"], "takes --dir DIR, not --db or --cwd"),
    ],
)
def test_install_rejects_bad_options(project: Path, args: list[str], message: str) -> None:
    assert message in refused("install", "claude-code", *args, cwd=project)
    assert files_in(project) == set()


def test_install_into_another_directory(project: Path, tmp_path: Path) -> None:
    installs("install", "claude-code", "--dir", str(project), cwd=tmp_path)
    assert read(project / ".mcp.json")["mcpServers"]["membolt"]["args"][-1] == str(project)


# ----- the package's lazy imports keep its public names --------------------------------------


def test_membolt_names_are_all_there_and_loaded_on_use() -> None:
    script = textwrap.dedent(
        """
        import sys, membolt
        eager = sorted(m for m in sys.modules if m.startswith("membolt"))
        names = {name: getattr(membolt, name) for name in membolt.__all__}
        import membolt.store
        print(eager, membolt.classify("tool:x"), set(membolt.__all__) <= set(dir(membolt)))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == (
        "['membolt', 'membolt._core', 'membolt.classify', 'membolt.errors', 'membolt.keys'] "
        "tool_result True"
    )
    assert set(membolt.__all__) == {*membolt._LAZY, "classify", "parent_type"}
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = membolt.nope  # type: ignore[attr-defined]


# ----- a team's store on PostgreSQL ---------------------------------------------------------


def test_the_hooks_use_the_teams_database_when_one_is_configured(
    project: Path, postgres_url: str
) -> None:
    # $MEMBOLT_DATABASE_URL and $MEMBOLT_PROJECT choose the store as they do
    # for every command (§12): a turn lands in the team's project.
    team = f"team-{uuid.uuid4().hex}"
    env = {"MEMBOLT_DATABASE_URL": postgres_url, "MEMBOLT_PROJECT": team}
    quiet(hook(fixture("user_prompt_submit", project, prompt="Fix the login bug"), project, **env))
    reply = "Fixed the session cookie expiry.\n[MEMORY: decision:cookies] expire after 1 day"
    quiet(hook(fixture("stop", project, last_assistant_message=reply), project, **env))
    store = membolt.MemoryStore(postgres_url, project=team)
    assert store.get("decision:cookies").value == "expire after 1 day"  # type: ignore[union-attr]
    assert store.get("last_action").value == "the session cookie expiry"  # type: ignore[union-attr]
    assert "decision:cookies" not in state(project)  # nothing in the local file
