"""Files membolt keeps beside a store are private like the store (§1.1):
directories mode 0700, files 0600. Events and prompts kept for a later
process (the spool, the Claude Code turn files) hold the same text as the
store, so they get the same protection.
"""

from __future__ import annotations

import contextlib
from pathlib import Path


def make_private_dirs(directory: Path) -> None:
    """Creates ``directory`` and its missing parents with mode 0700 (a
    directory that exists is left as it is)."""
    missing: list[Path] = []
    current = directory
    while not current.exists():
        missing.append(current)
        if current.parent == current:
            break
        current = current.parent
    for path in reversed(missing):
        with contextlib.suppress(FileExistsError):
            path.mkdir(mode=0o700)
