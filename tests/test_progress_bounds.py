"""A server's progress message reaches its event cut, as its log data does (``MAX_LOG_DATA_CHARS``).

Before, ``mcp_tool_progress`` carried a progress message at any length (a server that put a whole
file in it filled the event log and every sink with it), while a log's data was cut at 2000
characters. Real parts: an SDK ``MCPServer`` over the SDK's in-memory transport.
"""

from __future__ import annotations

import anyio
from mcp.server.mcpserver import Context, MCPServer
from servers.helpers import RecordingSink

from zorkmcp.config import McpSettings, ServerConfig
from zorkmcp.mcp import open_toolbox


def _create() -> MCPServer:
    server = MCPServer("chatty")

    @server.tool()
    async def report(ctx: Context) -> str:
        """Report progress twice: a short message, then one of 5000 characters."""
        await ctx.report_progress(1, 2, "short")
        await ctx.report_progress(2, 2, "x" * 5000)
        return "done"

    return server


async def test_a_long_progress_message_is_cut_in_its_event() -> None:
    config = ServerConfig(
        name="chatty", type="inprocess", module="test_progress_bounds:_create", factory=_create
    )
    sink = RecordingSink()
    with anyio.fail_after(30):
        async with open_toolbox([config], McpSettings(), events=sink) as toolbox:
            result = await toolbox.call_tool("chatty.report", {})
    assert result.content == "done"
    assert [fields["message"] for event, fields in sink.events if event == "mcp_tool_progress"] == [
        "short",
        "x" * 2000 + "… (3000 more characters)",
    ]
