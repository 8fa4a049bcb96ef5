"""The MCP server (``membolt mcp``), driven by the MCP SDK's own stdio client.

Each session test starts a real server process (``python -m membolt.cli mcp``)
and talks to it from this process; the store is checked from this process
too, while the server runs and after it exits. Every session runs under a
deadline, so a dead or stuck server fails the test instead of hanging it.

The file passes with mcp 2.x and with mcp 1.x (>= 1.24) installed (CI runs
it with both); the few client-side names that differ between the two go
through the helpers below.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

import membolt
from membolt import MemoryStore
from membolt.agent import AgentMemory
from membolt.cli import build_parser, cmd_mcp
from membolt.prompt import STANDING_RULE
from membolt.tools import TOOL_NAMES, tool_schemas

from support.processes import WORKER

if TYPE_CHECKING:
    from mcp import ClientSession

SESSION_DEADLINE = 60.0  # seconds for a whole session, start-up and shutdown included
ERAS = ["initialize", "discover"]  # the handshake (<= 2025-11-25) and 2026-07-28 eras


def sdk_major() -> int:
    pytest.importorskip("mcp")
    return int(metadata.version("mcp").split(".")[0])


def wire(model: Any) -> dict[str, Any]:
    """A result model as the wire has it (camelCase names in both SDKs)."""
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)  # type: ignore[no-any-return]


def protocol_error() -> type[Exception]:
    """The exception a client call raises on a JSON-RPC error reply."""
    import mcp

    return getattr(mcp, "MCPError", None) or mcp.McpError  # type: ignore[no-any-return]


def error_code(error: BaseException) -> int:
    return getattr(error, "code", None) or error.error.code  # type: ignore[attr-defined,no-any-return]


def error_message(error: BaseException) -> str:
    code = getattr(error, "message", None)
    return code if isinstance(code, str) else error.error.message  # type: ignore[attr-defined,no-any-return]


def run_session(main: Callable[[], Awaitable[None]]) -> None:
    anyio = pytest.importorskip("anyio")

    async def bounded() -> None:
        with anyio.fail_after(SESSION_DEADLINE):
            await main()

    anyio.run(bounded)


@asynccontextmanager
async def mcp_session(
    tmp_path: Path, *args: str, era: str = "initialize", server_info: dict[str, Any] | None = None
) -> AsyncIterator[ClientSession]:
    """A connected client session with ``membolt mcp ARGS`` as the server
    (``server_info``, when given, receives the server's self-description)."""
    pytest.importorskip("mcp")
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        # The interpreter running the tests, so no console script on PATH is needed.
        command=sys.executable,
        args=["-m", "membolt.cli", "mcp", *args],
        cwd=tmp_path,
        env={"MEMBOLT_HOME": str(tmp_path / "home")},
    )
    if era == "discover" and not hasattr(ClientSession, "discover"):
        pytest.skip("mcp 1.x has no 2026-07-28 discovery")
    read_timeout: Any = timedelta(seconds=20) if sdk_major() < 2 else 20
    with (tmp_path / "server.log").open("a", encoding="utf-8") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, read_timeout_seconds=read_timeout) as session,
        ):
            if era == "discover":
                await session.discover()  # type: ignore[attr-defined]
                info = wire(session.server_info)  # type: ignore[attr-defined]
            else:
                info = wire(await session.initialize())["serverInfo"]
            if server_info is not None:
                server_info.update(info)
            yield session


async def call(session: ClientSession, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
    """A tool call's text (the one content item) and its isError flag."""
    result = wire(await session.call_tool(name, arguments))
    assert len(result["content"]) == 1
    item = result["content"][0]
    assert item["type"] == "text"
    return item["text"], result.get("isError", False)


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
        from mcp.types import INVALID_PARAMS

        server: dict[str, Any] = {}
        async with mcp_session(tmp_path, "--db", str(db), era=era, server_info=server) as session:
            assert server["name"] == "membolt"
            assert server["version"] == membolt.__version__

            # tools/list: the schemas, titles and annotations, as exported.
            listed = [wire(t) for t in (await session.list_tools()).tools]
            assert [t["name"] for t in listed] == list(TOOL_NAMES)
            fields = ("name", "title", "description", "inputSchema", "annotations")
            assert [{f: t[f] for f in fields} for t in listed] == tool_schemas("mcp")
            hints = {t["name"]: t["annotations"] for t in listed}
            assert hints["memory_delete"]["destructiveHint"] is True
            assert hints["memory_search"]["readOnlyHint"] is True
            assert hints["memory_save"]["readOnlyHint"] is False

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

            resources = [wire(r) for r in (await session.list_resources()).resources]
            assert [(r["uri"], r["mimeType"]) for r in resources] == [
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

            with pytest.raises(protocol_error()) as unknown:
                await session.read_resource("memory://nothing")  # type: ignore[arg-type]
            assert error_code(unknown.value) == INVALID_PARAMS

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
    contents = wire(await session.read_resource(uri))["contents"]  # type: ignore[arg-type]
    assert len(contents) == 1
    item = contents[0]
    assert item["uri"] == uri
    assert item["mimeType"] == "text/plain"
    text = item.get("text")
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
        from mcp.types import INTERNAL_ERROR

        async with mcp_session(tmp_path, "--db", str(db), "--timeout", "1") as session:
            for _ in range(2):  # the server survives the failure
                text, is_error = await call(session, "memory_list", {})
                assert is_error
                assert json.loads(text)["error"].startswith("memory_list: ")
            with pytest.raises(protocol_error()) as failed:
                await session.read_resource("memory://block")  # type: ignore[arg-type]
            assert error_code(failed.value) == INTERNAL_ERROR
            assert "memory://block" in error_message(failed.value)

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
    assert result.stderr.count("ignored input that is not JSON-RPC") == 2
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

    monkeypatch.setattr(membolt.mcp.sdk, "_sdk_version", lambda: (1, 23))
    with pytest.raises(membolt.mcp.MCPUnavailableError) as raised:
        membolt.mcp.run_mcp_server(tmp_path / "m.redb")
    assert str(raised.value) == (
        "the MCP server needs mcp 1.24 or newer, found 1.23: pip install --upgrade 'membolt[mcp]'"
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


# ----- the stdio wire: end of input, ids ----------------------------------------------

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": "init",
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def serve_piped(
    tmp_path: Path, lines: list[str], *options: str
) -> tuple[list[dict[str, Any]], str]:
    """``membolt mcp`` with ``lines`` on a pipe that is closed right after
    they are written (as `printf ... | membolt mcp` does); its replies and
    its stderr."""
    pytest.importorskip("mcp")
    result = subprocess.run(
        [sys.executable, "-m", "membolt.cli", "mcp", "--db", str(tmp_path / "m.redb"), *options],
        input="".join(f"{line}\n" for line in lines).encode("utf-8", "surrogateescape"),
        capture_output=True,
        timeout=120,
        check=False,
    )
    stderr = result.stderr.decode("utf-8", "replace")
    assert result.returncode == 0, stderr
    assert "Traceback" not in stderr
    return [json.loads(line) for line in result.stdout.decode().splitlines()], stderr


def request(request_id: object, method: str, params: object = None) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message)


@pytest.mark.slow
def test_end_of_input_answers_the_requests_read(tmp_path: Path) -> None:
    saves = [
        request(
            i, "tools/call", {"name": "memory_save", "arguments": {"key": f"k{i}", "value": "v"}}
        )
        for i in range(1, 21)
    ]
    listing = request(21, "tools/call", {"name": "memory_list", "arguments": {}})
    replies, _ = serve_piped(
        tmp_path, [json.dumps(INITIALIZE), json.dumps(INITIALIZED), *saves, listing]
    )
    assert sorted(map(str, (r["id"] for r in replies))) == sorted(["init", *map(str, range(1, 22))])
    by_id = {r["id"]: r for r in replies}
    assert all("result" in r for r in replies)
    assert by_id[1]["result"]["content"][0]["text"] == 'Saved memory entry "k1" (1 bytes)'
    assert MemoryStore(tmp_path / "m.redb").keys() == sorted(f"k{i}" for i in range(1, 21))


@pytest.mark.slow
def test_a_call_right_after_initialize_is_answered(tmp_path: Path) -> None:
    call_line = request(2, "tools/call", {"name": "memory_list", "arguments": {}})
    for _ in range(3):  # the end of input used to race the answer
        replies, _ = serve_piped(tmp_path, [json.dumps(INITIALIZE), call_line])
        assert [r["id"] for r in replies] == ["init", 2]
        assert replies[1]["result"]["content"][0]["text"] == "No memory entries."


@pytest.mark.slow
def test_a_slow_call_is_answered_after_the_input_ended(tmp_path: Path) -> None:
    """A call still running when the input ends (here: waiting a second for
    a store another process holds) gets its answer before the server exits."""
    worker = WORKER
    holder = subprocess.Popen(
        [sys.executable, worker, "hold", str(tmp_path / "m.redb"), "30"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "held"
        call_line = request(2, "tools/call", {"name": "memory_list", "arguments": {}})
        lines = [json.dumps(INITIALIZE), json.dumps(INITIALIZED), call_line]
        replies, _ = serve_piped(tmp_path, lines, "--timeout", "1")
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert [r["id"] for r in replies] == ["init", 2]
    assert replies[1]["result"]["isError"] is True
    assert replies[1]["result"]["content"][0]["text"] == (
        '{"error": "memory_list: the memory store is busy (another process is using it); '
        'retry in a moment"}'
    )


@pytest.mark.slow
def test_a_lone_ping_is_answered(tmp_path: Path) -> None:
    for _ in range(3):
        replies, _ = serve_piped(tmp_path, [request(7, "ping")])
        assert replies == [{"jsonrpc": "2.0", "id": 7, "result": {}}]


def malformed_requests(seed: int, count: int) -> list[tuple[str, object, int | None]]:
    """(line, id, expected error code or None for "any answer with that id")
    for requests whose id can be read, each broken in one way or not at all."""
    rng = random.Random(seed)
    calls = [
        ("ping", None),
        ("tools/list", {}),
        ("tools/call", {"name": "memory_list", "arguments": {}}),
        ("tools/call", {"name": "memory_save", "arguments": {"key": "k", "value": "v"}}),
        ("resources/read", {"uri": "memory://block"}),
        ("no/such/method", {}),
    ]
    cases: list[tuple[str, object, int | None]] = []
    for n in range(count):
        request_id: object = rng.choice([n, -n - 1, f"r{n}", f"{n}", f"r{n}\ud800", 2**53 + n])
        method, params = rng.choice(calls)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        kind = rng.choice(
            [
                "ok",
                "params",
                "params",
                "surrogate in params",
                "surrogate elsewhere",
                "surrogate in method",
                "version",
                "no method",
                "method type",
                "not utf-8",
            ]
        )
        expected: int | None = None
        if kind == "params":
            message["params"] = rng.choice([[1, 2], "x", 3, 2.5, True, False, []])
            expected = -32602
        elif kind == "surrogate in params":
            message["params"] = {
                "name": "memory_save",
                "arguments": {"key": "k\udc00", "value": "v"},
            }
            expected = -32602
        elif kind == "surrogate elsewhere":
            message["extra"] = "\ud83d"
            expected = -32600
        elif kind == "surrogate in method":
            message["method"] = "tools/\udfffcall"
            expected = -32600
        elif kind == "version":
            message["jsonrpc"] = rng.choice(["1.0", 2, None])
            expected = -32600
        elif kind == "no method":
            del message["method"]
            expected = -32600
        elif kind == "method type":
            message["method"] = rng.choice([1, None, ["ping"]])
            expected = -32600
        if isinstance(request_id, str) and "\ud800" in request_id:
            expected = -32600  # a lone surrogate in the id: the envelope is broken
        line = json.dumps(message)  # ASCII: every lone surrogate as a \u escape
        if kind == "not utf-8":
            line = line.replace('"jsonrpc"', '"\udcff": 1, "jsonrpc"', 1)  # a raw 0xFF byte
            expected = -32700
        cases.append((line, request_id, expected))
    return cases


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_every_reply_carries_the_request_id(tmp_path: Path, seed: int) -> None:
    cases = malformed_requests(seed, 150)
    lines = [json.dumps(INITIALIZE), json.dumps(INITIALIZED), *(line for line, _, _ in cases)]
    replies, _ = serve_piped(tmp_path, lines)
    answers: dict[object, list[dict[str, Any]]] = {}
    for reply in replies:
        answers.setdefault(json.dumps(reply["id"]), []).append(reply)
    for line, request_id, expected in cases:
        got = answers.pop(json.dumps(request_id), None)
        assert got is not None, f"no answer to {line}"
        assert len(got) == 1, got
        assert got[0]["id"] == request_id
        if expected is not None:
            assert got[0]["error"]["code"] == expected, (line, got)
    assert list(answers) == ['"init"']


@pytest.mark.slow
def test_unreadable_ids_and_broken_notifications(tmp_path: Path) -> None:
    lines = [
        '{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}',
        '{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}',
        '{"jsonrpc": "2.0", "id": true, "method": "ping"}',
        '{"jsonrpc": "2.0", "id": null, "method": "ping"}',
        '{"jsonrpc": "2.0", "method": "notifications/initialized", "params": [1]}',
        '{"jsonrpc": "2.0", "method": "notifications/x", "params": {"a": "\\ud800"}}',
        '{"jsonrpc": "2.0", "id": 3, "method": "ping", "x": NaN}',
        '{"jsonrpc": "2.0", "id": 4, "method": "ping", "x": -Infinity}',
        '{"jsonrpc": "2.0", "id": 5, "method": "ping" "x": 1}',
        request(9, "ping"),
    ]
    replies, stderr = serve_piped(tmp_path, lines)
    # No id to read: Invalid Request with a null id (JSON-RPC 2.0 §5); no
    # answer to a notification; NaN and Infinity are no JSON (a Parse error,
    # with the id that could be read); text that is no JSON: no id to read.
    assert [(r["id"], r.get("error", {}).get("code")) for r in replies] == [
        (None, -32600),
        (None, -32600),
        (None, -32600),
        (None, -32600),
        (3, -32700),
        (4, -32700),
        (None, -32700),
        (9, None),
    ]
    assert "notification 'notifications/initialized': params must be an object" in stderr


def test_triage_decisions() -> None:
    from membolt.mcp import triage

    def decided(line: str | bytes) -> tuple[object, object]:
        inbound = triage(line.encode() if isinstance(line, str) else line)
        reply = json.loads(inbound.reply) if inbound.reply is not None else None
        return (inbound.forward is not None, reply and (reply["id"], reply["error"]))

    assert decided("   ") == (False, None)
    assert decided(request(1, "ping")) == (True, None)
    assert triage(request("a", "ping").encode()).request_id == "a"
    assert decided('{"jsonrpc": "2.0", "id": 4, "result": {}}') == (True, None)  # a response
    assert decided(request(5, "tools/call", [1])) == (
        False,
        (5, {"code": -32602, "message": "Invalid params: params must be an object, not an array"}),
    )
    assert decided('{"jsonrpc": "2.0", "id": "x\\ud800", "method": "ping"}') == (
        False,
        (
            "x\ud800",
            {
                "code": -32600,
                "message": "Invalid Request: the message holds a lone surrogate (\\ud800-\\udfff)",
            },
        ),
    )
    # The reply is ASCII: the id's escape goes back as the client wrote it.
    assert '"id": "x\\ud800"' in (triage(b'{"jsonrpc": "2.0", "id": "x\\ud800"}').reply or "")
    assert decided(b'{"jsonrpc": "2.0", "id": 6, "method": "ping", "x": "\xff"}') == (
        False,
        (6, {"code": -32700, "message": "Parse error: the message is not UTF-8"}),
    )


@pytest.mark.slow
def test_stray_output_cannot_corrupt_the_stream(tmp_path: Path) -> None:
    """fd 1 points at stderr while the server runs (with either SDK): a print
    in a handler, even straight to fd 1, lands on stderr, not in the stream."""
    pytest.importorskip("mcp")
    script = (
        "import os, sys\n"
        "import membolt.mcp as server\n"
        "call = server.MemoryService.call_tool\n"
        "def noisy(self, name, arguments):\n"
        "    print('stray print')\n"
        "    sys.stdout.flush()\n"
        "    os.write(1, b'stray write\\n')\n"
        "    return call(self, name, arguments)\n"
        "server.MemoryService.call_tool = noisy\n"
        "server.run_mcp_server(sys.argv[1])\n"
    )
    call_line = request(2, "tools/call", {"name": "memory_list", "arguments": {}})
    result = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "m.redb")],
        input=f"{json.dumps(INITIALIZE)}\n{json.dumps(INITIALIZED)}\n{call_line}\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    replies = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["id"] for r in replies] == ["init", 2]
    assert "stray print\nstray write\n" in result.stderr
