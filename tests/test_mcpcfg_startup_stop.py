"""A start-up timeout is reported at the timeout, not after the stdin-EOF grace that follows it.

A server that has not answered ``initialize`` and ``tools/list`` within
``server_startup_timeout_seconds`` was given its time: teardown then closes its stdin and signals it at
once instead of waiting :data:`~zorkmcp.mcp._stdio.EOF_GRACE` (1.5 s) for it to exit on its own, so
``server_startup_timeout_seconds = 10`` reports at 10 s (10.5 s for a server that ignores SIGTERM),
where it took 11.5 s (12 s). It is still stopped, and gone, before the error is raised.

Real processes, virtual time: the clock stands still until the server has said it is ready, then
jumps only when every task has waited a while for real (a SIGTERM takes milliseconds).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import pytest
import trio
import trio.testing
from servers.helpers import announced, fifo_at, is_alive, misbehaving, pids_from_stderr

from zorkmcp.config import McpSettings, ServerConfig
from zorkmcp.errors import MCPServerStartupError
from zorkmcp.mcp import open_toolbox

if TYPE_CHECKING:
    from pathlib import Path

GUARD = 30  # seconds: a hung test fails instead of hanging the suite
SETTINGS = McpSettings(server_startup_timeout_seconds=0.5)

NEVER_ANSWERS = """\
import os, signal, sys
sys.stderr.write(f"PID {os.getpid()}\\n")
sys.stderr.flush()
with open(os.environ["READY_FIFO"], "w") as fifo:
    fifo.write(f"PID {os.getpid()}\\n")
signal.pause()  # never reads its stdin, never answers; SIGTERM ends it
"""


async def _failed_start(
    mock_clock: trio.testing.MockClock, server: ServerConfig, fifo: Path
) -> tuple[MCPServerStartupError, float, int]:
    """Start ``server`` (which never answers): its error, the virtual seconds until it, its PID."""
    failures: list[tuple[MCPServerStartupError, float]] = []
    start = trio.current_time()

    async def run() -> None:
        with pytest.raises(MCPServerStartupError) as caught:
            async with open_toolbox([server], SETTINGS):
                pytest.fail("should not start")  # pragma: no cover
        failures.append((caught.value, trio.current_time() - start))

    with trio.fail_after(GUARD):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            [announcement] = await announced(fifo, guard=GUARD)
            mock_clock.autojump_threshold = 0.5  # real seconds every task must have waited
    [(failure, elapsed)] = failures
    [pid] = pids_from_stderr([announcement])
    return failure, elapsed, pid


async def test_a_server_that_dies_of_sigterm_is_reported_at_the_timeout(
    mock_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    fifo = fifo_at(tmp_path / "ready")
    server = ServerConfig(
        name="mute", command=sys.executable, args=("-S", "-c", NEVER_ANSWERS), env={"READY_FIFO": str(fifo)}
    )
    failure, elapsed, pid = await _failed_start(mock_clock, server, fifo)
    assert elapsed == 0.5  # was 2.0: the timeout, then 1.5 s for an exit on stdin EOF that never came
    assert str(failure).splitlines()[0] == (
        "Failed to start MCP server 'mute': no answer to initialize and tools/list within 0.5s"
    )
    assert "The server was still running; zorkmcp stopped it." in str(failure)
    assert not is_alive(pid)


async def test_a_server_that_ignores_sigterm_is_killed_half_a_second_later(
    mock_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    fifo = fifo_at(tmp_path / "ready")
    server = misbehaving("no-init,stubborn", env={"MISBEHAVING_READY_FIFO": str(fifo)})
    failure, elapsed, pid = await _failed_start(mock_clock, server, fifo)
    assert elapsed == 1.0  # the timeout and TERM_GRACE (0.5 s), then SIGKILL; was 2.5
    assert "The server was still running; zorkmcp stopped it." in str(failure)
    assert not is_alive(pid)
