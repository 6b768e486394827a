"""A real MCP server (the SDK's) that asks its client for sampling and roots, for the tests of both.

In process: ``ServerConfig(type="inprocess", module="servers.sampling:create_server")``. Over stdio:
``python tests/servers/sampling.py``. Every tool answers with JSON text:

* ``ask``: one ``sampling/createMessage`` with the given prompt and parameters; the client's answer
  as ``{"text", "model", "stopReason"}``, or its error as ``{"error", "code"}``.
* ``ask_many``: ``count`` of those one after the other (the per-turn limit).
* ``roots``: the client's ``roots/list`` answer as ``[{"uri", "name"}]``, or its error.
* ``capabilities``: the capabilities the client declared in ``initialize``.

The requests are sent with ``send_request`` (the SDK's ``create_message`` and ``list_roots`` warn that
the capabilities are deprecated from MCP 2026-07-28 on; the tests turn warnings into errors).
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError

__all__ = ["create_server"]

TINY_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
"""A 1x1 PNG as base64 (96 characters): what the model must never be sent."""


async def _ask(ctx: Context, params: mcp_types.CreateMessageRequestParams) -> dict[str, Any]:
    request = mcp_types.CreateMessageRequest(params=params)
    try:
        result = await ctx.session.send_request(request, mcp_types.CreateMessageResult)
    except MCPError as exc:
        return {"error": exc.message, "code": exc.code}
    text = result.content.text if isinstance(result.content, mcp_types.TextContent) else None
    return {"text": text, "model": result.model, "stopReason": result.stop_reason}


def create_server() -> MCPServer[Any]:
    server: MCPServer[Any] = MCPServer("sampler")

    @server.tool(description="Ask the client's model once.")
    async def ask(
        prompt: str,
        ctx: Context,
        max_tokens: int = 100,
        system: str | None = None,
        temperature: float | None = None,
        stop: list[str] | None = None,
        image: bool = False,
    ) -> str:
        content: Any = mcp_types.TextContent(type="text", text=prompt)
        if image:
            picture = mcp_types.ImageContent(type="image", data=TINY_PNG, mime_type="image/png")
            content = [content, picture]
        messages = [mcp_types.SamplingMessage(role="user", content=content)]
        params = mcp_types.CreateMessageRequestParams(
            messages=messages,
            max_tokens=max_tokens,
            system_prompt=system,
            temperature=temperature,
            stop_sequences=stop,
            include_context="thisServer",
            model_preferences=mcp_types.ModelPreferences(hints=[mcp_types.ModelHint(name="claude-3-sonnet")]),
        )
        return json.dumps(await _ask(ctx, params))

    @server.tool(description="Ask the client's model `count` times, one after the other.")
    async def ask_many(count: int, ctx: Context) -> str:
        answers = []
        for number in range(1, count + 1):
            message = mcp_types.SamplingMessage(
                role="user", content=mcp_types.TextContent(type="text", text=f"question {number}")
            )
            params = mcp_types.CreateMessageRequestParams(messages=[message], max_tokens=10)
            answers.append(await _ask(ctx, params))
        return json.dumps(answers)

    @server.tool(description="The client's roots.")
    async def roots(ctx: Context) -> str:
        try:
            listing = await ctx.session.send_request(mcp_types.ListRootsRequest(), mcp_types.ListRootsResult)
        except MCPError as exc:
            return json.dumps({"error": exc.message, "code": exc.code})
        return json.dumps([{"uri": str(root.uri), "name": root.name} for root in listing.roots])

    @server.tool(description="The capabilities the client declared.")
    async def capabilities(ctx: Context) -> str:
        declared = ctx.session.client_capabilities
        return json.dumps(
            declared.model_dump(by_alias=True, mode="json", exclude_none=True) if declared else None
        )

    return server


if __name__ == "__main__":
    create_server().run("stdio")
