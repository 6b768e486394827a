"""A recorded episode that an endpoint ended by refusing tools replays to the same end (``--record`` /
``--replay``): the cassette keeps the ``ModelCompatibilityError`` as it keeps a model's other errors.

Real ``zorkmcp play`` (in process), real Zork, the real in-process think server and the game server,
the loopback chat-completions server in a thread of its own; the replay calls no model.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
from llm_server import agent_reply, json_reply
from play_support import events_of, read_events
from test_ctxfollow_cassette import episode, exchanges, play, record

from zorkmcp.llm import ReplayModel

if TYPE_CHECKING:
    from pathlib import Path

OLLAMA_NO_TOOLS = {"error": "registry.ollama.ai/library/gemma3:27b does not support tools"}
REFUSED = (
    "ModelCompatibilityError: the endpoint refused tools for model 'gpt-4o' (registry.ollama.ai/library/"
    "gemma3:27b does not support tools): play without tools (--no-mcp, or [tool.zorkgpt.mcp] enabled = "
    "false), or use a model that can call tools"
)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)


def _end(folder: Path) -> dict[str, Any]:
    (complete,) = events_of(read_events(folder / "events.jsonl"), "episode_complete")
    return complete


def test_an_episode_an_endpoint_ended_by_refusing_tools_replays_to_the_same_error(tmp_path: Path) -> None:
    # The endpoint (a proxy that moved the model to another backend) refuses tools at turn 3. The
    # refusal was not recorded: the replay played 2 turns and said "end of cassette", exit 0, with a
    # warning that the recording was cut short (Ctrl-C, an error or a crash), where the episode had
    # ended on the ModelCompatibilityError with exit 2.
    cassette = tmp_path / "c.jsonl"
    code, asked = record(
        tmp_path / "rec",
        cassette,
        agent_reply("north"),
        agent_reply("east"),
        json_reply(OLLAMA_NO_TOOLS, status=400),
        turns=5,
    )
    assert (code, asked) == (2, 3)
    last = exchanges(cassette)[-1]
    assert sorted(last) == ["error", "request"]
    assert last["error"] == {
        "type": "ModelCompatibilityError",
        "message": REFUSED.removeprefix("ModelCompatibilityError: "),
        "status": 400,
        "provider_message": "registry.ollama.ai/library/gemma3:27b does not support tools",
        "body_excerpt": json.dumps(OLLAMA_NO_TOOLS),
    }
    replay = ReplayModel(cassette)
    assert (replay.turns, replay.left_out, replay.turn_limit) == (3, 0, 3)

    code = play(tmp_path / "replay", "--replay", str(cassette))
    assert code == 2
    assert episode(tmp_path / "replay") == episode(tmp_path / "rec")
    end = _end(tmp_path / "replay")
    assert (end["stopped"], end["turns"], end["turn"], end["error"]) == ("error", 2, 3, REFUSED)


def test_an_endpoint_that_refuses_tools_at_the_first_request_still_records_nothing(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    code, asked = record(tmp_path / "rec", cassette, json_reply(OLLAMA_NO_TOOLS, status=400), turns=2)
    assert (code, asked) == (2, 1)
    assert not cassette.exists()
    assert (_end(tmp_path / "rec")["stopped"], _end(tmp_path / "rec")["error"]) == ("error", REFUSED)
