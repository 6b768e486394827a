"""MCP servers that are valid, or nearly, in ways the SDK's client alone does not survive.

* A server's own JSON-RPC error -32000 (the first code of JSON-RPC 2.0's "Server error" range) is an
  error result carrying its message, and the server lives on; only a transport that really ended
  (the SDK's own -32000 "Connection closed", or an answer's stream cut mid-call) is a death.
* A server without the ``tools`` capability (MCP 2025-11-25, "Server Features: Tools") serves
  prompts or resources: it is not asked for tools and has none.
* One tool the SDK would refuse (an ``inputSchema`` without ``"type"``, ``{}``, an ``outputSchema``
  that is not an object schema) costs that tool at most, never the server.
* A start-up failure names an exit status only when the server chose it, and an unknown protocol
  version names the versions zorkmcp speaks.

The stdio servers are real processes (``tests/servers/quirky.py``: every answer chosen by the test).
Virtual time with a spawn-tolerant autojump threshold, as in ``test_teardown_bound``: the clock may
only jump once every task has waited 0.2 s of real time, far longer than the stdlib server needs to
answer. The HTTP server (``tests/servers/quirky_http.py``, the SDK's server under uvicorn in a
thread) runs on the real clock, as in ``test_remote``: httpx's own timeouts are deadlines too; every
wait there ends on an answer, and ``fail_after`` only guards against a hang.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mcp_types
import pytest
import trio
import trio.testing
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError as SdkMCPError
from servers.helpers import RecordingSink, is_alive, pids_from_stderr
from servers.quirky_http import RATE_LIMITED, serve_quirky_http
from servers.remote import SDK_HTTP_WARNINGS

from zorkmcp._cli_mcp import cmd_tools
from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.errors import MCPServerStartupError
from zorkmcp.mcp import McpManager, open_toolbox

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc"),
    *SDK_HTTP_WARNINGS,
]

QUIRKY = Path(__file__).parent / "servers" / "quirky.py"
SETTINGS = McpSettings(server_startup_timeout_seconds=10)
GUARD = 60  # seconds (virtual where the clock is): a hung test fails instead of hanging the suite
SPEAKS = "2024-11-05, 2025-03-26, 2025-06-18 and 2025-11-25"


@pytest.fixture
def spawn_tolerant_clock() -> trio.testing.MockClock:
    return trio.testing.MockClock(autojump_threshold=0.2)


def quirky(name: str = "q", **spec: Any) -> ServerConfig:
    """A :class:`ServerConfig` for ``quirky.py`` answering as ``spec`` says (see its docstring)."""
    lifecycle = spec.pop("lifecycle", "per_turn")
    args = ("-S", str(QUIRKY), json.dumps(spec))
    return ServerConfig(name=name, command=sys.executable, args=args, lifecycle=lifecycle)


class ChangeSink(RecordingSink):
    """A :class:`RecordingSink` that says when a server's ``notifications/tools/list_changed`` came."""

    def __init__(self) -> None:
        super().__init__()
        self.tools_changed = trio.Event()

    def emit(self, event_type: str, /, **fields: Any) -> None:
        super().emit(event_type, **fields)
        if event_type == "mcp_tools_changed":
            self.tools_changed.set()


def methods_asked(tail: tuple[str, ...]) -> list[str]:
    """The requests a quirky server received, from its stderr lines."""
    return [line.removeprefix("METHOD ") for line in tail if line.startswith("METHOD ")]


COUNTER = {"name": "count", "inputSchema": {"type": "object"}}
BUSY = {"name": "busy", "inputSchema": {"type": "object"}}
RATE_LIMIT = {"error": {"code": -32000, "message": RATE_LIMITED}}


# --- a server's own -32000 is an error result; a transport that ended is a death ---------------------


async def test_a_servers_own_32000_is_an_error_result_and_the_server_lives_on(
    spawn_tolerant_clock: trio.testing.MockClock,
) -> None:
    sink = RecordingSink()
    server = quirky(tools=[COUNTER, BUSY], answers={"busy": RATE_LIMIT})
    with trio.fail_after(GUARD):
        async with open_toolbox([server], SETTINGS, events=sink) as toolbox:
            first = (await toolbox.call_tool("q.count", {})).content
            busy = await toolbox.call_tool("q.busy", {})
            session = toolbox.session("q")
            assert session is not None
            alive = session.alive
            after = (await toolbox.call_tool("q.count", {})).content
    assert busy.is_error
    assert not busy.timed_out
    assert busy.error_message == f"Tool call failed: {RATE_LIMITED}"
    assert alive
    assert after == {"pid": first["pid"], "calls": 3, "arguments": {}}  # the same process, its state kept
    assert "mcp_server_died" not in sink.types()


async def test_a_per_episode_server_that_answers_32000_keeps_its_process_and_state(
    spawn_tolerant_clock: trio.testing.MockClock,
) -> None:
    sink = RecordingSink()
    server = quirky(tools=[COUNTER, BUSY], answers={"busy": RATE_LIMIT}, lifecycle="per_episode")
    manager = McpManager(McpConfig(servers=(server,)), SETTINGS, events=sink)
    with trio.fail_after(GUARD):
        async with manager.open_episode() as episode:
            async with manager.open_turn(episode) as toolbox:
                first = (await toolbox.call_tool("q.count", {})).content
                busy = await toolbox.call_tool("q.busy", {})
            async with manager.open_turn(episode) as toolbox:
                second = (await toolbox.call_tool("q.count", {})).content
    assert busy.error_message == f"Tool call failed: {RATE_LIMITED}"
    assert second == {"pid": first["pid"], "calls": 3, "arguments": {}}
    assert [event for event in sink.types() if event.startswith("mcp_server_")] == [
        "mcp_server_started",
        "mcp_server_stopped",
    ]
    assert not is_alive(first["pid"])


def _rate_limited_server() -> Server[Any]:
    """The SDK's lowlevel server (``MCPServer`` builds its tools in a worker thread, which a virtual
    clock jumps over): ``flaky`` fails with the server's own -32000, ``echo`` answers its text."""
    listed = [
        mcp_types.Tool(name="flaky", input_schema={"type": "object"}),
        mcp_types.Tool(name="echo", input_schema={"type": "object"}),
    ]

    async def list_tools(
        ctx: Any, params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListToolsResult:
        return mcp_types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: mcp_types.CallToolRequestParams) -> mcp_types.CallToolResult:
        if params.name == "flaky":
            raise SdkMCPError(code=-32000, message=RATE_LIMITED)
        text = str((params.arguments or {}).get("text"))
        return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=text)])

    return Server("inmemory", on_list_tools=list_tools, on_call_tool=call_tool)


async def test_an_in_memory_servers_own_32000_is_an_error_result(
    autojump_clock: trio.testing.MockClock,
) -> None:
    server = ServerConfig(name="m", type="inprocess", factory=_rate_limited_server)
    sink = RecordingSink()
    with trio.fail_after(GUARD):
        async with open_toolbox([server], SETTINGS, events=sink) as toolbox:
            flaky = await toolbox.call_tool("m.flaky", {})
            echo = await toolbox.call_tool("m.echo", {"text": "still here"})
    assert flaky.error_message == f"Tool call failed: {RATE_LIMITED}"
    assert echo.content == "still here"
    assert "mcp_server_died" not in sink.types()


@pytest.fixture(scope="module")
def quirky_http() -> Iterator[str]:
    with serve_quirky_http() as url:
        yield url


async def test_over_http_a_servers_32000_is_an_error_and_a_cut_answer_stream_a_death(
    quirky_http: str,
) -> None:
    server = ServerConfig(name="h", type="http", url=quirky_http)
    sink = RecordingSink()
    with trio.fail_after(GUARD):
        async with open_toolbox([server], SETTINGS, events=sink) as toolbox:
            flaky = await toolbox.call_tool("h.flaky", {})
            echo = await toolbox.call_tool("h.echo", {"text": "still here"})
            vanished = await toolbox.call_tool("h.vanish", {})
            after = await toolbox.call_tool("h.echo", {"text": "too late"})
    assert flaky.error_message == f"Tool call failed: {RATE_LIMITED}"
    assert echo.content == "still here"
    gone = "MCP server 'h' is not running; the connection closed during a call to h.vanish"
    assert vanished.error_message == f"Tool call failed: {gone}"
    assert after.error_message == f"Tool call failed: {gone}"
    assert [fields for event, fields in sink.events if event == "mcp_server_died"] == [
        {"server": "h", "tool": "h.vanish", "reason": gone}
    ]


async def test_a_32000_answer_at_start_up_is_the_servers_error_and_it_was_stopped(
    spawn_tolerant_clock: trio.testing.MockClock,
) -> None:
    server = quirky(tools=[COUNTER], list_error={"code": -32000, "message": "warming up"})
    with trio.fail_after(GUARD), pytest.raises(MCPServerStartupError) as caught:
        async with open_toolbox([server], SETTINGS):
            pytest.fail("should not start")  # pragma: no cover
    error = caught.value
    [pid] = pids_from_stderr(error.stderr_tail)
    assert str(error) == (
        "Failed to start MCP server 'q': the server answered with an error: warming up (code -32000)\n"
        f"Command: {shlex.join([sys.executable, *server.args])}\n"
        "The server was still running; zorkmcp stopped it.\n"
        "Last stderr lines:\n"
        f"  PID {pid}\n"
        "  METHOD initialize\n"
        "  METHOD tools/list"
    )
    assert error.exit_status is None
    assert not is_alive(pid)


# --- a server without the tools capability has no tools ---------------------------------------------


PROMPTS_ONLY = {
    "capabilities": {"prompts": {}},
    # a server that says its (absent) tool list changed: listing it again gets -32601, so none
    "after_initialized": [{"method": "notifications/tools/list_changed"}],
}


async def test_a_server_without_the_tools_capability_has_no_tools_and_the_others_play_on(
    spawn_tolerant_clock: trio.testing.MockClock,
) -> None:
    sink = ChangeSink()
    servers = [quirky("prompts", **PROMPTS_ONLY), quirky("tools", tools=[COUNTER])]
    with trio.fail_after(GUARD):
        async with open_toolbox(servers, SETTINGS, events=sink) as toolbox:
            session = toolbox.session("prompts")
            assert session is not None
            assert session.process is not None
            asked_at_start = methods_asked(session.process.stderr_tail)
            await sink.tools_changed.wait()
            assert await toolbox.refresh_if_changed()
            count = await toolbox.call_tool("tools.count", {})
            asked = methods_asked(session.process.stderr_tail)
            offered = [info.name for info in toolbox.tools]
    assert asked_at_start == ["initialize"]  # never asked for tools
    assert asked == ["initialize", "tools/list"]  # asked after its list_changed: -32601 means none
    assert offered == ["tools.count"]
    assert not count.is_error
    assert not session.offers_tools
    assert session.tools == ()
    assert (
        "INFO",
        "MCP server 'prompts' offers no tools: its initialize answer declares no tools capability "
        "(a server of prompts or resources only)",
    ) in sink.lines
    assert [line for line in sink.lines if line[0] in ("WARNING", "ERROR")] == []


def test_zorkmcp_tools_lists_a_prompts_only_server_with_0_tools_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = quirky("prompts", capabilities={"prompts": {}})
    config = {"mcpServers": {"prompts": {"command": server.command, "args": list(server.args)}}}
    (tmp_path / "mcp_config.json").write_text(json.dumps(config))
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.zorkgpt.mcp]\nenabled = true\nconfig_file = 'mcp_config.json'\n")
    assert cmd_tools(None, pyproject, as_json=True) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out) == []
    assert captured.err == (
        "note: MCP server 'prompts' started with 0 tools: its initialize answer declares no tools "
        "capability (a server of prompts or resources only)\n"
    )


# --- one tool the SDK would refuse costs that tool at most ------------------------------------------


LISTED = [
    {"name": "fine", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
    {"name": "no_type", "inputSchema": {"properties": {"q": {"type": "string"}}}},
    {"name": "empty", "inputSchema": {}},
    {"name": "array_out", "inputSchema": {"type": "object"}, "outputSchema": {"type": "array"}},
    {
        "name": "checked_out",
        "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
    },
    {"inputSchema": {"type": "object"}, "description": "no name"},
    {"name": "stringly", "inputSchema": "text"},
]
ANSWERS = {
    # the SDK would check this against {"type": "array"} had it kept that schema, and fail the call
    "array_out": {"result": {"content": [{"type": "text", "text": "a, b"}]}},
    # checked against the object schema it declared, which the SDK keeps checking
    "checked_out": {"result": {"content": [], "structuredContent": {"n": "one"}}},
}


STRINGLY = "its inputSchema is a JSON string, not a schema object"


async def test_a_tool_the_sdk_would_refuse_is_repaired_or_left_out_alone(
    spawn_tolerant_clock: trio.testing.MockClock,
) -> None:
    sink = RecordingSink()
    server = quirky(tools=LISTED, page_size=2, answers=ANSWERS)
    with trio.fail_after(GUARD):
        async with open_toolbox([server], SETTINGS, events=sink) as toolbox:
            offered = {info.name: info.parameters for info in toolbox.tools}
            no_type = (await toolbox.call_tool("q.no_type", {"q": "x"})).content
            array_out = await toolbox.call_tool("q.array_out", {})
            checked_out = await toolbox.call_tool("q.checked_out", {})
            session = toolbox.session("q")
            assert session is not None
            assert session.process is not None
            asked = methods_asked(session.process.stderr_tail)
    assert offered == {
        "q.fine": {"type": "object", "properties": {"text": {"type": "string"}}},
        "q.no_type": {"type": "object", "properties": {"q": {"type": "string"}}},
        "q.empty": {"type": "object", "properties": {}},
        "q.array_out": {"type": "object", "properties": {}},
        "q.checked_out": {"type": "object", "properties": {}},
    }
    assert asked == ["initialize", *["tools/list"] * 4, *["tools/call"] * 3]  # 7 tools, 2 a page
    assert no_type["arguments"] == {"q": "x"}
    assert not array_out.is_error
    assert array_out.content == "a, b"
    assert not checked_out.is_error  # shown as it is, with a warning
    assert checked_out.content == {"n": "one"}
    assert [fields for event, fields in sink.events if event == "mcp_tool_excluded"] == [
        {"server": "q", "tool": "#6", "reason": "entry #6 of tools/list has no name"},
        {"server": "q", "tool": "stringly", "reason": STRINGLY},
    ]
    assert [line for line in sink.lines if line[0] in ("INFO", "WARNING")] == [
        (
            "INFO",
            "MCP tool 'q.array_out': dropped its outputSchema (type: Input should be 'object' "
            '(got "array")): its structured results are not checked against a schema',
        ),
        ("WARNING", "MCP tool 'q.#6' left out: entry #6 of tools/list has no name"),
        ("WARNING", f"MCP tool 'q.stringly' left out: {STRINGLY}"),
        (
            "WARNING",
            "MCP tool 'q.checked_out' returned a result that does not match its outputSchema "
            "($.n: 'one' is not of type 'integer'); the model is shown the result as it is",
        ),
    ]


async def test_a_listing_that_is_not_one_is_a_one_line_reason(
    spawn_tolerant_clock: trio.testing.MockClock,
) -> None:
    server = quirky(list_result={"tools": [COUNTER], "nextCursor": 5})
    with trio.fail_after(GUARD), pytest.raises(MCPServerStartupError) as caught:
        async with open_toolbox([server], SETTINGS):
            pytest.fail("should not start")  # pragma: no cover
    reason, _command, stopped, *_ = str(caught.value).splitlines()
    assert reason == (
        "Failed to start MCP server 'q': the server sent an invalid ListToolsResult: "
        "nextCursor: Input should be a valid string (got 5)"
    )
    assert stopped == "The server was still running; zorkmcp stopped it."


# --- start-up failures: an exit status only when the server chose it; the versions we speak ----------


async def test_an_unknown_protocol_version_names_the_versions_zorkmcp_speaks(
    spawn_tolerant_clock: trio.testing.MockClock,
) -> None:
    server = quirky("future", protocol="2099-01-01", tools=[COUNTER])
    with trio.fail_after(GUARD), pytest.raises(MCPServerStartupError) as caught:
        async with open_toolbox([server], SETTINGS):
            pytest.fail("should not start")  # pragma: no cover
    error = caught.value
    [pid] = pids_from_stderr(error.stderr_tail)
    assert str(error) == (
        "Failed to start MCP server 'future': the server answered initialize with protocol version "
        f"'2099-01-01', which zorkmcp does not speak (it speaks {SPEAKS})\n"
        f"Command: {shlex.join([sys.executable, *server.args])}\n"
        "The server was still running; zorkmcp stopped it.\n"
        "Last stderr lines:\n"
        f"  PID {pid}\n"
        "  METHOD initialize"
    )
    assert error.exit_status is None
