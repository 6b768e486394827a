"""A server's progress message reaches its event cut, as its log data does (``MAX_LOG_DATA_CHARS``).

Before, ``mcp_tool_progress`` carried a progress message at any length (a server that put a whole
file in it filled the event log and every sink with it), while a log's data was cut at 2000
characters. And a server that sends them in a tight loop has only its first 50 recorded at once,
then 5 a second, the rest counted. Real parts: an SDK ``MCPServer`` over the SDK's in-memory
transport; virtual time.
"""

from __future__ import annotations

from typing import Any

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


def _flooding() -> MCPServer:
    server = MCPServer("flood")

    @server.tool()
    async def flood(ctx: Context) -> str:
        """200 progress notifications at once, then one more a second later."""
        for step in range(200):
            await ctx.report_progress(step, 201, f"step {step}")
        await anyio.sleep(1)  # virtual: the test runs on autojump_clock
        await ctx.report_progress(200, 201, "last")
        return "done"

    return server


async def test_a_flood_of_progress_is_recorded_in_part_and_counted(autojump_clock: Any) -> None:
    # Before: every one was an event; a server in a tight loop filled the recorder (5000 between two
    # writes of the log) and pushed the turn's own events out of the event log
    config = ServerConfig(
        name="flood", type="inprocess", module="test_progress_bounds:_flooding", factory=_flooding
    )
    sink = RecordingSink()
    async with open_toolbox([config], McpSettings(), events=sink) as toolbox:
        result = await toolbox.call_tool("flood.flood", {})
    assert result.content == "done"
    messages = [fields["message"] for event, fields in sink.events if event == "mcp_tool_progress"]
    assert messages == [*(f"step {step}" for step in range(50)), "last"]
    assert ("WARNING", "MCP server 'flood' sent 150 log or progress notification(s) that were not recorded "
            "(more than 5 a second after the first 50)") in sink.lines  # fmt: skip
