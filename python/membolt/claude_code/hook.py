"""``membolt hook claude-code``: one command for every Claude Code hook event.

Claude Code starts the command for each event it is registered for and
writes the event's JSON object to its stdin (§13):

- ``SessionStart``: ``start_session(resumed=source != "startup")``; prints
  the §5.9 section (focus ``""``) as context for Claude;
- ``UserPromptSubmit``: keeps the prompt for the turn (``turns.py``); prints
  ``render(prompt, 200)`` as context when the ranked search (§15.3) finds
  an entry for the prompt, else nothing;
- ``PostToolUse``: ``after_tool`` with the result as text, for the tools on
  the capture list (``tool_text.py``); the others open nothing;
- ``PostCompact``: ``auto_capture(compact_summary)``;
- ``Stop``: ``after_turn(<the turn's prompt>, last_assistant_message)`` (the
  reply read from the transcript when the payload lacks it);
- any other event: nothing.

Every printed context keeps the §15.5 ceiling of 10,000 characters
(``context_cap.py``).

A hook must never disturb the session: :func:`run` returns 0 whatever
happens (bad JSON, missing fields, a busy or damaged store, an unwritable
directory), writes at most one line to stderr (Claude Code shows it in its
debug log), and prints only the output the event asks for, after the
event's writes are done. The fields an event needs are checked before the
store is opened, so bad input leaves the store as it was.

Imports are made where they are needed: the process lives for one event,
and the events that print nothing should not pay for rendering, the events
that extract nothing not for the extraction rules.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import IO, TYPE_CHECKING, Final

if TYPE_CHECKING:
    from ..agent import AgentMemory
    from ..store import MemoryStore

#: Budget of the focused block added to a prompt (§13).
PROMPT_BLOCK_TOKENS: Final = 200
#: The directory of pending turn prompts, beside the store file.
TURNS_DIRECTORY: Final = "claude-code-turns"
#: Longest line written to stderr.
MAX_PROBLEM_CHARS: Final = 500


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
    is how long to wait for a busy store; ``capture`` adds tool names (MCP
    tools) to the capture list.
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
        self.timeout = timeout
        self.capture = tuple(capture)
        #: The first thing that went wrong but did not stop the event.
        self.problem: str | None = None

    def handle(self, data: bytes) -> str | None:
        """The event's stdout (a JSON object), or None for none."""
        try:
            payload = json.loads(data)
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

    def session_start(self, payload: Mapping[str, object]) -> str | None:
        source = _text(payload, "source")
        cwd = _text(payload, "cwd")
        store = self.open_store(cwd)
        memory = _agent_memory(store)
        with self.reporting_failures():
            memory.start_session(resumed=source != "startup", cwd=cwd)
        if self.problem is not None:
            return None  # the writes failed; rendering would wait on the same store
        self.remember_problem(lambda: self.turns(store).prune())
        from .._core import DEFAULT_MAX_TOKENS
        from .context_cap import within_ceiling

        section = within_ceiling(
            lambda budget: memory.system_prompt_section("", budget), DEFAULT_MAX_TOKENS
        )
        return _context("SessionStart", section)

    def user_prompt_submit(self, payload: Mapping[str, object]) -> str | None:
        from ..sanitize import clean_text

        session = _session_id(payload)
        prompt = clean_text(_text(payload, "prompt"))
        store = self.open_store(_text(payload, "cwd"))
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

    def post_tool_use(self, payload: Mapping[str, object]) -> str | None:
        from .tool_text import capture_list, is_captured, result_text

        name = _text(payload, "tool_name")
        capture = capture_list(self.capture)
        if not is_captured(name, capture):
            return None  # a read-only tool: not even the store is opened
        if "tool_response" not in payload:
            raise HookInputError("tool_response is missing")
        cwd = _text(payload, "cwd")
        tool_input = payload.get("tool_input", {})
        text = result_text(name, tool_input, payload["tool_response"], cwd)
        from ..extract import ExtractionConfig

        memory = _agent_memory(self.open_store(cwd), ExtractionConfig(capture_tools=capture))
        with self.reporting_failures():
            memory.after_tool(name, tool_input, text)
        return None

    def post_compact(self, payload: Mapping[str, object]) -> str | None:
        summary = _text(payload, "compact_summary")
        memory = _agent_memory(self.open_store(_text(payload, "cwd")))
        with self.reporting_failures():
            memory.auto_capture(summary)
        return None

    def stop(self, payload: Mapping[str, object]) -> str | None:
        session = _session_id(payload)
        cwd = _text(payload, "cwd")
        response = payload.get("last_assistant_message")
        if not isinstance(response, str):
            response = _transcript_reply(payload)
        store = self.open_store(cwd)
        prompt = self.remember_problem(lambda: self.turns(store).take(session))
        if response is None:
            raise HookInputError(
                "no last_assistant_message, and no reply in the transcript: the turn is not saved"
            )
        memory = _agent_memory(store)
        with self.reporting_failures():
            memory.after_turn(prompt or "", response)
        return None

    # ----- the store and the state beside it ------------------------------

    def open_store(self, cwd: str) -> MemoryStore:
        """The store the event acts on, chosen as every command chooses it
        (``membolt.store.open_store``): ``--db``, else
        ``$MEMBOLT_DATABASE_URL``, else the project of ``--cwd``, else the
        project at the payload's ``cwd``."""
        from ..store import DEFAULT_TIMEOUT, open_store

        timeout = DEFAULT_TIMEOUT if self.timeout is None else self.timeout
        return open_store(self.db, self.project_dir or cwd, self.project, timeout=timeout)

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

    @contextmanager
    def reporting_failures(self) -> Iterator[None]:
        """``AgentMemory``'s hooks never raise: they log a warning on the
        ``membolt`` logger and save nothing. For the block, that warning is
        taken as the event's problem line, and kept off stderr (the logging
        module would print the whole traceback there)."""
        import logging

        captured: list[logging.LogRecord] = []

        class Capture(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                captured.append(record)

        logger = logging.getLogger("membolt")
        handler, propagate = Capture(logging.WARNING), logger.propagate
        logger.addHandler(handler)
        logger.propagate = False
        try:
            yield
        finally:
            logger.removeHandler(handler)
            logger.propagate = propagate
        if captured and self.problem is None:
            record = captured[0]
            cause = record.exc_info[1] if record.exc_info else None
            message = record.getMessage()
            self.problem = f"{message}: {_describe(cause)}" if cause is not None else message


_HANDLERS: Final[dict[str, Callable[[Hook, Mapping[str, object]], str | None]]] = {
    "SessionStart": Hook.session_start,
    "UserPromptSubmit": Hook.user_prompt_submit,
    "PostToolUse": Hook.post_tool_use,
    "PostCompact": Hook.post_compact,
    "Stop": Hook.stop,
}


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


def _agent_memory(store: MemoryStore, config: ExtractionConfig | None = None) -> AgentMemory:
    from ..agent import AgentMemory

    return AgentMemory(store) if config is None else AgentMemory(store, config=config)


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


if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeVar

    from ..extract import ExtractionConfig
    from .turns import TurnPrompts

    _T = TypeVar("_T")
