"""A failed call's warning line says "Tool call failed" once and stays a line's length.

Before, a server's JSON-RPC error came out as ``Tool call failed: q.t - Tool call failed: EEEE…``:
the toolbox's words twice, then the whole message (up to ``max_result_bytes``, 64 KiB by default) on
the terminal and in the episode log. The event and the model's result still hold what they held.

Real parts: ``tests/servers/quirky.py`` as a stdio server process, the loopback model.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from llm_server import LLMServer, content_reply, tool_call, tool_call_reply
from servers.helpers import RecordingSink

from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.engine import TurnOptions, run_turn
from zorkmcp.llm import open_llm_client
from zorkmcp.mcp import McpManager

QUIRKY = Path(__file__).parent / "servers" / "quirky.py"
OBJECT = {"type": "object", "properties": {}}


async def test_a_long_server_error_is_one_short_warning(llm_server: LLMServer) -> None:
    spec = {
        "tools": [{"name": "t", "inputSchema": OBJECT}],
        "answers": {"t": {"error": {"code": -1, "message": "E" * 5000}}},
    }
    server = ServerConfig(name="q", command=sys.executable, args=("-S", str(QUIRKY), json.dumps(spec)))
    manager = McpManager(
        McpConfig(servers=(server,)), McpSettings(enabled=True), events=(sink := RecordingSink())
    )
    llm_server.script(tool_call_reply(tool_call("q__t", {}, id="c")), content_reply("north"))
    async with open_llm_client(base_url=llm_server.base_url, model="m") as model:
        await run_turn(
            model,
            [{"role": "user", "content": "West of House."}],
            open_toolbox=manager.open_turn,
            options=TurnOptions(),
            events=sink,
        )
    warnings = [line for level, line in sink.lines if level == "WARNING" and "Tool call failed" in line]
    assert warnings == [f"Turn 0 Iteration 1: Tool call failed: q.t - {'E' * 1000}… (4000 more characters)"]
    (error,) = [fields["error"] for event, fields in sink.events if event == "mcp_tool_error"]
    assert error == "Tool call failed: " + "E" * 5000  # the event keeps it
