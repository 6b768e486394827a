"""Answers of OpenAI-compatible providers that the client used to misread.

- OpenAI's legacy ``function_call`` (one call, ``finish_reason: "function_call"``), which some servers
  and proxies still answer with, in a body or a stream: it is the model's tool call (it used to be
  dropped: "LLM returned no content and no tool_calls", the forced final call, no tool ever ran).
- Gemini's OpenAI-compatible endpoint wraps its error object in a list
  (``[{"error": {"code": 400, "message": …, "status": "INVALID_ARGUMENT"}}]``): the error quotes its
  message (it used to show the raw JSON cut at 120 characters, and no provider message).
- An empty 200 (a server that failed after its headers) is retried as a 5xx and says "the body is
  empty"; another 200 that is not JSON quotes what it holds (both used to say only "the body is not
  JSON").
- A streamed answer (to a request that said ``"stream": false``) that ends without a ``finish_reason``
  and without ``data: [DONE]`` was cut short: it is retried as a dropped connection (its half was
  taken as the whole answer: ``Failed to parse agent response``, the turn played ``look``).

The client against the loopback chat-completions server on virtual time; ``zorkmcp play`` (in
process) against it in a thread of its own, with real Zork and the in-process think server, recorded
and replayed.
"""

from __future__ import annotations

import io
import json
from typing import TYPE_CHECKING, Any

import pytest
import trio
from llm_server import LLMServer, Reply, agent_reply, completion, garbage_reply, json_reply, sse_reply
from play_support import INPROCESS_THINKING, events_of, read_events, write_project
from play_support import zork1_path as zork1
from rich.console import Console
from test_bridge import llm_in_thread

from zorkmcp.cli import main
from zorkmcp.config import RetrySettings
from zorkmcp.errors import LLMHTTPError, LLMResponseError
from zorkmcp.llm import CompletionRequest, FunctionCall, ToolCall, open_llm_client
from zorkmcp.observability import EventRecorder

if TYPE_CHECKING:
    from pathlib import Path

USER = [{"role": "user", "content": "West of House. What now?"}]
LEGACY = {"role": "assistant", "content": None, "function_call": {"name": "zork__memory", "arguments": "{}"}}
GEMINI_MESSAGE = (
    "Invalid JSON payload received. Unknown name \"cache_control\" at 'messages[0]': Cannot find field."
)
GEMINI_400 = [
    {
        "error": {
            "code": 400,
            "message": GEMINI_MESSAGE,
            "status": "INVALID_ARGUMENT",
            "details": [
                {
                    "@type": "type.googleapis.com/google.rpc.BadRequest",
                    "fieldViolations": [{"field": "messages[0]", "description": GEMINI_MESSAGE}],
                }
            ],
        }
    }
]


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)


def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
    return {"id": "c", "object": "chat.completion.chunk", "model": "m", "choices": [choice]}


async def test_a_legacy_function_call_is_the_model_s_tool_call(llm_server: LLMServer) -> None:
    legacy = {**LEGACY, "function_call": {"name": "zork__memory", "arguments": '{"k": 1}'}}
    llm_server.script(
        json_reply(completion(legacy, finish_reason="function_call")),
        sse_reply(  # the same, streamed although the request said "stream": false
            chunk({"role": "assistant", "content": None, "function_call": {"name": "zork__memory"}}),
            chunk({"function_call": {"arguments": '{"k"'}}),
            chunk({"function_call": {"arguments": ": 2}"}}),
            chunk({}, "function_call"),
        ),
    )
    async with open_llm_client(base_url=llm_server.base_url, model="m") as client:
        whole = await client.complete(CompletionRequest(USER))
        streamed = await client.complete(CompletionRequest(USER))
    assert (whole.content, whole.finish_reason) == (None, "function_call")
    assert whole.tool_calls == (
        ToolCall(
            id="call_1_0", type="function", function=FunctionCall(name="zork__memory", arguments='{"k": 1}')
        ),
    )
    assert streamed.tool_calls == (
        ToolCall(
            id="call_2_0", type="function", function=FunctionCall(name="zork__memory", arguments='{"k": 2}')
        ),
    )


async def test_tool_calls_beside_a_legacy_function_call_are_read_once(llm_server: LLMServer) -> None:
    """llama-cpp-python's server sends both: the tool calls are the answer, the copy is not a second call."""
    message = {**LEGACY, "tool_calls": [{"id": "a", "type": "function", "function": LEGACY["function_call"]}]}
    llm_server.script(json_reply(completion(message, finish_reason="tool_calls")))
    async with open_llm_client(base_url=llm_server.base_url, model="m") as client:
        response = await client.complete(CompletionRequest(USER))
    assert response.tool_calls == (
        ToolCall(id="a", type="function", function=FunctionCall(name="zork__memory", arguments="{}")),
    )


async def test_gemini_s_error_in_a_list_is_quoted(llm_server: LLMServer) -> None:
    llm_server.script(json_reply(GEMINI_400, status=400))
    async with open_llm_client(base_url=llm_server.base_url, model="gemini-2.5-flash") as client:
        with pytest.raises(LLMHTTPError) as caught:
            await client.complete(CompletionRequest(USER))
    error = caught.value
    assert str(error).replace(llm_server.base_url, "{base}") == (
        f"POST {{base}}/chat/completions answered HTTP 400 Bad Request: {GEMINI_MESSAGE} — this endpoint "
        "does not accept cache_control: set cache_control = false in [tool.zorkgpt.llm]"
    )
    assert (error.status, error.provider_message) == (400, GEMINI_MESSAGE)


async def test_an_empty_200_is_retried_and_says_so(llm_server: LLMServer, autojump_clock: Any) -> None:
    llm_server.script(Reply(body=b"", headers=(("content-type", "application/json"),)), agent_reply("north"))
    events = EventRecorder()
    retry = RetrySettings(jitter_factor=0.0)
    started = trio.current_time()
    async with open_llm_client(base_url=llm_server.base_url, model="m", retry=retry, events=events) as client:
        response = await client.complete(CompletionRequest(USER))
    assert response.content == json.dumps(
        {"thinking": "scripted thinking", "action": "north", "new_objective": None}
    )
    (retried,) = events.of_type("llm_retry")
    assert (retried["kind"], retried["status"], retried["delay"]) == ("server_error", 200, 1.0)
    assert retried["error"].replace(llm_server.base_url, "{base}") == (
        "POST {base}/chat/completions answered HTTP 200, but the body is empty"
    )
    assert trio.current_time() - started == 1.0


async def test_a_200_that_is_not_json_quotes_its_body_and_is_not_retried(llm_server: LLMServer) -> None:
    body = b"upstream connect error or disconnect/reset before headers. reset reason: overflow"
    llm_server.script(garbage_reply(body, content_type="text/plain"), agent_reply("north"))
    async with open_llm_client(base_url=llm_server.base_url, model="m") as client:
        with pytest.raises(LLMResponseError) as caught:
            await client.complete(CompletionRequest(USER))
    assert str(caught.value).replace(llm_server.base_url, "{base}") == (
        "POST {base}/chat/completions answered HTTP 200, but the body is not JSON: "
        "'upstream connect error or disconnect/reset before headers. reset reason: overflow'"
    )
    assert len(llm_server.requests) == 1


def play(folder: Path, *extra: str, base_url: str = "http://127.0.0.1:9/v1") -> int:
    logs = {"json_log_file": str(folder / "events.jsonl"), "episode_log_file": str(folder / "episode.log")}
    pyproject = write_project(folder, mcp_config=INPROCESS_THINKING, files=logs)
    table = f'\n[tool.zorkgpt.llm]\nclient_base_url = "{base_url}"\nagent_model = "gpt-4o"\n'
    pyproject.write_text(pyproject.read_text() + table)
    argv = ["play", "--game", str(zork1()), "--pyproject", str(pyproject), "--quiet", *extra]
    return main(
        argv, console=Console(file=io.StringIO(), width=120), err=Console(file=io.StringIO(), width=400)
    )


def test_play_runs_a_legacy_function_call_and_replays_it(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    steps = [json_reply(completion(LEGACY, finish_reason="function_call")), agent_reply("north")]
    with llm_in_thread(*steps) as llm:
        code = play(tmp_path / "rec", "--turns", "1", "--record", str(cassette), base_url=llm.base_url)
        bodies = [r.json for r in llm.requests]
    assert code == 0
    assert len(bodies) == 2
    assistant, result = bodies[1]["messages"][2:]
    assert assistant == {
        "role": "assistant",
        "tool_calls": [
            {"id": "call_1_0", "type": "function", "function": {"name": "zork__memory", "arguments": "{}"}}
        ],
    }
    assert (result["role"], result["tool_call_id"]) == ("tool", "call_1_0")
    log = (tmp_path / "rec" / "episode.log").read_text()
    assert "no content and no tool_calls" not in log

    assert play(tmp_path / "replay", "--replay", str(cassette)) == 0
    for folder in ("rec", "replay"):
        (turn,) = events_of(read_events(tmp_path / folder / "events.jsonl"), "turn_complete")
        assert (turn["action"], turn["tool_calls"], [t["name"] for t in turn["tools"]]) == (
            "north",
            1,
            ["zork.memory"],
        )


async def test_a_stream_cut_short_is_retried_not_taken_as_the_answer(
    llm_server: LLMServer, autojump_clock: Any
) -> None:
    answer = json.dumps({"thinking": "t", "action": "north", "new_objective": None})
    llm_server.script(
        sse_reply(chunk({"role": "assistant", "content": answer[:10]}), done=False),  # the connection closed
        sse_reply(chunk({"role": "assistant", "content": answer}), chunk({}, "stop"), done=False),
    )
    events = EventRecorder()
    retry = RetrySettings(jitter_factor=0.0)
    async with open_llm_client(base_url=llm_server.base_url, model="m", retry=retry, events=events) as client:
        response = await client.complete(CompletionRequest(USER))
    assert (response.content, response.finish_reason) == (answer, "stop")  # a finish_reason: whole
    (retried,) = events.of_type("llm_retry")
    assert (retried["kind"], retried["status"], retried["delay"]) == ("transport", 200, 1.0)
    assert retried["error"].replace(llm_server.base_url, "{base}") == (
        "POST {base}/chat/completions answered HTTP 200, but the event stream (text/event-stream) ended "
        "before its answer did: no finish_reason and no data: [DONE] (the connection was closed early)"
    )
