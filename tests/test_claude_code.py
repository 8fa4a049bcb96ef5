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

import hashlib
import json
import os
import re
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
from membolt.claude_code.project import PROJECT_DIR_VARIABLE
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
    """``membolt hook claude-code`` run as Claude Code runs it. The test's own
    ``$CLAUDE_PROJECT_DIR`` (when it runs inside Claude Code) is not passed on:
    the tests name the project through the payload's ``cwd``."""
    if isinstance(payload, dict):
        data = json.dumps(payload).encode()
    else:
        data = payload.encode() if isinstance(payload, str) else payload
    base = {k: v for k, v in os.environ.items() if k != PROJECT_DIR_VARIABLE}
    done = subprocess.run(
        [*HOOK, *args],
        input=data,
        capture_output=True,
        cwd=project,
        env={**base, **env},
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

ISO = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"


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
    # §13.1: the source, the model and the time; not the project path.
    value = store.get(key).value
    assert re.fullmatch(rf"source {source}, model claude-sonnet-4-6, at {ISO}", value), value
    assert "session:config" not in store  # nothing to say: not saved
    # Printed after the writes, at the default budget: the section shows them.
    expected = AgentMemory(store).system_prompt_section("", 500)
    assert done.stdout == context_output("SessionStart", expected)
    assert f"{key} [" in expected


def test_session_start_on_an_empty_project(project: Path) -> None:
    payload = fixture("session_start", project)
    del payload["model"]
    done = hook(payload, project)
    assert (done.returncode, done.stderr) == (0, "")
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert context.startswith("Check memory first. Before taking ANY action, use memory_search")
    assert "session:started [" in context
    assert set(state(project)) == {"session:started"}
    assert re.fullmatch(rf"source startup, at {ISO}", state(project)["session:started"][0])


def test_session_start_drops_an_empty_config_and_keeps_a_real_one(project: Path) -> None:
    store = store_of(project)
    store.save("session:config", "{}")  # what a 0.2 hook saved at every start
    store.close()
    quiet_start = hook(fixture("session_start", project), project)
    assert quiet_start.returncode == 0
    assert "session:config" not in state(project)
    store = store_of(project)
    store.save("session:config", '{"model": "opus"}')
    store.close()
    hook(fixture("session_start", project), project)
    assert state(project)["session:config"][0] == '{"model": "opus"}'


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
    # §13.1: the reply's first sentence, verb kept; paths come from edits only.
    assert store.get("last_action").value == "Fixed the missing-user check in the users handler"
    assert store.get("last_files") is None
    assert list(turns_dir(project).iterdir()) == []  # the prompt is cleaned up


@pytest.mark.parametrize(
    ("reply", "action"),
    [
        (
            "I fixed add() in src/calc.py: it subtracted. All 4 tests pass now.",
            "Fixed add() in src/calc.py: it subtracted",
        ),
        (
            "**Updated** README.md with the install steps!\nMore.",
            "Updated README.md with the install steps",
        ),
        ("- created tests/test_power.py", "Created tests/test_power.py"),
        ("Refactored " + "the parser " * 30, "Refactored " + ("the parser " * 30)[:189] + "..."),
        ("Looking at the failure first. Fixed the import.", None),  # not the first sentence
        ("I reset the cache.", None),  # "set" inside a word is no verb (F10)
        ("i fixed it", None),  # "I" as written
        ("Fixed", None),  # a verb with nothing after it
    ],
)
def test_last_action_is_the_first_sentence_of_the_reply(
    project: Path, reply: str, action: str | None
) -> None:
    store = store_of(project)
    store.save("last_action", "Deployed the previous release")
    store.close()
    quiet(hook(fixture("stop", project, last_assistant_message=reply), project))
    kept = state(project)["last_action"][0]
    assert kept == (action or "Deployed the previous release")
    assert len(kept.encode()) <= 203


def test_tool_output_sets_no_last_action_and_no_files(project: Path) -> None:
    bash = fixture("post_tool_use_bash", project)
    bash["tool_response"]["stdout"] = "Created src/generated.py\nEdited src/other.py"
    quiet(hook(bash, project))
    quiet(
        hook(
            fixture(
                "post_tool_use_web_fetch",
                project,
                tool_response={
                    "result": "Added rate limiting to the API. Updated docs/api.md",
                    "url": "https://x.org",
                },
            ),
            project,
        )
    )
    entries = state(project)
    assert "last_action" not in entries
    assert "last_files" not in entries


def test_the_two_turns_before_the_last_are_kept_with_their_time(project: Path) -> None:
    for n in range(1, 5):
        done = hook(fixture("user_prompt_submit", project, prompt=f"prompt {n}"), project)
        assert (done.returncode, done.stderr) == (0, ""), done  # may print a block
        quiet(hook(fixture("stop", project, last_assistant_message=f"reply {n}"), project))
    turns = {k: v for k, v in state(project).items() if k.startswith("turn:")}
    assert set(turns) == {"turn:last", "turn:prev-1", "turn:prev-2"}
    for key, n in (("turn:last", 4), ("turn:prev-1", 3), ("turn:prev-2", 2)):
        assert turns[key][0].endswith(f"| input: prompt {n} | response: reply {n}"), key
    # A turn moved back keeps the time it happened: older than the last turn.
    assert turns["turn:prev-2"][3] < turns["turn:prev-1"][3] < turns["turn:last"][3]
    store = store_of(project)
    newest = store.entries()
    newest.sort(key=lambda e: e.updated_at)
    assert newest[-1].key == "turn:last"


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


# ----- PostToolUse: Bash ----------------------------------------------------------------


def command_part(command: str, slug: str) -> str:
    """``<slug>-<h>`` of §13.1, the slug written out by hand from the §6.6 rule."""
    return f"{slug}-{hashlib.sha1(command.encode()).hexdigest()[:6]}"


def bash(project: Path, command: str, stdout: str = "", **response: Any) -> dict[str, Any]:
    payload = fixture("post_tool_use_bash", project)
    payload["tool_input"]["command"] = command
    payload["tool_response"] = {
        "stdout": stdout,
        "stderr": "",
        "interrupted": False,
        "isImage": False,
        **response,
    }
    return payload


def bash_failure(project: Path, command: str, error: str) -> dict[str, Any]:
    payload = fixture("post_tool_use_failure_bash", project)
    payload["tool_input"]["command"] = command
    payload["error"] = error
    return payload


def open_error(project: Path) -> str | None:
    """The key the block's map line names as the open error."""
    store = store_of(project)
    block = store.render("", 500)
    store.close()
    found = re.search(r"\| error: (\S+)", block.splitlines()[2])
    return found.group(1) if found else None


def test_bash_is_keyed_by_its_command(project: Path) -> None:
    quiet(hook(bash(project, "pytest -q", "3 passed in 0.02s"), project))
    quiet(hook(bash(project, "pytest -q tests/test_b.py", "3 passed in 0.02s"), project))
    first = f"tool:Bash:{command_part('pytest -q', 'pytest__q')}"
    second = f"tool:Bash:{command_part('pytest -q tests/test_b.py', 'pytest__q_tests_test_b_py')}"
    tools = {k: v[0] for k, v in state(project).items() if k.startswith("tool:")}
    assert tools == {first: "3 passed in 0.02s", second: "3 passed in 0.02s"}
    # A rerun updates its own entry.
    quiet(hook(bash(project, "pytest -q", "4 passed in 0.03s"), project))
    tools = {k: v[0] for k, v in state(project).items() if k.startswith("tool:")}
    assert tools == {first: "4 passed in 0.03s", second: "3 passed in 0.02s"}
    # The hash tells apart commands whose slugs agree (the first 30 bytes).
    long_a, long_b = "python -m pytest -q -k 'add or divide'", "python -m pytest -q -k 'power'"
    quiet(hook(bash(project, long_a, "ok"), project))
    quiet(hook(bash(project, long_b, "ok"), project))
    slugs = [k for k in state(project) if k.startswith("tool:Bash:python__m_pytest__q__k__")]
    assert len(slugs) == 2


def test_a_failure_leads_with_its_status_and_failure_lines(project: Path) -> None:
    payload = fixture("post_tool_use_failure_bash", project)
    quiet(hook(payload, project))
    part = command_part("python -m pytest tests/test_calc.py", "python__m_pytest_tests_test_ca")
    value = state(project)[f"tool:Bash:{part}"][0]
    # The traceback's noise comes first in the output; the value leads with
    # what failed, and is cut to 300 bytes (§6.6) as a whole.
    assert value.startswith(
        "exit 1\n"
        "FAILED tests/test_calc.py::test_divide - ZeroDivisionError: division by zero\n"
        "E       ZeroDivisionError: division by zero\n"
        "1 failed, 3 passed in 0.04s\n"
    ), value
    assert len(value.encode()) <= 303
    error, kind = state(project)[f"error:{part}"][:2]
    assert kind == "error"
    assert error == (
        "FAILED tests/test_calc.py::test_divide - ZeroDivisionError: division by zero\n"
        "E       ZeroDivisionError: division by zero\n"
        "1 failed, 3 passed in 0.04s"
    )
    assert open_error(project) == f"error:{part}"
    # `membolt search ZeroDivisionError` finds it.
    done = membolt_cli("search", "ZeroDivisionError", cwd=project)
    assert f"- error:{part}: FAILED" in done.stdout


def test_a_later_success_resolves_the_error_and_a_later_failure_reopens_it(
    project: Path,
) -> None:
    command = "python -m pytest -q"
    failed = "Exit code 1\nF...\nFAILED tests/test_calc.py::test_add - assert -1 == 5\n"
    failed += "1 failed, 3 passed in 0.02s"
    quiet(hook(bash_failure(project, command, failed), project))
    key = f"error:{command_part(command, 'python__m_pytest__q')}"
    assert open_error(project) == key
    quiet(hook(bash(project, command, "....\n4 passed in 0.01s\n"), project))
    assert state(project)[key][0] == (
        "resolved: 4 passed in 0.01s (was: FAILED tests/test_calc.py::test_add - assert -1 == 5)"
    )
    assert open_error(project) is None  # a resolved marker of §5.5
    # Another success leaves the resolution as it was.
    before = state(project)[key]
    quiet(hook(bash(project, command, "....\n4 passed in 0.01s\n"), project))
    assert state(project)[key] == before
    again = "Exit code 1\n...F\nFAILED tests/test_calc.py::test_power - assert 6 == 8\n"
    quiet(hook(bash_failure(project, command, again + "1 failed, 3 passed"), project))
    assert state(project)[key][0].startswith("FAILED tests/test_calc.py::test_power")
    assert open_error(project) == key


def test_the_open_error_is_the_newest_unresolved_one(project: Path) -> None:
    quiet(hook(bash_failure(project, "make lint", "Exit code 2\nerror: unused import"), project))
    quiet(hook(bash_failure(project, "make test", "Exit code 1\n1 failed"), project))
    assert open_error(project) == f"error:{command_part('make test', 'make_test')}"
    quiet(hook(bash(project, "make test", "12 passed"), project))
    assert open_error(project) == f"error:{command_part('make lint', 'make_lint')}"


@pytest.mark.parametrize(
    ("stdout", "failure"),
    [
        # A pipe exits 0, but the output says what failed.
        ("..F.\nFAILED t.py::test_x - assert 1 == 2\n1 failed, 3 passed in 0.1s", True),
        ("Traceback (most recent call last):\n  File \"x.py\", line 1\nKeyError: 'a'", True),
        ("src/a.py:3: error: Incompatible types\nFound 1 error in 1 file", True),
        ("error[E0308]: mismatched types\n --> src/main.rs:4:5", True),
        ("Tests:       1 failed, 41 passed, 42 total", True),
        ("12 passed, 1 skipped in 0.30s", False),
        # Source code that mentions errors is not a failure.
        ('def f():\n    """Raises:\n        ValueError: bad"""\n    except ValueError:', False),
        ("src/x.py:12:    except KeyError:\nsrc/y.py:3: raise TypeError(", False),
    ],
)
def test_what_counts_as_a_failure(project: Path, stdout: str, failure: bool) -> None:
    quiet(hook(bash(project, "run it", stdout), project))
    errors = [k for k in state(project) if k.startswith("error:")]
    assert errors == ([f"error:{command_part('run it', 'run_it')}"] if failure else [])


@pytest.mark.parametrize(
    ("error", "lines"),
    [
        # A linter's diagnostics, when no other line says what failed.
        (
            "Exit code 1\n# example.com/limiter\nlimiter.go:52:2: copylocks: Allow passes lock "
            "by value\nlimiter.go:60:1: unreachable code",
            "limiter.go:52:2: copylocks: Allow passes lock by value\n"
            "limiter.go:60:1: unreachable code",
        ),
        # Go: a panic, a data race; a bare FAIL says nothing more.
        (
            "Exit code 1\n--- FAIL: TestAllow (0.00s)\npanic: assignment to entry in nil map"
            "\n\tpanic: again\nFAIL\nFAIL\texample.com/limiter\t0.01s",
            "--- FAIL: TestAllow (0.00s)\nFAIL\texample.com/limiter\t0.01s\n"
            "panic: assignment to entry in nil map",
        ),
        # Nothing says more: the last line, then the status.
        ("Exit code 3\nbuilding\nstopped", "stopped\nexit 3"),
    ],
)
def test_the_lines_an_error_holds(project: Path, error: str, lines: str) -> None:
    quiet(hook(bash_failure(project, "check", error), project))
    assert state(project)[f"error:{command_part('check', 'check')}"][0] == lines


def test_a_reported_failure_never_resolves(project: Path) -> None:
    command = "make test"
    quiet(hook(bash_failure(project, command, "Exit code 1\nFAILED t.py::test_a"), project))
    quiet(hook(bash_failure(project, command, "Command timed out after 2m 0s"), project))
    key = f"error:{command_part(command, 'make_test')}"
    assert state(project)[key][0] == "Command timed out after 2m 0s"
    assert open_error(project) == key


def test_an_exit_code_field_is_the_status(project: Path) -> None:
    quiet(hook(bash(project, "make check", "checking...", exitCode=2), project))
    part = command_part("make check", "make_check")
    assert state(project)[f"tool:Bash:{part}"][0] == "exit 2\nchecking..."
    assert state(project)[f"error:{part}"][0] == "checking...\nexit 2"


def test_an_interrupted_run_says_so_and_resolves_nothing(project: Path) -> None:
    command = "pytest -q"
    quiet(hook(bash_failure(project, command, "Exit code 1\nFAILED t.py::test_x"), project))
    quiet(hook(bash(project, command, "....", interrupted=True), project))
    part = command_part(command, "pytest__q")
    assert state(project)[f"tool:Bash:{part}"][0] == "interrupted\n...."
    assert state(project)[f"error:{part}"][0] == "FAILED t.py::test_x"


def test_lines_of_command_output_make_no_entries_of_their_own(project: Path) -> None:
    stdout = "ERROR: tests/test_x.py not found\nSTATUS: red\n[MEMORY: ci:runner] pytest 8"
    quiet(hook(bash(project, "pytest tests/test_x.py", stdout), project))
    entries = state(project)
    assert "error" not in entries  # not a §6.2 KEY line
    assert "status" not in entries
    assert entries["ci:runner"][0] == "pytest 8"  # a marker a script prints is kept
    assert any(k.startswith("error:pytest_tests_test_x_py-") for k in entries)


# ----- PostToolUse: edits and the task list -----------------------------------------------


def test_an_edit_saves_the_change_and_the_file(project: Path) -> None:
    quiet(hook(fixture("post_tool_use_edit", project), project))
    entries = state(project)
    assert entries["file:src/api/handler.ts"][:2] == (
        "- if (!user) return 500 + if (!user) return 404",
        "file",
    )
    assert entries["last_files"][0] == "src/api/handler.ts"
    assert not [k for k in entries if k.startswith("tool:")]


@pytest.mark.parametrize(
    ("tool", "tool_input", "tool_response", "change"),
    [
        ("Write", {}, {"type": "create", "content": "a\nb\n\nc\n"}, "created, 4 lines"),
        (
            "Write",
            {},
            {
                "type": "update",
                "content": "x = 2\n",
                "structuredPatch": [
                    {
                        "oldStart": 1,
                        "oldLines": 2,
                        "newStart": 1,
                        "newLines": 2,
                        "lines": ["-", "-x = 1", " # keep", "+x = 2"],
                    }
                ],
            },
            "- x = 1 + x = 2",
        ),
        (
            "MultiEdit",
            {"edits": [{"old_string": "\n  retries = 3\n", "new_string": "  retries = 5"}]},
            {},
            "- retries = 3 + retries = 5",
        ),
        (
            "NotebookEdit",
            {"new_source": "\nimport numpy as np", "edit_mode": "insert"},
            {},
            "+ import numpy as np",
        ),
        ("NotebookEdit", {"cell_id": "c7", "edit_mode": "delete"}, {}, "- cell c7"),
        ("Edit", {"old_string": "   ", "new_string": "   "}, {}, "edited"),
    ],
)
def test_each_edit_tool_says_what_changed(
    project: Path,
    tool: str,
    tool_input: dict[str, Any],
    tool_response: dict[str, Any],
    change: str,
) -> None:
    path = str(project / "src" / "app.py")
    payload = fixture(
        "post_tool_use_write",
        project,
        tool_name=tool,
        tool_input={"file_path": path, **tool_input},
        tool_response={"filePath": path, **tool_response},
    )
    quiet(hook(payload, project))
    assert state(project)["file:src/app.py"][0] == change


def test_last_files_keeps_the_ten_latest_changes_newest_first(project: Path) -> None:
    for n in range(12):
        payload = fixture("post_tool_use_edit", project)
        payload["tool_response"]["filePath"] = str(project / f"f{n}.py")
        quiet(hook(payload, project))
    assert state(project)["last_files"][0] == ", ".join(f"f{n}.py" for n in range(11, 1, -1))
    payload = fixture("post_tool_use_edit", project)
    payload["tool_response"]["filePath"] = str(project / "f5.py")
    quiet(hook(payload, project))
    expected = ["f5.py", *(f"f{n}.py" for n in range(11, 1, -1) if n != 5)]
    assert state(project)["last_files"][0] == ", ".join(expected)
    # A file outside the project keeps its absolute path.
    payload["tool_response"]["filePath"] = "/etc/hosts"
    quiet(hook(payload, project))
    assert "file:/etc/hosts" in state(project)


def test_the_task_list_is_the_resume_point_while_work_remains(project: Path) -> None:
    quiet(hook(fixture("post_tool_use_todo_write", project), project))
    value, kind = state(project)["progress:todos"][:2]
    assert kind == "progress"
    assert value == (
        "in progress: Fix divide() by zero | pending: Fix power(); Commit the fixes | done: 1"
    )
    store = store_of(project)
    assert "| resume: progress:todos (" in store.render("", 500).splitlines()[2]
    store.close()
    payload = fixture("post_tool_use_todo_write", project)
    for item in payload["tool_response"]["newTodos"]:
        item["status"] = "completed"
    quiet(hook(payload, project))
    value = state(project)["progress:todos"][0]
    assert value.startswith("done: 4")  # §5.5: done, so no longer the resume point
    store = store_of(project)
    assert "resume:" not in store.render("", 500).splitlines()[2]
    store.close()


def test_the_task_list_keeps_the_plan_and_the_fixes_as_its_parents(project: Path) -> None:
    """The resume point's ancestry is kept first (§15.5): the task list's
    parents are the fixes made while it had work left (newest first, three
    at most) and the compaction's next step."""
    quiet(hook(fixture("post_compact_claude_code", project), project))
    quiet(hook(fixture("post_tool_use_todo_write", project), project))
    assert state(project)["progress:todos"][2] == ("progress:next",)
    fixed = []
    for n in range(4):
        command = f"pytest -q tests/test_{n}.py"
        quiet(hook(bash_failure(project, command, f"Exit code 1\nFAILED test_{n}"), project))
        quiet(hook(bash(project, command, "1 passed"), project))
        fixed.append(f"error:{command_part(command, f'pytest__q_tests_test_{n}_py')}")
    assert state(project)["progress:todos"][2] == (*fixed[:0:-1], "progress:next")
    # An error of a failed run has no parent of its own.
    assert all(state(project)[key][2] == () for key in fixed)
    quiet(hook(fixture("post_tool_use_todo_write", project), project))  # the list changes
    assert state(project)["progress:todos"][2] == (*fixed[:0:-1], "progress:next")
    done = hook(fixture("session_start", project, source="resume"), project)
    block = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    for key in (fixed[-1], "progress:next", "progress:current", "decision:fix-2"):
        assert f"\n{key} [" in block, key


def test_what_a_turn_leaves_is_newer_than_its_record(project: Path) -> None:
    quiet(hook(fixture("stop", project), project))
    entries = state(project)
    assert entries["turn:last"][3] < entries["last_action"][3]
    assert entries["turn:last"][3] < entries["api:missing-user"][3]


@pytest.mark.parametrize(
    ("name", "tool"),
    [
        ("post_tool_use_read", None),
        ("post_tool_use_grep", None),
        ("post_tool_use_bash", "Glob"),
        ("post_tool_use_bash", "LS"),
        ("post_tool_use_mcp", None),  # an MCP tool not on the capture list
    ],
)
def test_read_only_tools_are_not_captured(project: Path, name: str, tool: str | None) -> None:
    # Read's file holds a marker and Grep's output an action sentence: a
    # captured result would produce entries.
    payload = fixture(name, project, **({} if tool is None else {"tool_name": tool}))
    quiet(hook(payload, project))
    assert not membolt.project_store_path(project).exists()  # not even opened


def test_a_failure_of_a_tool_other_than_bash_is_not_kept(project: Path) -> None:
    payload = fixture(
        "post_tool_use_failure_bash",
        project,
        tool_name="Edit",
        tool_input={"file_path": str(project / "a.py")},
        error="String to replace not found in file.",
    )
    quiet(hook(payload, project))
    assert not membolt.project_store_path(project).exists()


@pytest.mark.parametrize(
    ("name", "key", "value"),
    [
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
def test_web_tools_are_captured_as_tool_results(
    project: Path, name: str, key: str, value: str
) -> None:
    quiet(hook(fixture(name, project), project))
    entry = store_of(project).get(key)
    assert entry is not None, state(project)
    assert (entry.value, entry.type) == (value, "tool_result")


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
    assert result_text("mcp__x__y", {}, {"content": [{"type": "text", "text": "hi"}]}, "/p") == (
        "hi"
    )
    assert result_text("mcp__x__y", {}, {"n": 1}, "/p") == '{"n":1}'
    assert result_text("WebFetch", {}, "plain text", "/p") == "plain text"
    assert project_path("/p/src/a.py", "/p") == "src/a.py"
    assert project_path("/other/a.py", "/p") == "/other/a.py"
    assert project_path("/pp/a.py", "/p") == "/pp/a.py"


# ----- the project is the repository ----------------------------------------------------------


def test_a_subdirectory_cwd_reaches_the_repository_store(tmp_path: Path) -> None:
    repository = tmp_path / "repo"
    (repository / ".git").mkdir(parents=True)
    subdirectory = repository / "src" / "pkg"
    subdirectory.mkdir(parents=True)
    payload = fixture("post_tool_use_edit", repository, cwd=str(subdirectory))
    payload["tool_response"]["filePath"] = str(subdirectory / "calc.py")
    quiet(hook(payload, subdirectory))
    assert not membolt.project_store_path(subdirectory).exists()
    entries = state(repository)
    assert entries["last_files"][0] == "src/pkg/calc.py"  # relative to the repository
    done = hook(fixture("session_start", repository, cwd=str(subdirectory)), subdirectory)
    assert (done.returncode, done.stderr) == (0, "")
    # The next session, started in the subdirectory, is given the repository's memory.
    assert "file:src/pkg/calc.py [file]" in done.stdout
    assert "session:started" in state(repository)


def test_a_linked_work_tree_is_a_project_of_its_own(tmp_path: Path) -> None:
    main, linked = tmp_path / "main", tmp_path / "main" / "wt"
    (main / ".git").mkdir(parents=True)
    linked.mkdir()
    (linked / ".git").write_text("gitdir: ../.git/worktrees/wt\n")
    (linked / "src").mkdir()
    quiet(hook(fixture("post_tool_use_edit", linked, cwd=str(linked / "src")), linked))
    assert "last_files" in state(linked)
    assert not membolt.project_store_path(main).exists()


def test_claude_project_dir_names_the_project(project: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    payload = fixture("post_tool_use_edit", project, cwd=str(elsewhere))
    quiet(hook(payload, elsewhere, CLAUDE_PROJECT_DIR=str(project)))
    assert "last_files" in state(project)
    assert not membolt.project_store_path(elsewhere).exists()


def test_a_cwd_that_does_not_exist_is_refused(project: Path, tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such"
    for name in ("session_start", "post_tool_use_edit", "stop", "user_prompt_submit"):
        line = undisturbing(hook(fixture(name, project, cwd=str(missing)), project))
        assert "no such directory" in line, name
    line = undisturbing(hook(fixture("stop", project), project, CLAUDE_PROJECT_DIR=str(missing)))
    assert "CLAUDE_PROJECT_DIR" in line
    assert not any(tmp_path.rglob("memory.redb"))


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


def test_claude_codes_summary_is_captured_by_section(project: Path) -> None:
    quiet(hook(fixture("post_compact_claude_code", project), project))
    entries = state(project)
    assert entries["goal:request"][:3] == (
        "The user asked to make every test in tests/test_calc.py pass by fixing src/calc.py, "
        "one commit per fix.",
        "prompt",
        (),
    )
    assert entries["decision:fix-1"][:2] == (
        "test_add failed with assert -1 == 5: add() returned a - b; fixed to return a + b.",
        "decision",
    )
    assert entries["decision:fix-2"][0] == (
        'ZeroDivisionError in divide(): Fixed by raising ValueError("division by zero") when '
        "b == 0. The user asked for a ValueError rather than None."
    )
    assert "decision:fix-3" not in entries
    assert (
        entries["progress:pending"][0]
        == "pending: Fix power() so that test_power passes; Commit the fix"
    )
    assert entries["progress:current"][0] == (
        "in progress: Ran the whole suite after committing the divide() fix: test_power fails "
        "with assert 6 == 8."
    )
    assert entries["progress:next"][0] == (
        "to do next: Change power() in src/calc.py to return a ** b, then run python -m pytest -q."
    )
    # The analysis before the summary numbers its own points: nothing from it.
    assert not [k for k in entries if "power() was still" in entries[k][0]]
    # One chain, the next step last: the resume point's ancestry is the note.
    assert entries["progress:next"][2] == ("progress:current",)
    assert entries["progress:current"][2] == ("progress:pending",)
    assert entries["progress:pending"][2] == ("decision:fix-2",)
    assert entries["decision:fix-1"][2] == ("goal:request",)
    assert "checkpoint:summary" not in entries  # not §7's sections
    store = store_of(project)
    block = store.render("", 500)
    assert "| resume: progress:next (" in block.splitlines()[2]
    for key in ("goal:request", "decision:fix-1", "decision:fix-2", "progress:pending"):
        assert f"\n{key} [" in block, key


def test_a_section_that_says_none_is_done(project: Path) -> None:
    summary = (
        "<analysis>\nnothing\n</analysis>\n<summary>\n1. Primary Request and Intent:\n"
        "   Rename the CLI flag.\n4. Errors and fixes:\n   None.\n"
        "7. Pending Tasks:\n   None.\n8. Current Work:\n   - None - the rename is merged\n"
        "9. Optional Next Step:\n   No next step; the task is complete.\n</summary>"
    )
    quiet(hook(fixture("post_compact", project, compact_summary=summary), project))
    entries = state(project)
    assert entries["progress:pending"][0] == "done: none"
    assert entries["progress:current"][0] == "done: none"
    assert entries["progress:next"][0] == "done: none"
    assert not [k for k in entries if k.startswith("decision:fix")]
    store = store_of(project)
    assert "resume:" not in store.render("", 500).splitlines()[2]
    store.close()
    # A next step is to do whatever its words (here "complete").
    summary = summary.replace("No next step; the task is complete.", "Run the complete suite.")
    quiet(hook(fixture("post_compact", project, compact_summary=summary), project))
    assert state(project)["progress:next"][0] == "to do next: Run the complete suite."
    store = store_of(project)
    assert "resume: progress:next" in store.render("", 500).splitlines()[2]


@pytest.mark.parametrize(
    "summary",
    [
        # The section headers models write: numbered, bold, markdown.
        "<summary>\n1. **Primary Request and Intent**:\n   Fix the login test.\n"
        "4. **Errors and Fixes**:\n   - **Error**: `TimeoutError`\n     **Fix**: waited 10s\n"
        "   - **Error**: `KeyError: 'token'`\n     **Fix**: read the body\n"
        "9. **Optional Next Step**:\n   Run the e2e suite.\n</summary>",
        "## 1. Primary Request and Intent\nFix the login test.\n## 4. Errors and Fixes\n"
        "### Error: TimeoutError\n- Fix: waited 10s\n### Error: KeyError: 'token'\n"
        "- Fix: read the body\n## 5. Problem Solving\nBoth fixed.\n"
        "## 9. Optional Next Step\nRun the e2e suite.\n# Notes\nnothing",
        "Summary:\n1. Primary Request and Intent: Fix the login test.\n"
        "4. Errors & fixes:\n- Error: TimeoutError; Fix: waited 10s\n"
        "- Error: KeyError: 'token'; Fix: read the body\n"
        "9. Optional Next Step: Run the e2e suite.",
    ],
)
def test_the_summary_sections_in_the_forms_models_write_them(project: Path, summary: str) -> None:
    quiet(hook(fixture("post_compact", project, compact_summary=summary), project))
    entries = state(project)
    assert entries["goal:request"][0] == "Fix the login test."
    fixes = [entries[f"decision:fix-{n}"][0] for n in (1, 2)]
    assert re.search("TimeoutError.*10s", fixes[0]), fixes
    assert re.search("KeyError.*read the body", fixes[1]), fixes
    assert "decision:fix-3" not in entries
    assert entries["progress:next"][0] == "to do next: Run the e2e suite."


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


def release(child: subprocess.Popen[str]) -> None:
    assert child.stdin is not None
    child.stdin.close()
    child.wait(timeout=60)


def spool_of(project: Path) -> Path:
    return Path(f"{membolt.project_store_path(project)}.spool")


def test_a_busy_store_keeps_the_events_for_the_next_writer(project: Path) -> None:
    """§13.1: a hook that finds the store busy for 1 s spools its event and
    exits 0; the next process that writes applies the events first, in
    order, once."""
    before = seeded(project)
    command = "python -m pytest tests/test_calc.py"
    events = [
        fixture("session_start", project, source="resume"),
        fixture("post_tool_use_failure_bash", project),
        fixture("post_tool_use_edit", project),
        fixture("post_tool_use_todo_write", project),
        bash(project, command, "....\n4 passed in 0.03s"),  # resolves the failure above
        fixture("post_compact_claude_code", project),
        fixture("stop", project, last_assistant_message="Fixed divide(). power() is next."),
    ]
    child = holder(membolt.project_store_path(project))
    try:
        # The prompt is kept beside the store; only the block is missed.
        prompt = fixture("user_prompt_submit", project, prompt="fix divide")
        assert "StoreBusyError" in undisturbing(hook(prompt, project))
        for payload in events:
            done = hook(payload, project)
            # No stdout (a SessionStart cannot render a store it cannot
            # read), no stderr: the event is not lost.
            quiet(done)
        quiet(hook(fixture("post_tool_use_read", project), project))
        spool = spool_of(project)
        assert stat.S_IMODE(spool.stat().st_mode) == 0o600
        assert len(spool.read_bytes().splitlines()) == len(events)
    finally:
        release(child)
    assert state(project) == before  # nothing applied while the store was held
    # The next writer, here a plain `membolt save`, applies them first.
    done = membolt_cli("save", "note:after", "written after the events", cwd=project)
    assert done.returncode == 0, done
    entries = state(project)
    part = command_part(command, "python__m_pytest_tests_test_ca")
    assert entries[f"error:{part}"][0].startswith("resolved: 4 passed in 0.03s (was: FAILED")
    assert (
        entries["file:src/api/handler.ts"][0] == "- if (!user) return 500 + if (!user) return 404"
    )
    assert entries["progress:todos"][0].startswith("in progress: Fix divide() by zero")
    assert entries["progress:next"][0].startswith("to do next: Change power()")
    assert entries["last_action"][0] == "Fixed divide()"
    assert entries["turn:last"][0].endswith(
        "| input: fix divide | response: Fixed divide(). power() is next."
    )
    assert entries["session:resumed"][0].startswith("source resume, model claude-sonnet-4-6, at ")
    # In order: each event is newer than the one before, the save newest.
    # The fix joins the task list's parents (the list is saved again).
    assert entries["progress:todos"][2] == (f"error:{part}",)
    order = [
        "session:resumed",
        "file:src/api/handler.ts",
        f"error:{part}",  # resolved by the fifth event
        "progress:todos",
        "progress:next",
        "turn:last",
        "note:after",
    ]
    stamps = [entries[key][3] for key in order]
    assert stamps == sorted(stamps)
    assert spool_of(project).read_bytes() == b""
    # Once: another writer finds nothing left to apply.
    membolt_cli("save", "note:later", "x", cwd=project)
    again = state(project)
    assert {k: v for k, v in again.items() if k != "note:later"} == entries


def test_the_next_hook_applies_the_spool_before_its_own_event(project: Path) -> None:
    command = "pytest -q"
    child = holder(membolt.project_store_path(project))
    try:
        quiet(hook(bash_failure(project, command, "Exit code 1\nFAILED t.py::test_a"), project))
    finally:
        release(child)
    assert spool_of(project).stat().st_size > 0
    # This success reads the error the spooled failure leaves, and resolves it.
    quiet(hook(bash(project, command, "1 passed"), project))
    key = f"error:{command_part(command, 'pytest__q')}"
    assert state(project)[key][0] == "resolved: 1 passed (was: FAILED t.py::test_a)"
    assert spool_of(project).read_bytes() == b""


def test_spooled_events_are_applied_once_by_concurrent_writers(project: Path) -> None:
    child = holder(membolt.project_store_path(project))
    try:
        for n in range(1, 4):
            stop = fixture("stop", project, last_assistant_message=f"reply {n}")
            quiet(hook(stop, project))
            edit = fixture("post_tool_use_edit", project)
            edit["tool_response"]["filePath"] = str(project / f"f{n}.py")
            quiet(hook(edit, project))
    finally:
        release(child)
    writers = [
        subprocess.Popen(
            [*HOOK[:3], "save", f"note:w{n}", "x"],
            cwd=project,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for n in range(4)
    ]
    for writer in writers:
        assert writer.wait(timeout=120) == 0
    entries = state(project)
    turns = [
        entries[key][0].rsplit("| response: ", 1)[1]
        for key in ("turn:last", "turn:prev-1", "turn:prev-2")
    ]
    assert turns == ["reply 3", "reply 2", "reply 1"]
    assert entries["last_files"][0] == "f3.py, f2.py, f1.py"
    assert all(f"note:w{n}" in entries for n in range(4))


def test_a_busy_store_still_answers_a_prompt_with_one_line(project: Path) -> None:
    seeded(project)
    child = holder(membolt.project_store_path(project))
    try:
        line = undisturbing(hook(fixture("user_prompt_submit", project), project))
        assert "StoreBusyError" in line
    finally:
        release(child)
    # The prompt was kept for the turn all the same.
    quiet(hook(fixture("stop", project), project))
    assert "| input: Why does the users endpoint" in state(project)["turn:last"][0]


def test_an_event_that_is_not_utf8_is_read_with_replacement_characters(project: Path) -> None:
    payload = json.dumps(bash(project, "echo caf\u00e9", "caf\u00e9 ok"), ensure_ascii=False)
    broken = payload.encode().replace("caf\u00e9 ok".encode(), b"caf\xe9 ok")
    quiet(hook(broken, project))
    tools = [v[0] for k, v in state(project).items() if k.startswith("tool:Bash:")]
    assert tools == ["caf\ufffd ok"]


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
    assert store.get("file:src/api/users.ts").value == "created, 1 lines"


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


#: The directory of this environment's ``membolt`` script.
SCRIPTS = str(Path(sys.executable).parent)
#: A PATH on which that ``membolt`` is found (a project-scope install needs it).
WITH_MEMBOLT = f"{SCRIPTS}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}"
#: A PATH on which no ``membolt`` is found.
WITHOUT_MEMBOLT = "/usr/bin:/bin"


def membolt_cli(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "membolt.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**os.environ, "PATH": WITH_MEMBOLT, **env},
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
    # §13.1: it says the command comes from PATH.
    assert f"run `membolt` from PATH (here {SCRIPTS}/membolt)" in out
    settings = read(project / ".claude" / "settings.json")
    assert list(settings["hooks"]) == list(install.HOOK_EVENTS)
    # Nothing machine-specific in files a team commits.
    command = "membolt hook claude-code"
    for event, groups in settings["hooks"].items():
        (group,) = groups
        assert group["hooks"] == [{"type": "command", "command": command, "timeout": 15}]
        if event == "PostToolUse":
            assert group["matcher"] == (
                "^(Bash|Edit|MultiEdit|NotebookEdit|TodoWrite|WebFetch|WebSearch|Write)$"
            )
        elif event == "PostToolUseFailure":
            assert group["matcher"] == "^(Bash)$"
        else:
            assert "matcher" not in group
    assert read(project / ".mcp.json") == {
        "mcpServers": {"membolt": {"type": "stdio", "command": "membolt", "args": ["mcp"]}}
    }
    assert files_in(project) == {".claude", ".claude/settings.json", ".mcp.json"}
    for name in (".claude/settings.json", ".mcp.json"):
        text = (project / name).read_text()
        assert SCRIPTS not in text
        assert str(project) not in text


def test_a_project_install_needs_membolt_on_path(project: Path) -> None:
    line = refused("install", "claude-code", cwd=project, PATH=WITHOUT_MEMBOLT)
    assert "membolt is not on PATH" in line
    assert "--command" in line
    assert files_in(project) == set()


def test_command_goes_to_the_user_scope_or_the_local_settings(
    project: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    script = f"{SCRIPTS}/membolt"
    env = {"HOME": str(home), "PATH": WITHOUT_MEMBOLT}
    # --command alone: the user scope.
    installs("install", "claude-code", "--command", script, cwd=project, **env)
    user = read(home / ".claude" / "settings.json")
    assert shlex.split(user["hooks"]["Stop"][0]["hooks"][0]["command"]) == [
        script,
        "hook",
        "claude-code",
    ]
    assert read(home / ".claude.json")["mcpServers"]["membolt"]["command"] == script
    assert files_in(project) == set()
    # With --local: this machine's settings of the project.
    installs("install", "claude-code", "--local", "--command", script, cwd=project, **env)
    local = read(project / ".claude" / "settings.local.json")
    assert local["hooks"]["Stop"][0]["hooks"][0]["command"] == f"{script} hook claude-code"
    servers = read(home / ".claude.json")["projects"][str(project)]["mcpServers"]
    assert servers == {"membolt": {"type": "stdio", "command": script, "args": ["mcp"]}}
    assert files_in(project) == {".claude", ".claude/settings.local.json"}
    # Never into the shared files.
    line = refused(
        "install", "claude-code", "--scope", "project", "--command", script, cwd=project, **env
    )
    assert "--local" in line
    assert "not a membolt executable" in refused(
        "install", "claude-code", "--command", "/bin/sh", cwd=project, **env
    )
    installs("uninstall", "claude-code", "--local", cwd=project, **env)
    assert files_in(project) == {".claude"}
    assert "membolt" not in json.dumps(read(home / ".claude.json")["projects"])


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
        env={**os.environ, "PATH": WITH_MEMBOLT},
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
        "PostToolUseFailure": 1,
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
    assert read(project / ".mcp.json")["mcpServers"]["membolt"]["args"] == ["mcp"]
    assert files_in(project) == {".claude", ".claude/settings.json", ".mcp.json"}


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
    assert store.get("last_action").value == "Fixed the session cookie expiry"  # type: ignore[union-attr]
    assert "decision:cookies" not in state(project)  # nothing in the local file


def test_an_unreachable_server_keeps_the_event_for_the_next_writer(
    project: Path, postgres_server: Any, tmp_path: Path
) -> None:
    """§13.1: an unreachable PostgreSQL server spools too, in a file of the
    project under the store home; the next writer applies it."""
    team = f"team-{uuid.uuid4().hex}"
    home = tmp_path / "home"
    env = {"MEMBOLT_DATABASE_URL": postgres_server.url(), "MEMBOLT_PROJECT": team}
    env["MEMBOLT_HOME"] = str(home)
    postgres_server.stop()
    try:
        quiet(hook(fixture("post_tool_use_failure_bash", project), project, **env))
        (spool,) = (home / "postgresql-spool").iterdir()
        assert stat.S_IMODE(spool.stat().st_mode) == 0o600
        assert spool.stat().st_size > 0
    finally:
        postgres_server.start()
    done = membolt_cli("save", "note:after", "x", cwd=project, **env)
    assert done.returncode == 0, done
    store = membolt.MemoryStore(postgres_server.url(), project=team)
    errors = [e.key for e in store.entries() if e.key.startswith("error:")]
    part = command_part("python -m pytest tests/test_calc.py", "python__m_pytest_tests_test_ca")
    assert errors == [f"error:{part}"]
    assert spool.read_bytes() == b""


# ----- the MCP server finds the project as the hooks do -----------------------------------------


def test_the_mcp_server_serves_the_repository_of_its_directory(tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    repository = tmp_path / "repo"
    (repository / ".git").mkdir(parents=True)
    (repository / "src").mkdir()
    store = store_of(repository)
    store.save("decision:db", "use redb")
    store.close()
    initialize = {
        "jsonrpc": "2.0",
        "id": "init",
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }
    lines = [
        json.dumps(initialize),
        json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "memory_list", "arguments": {}},
            }
        ),
    ]
    base = {k: v for k, v in os.environ.items() if k != PROJECT_DIR_VARIABLE}
    done = subprocess.run(
        [sys.executable, "-m", "membolt.cli", "mcp"],
        input="".join(f"{line}\n" for line in lines),
        capture_output=True,
        text=True,
        cwd=repository / "src",
        env=base,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    (listed,) = [r for r in replies if r.get("id") == 2]
    assert "decision:db" in listed["result"]["content"][0]["text"]
    assert not membolt.project_store_path(repository / "src").exists()
