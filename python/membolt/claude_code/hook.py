"""``membolt hook claude-code``: one command for every Claude Code hook event.

Claude Code starts the command for each event it is registered for and
writes the event's JSON object to its stdin (§13, §13.1):

- ``SessionStart``: ``session:started`` (``source`` ``startup``) or
  ``session:resumed`` with the source, the model and the time; prints the
  §5.9 section (focus ``""``, the default budget) as context for Claude;
- ``UserPromptSubmit``: keeps the prompt for the turn (``turns.py``); prints
  ``render(prompt, 200)`` as context when the ranked search (§15.3) finds
  an entry for the prompt, else nothing;
- ``PostToolUse`` / ``PostToolUseFailure``: for the tools on the capture
  list (``tool_text.py``): a Bash run keyed by its command, with its
  failure as an ``error:`` entry that a later success resolves
  (``bash.py``); an edit as ``file:<path>`` and ``last_files``; the task
  list as ``progress:todos`` (``edits.py``); web and MCP results as §6.6
  tool results. Other tools open nothing;
- ``PostCompact``: Claude Code's summary sections (``summary.py``), or
  ``auto_capture`` (§7) for any other summary;
- ``Stop``: the turn's facts from the prompt and the reply (the reply read
  from the transcript when the payload lacks it), ``last_action`` from the
  reply's first sentence and the last three turns (``replies.py``);
- any other event: nothing.

The project is the one ``cwd`` belongs to (``project.py``): a subdirectory
of a repository reaches the repository's store.

Every printed context keeps the §15.5 ceiling of 10,000 characters
(``context_cap.py``).

A busy store loses no event: when the store stays busy for
:data:`SPOOL_AFTER_S` (or a PostgreSQL server cannot be reached), the event
is appended to the store's spool (``membolt.spool``) and the hook exits;
the next process that writes the store applies it first, through
:func:`apply_spooled`, which is also what a hook does with its own event:
one code path, whether the event is applied now or later.

A hook must never disturb the session: :func:`run` returns 0 whatever
happens (bad JSON, missing fields, a damaged store, an unwritable
directory), writes at most one line to stderr (Claude Code shows it in its
debug log), and prints only the output the event asks for, after the
event's writes are done. The fields an event needs are checked before the
store is opened, so bad input leaves the store as it was. A payload that
is not valid UTF-8 is read with replacement characters.

Imports are made where they are needed: the process lives for one event,
and the events that print nothing should not pay for rendering, the events
that extract nothing not for the extraction rules.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Callable

    from .._core import Cap
    from ..spool import Record
    from ..store import MemoryStore
    from .turns import TurnPrompts

#: Budget of the focused block added to a prompt (§13).
PROMPT_BLOCK_TOKENS: Final = 200
#: The directory of pending turn prompts, beside the store file.
TURNS_DIRECTORY: Final = "claude-code-turns"
#: Longest line written to stderr.
MAX_PROBLEM_CHARS: Final = 500
#: §13.1: how long a hook waits for a busy store before it spools its event
#: (unless ``--timeout`` says otherwise).
SPOOL_AFTER_S: Final = 1.0
#: The name of this component's records in a spool.
SPOOL_SOURCE: Final = "claude-code"
TOOL_EVENTS: Final = ("PostToolUse", "PostToolUseFailure")
SESSION_STARTED_KEY: Final = "session:started"
SESSION_RESUMED_KEY: Final = "session:resumed"
SESSION_CONFIG_KEY: Final = "session:config"
#: §13.1: a failed command's entry is ``error:<slug>-<h>``.
ERROR_KEY_PREFIX: Final = "error:"
#: How many resolved errors the task list keeps as parents.
FIXES_LINKED: Final = 3


class HookInputError(Exception):
    """Input the event cannot act on; reported as the hook's stderr line."""


def run(
    stdin: IO[bytes],
    stdout: IO[str],
    stderr: IO[str],
    *,
    db: str | None = None,
    project_dir: str | None = None,
    project: str | None = None,
    timeout: float | None = None,
    capture: Sequence[str] = (),
) -> int:
    """Handles one event read from ``stdin``; always returns 0.

    ``db`` (a store file or a ``postgresql://`` URL) or ``project_dir`` (a
    project directory) overrides the project of the payload's ``cwd``, and
    ``project`` names the project on a PostgreSQL server (§12); ``timeout``
    is how long to wait for a busy store before spooling the event;
    ``capture`` adds tool names (MCP tools) to the capture list.
    """
    problem: str | None
    try:
        hook = Hook(
            db=db, project_dir=project_dir, project=project, timeout=timeout, capture=capture
        )
        output = hook.handle(stdin.read())
        problem = hook.problem
        if output is not None:
            stdout.write(output + "\n")
            stdout.flush()
    except BaseException as error:  # a hook never fails the session, whatever happens
        problem = _describe(error)
        _silence(stdout)
    if problem is not None:
        try:
            stderr.write(f"membolt hook: {_one_line(problem)}\n")
            stderr.flush()
        except BaseException:
            _silence(stderr)
    return 0


class Hook:
    """One event: parses it, checks its fields, acts on the store."""

    def __init__(
        self,
        *,
        db: str | None,
        project_dir: str | None,
        project: str | None,
        timeout: float | None,
        capture: Sequence[str],
    ) -> None:
        self.db = db
        self.project_dir = project_dir
        self.project = project
        self.timeout = SPOOL_AFTER_S if timeout is None else timeout
        self.capture = tuple(capture)
        #: When the event happened (Unix ms): the time its turn record and
        #: session entry show, also when the event is applied later.
        self.now_ms = int(time.time() * 1000)
        #: The first thing that went wrong but did not stop the event.
        self.problem: str | None = None

    def handle(self, data: bytes) -> str | None:
        """The event's stdout (a JSON object), or None for none."""
        try:
            payload = json.loads(data.decode("utf-8", "replace"))
        except ValueError as error:
            raise HookInputError(f"the input is not JSON ({error})") from None
        if not isinstance(payload, dict):
            raise HookInputError(f"the input is JSON {type(payload).__name__}, not an object")
        event = payload.get("hook_event_name")
        if not isinstance(event, str):
            raise HookInputError("hook_event_name is missing or not a string")
        handler = _HANDLERS.get(event)
        return None if handler is None else handler(self, payload)

    # ----- events --------------------------------------------------------

    def session_start(self, payload: dict[str, Any]) -> str | None:
        _text(payload, "source")
        model = payload.get("model")
        if model is not None and not isinstance(model, str):
            raise HookInputError(f"SessionStart: model is {type(model).__name__}, not a string")
        project = self.project_of(payload)
        store = self.open_store(project)
        if not self.write(store, {"event": payload, "project": project}):
            return None  # spooled: the store cannot be read either
        self.remember_problem(lambda: self.turns(store).prune())
        from .._core import DEFAULT_MAX_TOKENS
        from ..prompt import system_prompt_section
        from .context_cap import within_ceiling

        section = within_ceiling(
            lambda budget: system_prompt_section(store, "", budget), DEFAULT_MAX_TOKENS
        )
        return _context("SessionStart", section)

    def user_prompt_submit(self, payload: dict[str, Any]) -> str | None:
        from ..sanitize import clean_text

        session = _session_id(payload)
        prompt = clean_text(_text(payload, "prompt"))
        store = self.open_store(self.project_of(payload))
        # The prompt is kept even when nothing matches it; failing to keep it
        # costs only the turn record, so the block is still offered.
        self.remember_problem(lambda: self.turns(store).remember(session, prompt))
        # §15.3: a block is offered when the ranked search finds an entry
        # for the prompt, the same search that picks the block's focus.
        if not store.search_words(prompt, limit=1):
            return None
        from .context_cap import within_ceiling

        block = within_ceiling(lambda budget: store.render(prompt, budget), PROMPT_BLOCK_TOKENS)
        return _context("UserPromptSubmit", block)

    def tool_use(self, payload: dict[str, Any]) -> str | None:
        from .tool_text import capture_list, is_captured

        name = _text(payload, "tool_name")
        if not is_captured(name, capture_list(self.capture)):
            return None  # a read-only tool: not even the store is opened
        if payload["hook_event_name"] == "PostToolUseFailure":
            if name != "Bash":
                return None  # only a failed command says something worth keeping
            _text(payload, "error")
        elif "tool_response" not in payload:
            raise HookInputError("tool_response is missing")
        project = self.project_of(payload)
        store = self.open_store(project)
        self.write(store, {"event": payload, "project": project, "capture": list(self.capture)})
        return None

    def post_compact(self, payload: dict[str, Any]) -> str | None:
        _text(payload, "compact_summary")
        project = self.project_of(payload)
        self.write(self.open_store(project), {"event": payload, "project": project})
        return None

    def stop(self, payload: dict[str, Any]) -> str | None:
        session = _session_id(payload)
        response = payload.get("last_assistant_message")
        if not isinstance(response, str):
            response = _transcript_reply(payload)
        project = self.project_of(payload)
        store = self.open_store(project)
        prompt = self.remember_problem(lambda: self.turns(store).take(session))
        if response is None:
            raise HookInputError(
                "no last_assistant_message, and no reply in the transcript: the turn is not saved"
            )
        event = {**payload, "last_assistant_message": response}
        self.write(store, {"event": event, "project": project, "prompt": prompt or ""})
        return None

    # ----- the store and the state beside it ------------------------------

    def project_of(self, payload: Mapping[str, object]) -> str:
        """The project directory of the event (``project.py``); a ``cwd``
        that does not exist is refused."""
        from .project import ProjectError, project_root

        try:
            root = project_root(_text(payload, "cwd"))
        except ProjectError as error:
            raise HookInputError(f"{payload.get('hook_event_name')}: {error}") from None
        if self.project_dir is None:
            return root
        if not os.path.isdir(self.project_dir):
            raise HookInputError(f"--cwd {self.project_dir}: no such directory")
        return os.path.abspath(self.project_dir)

    def open_store(self, project: str) -> MemoryStore:
        """The store the event acts on, chosen as every command chooses it
        (``membolt.store.open_store``): ``--db``, else
        ``$MEMBOLT_DATABASE_URL``, else the project of ``--cwd``, else the
        event's project."""
        from ..store import open_store

        return open_store(self.db, self.project_dir or project, self.project, timeout=self.timeout)

    def write(self, store: MemoryStore, data: dict[str, Any]) -> bool:
        """Applies the event ``data`` to ``store`` holding it, after the
        events its spool holds; when the store stays busy (or its server
        cannot be reached), appends the event to the spool instead. True
        when the event was applied now."""
        try:
            with store.hold():
                store.apply_spool()
                apply_event(store, data, self.now_ms)
            return True
        except Exception as error:
            if not _spoolable(store, error):
                raise
        from .. import spool

        spool.append(store.spool_path, SPOOL_SOURCE, data, self.now_ms)
        return False

    def turns(self, store: MemoryStore) -> TurnPrompts:
        """The pending prompts of ``store``'s sessions, in a directory beside
        the store file (for a store that is not a file, in this machine's
        membolt directory, under the store's location)."""
        from ..store import default_base_dir, encode_cwd
        from .turns import TurnPrompts

        if store.path is not None:
            return TurnPrompts(Path(os.fspath(store.path)).parent / TURNS_DIRECTORY)
        return TurnPrompts(default_base_dir() / encode_cwd(store.location) / TURNS_DIRECTORY)

    # ----- failures that do not stop the event ----------------------------

    def remember_problem(self, action: Callable[[], _T]) -> _T | None:
        """Runs ``action``; an ``OSError`` or ``ValueError`` becomes the
        event's problem line instead of ending it."""
        try:
            return action()
        except (OSError, ValueError) as error:
            self.problem = self.problem or _describe(error)
            return None


_HANDLERS: Final[dict[str, Callable[[Hook, dict[str, Any]], str | None]]] = {
    "SessionStart": Hook.session_start,
    "UserPromptSubmit": Hook.user_prompt_submit,
    "PostToolUse": Hook.tool_use,
    "PostToolUseFailure": Hook.tool_use,
    "PostCompact": Hook.post_compact,
    "Stop": Hook.stop,
}


# ----- applying an event (now, or later from the spool) ------------------------


def apply_spooled(store: MemoryStore, record: Record) -> None:
    """The spool's applier for this component's records (``membolt.spool``)."""
    apply_event(store, record.data, record.at)


def apply_event(store: MemoryStore, data: Mapping[str, Any], now_ms: int) -> None:
    """Writes what one event leaves in ``store``. ``data`` is the event as
    the hook spools it: ``{"event": <payload>, "project": <directory>}``,
    with ``"prompt"`` for ``Stop`` and ``"capture"`` for tools. Applying the
    same event twice in a row changes nothing the second time."""
    payload = data["event"]
    event = payload["hook_event_name"]
    if event == "SessionStart":
        _apply_session(store, payload, now_ms)
    elif event in TOOL_EVENTS:
        _apply_tool(store, payload, str(data["project"]), data.get("capture") or ())
    elif event == "PostCompact":
        _apply_summary(store, payload["compact_summary"])
    elif event == "Stop":
        _apply_turn(store, data.get("prompt") or "", payload["last_assistant_message"], now_ms)
    else:
        raise ValueError(f"no event {event!r} to apply")


def _apply_session(store: MemoryStore, payload: Mapping[str, Any], now_ms: int) -> None:
    from ..extract import iso_utc
    from ..sanitize import clean_text

    source = clean_text(payload["source"])
    model = payload.get("model")
    parts = [f"source {source}"]
    if isinstance(model, str) and model:
        parts.append(f"model {clean_text(model)}")
    parts.append(f"at {iso_utc(now_ms)}")
    key = SESSION_STARTED_KEY if source == "startup" else SESSION_RESUMED_KEY
    config = store.get(SESSION_CONFIG_KEY)
    with store.batch() as batch:
        batch.save(key, ", ".join(parts))
        # §13.1: no empty session:config (a 0.2 hook saved "{}" every time).
        if config is not None and config.value.strip() in ("", "{}"):
            batch.delete(SESSION_CONFIG_KEY)


def _apply_tool(
    store: MemoryStore, payload: Mapping[str, Any], project: str, capture: Sequence[str]
) -> None:
    from .tool_text import EDIT_TOOLS

    name = payload["tool_name"]
    raw_inputs = payload.get("tool_input")
    inputs: Mapping[str, object] = raw_inputs if isinstance(raw_inputs, Mapping) else {}
    if name == "Bash":
        _apply_bash(store, payload, inputs)
    elif name in EDIT_TOOLS:
        _apply_edit(store, name, inputs, payload.get("tool_response"), project)
    elif name == "TodoWrite":
        _apply_todos(store, inputs, payload.get("tool_response"))
    else:
        response = payload.get("tool_response")
        _apply_result(store, name, inputs, response, project=project, capture=capture)


def _apply_bash(
    store: MemoryStore, payload: Mapping[str, Any], inputs: Mapping[str, object]
) -> None:
    from ..extract import extract_markers
    from ..keys import tool_result_key
    from ..sanitize import clean_text
    from . import bash

    command = clean_text(inputs.get("command") or "")
    reported_failure = payload["hook_event_name"] == "PostToolUseFailure"
    if reported_failure:
        output, interrupted = clean_text(payload["error"]), payload.get("is_interrupt") is True
    else:
        output, interrupted = _bash_output(payload.get("tool_response"))
    # A run Claude Code reports as failed is one, unless the user stopped it.
    run = bash.analyse(
        output,
        interrupted=interrupted,
        status=_bash_status(payload),
        failed=reported_failure and not interrupted,
    )
    part = bash.key_part(command)
    items: list[tuple[str, str, str | None, list[str] | None]] = []
    value = run.value()
    if value:
        items.append((tool_result_key("Bash", part), value, "tool_result", None))
    error_key = ERROR_KEY_PREFIX + part
    if run.failed:
        # A root of its own: the run's entry repeats its lines, and an
        # ancestor would take the block's room ahead of everything else
        # (the newest open error's ancestry is kept first, §15.5).
        items.append((error_key, run.error_value(), "error", []))
    resolved = False
    if run.succeeded:
        previous = store.get(error_key)
        if previous is not None and not bash.is_resolved_value(previous.value):
            items.append((error_key, bash.resolved_value(run, previous.value), "error", None))
            resolved = True
    # A marker a script prints is meant to be kept; KEY lines, action
    # sentences and paths in command output are not (an "ERROR: ..." line
    # would become an error entry that nothing resolves).
    items += [(fact.key, fact.value, fact.type, None) for fact in extract_markers(output)]
    if items:
        store.save_many(items, caps=_extraction_caps)
    if resolved:
        _link_fix(store, error_key)


def _link_fix(store: MemoryStore, error_key: str) -> None:
    """A fix made while the task list has work left joins the list's
    parents (the newest :data:`FIXES_LINKED`, newest first), so that the
    next session's block keeps it with the resume point (§15.5)."""
    from .edits import TODOS_KEY, is_done_list

    todos = store.get(TODOS_KEY)
    if todos is None or is_done_list(todos.value):
        return
    fixes = [r for r in todos.references if r.startswith(ERROR_KEY_PREFIX) and r != error_key]
    others = [r for r in todos.references if not r.startswith(ERROR_KEY_PREFIX)]
    references = [error_key, *fixes][:FIXES_LINKED] + others
    store.save(TODOS_KEY, todos.value, references=references)


def _bash_status(payload: Mapping[str, Any]) -> int | None:
    """An exit status the payload states as a number (``exitCode``, as some
    Claude Code versions and SDKs report it), else None (the output may
    show one)."""
    response = payload.get("tool_response")
    if not isinstance(response, Mapping):
        return None
    for name in ("exitCode", "exit_code", "returnCode"):
        status = response.get(name)
        if isinstance(status, int) and not isinstance(status, bool):
            return status
    return None


def _bash_output(response: object) -> tuple[str, bool]:
    """The output of a ``PostToolUse`` Bash response, and whether Claude Code
    says it was interrupted."""
    from ..sanitize import clean_text
    from .tool_text import generic_text

    if not isinstance(response, Mapping):
        return clean_text(generic_text(response)), False
    parts = [part for name in ("stdout", "stderr") if isinstance(part := response.get(name), str)]
    if not parts and "stdout" not in response and "stderr" not in response:
        return clean_text(generic_text(response)), False
    return clean_text("\n".join(p for p in parts if p)), response.get("interrupted") is True


def _apply_edit(
    store: MemoryStore,
    name: str,
    inputs: Mapping[str, object],
    response: object,
    project: str,
) -> None:
    from .._core import MAX_KEY_BYTES
    from ..sanitize import clean_text
    from .edits import FILE_TYPE, LAST_FILES_KEY, file_change, recent_files

    change = file_change(name, inputs, response, project)
    if change is None or len(clean_text(change.key).encode()) > MAX_KEY_BYTES:
        return
    path, key = clean_text(change.path), clean_text(change.key)
    previous = store.get(LAST_FILES_KEY)
    store.save_many(
        [
            (key, clean_text(change.change), FILE_TYPE),
            (LAST_FILES_KEY, recent_files(previous.value if previous else None, path), FILE_TYPE),
        ],
        caps=_extraction_caps,
    )


def _apply_todos(store: MemoryStore, inputs: Mapping[str, object], response: object) -> None:
    from ..sanitize import clean_text
    from .edits import TODOS_KEY, TODOS_TYPE, todos_value
    from .summary import DONE_NONE, GOAL_KEY, NEXT_KEY

    todos = response.get("newTodos") if isinstance(response, Mapping) else None
    value = todos_value(todos if isinstance(todos, list) else inputs.get("todos"))
    if value is None:
        return
    # The list carries on the plan of the last compaction: its parents are
    # the fixes made for it (``_link_fix``) and the next step (whose
    # ancestry is the compaction's note), else the request. While the list
    # is the resume point, that ancestry is kept first (§15.5).
    previous = store.get(TODOS_KEY)
    parents = [
        r for r in (previous.references if previous else ()) if r.startswith(ERROR_KEY_PREFIX)
    ]
    following = store.get(NEXT_KEY)
    if following is not None and following.value != DONE_NONE:
        parents.append(NEXT_KEY)
    elif GOAL_KEY in store:
        parents.append(GOAL_KEY)
    store.save(TODOS_KEY, clean_text(value), type=TODOS_TYPE, references=parents)


def _apply_result(
    store: MemoryStore,
    name: str,
    inputs: Mapping[str, object],
    response: object,
    *,
    project: str,
    capture: Sequence[str],
) -> None:
    """A web or MCP tool's result as a §6.6 tool result (and the markers and
    KEY lines in it); tool output sets neither ``last_action`` nor
    ``last_files`` (§13.1)."""
    from ..extract import ExtractionConfig, extract_tool_result
    from ..sanitize import clean_text
    from .tool_text import capture_list, result_text

    config = ExtractionConfig(capture_tools=capture_list(capture), action=False, files=False)
    text = result_text(name, inputs, response, project)
    facts = extract_tool_result(clean_text(name), clean_text(text), config)
    if facts:
        store.save_many([(f.key, f.value, f.type) for f in facts], caps=_extraction_caps)


def _apply_summary(store: MemoryStore, summary: str) -> None:
    from ..compaction import capture_summary
    from ..sanitize import clean_text
    from .summary import GOAL_KEY, summary_facts

    text = clean_text(summary)
    facts = summary_facts(text)
    if not facts:
        capture_summary(store, text)  # not Claude Code's sections: §7
        return
    # One batch: the entries form one chain, the next step last (§3.3); the
    # request starts it (a prompt has no parent of its own).
    store.save_many(
        [(f.key, f.value, f.type, [] if f.key == GOAL_KEY else None) for f in facts],
        caps=_extraction_caps,
    )


def _apply_turn(store: MemoryStore, prompt: str, response: str, now_ms: int) -> None:
    from ..extract import ExtractionConfig, Fact, extract_turn, keep_first_per_key, turn_record
    from ..sanitize import clean_text
    from .replies import LAST_ACTION_KEY, TURN_KEYS, action_sentence, rotated_turns

    prompt, response = clean_text(prompt), clean_text(response)
    # §13.1: the last action comes from the reply's first sentence, and
    # last_files from the edits themselves, not from the reply's words.
    facts = extract_turn(prompt, response, ExtractionConfig(action=False, files=False))
    action = action_sentence(response)
    if action is not None:
        facts.append(Fact(LAST_ACTION_KEY, action))
    record = turn_record(prompt, response, now_ms)
    held = {key: entry for key in TURN_KEYS if (entry := store.get(key)) is not None}
    moved = rotated_turns(record.value, held)
    if moved is None:
        return  # this turn was saved already
    if moved:
        store.import_entries(moved)
    # The turn record first: what the turn left (its action, its markers)
    # is newer, so the newest-first fill of the block (§5.2) reaches it
    # before the long record.
    items: list[tuple[str, str, str | None]] = [(TURN_KEYS[0], record.value, None)]
    items += [(fact.key, fact.value, fact.type) for fact in keep_first_per_key(facts)]
    store.save_many(items, caps=_extraction_caps)


def _spoolable(store: MemoryStore, error: BaseException) -> bool:
    """Whether ``error`` means "try later": a busy store, or a PostgreSQL
    server that cannot be reached (its plain ``StoreError``)."""
    from ..errors import StoreBusyError, StoreError

    if isinstance(error, StoreBusyError):
        return True
    return store.path is None and type(error) is StoreError


# ----- helpers -------------------------------------------------------------


def _text(payload: Mapping[str, object], field: str) -> str:
    """A string field every payload of the event has; its absence is bad input."""
    value = payload.get(field)
    if not isinstance(value, str):
        problem = "is missing" if value is None else f"is {type(value).__name__}, not a string"
        raise HookInputError(f"{payload.get('hook_event_name')}: {field} {problem}")
    if field == "cwd" and not value:
        raise HookInputError(f"{payload.get('hook_event_name')}: cwd is empty")
    return value


def _session_id(payload: Mapping[str, object]) -> str:
    session = _text(payload, "session_id")
    from .turns import session_file_name

    try:
        session_file_name(session)  # the checks of the file name, before any write
    except ValueError as error:
        raise HookInputError(f"{payload.get('hook_event_name')}: {error}") from None
    return session


def _transcript_reply(payload: Mapping[str, object]) -> str | None:
    path = payload.get("transcript_path")
    if not isinstance(path, str) or not path:
        return None
    from .transcript import last_assistant_text

    return last_assistant_text(os.path.expanduser(path))


def _context(event: str, text: str) -> str:
    """The stdout that adds ``text`` to Claude's context. ASCII-only JSON,
    so that no locale of the hook's process can garble it."""
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}})


def _describe(error: BaseException) -> str:
    if isinstance(error, HookInputError):
        return str(error)
    detail = str(error)
    return f"{type(error).__name__}: {detail}" if detail else type(error).__name__


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MAX_PROBLEM_CHARS else line[: MAX_PROBLEM_CHARS - 3] + "..."


def _silence(stream: IO[str]) -> None:
    """Points a stream that failed (a closed pipe) at /dev/null, so that the
    interpreter's final flush cannot print an error about it."""
    with suppress(OSError, ValueError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())


def _extraction_caps(keys: Sequence[str]) -> list[Cap]:
    """The §6.7 caps of a batch, imported when a write needs them (an event
    that writes nothing does not load the caps' table)."""
    from ..caps import extraction_caps

    return extraction_caps(keys)


if TYPE_CHECKING:
    from typing import TypeVar

    _T = TypeVar("_T")
