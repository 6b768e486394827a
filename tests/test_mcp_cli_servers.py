"""``zorkmcp tools`` / ``zorkmcp call`` with several servers: one that does not start, odd tool names.

A server that does not start (a stdio server that exits at once, a remote one answering 401) costs
``tools`` that server's tools only, and ``call`` of another server's tool nothing: ``call`` starts
the one server the name points at. What a server names its tools is shown, never obeyed: control
characters escaped, names whole in a table of any width. An unknown tool says why when it can.
The in-process servers are defined here (``"module": "test_mcp_cli_servers:..."``).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import mcp_types as types
import pytest
from mcp.server.lowlevel import Server
from servers.helpers import MISBEHAVING
from servers.remote import SDK_HTTP_WARNINGS, serve_remote

from zorkmcp._cli_mcp import cmd_call, cmd_tools

if TYPE_CHECKING:
    from pathlib import Path

EVIL = "evil\x1b[2J\x1b]0;pwned\x07x"
LONG = "get-annotated-message-history-of-the-room"


def _server(*tools: tuple[str, str]) -> Server[Any]:
    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        listed = [
            types.Tool(name=name, description=text, input_schema={"type": "object"}) for name, text in tools
        ]
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"called {params.name}")])

    return Server("cli-servers", on_list_tools=list_tools, on_call_tool=call_tool)


def create_evil_server() -> Server[Any]:
    """Tool names and a description holding terminal escapes and a newline."""
    return _server((EVIL, "red \x1b[31mtext\x1b[0m here"), ("two\nrows", "a [bold]markup[/bold] tool"))


def create_long_server() -> Server[Any]:
    """A long tool name with a long description."""
    return _server((LONG, "Return the annotated history of messages in a room. " * 4), ("ping", "Ping."))


def create_two_tool_server() -> Server[Any]:
    """Tools ``keep`` and ``hidden``."""
    return _server(("keep", "Kept."), ("hidden", "Left out by the allow-list."))


def _inprocess(factory: str, **options: Any) -> dict[str, Any]:
    return {"type": "inprocess", "module": f"test_mcp_cli_servers:{factory}", **options}


def _misbehaving(mode: str = "ok") -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-S", str(MISBEHAVING), mode]}


def _config(tmp_path: Path, servers: dict[str, dict[str, Any]]) -> Path:
    path = tmp_path / "mcp_config.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


@pytest.fixture
def pyproject(tmp_path: Path) -> Path:
    """A pyproject.toml with MCP disabled: the commands work anyway."""
    path = tmp_path / "pyproject.toml"
    path.write_text("[tool.zorkgpt.mcp]\nenabled = false\n")
    return path


# -- one server that does not start -------------------------------------------------------------


@pytest.mark.parametrize("name", ["good.echo", "good__echo"])
def test_call_starts_only_the_server_the_name_points_at(
    tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    config = _config(tmp_path, {"bad": _misbehaving("crash-start"), "good": _misbehaving()})
    assert cmd_call(name, '{"text": "x"}', config, pyproject, None) == 0
    assert capsys.readouterr() == ('{"content": "x"}\n', "")


def test_tools_lists_the_servers_that_started_and_says_which_did_not(
    tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(
        tmp_path, {"bad": _misbehaving("crash-start"), "good": _inprocess("create_two_tool_server")}
    )
    assert cmd_tools(config, pyproject, as_json=True) == 1
    out, err = capsys.readouterr()
    assert [tool["name"] for tool in json.loads(out)] == ["good.keep", "good.hidden"]
    assert err.startswith("Failed to start MCP server 'bad': the server closed the connection during startup")
    assert err.count("Failed to start MCP server") == 1
    assert cmd_tools(config, pyproject, as_json=False) == 1
    out, err = capsys.readouterr()
    assert "2 MCP tools" in out
    assert "good.keep" in out
    assert err.startswith("Failed to start MCP server 'bad': ")


def _sdk_http_warnings(test: Any) -> Any:
    for mark in SDK_HTTP_WARNINGS:
        test = mark(test)
    return test


@_sdk_http_warnings
def test_a_remote_server_answering_401_costs_its_own_tools_only(
    tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with serve_remote() as remote:
        servers = {"remote": {"type": "http", "url": remote.url("/auth/mcp")}, "good": _misbehaving()}
        config = _config(tmp_path, servers)
        assert cmd_tools(config, pyproject, as_json=True) == 1
        out, err = capsys.readouterr()
        assert "bad.echo" not in out
        assert "good.echo" in [tool["name"] for tool in json.loads(out)]
        assert err.startswith("Failed to start MCP server 'remote': ")
        assert err.count("Failed to start MCP server") == 1  # its error as today's: with the URL
        assert "HTTP 401" in err
        assert cmd_call("good.echo", '{"text": "y"}', config, pyproject, None) == 0
        assert capsys.readouterr().out == '{"content": "y"}\n'


# -- what servers name their tools: shown, never obeyed --------------------------------------------


def test_control_characters_are_shown_escaped(
    tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path, {"evil": _inprocess("create_evil_server")})
    assert cmd_tools(config, pyproject, as_json=False) == 0
    table = capsys.readouterr().out
    assert "\x1b" not in table
    assert "\x07" not in table
    assert "evil.evil\\x1b[2J\\x1b]0;pwned\\x07x" in table
    assert "\\x1b[31mtext\\x1b[0m" in table
    assert "evil.two\\x0arows" in table  # one row, not two
    assert "[bold]markup[/bold]" in table  # text, not rich markup
    assert cmd_tools(config, pyproject, as_json=False, lint=True) == 0
    lint = capsys.readouterr().out
    assert "\x1b" not in lint
    headings = [line.partition(": ")[0] for line in lint.splitlines() if not line.startswith("  ")]
    assert headings[:2] == ["evil.evil\\x1b[2J\\x1b]0;pwned\\x07x", "evil.two\\x0arows"]
    for lint_flag in (False, True):  # JSON stays exact
        assert cmd_tools(config, pyproject, as_json=True, lint=lint_flag) == 0
        names = [entry["tool" if lint_flag else "name"] for entry in json.loads(capsys.readouterr().out)]
        assert names == [f"evil.{EVIL}", "evil.two\nrows"]


def test_a_table_on_80_columns_never_cuts_a_name(
    tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path, {"evh": _inprocess("create_long_server")})
    assert cmd_tools(config, pyproject, as_json=False) == 0  # stdout is not a terminal: 80 columns
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if f"evh.{LONG}" in line)
    assert f"evh__{LONG}" in row
    assert "…" in out  # the description is shortened instead (120 characters) and wrapped
    assert "Return the annotated" in row


# -- an unknown tool says why --------------------------------------------------------------------


def test_call_of_a_tool_of_a_disabled_server_says_so(
    tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    servers = {"off": {**_misbehaving(), "disabled": True}, "good": _inprocess("create_two_tool_server")}
    config = _config(tmp_path, servers)
    assert cmd_call("off.echo", '{"text": "x"}', config, pyproject, None) == 1
    assert json.loads(capsys.readouterr().out) == {
        "error": "Unknown tool 'off.echo': MCP server 'off' is disabled in mcp_config.json",
        "content": None,
    }


def test_call_of_a_tool_the_allow_list_leaves_out_says_so(
    tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path, {"two": _inprocess("create_two_tool_server", tools=["keep"])})
    for name in ("two.hidden", "two__hidden"):
        assert cmd_call(name, "{}", config, pyproject, None) == 1
        assert json.loads(capsys.readouterr().out) == {
            "error": f"Unknown tool '{name}': MCP server 'two' has the tool, but its 'tools' allow-list in "
            "mcp_config.json leaves it out. Available tools: two.keep",
            "content": None,
        }
    assert cmd_call("two.keep", "{}", config, pyproject, None) == 0
    assert json.loads(capsys.readouterr().out) == {"content": "called keep"}


def test_call_of_an_ambiguous_name_lists_the_wire_names(
    tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    servers = {
        "a": {"type": "inprocess", "module": "test_mcp_cli_warnings:create_dotted_tool_server"},
        "a.b": {"type": "inprocess", "module": "test_mcp_cli_warnings:create_plain_tool_server"},
    }
    config = _config(tmp_path, servers)
    assert cmd_call("a.b.c", "{}", config, pyproject, None) == 1
    out, err = capsys.readouterr()
    assert json.loads(out) == {
        "error": "Unknown tool 'a.b.c': the name is ambiguous; call one of them by its wire name: "
        "a__b_c (server 'a'), a_b__c (server 'a.b')",
        "content": None,
    }
    assert err == "warning: Tool name 'a.b.c' is ambiguous; the LLM can still call it by wire name\n"
    assert cmd_call("a_b__c", "{}", config, pyproject, None) == 0
    assert json.loads(capsys.readouterr().out) == {"content": "c"}
