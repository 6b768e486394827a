"""The turn deadline bounds the server start-up as well as the loop (``TurnOptions.deadline``).

Real subprocesses (``servers/misbehaving.py``) on trio's ``mock_clock``: virtual time stands still
until the test moves it with ``jump``, once the server's process has announced itself on a FIFO. No
test waits for real time to pass, and none depends on how fast a process starts or ends: the
start-up timeout (8 s) is never reached, and the servers end on stdin EOF, at the first step of
their teardown, while the clock stands still (see :data:`STALL`).
"""

from __future__ import annotations

import os
import sys
from functools import partial
from typing import TYPE_CHECKING, Any

import pytest
import trio
import trio.testing
from llm_server import LLMServer, content_reply, tool_call, tool_call_reply
from servers.helpers import announced, fifo_at, is_alive, misbehaving, release, session_processes

from zorkmcp.agent import AgentAction, ZorkAgent, build_messages
from zorkmcp.config import McpConfig, McpSettings
from zorkmcp.engine import TurnOptions, TurnResult, run_turn
from zorkmcp.llm import open_llm_client
from zorkmcp.mcp import EpisodeServers, McpManager
from zorkmcp.observability import EventRecorder

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc"),
    pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="a FIFO tells when a server has spawned"),
]

SETTINGS = McpSettings(enabled=True, server_startup_timeout_seconds=8)
OPENING = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "state"}]
STALL = 5.0
"""Real seconds every task must have been blocked before the mock clock moves by itself, once the
test has moved it past the deadline: never on a passing run (a server ends on stdin EOF within
milliseconds), but a turn that ignores its deadline fails at its start-up timeout instead of hanging."""
FAILED_START = ("mcp_server_start_failed", "mcp_disabled_fallback", "mcp_server_restart")


def pids(lines: list[str]) -> list[int]:
    return [int(line.split()[1]) for line in lines]  # "PID 1234"


async def turn(
    llm_server: LLMServer,
    mgr: McpManager,
    episode: EpisodeServers | None = None,
    *,
    deadline: float,
    events: EventRecorder,
) -> TurnResult:
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o-test") as model:
        return await run_turn(
            model,
            OPENING,
            open_toolbox=lambda: mgr.open_turn(episode),
            options=TurnOptions(deadline=deadline, turn=mgr.turn + 1),
            events=events,
        )


async def into(results: list[Any], fn: Any, *args: Any, **kwargs: Any) -> None:
    results.append(await fn(*args, **kwargs))


def assert_deadline_in_startup(
    result: TurnResult, events: EventRecorder, *, turn: int, opening: list[dict[str, Any]] = OPENING
) -> None:
    assert result.deadline_exceeded
    assert result.content is None
    assert result.iterations == 0
    assert result.tool_calls == ()
    assert result.tools_offered == 0
    assert result.llm_requests == 0
    assert result.messages == opening
    assert result.timings.startup == 0.5  # virtual seconds: the start-up ran until the deadline
    assert (result.timings.llm, result.timings.tools, result.timings.teardown) == (0.0, 0.0, 0.0)
    assert result.timings.total == 0.5
    deadline_events = events.of_type("turn_deadline_exceeded")
    assert [(e["deadline_seconds"], e["iterations"]) for e in deadline_events] == [(0.5, 0)]
    warning = f"[WARNING] Turn {turn}: turn deadline of 0.5s exceeded during the MCP server start-up"
    assert warning in events.lines
    [complete] = events.of_type("mcp_session_complete")
    assert (complete["iterations"], complete["tool_calls_count"]) == (0, 0)
    # A deadline is not the server's fault: no failed start, no retry, nothing disabled.
    assert [e for e in events.events if e["event_type"] in FAILED_START] == []
    assert not any("failed to start" in line for line in events.lines)


@pytest.mark.parametrize("opened_before", [0, 1], ids=["first-turn", "later-turn"])
async def test_deadline_cancels_a_start_that_never_answers(
    llm_server: LLMServer, mock_clock: trio.testing.MockClock, tmp_path: Path, opened_before: int
) -> None:
    fifo = fifo_at(tmp_path / "ready")
    events = EventRecorder()
    server = misbehaving("no-init", env={"MISBEHAVING_READY_FIFO": str(fifo)})
    mgr = McpManager(McpConfig(servers=(server,)), SETTINGS, events=events)
    mgr.turn = opened_before  # the first turn fails fast on a failed start; later ones retry, then disable
    results: list[TurnResult] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(partial(into, results, turn, llm_server, mgr, deadline=0.5, events=events))
        [pid] = pids(await announced(fifo))  # spawned, waiting for initialize
        assert is_alive(pid)
        mock_clock.jump(0.5)
        mock_clock.autojump_threshold = STALL
    [result] = results
    assert_deadline_in_startup(result, events, turn=opened_before + 1)
    assert events.of_type("mcp_session_complete")[0]["final_action"] is None
    assert llm_server.requests == []
    assert not mgr.is_server_disabled("bad")
    assert not is_alive(pid)
    assert session_processes(b"no-init") == []


async def test_deadline_cancels_waiting_for_a_prewarmed_spare(
    llm_server: LLMServer, mock_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    fifo = fifo_at(tmp_path / "ready")
    events = EventRecorder()
    server = misbehaving("no-init", env={"MISBEHAVING_READY_FIFO": str(fifo)})
    mgr = McpManager(McpConfig(servers=(server,)), SETTINGS, events=events)
    results: list[TurnResult] = []
    async with mgr.open_episode(prewarm=True) as episode, trio.open_nursery() as nursery:
        nursery.start_soon(
            partial(into, results, turn, llm_server, mgr, episode, deadline=0.5, events=events)
        )
        spawned = pids(await announced(fifo, 2))  # this turn's spare, and the next turn's
        mock_clock.jump(0.5)
        mock_clock.autojump_threshold = STALL
    [result] = results
    assert_deadline_in_startup(result, events, turn=1)
    assert not mgr.is_server_disabled("bad")
    assert not any(is_alive(pid) for pid in spawned)
    assert session_processes(b"no-init") == []


async def test_deadline_in_the_loop_counts_from_the_start_of_the_turn(
    llm_server: LLMServer, mock_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    ready, called = fifo_at(tmp_path / "ready"), fifo_at(tmp_path / "called")
    gate = fifo_at(tmp_path / "gate")
    env = {
        "MISBEHAVING_READY_FIFO": str(ready),
        "MISBEHAVING_CALLS_FIFO": str(called),
        "MISBEHAVING_INIT_GATE_FIFO": str(gate),
    }
    llm_server.script(tool_call_reply(tool_call("bad__hang", {})), content_reply("late"))
    events = EventRecorder()
    mgr = McpManager(McpConfig(servers=(misbehaving("ok", env=env),)), SETTINGS, events=events)
    results: list[TurnResult] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(partial(into, results, turn, llm_server, mgr, deadline=3.0, events=events))
        [pid] = pids(await announced(ready))
        mock_clock.jump(1.0)  # the start-up takes one second of the turn's three...
        await release(gate)  # ...then the server answers initialize (not before, on a fast machine)
        assert await announced(called) == ["CALL hang"]  # the loop runs; the tool never answers
        mock_clock.jump(1.0)
        await trio.testing.wait_all_tasks_blocked()
        assert results == []  # not at 2 s: the deadline is 3 s after the start of the turn
        mock_clock.jump(1.0)
        mock_clock.autojump_threshold = STALL
    [result] = results
    assert result.deadline_exceeded
    assert result.content is None
    assert result.iterations == 1
    assert result.timings.startup == 1.0
    assert result.timings.total == 3.0
    assert [e["deadline_seconds"] for e in events.of_type("turn_deadline_exceeded")] == [3.0]
    assert "[WARNING] Turn 1: turn deadline of 3.0s exceeded" in events.lines
    assert not is_alive(pid)


async def test_agent_falls_back_to_look_when_the_deadline_passes_during_startup(
    llm_server: LLMServer, mock_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    fifo = fifo_at(tmp_path / "ready")
    events = EventRecorder()
    settings = McpSettings(enabled=True, server_startup_timeout_seconds=8, turn_timeout_seconds=0.5)
    server = misbehaving("no-init", env={"MISBEHAVING_READY_FIFO": str(fifo)})
    mgr = McpManager(McpConfig(servers=(server,)), settings, events=events)
    actions: list[AgentAction] = []
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o-test") as model:
        agent = ZorkAgent(model=model, settings=settings, mcp=mgr, events=events)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(partial(into, actions, agent.generate_action, "West of House"))
            await announced(fifo)
            mock_clock.jump(0.5)
            mock_clock.autojump_threshold = STALL
    [action] = actions
    # The same fallback as a deadline passing in the loop (tests/test_agent.py).
    assert (action.action, action.reasoning, action.new_objective) == (
        "look",
        "No answer: the turn deadline of 0.5s passed before the model gave one",
        None,
    )
    assert action.parse_error is None  # the deadline is ours, not an answer that failed to parse
    assert action.turn is not None
    assert_deadline_in_startup(action.turn, events, turn=1, opening=build_messages("West of House"))
    assert events.of_type("mcp_session_complete")[0]["final_action"] == "look"
    assert events.of_type("agent_parse_error") == []
    assert "[INFO] Turn 1: Agent action: look" in events.lines
    assert llm_server.requests == []
    assert not mgr.is_server_disabled("bad")
    assert session_processes(b"no-init") == []
