"""The ``membolt`` command: look inside and manage a project's memory.

Every subcommand takes ``--db FILE`` (a store file) or ``--cwd DIR`` (the
project whose store to use; default: the working directory), or (§12)
``--db postgresql://...`` with ``--project NAME`` for a team's store on a
PostgreSQL server (``$MEMBOLT_DATABASE_URL`` and ``$MEMBOLT_PROJECT`` when
not given; see ``store.open_store``). Errors print
one line to stderr and exit with status 1 (2 for a malformed command line);
never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from . import __version__, _core
from . import store as stores
from ._core import Entry
from .embedders import EMBEDDER_VARIABLE
from .errors import CorruptStoreError, MemboltError
from .store import MemoryStore, is_database_url

# The modules only some commands need are imported by those commands: each
# command is a new process, and `membolt hook` runs for every event of an
# agent's session.

EXIT_ERROR = 1


class CommandError(Exception):
    """A failure to report as one line and exit status 1."""


def _where(args: argparse.Namespace) -> dict[str, str | None]:
    """The command line's choice of store, for ``stores.open_store``."""
    return {
        "db": getattr(args, "db", None),
        "cwd": getattr(args, "cwd", None),
        "project": getattr(args, "project", None),
    }


def open_store(args: argparse.Namespace, *, writes: bool = False) -> MemoryStore:
    """The store the command works on. A command that only reads refuses a
    ``--db`` file that does not exist (a typo would otherwise read as an empty
    store, and opening it would create its directory)."""
    db = getattr(args, "db", None)
    if not writes and db is not None and not is_database_url(db) and not Path(db).exists():
        raise CommandError(f"no store at {db}")
    return stores.open_store(**_where(args), timeout=_timeout(args))


def _timeout(args: argparse.Namespace) -> float:
    """``--timeout``, else the store's default (§1.4)."""
    timeout: float | None = getattr(args, "timeout", None)
    return _core.DEFAULT_TIMEOUT if timeout is None else timeout


def _iso(ms: int) -> str:
    """A stamp as UTC date and time; one no calendar can show, as a number."""
    from datetime import datetime, timezone

    try:
        moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    except (ValueError, OverflowError, OSError):
        return f"{ms} ms since 1970"
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


# ----- subcommands ---------------------------------------------------------


def cmd_save(args: argparse.Namespace) -> None:
    from . import tools

    entry = open_store(args, writes=True).save(args.key, args.value, type=args.type)
    print(f"saved {tools.quote(entry.key)} [{entry.type}]")


def cmd_get(args: argparse.Namespace) -> None:
    from . import tools

    entry = open_store(args).get(args.key)
    if entry is None:
        raise CommandError(f"no memory entry {tools.quote(args.key)}")
    print(entry.value)


def cmd_delete(args: argparse.Namespace) -> None:
    from . import tools

    if not open_store(args).delete(args.key):
        raise CommandError(f"no memory entry {tools.quote(args.key)}")
    print(f"deleted {tools.quote(args.key)}")


def cmd_list(args: argparse.Namespace) -> None:
    for key in open_store(args).keys():
        print(key)


def cmd_search(args: argparse.Namespace) -> None:
    from . import tools

    if not args.query.strip():
        raise CommandError("the search query is empty")
    text = tools.memory_search(open_store(args), {"query": args.query})
    print(text, end="" if text.endswith("\n") else "\n")


def cmd_stats(args: argparse.Namespace) -> None:
    from collections import Counter

    store = open_store(args)
    entries = store.entries()
    print(f"store:   {store.location}")
    if store.path is not None:
        path = Path(store.path)
        print(f"size:    {path.stat().st_size if path.exists() else 0} bytes")
    print(f"entries: {len(entries)}")
    for entry_type, count in sorted(Counter(e.type or "note" for e in entries).items()):
        print(f"  {entry_type}: {count}")
    if entries:
        oldest = min(entries, key=lambda e: (e.updated_at, e.key))
        newest = max(entries, key=lambda e: (e.updated_at, e.key))
        print(f"oldest:  {oldest.key} ({_iso(oldest.updated_at)})")
        print(f"newest:  {newest.key} ({_iso(newest.updated_at)})")


def cmd_export(args: argparse.Namespace) -> None:
    from . import transfer

    store = open_store(args)
    if args.output in (None, "-"):
        count = transfer.export(store, sys.stdout)
    else:
        count = _export_to_file(store, Path(args.output))
    print(f"exported {count} entries", file=sys.stderr)


def _export_to_file(store: MemoryStore, output: Path) -> int:
    """Writes the export next to ``output`` and renames it into place, so a
    failed export leaves an existing file (an older backup) as it was."""
    import tempfile

    from . import transfer

    if store.path is not None:
        store_path = Path(store.path)
        suffixes = _core.STORE_COMPANION_SUFFIXES
        for taken in (store_path, *(Path(f"{store_path}{suffix}") for suffix in suffixes)):
            if output.exists() and taken.exists() and output.samefile(taken):
                raise CommandError(f"{output} is the store itself; export to another file")
    directory = output.parent if str(output.parent) else Path(".")
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=f".{output.name}.", suffix=".tmp")
    try:
        with open(handle, "w", encoding="utf-8") as out:
            count = transfer.export(store, out)
        os.replace(temporary, output)
    except BaseException:
        os.unlink(temporary)
        raise
    return count


def cmd_import(args: argparse.Namespace) -> None:
    from . import transfer

    show_progress = sys.stderr.isatty()

    def progress(lines: int) -> None:
        if show_progress:
            print(f"\rchecking: {lines:,} lines", end="", file=sys.stderr, flush=True)

    vectors: transfer.Vectors = {}
    with open(args.file, "rb") as source:
        entries = transfer.parse(transfer.decoded_lines(source), progress, vectors)
    if show_progress:
        print(f"\rwriting {len(entries):,} entries ...", end="", file=sys.stderr, flush=True)
    written = transfer.import_entries(open_store(args, writes=True), entries, vectors)
    if show_progress:
        print("\r", end="", file=sys.stderr)
    print(f"imported {len(entries)} entries ({written} new or changed)")


def cmd_query(args: argparse.Namespace) -> None:
    from . import tools
    from .agent import AgentMemory

    result = AgentMemory(open_store(args)).query(args.expression, args.limit)
    print(tools.query_text(result))


def cmd_doctor(args: argparse.Namespace) -> None:
    from . import doctor

    store = open_store(args)
    if store.path is None:
        _doctor_database(store)
        _doctor_vectors(args)
        return
    path = Path(store.path)
    store.close()
    if not path.exists():
        raise CommandError(f"no store at {path}")
    report = doctor.inspect(path, _timeout(args))
    print(f"store:   {path}")
    print(f"size:    {report.file_bytes} bytes")
    print(f"entries: {report.entries}")
    for note in report.notes:
        print(f"note:    {note}")
    if report.healthy:
        _doctor_vectors(args)
    for problem in report.problems:
        print(f"PROBLEM: {problem}")
    count = report.problem_count
    if count:
        raise CommandError(
            f"{count} problem(s) found in {path}; `membolt repair` salvages what passes its "
            "checksums into a new store"
        )
    print("ok: no problems found")


def _doctor_vectors(args: argparse.Namespace) -> None:
    """§15.4: with an embedder set, how many entries lack a vector of it.
    Vectors are a cache: none missing or damaged is a problem."""
    if not os.environ.get(EMBEDDER_VARIABLE):
        return
    with open_store(args) as store:
        if store.embedder is None:
            return
        status = store.vector_status()
    print(
        f"vectors: {status['with_vector']} of {status['entries']} entries have a vector of "
        f"{status['model']}"
    )
    if status["without_vector"]:
        print(
            f"note:    {status['without_vector']} entries have no vector (searched by words "
            "alone); `membolt embed` computes them"
        )
    if status["damaged"]:
        print(f"note:    {status['damaged']} stored vectors were damaged and are not used")


def cmd_embed(args: argparse.Namespace) -> None:
    with open_store(args, writes=True) as store:
        if store.embedder is None:
            raise CommandError(f"no embedder: give --embedder NAME or set ${EMBEDDER_VARIABLE}")
        stored = store.embed_missing()
        status = store.vector_status()
    have = f"{status['with_vector']} of {status['entries']} entries have a vector"
    print(f"embedded {stored}; {have}")
    if status["without_vector"]:
        raise CommandError(
            f"{status['without_vector']} entries still have no vector: {status['last_error']}"
        )


def cmd_repair(args: argparse.Namespace) -> None:
    from . import repair

    store = open_store(args)
    if store.path is None:
        raise CommandError(
            f"{store.location} is not a store file: repair salvages files (a PostgreSQL "
            "server keeps its own backups)"
        )
    path = Path(store.path)
    store.close()
    if not path.exists():
        raise CommandError(f"no store at {path}")
    target = Path(args.output) if args.output else repair.default_target(path)
    done = repair.salvage(path, target, _timeout(args))
    print(f"repaired into {target}: {done.saved} entries ({done.from_journal} from the journal)")
    for note in done.notes:
        print(f"note:    {note}")
    for key in done.lost_keys:
        print(f"lost:    {key}")
    for part in done.unreadable:
        print(f"lost:    {part}")
    for change in done.lost_changes:
        print(f"lost:    {change}")
    for key in done.rolled_back:
        print(f"rolled back: {key}")
    print(f"the store {path} and its companion files are left as they were")
    if not done.complete:
        parts = [
            f"{len(done.lost_keys)} entr{'y' if len(done.lost_keys) == 1 else 'ies'}",
            f"{len(done.unreadable)} unreadable part(s)",
        ]
        if done.lost_changes:
            rolled = f" ({len(done.rolled_back)} key(s) rolled back)" if done.rolled_back else ""
            parts.append(f"acknowledged changes in the journal{rolled}")
        raise CommandError(f"{', '.join(parts)} could not be saved")


def _doctor_database(store: MemoryStore) -> None:
    """A PostgreSQL store (§12): one full read checks every row's checksum
    and text (§14); the first damaged row is the problem reported."""
    print(f"store:   {store.location}")
    try:
        entries = store.entries()
    except CorruptStoreError as damage:
        print(f"PROBLEM: {damage}")
        raise CommandError(f"1 problem found in {store.location}") from None
    print(f"entries: {len(entries)}")
    print("ok: every row passed its checksum")


def cmd_render(args: argparse.Namespace) -> None:
    block = open_store(args).render(args.focus, args.max_tokens, args.now_ms)
    if block:
        print(block)


def cmd_graph(args: argparse.Namespace) -> None:
    from . import tools

    store = open_store(args)
    if args.key is not None and args.key not in store:
        raise CommandError(f"no memory entry {tools.quote(args.key)}")
    entries = store.graph(args.key)
    render = {"text": graph_text, "dot": graph_dot, "mermaid": graph_mermaid}[args.format]
    print(render(entries), end="")


def graph_text(entries: Sequence[Entry]) -> str:
    """One line per entry, parents first: ``key [type] <- parent, parent``."""
    shown = {e.key for e in entries}
    lines = []
    for entry in entries:
        parents = [p for p in entry.references if p in shown]
        arrow = f"  <- {', '.join(parents)}" if parents else ""
        lines.append(f"{entry.key} [{entry.type}]{arrow}\n")
    return "".join(lines)


def _dot_quote(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def graph_dot(entries: Sequence[Entry]) -> str:
    """Graphviz: an edge from each parent to the entries derived from it."""
    shown = {e.key for e in entries}
    lines = ["digraph memory {\n", "  rankdir=TB;\n", "  node [shape=box];\n"]
    for entry in entries:
        label = _dot_quote(f"{entry.key}\n[{entry.type}]")
        lines.append(f"  {_dot_quote(entry.key)} [label={label}];\n")
    for entry in entries:
        for parent in entry.references:
            if parent in shown:
                lines.append(f"  {_dot_quote(parent)} -> {_dot_quote(entry.key)};\n")
    lines.append("}\n")
    return "".join(lines)


def graph_mermaid(entries: Sequence[Entry]) -> str:
    """Mermaid flowchart; node ids are positional, labels carry key and type."""
    ids = {entry.key: f"n{i}" for i, entry in enumerate(entries)}
    lines = ["flowchart TD\n"]
    for entry in entries:
        label = f"{entry.key} [{entry.type}]".replace('"', "#quot;")
        lines.append(f'  {ids[entry.key]}["{label}"]\n')
    for entry in entries:
        for parent in entry.references:
            if parent in ids:
                lines.append(f"  {ids[parent]} --> {ids[entry.key]}\n")
    return "".join(lines)


def cmd_mcp(args: argparse.Namespace) -> None:
    from .mcp import run_mcp_server

    where = _where(args)
    if where["db"] is None and where["cwd"] is None:
        # §13.1: the project as the Claude Code hooks find it, so that the
        # server started in a subdirectory serves the repository's memory.
        from .claude_code.project import ProjectError, project_root

        try:
            where["cwd"] = project_root(os.getcwd())
        except ProjectError as error:
            raise CommandError(str(error)) from None
    run_mcp_server(**where, timeout=_timeout(args))


def cmd_demo(args: argparse.Namespace) -> None:
    from .demo import run_demo

    run_demo()


def cmd_hook(args: argparse.Namespace) -> None:
    """Never fails and never exits non-zero (§13): see
    ``membolt.claude_code.hook``."""
    try:
        from .claude_code.hook import run

        stdin = sys.stdin.buffer
    except BaseException as error:  # even a broken install must not disturb the session
        print(f"membolt hook: {type(error).__name__}: {error}", file=sys.stderr)
        return
    run(
        stdin,
        sys.stdout,
        sys.stderr,
        db=getattr(args, "db", None),
        project_dir=getattr(args, "cwd", None),
        project=getattr(args, "project", None),
        timeout=getattr(args, "timeout", None),
        capture=args.capture,
    )


def cmd_settings(args: argparse.Namespace) -> None:
    """``install`` and ``uninstall``: one line per settings file touched."""
    from .claude_code import install

    if getattr(args, "db", None) is not None or getattr(args, "cwd", None) is not None:
        raise CommandError(f"{args.command} takes --dir DIR, not --db or --cwd")
    try:
        if args.command == "install":
            report = install.install(
                args.scope, args.dir, args.capture, local=args.local, command=args.program
            )
        else:
            report = install.uninstall(args.scope, args.dir, local=args.local)
    except install.SettingsError as error:
        raise CommandError(str(error)) from None
    for line in report:
        print(line)


# ----- parser --------------------------------------------------------------

HOOK_HELP = "handle one agent hook event read from stdin"


def _location_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """--db/--cwd/--timeout, accepted before or after the subcommand."""
    default = None if top else argparse.SUPPRESS
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--db",
        metavar="FILE|URL",
        default=default,
        help="the store file to use, or a postgresql:// server (default: $MEMBOLT_DATABASE_URL)",
    )
    where.add_argument(
        "--cwd",
        metavar="DIR",
        default=default,
        help="use the store of the project at DIR (default: the working directory)",
    )
    parser.add_argument(
        "--project",
        metavar="NAME",
        default=default,
        help="the project on a PostgreSQL server (default: $MEMBOLT_PROJECT, else from --cwd)",
    )
    parser.add_argument(
        "--embedder",
        metavar="NAME",
        default=default,
        help="recall by meaning with this embedder: model2vec:PATH, openai:URL#MODEL, "
        "hashing:DIMS or module:attr (default: $MEMBOLT_EMBEDDER; §15.4)",
    )
    parser.add_argument(
        "--timeout",
        type=float,  # its range is checked by the core, with every other timeout
        default=None if top else argparse.SUPPRESS,
        help="seconds to wait for another process holding the store (default 5; a hook "
        "waits 1, then keeps its event for the next writer)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="membolt", description="Persistent, project-scoped memory for LLM agents."
    )
    parser.add_argument("--version", action="version", version=f"membolt {__version__}")
    _location_options(parser, top=True)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(
        name: str, handler: Callable[[argparse.Namespace], None], help_text: str
    ) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help_text, description=help_text)
        _location_options(sub, top=False)
        sub.set_defaults(handler=handler)
        return sub

    save = command("save", cmd_save, "save (or overwrite) one entry")
    save.add_argument("key")
    save.add_argument("value")
    save.add_argument("--type", help="the entry's type (default: inferred from the key)")
    command("get", cmd_get, "print the value of one entry").add_argument("key")
    command("delete", cmd_delete, "delete one entry").add_argument("key")
    command("list", cmd_list, "print every key, sorted")
    command(
        "search", cmd_search, "substring search, else the ranked word search (the tool's text)"
    ).add_argument("query")
    command("stats", cmd_stats, "entries per type, file size, oldest and newest entry")
    command("demo", cmd_demo, "a short scripted agent session in a throwaway store")
    export = command("export", cmd_export, "write every entry as JSONL (a backup)")
    export.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    command(
        "import", cmd_import, "read entries from a JSONL export (or the seed format)"
    ).add_argument("file")
    query = command("query", cmd_query, "run a memory_query expression, print its JSON")
    query.add_argument("expression")
    query.add_argument(
        "--limit",
        type=int,
        default=_core.DEFAULT_QUERY_LIMIT,
        help=f"rows shown (default {_core.DEFAULT_QUERY_LIMIT}; the tool's maximum applies)",
    )
    command("doctor", cmd_doctor, "read-only integrity check of the store file")
    command("embed", cmd_embed, "store a vector for every entry that lacks one (§15.4)")
    repair_command = command(
        "repair", cmd_repair, "salvage a damaged store into a new one (the old file is kept)"
    )
    repair_command.add_argument(
        "-o",
        "--output",
        metavar="NEW",
        help="the new store file (default: beside the old one, memory.repaired.redb)",
    )
    render = command("render", cmd_render, "print the <memory> block a model would see")
    render.add_argument("--focus", default="", help="the current user prompt (default: none)")
    render.add_argument(
        "--max-tokens",
        type=int,
        default=_core.DEFAULT_MAX_TOKENS,
        help=f"budget (default {_core.DEFAULT_MAX_TOKENS})",
    )
    render.add_argument("--now-ms", type=int, default=None, help="pin the clock (Unix ms)")
    graph = command("graph", cmd_graph, "the causal graph: every entry, or one key's lineage")
    graph.add_argument("key", nargs="?", help="show only this key's ancestors and descendants")
    graph.add_argument("--format", choices=("text", "dot", "mermaid"), default="text")
    command("mcp", cmd_mcp, "serve the memory tools to an MCP client over stdio")
    _hook_arguments(command("hook", cmd_hook, HOOK_HELP))
    for name, help_text in (
        ("install", "add membolt's hooks and MCP server to the agent's settings"),
        ("uninstall", "remove what install added"),
    ):
        sub = command(name, cmd_settings, help_text)
        sub.add_argument("agent", choices=("claude-code",))
        sub.add_argument(
            "--scope",
            choices=("project", "user"),
            default=None,
            help="project (default): the project's shared .claude/settings.json and .mcp.json; "
            "user: ~/.claude/settings.json and ~/.claude.json",
        )
        sub.add_argument(
            "--dir", metavar="DIR", help="the project (default: the working directory)"
        )
        sub.add_argument(
            "--local",
            action="store_true",
            help="this machine's settings of the project (.claude/settings.local.json)",
        )
        if name == "install":
            _capture_option(sub)
            sub.add_argument(
                "--command",
                dest="program",
                metavar="PATH",
                help="the membolt executable the hooks run (user scope, or --local); "
                "default: `membolt` from PATH for a project, this installation otherwise",
            )
    return parser


def _capture_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--capture",
        action="append",
        default=[],
        metavar="TOOL",
        help="also capture this tool's results (a full MCP tool name); repeatable",
    )


def _hook_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("agent", choices=("claude-code",))
    _capture_option(parser)
    parser.set_defaults(command="hook", handler=cmd_hook)
    return parser


def _hook_parser() -> argparse.ArgumentParser:
    """The parser of ``membolt hook ...`` alone. A hook process runs for every
    event of an agent's session, and building the parser of every command
    (argparse translates each help text as it goes) costs it tens of
    milliseconds; the full parser still reads a hook command line that puts
    the global options first."""
    parser = argparse.ArgumentParser(prog="membolt hook", description=HOOK_HELP)
    _location_options(parser, top=True)
    return _hook_arguments(parser)


def _check_location(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """--db and --cwd may each come before or after the command, not both."""
    db, cwd = getattr(args, "db", None), getattr(args, "cwd", None)
    if db is not None and cwd is not None:
        parser.error("--db and --cwd choose the store two ways; give one")
    if db is not None and not db.strip():
        parser.error("--db needs a file path")
    if cwd is not None and not cwd.strip():
        parser.error("--cwd needs a directory")
    project = getattr(args, "project", None)
    if project is not None and not project.strip():
        parser.error("--project needs a name")
    if project is not None and db is not None and not is_database_url(db):
        parser.error("--project chooses a project on a PostgreSQL server; a store file holds one")


def _check_project_directory(args: argparse.Namespace) -> None:
    """``--cwd`` must name a directory that exists: a typo (in an MCP client's
    configuration, say) would otherwise open a new, empty store, and the
    project's memory would seem gone."""
    cwd = getattr(args, "cwd", None)
    if cwd is not None and not Path(cwd).is_dir():
        problem = "is not a directory" if Path(cwd).exists() else "no such directory"
        raise CommandError(f"--cwd {cwd}: {problem}")


def _reported_errors() -> tuple[type[Exception], ...]:
    """The failures a command reports as one line (exit status 1)."""
    from .tools import ToolError

    return (
        CommandError,
        MemboltError,
        ToolError,
        ValueError,
        TypeError,
        KeyError,
        OSError,
        OverflowError,
    )


def main(argv: Sequence[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else list(argv)
    if arguments[:1] == ["hook"]:
        parser, arguments = _hook_parser(), arguments[1:]
    else:
        parser = build_parser()
    args = parser.parse_args(arguments)
    _check_location(parser, args)
    if getattr(args, "embedder", None):
        # Read by open_store, here and in what this process serves (MCP,
        # hooks), as every command reads $MEMBOLT_DATABASE_URL.
        os.environ[EMBEDDER_VARIABLE] = args.embedder
    if sys.stdout is None and args.handler is not cmd_hook:
        print("membolt: error: standard output is closed", file=sys.stderr)
        return EXIT_ERROR
    try:
        if args.handler is not cmd_hook:  # a hook reports it on its own terms (exit 0)
            _check_project_directory(args)
        args.handler(args)
    except BrokenPipeError:
        # Output piped into `head`: not an error worth a traceback. (Before
        # OSError, its parent.)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except Exception as error:
        if not isinstance(error, _reported_errors()):
            raise
        message = error.args[0] if isinstance(error, KeyError) and error.args else error
        print(f"membolt: error: {message}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
