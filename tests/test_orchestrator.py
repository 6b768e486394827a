"""The synchronous episode loop (seeds 002 Requirement 9) with real Zork, real MCP servers
and, where a model must answer something specific, the real loopback chat-completions server."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import pytest
import trio
from llm_server import agent_reply, tool_call, tool_call_reply
from play_support import (
    INPROCESS_THINKING,
    events_of,
    is_running,
    read_events,
    write_project,
    zork1_path,
)
from servers.helpers import modules_loaded_by

from zorkmcp.config import Settings
from zorkmcp.errors import ConfigError, GameError, MCPError, MCPServerStartupError
from zorkmcp.orchestrator import (
    GAME_SERVER_NAME,
    GAME_TOOLS_FOR_AGENT,
    EpisodeSummary,
    GameStatus,
    Orchestrator,
    TurnRecord,
    default_walkthrough,
    game_server_config,
)

if TYPE_CHECKING:
    from llm_server import LLMServer

# Death three times in the cellar (the grue), the third ends the game (tests/test_game_server.py).
_DOWN = ["n", "e", "open window", "w", "w", "move rug", "open trap door", "d"]
_BACK = ["e", "s", "e", "w", "w", "open trap door", "d"]
THREE_DEATHS = [*_DOWN, "n", *_BACK, "n", *_BACK, "n"]


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)


def project(tmp_path: Path, **options: Any) -> Settings:
    """Settings of a project in ``tmp_path`` whose logs go to ``tmp_path/logs`` (absolute paths)."""
    files = {
        "json_log_file": str(tmp_path / "logs" / "events.jsonl"),
        "episode_log_file": str(tmp_path / "logs" / "episode.log"),
    }
    return Settings.from_pyproject(write_project(tmp_path, files=files, **options))


def events(tmp_path: Path) -> list[dict[str, Any]]:
    return read_events(tmp_path / "logs" / "events.jsonl")


def game_pid(evts: list[dict[str, Any]]) -> int:
    (started,) = [e for e in events_of(evts, "mcp_server_started") if e["server"] == GAME_SERVER_NAME]
    return int(started["pid"])


# -- plain pieces ------------------------------------------------------------------------------------


def test_game_server_config_is_a_per_episode_stdio_server_with_read_only_tools_for_the_agent() -> None:
    config = game_server_config(Path("/g/zork1.z3"), 7)
    assert config.name == GAME_SERVER_NAME == "zork"
    assert config.type == "stdio"
    assert config.lifecycle == "per_episode"
    assert config.command == sys.executable
    assert config.args == ("-m", "zorkmcp.game.server", "--game=/g/zork1.z3", "--seed", "7")
    assert config.tools == GAME_TOOLS_FOR_AGENT == ("memory", "get_map", "inventory")
    assert "--seed" not in game_server_config(Path("g.z3"), None).args


def test_summary_json_has_exactly_the_fourteen_keys() -> None:
    summary = EpisodeSummary(
        score=5, max_score=350, moves=4, turns=4, victory=False, game_over=False, tool_calls=1,
        model="m", scripted=True, stopped="interrupted", llm_requests=6, prompt_tokens=None,
        completion_tokens=None,
    )  # fmt: skip
    assert summary.as_json() == {
        "score": 5, "max_score": 350, "moves": 4, "turns": 4, "victory": False, "game_over": False,
        "tool_calls": 1, "llm_requests": 6, "prompt_tokens": None, "completion_tokens": None, "model": "m",
        "scripted": True, "stopped": "interrupted", "error": None,
    }  # fmt: skip
    assert summary.interrupted
    assert summary.tokens_in_out == "– / –"  # unknown, as zorkmcp eval's table shows it
    assert attrs.evolve(summary, prompt_tokens=1024, completion_tokens=0).tokens_in_out == "1,024 / 0"


def test_game_status_reads_the_status_tool_and_rejects_anything_else() -> None:
    status = GameStatus.from_content(
        {"game": "zork1", "location": "Kitchen", "score": 10, "max_score": 350, "moves": 5,
         "game_over": False, "victory": False, "died": False}
    )  # fmt: skip
    assert (status.location, status.score, status.max_score, status.victory) == ("Kitchen", 10, 350, False)
    with pytest.raises(GameError, match="status is not a JSON object"):
        GameStatus.from_content("Kitchen")
    with pytest.raises(GameError, match="status lacks 'victory'"):
        GameStatus.from_content(
            {"game": "z", "location": "x", "score": 0, "max_score": None, "moves": 0, "game_over": False}
        )


def test_default_walkthrough_follows_the_file_name_and_falls_back_to_zork1() -> None:
    zork1 = default_walkthrough(Path("/somewhere/zork1.z3"))
    assert zork1 is not None
    assert len(zork1) == 396
    assert default_walkthrough(Path("my-copy.z3")) == zork1


@pytest.mark.parametrize(
    ("base_url", "loaded"),
    [
        ("http://127.0.0.1:9/v1", []),  # a real model: no walkthrough, no Jericho in zorkmcp play's process
        (None, ["jericho", "numpy"]),  # no key, remote endpoint: the offline scripted model plays it
    ],
)
def test_the_walkthrough_is_read_only_for_the_offline_scripted_model(
    base_url: str | None, loaded: list[str]
) -> None:
    statement = (
        "import os; "
        "[os.environ.pop(name, None) "
        "for name in ('OPENROUTER_API_KEY', 'OPENAI_API_KEY', 'OPENAI_BASE_URL')]; "
        "from zorkmcp.config import Settings; from zorkmcp.game import PACKAGED_GAME; "
        "from zorkmcp.orchestrator import Orchestrator; "
        f"Orchestrator(Settings(), PACKAGED_GAME, base_url={base_url!r}, mcp_enabled=False)._bridge()"
    )
    assert modules_loaded_by(statement, ("jericho", "numpy")) == loaded


# -- Requirement 9.3 / 9.4: MCP on and off -----------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("{ not json", r"mcp_config\.json"),
        (None, r"mcp_config\.json"),
        ({"mcpServers": {"zork": {"command": "python3"}}}, "reserves for the game server"),
    ],
)
def test_a_bad_mcp_config_is_an_mcp_error_before_anything_starts(
    tmp_path: Path, config: Any, message: str
) -> None:
    orchestrator = Orchestrator(
        project(tmp_path, mcp_config=config), game_path=zork1_path(), seed=12, max_turns=1
    )
    with pytest.raises(ConfigError, match=message) as caught:
        orchestrator.run()
    assert isinstance(caught.value, MCPError)  # Requirement 9.3
    assert not (tmp_path / "logs").exists()  # nothing started, nothing logged


def test_mcp_off_reads_no_config_starts_only_the_game_and_offers_no_tools(tmp_path: Path) -> None:
    # Requirement 9.4: the broken mcp_config.json is not even read.
    settings = project(tmp_path, mcp_config="{ broken", enabled=False)
    orchestrator = Orchestrator(settings, game_path=zork1_path(), seed=12, max_turns=3)
    assert [s.name for s in orchestrator.servers().servers] == [GAME_SERVER_NAME]
    summary = orchestrator.run()
    assert (summary.turns, summary.tool_calls, summary.stopped) == (3, 0, "turn limit")
    evts = events(tmp_path)
    assert {e["server"] for e in events_of(evts, "mcp_server_started")} == {GAME_SERVER_NAME}
    assert events_of(evts, "mcp_tool_call") == []
    assert [e["tool_calls_count"] for e in events_of(evts, "mcp_session_complete")] == [0, 0, 0]
    assert events_of(evts, "episode_start")[0]["mcp_enabled"] is False


def test_a_server_that_does_not_start_on_turn_one_raises_and_stops_the_game_server(tmp_path: Path) -> None:
    crash = "import sys; sys.stderr.write('cannot think today'); sys.exit(3)"
    config = {"mcpServers": {"thinking": {"command": sys.executable, "args": ["-c", crash]}}}
    orchestrator = Orchestrator(
        project(tmp_path, mcp_config=config), game_path=zork1_path(), seed=12, max_turns=5
    )
    with pytest.raises(MCPServerStartupError, match="thinking") as caught:
        orchestrator.run()
    assert "cannot think today" in "\n".join(caught.value.stderr_tail)
    evts = events(tmp_path)  # written although the episode failed
    assert events_of(evts, "mcp_server_start_failed")[0]["server"] == "thinking"
    assert not is_running(game_pid(evts), None)
    (complete,) = events_of(evts, "episode_complete")  # every way out says how the episode ended
    assert (complete["stopped"], complete["turns"]) == ("error", 0)
    assert complete["error"].startswith("MCPServerStartupError: Failed to start MCP server 'thinking'")
    assert orchestrator.summary is not None
    assert orchestrator.summary.stopped == "error"


# -- Requirement 9.1 / 9.2: the agent gets the MCP manager's tools -----------------------------------


async def test_the_agent_is_offered_the_read_only_game_tools_and_the_reasoning_servers(
    tmp_path: Path, llm_server: LLMServer
) -> None:
    llm_server.script(
        tool_call_reply(tool_call("zork__memory")),
        agent_reply("open mailbox"),
        tool_call_reply(tool_call("thinking__think", {"thought": "read it", "thoughtNumber": 1,
                                                      "totalThoughts": 1, "nextThoughtNeeded": False})),
        agent_reply("take leaflet", new_objective="read the leaflet"),
    )  # fmt: skip
    orchestrator = Orchestrator(
        project(tmp_path, mcp_config=INPROCESS_THINKING),
        game_path=zork1_path(),
        seed=12,
        max_turns=2,
        base_url=llm_server.base_url,
        model="test-model",
    )
    # Bridge blocks; from async code it runs in a worker thread (bridge/_bridge.py docstring).
    summary = await trio.to_thread.run_sync(orchestrator.run)

    assert llm_server.remaining == 0
    offered = [
        sorted(t["function"]["name"] for t in body["tools"]) for body in llm_server.bodies if "tools" in body
    ]
    assert offered[0] == ["thinking__think", "zork__get_map", "zork__inventory", "zork__memory"]
    assert all(names == offered[0] for names in offered)  # never play_action nor status
    memory_result = next(m for m in llm_server.requests[1].messages if m["role"] == "tool")
    assert "Current State:\\n- Location: West of House" in memory_result["content"]
    turn2_prompt = llm_server.requests[2].messages[-1]["content"]
    assert "Location: West of House" in turn2_prompt
    assert "open mailbox" in turn2_prompt  # the recent memories

    assert (summary.turns, summary.tool_calls, summary.scripted, summary.model) == (2, 2, False, "test-model")
    # four answers, each reporting the loopback server's usage (11 prompt and 7 completion tokens)
    assert (summary.llm_requests, summary.prompt_tokens, summary.completion_tokens) == (4, 44, 28)
    assert [r.tools_used for r in orchestrator.records] == [("zork.memory",), ("thinking.think",)]
    assert [r.action for r in orchestrator.records] == ["open mailbox", "take leaflet"]
    assert orchestrator.records[1].new_objective == "read the leaflet"
    evts = events(tmp_path)
    assert [e["tool_name"] for e in events_of(evts, "mcp_tool_call")] == ["zork.memory", "thinking.think"]
    assert [e["score"] for e in events_of(evts, "turn_complete")] == [0, 0]


# -- how episodes end --------------------------------------------------------------------------------


def test_the_game_decides_game_over_and_it_is_not_a_victory(tmp_path: Path) -> None:
    seen: list[TurnRecord] = []
    orchestrator = Orchestrator(
        project(tmp_path, enabled=False),
        game_path=zork1_path(),
        seed=12,
        max_turns=100,
        walkthrough=THREE_DEATHS,
        on_turn=seen.append,
    )
    summary = orchestrator.run()
    assert summary.stopped == "game over"
    assert (summary.game_over, summary.victory, summary.turns) == (True, False, len(THREE_DEATHS))
    assert summary.max_score == 350
    assert [r.game_over for r in seen] == [False] * (len(THREE_DEATHS) - 1) + [True]
    assert seen[-1].observation.endswith("GAME OVER")
    assert events_of(events(tmp_path), "episode_complete")[0]["stopped"] == "game over"


def test_ctrl_c_between_turns_returns_a_summary_and_stops_the_servers(tmp_path: Path) -> None:
    def interrupt_after_two(record: TurnRecord) -> None:
        if record.turn == 2:
            raise KeyboardInterrupt

    orchestrator = Orchestrator(
        project(tmp_path, enabled=False),
        game_path=zork1_path(),
        seed=12,
        max_turns=10,
        on_turn=interrupt_after_two,
    )
    summary = orchestrator.run()
    assert summary.interrupted
    assert (summary.turns, summary.moves, summary.location) == (2, 2, "Forest Path")
    evts = events(tmp_path)
    assert not is_running(game_pid(evts), None)
    assert [e["server"] for e in events_of(evts, "mcp_server_stopped")] == [GAME_SERVER_NAME]
    (complete,) = events_of(evts, "episode_complete")
    assert (complete["stopped"], complete["turns"]) == ("interrupted", 2)
    episode_log = (tmp_path / "logs" / "episode.log").read_text()
    assert "[INFO] Turn 2: Game: > N -> Forest Path, score 0, moves 2" in episode_log
    assert "[INFO] Episode complete (interrupted)" in episode_log
    assert json.loads(json.dumps(summary.as_json()))["turns"] == 2
