"""A model stopped at its token limit (``finish_reason: "length"``) is told so, with what to do.

The parse error, the warnings and the error result of a tool call whose JSON arguments were cut off
say what ``length`` means (the answer was cut at the token limit: ``max_tokens`` as sent, or the
endpoint's own) and where to raise it (``[tool.zorkgpt.agent_sampling]``, an eval arm's own).

Real ``zorkmcp play`` (in process), real Zork, the real in-process think server and the game server,
the loopback chat-completions server in a thread of its own.
"""

from __future__ import annotations

import io
import json
from typing import TYPE_CHECKING

import pytest
from llm_server import agent_reply, content_reply, tool_call, tool_call_reply
from play_support import INPROCESS_THINKING, events_of, read_events, write_project
from play_support import zork1_path as zork1
from rich.console import Console
from test_bridge import llm_in_thread

from zorkmcp.cli import main

if TYPE_CHECKING:
    from pathlib import Path

CUT = (
    "the model stopped with finish_reason 'length': its answer was cut at its token limit (max_tokens 64); "
    "raise max_tokens in [tool.zorkgpt.agent_sampling] (in zorkmcp eval: the arm's max_tokens)"
)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)


def play(folder: Path, base_url: str, *, turns: int) -> int:
    """``zorkmcp play`` with ``max_tokens = 64`` in ``[tool.zorkgpt.agent_sampling]``."""
    logs = {"json_log_file": str(folder / "events.jsonl"), "episode_log_file": str(folder / "episode.log")}
    pyproject = write_project(folder, mcp_config=INPROCESS_THINKING, files=logs)
    tables = (
        f'\n[tool.zorkgpt.llm]\nclient_base_url = "{base_url}"\nagent_model = "gpt-4o"\n'
        "\n[tool.zorkgpt.agent_sampling]\nmax_tokens = 64\n"
    )
    pyproject.write_text(pyproject.read_text() + tables)
    argv = ["play", "--game", str(zork1()), "--pyproject", str(pyproject), "--quiet", "--turns", str(turns)]
    return main(
        argv, console=Console(file=io.StringIO(), width=120), err=Console(file=io.StringIO(), width=400)
    )


def warnings(folder: Path) -> list[str]:
    """The episode log's warnings, each without its episode id and level."""
    lines = (folder / "episode.log").read_text().splitlines()
    return [line.split(" [WARNING] ", 1)[1] for line in lines if " [WARNING] " in line]


def test_arguments_cut_at_the_token_limit_and_a_cut_answer_say_why_and_what_to_do(tmp_path: Path) -> None:
    steps = [
        tool_call_reply(tool_call("zork__memory", '{"note": "the mailb'), finish_reason="length"),
        content_reply('{"thinking": "The mailbox is', finish_reason="length"),
        tool_call_reply(tool_call("zork__memory", "{note: }")),  # turn 2: not JSON, but not cut off
        agent_reply("north"),
    ]
    with llm_in_thread(*steps) as llm:
        code = play(tmp_path, llm.base_url, turns=2)
        bodies = [r.json for r in llm.requests]
    assert code == 0
    assert [b["max_tokens"] for b in bodies] == [64, 64, 64, 64]
    result = json.loads(bodies[1]["messages"][-1]["content"])
    assert result["error"] == (
        "Invalid tool arguments for zork.memory: Unterminated string starting at: line 1 column 10 (char 9); "
        "your reply was cut off at its token limit (finish_reason 'length') before these arguments ended: "
        'call the tool again with shorter arguments; the arguments as sent: "{\\"note\\": \\"the mailb"'
    )
    (error,) = events_of(read_events(tmp_path / "events.jsonl"), "agent_parse_error")
    assert error["error"] == (
        "no JSON object in the answer (Unterminated string starting at '\"The mailbox is'): "
        f"""'{{"thinking": "The mailbox is' ({CUT})"""
    )
    assert f"Turn 1 Iteration 1: Tool call failed: zork.memory - {result['error']} ({CUT})" in warnings(
        tmp_path
    )


def test_an_empty_answer_cut_at_the_token_limit_is_warned_of_with_what_to_do(tmp_path: Path) -> None:
    """A reasoning model that spent every token on its reasoning: no content, no call."""
    steps = [content_reply(None, finish_reason="length"), agent_reply("north")]
    with llm_in_thread(*steps) as llm:
        code = play(tmp_path, llm.base_url, turns=1)
    assert code == 0
    assert (
        f"Turn 1 Iteration 1: LLM returned no content and no tool_calls, finish_reason=length ({CUT})"
        in warnings(tmp_path)
    )
