"""A real third-party MCP server: ``@modelcontextprotocol/server-sequential-thinking`` on Node.js.

``.ci/run`` installs it with npm into ``tests/node``; without Node.js or the package these tests are
skipped with the reason.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from servers.helpers import is_alive

from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.mcp import McpManager
from zorkmcp.observability import EventRecorder

PACKAGE = Path(__file__).with_name("node") / "node_modules/@modelcontextprotocol/server-sequential-thinking"
ENTRY = PACKAGE / "dist/index.js"
NODE = shutil.which("node")

pytestmark = [
    pytest.mark.node,
    pytest.mark.skipif(NODE is None, reason="Node.js is not installed"),
    pytest.mark.skipif(
        not ENTRY.is_file(),
        reason="the package is not installed: "
        "`npm install --prefix tests/node @modelcontextprotocol/server-sequential-thinking` (.ci/run does)",
    ),
]


def sequential_thinking(**options: Any) -> ServerConfig:
    assert NODE is not None
    return ServerConfig(
        name="sequential-thinking",
        command=NODE,
        args=(str(ENTRY),),
        env={"DISABLE_THOUGHT_LOGGING": "true"},
        **options,
    )


THOUGHT = {
    "thought": "Open the mailbox first.",
    "thoughtNumber": 1,
    "totalThoughts": 2,
    "nextThoughtNeeded": True,
}


async def test_tools_are_translated_and_callable() -> None:
    events = EventRecorder()
    manager = McpManager(
        McpConfig(servers=(sequential_thinking(),)), McpSettings(enabled=True), events=events
    )
    async with manager.open_turn() as toolbox:
        (tool,) = toolbox.tools
        assert tool.name == "sequential-thinking.sequentialthinking"
        assert tool.wire_name == "sequential-thinking__sequentialthinking"
        schema = tool.openai_schema()
        assert schema["function"]["parameters"]["required"] == [
            "thought",
            "nextThoughtNeeded",
            "thoughtNumber",
            "totalThoughts",
        ]
        result = await toolbox.call_tool(tool.wire_name, THOUGHT)
        assert not result.is_error, result.error_message
        content = result.content if isinstance(result.content, dict) else json.loads(result.content)
        assert content["thoughtNumber"] == 1
        assert content["nextThoughtNeeded"] is True
        bad = await toolbox.call_tool(tool.name, {"thought": 3})
        assert bad.is_error
    (started,) = events.of_type("mcp_server_started")
    assert not is_alive(started["pid"])


async def test_prewarmed_node_server_is_fresh_every_turn() -> None:
    events = EventRecorder()
    manager = McpManager(
        McpConfig(servers=(sequential_thinking(),)), McpSettings(enabled=True), events=events
    )
    history_lengths = []
    async with manager.open_episode() as episode:
        for _ in range(3):
            async with manager.open_turn(episode) as toolbox:
                result = await toolbox.call_tool("sequential-thinking.sequentialthinking", THOUGHT)
                content = result.content if isinstance(result.content, dict) else json.loads(result.content)
                history_lengths.append(content["thoughtHistoryLength"])
    assert history_lengths == [1, 1, 1]  # a fresh process (and thought history) every turn
    pids = [e["pid"] for e in events.of_type("mcp_server_started")]
    assert len(set(pids)) == len(pids) >= 3
    for pid in pids:
        assert not is_alive(pid)
