"""Type classification and the parent-type table (§2 and §3.1).

This module is the single source of truth for both rules: the Rust core
never infers a type; callers pass it ``classify(key)`` and
``parent_type(type)``.
"""

from __future__ import annotations

from typing import Final

from .errors import ArgumentTypeError
from .keys import THINKING_KEY_PREFIX, TOOL_KEY_PREFIX

#: The type of a thought (§6.9), which the thinking cap (§6.7) counts.
THINKING_TYPE: Final = "thinking"

# (how the key is tested, the words, the type): the first matching row wins.
# Tests are case-sensitive on the raw key.
_RULES: Final[tuple[tuple[str, tuple[str, ...], str], ...]] = (
    ("prefix", (TOOL_KEY_PREFIX,), "tool_result"),
    ("prefix", (THINKING_KEY_PREFIX,), THINKING_TYPE),
    ("equals", ("last_action",), "action"),
    ("equals", ("last_files",), "file"),
    ("contains", ("prompt", "goal", "task"), "prompt"),
    ("contains", ("purpose", "why", "reason"), "purpose"),
    ("contains", ("progress", "wip", "in_progress"), "progress"),
    ("contains", ("status", "state"), "status"),
    ("contains", ("decision", "decided"), "decision"),
    ("contains", ("preference", "prefer", "like"), "preference"),
    ("contains", ("error", "fail", "bug"), "error"),
    ("contains", ("file", "path", "dir"), "file"),
    ("contains", ("context", "env", "config"), "context"),
    ("contains", ("result", "output", "done"), "result"),
)

DEFAULT_TYPE: Final = "note"


def classify(key: str) -> str:
    """The type a new entry with this key gets when none is given."""
    if not isinstance(key, str):
        raise ArgumentTypeError(f"key must be a str, not {type(key).__name__}")
    # Plain loops over the table: this runs on every save, and generator
    # expressions cost several times more than the tests themselves.
    for how, words, entry_type in _RULES:
        if how == "contains":
            for word in words:
                if word in key:
                    return entry_type
        elif how == "prefix":
            if key.startswith(words):
                return entry_type
        elif key in words:  # "equals"
            return entry_type
    return DEFAULT_TYPE


# child type -> the type its automatic parent should have (§3.1);
# types not listed (prompt, thinking, any custom type) want none.
_PARENT_TYPE: Final[dict[str, str]] = {
    "purpose": "prompt",
    "context": "prompt",
    "preference": "prompt",
    "progress": "result",
    "status": "result",
    "file": "result",
    "decision": "result",
    "fact": "result",
    "note": "result",
    "tool_result": "progress",
    "result": "tool_result",
    "action": "tool_result",
    "error": "tool_result",
}


def parent_type(entry_type: str) -> str | None:
    """The type of the parent a new entry of this type links to, if any."""
    return _PARENT_TYPE.get(entry_type)
