"""The MCP Python SDK's side of the server: the low-level ``Server`` with
membolt's handlers, for mcp 1.x (from 1.24) and 2.x.

Clients' own packages pin either major (langchain-mcp-adapters needs
mcp < 2, for one). The results are built the same way in both (pydantic
models validated from the wire's camelCase names); only three things
differ, each behind one function here: how handlers are registered on the
low-level Server, how a protocol error is raised, and how a JSON-RPC
envelope is read and written.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Awaitable, Callable
from importlib import metadata
from typing import Any, Final, cast

from .. import __version__, tools
from ..errors import MemboltError
from .service import (
    INSTALL_HINT,
    INSTRUCTIONS,
    RESOURCES,
    SERVER_NAME,
    TEXT_MIME,
    MCPUnavailableError,
    MemoryService,
    is_tool_error,
    logger,
)

#: The oldest SDK served (tested with 1.24.0, 1.30.0 and 2.3.0): 1.24 has
#: the 2025-11-25 protocol and the tool annotations and titles membolt lists.
SDK_MINIMUM: Final = (1, 24)


def require_sdk() -> None:
    """Import the SDK, or raise :class:`MCPUnavailableError` saying what to do."""
    try:
        import mcp.server.lowlevel
        import mcp.types  # noqa: F401
    except ImportError:
        raise MCPUnavailableError(
            f"the MCP server needs the MCP Python SDK, which is not installed: {INSTALL_HINT}"
        ) from None
    found = _sdk_version()
    if found is not None and found < SDK_MINIMUM:
        wanted = ".".join(map(str, SDK_MINIMUM))
        have = ".".join(map(str, found))
        raise MCPUnavailableError(
            f"the MCP server needs mcp {wanted} or newer, found {have}: "
            "pip install --upgrade 'membolt[mcp]'"
        )


def _sdk_version() -> tuple[int, int] | None:
    """The installed SDK's (major, minor), or None when unknown."""
    try:
        found = re.match(r"(\d+)\.(\d+)", metadata.version("mcp"))
    except metadata.PackageNotFoundError:
        return None
    return (int(found[1]), int(found[2])) if found else None


def _sdk_is_v1() -> bool:
    found = _sdk_version()
    return found is not None and found[0] < 2


def _sdk_types() -> Any:
    """``mcp.types`` (typed loosely: its names differ between the majors)."""
    return importlib.import_module("mcp.types")


def _protocol_error(code: int, message: str, data: Any = None) -> Exception:
    """The exception a handler raises to answer with a JSON-RPC error."""
    exceptions: Any = importlib.import_module("mcp.shared.exceptions")
    if _sdk_is_v1():
        error_data = _sdk_types().ErrorData(code=code, message=message, data=data)
        return cast(Exception, exceptions.McpError(error_data))
    return cast(Exception, exceptions.MCPError(code=code, message=message, data=data))


def read_envelope(message: dict[str, Any]) -> Any:
    """The SDK's JSON-RPC envelope for a decoded message (raises on one it
    does not take)."""
    types = _sdk_types()
    if _sdk_is_v1():
        return types.JSONRPCMessage.model_validate(message)
    return types.jsonrpc_message_adapter.validate_python(message, by_name=False)


def write_envelope(envelope: Any) -> str:
    """An envelope as one JSON line, as the SDK's own stdio transport writes it."""
    if _sdk_is_v1():
        return cast(str, envelope.model_dump_json(by_alias=True, exclude_none=True))
    return cast(str, envelope.model_dump_json(by_alias=True, exclude_unset=True))


def answered_id(envelope: Any) -> object:
    """The request id an outgoing response or error answers, else None."""
    message = getattr(envelope, "root", envelope)  # 1.x wraps it in a RootModel
    if hasattr(message, "result") or hasattr(message, "error"):
        return getattr(message, "id", None)
    return None


def build_server(service: MemoryService) -> Any:
    """The low-level SDK server for ``service`` (raises :class:`MCPUnavailableError`)."""
    require_sdk()
    import anyio.to_thread

    types = _sdk_types()
    listed_tools = [types.Tool.model_validate(schema) for schema in tools.tool_schemas("mcp")]
    listed_resources = [
        types.Resource.model_validate(
            {
                "uri": resource.uri,
                "name": resource.name,
                "title": resource.title,
                "description": resource.description,
                "mimeType": TEXT_MIME,
            }
        )
        for resource in RESOURCES
    ]
    by_uri = {resource.uri: resource for resource in RESOURCES}

    async def list_tools() -> Any:
        return types.ListToolsResult(tools=listed_tools)

    async def call_tool(name: str, arguments: dict[str, Any] | None) -> Any:
        text = await anyio.to_thread.run_sync(service.call_tool, name, arguments)
        return types.CallToolResult.model_validate(
            {"content": [{"type": "text", "text": text}], "isError": is_tool_error(name, text)}
        )

    async def list_resources() -> Any:
        return types.ListResourcesResult(resources=listed_resources)

    async def read_resource(uri: str) -> Any:
        resource = by_uri.get(uri)
        if resource is None:
            raise _protocol_error(types.INVALID_PARAMS, f"Unknown resource: {uri}", {"uri": uri})
        try:
            text = await anyio.to_thread.run_sync(service.read_resource, resource)
        except (MemboltError, ValueError, OSError) as error:
            logger.warning("cannot read %s: %s", resource.uri, error)
            raise _protocol_error(
                types.INTERNAL_ERROR,
                f"membolt: cannot read {resource.uri}: {error}",
                {"uri": uri},
            ) from None
        return types.ReadResourceResult.model_validate(
            {"contents": [{"uri": resource.uri, "mimeType": TEXT_MIME, "text": text}]}
        )

    if _sdk_is_v1():
        return _server_v1(types, list_tools, call_tool, list_resources, read_resource)
    from mcp.server.lowlevel import Server

    async def on_list_tools(ctx: Any, params: Any) -> Any:
        return await list_tools()

    async def on_call_tool(ctx: Any, params: Any) -> Any:
        return await call_tool(params.name, params.arguments)

    async def on_list_resources(ctx: Any, params: Any) -> Any:
        return await list_resources()

    async def on_read_resource(ctx: Any, params: Any) -> Any:
        return await read_resource(str(params.uri))

    return Server(
        SERVER_NAME,
        version=__version__,
        title="membolt",
        description="Persistent, project-scoped memory for LLM agents",
        instructions=INSTRUCTIONS,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
        on_list_resources=on_list_resources,
        on_read_resource=on_read_resource,
    )


def _server_v1(
    types: Any,
    list_tools: Callable[[], Awaitable[Any]],
    call_tool: Callable[[str, dict[str, Any] | None], Awaitable[Any]],
    list_resources: Callable[[], Awaitable[Any]],
    read_resource: Callable[[str], Awaitable[Any]],
) -> Any:
    """mcp 1.x: the handlers go straight into the request table (not through
    the decorators, which would validate tool arguments themselves and
    answer a bad call with the SDK's text instead of the dispatcher's)."""
    lowlevel: Any = importlib.import_module("mcp.server.lowlevel")
    server = lowlevel.Server(SERVER_NAME, version=__version__, instructions=INSTRUCTIONS)

    async def on_list_tools(request: Any) -> Any:
        return types.ServerResult(await list_tools())

    async def on_call_tool(request: Any) -> Any:
        return types.ServerResult(await call_tool(request.params.name, request.params.arguments))

    async def on_list_resources(request: Any) -> Any:
        return types.ServerResult(await list_resources())

    async def on_read_resource(request: Any) -> Any:
        return types.ServerResult(await read_resource(str(request.params.uri)))

    server.request_handlers.update(
        {
            types.ListToolsRequest: on_list_tools,
            types.CallToolRequest: on_call_tool,
            types.ListResourcesRequest: on_list_resources,
            types.ReadResourceRequest: on_read_resource,
        }
    )
    return server
