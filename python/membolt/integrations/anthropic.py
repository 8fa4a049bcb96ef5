"""membolt behind the Anthropic SDK's memory tool: :class:`MemboltMemoryTool`
and :class:`AsyncMemboltMemoryTool` (``pip install 'membolt[anthropic]'``)::

    import anthropic, membolt
    from membolt.integrations.anthropic import MemboltMemoryTool

    memory = MemboltMemoryTool(membolt.MemoryStore.for_project())
    runner = anthropic.Anthropic().beta.messages.tool_runner(
        model=..., max_tokens=1024, tools=[memory], messages=[...]
    )

The files Claude keeps under ``/memories`` are entries: a file's path
(normalised: ``/memories/notes/a.md``) behind ``key_prefix`` is its key and
its text the value, of type ``memory_file`` (no automatic parent, §3.1); a
directory is the prefix of the keys below it, so it exists while it holds a
file. The commands answer with the texts of the SDK's reference
implementation, ``BetaLocalFilesystemMemoryTool``, errors included (as
``ToolError``), and its suite runs against this class (``tests/peer/``).
Where a store is not a file system:

* a directory's size in ``view`` is the bytes of the files below it (the
  reference shows the file system's own figure, often ``4.0K``);
* an empty directory does not exist (the reference keeps one after its last
  file is moved away);
* there are no symbolic links to follow, so the reference's link checks
  have nothing to refuse; a path that leaves ``/memories`` (``..``) is
  refused with the reference's words, and so is one that does not start
  with ``/memories/`` (the reference reads ``/memoriesX`` as
  ``/memories/X``);
* where the reference fails with an operating-system error (a file used as
  a directory, a directory moved into itself), this class says so in a
  ``ToolError``;
* a file holds at most ``max_file_bytes`` (8 MiB) of UTF-8, and a path at
  most membolt's 1,024-byte key less the prefix.

Every command is atomic, also between processes: a command that reads then
writes (``create``, ``str_replace``, ``insert``, ``rename``, ``delete``)
holds the store while it does, so two agents editing one file never lose an
edit (the reference's read-modify-write on a file system can).
"""

from __future__ import annotations

import contextlib
import posixpath
import threading
from collections.abc import Iterator
from typing import Final

import anyio.to_thread
from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool, ToolError
from anthropic.types.beta import (
    BetaCacheControlEphemeralParam,
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)

from .._core import MAX_KEY_BYTES
from ..store import MemoryStore

__all__ = ["DEFAULT_MAX_FILE_BYTES", "ENTRY_TYPE", "AsyncMemboltMemoryTool", "MemboltMemoryTool"]

ROOT: Final = "/memories"
ENTRY_TYPE: Final = "memory_file"
DEFAULT_MAX_FILE_BYTES: Final = 8 * 1024 * 1024
#: The reference's line limit of a viewed file, and the width of its line numbers.
MAX_LINES: Final = 999_999
LINE_NUMBER_WIDTH: Final = len(str(MAX_LINES))

_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


def _lock(store: MemoryStore) -> threading.Lock:
    """One lock per store location in this process: ``hold()`` keeps other
    processes out, this keeps the other threads of this one out."""
    with _locks_guard:
        return _locks.setdefault(store.location, threading.Lock())


def format_size(size: int) -> str:
    """A size as the reference prints it: ``0B``, ``512B``, ``1.5K``, ``4.0K``, ``2M``."""
    if size == 0:
        return "0B"
    units = ("B", "K", "M", "G")
    unit = min((size.bit_length() - 1) // 10, len(units) - 1)
    scaled = size / (1024**unit)
    if scaled == int(scaled):
        return f"{int(scaled)}{units[unit]}"
    return f"{scaled:.1f}{units[unit]}"


def _numbered(lines: list[str], first: int) -> str:
    return "\n".join(
        f"{str(number).rjust(LINE_NUMBER_WIDTH)}\t{line}"
        for number, line in enumerate(lines, start=first)
    )


def _lines_keeping_cr(content: str) -> list[str]:
    """Lines split at LF only (a CR stays), without the empty tail of a final LF."""
    lines = content.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


class MemboltMemoryTool(BetaAbstractMemoryTool):
    """The memory tool over a membolt store (see the module's documentation).
    ``store`` stays the caller's; ``key_prefix`` puts the files of several
    tools (users, agents) side by side in one store."""

    def __init__(
        self,
        store: MemoryStore,
        *,
        key_prefix: str = "",
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        cache_control: BetaCacheControlEphemeralParam | None = None,
    ) -> None:
        if not isinstance(key_prefix, str):
            raise TypeError(f"key_prefix must be a str, not {type(key_prefix).__name__}")
        if max_file_bytes < 0:
            raise ValueError("max_file_bytes must not be negative")
        super().__init__(cache_control=cache_control)
        self.store = store
        self.key_prefix = key_prefix
        self.max_file_bytes = max_file_bytes
        self._lock = _lock(store)

    # ----- paths -------------------------------------------------------------------

    def _resolve(self, path: str) -> str:
        """The normalised path (``/memories`` or ``/memories/...``), or the
        reference's error."""
        if path != ROOT and not path.startswith(ROOT + "/"):
            raise ToolError(f"Path must start with /memories, got: {path}")
        resolved = posixpath.normpath(path)
        if resolved != ROOT and not resolved.startswith(ROOT + "/"):
            raise ToolError(f"Path {path} would escape /memories directory")
        if "\0" in resolved:
            raise ToolError(f"Path {path} contains a NUL character")
        if len((self.key_prefix + resolved).encode()) > MAX_KEY_BYTES:
            raise ToolError(f"Path {path} is too long: at most {MAX_KEY_BYTES} bytes")
        return resolved

    def _key(self, resolved: str) -> str:
        return self.key_prefix + resolved

    def _keys_below(self, resolved: str) -> list[str]:
        return self.store.keys_under(self._key(resolved.rstrip("/") + "/"))

    def _is_file(self, resolved: str) -> bool:
        return resolved != ROOT and self._key(resolved) in self.store

    def _is_dir(self, resolved: str) -> bool:
        return resolved == ROOT or bool(self._keys_below(resolved))

    def _file_ancestor(self, resolved: str) -> str | None:
        """The nearest directory above ``resolved`` that is a file, if any."""
        parent = posixpath.dirname(resolved)
        while parent != ROOT and parent.startswith(ROOT + "/"):
            if self._is_file(parent):
                return parent
            parent = posixpath.dirname(parent)
        return None

    def _read(self, resolved: str, path: str) -> str:
        """A file's text, or the reference's error for a missing path or a directory."""
        entry = self.store.get(self._key(resolved)) if resolved != ROOT else None
        if entry is not None:
            return entry.value
        if self._is_dir(resolved):
            raise ToolError(f"The path {path} is not a file.")
        raise ToolError(f"The path {path} does not exist. Please provide a valid path.")

    def _check_size(self, path: str, text: str) -> None:
        size = len(text.encode())
        if size > self.max_file_bytes:
            raise ToolError(
                f"File {path} would hold {size:,} bytes, over the limit of "
                f"{self.max_file_bytes:,} bytes"
            )

    def _save(self, resolved: str, text: str) -> None:
        self.store.save(self._key(resolved), text, type=ENTRY_TYPE)

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """A command that reads then writes: other threads and processes wait."""
        with self._lock, self.store.hold():
            yield

    # ----- commands ----------------------------------------------------------------

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        resolved = self._resolve(command.path)
        entry = self.store.get(self._key(resolved)) if resolved != ROOT else None
        if entry is not None:
            lines = entry.value.split("\n")
            if len(lines) > MAX_LINES:
                raise ToolError(
                    f"File {command.path} exceeds maximum line limit of {MAX_LINES:,} lines."
                )
            first = 1
            if command.view_range and len(command.view_range) == 2:
                start = max(1, command.view_range[0]) - 1
                end = len(lines) if command.view_range[1] == -1 else command.view_range[1]
                lines, first = lines[start:end], start + 1
            return f"Here's the content of {command.path} with line numbers:\n" + _numbered(
                lines, first
            )
        below = self._keys_below(resolved)
        if resolved != ROOT and not below:
            raise ToolError(f"The path {command.path} does not exist. Please provide a valid path.")
        return self._listing(command.path, resolved, below)

    def _listing(self, path: str, resolved: str, keys: list[str]) -> str:
        """The reference's listing: two levels, names sorted, hidden ones left out."""
        cut = len(self._key(resolved.rstrip("/") + "/"))
        sizes: dict[tuple[str, ...], int] = {}  # bytes below each directory, and of each file
        shown: set[tuple[tuple[str, ...], bool]] = set()  # (names, is a directory)
        for key in keys:
            entry = self.store.get(key)
            if entry is None:
                continue
            names = tuple(key[cut:].split("/"))
            for depth in range(len(names) + 1):
                sizes[names[:depth]] = sizes.get(names[:depth], 0) + len(entry.value.encode())
            for depth in range(1, min(len(names), 2) + 1):
                if names[depth - 1].startswith("."):
                    break
                shown.add((names[:depth], depth < len(names)))
        lines = [f"{format_size(sizes.get((), 0))}\t{path}"]
        # Sorted name tuples are the reference's walk: each directory's
        # entries by name, a directory followed by its own entries.
        for names, is_dir in sorted(shown):
            suffix = "/" if is_dir else ""
            lines.append(f"{format_size(sizes[names])}\t{path}/{'/'.join(names)}{suffix}")
        header = (
            "Here're the files and directories up to 2 levels deep in "
            f"{path}, excluding hidden items:"
        )
        return header + "\n" + "\n".join(lines)

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        resolved = self._resolve(command.path)
        self._check_size(command.path, command.file_text)
        with self._writing():
            if resolved == ROOT or self._is_file(resolved) or self._is_dir(resolved):
                raise ToolError(f"File {command.path} already exists")
            self._refuse_file_ancestor(resolved, command.path)
            self._save(resolved, command.file_text)
        return f"File created successfully at: {command.path}"

    def _refuse_file_ancestor(self, resolved: str, path: str) -> None:
        ancestor = self._file_ancestor(resolved)
        if ancestor is not None:
            raise ToolError(f"Cannot write {path}: {ancestor} is a file, not a directory")

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        resolved = self._resolve(command.path)
        with self._writing():
            content = self._read(resolved, command.path)
            count = content.count(command.old_str)
            if count == 0:
                raise ToolError(
                    f"No replacement was performed, old_str `{command.old_str}` did not "
                    f"appear verbatim in {command.path}."
                )
            if count > 1:
                lines = []
                start = 0
                while (position := content.find(command.old_str, start)) != -1:
                    lines.append(content[:position].count("\n") + 1)
                    start = position + 1
                raise ToolError(
                    "No replacement was performed. Multiple occurrences of old_str "
                    f"`{command.old_str}` in lines: {', '.join(map(str, lines))}. "
                    "Please ensure it is unique"
                )
            changed_line = content[: content.find(command.old_str)].count("\n")
            new_content = content.replace(command.old_str, command.new_str)
            self._check_size(command.path, new_content)
            self._save(resolved, new_content)
        new_lines = new_content.split("\n")
        first = max(0, changed_line - 2)
        last = min(len(new_lines), changed_line + 3)
        return (
            "The memory file has been edited. Here is the snippet showing the change "
            "(with line numbers):\n" + _numbered(new_lines[first:last], first + 1)
        )

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        resolved = self._resolve(command.path)
        with self._writing():
            lines = _lines_keeping_cr(self._read(resolved, command.path))
            if command.insert_line < 0 or command.insert_line > len(lines):
                raise ToolError(
                    f"Invalid `insert_line` parameter: {command.insert_line}. "
                    f"It should be within the range [0, {len(lines)}]."
                )
            lines.insert(command.insert_line, command.insert_text.rstrip("\n"))
            new_content = "\n".join(lines)
            if not new_content.endswith("\n"):
                new_content += "\n"
            self._check_size(command.path, new_content)
            self._save(resolved, new_content)
        return f"The file {command.path} has been edited."

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        resolved = self._resolve(command.path)
        if resolved == ROOT:
            raise ToolError("Cannot delete the /memories directory itself")
        with self._writing():
            keys = [self._key(resolved)] if self._is_file(resolved) else []
            keys += self._keys_below(resolved)
            if not keys:
                raise ToolError(f"The path {command.path} does not exist")
            with self.store.batch() as batch:
                for key in keys:
                    batch.delete(key)
        return f"Successfully deleted {command.path}"

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        old = self._resolve(command.old_path)
        new = self._resolve(command.new_path)
        if old == ROOT:
            raise ToolError("Cannot rename the /memories directory itself")
        with self._writing():
            if self._is_file(new) or self._is_dir(new):
                raise ToolError(f"The destination {command.new_path} already exists")
            if self._is_file(old):
                moves = [(self._key(old), self._key(new))]
            else:
                cut = len(self._key(old))
                moves = [(key, self._key(new) + key[cut:]) for key in self._keys_below(old)]
                if moves and new.startswith(old + "/"):
                    raise ToolError(
                        f"Cannot move {command.old_path} into itself ({command.new_path})"
                    )
            if not moves:
                raise ToolError(f"The path {command.old_path} does not exist")
            self._refuse_file_ancestor(new, command.new_path)
            for _, target in moves:
                if len(target.encode()) > MAX_KEY_BYTES:
                    raise ToolError(f"Path {command.new_path} is too long")
            with self.store.batch() as batch:
                for source, target in moves:
                    entry = self.store.get(source)
                    if entry is not None:
                        batch.save(target, entry.value, type=entry.type)
                        batch.delete(source)
        return f"Successfully renamed {command.old_path} to {command.new_path}"

    def clear_all_memory(self) -> str:
        """Deletes every file under ``/memories``."""
        with self._writing(), self.store.batch() as batch:
            for key in self._keys_below(ROOT):
                batch.delete(key)
        return "All memory cleared"


class AsyncMemboltMemoryTool(BetaAsyncAbstractMemoryTool):
    """:class:`MemboltMemoryTool` for async tool runners: each command runs in
    a worker thread (membolt's calls release the GIL)."""

    def __init__(
        self,
        store: MemoryStore,
        *,
        key_prefix: str = "",
        max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
        cache_control: BetaCacheControlEphemeralParam | None = None,
    ) -> None:
        super().__init__(cache_control=cache_control)
        self.sync_tool = MemboltMemoryTool(
            store, key_prefix=key_prefix, max_file_bytes=max_file_bytes
        )

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> str:
        return await anyio.to_thread.run_sync(self.sync_tool.view, command)

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> str:
        return await anyio.to_thread.run_sync(self.sync_tool.create, command)

    async def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> str:
        return await anyio.to_thread.run_sync(self.sync_tool.str_replace, command)

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> str:
        return await anyio.to_thread.run_sync(self.sync_tool.insert, command)

    async def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> str:
        return await anyio.to_thread.run_sync(self.sync_tool.delete, command)

    async def rename(self, command: BetaMemoryTool20250818RenameCommand) -> str:
        return await anyio.to_thread.run_sync(self.sync_tool.rename, command)

    async def clear_all_memory(self) -> str:
        return await anyio.to_thread.run_sync(self.sync_tool.clear_all_memory)
