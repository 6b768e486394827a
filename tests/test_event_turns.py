"""The ``turn`` of the events a prewarmed ``per_turn`` server reports in the background.

A spare starts during the turn before the one it serves and is closed after that one has returned;
its events must carry the turn it served (or none, before a turn took it), never the turn that
happens to be in the recorder's context when they are reported. A real SDK server in-process (the
SDK's memory transport), on virtual time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import engine_servers

from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.mcp import McpManager
from zorkmcp.observability import EventRecorder

if TYPE_CHECKING:
    import trio.testing

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
