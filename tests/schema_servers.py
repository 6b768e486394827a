"""An in-process MCP server whose tools have the input schemas strict endpoints reject.

Referenced from ServerConfig(type="inprocess", module="schema_servers:create_schema_server").
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server

__all__ = ["SCHEMAS", "create_schema_server", "create_task_server"]

SCHEMAS: dict[str, dict[str, Any]] = {
    "plain": {"type": "object", "properties": {"text": {"type": "string", "description": "what to say"}}},
    "optional": {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"count": {"anyOf": [{"type": "integer"}, {"type": "null"}]}},
    },
    "tree": {
        "type": "object",
        "properties": {"node": {"$ref": "#/$defs/Node"}},
        "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}},
    },
}
"""Tool name → its input schema: in the portable subset, translatable, and one that cannot be."""


def create_schema_server() -> Server[Any]:
    """Tools ``plain``, ``optional`` and ``tree`` (see :data:`SCHEMAS`); each answers its name."""

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[types.Tool(name=name, input_schema=schema) for name, schema in SCHEMAS.items()]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=params.name)])

    return Server("schemas", on_list_tools=list_tools, on_call_tool=call_tool)


def create_task_server() -> Server[Any]:
    """Tools ``quick`` and ``research``; ``research`` runs only as a task (``taskSupport: "required"``)
    and answers a plain ``tools/call`` with -32601, as server-everything's ``simulate-research-query``."""

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        plain = {"type": "object", "properties": {}}
        task_only = types.ToolExecution(task_support="required")
        return types.ListToolsResult(
            tools=[
                types.Tool(name="quick", input_schema=plain),
                types.Tool(name="research", input_schema=plain, execution=task_only),
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=params.name)])

    return Server("tasks", on_list_tools=list_tools, on_call_tool=call_tool)
