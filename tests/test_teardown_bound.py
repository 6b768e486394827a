"""Used sessions close in the background, at most ``MAX_CONCURRENT_TEARDOWNS`` at once.

Many quick prewarmed turns of a server that ignores stdin EOF and SIGTERM (each close must wait for
the SIGKILL escalation): the turns never wait for a close, no more than the cap ever close at the
same time, and the episode's end leaves no process.

Virtual time with a larger autojump threshold than the suite's: the servers are real processes, and
the clock may only jump once every task has been idle long enough for a spawn to finish in real time.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
import trio
import trio.testing
from servers.helpers import is_alive, misbehaving, session_processes

from zorkmcp.config import McpConfig, McpSettings
from zorkmcp.mcp import EpisodeServers, McpManager
from zorkmcp.observability import EventRecorder

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc")

TURNS = 14


@pytest.fixture
def spawn_tolerant_clock() -> trio.testing.MockClock:
    return trio.testing.MockClock(autojump_threshold=0.2)


class ClosingSampler(EventRecorder):
    """Records events and how many sessions the episode had closing at each one."""

    def __init__(self) -> None:
        super().__init__()
        self.episode: EpisodeServers | None = None
        self.samples: list[int] = []

    def emit(self, event: str, **fields: Any) -> None:
        if self.episode is not None:
            self.samples.append(self.episode.closing)
        super().emit(event, **fields)


async def test_stubborn_used_sessions_close_at_most_four_at_once(
    spawn_tolerant_clock: trio.testing.MockClock,
) -> None:
    events = ClosingSampler()
    manager = McpManager(
        McpConfig(servers=(misbehaving("stubborn"),)), McpSettings(enabled=True), events=events
    )
    peak = 0
    with trio.fail_after(600):  # virtual seconds
        async with manager.open_episode() as episode:
            events.episode = episode
            for _ in range(TURNS):
                before = trio.current_time()
                async with manager.open_turn(episode) as toolbox:
                    assert not (await toolbox.call_tool("bad.pid", {})).is_error
                assert toolbox.teardown_seconds == 0.0  # the turn never waits for a close
                assert trio.current_time() - before < 1.5  # nor for the previous turns' closes
                peak = max(peak, episode.closing)
            await episode.spares["bad"].wait_ready()
            waiting = episode.closing
            events.episode = None  # from here the episode ends: every session closes at once
    assert peak <= 4
    assert max(events.samples) == 4  # the cap was reached: the many used sessions queued
    assert waiting <= 4
    started = [e["pid"] for e in events.of_type("mcp_server_started")]
    stopped = events.of_type("mcp_server_stopped")
    assert len(started) == TURNS + 1  # every turn and the spare for the next one
    assert sorted(e["pid"] for e in stopped) == sorted(started)
    assert {e["escalation"] for e in stopped} <= {"sigkill", "none"}
    assert not any(is_alive(pid) for pid in started)
    assert session_processes(b"stubborn") == []
