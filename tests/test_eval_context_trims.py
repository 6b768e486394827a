"""An eval counts the turns that did not fit the model's context window (``context_trims``), and says
so where a run shows what its arms played: the record, ``summary.json``, ``summary.csv``, the closing
lines and ``report.html``. On such a turn the final answer was asked for without the turn's tool calls
and tools (``llm_context_exceeded``): the arm then partly measured playing without its tools.

Real ``zorkmcp eval`` (in process), real Zork, the real in-process think server, the loopback
chat-completions server in a thread of its own.
"""

from __future__ import annotations

import csv
import json
from typing import TYPE_CHECKING

import pytest
from eval_support import episode_records
from llm_server import agent_reply, json_reply, tool_call, tool_call_reply
from play_support import INPROCESS_THINKING
from play_support import zork1_path as zork1
from test_bridge import llm_in_thread

from zorkmcp.cli import main

if TYPE_CHECKING:
    from pathlib import Path

TOO_LONG = {
    "error": {
        "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in "
        "9000 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)


def test_turns_that_did_not_fit_the_context_are_counted_and_warned_of(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mcp_config.json").write_text(json.dumps(INPROCESS_THINKING))
    steps = [
        json_reply({"object": "list", "data": []}),  # the run's start-up probe: GET /models
        agent_reply("north"),
        tool_call_reply(tool_call("zork__memory", {})),  # turn 2 calls a tool …
        json_reply(TOO_LONG, status=400),  # … and its history no longer fits
        agent_reply("east"),  # the answer, asked for without the turn's tool calls
        agent_reply("south"),
        agent_reply("west"),
    ]
    with llm_in_thread(*steps) as llm:
        (tmp_path / "eval.toml").write_text(
            "[eval]\nepisodes = 1\nmax_turns = 4\nconcurrency = 1\n\n"
            f'[[arms]]\nname = "tools"\nmodel = "gpt-4o"\nbase_url = "{llm.base_url}"\nmcp = true\n'
            'mcp_config = "mcp_config.json"\n'
        )
        code = main(["eval", "eval.toml", "--game", str(zork1()), "--out", "run"])
    out, _ = capsys.readouterr()
    assert code == 0, out
    (line,) = [line for line in out.splitlines() if line.startswith("arm=")]  # stdout is not a terminal
    assert line.startswith("arm=tools seed=12 score=0/350 turns=4 moves=4 tool_calls=1 deaths=0 seconds=")
    assert line.endswith(" context_trims=1")
    run = tmp_path / "run"
    (record,) = episode_records(run).values()
    assert (record["turns"], record["context_trims"], record["stopped"]) == (4, 1, "turn limit")
    arm = json.loads((run / "summary.json").read_text())["arms"]["tools"]
    assert (arm["context_trims"], arm["context_trim_rate"]) == (1, 0.25)
    with (run / "summary.csv").open(newline="") as f:
        (row,) = csv.DictReader(f)
    assert row["context_trims"] == "1"
    assert (
        "tools: 1 turn(s) (25%) did not fit the model's context window: their final answer was asked for "
        "without the turn's tool calls and tools"
    ) in [" ".join(line.split()) for line in out.splitlines()]
    assert (
        "<p class=warn>A request did not fit the model's context window, and the turn's final answer was "
        "asked for without its tool calls and tools: tools: on 1 (25%) of its turns. On those turns the "
        "tools' work did not reach the answer"
    ) in (run / "report.html").read_text()
