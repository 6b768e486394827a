"""A turn's deadline (``turn_timeout_seconds``) that passes during the server start-up ends the turn
then, not once the servers being started have stopped.

Real subprocesses (``servers/misbehaving.py`` in ``no-init,stubborn`` mode: it never answers
``initialize`` and ignores both the end of its input and SIGTERM) on trio's ``mock_clock``: virtual
time stands still unless the test moves it, so a turn that waits for a server's stop (its
end-of-input grace, 1.5 s; SIGTERM's grace, 0.5 s) does not return while the clock stands still.
Each test waits for every task to be blocked (a fraction of a real second) and looks at what has
returned by then; the servers are stopped and checked gone before the test ends.
"""

from __future__ import annotations

import os
import sys
from functools import partial
from typing import TYPE_CHECKING, Any

import pytest
import trio
import trio.testing
from servers.helpers import announced, fifo_at, is_alive, misbehaving, session_processes

from zorkmcp.config import McpConfig, McpSettings
from zorkmcp.engine import TurnOptions, TurnResult, run_turn
from zorkmcp.llm import open_llm_client
from zorkmcp.mcp import EpisodeServers, McpManager
from zorkmcp.observability import EventRecorder

if TYPE_CHECKING:
    from pathlib import Path

    from llm_server import LLMServer

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc"),
    pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="a FIFO tells when a server has spawned"),
]

SETTINGS = McpSettings(enabled=True, server_startup_timeout_seconds=8)
OPENING = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "state"}]
BLOCKED = 0.2
"""Real seconds every task must have been blocked: the turn has returned by then, or it waits for
virtual time (a server's stop) that does not pass."""
TEARDOWN_STALL = 0.05
"""Once the test has looked, the clock moves by itself after this many real seconds of every task
blocked, so the stubborn servers' stops (their graces, in virtual time) complete."""
HANGS = "no-init,stubborn"


async def turn(
    llm_server: LLMServer, mgr: McpManager, episode: EpisodeServers | None, *, deadline: float
) -> TurnResult:
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o-test") as model:
        return await run_turn(
            model,
            OPENING,
            open_toolbox=lambda: mgr.open_turn(episode),
            options=TurnOptions(deadline=deadline, turn=mgr.turn + 1),
            events=mgr._events,
        )


async def into(results: list[Any], fn: Any, *args: Any, **kwargs: Any) -> None:
    results.append(await fn(*args, **kwargs))
    results.append(trio.current_time())


async def test_a_deadline_while_a_spare_starts_ends_the_turn_without_waiting_for_the_spares(
    llm_server: LLMServer, mock_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    # zorkmcp play and bridge.Bridge prewarm per_turn servers: turn 2 waits for its spare, which
    # hangs in initialize; at the deadline the turn ends, and the next turn's spare stays.
    fifo = fifo_at(tmp_path / "ready")
    events = EventRecorder()
    server = misbehaving(HANGS, env={"MISBEHAVING_READY_FIFO": str(fifo)})
    healthy = misbehaving("ok", name="good")
    mgr = McpManager(McpConfig(servers=(server, healthy)), SETTINGS, events=events)
    mgr.turn = 1  # a later turn: the first one fails fast on a failed start (a deadline is no failure)
    results: list[Any] = []
    start = trio.current_time()
    async with mgr.open_episode(prewarm=True) as episode:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(partial(into, results, turn, llm_server, mgr, episode, deadline=0.5))
            spawned = pids(await announced(fifo, 2))  # this turn's spare, and the next turn's
            mock_clock.jump(0.5)
            await trio.testing.wait_all_tasks_blocked(BLOCKED)  # real-time: the turn's return
            returned_by_then = list(results)
            mock_clock.autojump_threshold = TEARDOWN_STALL  # real-time: the stopped spare's graces
        # Before: the turn released every spare and waited up to 3 s for them to stop (the
        # stubborn one takes its graces): 2 s past a deadline of 0.5 s.
        assert len(returned_by_then) == 2
        result, returned = returned_by_then
        assert returned - start == 0.5
        assert result.deadline_exceeded
        assert result.timings.total == 0.5
        assert not mgr.is_server_disabled("bad")
        # The next turn's spare of each server is still there (the healthy one ready for it).
        assert set(episode.spares) == {"bad", "good"}
    assert not any(is_alive(pid) for pid in spawned)
    assert session_processes(HANGS.encode()) == []


async def test_a_deadline_during_a_start_stops_the_server_without_its_end_of_input_grace(
    llm_server: LLMServer, mock_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    # The turn waits for the servers it starts itself (bridge.get_action(), a per_episode server
    # restarted after it died): a start cut short by the deadline is stopped at once (SIGTERM,
    # SIGKILL 0.5 s later), not after the end of input's 1.5 s grace.
    fifo = fifo_at(tmp_path / "ready")
    events = EventRecorder()
    server = misbehaving(HANGS, env={"MISBEHAVING_READY_FIFO": str(fifo)})
    mgr = McpManager(McpConfig(servers=(server,)), SETTINGS, events=events)
    mgr.turn = 1
    results: list[Any] = []
    start = trio.current_time()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(partial(into, results, turn, llm_server, mgr, None, deadline=0.5))
        [pid] = pids(await announced(fifo))
        mock_clock.jump(0.5)
        await trio.testing.wait_all_tasks_blocked(BLOCKED)  # real-time: SIGTERM sent and ignored
        returned_at_once = list(results)
        mock_clock.jump(0.5)  # SIGTERM's grace: then SIGKILL
        await trio.testing.wait_all_tasks_blocked(BLOCKED)  # real-time: the SIGKILL'd server's exit
        returned_by_then = list(results)
        mock_clock.autojump_threshold = TEARDOWN_STALL
    assert returned_at_once == []
    # Before: still within the 1.5 s grace after the end of its input (2 s past the deadline).
    assert len(returned_by_then) == 2
    result, returned = returned_by_then
    assert returned - start == 1.0
    assert result.deadline_exceeded
    assert result.timings.startup == 0.5
    assert result.timings.total == 1.0
    assert not is_alive(pid)
    assert session_processes(HANGS.encode()) == []
    assert events.of_type("mcp_server_start_failed") == []


def pids(lines: list[str]) -> list[int]:
    return [int(line.split()[1]) for line in lines]  # "PID 1234"
