"""AgentMemory: membolt wired into an agent loop.

An agent calls a few hooks and gets persistent memory without an LLM call:
facts are extracted from every turn, tool result, thought and compaction
summary (``extract.py``, ``compaction.py``) and written in one transaction
per hook, caps included; the memory tools come with their schemas and
dispatcher; the agent's tool calls and task list feed ``memory_query``.

Hooks never raise: an agent loop must not die because memory could not be
written (a busy store, hostile text). A failure is logged on the
``membolt`` logger and the hook returns 0.

The extraction rules, the tools and the compaction parser are imported when
first used: a process that only records a session and renders the prompt
section (a Claude Code ``SessionStart`` hook, a new process per event) does
not pay for them.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, TypeVar

from . import _core
from .caps import extraction_caps
from .errors import QueryError
from .sanitize import clean_text
from .store import MemoryStore

if TYPE_CHECKING:
    from . import tools
    from .extract import ExtractionConfig, Fact

TOOL_LOG_SIZE: Final = 200
SESSION_CONFIG_KEY: Final = "session:config"
SESSION_STARTED_KEY: Final = "session:started"
SESSION_RESUMED_KEY: Final = "session:resumed"

logger = logging.getLogger("membolt")

_T = TypeVar("_T")


def _now_ms() -> int:
    return int(time.time() * 1000)


class AgentMemory:
    """Memory for one agent loop over one store.

    ``config`` switches extraction mechanisms and sets which tools' results
    are captured; ``clock`` (Unix milliseconds) is injectable for tests.
    """

    def __init__(
        self,
        store: MemoryStore,
        *,
        config: ExtractionConfig | None = None,
        clock: Callable[[], int] = _now_ms,
    ) -> None:
        self.store = store
        self._config = config
        self._clock = clock
        self._tool_calls: deque[dict[str, Any]] = deque(maxlen=TOOL_LOG_SIZE)
        # The newest call logged by call_tool(), until the next logged call:
        # an after_tool() report of that very call is an echo, not a new call.
        self._echo_of: dict[str, Any] | None = None
        self._tasks: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    @property
    def config(self) -> ExtractionConfig:
        """The extraction switches and capture list (default: every mechanism
        on, the §6.6 capture list)."""
        if self._config is None:
            from .extract import DEFAULT_CONFIG

            self._config = DEFAULT_CONFIG
        return self._config

    @config.setter
    def config(self, config: ExtractionConfig) -> None:
        self._config = config

    # ----- the system prompt ----------------------------------------------

    def system_prompt_section(
        self, focus: str = "", max_tokens: int = _core.DEFAULT_MAX_TOKENS
    ) -> str:
        """The memory part of the system prompt (§5.9). Like the other hooks,
        it takes the focus as it comes: lone surrogates (a file name that is
        not UTF-8, a JSON ``\\ud800``) become U+FFFD (§1.5)."""
        from .prompt import system_prompt_section

        return system_prompt_section(
            self.store, clean_text(focus), max_tokens, now_ms=self._clock()
        )

    # ----- tools -----------------------------------------------------------

    def tool_schemas(
        self, schema_format: tools.SchemaFormat = "openai", *, strict: bool = False
    ) -> list[dict[str, Any]]:
        """The five memory tools for OpenAI (Chat Completions or Responses,
        ``strict`` for Structured Outputs), Anthropic or MCP clients."""
        from . import tools

        return tools.tool_schemas(schema_format, strict=strict)

    def call_tool(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> str:
        """Run a memory tool call from the model; always returns text."""
        from . import tools

        result = tools.run_tool(self.store, name, arguments, self._run_query_tool)
        self._log_tool_call(name, arguments, result, from_call_tool=True)
        return result

    def _run_query_tool(self, query: str, limit: object) -> str:
        from . import tools

        try:
            return tools.query_tool_text(self.query(query, limit))
        except QueryError as error:
            return tools.error_text(f"memory_query: {error}")

    # ----- extraction hooks (§6, §7) ----------------------------------------

    def after_turn(self, user_input: str, response: str) -> int:
        """Extract facts from one user turn and the model's reply; returns how
        many were saved (``turn:last`` is saved too, and not counted)."""

        from .extract import extract_turn, turn_record

        def run() -> int:
            turn_input, turn_response = clean_text(user_input), clean_text(response)
            facts = extract_turn(turn_input, turn_response, self.config)
            record = turn_record(turn_input, turn_response, self._clock())
            # One transaction: the batch, then the turn record as a plain save.
            return self._save_facts(facts, then=[(record.key, record.value)])

        return self._guarded("after_turn", run)

    def after_tool(self, name: str, arguments: object, result: str) -> int:
        """Record a tool call the agent ran and extract facts from its result
        (for tools on the capture list); returns how many were saved."""
        from .extract import extract_tool_result

        self._log_tool_call(name, arguments, result)
        return self._guarded(
            "after_tool",
            lambda: self._save_facts(
                extract_tool_result(clean_text(name), clean_text(result), self.config)
            ),
        )

    def save_thinking(self, text: str) -> int:
        """Keep the model's reasoning for this round (§6.9); 1, or 0 if empty."""
        from .extract import extract_thinking

        return self._guarded(
            "save_thinking",
            lambda: self._save_facts(
                extract_thinking(clean_text(text), self._clock(), self.config)
            ),
        )

    def auto_capture(self, summary: str) -> int:
        """Capture a compaction summary (§7); returns the entries written."""
        from .compaction import capture_summary

        return self._guarded(
            "auto_capture", lambda: capture_summary(self.store, clean_text(summary))
        )

    def _save_facts(self, facts: Iterable[Fact], then: list[tuple[str, str]] | None = None) -> int:
        items = [(fact.key, fact.value, fact.type) for fact in facts]
        if not items and not then:
            return 0
        return len(self.store.save_many(items, caps=extraction_caps, then=then or ()))

    def _guarded(self, hook: str, run: Callable[[], int]) -> int:
        try:
            return run()
        except Exception:
            logger.warning("membolt: %s could not save its facts", hook, exc_info=True)
            return 0

    # ----- sessions (§8) ------------------------------------------------------

    def start_session(
        self,
        model: str | None = None,
        backend: str | None = None,
        base_url: str | None = None,
        resumed: bool = False,
        *,
        cwd: str | os.PathLike[str] | None = None,
    ) -> None:
        """Record where and with what model this session runs."""
        key = SESSION_RESUMED_KEY if resumed else SESSION_STARTED_KEY
        where = os.path.abspath(os.fspath(cwd) if cwd is not None else os.getcwd())

        def run() -> int:
            with self.store.batch() as batch:
                batch.save(key, where)
                batch.save(SESSION_CONFIG_KEY, _session_config(model, backend, base_url))
            return 2

        self._guarded("start_session", run)

    def switch_model(
        self, model: str | None = None, backend: str | None = None, base_url: str | None = None
    ) -> None:
        """Record a model switch, so the next session restores it."""
        self._guarded(
            "switch_model",
            lambda: bool(
                self.store.save(SESSION_CONFIG_KEY, _session_config(model, backend, base_url))
            ),
        )

    def restore_session_config(self) -> dict[str, str]:
        """The last saved ``{"model", "backend", "base_url"}`` (``{}`` if none
        or if the stored value is not a JSON object of strings)."""
        try:
            entry = self.store.get(SESSION_CONFIG_KEY)
        except Exception:
            logger.warning("membolt: cannot read %s", SESSION_CONFIG_KEY, exc_info=True)
            return {}
        if entry is None:
            return {}
        try:
            config = json.loads(entry.value)
        except ValueError:
            return {}
        if not isinstance(config, dict):
            return {}
        return {str(k): v for k, v in config.items() if isinstance(v, str)}

    # ----- relations for memory_query ----------------------------------------

    def query(self, expression: str, limit: object = None, *, memory_cap: int | None = None) -> Any:
        """Evaluate a ``memory_query`` expression (§9).

        Relations: ``memory`` (every entry, or the newest ``memory_cap``),
        ``tool_calls`` and ``tasks`` of this agent. A list of rows comes back
        as ``{"count": N, "rows": [...first limit...], "truncated": bool}``,
        any other value as it is. ``limit`` follows §9.3 (the default, and
        anything that is not a positive number, is 50; at most 500). Raises
        :class:`~membolt.QueryError`.
        """
        from . import tools

        if not isinstance(expression, str):
            raise QueryError("query must be a string", kind="compile")
        return self.store.query(
            expression,
            tool_calls=self.tool_calls,
            tasks=self.tasks,
            limit=tools.query_limit(limit),
            memory_cap=memory_cap,
        )

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        """The newest 200 tool calls, oldest first (the ``tool_calls`` relation)."""
        with self._lock:
            return [dict(call) for call in self._tool_calls]

    @property
    def tasks(self) -> list[dict[str, Any]]:
        """The active task list (the ``tasks`` relation): rows of ``id, desc,
        status`` (pending, active, done, failed), ``rounds, note``."""
        with self._lock:
            return [dict(task) for task in self._tasks]

    @tasks.setter
    def tasks(self, rows: Iterable[Mapping[str, Any]]) -> None:
        with self._lock:
            self._tasks = [dict(row) for row in rows]

    def _log_tool_call(
        self, name: object, arguments: object, result: object, *, from_call_tool: bool = False
    ) -> None:
        # Cleaned, so that one odd call cannot break every later query.
        call = {
            "name": clean_text(name),
            "args": _arguments_text(arguments),
            "result": clean_text(result),
            "timestamp": self._clock(),
        }
        with self._lock:
            echo_of, self._echo_of = self._echo_of, (call if from_call_tool else None)
            # An agent that reports a memory tool call it made through
            # call_tool() to after_tool() as well must not log it twice; two
            # identical calls the agent ran itself are two calls.
            if not from_call_tool and echo_of is not None and _same_call(echo_of, call):
                return
            self._tool_calls.append(call)


def _arguments_text(arguments: object) -> str:
    """``args`` of a logged call: as given when text, else its JSON."""
    if isinstance(arguments, str):
        return clean_text(arguments)
    try:
        # §9.2: json.dumps of it (non-JSON values as their str).
        return clean_text(json.dumps(arguments, default=str))
    except Exception:  # too deeply nested, a failing __str__, ...
        return f"<{type(arguments).__name__} that is not JSON>"


def _same_call(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return all(a[field] == b[field] for field in ("name", "args", "result"))


def _session_config(model: str | None, backend: str | None, base_url: str | None) -> str:
    fields = {"model": model, "backend": backend, "base_url": base_url}
    return json.dumps({k: v for k, v in fields.items() if v}, ensure_ascii=False)
