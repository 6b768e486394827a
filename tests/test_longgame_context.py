"""A long turn that outgrows the model's context window does not end the episode.

Each turn sends the system prompt, the game state and recent memories (a bounded size), then the
turn's tool calls and results, which grow with every iteration (up to ``max_tool_iterations``). When
the endpoint answers that the request does not fit the model's context (OpenAI's
``context_length_exceeded``, vLLM's ``maximum context length``, Anthropic's ``prompt is too long``,
llama.cpp's ``exceeds the available context size``), the engine asks once for the final answer with
the turn's opening messages only and no tools (``llm_context_exceeded`` and a warning say so), and the
episode goes on. When even that does not fit, the episode ends with one line saying what to do.

Real ``zorkmcp play`` (in process), real Zork, the real in-process think server and the game server,
the loopback chat-completions server in a thread of its own.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

import pytest
from llm_server import agent_reply, json_reply, tool_call, tool_call_reply
from play_support import INPROCESS_THINKING, events_of, read_events, write_project
from play_support import zork1_path as zork1
from rich.console import Console
from test_bridge import llm_in_thread

from zorkmcp.cli import main
from zorkmcp.engine import CONTEXT_TRIMMED_MESSAGE, FORCE_FINAL_MESSAGE
from zorkmcp.llm._compat import exceeds_context

if TYPE_CHECKING:
    from pathlib import Path

OPENAI_TOO_LONG = {
    "error": {
        "message": "This model's maximum context length is 128000 tokens. However, your messages resulted in "
        "130536 tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
VLLM_TOO_LONG = {
    "object": "error",
    "message": "This model's maximum context length is 8192 tokens. However, you requested 9120 tokens "
    "(8096 in the messages, 1024 in the completion). Please reduce the length of the messages or completion.",
    "type": "BadRequestError",
    "param": None,
    "code": 400,
}
LLAMA_CPP_TOO_LONG = {
    "error": {
        "code": 400,
        "message": "the request exceeds the available context size, try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 5000,
        "n_ctx": 4096,
    }
}
REMEDY = (
    "the request does not fit the model's context window: give the model server a larger context "
    "(vLLM --max-model-len, llama-server -c, Ollama num_ctx), lower max_tokens, or offer fewer tools "
    '(a "tools" allow-list per server in mcp_config.json, or --no-mcp)'
)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)


def play(folder: Path, base_url: str, *, turns: int, mcp: bool = True) -> tuple[int, str]:
    """``zorkmcp play`` with the in-process think server; returns the exit status and stderr."""
    logs = {"json_log_file": str(folder / "events.jsonl"), "episode_log_file": str(folder / "episode.log")}
    pyproject = write_project(folder, mcp_config=INPROCESS_THINKING, enabled=mcp, files=logs)
    table = f'\n[tool.zorkgpt.llm]\nclient_base_url = "{base_url}"\nagent_model = "gpt-4o"\n'
    pyproject.write_text(pyproject.read_text() + table)
    out, err = io.StringIO(), io.StringIO()
    code = main(
        ["play", "--game", str(zork1()), "--pyproject", str(pyproject), "--quiet", "--turns", str(turns)],
        console=Console(file=out, width=120),
        err=Console(file=err, width=1000),
    )
    return code, err.getvalue()


def events(folder: Path, kind: str) -> list[dict[str, Any]]:
    return events_of(read_events(folder / "events.jsonl"), kind)


def test_a_turn_whose_tool_calls_outgrow_the_context_asks_for_the_answer_without_them(tmp_path: Path) -> None:
    steps = [
        agent_reply("north"),
        tool_call_reply(tool_call("zork__memory", {})),  # turn 2 calls a tool; its history grows …
        json_reply(OPENAI_TOO_LONG, status=400),  # … past the model's context
        agent_reply("east"),  # the answer, asked for without the turn's tool calls
        agent_reply("south"),  # turn 3 as any other
    ]
    with llm_in_thread(*steps) as llm:
        code, err = play(tmp_path, llm.base_url, turns=3)
        bodies = [r.json for r in llm.requests]
    assert code == 0
    assert len(bodies) == 5
    opening = bodies[1]["messages"]  # turn 2's first request: system prompt and game state
    assert [m["role"] for m in opening] == ["system", "user"]
    assert [m["role"] for m in bodies[2]["messages"]] == ["system", "user", "assistant", "tool"]
    trimmed = bodies[3]
    assert "tools" not in trimmed
    assert "tool_choice" not in trimmed
    assert trimmed["response_format"]["json_schema"]["name"] == "AgentResponse"
    assert [m["role"] for m in trimmed["messages"]] == ["system", "user"]
    assert trimmed["messages"][0] == opening[0]
    user = trimmed["messages"][1]["content"]
    said = opening[1]["content"]
    if isinstance(said, list):  # prompt caching marks the user message as parts
        assert user[: len(said)] == said
        assert [part["text"] for part in user[len(said) :]] == [CONTEXT_TRIMMED_MESSAGE, FORCE_FINAL_MESSAGE]
    else:
        assert user == f"{said}\n\n{CONTEXT_TRIMMED_MESSAGE}\n\n{FORCE_FINAL_MESSAGE}"
    (exceeded,) = events(tmp_path, "llm_context_exceeded")
    assert {k: exceeded[k] for k in ("turn", "iteration", "dropped_messages", "dropped_tools", "error")} == {
        "turn": 2,
        "iteration": 2,
        "dropped_messages": 2,
        "dropped_tools": 4,
        "error": OPENAI_TOO_LONG["error"]["message"],
    }
    assert [(t["turn"], t["action"], t["tool_calls"]) for t in events(tmp_path, "turn_complete")] == [
        (1, "north", 0),
        (2, "east", 1),
        (3, "south", 0),
    ]
    (complete,) = events(tmp_path, "episode_complete")
    assert (complete["stopped"], complete["turns"], complete["error"], complete["llm_requests"]) == (
        "turn limit",
        3,
        None,
        4,
    )
    assert (
        "warning: Turn 2 Iteration 2: the request did not fit the model's context window (This model's "
        "maximum context length is 128000 tokens. However, your messages resulted in 130536 tokens. Please "
        "reduce the length of the messages.); the final answer is asked for with the turn's opening messages "
        "only, without its tool calls and their results (2 messages) and the 4 tools offered"
    ) in " ".join(err.split())


def test_a_first_request_that_does_not_fit_with_its_tools_is_asked_again_without_them(tmp_path: Path) -> None:
    # llama.cpp with a small -c: the system prompt, the game state and the tools' schemas do not fit.
    steps = [json_reply(LLAMA_CPP_TOO_LONG, status=400), agent_reply("north")]
    with llm_in_thread(*steps) as llm:
        code, _ = play(tmp_path, llm.base_url, turns=1)
        bodies = [r.json for r in llm.requests]
    assert code == 0
    assert len(bodies[0]["tools"]) == 4
    assert "tools" not in bodies[1]
    # nothing of the turn was left out but its tools: the plain forced final request, no note
    assert bodies[1]["messages"][:1] == bodies[0]["messages"][:1]
    user = bodies[1]["messages"][1]["content"]
    texts = [part["text"] for part in user] if isinstance(user, list) else user.split("\n\n")
    assert texts[-1] == FORCE_FINAL_MESSAGE
    assert CONTEXT_TRIMMED_MESSAGE not in texts
    (exceeded,) = events(tmp_path, "llm_context_exceeded")
    assert (exceeded["iteration"], exceeded["dropped_messages"], exceeded["dropped_tools"]) == (1, 0, 4)
    (complete,) = events(tmp_path, "episode_complete")
    assert (complete["stopped"], complete["turns"]) == ("turn limit", 1)


def test_when_even_the_opening_messages_do_not_fit_the_episode_ends_with_what_to_do(tmp_path: Path) -> None:
    steps = [json_reply(VLLM_TOO_LONG, status=400), json_reply(VLLM_TOO_LONG, status=400)]
    with llm_in_thread(*steps) as llm:
        code, err = play(tmp_path, llm.base_url, turns=5)
        requests = len(llm.requests)
    assert code == 1
    assert requests == 2  # the request, then once without the tools; never retried
    (complete,) = events(tmp_path, "episode_complete")
    assert (complete["stopped"], complete["turns"]) == ("error", 0)
    assert complete["error"].endswith(f"{VLLM_TOO_LONG['message']} — {REMEDY}")
    assert complete["error"].startswith("LLMHTTPError: POST http://127.0.0.1:")
    last = " ".join([line for line in err.splitlines() if line.strip()][-1].split())
    assert last.startswith("zorkmcp play: the model failed (LLMHTTPError): POST ")
    assert last.endswith(REMEDY)


def test_without_tools_a_request_that_does_not_fit_is_not_sent_again(tmp_path: Path) -> None:
    body = {"error": {"message": "prompt is too long: 210000 tokens > 200000 maximum", "code": 400}}
    with llm_in_thread(json_reply(body, status=400)) as llm:
        code, _ = play(tmp_path, llm.base_url, turns=5, mcp=False)
        requests = len(llm.requests)
    assert (code, requests) == (1, 1)  # nothing to leave out: the same request would fail the same way
    assert events(tmp_path, "llm_context_exceeded") == []
    (complete,) = events(tmp_path, "episode_complete")
    assert complete["error"].endswith(f"prompt is too long: 210000 tokens > 200000 maximum — {REMEDY}")


@pytest.mark.parametrize(
    "text",
    [
        OPENAI_TOO_LONG["error"]["message"],
        "context_length_exceeded",
        VLLM_TOO_LONG["message"],
        "prompt is too long: 210000 tokens > 200000 maximum",
        "input length and `max_tokens` exceed context limit: 197000 + 8192 > 200000, decrease input length "
        "or `max_tokens` and try again",
        LLAMA_CPP_TOO_LONG["error"]["message"],
        "Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context "
        "length",
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
        "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` "
        "tokens and 1024 `max_new_tokens`",
        "Trying to keep the first 5000 tokens when context the overflows. However, the model is loaded with "
        "context length of only 4096 tokens, which is not enough.",
    ],
)
def test_what_endpoints_say_of_a_request_longer_than_the_context(text: str) -> None:
    assert exceeds_context(text)


@pytest.mark.parametrize(
    "text",
    [
        "Invalid model name",
        "Invalid 'tools': array too long. Expected an array with maximum length 128",
        "response_format type json_schema is not supported",
        "Rate limit exceeded: slow down",
    ],
)
def test_other_errors_are_not_taken_for_a_context_too_small(text: str) -> None:
    assert not exceeds_context(text)
