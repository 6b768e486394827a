"""A turn trimmed for the tokens-per-minute limit tells the model that limit, not its context window.

When a turn's tool calls make a request larger than the account may send in a minute (OpenAI's 429
``Request too large for gpt-4o … on tokens per min (TPM)``), the engine asks for the final answer
with the turn's opening messages only, as for a context window exceeded. The user message of that
request says why the tool calls were left out: it used to say "no longer fit in your context window"
whatever the cause.

Real ``zorkmcp play`` (in process), real Zork, the in-process think server, the loopback
chat-completions server in a thread of its own; the episode is recorded and replayed offline too.
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
from test_ctxfollow_tpm import OPENAI_TPM, TOO_LARGE
from test_longgame_context import OPENAI_TOO_LONG

from zorkmcp.cli import main

if TYPE_CHECKING:
    from pathlib import Path

FINAL = "Please provide your final action now without calling any more tools."
PER_MINUTE_NOTE = (
    "Your tool calls of this turn and their results made the request larger than the endpoint accepts "
    "in a minute (its tokens-per-minute limit), so they were left out, and no tools are offered for the "
    "rest of this turn."
)
CONTEXT_NOTE = (
    "Your tool calls of this turn and their results no longer fit in your context window, so they were "
    "left out, and no tools are offered for the rest of this turn."
)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)


def play(folder: Path, *extra: str, base_url: str = "http://127.0.0.1:9/v1") -> int:
    """``zorkmcp play`` with the in-process think server, no prompt caching (plain user messages)."""
    logs = {"json_log_file": str(folder / "events.jsonl"), "episode_log_file": str(folder / "episode.log")}
    pyproject = write_project(folder, mcp_config=INPROCESS_THINKING, files=logs)
    table = (
        f'\n[tool.zorkgpt.llm]\nclient_base_url = "{base_url}"\nagent_model = "gpt-4o"\n'
        "cache_control = false\n"
    )
    pyproject.write_text(pyproject.read_text() + table)
    argv = ["play", "--game", str(zork1()), "--pyproject", str(pyproject), "--quiet", *extra]
    return main(
        argv, console=Console(file=io.StringIO(), width=120), err=Console(file=io.StringIO(), width=400)
    )


def turn_with_a_tool_call(too_large: dict[str, Any], status: int) -> list[Any]:
    return [
        tool_call_reply(tool_call("zork__memory", {})),  # the turn's history grows with the result …
        json_reply(too_large, status=status),  # … past a limit
        agent_reply("north"),  # asked for with the turn's opening messages only
        agent_reply("east"),
    ]


@pytest.mark.parametrize(
    ("too_large", "status", "note"),
    [(OPENAI_TPM, 429, PER_MINUTE_NOTE), (OPENAI_TOO_LONG, 400, CONTEXT_NOTE)],
    ids=["tokens-per-minute", "context-window"],
)
def test_the_trimmed_turn_tells_the_model_the_limit_it_outgrew(
    tmp_path: Path, too_large: dict[str, Any], status: int, note: str
) -> None:
    with llm_in_thread(*turn_with_a_tool_call(too_large, status)) as llm:
        code = play(tmp_path, "--turns", "2", base_url=llm.base_url)
        bodies = [r.json for r in llm.requests]
    assert code == 0
    assert len(bodies) == 4
    opening, trimmed = bodies[0]["messages"], bodies[2]["messages"]
    assert [m["role"] for m in trimmed] == ["system", "user"]
    assert trimmed[1]["content"] == f"{opening[1]['content']}\n\n{note}\n\n{FINAL}"
    events = read_events(tmp_path / "events.jsonl")
    assert [t["action"] for t in events_of(events, "turn_complete")] == ["north", "east"]


def test_a_turn_trimmed_for_tokens_per_minute_replays_the_same(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    with llm_in_thread(*turn_with_a_tool_call(OPENAI_TPM, 429)) as llm:
        code = play(tmp_path / "rec", "--turns", "2", "--record", str(cassette), base_url=llm.base_url)
    assert code == 0
    lines = [json.loads(line) for line in cassette.read_text().splitlines()[1:]]
    assert [sorted(line) for line in lines] == [
        ["request", "response"],
        ["error", "request"],
        ["request", "response"],
        ["request", "response"],
    ]
    assert lines[2]["request"]["messages"][1]["content"].endswith(f"\n\n{PER_MINUTE_NOTE}\n\n{FINAL}")

    assert play(tmp_path / "replay", "--replay", str(cassette)) == 0  # no model: the cassette answers
    events = read_events(tmp_path / "replay" / "events.jsonl")
    assert [t["action"] for t in events_of(events, "turn_complete")] == ["north", "east"]
    (exceeded,) = events_of(events, "llm_context_exceeded")
    assert (exceeded["limit"], exceeded["error"]) == ("tokens per minute", TOO_LARGE)
