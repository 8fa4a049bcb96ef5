"""The key formats membolt writes itself, built and parsed here only.

* tool results (§6.6): ``tool:<tool name>:<slug>``; a slug holds only
  ``[a-z0-9_]``, so the tool name is everything between the prefix and the
  last ``:`` (a tool name may contain ``:``);
* thoughts (§6.9): ``thinking:<Unix ms>:<slug>``.
"""

from __future__ import annotations

from typing import Final

TOOL_KEY_PREFIX: Final = "tool:"
THINKING_KEY_PREFIX: Final = "thinking:"


def tool_result_key(tool_name: str, slug: str) -> str:
    """The key of a tool result of ``tool_name`` whose slug is ``slug``."""
    return f"{tool_key_prefix(tool_name)}{slug}"


def tool_key_prefix(tool_name: str) -> str:
    """What every tool-result key of ``tool_name`` starts with."""
    return f"{TOOL_KEY_PREFIX}{tool_name}:"


def tool_of_key(key: str) -> str | None:
    """The tool name of a tool-result key, or None for any other key."""
    if not key.startswith(TOOL_KEY_PREFIX):
        return None
    rest = key[len(TOOL_KEY_PREFIX) :]
    end = rest.rfind(":")
    return rest[:end] if end >= 0 else None


def thinking_key(now_ms: int, slug: str) -> str:
    """The key of a thought recorded at ``now_ms``."""
    return f"{THINKING_KEY_PREFIX}{now_ms}:{slug}"
