"""A Bridge and an Orchestrator are one episode each (Requirement 9): what a host that reuses them gets.

Entering a closed ``bridge.Bridge`` again, two threads entering one at once, an ``Orchestrator`` whose
``run()`` is called twice, and the episode id a host gives through its recorder. Real parts: the
offline scripted model, the repository's think server in process, real Zork through Jericho.
"""

from __future__ import annotations

import sys
import threading
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import pytest
import trio
from play_support import events_of, read_events, write_project, zork1_path
from test_bridge import GUARD
from test_bridge_probe import guarded

import bridge
from zorkmcp.config import McpConfig, ServerConfig, Settings
from zorkmcp.llm import ScriptedModel
from zorkmcp.observability import EventRecorder
from zorkmcp.orchestrator import Orchestrator

if TYPE_CHECKING:
    from collections.abc import AsyncIterator
    from pathlib import Path

    from zorkmcp.llm import ChatModel

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="as test_bridge_probe")

WALK = ["north", "south", "east"]
THINK = ServerConfig(
    name="think", type="inprocess", module="zorkmcp.servers.thinking:create_server", lifecycle="per_episode"
)
CLOSED = (
    "this Bridge is closed: its episode ended when its with block was left (or close() was called); "
    "create a new Bridge for a new episode"
)
THOUGHT = {"thought": "lamp", "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": False}


def scripted_bridge(**options: Any) -> bridge.Bridge:
    return bridge.Bridge(Settings(), log_files=None, walkthrough=WALK, **options)


def test_a_bridge_whose_block_was_left_refuses_to_be_entered_again() -> None:
    """It used to open again with its closing mark still set: every call of the new block failed
    with "the Bridge was closed (its with block left in another thread) while this call ran"."""
    episode = scripted_bridge(servers=McpConfig(servers=(THINK,)))
    with episode:
        assert episode.get_action("West of House.")["action"] == "north"
        assert not episode.call_tool("think.think", THOUGHT).is_error

    def enter_again() -> None:
        with pytest.raises(RuntimeError) as raised, episode:
            pass
        assert str(raised.value) == CLOSED

    guarded(enter_again)
    assert episode.setup.turn == 1
    assert [t.name for t in threading.enumerate() if t.name == "zorkmcp-bridge"] == []  # no loop started


def test_a_bridge_closed_with_close_refuses_to_be_entered_again() -> None:
    episode = scripted_bridge()
    episode.close()  # never opened: it may still be
    episode.__enter__()
    assert episode.get_action("West of House.")["action"] == "north"
    episode.close()
    with pytest.raises(RuntimeError) as raised:
        episode.__enter__()
    assert str(raised.value) == CLOSED
    episode.close()  # closing a closed Bridge still does nothing


def test_a_bridge_that_failed_to_open_may_be_entered_until_it_was_open() -> None:
    opened: list[int] = []

    @asynccontextmanager
    async def flaky() -> AsyncIterator[ChatModel]:
        opened.append(len(opened) + 1)
        if len(opened) == 1:
            raise ConnectionRefusedError("the endpoint is not up yet")
        yield ScriptedModel(WALK)

    episode = bridge.Bridge(Settings(), chat_model=flaky, log_files=None)
    with pytest.raises(ConnectionRefusedError, match=r"^the endpoint is not up yet$"):
        episode.__enter__()
    with episode:  # nothing was open: it opens now
        assert episode.get_action("West of House.")["action"] == "north"
    with pytest.raises(RuntimeError) as raised, episode:
        pass
    assert str(raised.value) == CLOSED
    assert opened == [1, 2]


def test_two_threads_entering_one_bridge_at_once_open_it_once() -> None:
    """Both used to open it: two loop threads and two models, the first one never closed."""
    entering, release = threading.Event(), threading.Event()
    opened: list[str] = []

    @asynccontextmanager
    async def slow() -> AsyncIterator[ChatModel]:
        opened.append(threading.current_thread().name)
        if len(opened) == 1:  # the first entry waits here, its servers and model half started
            entering.set()
            await trio.to_thread.run_sync(release.wait)
        yield ScriptedModel(WALK)

    episode = bridge.Bridge(Settings(), chat_model=slow, log_files=None)
    first: list[BaseException] = []

    def enter() -> None:
        try:
            episode.__enter__()
        except BaseException as exc:  # reported in the test's thread
            first.append(exc)

    def body() -> None:
        worker = threading.Thread(target=enter)
        worker.start()
        assert entering.wait(GUARD)
        try:
            with pytest.raises(RuntimeError) as raised:
                episode.__enter__()
            assert str(raised.value) == (
                "this Bridge is already open: enter it once (a new Bridge is a new episode)"
            )
        finally:
            release.set()
            worker.join(GUARD)
        assert first == []
        assert episode.get_action("West of House.")["action"] == "north"
        episode.close()

    guarded(body)
    assert opened == ["zorkmcp-bridge"]


def test_the_episode_id_is_the_one_the_events_carry() -> None:
    """A recorder that already names its episode kept its id in the events while the Bridge (and an
    Orchestrator's summary) made up another; an ``episode_id`` given lost to the recorder's."""
    named = EventRecorder(context={"episode_id": "run-7/episode-1"})
    with scripted_bridge(recorder=named) as episode:
        episode.get_action("West of House.")
    assert episode.setup.episode_id == "run-7/episode-1"
    assert {event["episode_id"] for event in named.recent} == {"run-7/episode-1"}

    given = EventRecorder(context={"episode_id": "the recorder's"})
    with scripted_bridge(recorder=given, episode_id="the host's") as episode:
        episode.get_action("West of House.")
    assert episode.setup.episode_id == "the host's"
    assert {event["episode_id"] for event in given.recent} == {"the host's"}


def test_episode_id_must_be_a_str() -> None:
    with pytest.raises(TypeError) as raised:
        scripted_bridge(episode_id=7)
    assert str(raised.value) == "episode_id must be a str or None, got int"


def orchestrator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **options: Any) -> Orchestrator:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)
    files = {
        "json_log_file": str(tmp_path / "logs" / "events.jsonl"),
        "episode_log_file": str(tmp_path / "logs" / "episode.log"),
    }
    settings = Settings.from_pyproject(write_project(tmp_path, files=files, enabled=False))
    return Orchestrator(settings, game_path=zork1_path(), seed=12, max_turns=2, walkthrough=WALK, **options)


def test_an_orchestrator_plays_one_episode(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A second ``run()`` used to play again into the same recorder: the second episode's events
    went to the log under the first one's id (and a replay's second run failed at turn 1 with a
    cassette already played to its end)."""
    played = orchestrator(tmp_path, monkeypatch)
    summary = played.run()
    with pytest.raises(RuntimeError) as raised:
        played.run()
    assert str(raised.value) == (
        "this Orchestrator has played its episode (run() was called before): an Orchestrator plays one "
        "episode; create a new Orchestrator for the next"
    )
    assert played.summary is summary
    events = read_events(tmp_path / "logs" / "events.jsonl")
    assert [(e["episode_id"], e["turns"]) for e in events_of(events, "episode_complete")] == [
        (summary.episode_id, 2)
    ]


def test_an_orchestrator_s_summary_names_the_recorders_episode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recorder = EventRecorder(context={"episode_id": "nightly-42"})
    summary = orchestrator(tmp_path, monkeypatch, recorder=recorder).run()
    events = read_events(tmp_path / "logs" / "events.jsonl")
    assert summary.episode_id == "nightly-42"
    assert {e["episode_id"] for e in events} == {"nightly-42"}
    assert [e["episode_id"] for e in events_of(events, "episode_complete")] == ["nightly-42"]
