"""Real subprocess MCP servers: the misbehaving stdlib server in each of its modes, and the embedded
thinking server. Every test checks by PID that no process is left afterwards.

These tests run on the real clock (a child process cannot follow trio's virtual time); their waits
are short and nothing asserts a wall-clock duration.
"""

from __future__ import annotations

import logging
import os
import shlex
import signal
import subprocess
import sys
from typing import TYPE_CHECKING

import anyio
import pytest
import trio
import trio.testing
from backends import BACKENDS, run
from servers.helpers import (
    MISBEHAVING,
    announced,
    content_json,
    fifo_at,
    is_alive,
    misbehaving,
    pids_from_stderr,
    session_processes,
)

from zorkmcp.config import McpSettings, ServerConfig
from zorkmcp.errors import MCPServerStartupError
from zorkmcp.mcp import open_server_session, open_toolbox
from zorkmcp.mcp._stdio import SESSION_ENV_VAR
from zorkmcp.observability import EventRecorder

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc")

SETTINGS = McpSettings(server_startup_timeout_seconds=10)
GUARD = 20  # seconds: a hung test fails instead of hanging the suite


async def _a_well_behaved_server_exits_on_eof() -> None:
    with anyio.fail_after(GUARD):
        async with open_toolbox([misbehaving("ok")], SETTINGS) as toolbox:
            first = await toolbox.call_tool("bad.pid", {})
            second = await toolbox.call_tool("bad__pid", {})
            session = toolbox.session("bad")
            assert session is not None
            assert session.alive
    pid = first.content["pid"]
    assert second.content == {"pid": pid, "calls": 2}
    assert session.process is not None
    assert session.process.pid == pid
    assert session.process.returncode == 0
    assert session.process.escalation == "none"
    assert session.process.teardown_seconds is not None
    assert not session.alive
    assert not is_alive(pid)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_well_behaved_server_exits_on_eof(backend: str) -> None:
    run(backend, _a_well_behaved_server_exits_on_eof)


async def test_server_that_never_answers_initialize() -> None:
    settings = McpSettings(server_startup_timeout_seconds=0.5)
    with trio.fail_after(GUARD), pytest.raises(MCPServerStartupError) as caught:
        async with open_toolbox([misbehaving("no-init")], settings):
            pytest.fail("should not start")  # pragma: no cover
    error = caught.value
    assert str(error).startswith(
        "Failed to start MCP server 'bad': no answer to initialize and tools/list within 0.5s\nCommand: "
    )
    assert error.server == "bad"
    assert "misbehaving.py no-init" in error.command
    [pid] = pids_from_stderr(error.stderr_tail)
    assert not is_alive(pid)


NEVER_ANSWERS = """\
import os, signal, sys
sys.stderr.write(f"PID {os.getpid()}\\n")
sys.stderr.flush()
with open(os.environ["READY_FIFO"], "w") as fifo:
    fifo.write(f"PID {os.getpid()}\\n")
signal.pause()  # never reads its stdin, never answers; SIGTERM ends it
"""
"""A stdio server that ignores stdin EOF and dies of SIGTERM (the ``misbehaving.py`` modes either
exit on EOF or, ``stubborn``, ignore SIGTERM as well)."""


async def stopped_at_start(
    mock_clock: trio.testing.MockClock, server: ServerConfig, fifo: Path
) -> tuple[MCPServerStartupError, str]:
    """Start ``server`` (which never answers) until its 0.5 s start-up timeout; its error, announcement.

    Virtual time stands still until the server has said it is ready (on a slow machine a start-up
    timeout that passed at once would reach it before it set up its signals).
    """
    settings = McpSettings(server_startup_timeout_seconds=0.5)
    failures: list[MCPServerStartupError] = []

    async def start() -> None:
        with pytest.raises(MCPServerStartupError) as caught:
            async with open_toolbox([server], settings):
                pytest.fail("should not start")  # pragma: no cover
        failures.append(caught.value)

    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(start)
            [announcement] = await announced(fifo, guard=GUARD)
            # Now time may move, but only when every task has waited a little for real: a reaped
            # process's exit (milliseconds) must not let the clock jump to the guard's deadline.
            mock_clock.autojump_threshold = 0.2
    [failure] = failures
    return failure, announcement


async def test_a_server_zorkmcp_sigkilled_at_start_was_still_running_not_killed(
    mock_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    # It never answers and ignores SIGTERM and EOF: zorkmcp's SIGKILL ends it, status -9, which is
    # neither an exit status it chose nor a death of its own.
    fifo = fifo_at(tmp_path / "ready")
    server = misbehaving("no-init,stubborn", env={"MISBEHAVING_READY_FIFO": str(fifo)})
    failure, announcement = await stopped_at_start(mock_clock, server, fifo)
    [pid] = pids_from_stderr([announcement])
    assert str(failure) == (
        "Failed to start MCP server 'bad': no answer to initialize and tools/list within 0.5s\n"
        f"Command: {shlex.join([sys.executable, '-S', str(MISBEHAVING), 'no-init,stubborn'])}\n"
        "The server was still running; zorkmcp stopped it.\n"
        "Last stderr lines:\n"
        f"  PID {pid}"
    )
    assert failure.exit_status is None
    assert not is_alive(pid)


async def test_a_server_zorkmcp_sigtermed_at_start_was_still_running_not_killed(
    mock_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    # It never answers and never reads its stdin: zorkmcp's SIGTERM ends it, status -15.
    fifo = fifo_at(tmp_path / "ready")
    server = ServerConfig(
        name="mute", command=sys.executable, args=("-S", "-c", NEVER_ANSWERS), env={"READY_FIFO": str(fifo)}
    )
    failure, announcement = await stopped_at_start(mock_clock, server, fifo)
    [pid] = pids_from_stderr([announcement])
    assert str(failure) == (
        "Failed to start MCP server 'mute': no answer to initialize and tools/list within 0.5s\n"
        f"Command: {shlex.join([sys.executable, '-S', '-c', NEVER_ANSWERS])}\n"
        "The server was still running; zorkmcp stopped it.\n"
        "Last stderr lines:\n"
        f"  PID {pid}"
    )
    assert failure.exit_status is None
    assert not is_alive(pid)


async def test_server_that_crashes_at_start_shows_its_stderr() -> None:
    with trio.fail_after(GUARD), pytest.raises(MCPServerStartupError) as caught:
        async with open_toolbox([misbehaving("crash-start")], SETTINGS):
            pytest.fail("should not start")  # pragma: no cover
    error = caught.value
    message = str(error)
    assert message.startswith(
        "Failed to start MCP server 'bad': the server closed the connection during startup"
    )
    assert "\nExit status: 3\n" in message
    assert "misbehaving: fatal: cannot start (this is the crash-start mode)" in message
    assert error.exit_status == 3
    assert "misbehaving: fatal: cannot start (this is the crash-start mode)" in error.stderr_tail
    [pid] = pids_from_stderr(error.stderr_tail)
    assert not is_alive(pid)


async def test_command_not_found() -> None:
    server = ServerConfig(name="ghost", command="zorkmcp-no-such-command-xyz")
    with pytest.raises(MCPServerStartupError, match=r"command not found: 'zorkmcp-no-such-command-xyz'"):
        async with open_toolbox([server], SETTINGS):
            pytest.fail("should not start")  # pragma: no cover


async def test_server_that_crashes_mid_call() -> None:
    with trio.fail_after(GUARD):
        async with open_toolbox([misbehaving("ok")], SETTINGS) as toolbox:
            pid = (await toolbox.call_tool("bad.pid", {})).content["pid"]
            crashed = await toolbox.call_tool("bad.crash", {})
            after = await toolbox.call_tool("bad.pid", {})
    assert crashed.is_error
    assert not crashed.timed_out
    assert crashed.error_message is not None
    assert crashed.error_message.startswith(
        "Tool call failed: MCP server 'bad' is not running (exit status 7)"
    )
    assert "crashing on purpose in the middle of a call" in crashed.error_message
    assert after.is_error
    assert after.error_message is not None
    assert after.error_message.startswith("Tool call failed: MCP server 'bad' is not running")
    assert not is_alive(pid)


async def test_a_call_to_a_gone_server_lets_its_callers_cancellation_through() -> None:
    # An episode whose run is stopped (Ctrl-C, a file it cannot write) sees its servers end with it;
    # a call made meanwhile must be cancelled like the rest, not answered with an error to act on.
    with trio.fail_after(GUARD):
        async with open_toolbox([misbehaving("ok")], SETTINGS) as toolbox:
            await toolbox.call_tool("bad.crash", {})
            with trio.CancelScope() as scope:
                scope.cancel()
                answered = await toolbox.call_tool("bad.pid", {})
                pytest.fail(f"the call was answered in a cancelled scope: {answered}")
    assert scope.cancelled_caught


async def test_a_dead_servers_pending_call_fails_promptly() -> None:
    """The server is killed while a call hangs; its child keeps stdout open. No timeout needed."""
    with trio.fail_after(GUARD):
        async with open_toolbox([misbehaving("child")], SETTINGS) as toolbox:
            pid = (await toolbox.call_tool("bad.pid", {})).content["pid"]
            [child] = (await toolbox.call_tool("bad.children", {})).content["children"]
            async with trio.open_nursery() as nursery:
                results = []

                async def call() -> None:
                    results.append(await toolbox.call_tool("bad.hang", {}, timeout=GUARD * 2))

                nursery.start_soon(call)
                await trio.testing.wait_all_tasks_blocked()
                os.kill(pid, signal.SIGKILL)
    [result] = results
    assert result.is_error
    assert not result.timed_out
    assert result.error_message is not None
    assert "is not running (killed by SIGKILL)" in result.error_message
    assert not is_alive(pid)
    assert not is_alive(child)


async def _tool_that_hangs_times_out_and_the_server_is_told() -> None:
    with anyio.fail_after(GUARD):
        async with open_toolbox([misbehaving("ok")], SETTINGS) as toolbox:
            pid = (await toolbox.call_tool("bad.pid", {})).content["pid"]
            hung = await toolbox.call_tool("bad.hang", {}, timeout=0.2)
            cancelled = await toolbox.call_tool("bad.cancelled", {})
            again = await toolbox.call_tool("bad.pid", {})
    assert hung.timed_out
    assert hung.is_error
    assert hung.error_message == "Tool call timed out after 0.2s"
    # The SDK sent notifications/cancelled for the abandoned request (its id was the 3rd request).
    assert len(cancelled.content["cancelled"]) == 1
    assert again.content == {"pid": pid, "calls": 4}  # same process, still usable
    assert not is_alive(pid)


@pytest.mark.parametrize("backend", BACKENDS)
def test_tool_that_hangs_times_out_and_the_server_is_told(backend: str) -> None:
    run(backend, _tool_that_hangs_times_out_and_the_server_is_told)


async def test_non_json_stdout_does_not_end_the_session() -> None:
    recorder = EventRecorder()
    with trio.fail_after(GUARD):
        async with open_toolbox([misbehaving("noise")], SETTINGS, events=recorder) as toolbox:
            echo = await toolbox.call_tool("bad.echo", {"text": "still here"})
            pid = (await toolbox.call_tool("bad.pid", {})).content["pid"]
            session = toolbox.session("bad")
    assert echo.content == "still here"
    assert session is not None
    assert session.process is not None
    assert session.process.non_json_lines >= 3
    assert "[stdout, not JSON-RPC] starting up... (not JSON)" in session.process.stderr_tail
    assert not is_alive(pid)
    # The episode's own records say what the server wrote: the first line as an event and a
    # warning, the later ones at debug level.
    events, lines = recorder.drain()
    noise = [(e["server"], e["line"]) for e in events if e["event_type"] == "mcp_server_not_json_rpc"]
    assert noise == [("bad", "starting up... (not JSON)")]
    said = [line for line in lines if "not JSON-RPC" in line]
    assert said[0] == (
        "[WARNING] MCP server 'bad' wrote a line on stdout that is not JSON-RPC (ignored; a server must "
        "write only JSON-RPC there, its logs to stderr): starting up... (not JSON)"
    )
    later = said[1:]
    assert later
    assert all(line.startswith("[DEBUG] MCP server 'bad' wrote a line on stdout") for line in later)
    assert all(line.endswith("): this line is not JSON-RPC") for line in later)


async def test_stderr_says_once_per_command_that_a_server_writes_non_json(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A per_turn server with a banner would otherwise warn on stderr every turn of every episode.
    server = misbehaving(f"noise,once-{os.getpid()}-{id(caplog)}")  # a command no other test ran
    with trio.fail_after(GUARD), caplog.at_level(logging.DEBUG, logger="zorkmcp.mcp"):
        for _ in range(2):
            async with open_toolbox([server], SETTINGS) as toolbox:
                await toolbox.call_tool("bad.echo", {"text": "still here"})
    said = [(r.levelno, r.getMessage()) for r in caplog.records if "not JSON-RPC" in r.getMessage()]
    command = shlex.join((server.command or "", *server.args))
    assert said[0] == (
        logging.WARNING,
        f"MCP server {command} wrote a line that is not JSON-RPC (ignored; said once per server command): "
        "'starting up... (not JSON)'",
    )
    assert len(said) >= 6  # two processes, each with its banner and a line before each answer
    assert [level for level, _ in said[1:]] == [logging.DEBUG] * (len(said) - 1)


_OUT_OF_FILES = """
import os, resource, sys, trio
from servers.helpers import misbehaving
from zorkmcp.config import McpSettings
from zorkmcp.errors import MCPServerStartupError
from zorkmcp.mcp import open_toolbox

async def main():
    async with open_toolbox([misbehaving()], McpSettings()):
        pass  # every import done: what follows needs no file but the server's pipes
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    held = []
    try:
        while True:
            held.append(os.open(os.devnull, os.O_RDONLY))
    except OSError:
        pass
    try:
        async with open_toolbox([misbehaving()], McpSettings()):
            print("started")
    except MCPServerStartupError as exc:
        print(str(exc).splitlines()[0])

trio.run(main)
"""


def test_a_server_that_cannot_start_for_want_of_file_descriptors_says_what_to_do() -> None:
    tests = os.path.dirname(os.path.abspath(__file__))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([tests, os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", _OUT_OF_FILES],
        env=env,
        capture_output=True,
        text=True,
        timeout=GUARD,
        check=False,
    )
    assert done.stdout == (
        "Failed to start MCP server 'bad': OSError: [Errno 24] Too many open files (each server takes a "
        "few file descriptors: allow more open files, `ulimit -n`, or run fewer episodes at once, "
        "--concurrency)\n"
    ), done.stderr


async def _server_that_ignores_sigterm_and_eof_is_killed() -> None:
    with anyio.fail_after(GUARD):
        async with open_toolbox([misbehaving("stubborn")], SETTINGS) as toolbox:
            pid = (await toolbox.call_tool("bad.pid", {})).content["pid"]
            session = toolbox.session("bad")
    assert session is not None
    assert session.process is not None
    assert session.process.escalation == "sigkill"
    assert session.process.returncode == -signal.SIGKILL
    assert not is_alive(pid)


@pytest.mark.parametrize("backend", BACKENDS)
def test_server_that_ignores_sigterm_and_eof_is_killed(backend: str) -> None:
    run(backend, _server_that_ignores_sigterm_and_eof_is_killed)


async def _children_left_behind_are_killed(mode: str) -> None:
    with anyio.fail_after(GUARD):
        async with open_toolbox([misbehaving(mode)], SETTINGS) as toolbox:
            pid = (await toolbox.call_tool("bad.pid", {})).content["pid"]
            children = (await toolbox.call_tool("bad.children", {})).content["children"]
            assert all(is_alive(child) for child in children)
            session = toolbox.session("bad")
    assert len(children) == 1
    assert not is_alive(pid)
    assert not any(is_alive(child) for child in children)
    assert session is not None
    assert session.process is not None
    if mode == "setsid-child":
        assert session.process.strays_killed == 1  # found by its ZORKMCP_SESSION token, not the group


@pytest.mark.parametrize(
    ("backend", "mode"),
    [
        *((b, m) for b in BACKENDS for m in ("child", "setsid-child")),
        ("trio", "child,stubborn"),
        ("trio", "setsid-child,stubborn"),
    ],
)
def test_children_left_behind_are_killed(backend: str, mode: str) -> None:
    run(backend, _children_left_behind_are_killed, mode)


async def test_cancellation_during_startup_leaves_no_process() -> None:
    """A turn cancelled while a server is starting (never answers) leaves nothing behind."""
    with trio.fail_after(GUARD):
        with trio.move_on_after(0.3) as scope:
            async with open_toolbox([misbehaving("no-init,child")], SETTINGS):
                pytest.fail("should not start")  # pragma: no cover
    assert scope.cancelled_caught
    # No handle on the PIDs here: no process may carry a session token any more.
    assert session_processes() == []


async def test_environment_is_merged_and_secrets_withheld() -> None:
    base = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": "/home/zork",
        "OPENAI_API_KEY": "sk-no",
        "DB_PASSWORD": "x",
    }
    server = misbehaving("ok", env={"DB_PASSWORD": "given", "EXTRA": "1"})
    names = ["HOME", "OPENAI_API_KEY", "DB_PASSWORD", "EXTRA", SESSION_ENV_VAR]
    with trio.fail_after(GUARD):
        async with open_server_session(server, SETTINGS, base_env=base) as session:
            raw = await session.client.call_tool("env", {"names": names})
    assert session.process is not None
    values = content_json(raw.content[0].text)  # type: ignore[union-attr]
    assert values == {
        "HOME": "/home/zork",
        "OPENAI_API_KEY": None,
        "DB_PASSWORD": "given",
        "EXTRA": "1",
        SESSION_ENV_VAR: session.process.token,
    }
    assert session.process.withheld_env == ("OPENAI_API_KEY",)


async def test_servers_start_concurrently_with_distinct_names() -> None:
    servers = [misbehaving("ok", name=name, tools=("pid",)) for name in ("a", "b", "c.d")]
    with trio.fail_after(GUARD):
        async with open_toolbox(servers, SETTINGS) as toolbox:
            wire = [info.wire_name for info in toolbox.tools]
            pids = [(await toolbox.call_tool(name, {})).content["pid"] for name in wire]
    assert wire == ["a__pid", "b__pid", "c_d__pid"]
    assert len(set(pids)) == 3
    assert not any(is_alive(pid) for pid in pids)


def test_a_non_json_line_is_cut_at_200_characters_not_bytes() -> None:
    from zorkmcp.mcp._stdio import NotJsonRpc, ProcessInfo, _parse_line

    info = ProcessInfo(command=("server",))
    item = _parse_line(("é" * 150 + "X" * 200).encode(), info)
    assert isinstance(item, NotJsonRpc)
    assert (item.line, item.count) == ("é" * 150 + "X" * 50, 1)
    assert info.stderr_tail == ("[stdout, not JSON-RPC] " + "é" * 150 + "X" * 50,)


async def test_a_package_runner_that_does_not_answer_in_time_says_it_may_be_fetching(tmp_path: Path) -> None:
    # Before: only "no answer to initialize and tools/list within 0.5s": npx's first run, fetching the
    # package, outlasts a short start-up timeout, and nothing said so
    npx = tmp_path / "npx"  # stands in for npx fetching its package: it says nothing
    npx.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(60)\n")  # real-time: idle until stopped
    npx.chmod(0o755)
    # real-time: a real process's start-up deadline, 0.5 s, as in test_server_that_never_answers_initialize
    settings = McpSettings(server_startup_timeout_seconds=0.5)
    server = ServerConfig(name="fs", command=str(npx), args=("-y", "@modelcontextprotocol/server-filesystem"))
    with trio.fail_after(GUARD), pytest.raises(MCPServerStartupError) as caught:
        async with open_toolbox([server], settings):
            pytest.fail("should not start")  # pragma: no cover
    assert str(caught.value).splitlines()[0] == (
        "Failed to start MCP server 'fs': no answer to initialize and tools/list within 0.5s (npx may still "
        "be fetching the package on its first run: run the command once by hand, or raise "
        "server_startup_timeout_seconds in [tool.zorkgpt.mcp], now 0.5)"
    )
