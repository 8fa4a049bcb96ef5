"""AgentMemory: membolt wired into an agent loop.

An agent calls a few hooks and gets persistent memory for free: the memory
tools (schemas and dispatcher), a log of its tool calls and its task list
for ``memory_query``, and (see the hooks below) facts extracted from every
turn, tool result, thought and compaction summary.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any, Final

from . import tools
from .errors import QueryError
from .store import MemoryStore

TOOL_LOG_SIZE: Final = 200


class AgentMemory:
    """Memory for one agent loop over one store."""

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self._tool_calls: deque[dict[str, Any]] = deque(maxlen=TOOL_LOG_SIZE)
        self._tasks: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    # ----- tools ---------------------------------------------------------

    def tool_schemas(self, schema_format: tools.SchemaFormat = "openai") -> list[dict[str, Any]]:
        """The five memory tools for OpenAI, Anthropic or MCP clients."""
        return tools.tool_schemas(schema_format)

    def call_tool(self, name: str, arguments: Mapping[str, Any] | str | None = None) -> str:
        """Run a memory tool call from the model; always returns text."""
        result = tools.run_tool(self.store, name, arguments, self._run_query_tool)
        self._log_tool_call(name, arguments, result)
        return result

    def _run_query_tool(self, query: str, limit: object) -> str:
        try:
            return tools.query_text(self.query(query, limit))
        except QueryError as error:
            return tools.error_text(f"memory_query: {error}")

    # ----- memory_query ----------------------------------------------------

    def query(
        self, expression: str, limit: object = tools.QUERY_LIMIT, *, memory_cap: int | None = None
    ) -> Any:
        """Evaluate a ``memory_query`` expression (BEHAVIOUR §9).

        Relations: ``memory`` (every entry, or the newest ``memory_cap``),
        ``tool_calls`` and ``tasks`` of this agent. A list of rows comes back
        as ``{"count": N, "rows": [...first limit...], "truncated": bool}``,
        any other value as it is. Raises :class:`~membolt.QueryError`.
        """
        if not isinstance(expression, str):
            raise QueryError("query must be a string", kind="compile")
        return self.store._query(
            expression,
            self.tool_calls,
            self.tasks,
            tools.query_limit(limit),
            memory_cap,
        )

    # ----- relations for memory_query ------------------------------------

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        """The newest 200 tool calls, oldest first (the ``tool_calls`` relation)."""
        with self._lock:
            return [dict(call) for call in self._tool_calls]

    @property
    def tasks(self) -> list[dict[str, Any]]:
        """The active task list (the ``tasks`` relation)."""
        with self._lock:
            return [dict(task) for task in self._tasks]

    @tasks.setter
    def tasks(self, rows: Iterable[Mapping[str, Any]]) -> None:
        with self._lock:
            self._tasks = [dict(row) for row in rows]

    def _log_tool_call(self, name: object, arguments: object, result: object) -> None:
        if isinstance(arguments, str):
            args_text = arguments
        else:
            try:
                args_text = json.dumps(arguments, ensure_ascii=False, default=str)
            except (TypeError, ValueError):
                args_text = repr(arguments)
        with self._lock:
            self._tool_calls.append(
                {
                    "name": str(name),
                    "args": args_text,
                    "result": result if isinstance(result, str) else str(result),
                    "timestamp": int(time.time() * 1000),
                }
            )
