"""A real MCP server (the SDK's) that sends ``sampling/createMessage`` with any parameters, for probes.

In process: ``ServerConfig(type="inprocess", module="servers.sampling_probe:create_server")``. Over
stdio: ``python tests/servers/sampling_probe.py``. The requests go out raw (``send_raw_request``), so
the test chooses every field, even ones the SDK's types would refuse (no ``maxTokens``). Tools, each
answering with JSON text:

* ``raw``: ``count`` requests with ``params``, one after the other or all at once with
  ``concurrent``, each withdrawn (``notifications/cancelled``) after ``wait`` seconds if given; a
  list of outcomes, each the client's result as sent, or ``{"error", "code"}``.
* ``later``: starts one request with ``params`` in the background and returns ``started`` at once
  (the request is sent 1s later, after the tool call has ended); ``outcome`` then waits for that
  request's outcome.
"""

from __future__ import annotations

import json
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

__all__ = ["create_server"]


async def _send(ctx: Context, params: dict[str, Any], wait: float | None = None) -> dict[str, Any]:
    outbound = ctx.session._connection.outbound  # raw on purpose: any params
    try:
        return await outbound.send_raw_request(
            "sampling/createMessage", params, {"timeout": wait} if wait is not None else None
        )
    except MCPError as exc:
        return {"error": exc.message, "code": exc.code}


class _Background:
    def __init__(self, group: anyio.abc.TaskGroup) -> None:
        self.group = group
        self.done = anyio.Event()
        self.outcome: dict[str, Any] | None = None


def create_server() -> MCPServer[Any]:
    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[_Background]:
        async with anyio.create_task_group() as group:
            yield _Background(group)
            group.cancel_scope.cancel()

    server: MCPServer[Any] = MCPServer("prober", lifespan=lifespan)

    @server.tool(description="Send sampling/createMessage with these params, `count` times.")
    async def raw(
        ctx: Context,
        params: dict[str, Any],
        count: int = 1,
        concurrent: bool = False,
        wait: float | None = None,
    ) -> str:
        outcomes: list[dict[str, Any] | None] = [None] * count
        if concurrent:

            async def one(index: int) -> None:
                outcomes[index] = await _send(ctx, params, wait)

            async with anyio.create_task_group() as group:
                for index in range(count):
                    group.start_soon(one, index)
        else:
            for index in range(count):
                outcomes[index] = await _send(ctx, params, wait)
        return json.dumps(outcomes)

    @server.tool(description="Send one sampling request after this call has returned.")
    async def later(params: dict[str, Any], ctx: Context) -> str:
        background: _Background = ctx.request_context.lifespan_context
        background.done = anyio.Event()

        async def ask() -> None:
            await anyio.sleep(1)  # virtual: served in process, under the test's MockClock
            background.outcome = await _send(ctx, params)
            background.done.set()

        background.group.start_soon(ask)
        return "started"

    @server.tool(description="The outcome of the request `later` sent.")
    async def outcome(ctx: Context) -> str:
        background: _Background = ctx.request_context.lifespan_context
        await background.done.wait()
        return json.dumps(background.outcome)

    return server


if __name__ == "__main__":
    create_server().run("stdio")
