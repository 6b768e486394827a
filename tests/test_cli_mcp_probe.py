"""``zorkmcp tools`` / ``zorkmcp call`` probed as a demanding user would: Ctrl-C at any moment, a closed
stdout or stderr, a typo in the server's name, an HTTP port that is no MCP endpoint, a remote tool
result over 1 MiB.

Real parts: the commands as processes (``python -m zorkmcp.cli``), the misbehaving stdio server, a
stdlib HTTP server on 127.0.0.1 that is no MCP server (``python -m http.server``'s handler), and the
MCP SDK's server under uvicorn (tests/servers/remote.py). The remote servers run on the real clock
(httpx's timeouts are deadlines too); ``fail_after`` is a hang guard only.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import anyio
import pytest
from servers.helpers import MISBEHAVING, RecordingSink
from servers.remote import SDK_HTTP_WARNINGS, RemoteTestServer, serve_remote

from zorkmcp._cli_mcp import cmd_call
from zorkmcp.config import McpSettings, ServerConfig
from zorkmcp.mcp import open_toolbox

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

GUARD = 20  # seconds: a hang guard only

pytestmark = SDK_HTTP_WARNINGS


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder with mcp_config.json (the misbehaving server as ``bad``) and a pyproject.toml using it."""
    config = {"mcpServers": {"bad": {"command": sys.executable, "args": ["-S", str(MISBEHAVING), "ok"]}}}
    (tmp_path / "mcp_config.json").write_text(json.dumps(config))
    (tmp_path / "pyproject.toml").write_text("[tool.zorkgpt.mcp]\nconfig_file = 'mcp_config.json'\n")
    return tmp_path


def _zorkmcp(project: Path, script: str) -> subprocess.CompletedProcess[str]:
    """``bash -c script`` in ``project``, where ``$ZORKMCP`` is the command (this checkout's)."""
    command = f"{sys.executable} -m zorkmcp.cli"
    return subprocess.run(
        ["bash", "-c", script.replace("$ZORKMCP", command)],
        capture_output=True,
        text=True,
        cwd=project,
        check=False,
    )


# A real SIGINT, raised when the command imports the engine (zorkmcp._bridge): where a Ctrl-C lands
# in the first second of every `tools` or `call`, while Python reads the MCP SDK and pydantic.
_CTRL_C_WHILE_IMPORTING = """
import signal, sys

class CtrlC:
    def find_spec(self, name, path=None, target=None):
        if name == "zorkmcp._bridge":
            sys.meta_path.remove(self)
            signal.raise_signal(signal.SIGINT)
        return None

sys.meta_path.insert(0, CtrlC())
from zorkmcp.cli import main
sys.exit(main())
"""


@pytest.mark.parametrize("args", [["tools", "--json"], ["call", "bad.echo", '{"text": "hi"}']])
def test_ctrl_c_while_the_command_imports_is_interrupted_and_130(project: Path, args: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _CTRL_C_WHILE_IMPORTING, *args],
        capture_output=True,
        text=True,
        cwd=project,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "interrupted\n")


@pytest.mark.parametrize("args", ["tools --json", 'call bad.echo \'{"text": "hi"}\''])
def test_a_closed_stdout_is_one_line_and_status_1(project: Path, args: str) -> None:
    done = _zorkmcp(project, f"$ZORKMCP {args} >&-")
    assert (done.returncode, done.stderr) == (
        1,
        "cannot write to standard output: it is closed (send it to /dev/null to drop it)\n",
    )


def test_a_closed_stderr_keeps_errors_out_of_stdout(project: Path) -> None:
    # print(file=sys.stderr) with sys.stderr None writes on stdout: the error was in the output.
    done = _zorkmcp(project, "$ZORKMCP call bad.echo 'not json' 2>&-")
    assert (done.returncode, done.stdout) == (2, "")


def test_a_typo_in_the_server_name_is_an_unknown_tool_not_another_server_failing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    servers = {
        "good": {"command": sys.executable, "args": ["-S", str(MISBEHAVING), "ok"]},
        "broken": {"command": sys.executable, "args": ["-S", str(MISBEHAVING), "crash-start"]},
    }
    config = tmp_path / "mcp_config.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.zorkgpt.mcp]\nenabled = false\n")
    assert cmd_call("goood.echo", '{"text": "hi"}', config, pyproject, None) == 1
    out, err = capsys.readouterr()
    assert json.loads(out) == {
        "error": "Unknown tool 'goood.echo': no MCP server in mcp_config.json is named 'goood' (its servers: "
        "good, broken). Available tools: good.pid, good.echo, good.hang, good.crash, good.children, "
        "good.cancelled, good.big, good.fail, good.env",
        "content": None,
    }
    assert err.startswith("Failed to start MCP server 'broken': ")


class _NotMcp(SimpleHTTPRequestHandler):
    """``python -m http.server`` (a POST is 501, ``/`` a page), and ``/api``: another API's JSON."""

    def do_POST(self) -> None:
        if self.path != "/api":
            self.send_error(501, f"Unsupported method ({self.command!r})")
            return
        self.rfile.read(int(self.headers.get("content-length") or 0))
        body = b'{"detail": "Not Found"}'
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        del format, args


@pytest.fixture
def not_mcp(tmp_path: Path) -> Iterator[str]:
    """An HTTP server on 127.0.0.1 that is no MCP server; yields ``http://127.0.0.1:PORT``."""
    (tmp_path / "www").mkdir()

    def handler(*args: Any) -> _NotMcp:
        return _NotMcp(*args, directory=str(tmp_path / "www"))

    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.mark.parametrize(
    ("kind", "path", "reason"),
    [
        (
            "http",
            "/mcp",
            "no Streamable HTTP endpoint at {url} (HTTP 501 Not Implemented: the server does not take "
            'MCP\'s POST): check the URL (usually …/mcp; for an SSE endpoint use "type": "sse")',
        ),
        (
            "http",
            "/api",
            "{url} answered with something that is not a JSON-RPC message: it is not an MCP endpoint "
            "(check the URL)",
        ),
        (
            "sse",
            "/",
            "no SSE endpoint at {url}: it answered text/html, not an event stream; check the path "
            '(usually …/sse; for a Streamable HTTP endpoint use "type": "http")',
        ),
    ],
    ids=["POST answered 501", "JSON that is not JSON-RPC", "SSE GET answered with a page"],
)
def test_an_http_port_that_is_no_mcp_endpoint_is_one_clear_line(
    tmp_path: Path, not_mcp: str, kind: str, path: str, reason: str
) -> None:
    url = not_mcp + path
    config = {"mcpServers": {"web": {"type": kind, "url": url}}}
    (tmp_path / "mcp_config.json").write_text(json.dumps(config))
    (tmp_path / "pyproject.toml").write_text("[tool.zorkgpt.mcp]\nconfig_file = 'mcp_config.json'\n")
    done = _zorkmcp(tmp_path, "$ZORKMCP tools --json")
    expected = (
        f"Failed to start MCP server 'web': {reason.format(url=url)}\nURL: {url}\n"
        "MCP server 'web' did not start: no tools to list\n"
    )
    assert (done.returncode, done.stdout, done.stderr) == (1, "[]\n", expected)


@pytest.fixture
def remote() -> Iterator[RemoteTestServer]:
    with serve_remote() as server:
        yield server


async def test_a_remote_result_over_1_mib_arrives_whole(remote: RemoteTestServer) -> None:
    # The SDK's Streamable HTTP client reads at most 1 MiB per server-sent event by default; this
    # answer (the text, and again as structured content) is about 1.2 MB.
    text = "x" * 600_000
    server = ServerConfig(name="web", type="http", url=remote.url("/mcp"))
    with anyio.fail_after(GUARD):
        async with open_toolbox([server], McpSettings(max_result_bytes=2_000_000)) as toolbox:
            result = await toolbox.call_tool("web.echo", {"text": text})
    assert (result.is_error, result.error_message, result.content == text) == (False, None, True)


async def test_a_remote_sse_result_over_1_mib_says_why_it_failed(remote: RemoteTestServer) -> None:
    # The SDK's SSE client takes no limit: the session ends, and the call's result (what the model
    # reads) and the error log say why.
    sink = RecordingSink()
    server = ServerConfig(name="web", type="sse", url=remote.url("/sse"))
    with anyio.fail_after(GUARD):
        async with open_toolbox([server], McpSettings(), events=sink) as toolbox:
            result = await toolbox.call_tool("web.echo", {"text": "x" * 600_000})
    why = (
        "the server sent a message of more than 1 MiB on its SSE stream, the most the "
        "MCP SDK's SSE client reads in one event (a tool result that large: ask the tool for less, or use "
        'the server\'s Streamable HTTP endpoint, "type": "http", which takes up to 64 MiB) at '
        f"{remote.url('/sse')}"
    )
    assert (result.is_error, result.error_message) == (
        True,
        f"Tool call failed: MCP server 'web' is not running; the connection failed: {why}",
    )
    assert ("ERROR", f"MCP server 'web': {why}") in sink.lines
