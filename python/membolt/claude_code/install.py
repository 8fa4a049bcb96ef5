"""``membolt install claude-code`` / ``uninstall``: membolt in Claude Code's settings.

Install merges two things into Claude Code's configuration (§13):

- the hooks: for each of ``SessionStart``, ``UserPromptSubmit``,
  ``PostToolUse``, ``PostCompact`` and ``Stop``, one matcher group holding
  one command handler that runs ``membolt hook claude-code``. The
  ``PostToolUse`` group matches only the captured tools, so that Claude
  Code does not start a process for every ``Read`` or ``Grep``;
- the MCP server ``membolt`` (``membolt mcp``), giving the model the memory
  tools.

Where (Claude Code's documented locations): project scope writes
``<dir>/.claude/settings.json`` and ``<dir>/.mcp.json`` (the server gets
``--cwd <dir>``); user scope writes ``~/.claude/settings.json`` and the
``mcpServers`` of ``~/.claude.json`` (both under ``$CLAUDE_CONFIG_DIR``
when it is set), and the server serves the project Claude Code is started
in. The JSON is merged, never replaced: every other setting, hook and
server is kept; running install twice changes nothing the second time, and
uninstall removes exactly the handlers and the server install adds (and the
containers their removal leaves empty; a file left holding nothing is
deleted, except ``~/.claude.json``, Claude Code's own state file). A file
that is not a JSON object is refused before anything is written. Each file is written to a temporary
file beside it and renamed over it, with the old file's mode (through a
symbolic link, its target is replaced).

How the command is found: the absolute path of the ``membolt`` script of
the installation running install (the script that runs it, or the one
beside its Python interpreter), else ``<python> -m membolt.cli`` with that
interpreter's absolute path. Either needs neither ``membolt`` on the
``PATH`` of Claude Code's hook processes nor an activated virtual
environment. The script comes first because hooks run in the project's
directory, and ``python -m`` puts the working directory first on
``sys.path``: a ``membolt.py`` or ``membolt/`` of the project would be
imported instead of membolt (the script puts its own directory there); it
also skips ``runpy``, a few milliseconds of every hook. No path is resolved:
a virtual environment's ``python`` is a symbolic link, and its target would
not see the environment's packages.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import stat
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from .tool_text import capture_list

Scope = Literal["project", "user"]

#: The events membolt handles, in the order Claude Code meets them.
HOOK_EVENTS: Final = ("SessionStart", "UserPromptSubmit", "PostToolUse", "PostCompact", "Stop")
#: Seconds Claude Code lets a hook run: above the store's 5 s busy timeout,
#: far below Claude Code's defaults (30 s for a prompt, 600 s otherwise).
HOOK_TIMEOUT_S: Final = 15
MCP_SERVER_NAME: Final = "membolt"
#: The module run as ``python -m`` when there is no script: it exists in
#: every version of membolt.
CLI_MODULE: Final = "membolt.cli"
SCRIPT_NAME: Final = "membolt"
_TOOL_NAME: Final = re.compile("[A-Za-z0-9_-]+")


class SettingsError(Exception):
    """A settings file that cannot be changed safely; nothing was written."""


@dataclass(frozen=True)
class Target:
    """The files of one scope and what the MCP server entry runs."""

    settings: Path
    mcp: Path
    server_args: tuple[str, ...]


def target(scope: Scope, directory: str | os.PathLike[str] | None = None) -> Target:
    """The settings files of ``scope``; ``directory`` is the project (project
    scope only; default: the working directory)."""
    if scope == "user":
        if directory is not None:
            raise SettingsError("--dir names a project; it does not go with --scope user")
        config_dir = os.environ.get("CLAUDE_CONFIG_DIR")
        home = Path.home()
        base = Path(config_dir).expanduser() if config_dir else home / ".claude"
        mcp = base / ".claude.json" if config_dir else home / ".claude.json"
        return Target(base / "settings.json", mcp, ("mcp",))
    project = Path(os.path.abspath(os.fspath(directory) if directory is not None else os.curdir))
    if not project.is_dir():
        raise SettingsError(f"{project} is not a directory")
    return Target(
        project / ".claude" / "settings.json", project / ".mcp.json", ("mcp", "--cwd", str(project))
    )


def membolt_argv() -> list[str]:
    """The command that runs this membolt (see the module docstring)."""
    candidates = []
    if os.path.basename(sys.argv[0]) == SCRIPT_NAME:
        candidates.append(sys.argv[0])
    if sys.executable:
        candidates.append(os.path.join(os.path.dirname(sys.executable), SCRIPT_NAME))
    for script in candidates:
        if os.path.isfile(script) and os.access(script, os.X_OK):
            return [os.path.abspath(script)]
    if not sys.executable:
        raise SettingsError("cannot tell which Python interpreter runs membolt")
    return [os.path.abspath(sys.executable), "-m", CLI_MODULE]


def hook_command(capture: Sequence[str] = ()) -> str:
    """The shell command of every membolt hook handler."""
    extra = [arg for name in capture for arg in ("--capture", name)]
    return shlex.join([*membolt_argv(), "hook", "claude-code", *extra])


def tool_matcher(capture: Sequence[str] = ()) -> str:
    """The ``PostToolUse`` matcher: exactly the captured tools. An anchored
    regular expression means the same to every Claude Code version (older
    ones read ``Write|Edit`` as an unanchored pattern, matching TodoWrite)."""
    return "^(" + "|".join(sorted(capture_list(capture))) + ")$"


def check_tool_names(names: Iterable[str]) -> list[str]:
    """``names`` if each is a plain tool name (letters, digits, ``_``, ``-``)."""
    checked = list(names)
    for name in checked:
        if not _TOOL_NAME.fullmatch(name):
            raise SettingsError(f"{name!r} is not a tool name (letters, digits, _ and - only)")
    return checked


# ----- recognising what install adds -------------------------------------------


def _membolt_arguments(argv: Sequence[str]) -> list[str] | None:
    """The arguments after the program when ``argv`` runs membolt (the
    ``membolt`` script, or ``python -m membolt[.cli]``), else None."""
    if not argv:
        return None
    if os.path.basename(argv[0]) in (SCRIPT_NAME, f"{SCRIPT_NAME}.exe"):
        return list(argv[1:])
    if len(argv) >= 3 and argv[1] == "-m" and argv[2] in ("membolt", CLI_MODULE):
        return list(argv[3:])
    return None


def is_membolt_hook(handler: object) -> bool:
    """Whether a hook handler is one that install adds."""
    if not isinstance(handler, dict) or handler.get("type") != "command":
        return False
    command = handler.get("command")
    if not isinstance(command, str):
        return False
    try:
        argv = shlex.split(command)
    except ValueError:
        return False
    arguments = _membolt_arguments(argv)
    return arguments is not None and arguments[:2] == ["hook", "claude-code"]


def is_membolt_server(server: object) -> bool:
    """Whether an MCP server entry is one that install adds."""
    if not isinstance(server, dict):
        return False
    command, args = server.get("command"), server.get("args", [])
    if not isinstance(command, str) or not isinstance(args, list):
        return False
    if not all(isinstance(arg, str) for arg in args):
        return False
    arguments = _membolt_arguments([command, *args])
    return arguments is not None and arguments[:1] == ["mcp"]


# ----- merging -------------------------------------------------------------------


def _groups(settings: dict[str, Any], event: str, path: Path) -> list[Any]:
    hooks = settings.get("hooks", {})
    if not isinstance(hooks, dict):
        raise SettingsError(f'{path}: "hooks" is not a JSON object; not changed')
    groups = hooks.get(event, [])
    if not isinstance(groups, list):
        raise SettingsError(f'{path}: "hooks"."{event}" is not a JSON array; not changed')
    return groups


def _without_membolt(groups: list[Any]) -> tuple[list[Any], int | None]:
    """``groups`` without membolt's handlers, and the position of the first
    group that held only membolt handlers (None when there was none). A group
    that also holds other handlers keeps them."""
    kept: list[Any] = []
    position: int | None = None
    for group in groups:
        handlers = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(handlers, list) or not any(map(is_membolt_hook, handlers)):
            kept.append(group)
            continue
        others = [handler for handler in handlers if not is_membolt_hook(handler)]
        if others:
            kept.append({**group, "hooks": others})
        elif position is None:
            position = len(kept)
    return kept, position


def add_hooks(settings: dict[str, Any], path: Path, capture: Sequence[str] = ()) -> bool:
    """Puts membolt's handler group in each event of :data:`HOOK_EVENTS` (in
    the place of a membolt group already there); True if anything changed."""
    for event in HOOK_EVENTS:
        _groups(settings, event, path)  # every check before the first change
    before = json.dumps(settings)
    handler = {"type": "command", "command": hook_command(capture), "timeout": HOOK_TIMEOUT_S}
    hooks = settings.setdefault("hooks", {})
    for event in HOOK_EVENTS:
        group: dict[str, Any] = {"hooks": [handler]}
        if event == "PostToolUse":
            group = {"matcher": tool_matcher(capture), **group}
        kept, position = _without_membolt(hooks.get(event, []))
        kept.insert(len(kept) if position is None else position, group)
        hooks[event] = kept
    return json.dumps(settings) != before


def remove_hooks(settings: dict[str, Any], path: Path) -> bool:
    """Removes membolt's handlers from every event (and the groups, event
    lists and ``hooks`` object they leave empty); True if anything changed."""
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return False
    changed = False
    for event, groups in list(hooks.items()):
        if not isinstance(groups, list):
            continue
        kept, _ = _without_membolt(groups)
        if kept == groups:
            continue
        changed = True
        if kept:
            hooks[event] = kept
        else:
            del hooks[event]
    if changed and not hooks:
        del settings["hooks"]
    return changed


def _servers(config: dict[str, Any], path: Path) -> dict[str, Any]:
    servers = config.get("mcpServers", {})
    if not isinstance(servers, dict):
        raise SettingsError(f'{path}: "mcpServers" is not a JSON object; not changed')
    return servers


def add_server(config: dict[str, Any], path: Path, server_args: Sequence[str]) -> bool:
    """Adds (or updates) the ``membolt`` MCP server; True if anything changed."""
    servers = _servers(config, path)
    existing = servers.get(MCP_SERVER_NAME)
    if existing is not None and not is_membolt_server(existing):
        raise SettingsError(
            f'{path}: an MCP server named "{MCP_SERVER_NAME}" that does not run membolt '
            "is already there; rename or remove it first"
        )
    program, *arguments = membolt_argv()
    server = {"type": "stdio", "command": program, "args": [*arguments, *server_args]}
    if existing == server:
        return False
    config["mcpServers"] = {**servers, MCP_SERVER_NAME: server}
    return True


def remove_server(config: dict[str, Any], path: Path) -> bool:
    """Removes the ``membolt`` server if install added it (and ``mcpServers``
    if that leaves it empty); True if anything changed."""
    servers = config.get("mcpServers")
    if not isinstance(servers, dict) or not is_membolt_server(servers.get(MCP_SERVER_NAME)):
        return False
    del servers[MCP_SERVER_NAME]
    if not servers:
        del config["mcpServers"]
    return True


# ----- files ---------------------------------------------------------------------


def read_json_object(path: Path) -> dict[str, Any] | None:
    """The JSON object in ``path``; None when there is no file. Anything else
    (not JSON, not an object, unreadable) is refused."""
    try:
        text = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise SettingsError(f"cannot read {path}: {error.strerror}") from None
    try:
        data = json.loads(text)
    except ValueError as error:
        raise SettingsError(f"{path} is not valid JSON ({error}); not changed") from None
    if not isinstance(data, dict):
        raise SettingsError(
            f"{path} holds a JSON {type(data).__name__}, not an object; not changed"
        )
    return data


def write_json_object(path: Path, data: dict[str, Any]) -> None:
    """Replaces ``path`` with ``data`` atomically: a temporary file in the same
    directory, flushed to disk, given the old file's mode, renamed over it."""
    final = Path(os.path.realpath(path))
    final.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = stat.S_IMODE(final.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    handle, temporary = tempfile.mkstemp(dir=final.parent, prefix=f".{final.name}.", suffix=".tmp")
    try:
        with open(handle, "w", encoding="utf-8") as out:
            out.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
            out.flush()
            os.fchmod(out.fileno(), mode)
            os.fsync(out.fileno())
        os.replace(temporary, final)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


# ----- the commands ------------------------------------------------------------


def install(
    scope: Scope, directory: str | os.PathLike[str] | None = None, capture: Sequence[str] = ()
) -> list[str]:
    """Adds membolt to Claude Code's settings; returns what it did, one line
    per file. Raises :class:`SettingsError` (nothing written) when a file
    cannot be merged."""
    capture = check_tool_names(capture)
    where = target(scope, directory)
    settings = read_json_object(where.settings) or {}
    config = read_json_object(where.mcp) or {}
    hooks_changed = add_hooks(settings, where.settings, capture)
    server_changed = add_server(config, where.mcp, where.server_args)
    report = []
    if hooks_changed:
        write_json_object(where.settings, settings)
        report.append(f"added membolt's hooks ({', '.join(HOOK_EVENTS)}) to {where.settings}")
    else:
        report.append(f"membolt's hooks are already in {where.settings}")
    if server_changed:
        write_json_object(where.mcp, config)
        report.append(f'added the MCP server "{MCP_SERVER_NAME}" to {where.mcp}')
    else:
        report.append(f'the MCP server "{MCP_SERVER_NAME}" is already in {where.mcp}')
    return report


def uninstall(scope: Scope, directory: str | os.PathLike[str] | None = None) -> list[str]:
    """Removes what :func:`install` adds; returns what it did, one line per file."""
    where = target(scope, directory)
    settings = read_json_object(where.settings)
    config = read_json_object(where.mcp)
    report = []
    for path, data, remove, what in (
        (where.settings, settings, remove_hooks, "membolt's hooks"),
        (where.mcp, config, remove_server, f'the MCP server "{MCP_SERVER_NAME}"'),
    ):
        if data is not None and remove(data, path):
            if data or (path == where.mcp and scope == "user"):
                write_json_object(path, data)
            else:
                path.unlink()  # nothing is left in it but what install wrote
            report.append(f"removed {what} from {path}")
        else:
            report.append(f"{what} not found in {path}")
    return report
