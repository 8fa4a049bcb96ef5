"""The stdio transport: JSON-RPC lines read and written by membolt itself.

membolt reads and writes the lines rather than through the SDK's stdio
transport, for two things a client needs and neither SDK does:

* every request gets an answer carrying its id when the id can be read
  (the SDK answers a line it cannot parse with nothing, so a client waits
  forever for that id: the triage here answers it with the JSON-RPC error);
* at the end of input, the requests already read are answered before the
  server stops (the SDK cancels the ones in flight, so
  ``printf '<initialize>\\n<call>\\n' | membolt mcp`` lost the call).

stdout is the protocol; while the server runs, fd 0 points at the null
device and fd 1 at stderr, so that a stray ``print`` cannot corrupt it.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from typing import Any, BinaryIO, Final

from .sdk import answered_id, read_envelope, write_envelope
from .service import logger

# JSON-RPC 2.0 error codes (the same in every SDK).
PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
INVALID_PARAMS: Final = -32602

#: Seconds past the store timeout that the end of input waits for a reply
#: before giving up on the requests still open.
DRAIN_MARGIN: Final = 10.0


@contextmanager
def claim_stdio() -> Iterator[tuple[BinaryIO, BinaryIO]]:
    """The protocol's stdin and stdout as private descriptors, with fd 0
    pointed at the null device and fd 1 at stderr while serving, so that a
    stray ``print`` (or a child process) can neither corrupt nor steal the
    stream; both are restored afterwards."""
    sys.stdout.flush()
    wire_in = os.fdopen(os.dup(0), "rb")
    try:
        wire_out = os.fdopen(os.dup(1), "wb")
    except OSError:
        wire_in.close()
        raise
    try:
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            os.dup2(null, 0)
        finally:
            os.close(null)
        os.dup2(2, 1)
        yield wire_in, wire_out
    finally:
        sys.stdout.flush()
        os.dup2(wire_out.fileno(), 1)
        os.dup2(wire_in.fileno(), 0)
        with suppress(OSError):
            wire_out.close()
        wire_in.close()


@dataclass(frozen=True)
class Inbound:
    """What to do with one input line: ``forward`` the decoded message to the
    server (``request_id`` set when it is a request awaiting an answer),
    send ``reply`` (a JSON-RPC error line), or neither (a blank line, a
    broken notification: JSON-RPC answers no notification)."""

    forward: dict[str, Any] | None = None
    request_id: str | int | None = None
    reply: str | None = None
    problem: str | None = None


def error_line(request_id: object, code: int, message: str) -> str:
    """A JSON-RPC error response as one line (ASCII, so an id holding a lone
    surrogate comes back as the very escape the client sent)."""
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
    )


def _readable_id(message: dict[str, Any]) -> str | int | None:
    """The message's id when it is one JSON-RPC and MCP allow (a string or
    an integer), else None."""
    found = message.get("id")
    if isinstance(found, str) or (isinstance(found, int) and not isinstance(found, bool)):
        return found
    return None


def _holds_lone_surrogate(value: object) -> bool:
    """Whether any string in ``value`` (keys included) holds a lone surrogate
    (a ``\\ud800`` escape decodes to one: valid JSON, but not Unicode)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


def triage(line: bytes) -> Inbound:
    """Decide what one input line is (JSON-RPC 2.0 §4, §5), without the SDK.

    A line that is no JSON gets a Parse error (-32700) and one that is no
    message object an Invalid Request (-32600), both with id null, since no
    id can be read. Past that the id is read, and every error answers with
    it: a Parse error for a message that is JSON but for bytes that are not
    UTF-8 or a NaN, an Invalid Request for a broken envelope (``jsonrpc``,
    ``id``, ``method``, or a lone surrogate in it), Invalid params (-32602)
    for ``params`` that are not an object or hold a lone surrogate. A
    notification (no id) is never answered. Responses (a client answering a
    server request) are forwarded.
    """
    if not line.strip():
        return Inbound()
    # Two ways a line can be all but JSON, read anyway to find its id: bytes
    # that are not UTF-8, and NaN or Infinity (which Python's json accepts).
    not_json: list[str] = []
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        text = line.decode("utf-8", "replace")
        not_json.append("the message is not UTF-8")

    def constant(name: str) -> None:
        not_json.append(f"{name} is not JSON")

    try:
        message = json.loads(text, parse_constant=constant)
    except (ValueError, RecursionError):
        return Inbound(reply=error_line(None, PARSE_ERROR, "Parse error"), problem="not JSON")
    if not isinstance(message, dict):
        return Inbound(
            reply=error_line(None, INVALID_REQUEST, "Invalid Request: not a JSON object"),
            problem="not a JSON-RPC message object",
        )
    request_id = _readable_id(message)
    is_notification = "id" not in message
    if "method" not in message and ("result" in message or "error" in message):
        return Inbound(forward=message)  # a response to a server request

    def invalid(code: int, detail: str) -> Inbound:
        if is_notification and isinstance(message.get("method"), str):
            return Inbound(problem=f"notification {message['method']!r}: {detail}")
        kind = {PARSE_ERROR: "Parse error", INVALID_PARAMS: "Invalid params"}.get(
            code, "Invalid Request"
        )
        return Inbound(reply=error_line(request_id, code, f"{kind}: {detail}"), problem=detail)

    if not_json:
        return invalid(PARSE_ERROR, not_json[0])
    if message.get("jsonrpc") != "2.0":
        return invalid(INVALID_REQUEST, 'jsonrpc must be "2.0"')
    if not is_notification and request_id is None:
        return invalid(INVALID_REQUEST, "id must be a string or an integer")
    method = message.get("method")
    if not isinstance(method, str):
        return invalid(INVALID_REQUEST, "method must be a string")
    envelope = {name: value for name, value in message.items() if name != "params"}
    if _holds_lone_surrogate(envelope):
        return invalid(INVALID_REQUEST, "the message holds a lone surrogate (\\ud800-\\udfff)")
    params = message.get("params")
    if params is not None and not isinstance(params, dict):
        return invalid(INVALID_PARAMS, f"params must be an object, not {_json_kind(params)}")
    if _holds_lone_surrogate(params):
        return invalid(INVALID_PARAMS, "params hold a lone surrogate (\\ud800-\\udfff)")
    return Inbound(forward=message, request_id=request_id)


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    return "a number"


class _OpenRequests:
    """The ids of forwarded requests not answered yet, so that the end of
    input can wait for their answers. Used from the event loop only."""

    def __init__(self) -> None:
        self._open: Counter[tuple[type, object]] = Counter()
        self._answer: Any = None  # an anyio.Event while drained() waits

    def add(self, request_id: object) -> None:
        self._open[(type(request_id), request_id)] += 1

    def settle(self, request_id: object) -> None:
        key = (type(request_id), request_id)
        if self._open[key] > 1:
            self._open[key] -= 1
        else:
            self._open.pop(key, None)
        if self._answer is not None:
            self._answer.set()

    def ids(self) -> list[object]:
        return [request_id for _, request_id in self._open]

    async def drained(self, idle_seconds: float) -> bool:
        """Wait until every request is answered (True), or until no answer
        came for ``idle_seconds`` while some are open (False)."""
        import anyio

        while self._open:
            self._answer = anyio.Event()
            with anyio.move_on_after(idle_seconds):
                await self._answer.wait()
            if not self._answer.is_set():
                return False
        return True


async def serve_lines(
    server: Any, options: Any, wire_in: BinaryIO, wire_out: BinaryIO, drain_seconds: float
) -> None:
    """Run ``server`` over JSON-RPC lines read from ``wire_in`` and written
    to ``wire_out`` until the input ends and the requests read are answered."""
    import anyio
    import anyio.to_thread
    from mcp.shared.message import SessionMessage

    to_server, server_input = anyio.create_memory_object_stream[Any](0)
    server_output, to_client = anyio.create_memory_object_stream[Any](16)
    replies = server_output.clone()  # the triage's own answers
    requests = _OpenRequests()

    async def read_input() -> None:
        async with to_server, replies:
            while True:
                line = await anyio.to_thread.run_sync(wire_in.readline, abandon_on_cancel=True)
                if not line:
                    break
                inbound = triage(line)
                if inbound.problem is not None:
                    logger.warning(
                        "ignored input that is not JSON-RPC: %s: %.200r", inbound.problem, line
                    )
                if inbound.forward is None:
                    if inbound.reply is not None:
                        await replies.send(inbound.reply)
                    continue
                message = inbound.forward
                try:
                    envelope = read_envelope(message)
                except Exception as error:  # the SDK's own checks: refused, say so
                    logger.warning("ignored input the MCP SDK refused: %.200s", error)
                    if inbound.request_id is not None:
                        await replies.send(
                            error_line(inbound.request_id, INVALID_REQUEST, "Invalid Request")
                        )
                    continue
                _note_cancellation(message, requests)
                if inbound.request_id is not None:
                    requests.add(inbound.request_id)
                await to_server.send(SessionMessage(envelope))
            if not await requests.drained(drain_seconds):
                logger.warning(
                    "input ended; no answer came for the requests %s",
                    ", ".join(map(repr, requests.ids())),
                )

    async def write_output() -> None:
        client_gone = False
        async with to_client:
            async for item in to_client:
                if isinstance(item, str):
                    text = item
                else:
                    text = write_envelope(item.message)
                    answered = answered_id(item.message)
                    if answered is not None:
                        requests.settle(answered)
                if client_gone:
                    continue  # keep taking the server's output, so it never blocks
                try:
                    await anyio.to_thread.run_sync(_write_line, wire_out, text)
                except OSError as error:  # the client closed its end
                    logger.info("cannot write to the client: %s", error)
                    client_gone = True

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(write_output)
        tasks.start_soon(read_input)
        async with server_output:
            await server.run(server_input, server_output, options)


def _note_cancellation(message: dict[str, Any], requests: _OpenRequests) -> None:
    """A request the client cancelled gets no answer (MCP): stop waiting."""
    if message.get("method") == "notifications/cancelled":
        params = message.get("params") or {}
        if isinstance(params, dict) and "requestId" in params:
            requests.settle(params["requestId"])


def _write_line(wire_out: BinaryIO, text: str) -> None:
    wire_out.write(text.encode("utf-8") + b"\n")
    wire_out.flush()
