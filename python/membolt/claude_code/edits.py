"""File changes and the task list as the next session needs them (§13.1).

``Edit``, ``MultiEdit``, ``Write`` and ``NotebookEdit`` each change one
file: ``file:<path>`` (the path relative to the project when inside it)
holds what changed in one line, ``- <first removed line> + <first added
line>`` from the edit's diff (Claude Code's ``structuredPatch`` hunks,
whose lines start with ``-``, ``+`` or a space; the strings of the edit
when there is no patch), or ``created, <N> lines`` for a new file; blank
lines are passed over and either side may be absent. ``last_files`` keeps
the ten most recently changed paths, newest first.

``TodoWrite`` (Claude Code's task list) becomes ``progress:todos``: the
item in progress, then the pending ones, then how many are done, each part
labelled (``in progress: ... | pending: ... | done: 2``), so that the list
reads as not done (§5.5) while work remains and is the resume point; when
every item is completed the value starts with ``done:``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from .._core import truncate
from ..sanitize import trim
from .tool_text import first_string, project_path

FILE_KEY_PREFIX: Final = "file:"
FILE_TYPE: Final = "file"
LAST_FILES_KEY: Final = "last_files"
LAST_FILES_KEPT: Final = 10
LAST_FILES_SEPARATOR: Final = ", "
#: Each side of a change line is cut to this many bytes.
CHANGE_SIDE_BYTES: Final = 120
TODOS_KEY: Final = "progress:todos"
TODOS_TYPE: Final = "progress"
TODOS_BYTES: Final = 300
DONE_PREFIX: Final = "done:"


@dataclass(frozen=True)
class FileChange:
    """One changed file: its path as shown, and what changed."""

    path: str
    change: str

    @property
    def key(self) -> str:
        return FILE_KEY_PREFIX + self.path


def file_change(
    tool_name: str, inputs: Mapping[str, object], response: object, project: str
) -> FileChange | None:
    """The change an edit tool made, or None when it made none that can be
    told (a failed edit, an unknown shape)."""
    response = response if isinstance(response, Mapping) else {}
    if first_string(response, "error"):
        return None
    path = first_string(response, "filePath", "notebook_path") or first_string(
        inputs, "file_path", "notebook_path"
    )
    if not path:
        return None
    if tool_name == "Write":
        change = _write_change(inputs, response)
    elif tool_name == "NotebookEdit":
        change = _notebook_change(inputs, response)
    else:
        change = _edit_change(inputs, response)
    return FileChange(project_path(path, project), change)


def recent_files(previous: str | None, path: str) -> str:
    """``last_files`` after ``path`` changed: it first, then the paths that
    were there, without it, ten at most."""
    paths = [path]
    if previous:
        paths += [p for p in previous.split(LAST_FILES_SEPARATOR) if p and p != path]
    return LAST_FILES_SEPARATOR.join(paths[:LAST_FILES_KEPT])


def is_done_list(value: str) -> bool:
    """Whether a ``progress:todos`` value is a finished list."""
    return value.startswith(DONE_PREFIX)


def todos_value(todos: object) -> str | None:
    """``progress:todos`` for a ``TodoWrite`` list, or None when it is not
    a list."""
    if not isinstance(todos, list):
        return None
    in_progress, pending, completed = [], [], []
    for item in todos:
        if not isinstance(item, Mapping):
            continue
        content = _line(first_string(item, "content", "activeForm") or "")
        if not content:
            continue
        status = item.get("status")
        if status == "completed":
            completed.append(content)
        elif status == "in_progress":
            in_progress.append(content)
        else:
            pending.append(content)
    if not in_progress and not pending:
        done = f"{DONE_PREFIX} {len(completed)}"
        return truncate(f"{done} ({'; '.join(completed)})" if completed else done, TODOS_BYTES)
    parts = []
    if in_progress:
        parts.append("in progress: " + "; ".join(in_progress))
    if pending:
        parts.append("pending: " + "; ".join(pending))
    parts.append(f"done: {len(completed)}")
    return truncate(" | ".join(parts), TODOS_BYTES)


# ----- helpers -------------------------------------------------------------


def _line(text: str) -> str:
    return " ".join(text.split())


def _change_line(removed: str | None, added: str | None) -> str:
    parts = []
    if removed:
        parts.append("- " + truncate(removed, CHANGE_SIDE_BYTES))
    if added:
        parts.append("+ " + truncate(added, CHANGE_SIDE_BYTES))
    return " ".join(parts) or "edited"


def _first_line(text: str | None) -> str | None:
    """The first line of ``text`` that is not blank, trimmed."""
    for line in (text or "").split("\n"):
        if trimmed := trim(line):
            return trimmed
    return None


def _patch_sides(patch: object) -> tuple[str | None, str | None] | None:
    """The first removed and added lines of ``structuredPatch`` hunks."""
    if not isinstance(patch, list) or not patch:
        return None
    removed = added = None
    for hunk in patch:
        lines = hunk.get("lines") if isinstance(hunk, Mapping) else None
        for line in lines if isinstance(lines, list) else ():
            if not isinstance(line, str) or not line:
                continue
            text = trim(line[1:])
            if not text:
                continue
            if line[0] == "-" and removed is None:
                removed = text
            elif line[0] == "+" and added is None:
                added = text
        if removed is not None and added is not None:
            break
    return removed, added


def _edit_change(inputs: Mapping[str, object], response: Mapping[str, object]) -> str:
    sides = _patch_sides(response.get("structuredPatch"))
    if sides is None:
        edits = inputs.get("edits")
        first = edits[0] if isinstance(edits, list) and edits else inputs
        first = first if isinstance(first, Mapping) else {}
        old = first_string(response, "oldString") or first_string(first, "old_string")
        new = first_string(response, "newString") or first_string(first, "new_string")
        sides = (_first_line(old), _first_line(new))
    return _change_line(*sides)


def _write_change(inputs: Mapping[str, object], response: Mapping[str, object]) -> str:
    if response.get("type") != "update":
        content = first_string(response, "content") or first_string(inputs, "content") or ""
        count = len(content.splitlines())
        return f"created, {count} lines"
    sides = _patch_sides(response.get("structuredPatch"))
    return _change_line(*sides) if sides is not None else "rewritten"


def _notebook_change(inputs: Mapping[str, object], response: Mapping[str, object]) -> str:
    mode = first_string(response, "edit_mode") or first_string(inputs, "edit_mode")
    cell = first_string(response, "cell_id") or first_string(inputs, "cell_id") or "?"
    if mode == "delete":
        return f"- cell {cell}"
    source = first_string(response, "new_source") or first_string(inputs, "new_source")
    return _change_line(None, _first_line(source))
