"""``zorkmcp tools`` / ``zorkmcp call``: output, exit codes 0/1/2, stderr messages."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.server.lowlevel import Server
from servers.helpers import MISBEHAVING

import zorkmcp.mcp
from zorkmcp._cli_mcp import add_mcp_subcommands, cmd_call, cmd_tools


def _write_config(tmp_path: Path, mode: str = "ok", *, name: str = "bad") -> Path:
    config = {"mcpServers": {name: {"command": sys.executable, "args": ["-S", str(MISBEHAVING), mode]}}}
    path = tmp_path / "mcp_config.json"
    path.write_text(json.dumps(config))
    return path


@pytest.fixture
def pyproject(tmp_path: Path) -> Path:
    """A pyproject.toml with MCP disabled: the commands work anyway."""
    path = tmp_path / "pyproject.toml"
    path.write_text("[tool.zorkgpt.mcp]\nenabled = false\nconfig_file = 'mcp_config.json'\n")
    return path


def test_tools_json(tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write_config(tmp_path)  # found through config_file next to the pyproject
    assert cmd_tools(None, pyproject, as_json=True) == 0
    tools = json.loads(capsys.readouterr().out)
    assert [tool["name"] for tool in tools][:2] == ["bad.pid", "bad.echo"]
    echo = tools[1]
    assert echo == {
        "name": "bad.echo",
        "wire_name": "bad__echo",
        "server": "bad",
        "description": "Echo the text back.",
        "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    }


def test_with_no_settings_both_use_the_embedded_think_server_as_play_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # no pyproject.toml, no mcp_config.json: zorkmcp play's embedded defaults
    assert cmd_tools(None, None, as_json=True) == 0
    assert [(tool["name"], tool["server"]) for tool in json.loads(capsys.readouterr().out)] == [
        ("thinking.think", "thinking")
    ]
    thought = '{"thought": "the grating", "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": false}'
    assert cmd_call("thinking.think", thought, None, None, None) == 0
    assert json.loads(capsys.readouterr().out) == {
        "content": {
            "thoughtNumber": 1,
            "totalThoughts": 1,
            "nextThoughtNeeded": False,
            "branches": [],
            "thoughtHistoryLength": 1,
        }
    }
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_tools_table(tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _write_config(tmp_path, name="odd.name")
    assert cmd_tools(config, pyproject, as_json=False) == 0
    out = capsys.readouterr().out
    assert "odd.name.echo" in out
    assert "odd_name__echo" in out


@pytest.mark.parametrize(
    ("name", "args", "code", "expected"),
    [
        ("bad.echo", '{"text": "hi"}', 0, {"content": "hi"}),
        ("bad__pid", "{}", 0, None),
        ("bad.fail", "{}", 1, {"error": "it failed on purpose", "content": None}),
        (
            "nope",
            "{}",
            1,
            {
                "error": "Unknown tool 'nope'. Available tools: bad.pid, bad.echo, bad.hang, "
                "bad.crash, bad.children, bad.cancelled, bad.big, bad.fail, bad.env",
                "content": None,
            },
        ),
        ("bad.hang", "{}", 1, {"error": "Tool call timed out after 0.2s", "content": None}),
    ],
)
def test_call(
    tmp_path: Path,
    pyproject: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    args: str,
    code: int,
    expected: dict[str, object] | None,
) -> None:
    config = _write_config(tmp_path)
    assert cmd_call(name, args, config, pyproject, timeout=0.2) == code
    result = json.loads(capsys.readouterr().out)
    if expected is None:
        assert set(result) == {"content"}
        assert result["content"]["calls"] == 1
    else:
        assert result == expected


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ("{not json", "configuration error: the arguments are not valid JSON: "),
        ("[1, 2]", "configuration error: the arguments must be a JSON object, got '[1, 2]'"),
    ],
)
def test_call_with_bad_arguments(
    tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str], args: str, message: str
) -> None:
    assert cmd_call("bad.echo", args, _write_config(tmp_path), pyproject, None) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(message)


def test_configuration_errors_exit_2(
    tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cmd_tools(tmp_path / "missing.json", pyproject, as_json=True) == 2
    assert capsys.readouterr().err.startswith(f"configuration error: --config {tmp_path}/missing.json: ")
    bad = tmp_path / "bad.json"
    bad.write_text('{"mcpServers": {"x": {"command": 3}}}')
    assert cmd_call("x.y", "{}", bad, pyproject, None) == 2
    assert "configuration error: " in capsys.readouterr().err


@pytest.mark.parametrize("command", ["tools", "call"])
def test_a_missing_config_named_with_config_says_so(
    tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    missing = tmp_path / "missing.json"  # MCP is disabled: "MCP is enabled but ..." would be wrong
    code = (
        cmd_tools(missing, pyproject, as_json=True)
        if command == "tools"
        else cmd_call("bad.echo", "{}", missing, pyproject, None)
    )
    assert code == 2
    assert capsys.readouterr() == (
        "",
        f"configuration error: --config {tmp_path}/missing.json: no such file; pass --config with the "
        "path of an mcp_config.json, or create it (examples/ has templates)\n",
    )


@pytest.mark.parametrize("command", ["tools", "call"])
def test_a_missing_config_file_of_the_settings_says_where_it_was_set(
    tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    code = (  # no mcp_config.json next to the pyproject, whose config_file names it
        cmd_tools(None, pyproject, as_json=True)
        if command == "tools"
        else cmd_call("bad.echo", "{}", None, pyproject, None)
    )
    assert code == 2
    assert capsys.readouterr() == (
        "",
        f"configuration error: {tmp_path}/mcp_config.json (from [tool.zorkgpt.mcp] config_file in "
        f"{tmp_path}/pyproject.toml): no such file; create it (examples/ has templates), or pass "
        "--config PATH\n",
    )


@pytest.mark.parametrize("command", ["tools", "call"])
def test_pyproject_must_exist_as_for_play(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    monkeypatch.chdir(tmp_path)  # nothing here: without the check, the embedded defaults would run

    def run(pyproject: Path) -> int:
        if command == "tools":
            return cmd_tools(None, pyproject, as_json=True)
        return cmd_call("thinking.think", "{}", None, pyproject, None)

    assert run(tmp_path / "nope.toml") == 2
    assert capsys.readouterr() == (
        "",
        f"configuration error: --pyproject {tmp_path}/nope.toml: no such file\n",
    )
    assert run(tmp_path) == 2
    assert capsys.readouterr() == (
        "",
        f"configuration error: --pyproject {tmp_path}: is a folder, not a settings file\n",
    )


def test_tools_warns_of_an_allow_list_that_names_a_tool_the_server_lacks(
    tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "mcp_config.json"
    server = {"command": sys.executable, "args": ["-S", str(MISBEHAVING)], "tools": ["nope"]}
    config.write_text(json.dumps({"mcpServers": {"bad": server}}))
    assert cmd_tools(config, pyproject, as_json=True) == 0
    assert capsys.readouterr() == (
        "[]\n",
        "warning: MCP server 'bad' has no tools named nope (from its 'tools' allow-list)\n",
    )
    assert cmd_tools(config, pyproject, as_json=False) == 0
    out, err = capsys.readouterr()
    assert "0 MCP tools" in out
    assert err == "warning: MCP server 'bad' has no tools named nope (from its 'tools' allow-list)\n"


CONTRADICTORY = {"type": "object", "properties": {"id": {"allOf": [{"type": "string"}, {"type": "integer"}]}}}
LEFT_OUT = (
    "warning: MCP tool 'schemas.lookup' left out: $.properties.id: allOf parts disagree about 'type' "
    "(zorkmcp tools --lint explains)\n"
)


def create_left_out_server() -> Server[Any]:
    """Tools ``plain`` and ``lookup``, whose schema no value satisfies: it is left out."""
    plain = types.Tool(name="plain", input_schema={"type": "object", "properties": {}})
    tools = [plain, types.Tool(name="lookup", input_schema=CONTRADICTORY)]

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=params.name)])

    return Server("left-out", on_list_tools=list_tools, on_call_tool=call_tool)


def _left_out_config(tmp_path: Path) -> Path:
    config = tmp_path / "mcp_config.json"
    server = {"type": "inprocess", "module": "test_mcp_cli:create_left_out_server"}
    config.write_text(json.dumps({"mcpServers": {"schemas": server}}))
    return config


@pytest.mark.parametrize("lint", [False, True])
def test_tools_warns_of_a_tool_left_out_for_its_schema(
    tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str], lint: bool
) -> None:
    assert cmd_tools(_left_out_config(tmp_path), pyproject, as_json=True, lint=lint) == 0
    out, err = capsys.readouterr()
    if lint:
        assert [(entry["tool"], entry["status"]) for entry in json.loads(out)] == [
            ("schemas.plain", "ok"),
            ("schemas.lookup", "excluded"),
        ]
    else:
        assert [tool["name"] for tool in json.loads(out)] == ["schemas.plain"]
    assert err == LEFT_OUT


@pytest.mark.parametrize("lint", [False, True])
def test_tools_offers_a_tool_with_a_recursive_schema_without_a_warning(
    tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str], lint: bool
) -> None:
    config = tmp_path / "mcp_config.json"
    server = {"type": "inprocess", "module": "schema_servers:create_schema_server"}
    config.write_text(json.dumps({"mcpServers": {"schemas": server}}))
    assert cmd_tools(config, pyproject, as_json=True, lint=lint) == 0
    out, err = capsys.readouterr()
    if lint:
        assert [(entry["tool"], entry["status"]) for entry in json.loads(out)] == [
            ("schemas.plain", "ok"),
            ("schemas.optional", "changed"),
            ("schemas.tree", "changed"),
        ]
    else:
        assert [tool["name"] for tool in json.loads(out)] == [
            "schemas.plain",
            "schemas.optional",
            "schemas.tree",
        ]
    assert err == ""


@pytest.mark.parametrize(
    ("args", "reason"),
    [
        ('{"a":' + "[" * 50_000 + "]" * 50_000 + "}", "objects or arrays nested too deeply"),
        ('{"a": NaN}', "NaN is not JSON (JSON numbers are finite; use null or a string)"),
        ('{"a": [1, Infinity]}', "Infinity is not JSON (JSON numbers are finite; use null or a string)"),
        ('{"a": -Infinity}', "-Infinity is not JSON (JSON numbers are finite; use null or a string)"),
        ('{"a": 1e400}', "the number 1e400 is too large for a double"),
        ('{"a": -1' + "0" * 5000 + "}", "a number has more than 4300 digits (pass it as a string)"),
        ('{"text": "one", "n": {"x": 1, "x": 2}}', 'duplicate key "x" in one object'),
    ],
)
def test_call_rejects_arguments_json_has_no_value_for(
    tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str], args: str, reason: str
) -> None:
    assert cmd_call("bad.echo", args, _write_config(tmp_path), pyproject, None) == 2
    assert capsys.readouterr() == ("", f"configuration error: the arguments are not valid JSON: {reason}\n")


@pytest.mark.parametrize("value", ["inf", "Infinity", "-inf", "nan", "0", "-1", "1e-400"])
def test_call_timeout_must_be_finite_and_positive(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="zorkmcp")
    add_mcp_subcommands(parser.add_subparsers(dest="command", required=True))
    with pytest.raises(SystemExit) as exit_info:
        parser.parse_args(["call", "x", f"--timeout={value}"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.endswith(
        f"zorkmcp call: error: argument --timeout: must be a finite number of seconds > 0, got {value!r}\n"
    )


def test_startup_failure_exits_1(tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _write_config(tmp_path, "crash-start")
    assert cmd_tools(config, pyproject, as_json=True) == 1
    err = capsys.readouterr().err
    assert err.startswith("Failed to start MCP server 'bad': the server closed the connection during startup")
    assert "fatal: cannot start" in err


def test_subcommands_parse() -> None:
    parser = argparse.ArgumentParser(prog="zorkmcp")
    add_mcp_subcommands(parser.add_subparsers(dest="command", required=True))
    tools = parser.parse_args(["tools", "--json", "--config", "c.json"])
    assert (tools.as_json, tools.config, tools.pyproject) == (True, Path("c.json"), None)
    assert callable(tools.run)
    call = parser.parse_args(
        ["call", "thinking.think", '{"a": 1}', "--timeout", "2.5", "--pyproject", "p.toml"]
    )
    assert (call.name, call.json_args, call.timeout, call.pyproject) == (
        "thinking.think",
        '{"a": 1}',
        2.5,
        Path("p.toml"),
    )
    assert parser.parse_args(["call", "x"]).json_args == "{}"
    with pytest.raises(SystemExit):
        parser.parse_args(["call", "x", "--timeout", "0"])


def test_public_names() -> None:
    public = {n for n in dir(zorkmcp.mcp) if not n.startswith("_") and n != "annotations"}
    assert sorted(zorkmcp.mcp.__all__) == sorted(public)
    for name in zorkmcp.mcp.__all__:
        if not name.isupper():  # constants aside, everything is defined in a private module of the package
            assert getattr(zorkmcp.mcp, name).__module__.startswith("zorkmcp.mcp._")


def test_call_of_a_tool_left_out_for_its_schema_says_why(
    tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _left_out_config(tmp_path)
    assert cmd_call("schemas.lookup", '{"id": "a"}', config, pyproject, None) == 1
    out, err = capsys.readouterr()
    lint = f"zorkmcp tools --lint --config {config} --pyproject {pyproject} schemas"
    assert json.loads(out) == {  # what a script reads says why, not only the warning on stderr
        "error": "Unknown tool 'schemas.lookup': MCP server 'schemas' lists it, but zorkmcp leaves it out: "
        f"$.properties.id: allOf parts disagree about 'type' ({lint} explains)",
        "content": None,
    }
    assert err == LEFT_OUT


def test_call_of_a_tool_with_a_recursive_schema_reaches_it(
    tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "mcp_config.json"
    server = {"type": "inprocess", "module": "schema_servers:create_schema_server"}
    config.write_text(json.dumps({"mcpServers": {"schemas": server}}))
    nested = '{"node": {"next": {"next": {"next": {}}}}}'
    assert cmd_call("schemas.tree", nested, config, pyproject, None) == 0
    assert capsys.readouterr() == ('{"content": "tree"}\n', "")
