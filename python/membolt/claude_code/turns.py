"""The prompt of each session's current turn, kept between two hook processes.

Claude Code reports a turn in two events that run in different processes:
``UserPromptSubmit`` carries the prompt, ``Stop`` the reply. ``after_turn``
needs both, so the prompt waits in between in a file of its own, one per
session (two sessions of one project never see each other's prompt):
``<directory>/<hex of the session id>.prompt``.

Why a file and not a memory entry: the prompt is not a fact to recall (the
turn's facts are extracted at ``Stop``), an entry would show in every render
and search until then, and writing it would take the store's write lock on
every prompt. The directory sits beside the project's store and is private
like it (0700, files 0600: a prompt may hold secrets). A file is written to
a temporary name and renamed, so ``Stop`` never reads half a prompt; it is
deleted when ``Stop`` takes it. Prompts are cut to :data:`MAX_PROMPT_BYTES`.
A turn that never reaches ``Stop`` (Claude Code skips it when the user
interrupts) leaves its file until the next prompt of the session replaces it,
or until :meth:`TurnPrompts.prune` removes files older than a week.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Final

from ..private_files import make_private_dirs

#: Longest prompt kept, in UTF-8 bytes (cut at a character boundary). The turn
#: record keeps 200 characters; the rest is scanned for markers and KEY lines.
MAX_PROMPT_BYTES: Final = 64 * 1024
#: Longest session id accepted, in UTF-8 bytes (its hex form names the file).
MAX_SESSION_ID_BYTES: Final = 120
#: Files of turns that never ended are removed after this long.
STALE_AFTER_S: Final = 7 * 24 * 3600
PROMPT_SUFFIX: Final = ".prompt"
TEMPORARY_SUFFIX: Final = ".tmp"


def session_file_name(session_id: str) -> str:
    """The file of a session: its id in hex, so that no id can name a path
    (``..``, ``/``) or collide with another."""
    raw = session_id.encode("utf-8", "surrogatepass")
    if not raw:
        raise ValueError("session_id is empty")
    if len(raw) > MAX_SESSION_ID_BYTES:
        raise ValueError(f"session_id is longer than {MAX_SESSION_ID_BYTES} bytes")
    return raw.hex() + PROMPT_SUFFIX


def _cut(text: str, limit: int) -> str:
    raw = text.encode("utf-8", "replace")
    return text if len(raw) <= limit else raw[:limit].decode("utf-8", "ignore")


class TurnPrompts:
    """The pending prompts of the sessions of one store, in ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def remember(self, session_id: str, prompt: str) -> None:
        """Keep ``prompt`` as the current turn's of ``session_id`` (replacing
        a prompt whose turn never ended)."""
        name = session_file_name(session_id)
        make_private_dirs(self.directory)
        final = self.directory / name
        temporary = self.directory / f".{name}.{os.getpid()}{TEMPORARY_SUFFIX}"
        data = _cut(prompt, MAX_PROMPT_BYTES).encode("utf-8", "replace")
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
        descriptor = os.open(temporary, flags, 0o600)
        try:
            with open(descriptor, "wb") as out:
                out.write(data)
            os.replace(temporary, final)
        except BaseException:
            temporary.unlink(missing_ok=True)
            raise

    def take(self, session_id: str) -> str | None:
        """The current turn's prompt of ``session_id``, removed from disk;
        None when there is none."""
        final = self.directory / session_file_name(session_id)
        try:
            descriptor = os.open(final, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            return None
        with open(descriptor, "rb") as source:
            data = source.read(MAX_PROMPT_BYTES + 1)
        final.unlink(missing_ok=True)
        return data.decode("utf-8", "replace")

    def prune(self, now: float | None = None) -> int:
        """Removes the files of turns that never ended, older than
        :data:`STALE_AFTER_S`; returns how many."""
        cutoff = (time.time() if now is None else now) - STALE_AFTER_S
        removed = 0
        try:
            names = os.listdir(self.directory)
        except FileNotFoundError:
            return 0
        for name in names:
            if not name.endswith((PROMPT_SUFFIX, TEMPORARY_SUFFIX)):
                continue
            path = self.directory / name
            try:
                if path.lstat().st_mtime < cutoff:
                    path.unlink()
                    removed += 1
            except FileNotFoundError:
                continue
        return removed
