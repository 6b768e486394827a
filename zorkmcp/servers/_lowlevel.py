"""The tools of a standard-library server (:class:`._stdio_jsonrpc.StdioTool`) on the SDK's lowlevel server.

What an ``inprocess`` server built from them is made of: the same listings and the same answers as
the stdio loop, run over the SDK's memory transport. The SDK's ``MCPServer`` would do it too, but
it builds a pydantic model per tool: 1.6-2.2 ms of CPU to build the game's server against 0.03 ms
here (building 64 of each after a first one, so that imports are not counted), and ``zorkmcp eval``
builds one per episode.

The tools run inline on the event loop: keep them to what takes microseconds (a game step, a
thought), as the stdio loop does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Sequence

    from mcp.server.lowlevel import Server

    from ._stdio_jsonrpc import StdioTool

__all__ = ["lowlevel_server"]


def lowlevel_server(tools: Sequence[StdioTool], *, name: str, version: str, instructions: str) -> Server[Any]:
    """An ``mcp.server.lowlevel.Server`` offering ``tools`` and answering as the stdio loop does.

    Args:
        tools: the tools, in listing order.
        name: the server's name (``serverInfo``).
        version: its version.
        instructions: its instructions.
    """
    import mcp_types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    by_name = {tool.name: tool for tool in tools}
    listed = [types.Tool.model_validate(tool.listing()) for tool in tools]

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = by_name.get(params.name)
        if tool is None:  # the stdio loop's answer: JSON-RPC invalid params
            message = f"Unknown tool: {params.name} (available: {', '.join(by_name) or 'none'})"
            raise MCPError(code=types.INVALID_PARAMS, message=message)
        try:
            text, is_error = tool.function(params.arguments or {})
        except Exception as exc:  # noqa: BLE001 - a tool bug becomes an error result, as on stdio
            text, is_error = f"internal error in tool {params.name}: {type(exc).__name__}: {exc}", True
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=is_error)

    return Server(
        name, version=version, instructions=instructions, on_list_tools=list_tools, on_call_tool=call_tool
    )
