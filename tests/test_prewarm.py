"""Prewarmed per_turn servers: correctness, not timing.

Real subprocesses (the stdlib test server, ~50 ms to start); these run on trio's real clock because
the child processes do.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing
from play_support import default_sigint
from servers.helpers import content_json, is_alive, misbehaving, session_processes

from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.errors import MCPServerStartupError
from zorkmcp.mcp import EpisodeServers, McpManager
from zorkmcp.observability import EventRecorder

REPO = Path(__file__).resolve().parents[1]


def manager(*servers: ServerConfig, events: EventRecorder | None = None) -> McpManager:
    return McpManager(McpConfig(servers=servers), McpSettings(enabled=True), events=events)


async def spare_pid(episode: EpisodeServers, name: str) -> int:
    spare = episode.spares[name]
    await spare.wait_ready()
    assert spare.session is not None
    assert spare.session.process is not None
    assert spare.session.process.pid is not None
    return spare.session.process.pid


async def kill_spare(episode: EpisodeServers, name: str) -> int:
    """SIGKILL the ready spare of ``name`` and wait until the transport has seen it exit."""
    pid = await spare_pid(episode, name)
    os.kill(pid, signal.SIGKILL)
    session = episode.spares[name].session
    assert session is not None
    assert session.process is not None
    await session.process.exited.wait()
    return pid


async def pid_of_turn(mgr: McpManager, episode: EpisodeServers, name: str = "bad") -> dict[str, Any]:
    async with mgr.open_turn(episode) as toolbox:
        result = await toolbox.call_tool(f"{name}.pid", {})
        assert not result.is_error, result.error_message
        value: dict[str, Any] = content_json(result.content)
        return value


async def test_every_turn_gets_a_fresh_process_and_no_spare_outlives_the_episode() -> None:
    events = EventRecorder()
    mgr = manager(misbehaving(), events=events)
    seen: list[dict[str, Any]] = []
    async with mgr.open_episode() as episode:
        assert episode.prewarm
        for _ in range(5):
            spare = await spare_pid(episode, "bad")
            seen.append(await pid_of_turn(mgr, episode))
            assert seen[-1]["pid"] == spare  # the turn used the spare that was waiting for it
            assert episode.spares["bad"] is not None  # and the next one is already on its way
        last_spare = await spare_pid(episode, "bad")
    assert [s["calls"] for s in seen] == [1, 1, 1, 1, 1]  # never reused: every counter starts fresh
    assert len({s["pid"] for s in seen} | {last_spare}) == 6
    started = [e["pid"] for e in events.of_type("mcp_server_started")]
    assert len(started) == 6  # five turns and one spare for a sixth, at most one spare at a time
    for pid in started:
        assert not is_alive(pid)  # nothing outlives the episode
    assert sorted(e["pid"] for e in events.of_type("mcp_server_stopped")) == sorted(started)


@pytest.fixture
def spawn_tolerant_clock() -> trio.testing.MockClock:
    """Virtual time that jumps only once every task has idled long enough for a real spawn."""
    return trio.testing.MockClock(autojump_threshold=0.2)


async def test_turn_does_not_wait_for_teardown(spawn_tolerant_clock: trio.testing.MockClock) -> None:
    # A server that ignores EOF and SIGTERM: its close takes seconds, none of them the turn's.
    mgr = manager(misbehaving("stubborn"))
    async with mgr.open_episode() as episode:
        await spare_pid(episode, "bad")
        async with mgr.open_turn(episode) as toolbox:
            session = toolbox.session("bad")
            assert session is not None
            assert session.process is not None
            pid = session.process.pid
        # The turn is over; its process is closed by its owner in the episode, off the critical path.
        assert pid is not None
        assert toolbox.teardown_seconds == 0.0
        assert is_alive(pid)  # still closing, after the turn has returned
        await session.process.exited.wait()
    assert not is_alive(pid)


async def test_spare_crashed_before_first_turn_fails_fast() -> None:
    mgr = manager(misbehaving(), misbehaving(name="good"))
    async with mgr.open_episode() as episode:
        killed = await kill_spare(episode, "bad")
        good = await spare_pid(episode, "good")
        with pytest.raises(MCPServerStartupError, match="'bad' died before its turn"):
            async with mgr.open_turn(episode):
                pytest.fail("the first turn must not start")  # pragma: no cover
        # Requirement 6.1 ends the episode: no spare waits for a next turn, nothing is left running.
        assert episode.spares == {}
        assert not is_alive(killed)
        assert not is_alive(good)


async def test_spare_crashed_before_later_turn_is_retried_once() -> None:
    events = EventRecorder()
    mgr = manager(misbehaving(), events=events)
    async with mgr.open_episode() as episode:
        first = await pid_of_turn(mgr, episode)
        killed = await kill_spare(episode, "bad")
        second = await pid_of_turn(mgr, episode)  # the retry: a fresh process
    assert second["pid"] not in {first["pid"], killed}
    assert second["calls"] == 1
    assert not mgr.is_server_disabled("bad")
    assert [e["server"] for e in events.of_type("mcp_server_start_failed")] == ["bad"]
    assert any("retry successful" in line for line in events.lines)


async def test_spare_and_its_retry_failing_disables_the_server(tmp_path: Path) -> None:
    events = EventRecorder()
    flaky = tmp_path / "flaky"
    flaky.write_text("0")
    mgr = manager(misbehaving(f"flaky={flaky}"), misbehaving(name="good"), events=events)
    async with mgr.open_episode() as episode:
        await pid_of_turn(mgr, episode)
        await spare_pid(episode, "bad")
        flaky.write_text("5")  # from now on every start of 'bad' fails
        await kill_spare(episode, "bad")
        async with mgr.open_turn(episode) as toolbox:
            assert toolbox.servers == ("good",)  # the turn goes on with the other server's tools
        assert mgr.is_server_disabled("bad")
        assert "bad" not in episode.spares  # a disabled server gets no more spares
        async with mgr.open_turn(episode) as toolbox:
            assert toolbox.servers == ("good",)
    assert [e["server"] for e in events.of_type("mcp_disabled_fallback")] == ["bad"]
    assert len(events.of_type("mcp_server_start_failed")) == 2


async def test_prewarm_off_starts_per_turn_servers_inside_the_turn() -> None:
    events = EventRecorder()
    mgr = manager(misbehaving(), events=events)
    async with mgr.open_episode(prewarm=False) as episode:
        assert episode.spares == {}
        turn = await pid_of_turn(mgr, episode)
        assert episode.spares == {}
    assert not is_alive(turn["pid"])
    assert len(events.of_type("mcp_server_started")) == 1


CTRL_C_SCRIPT = """
import sys, trio
sys.path.insert(0, {tests!r})
from servers.helpers import misbehaving
from zorkmcp.config import McpConfig, McpSettings
from zorkmcp.mcp import McpManager

async def main():
    # A server that never answers initialize: its spare stays in flight until the startup timeout.
    manager = McpManager(McpConfig(servers=(misbehaving("no-init"),)), McpSettings(enabled=True))
    async with manager.open_episode():
        await trio.sleep_forever()

trio.run(main)
"""


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a FIFO to learn when the spare has spawned")
def test_ctrl_c_with_a_spare_in_flight_leaves_no_process(tmp_path: Path) -> None:
    script = tmp_path / "spare.py"
    script.write_text(textwrap.dedent(CTRL_C_SCRIPT.format(tests=str(REPO / "tests"))))
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    env = {**os.environ, "MISBEHAVING_READY_FIFO": str(fifo)}
    with subprocess.Popen(
        [sys.executable, str(script)],
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=env,
        preexec_fn=default_sigint,
    ) as proc:
        try:
            with fifo.open() as ready:  # blocks until the spare's process has started
                line = ready.readline()
            spare = int(line.split()[1])
            assert is_alive(spare)
            proc.send_signal(signal.SIGINT)
            _, err = proc.communicate(timeout=30)
        finally:
            if proc.poll() is None:  # pragma: no cover - only when the test already failed
                proc.kill()
    assert proc.returncode != 0
    assert "KeyboardInterrupt" in err
    assert not is_alive(spare)


async def test_turn_cancelled_while_its_spare_starts_leaves_nothing(tmp_path: Path) -> None:
    # A server that never answers initialize: the turn waits for its spare until it is cancelled.
    fifo = tmp_path / "ready"
    os.mkfifo(fifo)
    mgr = manager(misbehaving("no-init", env={"MISBEHAVING_READY_FIFO": str(fifo)}))

    def first_pid() -> int:
        with fifo.open() as ready:  # blocks until a spare's process has started
            return int(ready.readline().split()[1])

    with trio.move_on_after(10) as safety:  # real time: only a hang would reach it
        async with mgr.open_episode() as episode:
            async with trio.open_nursery() as nursery:

                async def turn() -> None:
                    async with mgr.open_turn(episode):
                        pytest.fail("the turn cannot start before its spare is ready")  # pragma: no cover

                nursery.start_soon(turn)
                spawned = await trio.to_thread.run_sync(first_pid)
                nursery.cancel_scope.cancel()
    assert not safety.cancelled_caught  # the episode closed by itself: nothing kept it open
    assert not is_alive(spawned)
    assert session_processes(b"no-init") == []
