"""How a call ends when a server answers it badly, and what the model is told of a tool it misnamed.

A stdio server that answers a request with a malformed JSON-RPC response (``"result": null``, a
string as ``"result"``, no ``"jsonrpc"``) has answered: the request fails at once saying what is
wrong, instead of waiting out its timeout (a tool call's timeout aborts the rest of its batch;
``initialize``'s read "no answer"). A server's own error message of any length, and a result the MCP
SDK refuses, become error results within ``max_result_bytes``, in one line. An unknown tool's error
suggests the tool the model probably meant and names at most ``MAX_AVAILABLE_CHARS`` of the list.

Real parts: ``tests/servers/quirky.py`` as stdio server processes (every answer chosen here), the
commands through :func:`zorkmcp.cli.main`. Each ``call`` passes ``--timeout 20`` as a hang guard
only: the old code waited that long for a malformed answer and then reported a timeout.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from zorkmcp.cli import main
from zorkmcp.config import McpSettings, ServerConfig
from zorkmcp.mcp import open_toolbox

QUIRKY = Path(__file__).parent / "servers" / "quirky.py"
OBJECT = {"type": "object", "properties": {}}


def _server(spec: dict[str, Any]) -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-S", str(QUIRKY), json.dumps(spec)]}


def _answering(answers: dict[str, Any]) -> dict[str, Any]:
    return _server({"tools": [{"name": name, "inputSchema": OBJECT} for name in answers], "answers": answers})


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.zorkgpt.mcp]\nenabled = false\n")
    return tmp_path


def _run(project: Path, servers: dict[str, Any], *args: str) -> int:
    (project / "mcp_config.json").write_text(json.dumps({"mcpServers": servers}))
    config, pyproject = project / "mcp_config.json", project / "pyproject.toml"
    return main([*args, "--config", str(config), "--pyproject", str(pyproject)])


def _called(project: Path, capsys: pytest.CaptureFixture[str], servers: dict[str, Any], name: str) -> Any:
    assert _run(project, servers, "call", "--timeout", "20", name) == 1
    return json.loads(capsys.readouterr().out)


# --- malformed answers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ({"result": None}, 'its "result" is null, where an MCP result is an object'),
        ({"result": "done"}, 'its "result" is a string, where an MCP result is an object'),
        (
            {"error": "it broke"},
            'its "error" is not a JSON-RPC error object ({"code": integer, "message": string})',
        ),
    ],
)
def test_a_malformed_answer_fails_the_call_at_once_saying_why(
    project: Path, capsys: pytest.CaptureFixture[str], answer: dict[str, Any], problem: str
) -> None:
    shown = json.dumps({"jsonrpc": "2.0", "id": 3, **answer})
    assert _called(project, capsys, {"q": _answering({"t": answer})}, "q.t") == {
        "error": "Tool call failed: the server answered with something that is not a valid JSON-RPC "
        f"response ({problem}): {shown}",
        "content": None,
    }


def test_an_error_without_a_code_still_gives_its_message(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = _answering({"t": {"error": {"message": "quota exceeded"}}})
    assert _called(project, capsys, {"q": server}, "q.t") == {
        "error": "Tool call failed: quota exceeded",
        "content": None,
    }


def test_an_initialize_answer_without_jsonrpc_fails_the_start_saying_why(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = tmp_path / "no_jsonrpc.py"
    script.write_text(
        "import json, sys\n"
        "for line in sys.stdin:\n"
        "    m = json.loads(line)\n"
        "    if m.get('method') == 'initialize':\n"
        "        info = {'name': 'x', 'version': '1'}\n"
        "        tools = {'tools': {}}\n"
        "        result = {'protocolVersion': '2025-06-18', 'capabilities': tools, 'serverInfo': info}\n"
        "        print(json.dumps({'id': m['id'], 'result': result}), flush=True)\n"
    )
    servers = {"nj": {"command": sys.executable, "args": ["-S", str(script)]}}
    # the old code: "no answer to initialize and tools/list within 10s"
    assert _run(project, servers, "tools") == 1
    first = capsys.readouterr().err.splitlines()[0]
    assert first == (
        "Failed to start MCP server 'nj': the server answered with something that is not a valid "
        """JSON-RPC response (its "jsonrpc" is missing, where JSON-RPC 2.0 needs "jsonrpc": "2.0"): """
        """{"id": 1, "result": {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, """
        """"serverInfo": {"name": "x", "version": "1"}}}"""
    )


# --- bounded, one-line errors --------------------------------------------------------------------------


def test_a_servers_huge_error_message_is_cut_to_max_result_bytes(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = _answering({"t": {"error": {"code": -1, "message": "E" * 100_000}}})
    (project / "pyproject.toml").write_text("[tool.zorkgpt.mcp]\nenabled = false\nmax_result_bytes = 200\n")
    called = _called(project, capsys, {"q": server}, "q.t")
    kept = "Tool call failed: " + "E" * (200 - len("Tool call failed: "))
    assert called == {"error": f"{kept}…[truncated 99818 bytes]", "content": None}


def test_base64_media_in_a_servers_error_message_is_a_placeholder(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    png = "data:image/png;base64," + "iVBORw0KGgo" + "A" * 400
    server = _answering({"t": {"error": {"code": -1, "message": png}}})
    called = _called(project, capsys, {"q": server}, "q.t")
    assert called == {"error": "Tool call failed: [image: image/png, 308 bytes]", "content": None}


@pytest.mark.parametrize(
    ("result", "problem"),
    [
        ({"content": [{"type": "text"}]}, "content.0.text: Field required"),
        ({"content": "x"}, 'content: Input should be a valid list (got "x")'),
        (
            {"content": [{"type": "weird", "x": "y" * 1000}]},
            'content.0: its type "weird" is none of MCP\'s (text, image, audio, resource_link, resource)',
        ),
    ],
)
def test_a_result_the_sdk_refuses_is_one_line_naming_the_field(
    project: Path, capsys: pytest.CaptureFixture[str], result: dict[str, Any], problem: str
) -> None:
    server = _answering({"t": {"result": result}})
    assert _called(project, capsys, {"q": server}, "q.t") == {
        "error": f"Tool call failed: the server's result is not a valid MCP tool result: {problem}",
        "content": None,
    }


# --- unknown tools (what the model is told: the toolbox's answer; zorkmcp call says more of its own) ---


def _stdio(name: str, spec: dict[str, Any]) -> ServerConfig:
    return ServerConfig(name=name, command=sys.executable, args=("-S", str(QUIRKY), json.dumps(spec)))


@pytest.mark.parametrize(
    ("name", "meant"),
    [
        ("Q__ECHO", "'q__echo'"),  # another case
        ("echo", "'q__echo'"),  # the tool's own name, without its server
        ("q__ehco", "'q__echo'"),  # a close spelling
        ("weather", ""),  # nothing close
    ],
)
async def test_an_unknown_tool_suggests_the_one_meant(name: str, meant: str) -> None:
    server = _stdio(
        "q", {"tools": [{"name": "echo", "inputSchema": OBJECT}, {"name": "search", "inputSchema": OBJECT}]}
    )
    async with open_toolbox([server], McpSettings()) as toolbox:
        result = await toolbox.call_tool(name, {})
    guess = f" Did you mean {meant}?" if meant else ""
    assert result.to_dict() == {
        "error": f"Unknown tool '{name}'.{guess} Available tools: q.echo, q.search",
        "content": None,
    }


async def test_the_list_of_hundreds_of_tools_in_an_unknown_tools_error_is_cut() -> None:
    names = [f"tool_number_{i:03}" for i in range(300)]
    server = _stdio("q", {"tools": [{"name": name, "inputSchema": OBJECT} for name in names]})
    async with open_toolbox([server], McpSettings()) as toolbox:
        error = (await toolbox.call_tool("nothing_like_it", {})).error_message
    listed = ", ".join(f"q.{name}" for name in names[:105])  # 105 names of 17 characters and ", ": 1993
    assert error == f"Unknown tool 'nothing_like_it'. Available tools: {listed}, … and 195 more"
