"""What a stdio server may write in one line: a stdout line over ``MAX_LINE_BYTES`` ends the session
and the server at once (never a timeout), and a stderr line is kept only up to ``STDERR_LINE_BYTES``.

Real server processes on the real clock (a child process cannot follow trio's virtual time). A call
that must not reach its timeout is given one far beyond the hang guard, so the outcome (an error,
not ``timed_out``) is what shows it ended at once. One test sends an honest 65 MiB line (well under
a second here); the others lower the limit in this process, where the transport reads it.
"""

from __future__ import annotations

import shlex
import signal
import sys

import anyio
import pytest
import trio
from backends import BACKENDS, run
from servers.helpers import MISBEHAVING, RecordingSink, is_alive, misbehaving, pids_from_stderr

from zorkmcp.config import McpConfig, McpSettings
from zorkmcp.errors import MCPServerStartupError
from zorkmcp.mcp import McpManager, open_toolbox
from zorkmcp.mcp import _stdio as stdio

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc")

SETTINGS = McpSettings(server_startup_timeout_seconds=10)
GUARD = 20  # seconds: a hung test fails instead of hanging the suite
NEVER = GUARD * 10  # a per-call timeout that must not be what ends a call
TOO_LONG = (
    "Tool call failed: MCP server 'bad' sent a message of more than 64 MiB "
    "(the limit of one JSON-RPC line); zorkmcp stopped it"
)
"""Its SIGTERM ended the server (-15): zorkmcp's own signal, never shown as the server's exit."""


async def _a_line_over_the_limit_fails_the_call_at_once_and_stops_the_server() -> None:
    with anyio.fail_after(GUARD):
        async with open_toolbox([misbehaving("ok")], SETTINGS) as toolbox:
            pid = (await toolbox.call_tool("bad.pid", {})).content["pid"]
            big = await toolbox.call_tool(
                "bad.big", {"size": stdio.MAX_LINE_BYTES + 1024 * 1024}, timeout=NEVER
            )
            session = toolbox.session("bad")
            assert session is not None
            assert not session.alive
            after = await toolbox.call_tool("bad.pid", {}, timeout=NEVER)
    assert big.is_error
    assert not big.timed_out
    assert big.error_message == f"{TOO_LONG}; last stderr lines: PID {pid}"
    assert after.error_message == big.error_message  # the same reason for every later call
    assert session.process is not None
    assert session.process.returncode == -signal.SIGTERM  # what the process record keeps, raw
    assert session.process.escalation == "sigterm"
    assert session.process.stopped
    assert session.process.non_json_lines == 0  # no piece of the long line was taken for a line
    assert session.process.stderr_tail == (f"PID {pid}",)
    assert not is_alive(pid)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_line_over_the_limit_fails_the_call_at_once_and_stops_the_server(backend: str) -> None:
    run(backend, _a_line_over_the_limit_fails_the_call_at_once_and_stops_the_server)


async def test_the_limit_is_on_the_line_without_its_newline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stdio, "MAX_LINE_BYTES", 64 * 1024)
    with trio.fail_after(GUARD):
        async with open_toolbox([misbehaving("exact-line")], SETTINGS) as toolbox:
            at_limit = await toolbox.call_tool("bad.big", {"size": 64 * 1024}, timeout=NEVER)
            over = await toolbox.call_tool("bad.big", {"size": 64 * 1024 + 1}, timeout=NEVER)
    assert not at_limit.is_error
    assert isinstance(at_limit.content, str)
    assert set(at_limit.content) == {"x"}
    assert over.is_error
    assert not over.timed_out
    assert over.error_message is not None
    assert over.error_message.startswith(
        "Tool call failed: MCP server 'bad' sent a message of more than 64 KiB "
        "(the limit of one JSON-RPC line); zorkmcp stopped it; last stderr lines: PID "
    )


async def test_a_line_over_the_limit_during_startup_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stdio, "MAX_LINE_BYTES", 64 * 1024)
    with trio.fail_after(GUARD), pytest.raises(MCPServerStartupError) as caught:
        async with open_toolbox([misbehaving("flood=100000")], SETTINGS):
            pytest.fail("should not start")  # pragma: no cover
    error = caught.value
    [pid] = pids_from_stderr(error.stderr_tail)
    # zorkmcp's SIGTERM ended it (-15): it was still running, as after a start-up timeout; no exit
    # status of its own (the message, `zorkmcp tools` and the mcp_server_start_failed event say so).
    assert str(error) == (
        "Failed to start MCP server 'bad': the server sent a message of more than 64 KiB "
        "(the limit of one JSON-RPC line)\n"
        f"Command: {shlex.join([sys.executable, '-S', str(MISBEHAVING), 'flood=100000'])}\n"
        "The server was still running; zorkmcp stopped it.\n"
        "Last stderr lines:\n"
        f"  PID {pid}"
    )
    assert error.exit_status is None
    assert not is_alive(pid)


async def test_a_per_episode_server_over_the_limit_is_reported_and_restarted_next_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(stdio, "MAX_LINE_BYTES", 1024 * 1024)
    sink = RecordingSink()
    server = misbehaving("ok", lifecycle="per_episode", timeout=NEVER)
    manager = McpManager(McpConfig(servers=(server,)), SETTINGS, events=sink)
    with trio.fail_after(GUARD):
        async with manager.open_episode() as episode:
            async with manager.open_turn(episode) as toolbox:
                first = (await toolbox.call_tool("bad.pid", {})).content["pid"]
                big = await toolbox.call_tool("bad.big", {"size": 2 * 1024 * 1024})
            async with manager.open_turn(episode) as toolbox:
                second = (await toolbox.call_tool("bad.pid", {})).content
    reason = (
        "MCP server 'bad' sent a message of more than 1 MiB (the limit of one JSON-RPC line); "
        f"zorkmcp stopped it; last stderr lines: PID {first}"
    )
    assert big.error_message == f"Tool call failed: {reason}"
    assert not big.timed_out
    died = [fields for event, fields in sink.events if event == "mcp_server_died"]
    assert died == [{"server": "bad", "tool": "bad.big", "reason": reason}]
    assert ("mcp_server_restart", {"server": "bad", "turn": 2}) in sink.events
    assert ("WARNING", f"Turn 2: restarting MCP server 'bad': {reason}") in sink.lines
    # The stop of the session zorkmcp stopped says why; its status stays the raw one, with the
    # escalation that shows whose signal it was (as any stop's); the next session's stop is plain.
    stops = {fields["pid"]: fields for event, fields in sink.events if event == "mcp_server_stopped"}
    assert {pid: {k: v for k, v in f.items() if k != "teardown_ms"} for pid, f in stops.items()} == {
        first: {
            "server": "bad",
            "pid": first,
            "exit_status": -signal.SIGTERM,
            "escalation": "sigterm",
            "strays_killed": 0,
            "reason": "MCP server 'bad' sent a message of more than 1 MiB (the limit of one JSON-RPC "
            "line); zorkmcp stopped it",
            "turn": 1,  # the last turn that used it, not turn 2 that replaced it
        },
        second["pid"]: {
            "server": "bad",
            "pid": second["pid"],
            "exit_status": 0,
            "escalation": "none",
            "strays_killed": 0,
            "turn": 2,
        },
    }
    assert second["pid"] != first
    assert second["calls"] == 1  # a fresh process
    assert not is_alive(first)
    assert not is_alive(second["pid"])


async def test_a_long_stderr_line_is_cut_and_never_held_whole() -> None:
    # 8 MiB without a newline: only its first STDERR_LINE_BYTES are kept, the rest read and dropped.
    flood = 8 * 1024 * 1024
    with trio.fail_after(GUARD):
        async with open_toolbox([misbehaving(f"stderr-flood={flood}")], SETTINGS) as toolbox:
            pid = (await toolbox.call_tool("bad.pid", {})).content["pid"]
            session = toolbox.session("bad")
    assert session is not None
    assert session.process is not None
    assert session.process.stderr_tail == (
        f"PID {pid}",
        "e" * stdio.STDERR_LINE_BYTES + " [... line cut at 2 KiB]",
        "after the flood",
    )
    assert not is_alive(pid)
