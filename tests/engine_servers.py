"""In-process MCP servers (real SDK servers over the SDK's memory transport) for the engine tests.

Referenced from ServerConfig(type="inprocess", module="engine_servers:create_tools_server").
Module-level lists record what the servers saw, so tests can assert on execution order and overlap.
"""

from __future__ import annotations

import os
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

CALLS: list[tuple[str, float, float]] = []
"""(tool, start, end) of every call to ``work``, on the trio clock."""
ACTIVE: list[int] = [0, 0]
"""[currently running, highest seen] for ``work``: proves sequential execution (property 17)."""
SESSIONS: list[int] = []
"""One entry per server instance created (fresh state per session)."""


def reset() -> None:
    CALLS.clear()
    SESSIONS.clear()
    ACTIVE[:] = [0, 0]


def create_tools_server() -> MCPServer[Any]:
    """Tools: echo, fail, hang, work (takes virtual time), counter (per-instance state), pid.

    Every tool is ``async``: the SDK runs sync tools in a worker thread, and while a thread runs,
    ``MockClock(autojump_threshold=0)`` sees every task blocked and jumps to the next deadline, the
    tool timeout, so a sync tool could "time out" in zero real time.
    """
    server: MCPServer[Any] = MCPServer("tools")
    SESSIONS.append(len(SESSIONS) + 1)
    state = {"count": 0}

    @server.tool(description="Echo the text back.")
    async def echo(text: str) -> str:
        return text

    @server.tool(description="Always fails.")
    async def fail(reason: str = "boom") -> str:
        raise ToolError(reason)

    @server.tool(description="Never returns.")
    async def hang() -> str:
        await anyio.sleep_forever()
        return "unreachable"

    @server.tool(description="Works for `seconds` (virtual time in tests).")
    async def work(seconds: float = 1.0, label: str = "") -> str:
        ACTIVE[0] += 1
        ACTIVE[1] = max(ACTIVE[1], ACTIVE[0])
        start = anyio.current_time()
        try:
            await anyio.sleep(seconds)  # virtual: the tests run this on MockClock(autojump)
        finally:
            ACTIVE[0] -= 1
        CALLS.append((label, start, anyio.current_time()))
        return f"worked {seconds}s {label}".strip()

    @server.tool(description="Counts calls on this server instance.")
    async def counter() -> int:
        state["count"] += 1
        return state["count"]

    @server.tool(description="The process id.")
    async def pid() -> int:
        return os.getpid()

    return server


PROBE_LOG: list[tuple[str, str, float, float | None]] = []
"""(kind, tag, start, end) of every call that reached the ``probe`` server, on the trio clock;
``end`` is ``None`` while the call runs (``hang`` ends only when it is cancelled)."""
PROBE_ACTIVE: list[int] = [0, 0]
"""[currently running, highest seen] across every ``probe`` tool (property 17)."""


def reset_probe() -> None:
    PROBE_LOG.clear()
    PROBE_ACTIVE[:] = [0, 0]


def create_probe_server() -> MCPServer[Any]:
    """Async-only tools for the property tests (no worker threads, so ``MockClock`` autojump is exact).

    ``ok`` returns a JSON object after ``seconds`` of (virtual) work, ``fail`` raises a tool error,
    ``hang`` never returns. Every call is logged in :data:`PROBE_LOG` when it starts.
    """
    server: MCPServer[Any] = MCPServer("probe")

    def _enter(kind: str, tag: str) -> int:
        PROBE_ACTIVE[0] += 1
        PROBE_ACTIVE[1] = max(PROBE_ACTIVE[1], PROBE_ACTIVE[0])
        PROBE_LOG.append((kind, tag, anyio.current_time(), None))
        return len(PROBE_LOG) - 1

    def _leave(index: int) -> None:
        PROBE_ACTIVE[0] -= 1
        kind, tag, start, _ = PROBE_LOG[index]
        PROBE_LOG[index] = (kind, tag, start, anyio.current_time())

    @server.tool(description="Answers with its tag after `seconds` of work.")
    async def ok(tag: str, seconds: float = 0.0) -> dict[str, Any]:
        index = _enter("ok", tag)
        try:
            await anyio.sleep(seconds)  # virtual: the property tests run on MockClock(autojump)
        finally:
            _leave(index)
        return {"tag": tag, "seconds": seconds}

    @server.tool(description="Fails with a tool error naming its tag.")
    async def fail(tag: str) -> str:
        index = _enter("fail", tag)
        _leave(index)
        raise ToolError(f"probe failure {tag}")

    @server.tool(description="Never returns.")
    async def hang(tag: str) -> str:
        index = _enter("hang", tag)
        try:
            await anyio.sleep_forever()  # virtual: ends when the call is cancelled
        finally:
            _leave(index)  # when the client's notifications/cancelled arrives
        return "unreachable"

    return server


THINK_DELAYS: list[float] = []
"""Virtual seconds each successive ``think`` call takes (0 once the list is used up)."""


def create_thoughtbox_server() -> MCPServer[Any]:
    """A stand-in for the seeds' ``thoughtbox`` server: one async ``think`` tool."""
    server: MCPServer[Any] = MCPServer("thoughtbox")

    @server.tool(description="Think one step further.")
    async def think(thought: str) -> dict[str, Any]:
        await anyio.sleep(THINK_DELAYS.pop(0) if THINK_DELAYS else 0.0)  # virtual: tests run on MockClock
        return {"thought": thought, "next_thought_needed": False}

    return server


def create_broken_server() -> MCPServer[Any]:
    """A factory that fails, as a server whose command is wrong does (start-up failure)."""
    raise RuntimeError("broken on purpose")
