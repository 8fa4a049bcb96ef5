"""The MCP server: membolt's memory tools and ``<memory>`` block for any MCP
client (IDE, desktop assistant), over stdio. ``membolt mcp`` runs it.

The MCP Python SDK is an optional extra (``pip install 'membolt[mcp]'``),
1.x from 1.24 or 2.x. It is imported only when a server is built, so the
rest of membolt never needs it; without it :func:`run_mcp_server` raises
:class:`MCPUnavailableError` with the install command.

A client sees exactly what a Python agent gets from :class:`AgentMemory`:

* ``tools/list``: the five tools of ``tool_schemas("mcp")``, schemas, titles
  and annotations as they are (no SDK-generated schema, no argument
  validation in front of the dispatcher: a bad call gets the dispatcher's
  own ``{"error": ...}`` text).
* ``tools/call``: ``AgentMemory.call_tool``'s text as one text content item.
  The aliases of §4 work too. The ``{"error": ...}`` text is
  flagged ``isError`` (see :func:`is_tool_error`).
* ``resources``: ``memory://block``, the ``<memory>`` block
  (``render("", 500)``, empty for an empty store), and
  ``memory://system-prompt``, the whole §5.9 section; both rendered when
  read, so they show the store as it is at that moment.

One :class:`AgentMemory` serves the connection, so ``memory_query`` sees
this session's memory tool calls as ``tool_calls``. Its store is made on the
first request that needs it and holds no file open between requests (the
core closes its lease after a few idle milliseconds), so other processes use
the store freely while the server waits for its client. Store calls run in a
worker thread: a store kept busy by another process (up to ``timeout``
seconds) never stalls the protocol loop.

stdout is the protocol, one JSON-RPC message per line (see "the stdio
transport" below: every request whose id can be read is answered with that
id, and the requests read before the end of input are answered before the
server exits). Logging goes to stderr, and fd 1 points at stderr while the
server runs, so a stray ``print`` cannot corrupt the stream.

The package: ``service.py`` (what is served, no SDK), ``sdk.py`` (the
SDK's server, both majors), ``stdio.py`` (the line transport), and here
:func:`run_mcp_server`, which puts them together.
"""

from __future__ import annotations

import functools
import logging
import os
import sys

from ..store import DEFAULT_TIMEOUT
from .sdk import build_server, require_sdk
from .service import (
    BLOCK_TOKENS,
    BLOCK_URI,
    INSTRUCTIONS,
    RESOURCES,
    SYSTEM_PROMPT_URI,
    MCPUnavailableError,
    MemoryService,
    is_tool_error,
    logger,
)
from .stdio import DRAIN_MARGIN, claim_stdio, error_line, serve_lines, triage

__all__ = [
    "BLOCK_TOKENS",
    "BLOCK_URI",
    "INSTRUCTIONS",
    "RESOURCES",
    "SYSTEM_PROMPT_URI",
    "MCPUnavailableError",
    "MemoryService",
    "build_server",
    "error_line",
    "is_tool_error",
    "run_mcp_server",
    "serve_lines",
    "triage",
]


def run_mcp_server(
    db: str | os.PathLike[str] | None = None,
    *,
    cwd: str | os.PathLike[str] | None = None,
    project: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> None:
    """Serve the store ``open_store(db, cwd, project)`` chooses (a file, or a
    project on a PostgreSQL server, §12) over stdin/stdout until the client
    closes the connection (blocking); requests read before the end of input
    are answered before it returns.

    ``timeout`` is how long a call waits for another process holding the
    store. Raises :class:`MCPUnavailableError` when the SDK is missing.
    """
    require_sdk()
    import anyio

    _log_to_stderr()
    service = MemoryService(db, cwd=cwd, project=project, timeout=timeout)
    server = build_server(service)
    options = server.create_initialization_options()
    logger.info("serving over stdio")
    try:
        with claim_stdio() as (wire_in, wire_out):
            anyio.run(
                functools.partial(
                    serve_lines, server, options, wire_in, wire_out, timeout + DRAIN_MARGIN
                )
            )
    finally:
        service.close()
    logger.info("client disconnected")


def _log_to_stderr() -> None:
    """Route logging to stderr (stdout is the protocol) unless the host
    application configured logging itself."""
    root = logging.getLogger()
    if root.handlers:
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("membolt mcp: %(levelname)s: %(name)s: %(message)s"))
    root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("membolt").setLevel(logging.INFO)
