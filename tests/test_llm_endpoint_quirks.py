"""What real OpenAI-compatible servers do that the wire format does not promise, against the loopback
server: refusing ``response_format`` (Requirement 4.6) or ``tools`` (Requirement 4.5), streaming
though ``"stream": false`` was sent, an empty ``choices`` list, and tool call ids that repeat."""

from __future__ import annotations

import json
import sys
from typing import Any

import engine_servers
import pytest
import trio
from llm_server import (
    LLMServer,
    agent_reply,
    content_reply,
    json_reply,
    sse_reply,
    tool_call,
    tool_call_reply,
)
from servers.helpers import RecordingSink

from zorkmcp.config import McpConfig, McpSettings, RetrySettings, ServerConfig
from zorkmcp.engine import TurnOptions, run_turn
from zorkmcp.errors import LLMHTTPError, LLMProviderError, LLMResponseError, ModelCompatibilityError
from zorkmcp.llm import CompletionRequest, FunctionCall, ToolCall, open_llm_client
from zorkmcp.mcp import McpManager
from zorkmcp.observability import EventRecorder

USER = [{"role": "user", "content": "West of House. What now?"}]
SCHEMA = {"type": "json_schema", "json_schema": {"name": "AgentResponse", "schema": {"type": "object"}}}
TOOLS = [{"type": "function", "function": {"name": "game__look", "parameters": {"type": "object"}}}]
FAST = RetrySettings(jitter_factor=0.0)  # 1, 2, 4, 8, 16 s between 5 retries


def _client(server: LLMServer, **kwargs: Any) -> Any:
    kwargs.setdefault("retry", FAST)
    return open_llm_client(base_url=server.base_url, model="test/model", **kwargs)


def _error(message: str, status: int = 400, **extra: Any) -> Any:
    return json_reply({"error": {"message": message, "code": status, **extra}}, status=status)


# --- an endpoint that refuses response_format (Requirement 4.6) ---------------------------------

UNPROCESSABLE = "Unprocessable Content" if sys.version_info >= (3, 13) else "Unprocessable Entity"
"""The test server's reason phrase for 422, which the error repeats (Python 3.13 renamed it, as RFC 9110)."""

# What servers answer when they do not take the forced final call's JSON schema.
RESPONSE_FORMAT_REFUSALS = [
    pytest.param(
        _error("response_format type json_schema is not supported"),
        400,
        "response_format type json_schema is not supported",
        id="probe-400",
    ),
    pytest.param(
        _error(
            "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.",
            param="response_format",
        ),
        400,
        "Invalid parameter: 'response_format' of type 'json_schema' is not supported with this model.",
        id="openai-400",
    ),
    pytest.param(  # llama.cpp before json_schema (a 500, not retried with backoff)
        _error('response_format type must be one of "text" or "json_object", but got: json_schema', 500),
        500,
        'response_format type must be one of "text" or "json_object", but got: json_schema',
        id="llama.cpp-500",
    ),
    pytest.param(
        _error("This response_format type is unavailable now"),
        400,
        "This response_format type is unavailable now",
        id="deepseek-400",
    ),
    pytest.param(
        json_reply(
            {
                "error": "Failed to deserialize the JSON body into the target type: response_format: "
                "unknown variant `json_schema`, expected `json` or `regex` at line 1 column 190",
                "error_type": "validation",
            },
            status=422,
        ),
        422,
        "Failed to deserialize the JSON body into the target type: response_format: unknown variant "
        "`json_schema`, expected `json` or `regex` at line 1 column 190",
        id="tgi-422",
    ),
    pytest.param(
        json_reply(
            {
                "detail": [
                    {
                        "type": "literal_error",
                        "loc": ["body", "response_format", "type"],
                        "msg": "Input should be 'text' or 'json_object'",
                    }
                ]
            },
            status=422,
        ),
        422,
        f"POST {{url}} answered HTTP 422 {UNPROCESSABLE}: "  # then the body's first 120 characters
        '{"detail": [{"type": "literal_error", "loc": ["body", "response_format", "type"], "msg": '
        "\"Input should be 'text' or 'jso",
        id="llama-cpp-python-422",
    ),
]


@pytest.mark.parametrize(("refusal", "status", "said"), RESPONSE_FORMAT_REFUSALS)
async def test_refused_response_format_is_dropped_at_once_and_for_good(
    llm_server: LLMServer, autojump_clock: Any, refusal: Any, status: int, said: str
) -> None:
    sink = RecordingSink()
    llm_server.script(refusal, agent_reply("open mailbox"), agent_reply("north"))
    async with _client(llm_server, events=sink) as client:
        start = trio.current_time()
        first = await client.complete(CompletionRequest(USER, response_format=SCHEMA))
        assert client.sends_response_format is False
        second = await client.complete(CompletionRequest(USER, response_format=SCHEMA))
    assert json.loads(first.content or "")["action"] == "open mailbox"
    assert json.loads(second.content or "")["action"] == "north"
    refused, again, later = llm_server.bodies
    assert refused["response_format"] == SCHEMA
    assert "response_format" not in again  # the same request without it...
    assert again == {k: v for k, v in refused.items() if k != "response_format"}
    assert "response_format" not in later  # ...and never again from this client
    assert trio.current_time() - start == 0.0  # no backoff: it is not a retry
    assert sink.types() == ["llm_response_format_dropped"]  # said once, and no llm_retry
    ((_, fields),) = sink.events
    said = said.replace("{url}", f"{llm_server.base_url}/chat/completions")
    assert fields == {"status": status, "error": said}
    ((level, line),) = sink.lines
    assert level == "WARNING"
    assert line.startswith("The model endpoint does not take response_format (HTTP ")
    assert line.endswith(
        "the request is sent again without it, and so are later ones: the answer is read from its text"
    )


async def test_the_event_names_the_status_and_the_provider_s_words(llm_server: LLMServer) -> None:
    recorder = EventRecorder()
    llm_server.script(_error("response_format type json_schema is not supported"), content_reply("ok"))
    async with _client(llm_server, events=recorder) as client:
        await client.complete(CompletionRequest(USER, response_format=SCHEMA))
    (event,) = recorder.of_type("llm_response_format_dropped")
    assert (event["status"], event["error"]) == (400, "response_format type json_schema is not supported")
    assert recorder.of_type("llm_retry") == []


async def test_a_400_that_does_not_name_response_format_is_an_error(llm_server: LLMServer) -> None:
    llm_server.script(_error("This model's maximum context length is 8192 tokens"))
    async with _client(llm_server) as client:
        with pytest.raises(LLMHTTPError, match=r"HTTP 400 Bad Request: This model's maximum context length"):
            await client.complete(CompletionRequest(USER, response_format=SCHEMA))
        assert client.sends_response_format is True
    assert len(llm_server.requests) == 1


async def test_naming_response_format_is_no_refusal_when_none_was_sent(llm_server: LLMServer) -> None:
    llm_server.script(_error("response_format type json_schema is not supported"))
    async with _client(llm_server) as client:
        with pytest.raises(LLMHTTPError, match=r"response_format type json_schema is not supported$"):
            await client.complete(CompletionRequest(USER))
        assert client.sends_response_format is True
    assert len(llm_server.requests) == 1


async def test_a_429_naming_response_format_is_a_rate_limit(
    llm_server: LLMServer, autojump_clock: Any
) -> None:
    limited = json_reply(
        {"error": {"message": "Rate limit reached for structured outputs", "code": 429}},
        status=429,
        headers=[("retry-after", "3")],
    )
    llm_server.script(limited, content_reply("ok"))
    async with _client(llm_server) as client:
        await client.complete(CompletionRequest(USER, response_format=SCHEMA))
        assert client.sends_response_format is True
    assert [body["response_format"] for body in llm_server.bodies] == [SCHEMA, SCHEMA]


async def test_when_the_request_without_it_fails_too_that_error_is_raised(llm_server: LLMServer) -> None:
    llm_server.script(
        _error("response_format type json_schema is not supported"),
        _error("Invalid value for 'top_k'"),
    )
    async with _client(llm_server) as client:
        with pytest.raises(LLMHTTPError, match=r"HTTP 400 Bad Request: Invalid value for 'top_k'$"):
            await client.complete(CompletionRequest(USER, response_format=SCHEMA))
    assert len(llm_server.requests) == 2


# --- an endpoint that refuses tools (Requirement 4.5) -------------------------------------------

NO_MCP = r"play without tools \(--no-mcp, or \[tool\.zorkgpt\.mcp\] enabled = false\), or "


@pytest.mark.parametrize(
    ("refusal", "status", "remedy"),
    [
        pytest.param(
            json_reply(
                {
                    "object": "error",
                    "message": '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser '
                    "to be set",
                    "type": "BadRequestError",
                    "param": None,
                    "code": 400,
                },
                status=400,
            ),
            400,
            NO_MCP + r"start vLLM with --enable-auto-tool-choice --tool-call-parser <the model's parser>$",
            id="vllm",
        ),
        pytest.param(
            json_reply({"error": "registry.ollama.ai/library/gemma3:27b does not support tools"}, status=400),
            400,
            NO_MCP + r"use a model that can call tools$",
            id="ollama",
        ),
        pytest.param(
            _error("tools param requires --jinja flag", 500, type="server_error"),
            500,
            NO_MCP + r"start llama-server with --jinja$",
            id="llama.cpp",
        ),
        pytest.param(
            _error(
                "No endpoints found that support tool use. To learn more about provider routing, visit: "
                "https://openrouter.ai/docs/provider-routing",
                404,
            ),
            404,
            NO_MCP + r"use a model that can call tools$",
            id="openrouter",
        ),
        pytest.param(
            _error("Function calling is not enabled for models/gemma-3-27b-it"),
            400,
            NO_MCP + r"use a model that can call tools$",
            id="gemini",
        ),
    ],
)
async def test_refused_tools_raise_model_compatibility_error_saying_what_to_do(
    llm_server: LLMServer, autojump_clock: Any, refusal: Any, status: int, remedy: str
) -> None:
    llm_server.script(refusal)
    async with _client(llm_server) as client:
        start = trio.current_time()
        with pytest.raises(
            ModelCompatibilityError,
            match=r"^the endpoint refused tools for model 'test/model' \(.+\): " + remedy,
        ) as info:
            await client.complete(CompletionRequest(USER, tools=TOOLS, tool_choice="auto"))
        assert trio.current_time() - start == 0.0  # not retried, not even the 500
    assert len(llm_server.requests) == 1
    cause = info.value.__cause__
    assert isinstance(cause, LLMHTTPError)
    assert cause.status == status
    assert "\n" not in str(info.value)  # one line: the CLI's last line shows all of it


async def test_a_tools_refusal_without_tools_sent_stays_an_http_error(llm_server: LLMServer) -> None:
    llm_server.script(
        json_reply({"error": "registry.ollama.ai/library/x does not support tools"}, status=400)
    )
    async with _client(llm_server) as client:
        with pytest.raises(LLMHTTPError, match=r"HTTP 400 Bad Request: registry\.ollama\.ai/library/x does"):
            await client.complete(CompletionRequest(USER))


# --- a server that streams though "stream": false was sent --------------------------------------


def _chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {"id": "c", "object": "chat.completion.chunk", "model": "streamer", "choices": choices, **extra}


async def test_a_streamed_answer_is_joined_from_its_deltas(llm_server: LLMServer) -> None:
    llm_server.script(
        sse_reply(
            _chunk({"role": "assistant", "content": ""}),
            _chunk({"content": '{"action": "op'}),
            _chunk({"content": 'en mailbox"}'}),
            _chunk({}, "stop"),
            _chunk(usage={"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}),
        )
    )
    async with _client(llm_server) as client:
        response = await client.complete(CompletionRequest(USER))
    assert response.content == '{"action": "open mailbox"}'
    assert response.tool_calls is None
    assert (response.model, response.finish_reason) == ("streamer", "stop")
    assert response.usage == {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}
    assert llm_server.bodies[0]["stream"] is False


async def test_streamed_tool_calls_are_joined_by_index(llm_server: LLMServer) -> None:
    first = {
        "index": 0,
        "id": "call_a",
        "type": "function",
        "function": {"name": "thinking__think", "arguments": ""},
    }
    second = {"index": 1, "id": "call_b", "type": "function", "function": {"name": "game__look"}}
    llm_server.script(
        sse_reply(
            _chunk({"role": "assistant", "content": None, "tool_calls": [first]}),
            _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"thought": '}}]}),
            _chunk({"tool_calls": [second]}),
            _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"hmm"}'}}]}),
            _chunk({}, "tool_calls"),
        )
    )
    async with _client(llm_server) as client:
        response = await client.complete(CompletionRequest(USER))
    assert response.content is None
    assert response.finish_reason == "tool_calls"
    assert response.tool_calls == (
        ToolCall(
            id="call_a",
            type="function",
            function=FunctionCall(name="thinking__think", arguments='{"thought": "hmm"}'),
        ),
        ToolCall(id="call_b", type="function", function=FunctionCall(name="game__look", arguments="{}")),
    )


async def test_a_stream_labelled_as_json_is_read_as_a_stream(llm_server: LLMServer) -> None:
    llm_server.script(
        sse_reply(_chunk({"content": "look"}, "stop"), done=False, content_type="application/json")
    )
    async with _client(llm_server) as client:
        response = await client.complete(CompletionRequest(USER))
    assert (response.content, response.finish_reason) == ("look", "stop")


async def test_an_error_inside_a_stream_is_a_provider_error(llm_server: LLMServer) -> None:
    llm_server.script(
        sse_reply(_chunk({"content": "Let me"}), {"error": {"message": "upstream overloaded", "code": 400}})
    )
    async with _client(llm_server) as client:
        with pytest.raises(
            LLMProviderError, match=r"with a provider error \(code 400\): upstream overloaded$"
        ):
            await client.complete(CompletionRequest(USER))


async def test_a_broken_stream_says_it_was_a_stream(llm_server: LLMServer) -> None:
    llm_server.script(sse_reply(_chunk({"content": "a"}), "{not json"))
    async with _client(llm_server) as client:
        with pytest.raises(
            LLMResponseError,
            match=r"answered HTTP 200, but the event stream \(text/event-stream\) holds a chunk that is not "
            r"a JSON object: '\{not json'$",
        ):
            await client.complete(CompletionRequest(USER))


# --- an empty choices list ----------------------------------------------------------------------


async def test_an_empty_choices_list_is_an_empty_answer(llm_server: LLMServer) -> None:
    filtered = {
        "id": "x",
        "object": "chat.completion",
        "model": "m",
        "choices": [],
        "prompt_filter_results": [],
    }
    llm_server.script(json_reply(filtered))
    async with _client(llm_server) as client:
        response = await client.complete(CompletionRequest(USER))
    assert (response.content, response.tool_calls, response.finish_reason, response.model) == (
        None,
        None,
        None,
        "m",
    )
    assert len(llm_server.requests) == 1


# --- the engine, end to end ---------------------------------------------------------------------

ENGINE_TOOLS = ServerConfig(
    name="tools", type="inprocess", module="engine_servers:create_tools_server", timeout=5
)
OPENING = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "state"}]


@pytest.fixture
def manager() -> McpManager:
    engine_servers.reset()
    return McpManager(McpConfig(servers=(ENGINE_TOOLS,)), McpSettings(enabled=True))


async def _turn(
    llm_server: LLMServer, manager: McpManager | None, events: EventRecorder, **options: Any
) -> Any:
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o-test", events=events) as model:
        return await run_turn(
            model,
            OPENING,
            open_toolbox=(lambda: manager.open_turn()) if manager is not None else None,
            options=TurnOptions(final_response_format=SCHEMA, **options),
            events=events,
        )


async def test_the_forced_final_call_goes_on_without_response_format(llm_server: LLMServer) -> None:
    events = EventRecorder()
    llm_server.script(
        content_reply(""),  # no answer: the forced final call follows
        _error("response_format type json_schema is not supported"),
        content_reply('Here it is: {"thinking": "t", "action": "open mailbox"}'),
    )
    result = await _turn(llm_server, None, events)
    assert result.forced_final
    assert result.content == 'Here it is: {"thinking": "t", "action": "open mailbox"}'
    assert [("response_format" in body) for body in llm_server.bodies] == [False, True, False]
    assert len(events.of_type("llm_response_format_dropped")) == 1


async def test_repeated_tool_call_ids_are_made_unique_in_the_history(
    llm_server: LLMServer, manager: McpManager
) -> None:
    llm_server.script(
        tool_call_reply(
            tool_call("tools__echo", {"text": "a"}, id="call_0"),
            tool_call("tools__echo", {"text": "b"}, id="call_0"),
        ),
        tool_call_reply(tool_call("tools__echo", {"text": "c"}, id="call_0")),
        content_reply("done"),
    )
    result = await _turn(llm_server, manager, EventRecorder())
    assert result.content == "done"
    history = llm_server.bodies[2]["messages"]
    calls = [c["id"] for m in history if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    answers = [m["tool_call_id"] for m in history if m["role"] == "tool"]
    assert calls == ["call_0", "call_1_1", "call_2_0"]
    assert answers == ["call_0", "call_1_1", "call_2_0"]
    assert [json.loads(m["content"])["content"] for m in history if m["role"] == "tool"] == ["a", "b", "c"]


async def test_a_model_without_tools_ends_the_turn_with_what_to_do(
    llm_server: LLMServer, manager: McpManager
) -> None:
    llm_server.script(
        json_reply({"error": "registry.ollama.ai/library/gemma3:27b does not support tools"}, status=400)
    )
    with pytest.raises(
        ModelCompatibilityError, match=r"play without tools \(--no-mcp, or \[tool\.zorkgpt\.mcp\]"
    ):
        await _turn(llm_server, manager, EventRecorder())
    assert len(llm_server.requests) == 1
