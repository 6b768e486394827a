"""In-process MCP servers whose starts succeed or fail as a test scripts them (properties 26–27).

``OUTCOMES[name]`` is the queue of the next start attempts of server ``name``: ``True`` builds the
server, ``False`` makes its factory raise (a start-up failure). Factories run in a worker thread.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer

__all__ = ["OUTCOMES", "create_a", "create_b"]

OUTCOMES: dict[str, list[bool]] = {"a": [], "b": []}


def _create(name: str) -> MCPServer[Any]:
    if not OUTCOMES[name].pop(0):
        raise RuntimeError(f"scripted start failure of {name}")
    server: MCPServer[Any] = MCPServer(name)

    @server.tool(description="Answer ok.")
    async def ok() -> str:
        return "ok"

    return server


def create_a() -> MCPServer[Any]:
    return _create("a")


def create_b() -> MCPServer[Any]:
    return _create("b")
