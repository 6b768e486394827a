"""What a developer reusing the engine as a library does wrong, and what the library then says.

An ``Orchestrator`` driven from an async host (its ``run()`` called inside ``asyncio.run``), its
arguments given as a program writes them (``game_path="zork1.z3"``, ``max_turns="5"``), a
walkthrough given as one str, and a ``ZorkAgent`` built or called with the wrong kind of argument.
Each is refused before anything starts, in one line that says what to pass instead (properties
39–40 for the event loop; Requirement 9 for the orchestrator). Real parts: real Zork through the
game server, the offline scripted model, the loopback chat-completions server.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import TYPE_CHECKING, Any

import attrs
import pytest
import trio
from play_support import zork1_path

import bridge
from zorkmcp import (
    McpConfig,
    McpManager,
    McpSettings,
    ScriptedModel,
    ServerConfig,
    ZorkAgent,
    open_llm_client,
)
from zorkmcp.config import FilesSettings, Settings
from zorkmcp.orchestrator import Orchestrator

if TYPE_CHECKING:
    from pathlib import Path

    from llm_server import LLMServer

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the game server runs on Linux")

WALK = ["open mailbox", "north"]


@pytest.fixture(autouse=True)
def _no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """No API key: the offline scripted model plays the walkthrough."""
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)


def walked(tmp_path: Path, **options: Any) -> Orchestrator:
    """An Orchestrator on the scripted model and real Zork, writing its logs under ``tmp_path``."""
    files = FilesSettings(
        json_log_file=str(tmp_path / "events.jsonl"), episode_log_file=str(tmp_path / "episode.log")
    )
    arguments: dict[str, Any] = {"game_path": zork1_path(), "seed": 12, "max_turns": 2, "walkthrough": WALK}
    arguments.update(options)
    return Orchestrator(attrs.evolve(Settings(), files=files), mcp_enabled=False, **arguments)


# --- Orchestrator.run() from an async host ----------------------------------------------------------


def test_an_orchestrator_run_inside_asyncio_refuses_before_anything_and_can_still_play(
    tmp_path: Path,
) -> None:
    # before: the Bridge inside refused, naming `bridge.Bridge`; the episode had already "started":
    # `stopped: error` written to the logs, a summary set, and the Orchestrator spent (a second run(),
    # from a worker thread as the message said, was "this Orchestrator has played its episode")
    orchestrator = walked(tmp_path)

    async def host() -> str:
        with pytest.raises(RuntimeError) as refused:
            orchestrator.run()
        assert str(refused.value) == (
            "Orchestrator.run() blocks and starts its own trio loop, but it was called while an asyncio "
            "event loop is running in this thread. Call it from a worker thread: await "
            "asyncio.to_thread(orchestrator.run), or trio.to_thread.run_sync(orchestrator.run)"
        )
        assert orchestrator.summary is None
        assert not (tmp_path / "events.jsonl").exists()
        summary = await asyncio.to_thread(orchestrator.run)
        return summary.stopped

    assert asyncio.run(host()) == "turn limit"
    assert [record.action for record in orchestrator.records] == ["open mailbox", "north"]


def test_an_orchestrator_run_inside_trio_refuses_too(tmp_path: Path) -> None:
    orchestrator = walked(tmp_path)

    async def host() -> None:
        with pytest.raises(
            RuntimeError, match=r"^Orchestrator\.run\(\) blocks .* a trio event loop is running"
        ):
            orchestrator.run()
        assert orchestrator.summary is None

    trio.run(host)


# --- Orchestrator arguments -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        (
            {"settings": "pyproject.toml"},
            TypeError,
            "Orchestrator: settings must be a zorkmcp.config.Settings, got str (read a file with "
            "Settings.from_pyproject(path), or pass Settings() for the defaults)",
        ),
        ({"game_path": 3}, TypeError, "Orchestrator: expected a path (a str or pathlib.Path), got int"),
        ({"seed": "12"}, TypeError, "Orchestrator: seed must be an int or None, got str"),
        ({"max_turns": "5"}, TypeError, "Orchestrator: max_turns must be an int or None, got str"),
        ({"max_turns": -1}, ValueError, "Orchestrator: max_turns must be from 0 to 1000000, got -1"),
        ({"mcp_enabled": "no"}, TypeError, "Orchestrator: mcp_enabled must be a bool or None, got str"),
        ({"model": 4}, TypeError, "Orchestrator: model must be a str or None, got int"),
        (
            {"walkthrough": "north"},
            TypeError,
            "Orchestrator: walkthrough must be a list of commands, got a str: write ['north']",
        ),
        ({"on_turn": "print"}, TypeError, "Orchestrator: on_turn must be a function or None, got str"),
        (
            {"recorder": None},
            TypeError,
            "Orchestrator: recorder must be a zorkmcp.EventRecorder, got NoneType",
        ),
    ],
)
def test_an_orchestrator_refuses_arguments_of_the_wrong_kind_when_built(
    options: dict[str, Any], error: type[Exception], message: str
) -> None:
    # before: accepted, then an AttributeError or TypeError traceback from deep inside run()
    # ('str' object has no attribute 'mcp', '<' not supported between 'int' and 'str'), or, for a
    # walkthrough given as one str, an episode played letter by letter ("n", "o", "r", ...)
    arguments: dict[str, Any] = {"settings": Settings(), "game_path": zork1_path()}
    arguments.update(options)
    with pytest.raises(error) as refused:
        Orchestrator(**arguments)
    assert str(refused.value) == message


def test_an_orchestrator_takes_its_paths_as_str(tmp_path: Path) -> None:
    # before: game_path="…/zork1.z3" was AttributeError: 'str' object has no attribute 'stem', and
    # record="run.jsonl" AttributeError: 'str' object has no attribute 'parent'
    cassette = tmp_path / "run.jsonl"
    orchestrator = walked(tmp_path, game_path=str(zork1_path()), record=str(cassette))
    assert orchestrator.game_path == zork1_path()
    assert orchestrator.run().stopped == "turn limit"
    header = json.loads(cassette.read_text(encoding="utf-8").splitlines()[0])
    assert header["game"] == "zork1.z3"
    replayed = walked(tmp_path, replay=str(cassette), walkthrough=None)
    assert replayed.run().stopped == "turn limit"
    assert [record.action for record in replayed.records] == ["open mailbox", "north"]


def test_a_bridge_walkthrough_given_as_one_str_is_refused() -> None:
    # before: Bridge(walkthrough="north") played "n", then "o", then "r"...
    with pytest.raises(TypeError) as refused:
        bridge.Bridge(Settings(), walkthrough="north", log_files=None)
    assert str(refused.value) == "walkthrough must be a list of commands, got a str: write ['north']"
    with pytest.raises(TypeError) as refused:
        bridge.Bridge(Settings(), walkthrough=["north", 3], log_files=None)  # type: ignore[list-item]
    assert str(refused.value) == (
        "walkthrough must be a list of commands (str), such as ['north', 'open mailbox'], got ['north', 3]"
    )


# --- ZorkAgent --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"settings": Settings()},
            "ZorkAgent: settings must be a zorkmcp.McpSettings (pass its .mcp, the [tool.zorkgpt.mcp] "
            "settings), got Settings",
        ),
        (
            {"model": "gpt-4o-mini"},
            "ZorkAgent: model must be a chat model (anything with model, scripted and async "
            "complete(request), such as what zorkmcp.open_llm_client yields), got str",
        ),
        (
            {"mcp": McpConfig(servers=())},
            "ZorkAgent: mcp must be a zorkmcp.McpManager or None, got McpConfig (build one with "
            "McpManager(McpConfig(...), McpSettings(...)))",
        ),
        (
            {"sampling": {"temperature": 0}},
            "ZorkAgent: sampling must be a zorkmcp.config.SamplingSettings, got dict",
        ),
        ({"system_prompt": ""}, "ZorkAgent: system_prompt must be a non-blank str, got ''"),
    ],
)
def test_a_zork_agent_refuses_arguments_of_the_wrong_kind_when_built(
    options: dict[str, Any], message: str
) -> None:
    # before: accepted; the first turn then failed with AttributeError: 'Settings' object has no
    # attribute 'max_tool_iterations' (or 'str' object has no attribute 'model')
    arguments: dict[str, Any] = {"model": ScriptedModel(WALK), "settings": McpSettings()}
    arguments.update(options)
    with pytest.raises(TypeError) as refused:
        ZorkAgent(**arguments)
    assert str(refused.value) == message


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            {"game_state_text": "West of House", "relevant_memories": ["a lamp", "a sword"]},
            "relevant_memories must be a str or None (join a list of notes into one str), got list",
        ),
        ({"game_state_text": 123}, "game_state_text must be a str, got int"),
        ({"game_state_text": "West of House", "turn": -1}, "turn must be an int >= 0 or None, got -1"),
        (
            {"game_state_text": "West of House", "episode": "per_episode"},
            "episode must be the EpisodeServers that `async with manager.open_episode() as episode:` "
            "yields, or None, got str",
        ),
    ],
)
async def test_a_zork_agent_turn_with_arguments_of_the_wrong_kind_sends_nothing(
    llm_server: LLMServer, call: dict[str, Any], message: str
) -> None:
    # before: a list of memories went into the prompt as "['a lamp', 'a sword']" and an int game
    # state as a JSON number, both sent to the model without a word
    servers = McpConfig(
        servers=(
            ServerConfig(name="thinking", command=sys.executable, args=("-m", "zorkmcp.servers.thinking")),
        )
    )
    async with open_llm_client(base_url=llm_server.base_url, model="m", api_key="k") as model:
        agent = ZorkAgent(model, McpSettings(), mcp=McpManager(servers, McpSettings()))
        with pytest.raises(TypeError) as refused:
            await agent.generate_action(**call)
    assert str(refused.value) == message
    assert (llm_server.requests, agent.turns) == ([], 0)
