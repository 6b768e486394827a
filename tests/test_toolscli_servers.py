"""``zorkmcp tools SERVER...`` lists chosen servers only; ``tools`` with no server started says so.

Real stdio servers: ``tests/servers/quirky.py`` (every ``tools/list`` answer chosen by the test) and
``tests/servers/misbehaving.py`` (``crash-start``: exits before it answers). ``tools SERVER`` starts
only that server, as ``call SERVER.TOOL`` does, so another server that would fail (or whose command
is not on ``PATH``) costs nothing; a name ``mcp_config.json`` lacks is one line, exit 2. When no
server started, stderr says so in one line after each one's reason, instead of an empty table.
A ``call`` of a tool the server lists but the engine leaves out says why in its result.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest
from servers.helpers import MISBEHAVING

from zorkmcp.cli import main

QUIRKY = Path(__file__).parent / "servers" / "quirky.py"
OK_TOOL = {"name": "ok", "inputSchema": {"type": "object", "properties": {}}}
CONTRADICTORY = {  # no value satisfies both allOf parts: left out
    "name": "arr",
    "inputSchema": {
        "type": "object",
        "properties": {"id": {"allOf": [{"type": "string"}, {"type": "integer"}]}},
    },
}
TASK_ONLY = {
    "name": "job",
    "inputSchema": {"type": "object", "properties": {}},
    "execution": {"taskSupport": "required"},
}


def _quirky(**spec: Any) -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-S", str(QUIRKY), json.dumps(spec)]}


def _crash() -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-S", str(MISBEHAVING), "crash-start"]}


@pytest.fixture
def pyproject(tmp_path: Path) -> Path:
    path = tmp_path / "pyproject.toml"
    path.write_text("[tool.zorkgpt.mcp]\nenabled = false\n")
    return path


def _config(tmp_path: Path, servers: dict[str, dict[str, Any]]) -> Path:
    path = tmp_path / "mcp_config.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def _zorkmcp(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


# -- tools SERVER... ---------------------------------------------------------------------------------


@pytest.mark.parametrize("lint", [False, True], ids=["tools", "tools --lint"])
def test_tools_of_one_server_starts_only_that_server(
    tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str], lint: bool
) -> None:
    config = _config(
        tmp_path,
        {
            "crash": _crash(),
            "gone": {"command": "zorkmcp-test-no-such-command"},
            "q": _quirky(tools=[OK_TOOL, {**OK_TOOL, "name": "two"}]),
        },
    )
    flags = ["--lint"] if lint else []
    code, out, err = _zorkmcp(capsys, "tools", *flags, "--json", "--config", str(config), "--pyproject",
                              str(pyproject), "q")  # fmt: skip
    assert (code, err) == (0, "")  # neither the crash nor the missing command: they were not started
    if lint:
        assert [(entry["tool"], entry["status"]) for entry in json.loads(out)] == [
            ("q.ok", "ok"),
            ("q.two", "ok"),
        ]
    else:
        assert [tool["name"] for tool in json.loads(out)] == ["q.ok", "q.two"]


def test_tools_of_several_servers_lists_them_in_configuration_order(
    tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(
        tmp_path,
        {"a": _quirky(tools=[OK_TOOL]), "crash": _crash(), "b": _quirky(tools=[{**OK_TOOL, "name": "bee"}])},
    )
    code, out, err = _zorkmcp(capsys, "tools", "b", "a", "--json", "--config", str(config), "--pyproject",
                              str(pyproject))  # fmt: skip
    assert (code, err) == (0, "")
    assert [(tool["name"], tool["server"]) for tool in json.loads(out)] == [("a.ok", "a"), ("b.bee", "b")]


def test_tools_of_a_server_not_configured_is_one_line_naming_the_servers(
    tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path, {"thinking": _quirky(tools=[OK_TOOL]), "fs": _crash()})
    code, out, err = _zorkmcp(
        capsys, "tools", "--config", str(config), "--pyproject", str(pyproject), "think"
    )
    assert (code, out) == (2, "")
    assert err == (
        f"configuration error: SERVER 'think': {config} has no MCP server of that name (its servers: "
        "thinking, fs); name one of them, or none to list them all\n"
    )


def test_tools_of_a_disabled_server_says_so(
    tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path, {"on": _quirky(tools=[OK_TOOL]), "off": {**_quirky(), "disabled": True}})
    code, out, err = _zorkmcp(capsys, "tools", "--config", str(config), "--pyproject", str(pyproject), "off")
    assert (code, out) == (2, "")
    assert err == (
        f"configuration error: SERVER 'off' is disabled in {config} (\"disabled\": true); "
        "remove that to start it\n"
    )


# -- no server started ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "stdout"),
    [([], ""), (["--lint"], ""), (["--json"], "[]\n"), (["--lint", "--json"], "[]\n")],
    ids=["table", "lint", "json", "lint-json"],
)
def test_tools_with_no_server_started_says_so_instead_of_an_empty_table(
    tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str], flags: list[str], stdout: str
) -> None:
    config = _config(tmp_path, {"bad": _crash(), "worse": _crash()})
    code, out, err = _zorkmcp(capsys, "tools", *flags, "--config", str(config), "--pyproject", str(pyproject))
    assert (code, out) == (1, stdout)  # no "0 MCP tools" table, no "0 tool(s): ..." line
    lines = err.splitlines()
    assert [line for line in lines if line.startswith("Failed to start")] == [
        "Failed to start MCP server 'bad': the server closed the connection during startup",
        "Failed to start MCP server 'worse': the server closed the connection during startup",
    ]
    assert lines[-1] == "none of the 2 MCP servers started: no tools to list"


def test_tools_of_one_server_that_did_not_start_names_it(
    tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path, {"bad": _crash(), "good": _quirky(tools=[OK_TOOL])})
    code, out, err = _zorkmcp(capsys, "tools", "bad", "--config", str(config), "--pyproject", str(pyproject))
    assert (code, out) == (1, "")
    assert err.startswith(
        "Failed to start MCP server 'bad': the server closed the connection during startup\n"
    )
    assert err.endswith("\nMCP server 'bad' did not start: no tools to list\n")


def test_a_server_that_lists_no_tools_is_a_note(
    tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a paginated listing is followed to its end; an empty one was missing from the table without a word
    tools = [{**OK_TOOL, "name": f"t{index}"} for index in range(5)]
    config = _config(tmp_path, {"pages": _quirky(tools=tools, page_size=2), "empty": _quirky(tools=[])})
    code, out, err = _zorkmcp(
        capsys, "tools", "--json", "--config", str(config), "--pyproject", str(pyproject)
    )
    assert code == 0
    assert [tool["name"] for tool in json.loads(out)] == [
        "pages.t0",
        "pages.t1",
        "pages.t2",
        "pages.t3",
        "pages.t4",
    ]
    assert err == "note: MCP server 'empty' started with 0 tools: its tools/list answer lists none\n"


# -- call of a tool left out ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["q.arr", "q__arr"])
def test_call_of_a_tool_left_out_for_its_schema_says_why_in_its_result(
    tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    config = _config(tmp_path, {"q": _quirky(tools=[OK_TOOL, CONTRADICTORY]), "other": _crash()})
    code, out, err = _zorkmcp(capsys, "call", name, "--config", str(config), "--pyproject", str(pyproject))
    assert code == 1
    lint = shlex.join(
        ["zorkmcp", "tools", "--lint", "--config", str(config), "--pyproject", str(pyproject), "q"]
    )
    assert json.loads(out) == {
        "error": f"Unknown tool '{name}': MCP server 'q' lists it, but zorkmcp leaves it out: "
        f"$.properties.id: allOf parts disagree about 'type' ({lint} explains)",
        "content": None,
    }
    assert err == (
        "warning: MCP tool 'q.arr' left out: $.properties.id: allOf parts disagree about 'type' "
        "(zorkmcp tools --lint explains)\n"
    )


def test_call_of_a_task_only_tool_says_why_in_its_result(
    tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = _config(tmp_path, {"q": _quirky(tools=[OK_TOOL, TASK_ONLY])})
    code, out, _ = _zorkmcp(capsys, "call", "q.job", "--config", str(config), "--pyproject", str(pyproject))
    assert code == 1
    lint = shlex.join(
        ["zorkmcp", "tools", "--lint", "--config", str(config), "--pyproject", str(pyproject), "q"]
    )
    assert json.loads(out)["error"] == (
        "Unknown tool 'q.job': MCP server 'q' lists it, but zorkmcp leaves it out: it runs only as a task "
        f'(execution.taskSupport "required"), and zorkmcp calls tools directly ({lint} explains)'
    )


def test_the_lint_command_a_call_points_to_lists_that_server(
    tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the command in the result above, run as printed: it lists the one server, and why the tool is left out
    config = _config(tmp_path, {"q": _quirky(tools=[OK_TOOL, CONTRADICTORY]), "other": _crash()})
    args = ["tools", "--lint", "--config", str(config), "--pyproject", str(pyproject), "q"]
    code, out, _ = _zorkmcp(capsys, *args)
    assert (code, out) == (
        0,
        "q.ok: ok\n"
        "q.arr: LEFT OUT: $.properties.id: allOf parts disagree about 'type'\n"
        "2 tool(s): 1 unchanged, 0 changed, 1 left out\n",
    )


# -- --config: a folder --------------------------------------------------------------------------------


def test_config_that_is_a_folder_names_the_file_in_it(
    tmp_path: Path, pyproject: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _config(tmp_path, {"q": _quirky(tools=[OK_TOOL])})
    code, out, err = _zorkmcp(capsys, "tools", "--config", str(tmp_path), "--pyproject", str(pyproject))
    assert (code, out) == (2, "")
    assert err == (
        f"configuration error: --config {tmp_path}: is a folder, not an mcp_config.json; pass the file "
        f"in it: --config {tmp_path / 'mcp_config.json'}\n"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, err = _zorkmcp(capsys, "call", "q.ok", "--config", str(empty), "--pyproject", str(pyproject))
    assert (code, out) == (2, "")
    assert err == (
        f"configuration error: --config {empty}: is a folder, not an mcp_config.json; pass --config with "
        "the path of an mcp_config.json\n"
    )
