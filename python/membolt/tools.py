"""The five LLM-callable memory tools (§4).

Each tool is defined once (name, description, JSON-schema parameters, MCP
annotations) and exported in the shape each client expects: OpenAI function
calling (plain or strict), the OpenAI Responses API, Anthropic tool use, and
MCP. :func:`run_tool` executes a call against a store and always answers
text: a tool's output, or ``{"error": "..."}``.

Every text a tool returns is one line per line for any reader: keys and
values are neutralised (§5.4) in the listings, and the JSON the tools print
escapes the three line separators JSON leaves raw (U+0085, U+2028, U+2029).
A ``memory_query`` text is bounded (§14).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from . import _core
from .errors import MemboltError, StoreBusyError
from .sanitize import clean_text
from .store import MemoryStore
from .tool_names import ALIASES

SchemaFormat = Literal["openai", "responses", "anthropic", "mcp"]
SCHEMA_FORMATS: Final[tuple[SchemaFormat, ...]] = ("openai", "responses", "anthropic", "mcp")
#: The formats with an OpenAI strict mode (Structured Outputs).
STRICT_FORMATS: Final[tuple[SchemaFormat, ...]] = ("openai", "responses")

SEARCH_LIMIT: Final = 20
QUERY_LIMIT: Final = _core.DEFAULT_QUERY_LIMIT  # rows of a memory_query result by default
QUERY_MAX_LIMIT: Final = 500
LIST_LIMIT: Final = 500
VALUE_LIMIT: Final = 500  # bytes of a value shown by memory_search
ERROR_LIMIT: Final = 500  # bytes of an error message
#: §14: bytes of a memory_query text before it is cut (64 KiB).
QUERY_TEXT_LIMIT: Final = 65_536
#: §4, §14: bytes of a memory_list text at most (64 KiB).
LIST_TEXT_LIMIT: Final = 65_536
BUSY_MESSAGE: Final = "the memory store is busy (another process is using it); retry in a moment"


@dataclass(frozen=True)
class ToolAnnotations:
    """MCP tool annotations: hints about what a call does, for a client
    deciding whether to ask the user first or whether a retry is safe (a
    client must not trust them from an unknown server; they never replace a
    check). Every memory tool works on the project's store and nothing else,
    so none is open-world."""

    title: str
    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool = False

    def to_mcp(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "readOnlyHint": self.read_only,
            "destructiveHint": self.destructive,
            "idempotentHint": self.idempotent,
            "openWorldHint": self.open_world,
        }


def _reader(title: str) -> ToolAnnotations:
    """A tool that only reads. (The destructive and idempotent hints mean
    nothing for a read-only tool; they are given for clients that read them
    anyway.)"""
    return ToolAnnotations(title, read_only=True, destructive=False, idempotent=True)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]
    annotations: ToolAnnotations

    @property
    def argument_names(self) -> tuple[str, ...]:
        """The arguments the tool takes, in schema order (the dispatcher
        refuses any other)."""
        return tuple(self.parameters["properties"])


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
                "type": {
                    "type": "string",
                    "description": "The entry's type (e.g. decision, progress, error); "
                    "inferred from the key when omitted.",
                },
            },
            ["key", "value"],
        ),
        # Not read-only; destructive because saving under an existing key
        # replaces the fact stored there (the old value is gone), so a client
        # that confirms destructive calls must not take a save for an append;
        # idempotent because saving the same arguments again leaves the same
        # entry (only its write stamp moves).
        ToolAnnotations("Save a memory", read_only=False, destructive=True, idempotent=True),
    ),
    ToolSpec(
        "memory_search",
        "Search persistent memory: case-insensitive substring match against keys and "
        "values. Key matches come first, then the newest. When nothing holds the whole "
        "query, the entries sharing its words are listed, best match first. Use it before "
        "starting work.",
        _object(
            {"query": {"type": "string", "description": "Text to look for."}},
            ["query"],
        ),
        _reader("Search memory"),
    ),
    ToolSpec(
        "memory_delete",
        "Delete one entry from persistent memory by its exact key.",
        _object({"key": {"type": "string", "description": "The key to delete."}}, ["key"]),
        # Deleting a key again changes nothing more.
        ToolAnnotations("Delete a memory", read_only=False, destructive=True, idempotent=True),
    ),
    ToolSpec(
        "memory_list",
        "List the keys stored in persistent memory (no values; use memory_search for content).",
        _object({}, []),
        _reader("List memory keys"),
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
                    "description": f"Maximum rows returned (default {QUERY_LIMIT}, "
                    f"at most {QUERY_MAX_LIMIT}).",
                },
            },
            ["query"],
        ),
        _reader("Query memory"),
    ),
)

#: The names of :data:`TOOLS`, in order; ``tool_names.TOOL_NAMES`` is the
#: table the rest of the package reads, and a test holds the two equal.
TOOL_NAMES: Final = tuple(tool.name for tool in TOOLS)


def tool_schemas(
    schema_format: SchemaFormat = "openai", *, strict: bool = False
) -> list[dict[str, Any]]:
    """The five tools in the shape ``schema_format`` expects.

    ``"openai"``: Chat Completions function tools; ``"responses"``: the flat
    function tools of the Responses API; ``"anthropic"``: Anthropic tool use;
    ``"mcp"``: MCP ``Tool`` objects, with their annotations.

    ``strict=True`` (``"openai"`` and ``"responses"``) gives OpenAI's strict
    form (Structured Outputs): every property is required, an optional one
    is nullable (the model sends ``null`` for "not given", which the
    dispatcher takes as absent), and the tool says ``"strict": true``.
    """
    if schema_format not in SCHEMA_FORMATS:
        raise ValueError(
            f"unknown schema format {schema_format!r}; "
            f"expected one of {', '.join(map(repr, SCHEMA_FORMATS))}"
        )
    if strict and schema_format not in STRICT_FORMATS:
        raise ValueError(
            f"strict=True is an option of the OpenAI formats ({', '.join(STRICT_FORMATS)}), "
            f"not of {schema_format!r}"
        )
    return [_export(t, schema_format, strict) for t in TOOLS]


def _export(tool: ToolSpec, schema_format: SchemaFormat, strict: bool) -> dict[str, Any]:
    parameters = strict_parameters(tool.parameters) if strict else tool.parameters
    if schema_format == "openai":
        function: dict[str, Any] = {
            "name": tool.name,
            "description": tool.description,
            "parameters": parameters,
        }
        if strict:
            function["strict"] = True
        return {"type": "function", "function": function}
    if schema_format == "responses":
        return {
            "type": "function",
            "name": tool.name,
            "description": tool.description,
            "parameters": parameters,
            "strict": strict,
        }
    if schema_format == "anthropic":
        return {"name": tool.name, "description": tool.description, "input_schema": parameters}
    return {
        "name": tool.name,
        "title": tool.annotations.title,
        "description": tool.description,
        "inputSchema": parameters,
        "annotations": tool.annotations.to_mcp(),
    }


def strict_parameters(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """``parameters`` (a flat object schema) in OpenAI's strict form: every
    property listed in ``required``, each optional one made nullable
    (``"type": ["integer", "null"]``), no other properties allowed."""
    required = set(parameters["required"])
    properties: dict[str, Any] = {}
    for name, schema in parameters["properties"].items():
        if name in required:
            properties[name] = dict(schema)
        else:
            properties[name] = {**schema, "type": [schema["type"], "null"]}
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }


#: JSON leaves these three as they are inside strings (with non-ASCII kept),
#: and each ends a line for some reader (Python's ``str.splitlines()``, the
#: Unicode line-breaking rules); escaped, the JSON means the same and stays
#: one line. (Every other such character is a control JSON escapes anyway.)
_JSON_LINE_BREAK_ESCAPES: Final = {0x85: "\\u0085", 0x2028: "\\u2028", 0x2029: "\\u2029"}


def _json_line(value: object, **options: Any) -> str:
    """``json.dumps`` with non-ASCII kept, as one line for every reader."""
    return json.dumps(value, ensure_ascii=False, **options).translate(_JSON_LINE_BREAK_ESCAPES)


def quote(key: str) -> str:
    """A key as the tools print it: JSON-quoted, non-ASCII kept (but for the
    line separators, escaped so that the text stays one line)."""
    return _json_line(key)


def error_text(message: str) -> str:
    """The JSON error object a tool returns instead of raising."""
    return _json_line({"error": _core.truncate(message, ERROR_LIMIT)})


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


def _optional_text_argument(tool: str, arguments: Mapping[str, Any], name: str) -> str | None:
    """An optional string argument (absent or null: None; any string as is)."""
    value = arguments.get(name)
    if value is not None and not isinstance(value, str):
        raise ToolError(f"{tool}: {name} must be a string, not {type(value).__name__}")
    return value


def memory_save(store: MemoryStore, arguments: Mapping[str, Any]) -> str:
    key = _text_argument("memory_save", arguments, "key")
    value = _text_argument("memory_save", arguments, "value")
    # §1.3: None infers the type (new key) or keeps it (existing key).
    entry_type = _optional_text_argument("memory_save", arguments, "type")
    store.save(key, value, type=entry_type)
    return f"Saved memory entry {quote(key)} ({len(value.encode())} bytes)"


def memory_search(store: MemoryStore, arguments: Mapping[str, Any]) -> str:
    """§4: the entries holding the whole query; when none does, the (0.2)
    word fallback: entries matching at least half of its significant words."""
    query = _text_argument("memory_search", arguments, "query")
    total, hits = store.search_ranked(query, SEARCH_LIMIT)
    heading = f"Found {total} memory entries:\n"
    if total == 0:
        total, hits = store.search_words_ranked(query, SEARCH_LIMIT)
        heading = f"No entry holds the whole query; {total} memory entries match its words:\n"
    if total == 0:
        return "No memory entries found."
    lines = [heading]
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
    """§4: every key, sorted; of a store with more than 500 keys, or whose
    list would pass 64 KiB, the newest keys that fit (at most 500), sorted,
    and a last line counting the rest."""
    total = len(store)
    if total == 0:
        return "No memory entries."
    heading = f"{total} memory entries:\n"
    if total <= LIST_LIMIT:
        lines = [f"- {_core.flatten_plain(key)}\n" for key in store.keys()]
        if len(heading.encode()) + sum(len(line.encode()) for line in lines) <= LIST_TEXT_LIMIT:
            return heading + "".join(lines)
    # The newest first, while they fit with the heading and the last line
    # (whose count is at most ``total``'s length).
    rest = f"... and {total} more (use memory_search to find older entries)\n"
    room = LIST_TEXT_LIMIT - len(heading.encode()) - len(rest.encode())
    shown: list[str] = []
    for key in store.newest_keys(min(total, LIST_LIMIT)):
        line = f"- {_core.flatten_plain(key)}\n"
        room -= len(line.encode())
        if room < 0:
            break
        shown.append(key)
    lines = [f"- {_core.flatten_plain(key)}\n" for key in sorted(shown)]
    more = f"... and {total - len(shown)} more (use memory_search to find older entries)\n"
    return heading + "".join(lines) + more


_SPECS: Final[dict[str, ToolSpec]] = {tool.name: tool for tool in TOOLS}

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
    """A query result as JSON with sorted keys, whole (the ``membolt query``
    command). JSON has no NaN or infinity; such a number (``0/0``) is printed
    as ``null``."""
    try:
        return _json_line(result, sort_keys=True, allow_nan=False)
    except ValueError:
        return _json_line(_finite(result), sort_keys=True, allow_nan=False)


def query_tool_text(result: object, limit: int = QUERY_TEXT_LIMIT) -> str:
    """A query result as the ``memory_query`` tool returns it (§9.3, §14):
    :func:`query_text`, but when that is longer than ``limit`` bytes, the
    longest prefix that fits, cut where JSON allows: after a whole row of
    the rows object, a whole item of a list, a whole field of an object,
    or inside a string (§6.8, ``...`` appended). So the text is still one
    valid JSON document, followed by a line saying what was cut and how to
    narrow the query: a program that parses the whole text fails loudly
    instead of taking part of a result for all of it, and the model reads
    the rows as they are. Rows are encoded one at a time and encoding stops
    once ``limit`` bytes are passed, so a result of megabytes costs little
    more than that.
    """
    try:
        return _bounded_json(result, limit)
    except ValueError:
        return _bounded_json(_finite(result), limit)


_ENCODER: Final = json.JSONEncoder(sort_keys=True, ensure_ascii=False, allow_nan=False)


def _encode(value: object) -> str:
    return _ENCODER.encode(value).translate(_JSON_LINE_BREAK_ESCAPES)


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))  # a task row may hold one


def _bounded_json(result: object, limit: int) -> str:
    whole = _within(result, limit)
    if whole is not None:
        return whole
    text, shown = _cut(result, limit)
    return (
        f"{text}\n"
        f"[output cut at {limit:,} bytes{shown}: narrow the query with a smaller limit, "
        "filter(...) to fewer rows, or map(...) to fewer fields]"
    )


def _within(result: object, limit: int) -> str | None:
    """``result``'s JSON text, or None as soon as it passes ``limit`` bytes."""
    chunks: list[str] = []
    size = 0
    for raw in _ENCODER.iterencode(result):
        chunk = raw.translate(_JSON_LINE_BREAK_ESCAPES)
        chunks.append(chunk)
        size += _size(chunk)
        if size > limit:
            return None
    return "".join(chunks)


def _cut(result: object, limit: int) -> tuple[str, str]:
    """The longest valid JSON prefix of ``result`` within ``limit`` bytes (see
    :func:`query_tool_text`), and what it shows, for the notice."""
    if (
        isinstance(result, dict)
        and set(result) == {"count", "rows", "truncated"}
        and isinstance(result["rows"], list)
    ):
        # §9.3's rows object: its rows cut, "truncated" then true.
        head = f'{{"count": {_encode(result["count"])}, "rows": ['
        tail = '], "truncated": true}'
        rows = _fitting([("", row) for row in result["rows"]], limit - _size(head + tail))
        shown = f" after {len(rows)} of {len(result['rows'])} rows"
        return head + ", ".join(rows) + tail, shown
    if isinstance(result, list):
        items = _fitting([("", item) for item in result], limit - 2)
        return "[" + ", ".join(items) + "]", f" after {len(items)} of {len(result)} items"
    if isinstance(result, dict):
        pairs = [(f"{_encode(str(key))}: ", value) for key, value in sorted(result.items())]
        fields = _fitting(pairs, limit - 2)
        return "{" + ", ".join(fields) + "}", f" after {len(fields)} of {len(result)} fields"
    if isinstance(result, str):
        return _cut_string(result, limit), " inside the string"
    return _encode(result), ""


def _fitting(pairs: list[tuple[str, Any]], room: int) -> list[str]:
    """Of ``prefix + JSON of value`` for each pair, in order, those that fit
    in ``room`` bytes joined by ``", "``: the first that does not fit ends
    them (each is encoded only as far as the room left)."""
    kept: list[str] = []
    for prefix, value in pairs:
        room -= _size(prefix) + (2 if kept else 0)
        text = _within(value, room)
        if text is None:
            break
        kept.append(prefix + text)
        room -= _size(text)
    return kept


def _cut_string(value: str, limit: int) -> str:
    """``value`` as a JSON string of at most ``limit`` bytes, cut (§6.8) as
    long as escapes allow (the longest cut found by bisection)."""
    best = _encode("...")
    low, high = 0, limit
    while low <= high:
        middle = (low + high) // 2
        text = _encode(_core.truncate(value, middle))
        if _size(text) <= limit:
            best, low = text, middle + 1
        else:
            high = middle - 1
    return best


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


def _check_argument_names(tool: str, arguments: Mapping[str, Any]) -> None:
    """Refuse every argument the tool does not take (the schemas say
    ``additionalProperties: false``; a misspelt argument must not be
    dropped without a word)."""
    expected = _SPECS[tool].argument_names
    unknown = [name for name in arguments if name not in expected]
    if not unknown:
        return
    names = ", ".join(quote(clean_text(name)) for name in unknown)
    plural = "s" if len(unknown) > 1 else ""
    takes = f"expected {', '.join(expected)}" if expected else "it takes no arguments"
    raise ToolError(f"{tool}: unknown argument{plural} {names}; {takes}")


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
        _check_argument_names(tool, parsed)
        # OpenAI's strict mode sends every argument, null for one not given.
        parsed = {key: value for key, value in parsed.items() if value is not None}
        if tool == "memory_query":
            if run_query is None:
                raise ToolError("memory_query: not available")
            return run_query(_text_argument(tool, parsed, "query"), parsed.get("limit"))
        return _HANDLERS[tool](store, parsed)
    except ToolError as error:
        return error_text(str(error))
    except StoreBusyError:
        # The model can do something about this one: wait and call again.
        return error_text(f"{tool}: {BUSY_MESSAGE}")
    except (MemboltError, ValueError, TypeError, KeyError, OSError) as error:
        return error_text(f"{tool}: {error}")
    except Exception as error:  # §4: the dispatcher never raises
        return error_text(f"{tool}: internal error: {type(error).__name__}: {error}")
