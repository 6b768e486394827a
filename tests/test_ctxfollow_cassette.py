"""A recorded episode in which the model failed replays the same (``--record`` / ``--replay``).

The cassette keeps the model's errors too, beside its answers: a request that did not fit the
model's context window (which the engine answers by asking for the final answer without the turn's
tool calls) and the error that ended an episode. A replay raises each at the same request, so the
engine goes on as it did, or the episode ends with the same error. Older cassettes (answers only)
still load.

Real ``zorkmcp play`` (in process), real Zork, the real in-process think server and the game server,
the loopback chat-completions server in a thread of its own; the replay calls no model.
"""

from __future__ import annotations

import io
import json
from typing import TYPE_CHECKING, Any

import pytest
from llm_server import agent_reply, json_reply, tool_call, tool_call_reply
from play_support import INPROCESS_THINKING, events_of, read_events, write_project
from play_support import zork1_path as zork1
from rich.console import Console
from test_bridge import llm_in_thread
from test_longgame_context import OPENAI_TOO_LONG

from zorkmcp.cli import main
from zorkmcp.errors import CassetteError
from zorkmcp.llm import ReplayModel

if TYPE_CHECKING:
    from pathlib import Path

LLAMA_CPP_TOO_LONG = {
    "error": {
        "code": 400,
        "message": "the request exceeds the available context size, try increasing it",
        "type": "exceed_context_size_error",
    }
}
NO_SUCH_MODEL = {"error": {"message": "The model `gpt-4o` does not exist", "code": "model_not_found"}}


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)


def play(folder: Path, *extra: str, base_url: str = "http://127.0.0.1:9/v1") -> int:
    """``zorkmcp play`` with the in-process think server; returns the exit status."""
    logs = {"json_log_file": str(folder / "events.jsonl"), "episode_log_file": str(folder / "episode.log")}
    pyproject = write_project(folder, mcp_config=INPROCESS_THINKING, files=logs)
    table = f'\n[tool.zorkgpt.llm]\nclient_base_url = "{base_url}"\nagent_model = "gpt-4o"\n'
    pyproject.write_text(pyproject.read_text() + table)
    argv = ["play", "--game", str(zork1()), "--pyproject", str(pyproject), "--quiet", *extra]
    return main(
        argv, console=Console(file=io.StringIO(), width=120), err=Console(file=io.StringIO(), width=400)
    )


def record(folder: Path, cassette: Path, *steps: Any, turns: int) -> tuple[int, int]:
    """Play ``turns`` turns against the scripted loopback model, recording ``cassette``; the exit status
    and the requests the model got."""
    with llm_in_thread(*steps) as llm:
        code = play(folder, "--turns", str(turns), "--record", str(cassette), base_url=llm.base_url)
        return code, len(llm.requests)


_TIMELESS = {"episode_id", "timestamp", "time", "duration_ms", "duration", "elapsed"}


def episode(folder: Path) -> list[tuple[str, dict[str, Any]]]:
    """What the episode did, as its event log says: each turn, each request too large, and its end."""
    kept = ("turn_complete", "llm_context_exceeded", "episode_complete")
    shown = []
    for event in read_events(folder / "events.jsonl"):
        if event["event_type"] not in kept:
            continue
        fields = {k: v for k, v in event.items() if k not in _TIMELESS and not k.endswith("_seconds")}
        fields.pop("replayed_from", None)
        if event["event_type"] == "turn_complete":
            fields = {k: fields[k] for k in ("turn", "action", "score", "moves", "tool_calls")}
        shown.append((event["event_type"], fields))
    return shown


def exchanges(cassette: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in cassette.read_text().splitlines()[1:]]


def test_a_turn_whose_request_outgrew_the_context_replays_the_same(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    code, asked = record(
        tmp_path / "rec",
        cassette,
        agent_reply("north"),
        tool_call_reply(tool_call("zork__memory", {})),  # turn 2 calls a tool; its history grows …
        json_reply(OPENAI_TOO_LONG, status=400),  # … past the model's context
        agent_reply("east"),  # the answer, asked for without the turn's tool calls
        agent_reply("south"),
        turns=3,
    )
    assert (code, asked) == (0, 5)
    lines = exchanges(cassette)
    assert [sorted(line) for line in lines] == [
        ["request", "response"],
        ["request", "response"],
        ["error", "request"],
        ["request", "response"],
        ["request", "response"],
    ]
    error = lines[2]["error"]
    assert error["type"] == "LLMHTTPError"
    assert error["status"] == 400
    assert error["provider_message"] == OPENAI_TOO_LONG["error"]["message"]
    assert error["message"].endswith(f"answered HTTP 400 Bad Request: {OPENAI_TOO_LONG['error']['message']}")
    assert json.loads(error["body_excerpt"]) == OPENAI_TOO_LONG
    assert [m["role"] for m in lines[2]["request"]["messages"]] == ["system", "user", "assistant", "tool"]
    assert ReplayModel(cassette).turns == 3

    code = play(tmp_path / "replay", "--replay", str(cassette))
    assert code == 0
    recorded, replayed = episode(tmp_path / "rec"), episode(tmp_path / "replay")
    assert replayed == recorded
    assert [(kind, fields.get("action")) for kind, fields in replayed] == [
        ("turn_complete", "north"),
        ("llm_context_exceeded", None),
        ("turn_complete", "east"),
        ("turn_complete", "south"),
        ("episode_complete", None),
    ]
    complete = replayed[-1][1]
    assert (complete["stopped"], complete["turns"], complete["error"], complete["llm_requests"]) == (
        "turn limit",
        3,
        None,
        4,
    )


def test_a_first_request_too_large_for_its_tools_is_recorded_with_the_answer_after_it(tmp_path: Path) -> None:
    """llama.cpp with a small -c: the first request fails before the model ever answered; the error is
    held back and written with the answer that follows, so the cassette replays from its first line."""
    cassette = tmp_path / "c.jsonl"
    code, asked = record(
        tmp_path / "rec",
        cassette,
        json_reply(LLAMA_CPP_TOO_LONG, status=400),
        agent_reply("north"),
        agent_reply("east"),
        turns=2,
    )
    assert (code, asked) == (0, 3)
    lines = exchanges(cassette)
    assert [("error" in line, len(line["request"]["tools"] or [])) for line in lines] == [
        (True, 4),
        (False, 0),
        (False, 4),
    ]
    assert lines[0]["error"]["provider_message"] == LLAMA_CPP_TOO_LONG["error"]["message"]

    assert play(tmp_path / "replay", "--replay", str(cassette)) == 0
    assert episode(tmp_path / "replay") == episode(tmp_path / "rec")
    (exceeded,) = events_of(read_events(tmp_path / "replay" / "events.jsonl"), "llm_context_exceeded")
    assert (exceeded["turn"], exceeded["dropped_messages"], exceeded["dropped_tools"]) == (1, 0, 4)


def test_a_replay_of_an_episode_that_ended_on_a_model_error_ends_on_the_same_error(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    code, asked = record(
        tmp_path / "rec",
        cassette,
        agent_reply("north"),
        agent_reply("east"),
        json_reply(NO_SUCH_MODEL, status=404),
        turns=5,
    )
    assert (code, asked) == (1, 3)
    assert [sorted(line) for line in exchanges(cassette)][-1] == ["error", "request"]
    replay = ReplayModel(cassette)
    assert (replay.turns, replay.left_out, replay.turn_limit) == (3, 0, 3)

    code = play(tmp_path / "replay", "--replay", str(cassette))
    assert code == 1
    recorded, replayed = episode(tmp_path / "rec"), episode(tmp_path / "replay")
    assert replayed == recorded
    complete = replayed[-1][1]
    assert (complete["stopped"], complete["turns"]) == ("error", 2)
    assert complete["error"].startswith("LLMHTTPError: POST http://127.0.0.1:")
    assert (
        "/chat/completions answered HTTP 404 Not Found: The model `gpt-4o` does not exist"
        in complete["error"]
    )


def test_a_cassette_cut_after_an_error_the_engine_went_on_from_replays_the_turns_before(
    tmp_path: Path,
) -> None:
    """A recording stopped (Ctrl-C, a crash) after a request too large, before the final answer the
    engine asked for next: that turn is not whole, so the replay plays the turn before it."""
    cassette = tmp_path / "c.jsonl"
    code, _ = record(
        tmp_path / "rec",
        cassette,
        agent_reply("north"),
        tool_call_reply(tool_call("zork__memory", {})),
        json_reply(OPENAI_TOO_LONG, status=400),
        agent_reply("east"),
        turns=2,
    )
    assert code == 0
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(cassette.read_text().splitlines()[:4]) + "\n")  # the header and 3 exchanges
    replay = ReplayModel(cut)
    assert (replay.turns, replay.left_out) == (1, 2)


@pytest.mark.parametrize(
    ("error", "why"),
    [
        (
            {"type": "KeyError", "message": "x"},
            'its error\'s type is "KeyError", not one of LLMError, LLMHTTPError, LLMResponseError, '
            "LLMProviderError, LLMTransportError, ModelCompatibilityError",
        ),
        ({"type": "LLMHTTPError", "message": 5}, "its error's message is 5, not text"),
        (
            {"type": "LLMHTTPError", "message": "m", "status": "400"},
            'its error\'s status is "400", not a number or null',
        ),
        (
            {"type": "LLMHTTPError", "message": "m", "body_excerpt": []},
            "its error's body_excerpt is [], not text or null",
        ),
        ("boom", 'its error is "boom", not an object'),
    ],
)
def test_a_recorded_error_that_cannot_be_raised_again_is_named_when_the_cassette_loads(
    tmp_path: Path, error: Any, why: str
) -> None:
    header = {"format": "zorkmcp-cassette", "version": 1, "model": "gpt-4o"}
    line = {"request": {"messages": [{"role": "user", "content": "West of House"}]}, "error": error}
    cassette = tmp_path / "c.jsonl"
    cassette.write_text(json.dumps(header) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(CassetteError) as caught:
        ReplayModel(cassette)
    assert str(caught.value) == (
        f"{cassette}: line 2 is not a recorded exchange ({why}); mend that line, or record the cassette again"
    )


def test_a_line_with_both_a_response_and_an_error_is_named(tmp_path: Path) -> None:
    header = {"format": "zorkmcp-cassette", "version": 1, "model": "gpt-4o"}
    line = {
        "request": {"messages": [{"role": "user", "content": "West of House"}]},
        "response": {"content": "{}"},
        "error": {"type": "LLMHTTPError", "message": "m"},
    }
    cassette = tmp_path / "c.jsonl"
    cassette.write_text(json.dumps(header) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(
        CassetteError, match=r"line 2 is not a recorded exchange \(it has both a response and "
    ):
        ReplayModel(cassette)
