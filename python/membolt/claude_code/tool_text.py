"""Claude Code's tools on the §6.6 capture list, and their results as text.

Claude Code names its tools differently from the §6.6 defaults (``Write``,
not ``write_file``); :data:`CAPTURED_TOOLS` lists the ones that write, run
or search (§13), and the task list (``TodoWrite``, §13.1). Read-only tools
(``Read``, ``Glob``, ``Grep``, ``LS`` ...) are left out, and so is every MCP
tool unless its full name is added to the list (``membolt hook claude-code
--capture NAME``).

Bash runs, edits and the task list have mappings of their own (``bash.py``,
``edits.py``). The other results (web tools, MCP tools) arrive as Claude
Code's own structures; :func:`result_text` turns them into the text a
person would call the result before §6.6 sees it: the query and links of a
search, the URL and answer of a fetch, the text parts of MCP content.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from typing import Final

#: §13: Claude Code's write tools, its shell, its web tools and its task list.
CAPTURED_TOOLS: Final = frozenset(
    {"Write", "Edit", "MultiEdit", "NotebookEdit", "Bash", "WebSearch", "WebFetch", "TodoWrite"}
)
#: §13.1: the tools that change one file each (``edits.py``).
EDIT_TOOLS: Final = frozenset({"Edit", "MultiEdit", "Write", "NotebookEdit"})
#: Claude Code names MCP tools ``mcp__<server>__<tool>``.
MCP_PREFIX: Final = "mcp__"
MCP_SEPARATOR: Final = "__"


def capture_list(extra: Iterable[str] = ()) -> frozenset[str]:
    """The capture list of the hook: :data:`CAPTURED_TOOLS` and ``extra``."""
    return CAPTURED_TOOLS | frozenset(extra)


def is_captured(tool_name: str, capture: frozenset[str]) -> bool:
    """Whether the result of ``tool_name`` is kept (§6.6, §13): the full name
    is on the list, and it is not a memory tool reached through MCP (an
    ``mcp__<server>__memory_save`` result would be memory about memory)."""
    if tool_name not in capture:
        return False
    if tool_name.startswith(MCP_PREFIX):
        from ..extract import MEMORY_TOOLS

        return tool_name.rsplit(MCP_SEPARATOR, 1)[-1] not in MEMORY_TOOLS
    return True


def result_text(tool_name: str, tool_input: object, tool_response: object, cwd: str) -> str:
    """The result of one tool call as text (see the module docstring); a shape
    this module does not know falls back to the generic conversion."""
    text_of = _CONVERTERS.get(tool_name)
    if text_of is not None and isinstance(tool_response, Mapping):
        inputs = tool_input if isinstance(tool_input, Mapping) else {}
        text = text_of(inputs, tool_response, cwd)
        if text is not None:
            return text
    return generic_text(tool_response)


def generic_text(value: object) -> str:
    """Any JSON value as text: a string as it is; MCP content blocks (a list,
    or an object with a ``content`` list) as their text parts, one per line;
    anything else as compact JSON."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    blocks = value.get("content") if isinstance(value, Mapping) else value
    if isinstance(blocks, list) and blocks and all(_is_block(b) for b in blocks):
        return "\n".join(b["text"] for b in blocks if b.get("type") == "text")
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _is_block(block: object) -> bool:
    return (
        isinstance(block, Mapping)
        and isinstance(block.get("type"), str)
        and (block.get("type") != "text" or isinstance(block.get("text"), str))
    )


def first_string(mapping: Mapping[str, object], *names: str) -> str | None:
    """The first of ``names`` that holds a string."""
    for name in names:
        value = mapping.get(name)
        if isinstance(value, str):
            return value
    return None


def project_path(path: str, cwd: str) -> str:
    """``path`` relative to the project directory when it lies inside it."""
    if not os.path.isabs(path) or not os.path.isabs(cwd):
        return path
    try:
        relative = os.path.relpath(path, cwd)
    except ValueError:  # another drive (Windows)
        return path
    return path if relative == os.pardir or relative.startswith(os.pardir + os.sep) else relative


def _web_search(
    inputs: Mapping[str, object], response: Mapping[str, object], cwd: str
) -> str | None:
    query = first_string(response, "query") or first_string(inputs, "query")
    results = response.get("results")
    if query is None or not isinstance(results, list):
        return None
    lines = [query]
    for result in results:
        if isinstance(result, str):
            lines.append(result)
        elif isinstance(result, Mapping) and isinstance(result.get("content"), list):
            for link in result["content"]:
                if isinstance(link, Mapping):
                    title, url = first_string(link, "title") or "", first_string(link, "url") or ""
                    lines.append(f"- {title} {url}".rstrip())
    return "\n".join(lines)


def _web_fetch(
    inputs: Mapping[str, object], response: Mapping[str, object], cwd: str
) -> str | None:
    result = first_string(response, "result")
    if result is None:
        return None
    url = first_string(response, "url") or first_string(inputs, "url")
    return f"{url}\n{result}" if url else result


_CONVERTERS: Final[
    dict[str, Callable[[Mapping[str, object], Mapping[str, object], str], str | None]]
] = {
    "WebSearch": _web_search,
    "WebFetch": _web_fetch,
}
