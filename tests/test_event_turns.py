"""The ``turn`` of the events a server reports in the background.

A spare (a prewarmed ``per_turn`` server) starts during the turn before the one it serves and is
closed after that one has returned; its events must carry the turn it served (or none, before a
turn took it), never the turn that happens to be in the recorder's context when they are reported.
So must the stop of a ``per_episode`` session, closed in the background at the episode's end or
after a later turn replaced it: the last turn that used it, or none if no turn did. A real SDK server
in-process (the SDK's memory transport), on virtual time; a replaced session needs a server process
that dies (real processes, real clock).
"""

from __future__ import annotations

import sys
from typing import Any

import engine_servers
import pytest
import trio
import trio.testing
from servers.helpers import is_alive, misbehaving

from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.mcp import McpManager
from zorkmcp.observability import EventRecorder

TOOLS = ServerConfig(name="tools", type="inprocess", module="engine_servers:create_tools_server")
SERVER_EVENTS = ("mcp_server_started", "mcp_server_stopped", "mcp_turn_teardown")


def turns_of(events: list[dict[str, Any]]) -> list[tuple[str, int | None]]:
    """``(event_type, turn)`` of the server events, in order (``None``: the event has no ``turn``)."""
    return [(e["event_type"], e.get("turn")) for e in events if e["event_type"] in SERVER_EVENTS]


async def test_a_spares_events_carry_the_turn_it_served_or_none(
    autojump_clock: trio.testing.MockClock,
) -> None:
    del autojump_clock
    engine_servers.reset()
    recorder = EventRecorder(context={"episode_id": "ep-1"})
    manager = McpManager(McpConfig(servers=(TOOLS,)), McpSettings(enabled=True), events=recorder)
    async with manager.open_episode() as episode:
        assert episode.prewarm
        for turn in (1, 2, 3):
            spare = episode.spares["tools"]
            await spare.wait_ready()  # prewarmed: ready before its turn begins
            recorder.set_context(turn=turn)  # as bridge.Bridge does before each turn
            async with manager.open_turn(episode) as toolbox:
                result = await toolbox.call_tool("tools.echo", {"text": f"turn {turn}"})
                assert result.content == f"turn {turn}"
                await episode.spares["tools"].wait_ready()  # the next turn's, started in this one
            # The next turn begins (as a Bridge's next get_action) before the used session is closed.
            recorder.set_context(turn=turn + 1)
            await spare.wait_closed()
        recorder.set_context(turn=3)
    assert engine_servers.SESSIONS == [1, 2, 3, 4]  # a fresh server every turn, and one spare unused
    assert turns_of(recorder.events) == [
        ("mcp_server_started", None),  # the spare for turn 1, started with the episode
        ("mcp_server_started", None),  # the spare for turn 2, started in the background in turn 1
        ("mcp_turn_teardown", 1),
        ("mcp_server_stopped", 1),  # closed after turn 1, once turn 2 had begun
        ("mcp_server_started", None),
        ("mcp_turn_teardown", 2),
        ("mcp_server_stopped", 2),
        ("mcp_server_started", None),
        ("mcp_turn_teardown", 3),
        ("mcp_server_stopped", 3),
        ("mcp_server_stopped", None),  # the spare no turn took, closed with the episode
    ]


async def test_a_spare_its_turn_waits_for_starts_without_a_turn_and_stops_with_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # The first turn begins at once: the episode's spare is still starting (its server is built in
    # a worker thread) and the turn waits for it. Its start is still a prewarmed start: no turn.
    del autojump_clock
    engine_servers.reset()
    recorder = EventRecorder(context={"episode_id": "ep-1"})
    manager = McpManager(McpConfig(servers=(TOOLS,)), McpSettings(enabled=True), events=recorder)
    async with manager.open_episode() as episode:
        spare = episode.spares["tools"]
        assert not spare.ready
        recorder.set_context(turn=1)
        async with manager.open_turn(episode) as toolbox:
            assert (await toolbox.call_tool("tools.echo", {"text": "turn 1"})).content == "turn 1"
            await episode.spares["tools"].wait_ready()
        recorder.set_context(turn=2)
        await spare.wait_closed()
    assert engine_servers.SESSIONS == [1, 2]  # turn 1's and the spare for turn 2
    assert turns_of(recorder.events) == [
        ("mcp_server_started", None),  # turn 1's, which it waited for
        ("mcp_server_started", None),  # the spare for turn 2
        ("mcp_turn_teardown", 1),
        ("mcp_server_stopped", 1),
        ("mcp_server_stopped", None),  # the spare no turn took
    ]


GAME = ServerConfig(
    name="game", type="inprocess", module="engine_servers:create_tools_server", lifecycle="per_episode"
)


async def test_a_per_episode_sessions_stop_carries_the_last_turn_that_used_it(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # The episode ends while the recorder already names turn 3: a Bridge's get_action sets the turn
    # before the turn opens its tools, and one interrupted then (Ctrl-C) never used the session.
    del autojump_clock
    engine_servers.reset()
    recorder = EventRecorder(context={"episode_id": "ep-1"})
    manager = McpManager(McpConfig(servers=(GAME,)), McpSettings(enabled=True), events=recorder)
    async with manager.open_episode() as episode:
        for turn in (1, 2):
            recorder.set_context(turn=turn)
            async with manager.open_turn(episode) as toolbox:
                assert (await toolbox.call_tool("game.counter", {})).content == turn  # one session
        recorder.set_context(turn=3)
    assert engine_servers.SESSIONS == [1]
    assert turns_of(recorder.events) == [
        ("mcp_server_started", None),  # with the episode, before its first turn
        ("mcp_turn_teardown", 1),
        ("mcp_turn_teardown", 2),
        ("mcp_server_stopped", 2),  # the last turn that used it, not turn 3
    ]


async def test_a_per_episode_session_no_turn_used_stops_without_a_turn(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Only the program's own calls used it (the game's status before the first turn opened its tools).
    del autojump_clock
    engine_servers.reset()
    recorder = EventRecorder(context={"episode_id": "ep-1"})
    manager = McpManager(McpConfig(servers=(GAME,)), McpSettings(enabled=True), events=recorder)
    async with manager.open_episode() as episode:
        assert (await episode.call_tool("game.echo", {"text": "status"})).content == "status"
        recorder.set_context(turn=1)
    assert turns_of(recorder.events) == [("mcp_server_started", None), ("mcp_server_stopped", None)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc")
async def test_a_replaced_per_episode_sessions_stop_carries_the_last_turn_that_used_it() -> None:
    # Turn 1's session dies (the program crashes the game server); turn 2 replaces it and the dead one
    # closes in the background, reported during turn 2 or after: it carries turn 1, the last that
    # used it. The episode then ends while the recorder already names turn 3.
    recorder = EventRecorder(context={"episode_id": "ep-1"})
    game = misbehaving("ok", name="game", lifecycle="per_episode", tools=("pid",))
    settings = McpSettings(enabled=True, server_startup_timeout_seconds=10)
    manager = McpManager(McpConfig(servers=(game,)), settings, events=recorder)
    pids: list[int] = []
    with trio.fail_after(20):  # a hung test fails instead of hanging the suite
        async with manager.open_episode() as episode:
            for turn in (1, 2):
                recorder.set_context(turn=turn)
                async with manager.open_turn(episode) as toolbox:
                    pids.append((await toolbox.call_tool("game.pid", {})).content["pid"])
                    if turn == 1:
                        assert (await episode.call_tool("game.crash", {})).is_error
            recorder.set_context(turn=3)
    first, second = pids
    assert first != second  # a fresh process in turn 2
    stops = [
        (e["pid"], e.get("turn"), e["exit_status"])
        for e in recorder.events
        if e["event_type"] == "mcp_server_stopped"
    ]
    assert sorted(stops) == sorted([(first, 1, 7), (second, 2, 0)])  # exit status 7: the crash tool's
    [restart] = [e for e in recorder.events if e["event_type"] == "mcp_server_restart"]
    assert restart["turn"] == 2
    assert not is_alive(first)
    assert not is_alive(second)
