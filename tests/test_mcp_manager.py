"""``McpManager``: first-turn / retry-once / disable policy (Requirements 6.1, 6.7–6.10; properties
26–27), lifecycles, and the embedded thinking server as a real subprocess through ``open_turn()``."""

from __future__ import annotations

import importlib.util
import sys
from typing import TYPE_CHECKING

import anyio
import pytest
import trio
import trio.testing
from backends import BACKENDS, run
from servers.helpers import RecordingSink, is_alive, misbehaving, session_processes, thinking

from zorkmcp.config import McpConfig, McpSettings
from zorkmcp.errors import MCPServerStartupError
from zorkmcp.mcp import McpManager

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc")

SETTINGS = McpSettings(server_startup_timeout_seconds=10)
GUARD = 20


def _starts(state: Path) -> int:
    starts = state.with_name(state.name + ".starts")
    return len(starts.read_text().splitlines()) if starts.exists() else 0


async def _first_turn_failure_raises_a_plain_startup_error() -> None:
    sink = RecordingSink()
    manager = McpManager(
        McpConfig(servers=(misbehaving("ok", name="good"), misbehaving("crash-start"))), SETTINGS, events=sink
    )
    with (
        anyio.fail_after(GUARD),
        pytest.raises(MCPServerStartupError, match=r"^Failed to start MCP server 'bad': "),
    ):
        async with manager.open_turn():
            pytest.fail("should not start")  # pragma: no cover
    assert not manager.is_disabled
    assert not manager.is_server_disabled("bad")
    assert ("mcp_server_start_failed", {"server": "bad", "turn": 1}) in [
        (e, {k: f[k] for k in ("server", "turn")}) for e, f in sink.events if e == "mcp_server_start_failed"
    ]
    # the healthy server (started, or cancelled while starting) is gone too
    assert session_processes() == []


@pytest.mark.parametrize("backend", BACKENDS)
def test_first_turn_failure_raises_a_plain_startup_error(backend: str) -> None:
    run(backend, _first_turn_failure_raises_a_plain_startup_error)


async def test_later_turns_retry_once_then_disable(tmp_path: Path) -> None:
    state = tmp_path / "flaky"
    sink = RecordingSink()
    config = McpConfig(
        servers=(
            misbehaving(f"flaky={state}", tools=("pid",)),
            misbehaving("ok", name="good", tools=("pid",)),
        )
    )
    manager = McpManager(config, SETTINGS, events=sink)
    pids: list[int] = []

    async def turn() -> list[str]:
        async with manager.open_turn() as toolbox:
            for info in toolbox.tools:
                pids.append((await toolbox.call_tool(info.name, {})).content["pid"])
            return [info.name for info in toolbox.tools]

    with trio.fail_after(GUARD):
        assert await turn() == ["bad.pid", "good.pid"]  # turn 1 works
        assert _starts(state) == 1

        state.write_text("1")  # turn 2: the first start fails, the retry works (Requirement 6.8)
        assert await turn() == ["bad.pid", "good.pid"]
        assert _starts(state) == 3
        assert not manager.is_server_disabled("bad")
        assert any(level == "WARNING" and "failed to start, retrying" in line for level, line in sink.lines)
        assert ("INFO", "Turn 2: MCP server 'bad' retry successful") in sink.lines

        state.write_text("2")  # turn 3: both fail → disabled for the episode (6.9, 6.10)
        assert await turn() == ["good.pid"]
        assert _starts(state) == 5
        assert manager.is_server_disabled("bad")
        assert not manager.is_disabled  # "good" still runs
        [fallback] = [f for e, f in sink.events if e == "mcp_disabled_fallback"]
        assert fallback["server"] == "bad"
        assert fallback["turn"] == 3
        assert fallback["all_disabled"] is False

        assert await turn() == ["good.pid"]  # turn 4: no further attempt
        assert _starts(state) == 5
    assert manager.turn == 4
    assert not any(is_alive(pid) for pid in pids)

    manager.reset()  # a new episode: everything may run again
    assert not manager.is_server_disabled("bad")
    assert manager.turn == 0


async def test_all_servers_disabled_sets_is_disabled(tmp_path: Path) -> None:
    state = tmp_path / "flaky"
    manager = McpManager(McpConfig(servers=(misbehaving(f"flaky={state}"),)), SETTINGS)
    with trio.fail_after(GUARD):
        async with manager.open_turn() as toolbox:
            assert toolbox.tools
        state.write_text("2")
        async with manager.open_turn() as toolbox:
            assert toolbox.tools == ()
            assert toolbox.openai_tools() == []
    assert manager.is_server_disabled("bad")
    assert manager.is_disabled


async def test_per_episode_server_is_borrowed_and_restarted_after_it_died() -> None:
    config = McpConfig(
        servers=(
            misbehaving("ok", name="game", lifecycle="per_episode", tools=("pid",)),
            misbehaving("ok", name="fresh", tools=("pid",)),
        )
    )
    manager = McpManager(config, SETTINGS)
    seen: list[tuple[dict[str, int], dict[str, int]]] = []
    with trio.fail_after(GUARD):
        async with manager.open_episode() as episode:
            for turn in range(4):
                async with manager.open_turn(episode) as toolbox:
                    game = (await toolbox.call_tool("game.pid", {})).content
                    fresh = (await toolbox.call_tool("fresh.pid", {})).content
                    seen.append((game, fresh))
                    if turn == 1:  # the program kills the game server (tools outside the allow-list)
                        crashed = await episode.call_tool("game.crash", {})
                        assert crashed.is_error
                        dead = await toolbox.call_tool("game.pid", {})
                        assert dead.error_message is not None
                        assert "is not running (exit status 7)" in dead.error_message
    games = [game for game, _ in seen]
    assert games[0]["pid"] == games[1]["pid"]  # borrowed: same process, counter goes on
    assert [g["calls"] for g in games] == [1, 2, 1, 2]  # restarted on turn 3 (a fresh process)
    assert games[2]["pid"] != games[1]["pid"]
    assert games[3]["pid"] == games[2]["pid"]
    assert len({fresh["pid"] for _, fresh in seen}) == 4  # per_turn: a new process every turn
    assert all(fresh["calls"] == 1 for _, fresh in seen)
    assert not any(is_alive(p["pid"]) for pair in seen for p in pair)


async def test_without_an_episode_per_episode_servers_run_per_turn() -> None:
    manager = McpManager(
        McpConfig(servers=(misbehaving("ok", name="game", lifecycle="per_episode"),)), SETTINGS
    )
    pids = []
    with trio.fail_after(GUARD):
        for _ in range(2):
            async with manager.open_turn(None) as toolbox:
                pids.append((await toolbox.call_tool("game.pid", {})).content["pid"])
    assert pids[0] != pids[1]
    assert not any(is_alive(pid) for pid in pids)


async def test_open_episode_failure_is_fail_fast() -> None:
    manager = McpManager(McpConfig(servers=(misbehaving("crash-start", lifecycle="per_episode"),)), SETTINGS)
    with trio.fail_after(GUARD), pytest.raises(MCPServerStartupError, match=r"Exit status: 3"):
        async with manager.open_episode():
            pytest.fail("should not start")  # pragma: no cover


async def test_cancelled_turn_and_body_errors_leave_no_process() -> None:
    manager = McpManager(McpConfig(servers=(misbehaving("child"),)), SETTINGS)
    pids: list[int] = []
    with trio.fail_after(GUARD):
        with trio.CancelScope() as scope:  # e.g. a turn timeout while a tool hangs
            async with manager.open_turn() as toolbox:
                pids.append((await toolbox.call_tool("bad.pid", {})).content["pid"])
                pids += (await toolbox.call_tool("bad.children", {})).content["children"]
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(toolbox.call_tool, "bad.hang", {})
                    await trio.testing.wait_all_tasks_blocked()  # the call waits for its answer
                    scope.cancel()
        assert scope.cancelled_caught
        with pytest.raises(RuntimeError, match="the agent failed"):  # noqa: PT012 - the turn is the subject
            async with manager.open_turn() as toolbox:
                pids.append((await toolbox.call_tool("bad.pid", {})).content["pid"])
                raise RuntimeError("the agent failed")
    assert len(pids) == 3
    assert not any(is_alive(pid) for pid in pids)


@pytest.mark.skipif(
    importlib.util.find_spec("zorkmcp.servers.thinking") is None, reason="no thinking server yet"
)
async def test_embedded_thinking_server_as_a_subprocess_through_open_turn() -> None:
    sink = RecordingSink()
    manager = McpManager(McpConfig(servers=(thinking(),)), SETTINGS, events=sink)
    with trio.fail_after(GUARD):
        async with manager.open_turn() as toolbox:
            [info] = toolbox.tools
            assert info.openai_schema()["function"]["name"] == "thinking__think"
            assert set(info.parameters["required"]) >= {
                "thought",
                "thoughtNumber",
                "totalThoughts",
                "nextThoughtNeeded",
            }
            arguments = {
                "thought": "Look in the mailbox",
                "thoughtNumber": 1,
                "totalThoughts": 2,
                "nextThoughtNeeded": True,
            }
            first = await toolbox.call_tool("thinking.think", arguments)
            second = await toolbox.call_tool(
                "thinking__think", {**arguments, "thoughtNumber": 2, "nextThoughtNeeded": False}
            )
            missing = await toolbox.call_tool("thinking.think", {})
    assert not first.is_error
    assert first.content["thoughtNumber"] == 1
    assert second.content["nextThoughtNeeded"] is False
    assert missing.is_error
    assert toolbox.teardown_seconds is not None
    [started] = [f for e, f in sink.events if e == "mcp_server_started"]
    [stopped] = [f for e, f in sink.events if e == "mcp_server_stopped"]
    assert started["tools"] == ["think"]
    assert stopped["exit_status"] == 0
    assert stopped["escalation"] == "none"
    assert not is_alive(started["pid"])
