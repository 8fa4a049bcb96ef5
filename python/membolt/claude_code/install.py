"""``membolt install claude-code`` / ``uninstall``: membolt in Claude Code's settings.

Install merges two things into Claude Code's configuration (§13, §13.1):

- the hooks: for each of ``SessionStart``, ``UserPromptSubmit``,
  ``PostToolUse``, ``PostToolUseFailure``, ``PostCompact`` and ``Stop``, one
  matcher group holding one command handler that runs ``membolt hook
  claude-code``. The tool groups match only the captured tools (a failure
  only ``Bash``), so that Claude Code does not start a process for every
  ``Read`` or ``Grep``;
- the MCP server ``membolt`` (``membolt mcp``), giving the model the memory
  tools. It finds the project as the hooks do (``project.py``).

Where (Claude Code's documented locations):

- project scope (the default) writes ``<dir>/.claude/settings.json`` and
  ``<dir>/.mcp.json``, files a team commits: nothing in them names this
  machine. The command is ``membolt``, found on ``PATH``; install says so,
  and refuses when ``membolt`` is not on its own ``PATH`` (a hook that
  cannot start loses every event);
- ``--local`` writes the project's own settings for this machine only:
  ``<dir>/.claude/settings.local.json`` (which Claude Code keeps out of
  git) and the project's ``mcpServers`` in Claude Code's state file
  ``~/.claude.json`` (``projects.<dir>``);
- user scope writes ``~/.claude/settings.json`` and the ``mcpServers`` of
  ``~/.claude.json`` (both under ``$CLAUDE_CONFIG_DIR`` when it is set),
  and the server serves the project Claude Code is started in.

In the local and user scopes, which are this machine's, the command is
``--command PATH`` when given, else the absolute path of the ``membolt``
script of the installation running install (the script that runs it, or
the one beside its Python interpreter), else ``<python> -m membolt.cli``
with that interpreter's absolute path; neither needs ``membolt`` on the
``PATH`` of Claude Code's hook processes nor an activated virtual
environment. The script comes first because hooks run in the project's
directory, and ``python -m`` puts the working directory first on
``sys.path``: a ``membolt.py`` or ``membolt/`` of the project would be
imported instead of membolt. No path is resolved: a virtual environment's
``python`` is a symbolic link, and its target would not see the
environment's packages. ``--command`` alone (no scope, no ``--local``)
installs in the user scope.

The JSON is merged, never replaced: every other setting, hook and server is
kept; running install twice changes nothing the second time, and uninstall
removes exactly the handlers and the server install adds (and the
containers their removal leaves empty; a file left holding nothing is
deleted, except ``~/.claude.json``, Claude Code's own state file). A file
that is not a JSON object is refused before anything is written. Each file
is written to a temporary file beside it and renamed over it, with the old
file's mode (through a symbolic link, its target is replaced).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
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
HOOK_EVENTS: Final = (
    "SessionStart",
    "UserPromptSubmit",
    "PostToolUse",
    "PostToolUseFailure",
    "PostCompact",
    "Stop",
)
#: The events whose groups match tools, and the tools each always matches.
TOOL_EVENT_TOOLS: Final = {"PostToolUse": None, "PostToolUseFailure": ("Bash",)}
#: Seconds Claude Code lets a hook run: above the hook's 1 s wait for a busy
#: store and a PostgreSQL server's connect timeout, far below Claude Code's
#: defaults (30 s for a prompt, 600 s otherwise).
HOOK_TIMEOUT_S: Final = 15
MCP_SERVER_NAME: Final = "membolt"
#: The module run as ``python -m`` when there is no script: it exists in
#: every version of membolt.
CLI_MODULE: Final = "membolt.cli"
SCRIPT_NAME: Final = "membolt"
SERVER_ARGS: Final = ("mcp",)
SHARED_SETTINGS: Final = "settings.json"
LOCAL_SETTINGS: Final = "settings.local.json"
_TOOL_NAME: Final = re.compile("[A-Za-z0-9_-]+")


class SettingsError(Exception):
    """A settings file that cannot be changed safely; nothing was written."""


@dataclass(frozen=True)
class Target:
    """The files of one scope.

    ``servers_at`` is where the ``mcpServers`` object sits in ``mcp`` (the
    top level, or a project's entry in Claude Code's state file);
    ``shared`` says the files are a project's committed ones; ``state_file``
    that ``mcp`` is Claude Code's own state file (never deleted)."""

    scope: str
    settings: Path
    mcp: Path
    servers_at: tuple[str, ...]
    shared: bool
    state_file: bool


def target(
    scope: Scope | None,
    directory: str | os.PathLike[str] | None = None,
    *,
    local: bool = False,
    command: str | None = None,
) -> Target:
    """The settings files of ``scope`` (``None``: the project, or the user
    when ``command`` is given without ``local``); ``directory`` is the project
    (default: the working directory)."""
    if local and scope == "user":
        raise SettingsError("--local is a project's own settings; it does not go with --scope user")
    if command is not None and scope == "project" and not local:
        raise SettingsError(
            "--command names this machine's membolt, and .claude/settings.json is shared "
            "with the team: add --local (.claude/settings.local.json) or use --scope user"
        )
    if scope is None:
        scope = "user" if command is not None and not local else "project"
    config_dir = os.environ.get("CLAUDE_CONFIG_DIR")
    home = Path.home()
    base = Path(config_dir).expanduser() if config_dir else home / ".claude"
    state = base / ".claude.json" if config_dir else home / ".claude.json"
    if scope == "user":
        if directory is not None:
            raise SettingsError("--dir names a project; it does not go with --scope user")
        return Target("user", base / SHARED_SETTINGS, state, (), shared=False, state_file=True)
    project = Path(os.path.abspath(os.fspath(directory) if directory is not None else os.curdir))
    if not project.is_dir():
        raise SettingsError(f"{project} is not a directory")
    if local:
        return Target(
            "local",
            project / ".claude" / LOCAL_SETTINGS,
            state,
            ("projects", str(project)),
            shared=False,
            state_file=True,
        )
    return Target(
        "project",
        project / ".claude" / SHARED_SETTINGS,
        project / ".mcp.json",
        (),
        shared=True,
        state_file=False,
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


def program_for(where: Target, command: str | None) -> tuple[list[str], str | None]:
    """The argv that starts membolt from ``where``'s files, and a line for
    the report. Shared files get ``membolt``, which must be on ``PATH``."""
    if command is not None:
        path = os.path.abspath(os.path.expanduser(command))
        if os.path.basename(path) not in (SCRIPT_NAME, f"{SCRIPT_NAME}.exe"):
            raise SettingsError(f"--command {command}: not a membolt executable")
        if not (os.path.isfile(path) and os.access(path, os.X_OK)):
            raise SettingsError(f"--command {command}: no executable file there")
        return [path], None
    if not where.shared:
        return membolt_argv(), None
    found = shutil.which(SCRIPT_NAME)
    if found is None:
        raise SettingsError(
            "membolt is not on PATH, and the project's shared settings run `membolt` from "
            "PATH: install it where PATH finds it (for example `pipx install membolt`), or "
            "give --command /path/to/membolt with --local (this machine's "
            ".claude/settings.local.json) or --scope user"
        )
    return [SCRIPT_NAME], (
        f"the hooks and the MCP server run `{SCRIPT_NAME}` from PATH (here {found}); "
        "Claude Code must find it on its PATH too"
    )


def hook_command(program: Sequence[str], capture: Sequence[str] = ()) -> str:
    """The shell command of every membolt hook handler."""
    extra = [arg for name in capture for arg in ("--capture", name)]
    return shlex.join([*program, "hook", "claude-code", *extra])


def tool_matcher(tools: Iterable[str]) -> str:
    """A ``PostToolUse`` matcher for exactly ``tools``. An anchored regular
    expression means the same to every Claude Code version (older ones read
    ``Write|Edit`` as an unanchored pattern, matching TodoWrite)."""
    return "^(" + "|".join(sorted(tools)) + ")$"


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


def add_hooks(
    settings: dict[str, Any], path: Path, program: Sequence[str], capture: Sequence[str] = ()
) -> bool:
    """Puts membolt's handler group in each event of :data:`HOOK_EVENTS` (in
    the place of a membolt group already there); True if anything changed."""
    for event in HOOK_EVENTS:
        _groups(settings, event, path)  # every check before the first change
    before = json.dumps(settings)
    command = hook_command(program, capture)
    handler = {"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S}
    hooks = settings.setdefault("hooks", {})
    for event in HOOK_EVENTS:
        group: dict[str, Any] = {"hooks": [handler]}
        if event in TOOL_EVENT_TOOLS:
            tools = TOOL_EVENT_TOOLS[event] or capture_list(capture)
            group = {"matcher": tool_matcher(tools), **group}
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


def _servers(
    config: dict[str, Any], path: Path, servers_at: Sequence[str], *, create: bool
) -> dict[str, Any] | None:
    """The ``mcpServers`` object at ``servers_at`` in ``config`` (made when
    ``create`` and missing; None when missing otherwise)."""
    container: Any = config
    for name in servers_at:
        inner = container.get(name)
        if inner is None:
            if not create:
                return None
            inner = container[name] = {}
        if not isinstance(inner, dict):
            raise SettingsError(f'{path}: "{name}" is not a JSON object; not changed')
        container = inner
    servers = container.get("mcpServers")
    if servers is None:
        if not create:
            return None
        servers = container["mcpServers"] = {}
    if not isinstance(servers, dict):
        raise SettingsError(f'{path}: "mcpServers" is not a JSON object; not changed')
    return servers


def add_server(
    config: dict[str, Any], path: Path, program: Sequence[str], servers_at: Sequence[str] = ()
) -> bool:
    """Adds (or updates) the ``membolt`` MCP server; True if anything changed."""
    before = json.dumps(config)
    servers = _servers(config, path, servers_at, create=True)
    assert servers is not None
    existing = servers.get(MCP_SERVER_NAME)
    if existing is not None and not is_membolt_server(existing):
        raise SettingsError(
            f'{path}: an MCP server named "{MCP_SERVER_NAME}" that does not run membolt '
            "is already there; rename or remove it first"
        )
    first, *arguments = program
    servers[MCP_SERVER_NAME] = {
        "type": "stdio",
        "command": first,
        "args": [*arguments, *SERVER_ARGS],
    }
    return json.dumps(config) != before


def remove_server(config: dict[str, Any], path: Path, servers_at: Sequence[str] = ()) -> bool:
    """Removes the ``membolt`` server if install added it (and ``mcpServers``
    if that leaves it empty); True if anything changed."""
    try:
        servers = _servers(config, path, servers_at, create=False)
    except SettingsError:
        return False
    if servers is None or not is_membolt_server(servers.get(MCP_SERVER_NAME)):
        return False
    del servers[MCP_SERVER_NAME]
    if not servers:
        container: Any = config
        for name in servers_at:
            container = container[name]
        del container["mcpServers"]
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
    scope: Scope | None,
    directory: str | os.PathLike[str] | None = None,
    capture: Sequence[str] = (),
    *,
    local: bool = False,
    command: str | None = None,
) -> list[str]:
    """Adds membolt to Claude Code's settings; returns what it did, one line
    per file (and a line on how the command is found). Raises
    :class:`SettingsError` (nothing written) when a file cannot be merged
    or the command cannot be found."""
    capture = check_tool_names(capture)
    where = target(scope, directory, local=local, command=command)
    program, note = program_for(where, command)
    settings = read_json_object(where.settings) or {}
    config = read_json_object(where.mcp) or {}
    hooks_changed = add_hooks(settings, where.settings, program, capture)
    server_changed = add_server(config, where.mcp, program, where.servers_at)
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
    if note is not None:
        report.append(note)
    return report


def uninstall(
    scope: Scope | None, directory: str | os.PathLike[str] | None = None, *, local: bool = False
) -> list[str]:
    """Removes what :func:`install` adds; returns what it did, one line per file."""
    where = target(scope, directory, local=local)
    settings = read_json_object(where.settings)
    config = read_json_object(where.mcp)
    report = []
    if settings is not None and remove_hooks(settings, where.settings):
        _write_or_delete(where.settings, settings, keep_file=False)
        report.append(f"removed membolt's hooks from {where.settings}")
    else:
        report.append(f"membolt's hooks not found in {where.settings}")
    server = f'the MCP server "{MCP_SERVER_NAME}"'
    if config is not None and remove_server(config, where.mcp, where.servers_at):
        _write_or_delete(where.mcp, config, keep_file=where.state_file)
        report.append(f"removed {server} from {where.mcp}")
    else:
        report.append(f"{server} not found in {where.mcp}")
    return report


def _write_or_delete(path: Path, data: dict[str, Any], *, keep_file: bool) -> None:
    if data or keep_file:
        write_json_object(path, data)
    else:
        path.unlink()  # nothing is left in it but what install wrote
