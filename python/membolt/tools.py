"""The five LLM-callable memory tools (§4).

Each tool is defined once (name, description, JSON-schema parameters) and
exported in the shape each client expects: OpenAI function calling,
Anthropic tool use, and MCP. :func:`run_tool` executes a call against a
store and always answers text: a tool's output, or ``{"error": "..."}``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from . import _core
from .errors import MemboltError
from .sanitize import clean_text
from .store import MemoryStore

SchemaFormat = Literal["openai", "anthropic", "mcp"]

SEARCH_LIMIT: Final = 20
QUERY_LIMIT: Final = 50  # rows of a memory_query result by default
QUERY_MAX_LIMIT: Final = 500
LIST_LIMIT: Final = 500
VALUE_LIMIT: Final = 500  # bytes of a value shown by memory_search
ERROR_LIMIT: Final = 500  # bytes of an error message


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


TOOLS: Final[tuple[ToolSpec, ...]] = (
    ToolSpec(
        "memory_save",
        "Save a fact to persistent project memory, or overwrite the fact stored under the "
        "same key. Keys are short and descriptive (e.g. 'decision:database', "
        "'progress:auth'); the key's words set its type. Saved facts survive restarts.",
        _object(
            {
                "key": {"type": "string", "description": "Short, descriptive, unique key."},
                "value": {"type": "string", "description": "The fact to remember."},
            },
            ["key", "value"],
        ),
    ),
    ToolSpec(
        "memory_search",
        "Search persistent memory: case-insensitive substring match against keys and "
        "values. Key matches come first, then the newest. Use it before starting work.",
        _object(
            {"query": {"type": "string", "description": "Text to look for."}},
            ["query"],
        ),
    ),
    ToolSpec(
        "memory_delete",
        "Delete one entry from persistent memory by its exact key.",
        _object({"key": {"type": "string", "description": "The key to delete."}}, ["key"]),
    ),
    ToolSpec(
        "memory_list",
        "List the keys stored in persistent memory (no values; use memory_search for content).",
        _object({}, []),
    ),
    ToolSpec(
        "memory_query",
        "Run a relational query (an expr-lang expression) over the relations 'memory' "
        "(key, value, namespace, type, references, createdAt, updatedAt), 'tool_calls' "
        "(name, args, result, timestamp) and 'tasks' (id, desc, status, rounds, note). "
        'Examples: filter(memory, .type == "error"); map(memory, {key: .key, value: '
        '.value}); join(tool_calls, memory, "name", "key"); union(a, b).',
        _object(
            {
                "query": {"type": "string", "description": "The expression to evaluate."},
                "limit": {
                    "type": "integer",
                    "description": "Maximum rows returned (default 50, at most 500).",
                },
            },
            ["query"],
        ),
    ),
)

TOOL_NAMES: Final = tuple(tool.name for tool in TOOLS)

ALIASES: Final[dict[str, str]] = {
    "remember": "memory_save",
    "memorize": "memory_save",
    "recall": "memory_search",
    "forget": "memory_delete",
}


def tool_schemas(schema_format: SchemaFormat = "openai") -> list[dict[str, Any]]:
    """The five tools in the shape ``schema_format`` expects."""
    if schema_format == "openai":
        return [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in TOOLS
        ]
    if schema_format == "anthropic":
        return [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in TOOLS
        ]
    if schema_format == "mcp":
        return [
            {"name": t.name, "description": t.description, "inputSchema": t.parameters}
            for t in TOOLS
        ]
    raise ValueError(
        f"unknown schema format {schema_format!r}; expected 'openai', 'anthropic' or 'mcp'"
    )


def quote(key: str) -> str:
    """A key as the tools print it: JSON-quoted, non-ASCII kept."""
    return json.dumps(key, ensure_ascii=False)


def error_text(message: str) -> str:
    """The JSON error object a tool returns instead of raising."""
    return json.dumps({"error": _core.truncate(message, ERROR_LIMIT)}, ensure_ascii=False)


class ToolError(Exception):
    """A tool call the model got wrong; its message starts with the tool name."""


QueryRunner = Callable[[str, object], str]


def parse_arguments(tool: str, arguments: object) -> dict[str, Any]:
    """Arguments as a dict: a mapping, JSON object text, or nothing."""
    if arguments is None or arguments == "":
        return {}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError as error:
            raise ToolError(f"{tool}: arguments are not valid JSON ({error})") from None
        except RecursionError:
            raise ToolError(f"{tool}: arguments are nested too deeply") from None
    if not isinstance(arguments, Mapping):
        raise ToolError(f"{tool}: arguments must be a JSON object")
    return dict(arguments)


def _text_argument(tool: str, arguments: Mapping[str, Any], name: str) -> str:
    """A required, non-blank string argument."""
    value = arguments.get(name)
    if value is None or (isinstance(value, str) and not value.strip()):
        raise ToolError(f"{tool}: {name} is required")
    if not isinstance(value, str):
        raise ToolError(f"{tool}: {name} must be a string, not {type(value).__name__}")
    return value


def memory_save(store: MemoryStore, arguments: Mapping[str, Any]) -> str:
    key = _text_argument("memory_save", arguments, "key")
    value = _text_argument("memory_save", arguments, "value")
    store.save(key, value)
    return f"Saved memory entry {quote(key)} ({len(value.encode())} bytes)"


def memory_search(store: MemoryStore, arguments: Mapping[str, Any]) -> str:
    query = _text_argument("memory_search", arguments, "query")
    total, hits = store.search_ranked(query, SEARCH_LIMIT)
    if total == 0:
        return "No memory entries found."
    lines = [f"Found {total} memory entries:\n"]
    for entry in hits:
        value = _core.truncate(_core.flatten_plain(entry.value), VALUE_LIMIT)
        lines.append(f"- {_core.flatten_plain(entry.key)}: {value}\n")
    if total > SEARCH_LIMIT:
        lines.append(f"... and {total - SEARCH_LIMIT} more (refine the query)\n")
    return "".join(lines)


def memory_delete(store: MemoryStore, arguments: Mapping[str, Any]) -> str:
    key = _text_argument("memory_delete", arguments, "key")
    if store.delete(key):
        return f"Deleted memory entry {quote(key)}."
    return f"No memory entry {quote(key)}."


def memory_list(store: MemoryStore, arguments: Mapping[str, Any]) -> str:
    total = len(store)
    if total == 0:
        return "No memory entries."
    keys = store.keys() if total <= LIST_LIMIT else sorted(store.newest_keys(LIST_LIMIT))
    lines = [f"{total} memory entries:\n", *(f"- {_core.flatten_plain(key)}\n" for key in keys)]
    if total > LIST_LIMIT:
        lines.append(
            f"... and {total - LIST_LIMIT} more (use memory_search to find older entries)\n"
        )
    return "".join(lines)


_HANDLERS: Final[dict[str, Callable[[MemoryStore, Mapping[str, Any]], str]]] = {
    "memory_save": memory_save,
    "memory_search": memory_search,
    "memory_delete": memory_delete,
    "memory_list": memory_list,
}


def query_limit(limit: object) -> int:
    """§9.3: the row limit a caller's ``limit`` means.

    Floats are truncated; anything that is not a positive number (booleans,
    strings, ``None``, NaN, values <= 0) means the default 50; the most is 500.
    """
    if isinstance(limit, bool) or not isinstance(limit, int | float):
        return QUERY_LIMIT
    if isinstance(limit, float):
        if math.isnan(limit) or limit == -math.inf:
            return QUERY_LIMIT
        if limit >= QUERY_MAX_LIMIT:
            return QUERY_MAX_LIMIT
        limit = int(limit)
    # An int of any size compares without overflow.
    if limit >= QUERY_MAX_LIMIT:
        return QUERY_MAX_LIMIT
    return limit if limit > 0 else QUERY_LIMIT


def query_text(result: object) -> str:
    """A query result as the tool prints it: JSON with sorted keys. JSON has
    no NaN or infinity; such a number (``0/0``) is printed as ``null``."""
    try:
        return json.dumps(result, sort_keys=True, ensure_ascii=False, allow_nan=False)
    except ValueError:
        return json.dumps(_finite(result), sort_keys=True, ensure_ascii=False, allow_nan=False)


def _finite(value: object) -> object:
    """``value`` with every NaN and infinity replaced by None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value


def canonical_name(name: object) -> str | None:
    """The tool a called name means (aliases resolved), or None."""
    if not isinstance(name, str):
        return None
    name = ALIASES.get(name, name)
    return name if name in TOOL_NAMES else None


def run_tool(
    store: MemoryStore,
    name: object,
    arguments: object,
    run_query: QueryRunner | None = None,
) -> str:
    """Execute one tool call; never raises for bad input or a store failure."""
    tool = canonical_name(name)
    if tool is None:
        return error_text(
            f"{clean_text(name)}: unknown memory tool; expected one of {', '.join(TOOL_NAMES)}"
        )
    try:
        parsed = parse_arguments(tool, arguments)
        if tool == "memory_query":
            if run_query is None:
                raise ToolError("memory_query: not available")
            return run_query(_text_argument(tool, parsed, "query"), parsed.get("limit"))
        return _HANDLERS[tool](store, parsed)
    except ToolError as error:
        return error_text(str(error))
    except (MemboltError, ValueError, TypeError, KeyError, OSError) as error:
        return error_text(f"{tool}: {error}")
    except Exception as error:  # §4: the dispatcher never raises
        return error_text(f"{tool}: internal error: {type(error).__name__}: {error}")
