"""Which project a Claude Code event belongs to (§13.1).

A session's ``cwd`` moves: Claude Code runs commands in subdirectories, and
a hook started there must reach the project's store, not a new one per
directory. The project is, in this order:

- ``$CLAUDE_PROJECT_DIR``, which Claude Code sets for its hooks to the
  directory the session was started in;
- else the git work tree holding ``cwd``: the nearest directory, ``cwd``
  itself or above it, holding a ``.git`` (a directory, or the file of a
  linked work tree or a submodule). Found by looking, with no ``git``
  process (a hook runs for every event);
- else ``cwd``.

A ``cwd`` that is not a directory is refused (a typo would otherwise start
an empty memory), and so is a ``$CLAUDE_PROJECT_DIR`` that is not one.
``membolt mcp`` without ``--cwd`` finds its project the same way, from its
working directory.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final

PROJECT_DIR_VARIABLE: Final = "CLAUDE_PROJECT_DIR"
GIT_MARKER: Final = ".git"


class ProjectError(ValueError):
    """The directory named for the project does not exist."""


def project_root(cwd: str, environ: Mapping[str, str] | None = None) -> str:
    """The absolute directory of the project that ``cwd`` is in."""
    environ = os.environ if environ is None else environ
    if not cwd:
        raise ProjectError("cwd is empty")
    directory = os.path.abspath(cwd)
    if not os.path.isdir(directory):
        problem = "is not a directory" if os.path.exists(directory) else "no such directory"
        raise ProjectError(f"cwd {cwd}: {problem}")
    named = environ.get(PROJECT_DIR_VARIABLE)
    if named:
        project = os.path.abspath(named)
        if not os.path.isdir(project):
            raise ProjectError(f"${PROJECT_DIR_VARIABLE} {named}: no such directory")
        return project
    return git_work_tree(directory) or directory


def git_work_tree(directory: str) -> str | None:
    """The nearest directory from ``directory`` up that holds a ``.git``."""
    current = directory
    while True:
        if os.path.lexists(os.path.join(current, GIT_MARKER)):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent
