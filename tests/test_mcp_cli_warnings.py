"""``zorkmcp tools`` shows the warnings ``zorkmcp play`` gives: here, two tools with one canonical name.

Server ``a`` with tool ``b.c`` and server ``a.b`` with tool ``c`` are both ``a.b.c``; the engine keeps
both (each callable by its wire name) and warns. The two in-process servers are defined here
(``ServerConfig(type="inprocess", module="test_mcp_cli_warnings:...")``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.lowlevel import Server

from zorkmcp._cli_mcp import cmd_tools

if TYPE_CHECKING:
    from pathlib import Path

    import pytest


def _one_tool_server(tool: str) -> Server[Any]:
    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name=tool, input_schema={"type": "object"})])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=params.name)])

    return Server("one-tool", on_list_tools=list_tools, on_call_tool=call_tool)


def create_dotted_tool_server() -> Server[Any]:
    """One tool, ``b.c``."""
    return _one_tool_server("b.c")


def create_plain_tool_server() -> Server[Any]:
    """One tool, ``c``."""
    return _one_tool_server("c")


def test_tools_warns_of_an_ambiguous_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    servers = {
        "a": {"type": "inprocess", "module": "test_mcp_cli_warnings:create_dotted_tool_server"},
        "a.b": {"type": "inprocess", "module": "test_mcp_cli_warnings:create_plain_tool_server"},
    }
    config = tmp_path / "mcp_config.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.zorkgpt.mcp]\nenabled = false\n")
    assert cmd_tools(config, pyproject, as_json=True) == 0
    out, err = capsys.readouterr()
    assert [(tool["name"], tool["server"]) for tool in json.loads(out)] == [("a.b.c", "a"), ("a.b.c", "a.b")]
    assert err == "warning: Tool name 'a.b.c' is ambiguous; the LLM can still call it by wire name\n"
