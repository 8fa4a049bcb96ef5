"""The MCP server (``membolt mcp``), driven by the MCP SDK's own stdio client.

Each session test starts a real server process (``python -m membolt.cli mcp``)
and talks to it from this process; the store is checked from this process
too, while the server runs and after it exits. Every session runs under a
deadline, so a dead or stuck server fails the test instead of hanging it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from membolt import MemoryStore
from membolt.agent import AgentMemory
from membolt.cli import build_parser, cmd_mcp
from membolt.prompt import STANDING_RULE
from membolt.tools import TOOL_NAMES, tool_schemas

if TYPE_CHECKING:
    from mcp import ClientSession

SESSION_DEADLINE = 60.0  # seconds for a whole session, start-up and shutdown included
ERAS = ["initialize", "discover"]  # the handshake (<= 2025-11-25) and 2026-07-28 eras


def run_session(main: Callable[[], Awaitable[None]]) -> None:
    anyio = pytest.importorskip("anyio")

    async def bounded() -> None:
        with anyio.fail_after(SESSION_DEADLINE):
            await main()

    anyio.run(bounded)


@asynccontextmanager
async def mcp_session(
    tmp_path: Path, *args: str, era: str = "initialize"
) -> AsyncIterator[ClientSession]:
    """A connected client session with ``membolt mcp ARGS`` as the server."""
    pytest.importorskip("mcp")
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        # The interpreter running the tests, so no console script on PATH is needed.
        command=sys.executable,
        args=["-m", "membolt.cli", "mcp", *args],
        cwd=tmp_path,
        env={"MEMBOLT_HOME": str(tmp_path / "home")},
    )
    with (tmp_path / "server.log").open("a", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, read_timeout_seconds=20) as session,
        ):
            if era == "discover":
                await session.discover()
            else:
                await session.initialize()
            yield session


async def call(session: ClientSession, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
    """A tool call's text (the one content item) and its isError flag."""
    result = await session.call_tool(name, arguments)
    assert len(result.content) == 1
    item = result.content[0]
    assert item.type == "text"
    return item.text, result.is_error


def server_log(tmp_path: Path) -> str:
    return (tmp_path / "server.log").read_text(encoding="utf-8")


# ----- a whole session --------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("era", ERAS)
def test_session_tools_resources_and_store(tmp_path: Path, era: str) -> None:
    db = tmp_path / "store" / "memory.redb"
    # The reference: the same store as the server's, opened in this process.
    reference = AgentMemory(MemoryStore(db))

    async def main() -> None:
        from mcp import MCPError
        from mcp.types import INVALID_PARAMS

        async with mcp_session(tmp_path, "--db", str(db), era=era) as session:
            assert session.server_info is not None
            assert session.server_info.name == "membolt"

            listed = (await session.list_tools()).tools
            assert [t.name for t in listed] == list(TOOL_NAMES)
            exported = [
                {"name": t.name, "description": t.description, "inputSchema": t.input_schema}
                for t in listed
            ]
            assert exported == tool_schemas("mcp")

            assert await call(
                session, "memory_save", {"key": "decision:database", "value": "use SQLite"}
            ) == ('Saved memory entry "decision:database" (10 bytes)', False)
            assert await call(session, "memory_save", {"key": "résumé", "value": "世界 data"}) == (
                'Saved memory entry "résumé" (11 bytes)',
                False,
            )
            # An alias of §4, though only the five canonical names are listed.
            assert await call(session, "remember", {"key": "scratch", "value": "temporary"}) == (
                'Saved memory entry "scratch" (9 bytes)',
                False,
            )

            # Outputs are exactly what AgentMemory.call_tool gives for the same store.
            for name, arguments in [
                ("memory_search", {"query": "DATA"}),
                ("memory_search", {"query": "nothing like this"}),
                ("memory_list", {}),
                ("memory_query", {"query": 'filter(memory, .type == "decision")'}),
            ]:
                text, is_error = await call(session, name, arguments)
                assert text == reference.call_tool(name, arguments)
                assert not is_error
            search, _ = await call(session, "memory_search", {"query": "data"})
            assert search == (
                "Found 2 memory entries:\n- decision:database: use SQLite\n- résumé: 世界 data\n"
            )
            rows = json.loads((await call(session, "memory_query", {"query": "memory"}))[0])
            assert rows["count"] == 3

            # This connection's memory tool calls are the tool_calls relation.
            calls, _ = await call(session, "memory_query", {"query": "map(tool_calls, .name)"})
            assert json.loads(calls)[:3] == ["memory_save", "memory_save", "remember"]

            assert await call(session, "memory_delete", {"key": "scratch"}) == (
                'Deleted memory entry "scratch".',
                False,
            )
            assert await call(session, "memory_delete", {"key": "scratch"}) == (
                'No memory entry "scratch".',
                False,
            )

            # Errors are tool results the model reads, flagged isError.
            assert await call(session, "memory_save", {"value": "no key"}) == (
                '{"error": "memory_save: key is required"}',
                True,
            )
            text, is_error = await call(session, "memory_query", {"query": "filter("})
            assert text.startswith('{"error": "memory_query: compile: ')
            assert is_error
            text, is_error = await call(session, "memory_save", {"key": 7, "value": "x"})
            assert text == '{"error": "memory_save: key must be a string, not int"}'
            assert is_error
            text, is_error = await call(session, "memory_wipe", {})
            assert text.startswith('{"error": "memory_wipe: unknown memory tool; ')
            assert is_error

            resources = (await session.list_resources()).resources
            assert [(r.uri, r.mime_type) for r in resources] == [
                ("memory://block", "text/plain"),
                ("memory://system-prompt", "text/plain"),
            ]
            block = await read_text(session, "memory://block")
            assert block == reference.store.render("", 500)
            assert block.startswith("<memory>\n")
            assert block.endswith("\n</memory>")
            assert "decision:database [decision]: use SQLite" in block
            section = await read_text(session, "memory://system-prompt")
            assert section.startswith("Check memory first. Before taking ANY action")
            assert block in section
            assert "<memory-keys>\nrésumé\ndecision:database\n</memory-keys>" in section

            # The server holds nothing open between requests: another process
            # (this one) writes, and the next request sees it.
            reference.store.save("progress:external", "written beside the server")
            listing, _ = await call(session, "memory_list", {})
            assert "- progress:external\n" in listing
            assert "progress:external" in await read_text(session, "memory://block")

            with pytest.raises(MCPError) as unknown:
                await session.read_resource("memory://nothing")
            assert unknown.value.code == INVALID_PARAMS

    run_session(main)

    # After the server exited: the file holds what was saved over MCP.
    with MemoryStore(db) as store:
        assert store.keys() == ["decision:database", "progress:external", "résumé"]
        saved = store.get("decision:database")
        assert saved is not None
        assert saved.value == "use SQLite"
        assert saved.type == "decision"
    log = server_log(tmp_path)
    assert "Traceback" not in log
    assert f"serving {db}" in log


async def read_text(session: ClientSession, uri: str) -> str:
    contents = (await session.read_resource(uri)).contents
    assert len(contents) == 1
    item = contents[0]
    assert item.uri == uri
    assert item.mime_type == "text/plain"
    text = getattr(item, "text", None)
    assert isinstance(text, str)
    return text


@pytest.mark.smoke
@pytest.mark.slow
def test_cwd_serves_the_project_store(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()

    async def main() -> None:
        async with mcp_session(tmp_path, "--cwd", str(project)) as session:
            assert await call(session, "memory_list", {}) == ("No memory entries.", False)
            # An empty store: an empty block, and the standing rule alone.
            assert await read_text(session, "memory://block") == ""
            assert await read_text(session, "memory://system-prompt") == STANDING_RULE
            await call(session, "memory_save", {"key": "decision:lang", "value": "Rust core"})

    run_session(main)
    store = MemoryStore.for_project(project, base_dir=tmp_path / "home")
    entry = store.get("decision:lang")
    assert entry is not None
    assert entry.value == "Rust core"


@pytest.mark.slow
def test_unusable_store_gives_tool_errors_and_keeps_serving(tmp_path: Path) -> None:
    db = tmp_path / "not-a-store.redb"
    db.write_bytes(b"this is not a redb file" * 100)

    async def main() -> None:
        from mcp import MCPError
        from mcp.types import INTERNAL_ERROR

        async with mcp_session(tmp_path, "--db", str(db), "--timeout", "1") as session:
            for _ in range(2):  # the server survives the failure
                text, is_error = await call(session, "memory_list", {})
                assert is_error
                assert json.loads(text)["error"].startswith("memory_list: ")
            with pytest.raises(MCPError) as failed:
                await session.read_resource("memory://block")
            assert failed.value.code == INTERNAL_ERROR
            assert "memory://block" in failed.value.message

    run_session(main)
    assert db.read_bytes() == b"this is not a redb file" * 100
    assert "Traceback" not in server_log(tmp_path)


def test_input_that_is_not_json_rpc_gets_an_error_reply(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "membolt.cli", "mcp", "--db", str(tmp_path / "m.redb")],
        input="{not json\n[]\n\n",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0
    # JSON-RPC 2.0 §5.1: Parse error, then Invalid Request, with a null id;
    # the blank line is no message and gets no answer.
    replies = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(r["id"], r["error"]["code"]) for r in replies] == [(None, -32700), (None, -32600)]
    assert all(r["jsonrpc"] == "2.0" for r in replies)
    assert result.stderr.count("ignored input that is not JSON-RPC") == 3
    assert "Traceback" not in result.stderr


# ----- without the SDK --------------------------------------------------------


def test_missing_sdk_is_one_clear_line(tmp_path: Path) -> None:
    # A process in which `import mcp` fails, as when the extra is not installed.
    script = (
        "import sys; sys.modules['mcp'] = None\n"
        "from membolt.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, "mcp", "--db", str(tmp_path / "m.redb")],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == (
        "membolt: error: the MCP server needs the MCP Python SDK, which is not installed: "
        "pip install 'membolt[mcp]'\n"
    )
    assert not (tmp_path / "m.redb").exists()


def test_missing_sdk_error_type(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from membolt import MemboltError
    from membolt.mcp import MCPUnavailableError, run_mcp_server

    monkeypatch.setitem(sys.modules, "mcp", None)
    with pytest.raises(MCPUnavailableError, match=r"pip install 'membolt\[mcp\]'") as raised:
        run_mcp_server(tmp_path / "m.redb")
    assert isinstance(raised.value, ImportError)
    assert isinstance(raised.value, MemboltError)


def test_too_old_sdk(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("mcp")
    import membolt.mcp

    monkeypatch.setattr(membolt.mcp, "_sdk_version", lambda: (1, 26))
    with pytest.raises(membolt.mcp.MCPUnavailableError) as raised:
        membolt.mcp.run_mcp_server(tmp_path / "m.redb")
    assert str(raised.value) == (
        "the MCP server needs mcp 2.0 or newer, found 1.26: pip install --upgrade 'membolt[mcp]'"
    )


def test_cli_registers_the_subcommand() -> None:
    args = build_parser().parse_args(["mcp", "--cwd", "/some/project", "--timeout", "2"])
    assert args.handler is cmd_mcp
    assert args.cwd == "/some/project"
    assert args.timeout == 2.0


# ----- isError ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "expected"),
    [
        ("memory_save", '{"error": "memory_save: key is required"}', True),
        ("remember", '{"error": "memory_save: value is required"}', True),
        ("nope", '{"error": "nope: unknown memory tool; expected one of ..."}', True),
        ("memory_query", '{"error": "memory_query: run: division by zero"}', True),
        ("memory_save", 'Saved memory entry "k" (1 bytes)', False),
        ("memory_search", 'Found 1 memory entries:\n- k: {"error": "x"}\n', False),
        # A query whose result is an object with an "error" member is a result.
        ("memory_query", '{"error": "boom"}', False),
        ("memory_query", '{"error": "memory_query: x", "more": 1}', False),
        ("memory_query", '{"error": 3}', False),
        ("memory_query", '{"error": ', False),
    ],
)
def test_is_tool_error(name: str, text: str, expected: bool) -> None:
    from membolt.mcp import is_tool_error

    assert is_tool_error(name, text) is expected


def test_service_matches_agent_memory(store_path: Path) -> None:
    """The server's state object, without the SDK: lazy, same outputs."""
    from membolt.mcp import RESOURCES, MemoryService

    service = MemoryService(store_path)
    assert not store_path.exists()  # nothing is opened before a request needs it
    assert service.call_tool("memory_save", {"key": "k", "value": "v"}) == (
        'Saved memory entry "k" (1 bytes)'
    )
    assert service.call_tool("memory_list", None) == "1 memory entries:\n- k\n"
    block = service.read_resource(RESOURCES[0])
    assert block == MemoryStore(store_path).render("", 500)
    service.close()
