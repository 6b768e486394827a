"""LLMClient against the real loopback server: the wire, parsing, errors, retries, cancellation, secrets."""

from __future__ import annotations

import json
import random
from itertools import pairwise
from typing import Any

import pytest
import trio
from llm_server import (
    LLMServer,
    Reply,
    completion,
    content_reply,
    delayed,
    drop_connection,
    garbage_reply,
    html_reply,
    http_date,
    json_reply,
    llm_server_fixture,  # noqa: F401 -- the llm_server fixture, until tests/conftest.py registers the plugin
    provider_error_reply,
    rate_limited,
    server_error,
    tool_call,
    tool_call_reply,
)
from servers.helpers import RecordingSink

from zorkmcp.config import RetrySettings, SamplingSettings
from zorkmcp.errors import LLMHTTPError, LLMProviderError, LLMResponseError, LLMTransportError
from zorkmcp.llm import CompletionRequest, FunctionCall, LLMClient, ToolCall, open_llm_client
from zorkmcp.observability import EventRecorder

KEY = "sk-or-v1-SECRET-0123456789abcdef"
USER = [{"role": "user", "content": "West of House. What now?"}]
FAST = RetrySettings(jitter_factor=0.0)  # 1, 2, 4, 8, ... seconds; 5 retries; 120 s per attempt


def _client(server: LLMServer, **kwargs: Any) -> Any:
    kwargs.setdefault("retry", FAST)
    return open_llm_client(base_url=server.base_url, model="test/model", **kwargs)


def _waits(server: LLMServer) -> list[float]:
    """Virtual seconds between consecutive requests (the backoff waits: nothing else takes time)."""
    return [later.time - earlier.time for earlier, later in pairwise(server.requests)]


# --- the wire -------------------------------------------------------------------------


async def test_posts_model_and_messages_and_nothing_else(llm_server: LLMServer) -> None:
    llm_server.script(content_reply("open mailbox"))
    system = {"role": "system", "content": "You are ZorkGPT."}
    async with _client(llm_server) as client:
        response = await client.complete(CompletionRequest([system, *USER]))
    assert response.content == "open mailbox"
    assert response.tool_calls is None
    assert response.finish_reason == "stop"
    assert response.model == "test-model"
    assert response.usage == {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    (request,) = llm_server.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.headers["content-type"] == "application/json"
    assert set(request.json) == {"model", "messages", "stream"}
    assert request.json["model"] == "test/model"
    assert request.json["stream"] is False  # said, not left to the server's default
    assert request.messages == [
        {**system, "cache_control": {"type": "ephemeral"}},
        {**USER[0], "cache_control": {"type": "ephemeral"}},
    ]


async def test_every_parameter_given_is_sent_exactly(llm_server: LLMServer) -> None:
    llm_server.script(content_reply("ok"))
    tools = [{"type": "function", "function": {"name": "thinking__think", "parameters": {"type": "object"}}}]
    schema = {"type": "json_schema", "json_schema": {"name": "AgentResponse", "strict": True, "schema": {}}}
    async with _client(llm_server) as client:
        await client.complete(
            CompletionRequest(
                USER,
                tools=tools,
                tool_choice="auto",
                response_format=schema,
                sampling=SamplingSettings(temperature=0.4, top_p=0.9, top_k=40, min_p=0.05, max_tokens=256),
                stop=("\n\n", "END"),
            )
        )
    body = llm_server.requests[0].json
    assert body["tools"] == tools
    assert body["tool_choice"] == "auto"
    assert body["response_format"] == schema
    assert (body["temperature"], body["top_p"], body["top_k"], body["min_p"]) == (0.4, 0.9, 40, 0.05)
    assert body["max_tokens"] == 256
    assert body["stop"] == ["\n\n", "END"]


async def test_empty_tool_list_is_not_sent(llm_server: LLMServer) -> None:
    llm_server.script(content_reply("ok"))
    async with _client(llm_server) as client:
        await client.complete(CompletionRequest(USER, tools=[]))
    assert "tools" not in llm_server.requests[0].json


async def test_tool_schema_not_in_openai_format_is_refused_before_sending(llm_server: LLMServer) -> None:
    async with _client(llm_server) as client:
        with pytest.raises(ValueError, match=r"tools\[0\]\.function\.name must match"):
            await client.complete(
                CompletionRequest(USER, tools=[{"type": "function", "function": {"name": "thinking.think"}}])
            )
        with pytest.raises(ValueError, match=r'tools\[0\] must be an object with "type": "function"'):
            await client.complete(CompletionRequest(USER, tools=[{"name": "think"}]))
    assert llm_server.requests == []


async def test_authorization_only_when_a_key_is_given(llm_server: LLMServer) -> None:
    llm_server.script(content_reply("a"), content_reply("b"))
    async with _client(llm_server, api_key=KEY) as client:
        await client.complete(CompletionRequest(USER))
    async with _client(llm_server) as client:
        await client.complete(CompletionRequest(USER))
    with_key, without_key = llm_server.requests
    assert with_key.headers["authorization"] == f"Bearer {KEY}"
    assert "authorization" not in without_key.headers


async def test_extra_headers_per_client_and_per_call(llm_server: LLMServer) -> None:
    llm_server.script(content_reply("ok"))
    async with _client(llm_server, extra_headers={"X-Title": "mine", "X-A": "1"}) as client:
        await client.complete(CompletionRequest(USER, extra_headers={"X-A": "2", "X-B": "3"}))
    headers = llm_server.requests[0].headers
    assert (headers["x-title"], headers["x-a"], headers["x-b"]) == ("mine", "2", "3")


async def test_openrouter_gets_attribution_headers_and_local_servers_do_not() -> None:
    async with open_llm_client(base_url="https://openrouter.ai/api/v1", model="m") as client:
        assert client.headers == {"HTTP-Referer": "https://zorkgpt.com", "X-Title": "zorkmcp"}
    async with open_llm_client(
        base_url="https://openrouter.ai/api/v1", model="m", extra_headers={"X-Title": "my-agent"}
    ) as client:
        assert client.headers["X-Title"] == "my-agent"
    async with open_llm_client(base_url="http://localhost:11434/v1", model="m") as client:
        assert client.headers == {}


_ONCE = RetrySettings(max_retries=0)  # a request that misses its way fails at once


def _only_http_proxy(monkeypatch: pytest.MonkeyPatch, proxy: str) -> None:
    """The environment names one proxy, ``HTTP_PROXY``, and no exceptions to it."""
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.setenv("HTTP_PROXY", proxy)


async def test_a_remote_endpoint_goes_through_the_environment_s_proxy(
    llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _only_http_proxy(monkeypatch, llm_server.base_url.removesuffix("/v1"))  # the server plays the proxy
    llm_server.script(content_reply("north"))
    async with open_llm_client(base_url="http://model.example/v1", model="m", retry=_ONCE) as client:
        await client.complete(CompletionRequest(USER))
    assert [r.path for r in llm_server.requests] == ["http://model.example/v1/chat/completions"]


async def test_a_local_endpoint_is_reached_directly_whatever_the_proxy(
    llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _only_http_proxy(monkeypatch, "http://127.0.0.1:9")  # nothing listens there
    llm_server.script(content_reply("north"))
    async with _client(llm_server, retry=_ONCE) as client:
        await client.complete(CompletionRequest(USER))
    assert [r.path for r in llm_server.requests] == ["/v1/chat/completions"]


async def test_bad_base_url_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^the base URL ") as caught:
        async with open_llm_client(base_url="ftp://x/v1", model="m"):
            pass
    assert str(caught.value) == (
        "the base URL ftp://x/v1 must be an http:// or https:// URL with a host, got ftp://… (write e.g. "
        '"https://openrouter.ai/api/v1")'
    )
    with pytest.raises(ValueError, match=r"^the base URL ") as caught:
        async with open_llm_client(base_url="http://me:s3cret@127.0.0.1:99999/v1?key=k", model="m"):
            pass
    assert str(caught.value) == (
        "the base URL http://127.0.0.1:99999/v1 has port 99999: a port must be a number from 1 to 65535 "
        "(correct it, or leave it out for the default: 80 for http://, 443 for https://)"
    )


async def test_one_connection_is_kept_alive_across_requests(llm_server: LLMServer) -> None:
    llm_server.script(content_reply("a"), content_reply("b"), content_reply("c"))
    async with _client(llm_server) as client:
        for _ in range(3):
            await client.complete(CompletionRequest(USER))
    assert [r.connection for r in llm_server.requests] == [1, 1, 1]


async def test_caller_messages_are_not_modified(llm_server: LLMServer) -> None:
    llm_server.script(content_reply("a"))
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    async with _client(llm_server) as client:
        await client.complete(CompletionRequest(messages))
    assert messages == [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]


async def test_cache_control_can_be_switched_off(llm_server: LLMServer) -> None:
    llm_server.script(content_reply("a"), content_reply("b"))
    async with _client(llm_server, cache_control=False) as client:
        await client.complete(CompletionRequest(USER))
        # Markers already on the messages (zorkmcp.agent.build_messages adds them) are dropped too.
        await client.complete(CompletionRequest([{**USER[0], "cache_control": {"type": "ephemeral"}}]))
    assert llm_server.requests[0].messages == USER
    assert llm_server.requests[1].messages == USER


async def test_cache_control_setting_reaches_the_wire(llm_server: LLMServer) -> None:
    from zorkmcp.config import LLMSettings, Settings
    from zorkmcp.llm import open_chat_model

    llm_server.script(content_reply("a"))
    settings = Settings(llm=LLMSettings(client_base_url=llm_server.base_url, cache_control=False))
    async with open_chat_model(settings) as model:
        await model.complete(CompletionRequest([{"role": "system", "content": "s"}, *USER]))
    assert llm_server.requests[0].messages == [{"role": "system", "content": "s"}, *USER]


async def test_endpoint_rejecting_cache_control_says_how_to_switch_it_off(llm_server: LLMServer) -> None:
    rejected = {"error": {"message": "messages.0.cache_control: Extra inputs are not permitted", "code": 400}}
    llm_server.script(json_reply(rejected, status=400))
    async with _client(llm_server) as client:
        with pytest.raises(LLMHTTPError, match=r"set cache_control = false in \[tool\.zorkgpt\.llm\]"):
            await client.complete(CompletionRequest(USER))


# --- parsing --------------------------------------------------------------------------


async def test_tool_calls_are_parsed_and_content_dropped(llm_server: LLMServer) -> None:
    calls = [
        tool_call("thinking__think", {"thought": "hmm"}, id="call_a"),
        tool_call("game__look", id="call_b"),
    ]
    llm_server.script(tool_call_reply(*calls, content="I will think first"))
    async with _client(llm_server) as client:
        response = await client.complete(CompletionRequest(USER))
    assert response.content is None
    assert response.finish_reason == "tool_calls"
    assert response.tool_calls is not None
    assert [(c.id, c.type, c.function.name, c.function.arguments) for c in response.tool_calls] == [
        ("call_a", "function", "thinking__think", '{"thought": "hmm"}'),
        ("call_b", "function", "game__look", "{}"),
    ]


async def test_provider_quirks_in_tool_calls(llm_server: LLMServer) -> None:
    message = {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"function": {"name": "a", "arguments": {"x": 1}}},  # no id, no type, arguments as an object
            {"id": 42, "type": "function", "function": {"name": "b"}},  # numeric id, no arguments
            {"id": "", "function": {"name": "c", "arguments": ""}},  # empty id and arguments
        ],
    }
    llm_server.script(json_reply(completion(message, finish_reason="tool_calls")))
    async with _client(llm_server) as client:
        response = await client.complete(CompletionRequest(USER))
    assert response.tool_calls == (
        ToolCall(id="call_1_0", type="function", function=_fc("a", '{"x": 1}')),
        ToolCall(id="42", type="function", function=_fc("b", "{}")),
        ToolCall(id="call_1_2", type="function", function=_fc("c", "{}")),
    )


async def test_generated_tool_call_ids_never_repeat_within_a_conversation(llm_server: LLMServer) -> None:
    message = {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "a"}}]}
    llm_server.script(*(json_reply(completion(message, finish_reason="tool_calls")) for _ in range(3)))
    async with _client(llm_server) as client:
        ids = [(await client.complete(CompletionRequest(USER))).tool_calls[0].id for _ in range(3)]  # type: ignore[index]
    assert ids == ["call_1_0", "call_2_0", "call_3_0"]


def _fc(name: str, arguments: str) -> FunctionCall:
    return FunctionCall(name=name, arguments=arguments)


async def test_empty_tool_call_list_counts_as_none(llm_server: LLMServer) -> None:
    message = {"role": "assistant", "content": "look", "tool_calls": []}
    llm_server.script(json_reply(completion(message)))
    async with _client(llm_server) as client:
        response = await client.complete(CompletionRequest(USER))
    assert (response.content, response.tool_calls) == ("look", None)


async def test_content_parts_usage_and_model_fallback(llm_server: LLMServer) -> None:
    body = completion(
        {"role": "assistant", "content": [{"type": "text", "text": "go "}, {"type": "text", "text": "north"}]}
    )
    body["usage"] = {
        "prompt_tokens": 5,
        "cost": 0.001,
        "prompt_tokens_details": {"cached_tokens": 3},
        "flag": True,
    }
    del body["model"]
    llm_server.script(json_reply(body))
    async with _client(llm_server) as client:
        response = await client.complete(CompletionRequest(USER))
    assert response.content == "go north"
    assert response.usage == {"prompt_tokens": 5}
    assert response.model == "test/model"


async def test_empty_answer_has_neither_content_nor_tool_calls(llm_server: LLMServer) -> None:
    llm_server.script(json_reply({"choices": [{"index": 0, "finish_reason": "length"}]}))
    async with _client(llm_server) as client:
        response = await client.complete(CompletionRequest(USER))
    assert (response.content, response.tool_calls, response.finish_reason) == (None, None, "length")


async def test_tool_call_without_a_name_is_an_error(llm_server: LLMServer) -> None:
    message = {"role": "assistant", "tool_calls": [{"id": "x", "function": {"arguments": "{}"}}]}
    llm_server.script(json_reply(completion(message)))
    async with _client(llm_server) as client:
        with pytest.raises(
            LLMResponseError, match=r"choices\[0\]\.message\.tool_calls\[0\]\.function has no name"
        ):
            await client.complete(CompletionRequest(USER))


# --- errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "message", "hint"),
    [
        (400, "Invalid value for 'top_k'", ""),
        (401, "No auth credentials found", " — check the API key"),
        (403, "Forbidden", " — check the API key"),
        (
            404,
            "Model not found",
            r" — are the base URL \(http://127\.0\.0\.1:\d+/v1\) and the model name right\?",
        ),
        (422, "Unprocessable", ""),
    ],
)
async def test_other_4xx_fail_at_once_with_the_provider_message(
    llm_server: LLMServer, status: int, message: str, hint: str
) -> None:
    llm_server.script(json_reply({"error": {"message": message, "code": status}}, status=status))
    async with _client(llm_server) as client:
        with pytest.raises(
            LLMHTTPError, match=rf"answered HTTP {status} [A-Za-z ]+: {message}{hint}$"
        ) as info:
            await client.complete(CompletionRequest(USER))
    assert info.value.status == status
    assert info.value.provider_message == message
    assert json.loads(info.value.body_excerpt)["error"]["message"] == message
    assert len(llm_server.requests) == 1  # never retried


async def test_html_answer_says_the_base_url_is_probably_wrong(llm_server: LLMServer) -> None:
    llm_server.script(html_reply(200), html_reply(404))
    async with _client(llm_server) as client:
        with pytest.raises(
            LLMResponseError, match=r"the endpoint returned HTML — is the base URL right\? \(expected …/v1"
        ) as ok:
            await client.complete(CompletionRequest(USER))
        with pytest.raises(
            LLMHTTPError, match=r"HTTP 404 Not Found: the endpoint returned HTML — is the base URL right\?"
        ):
            await client.complete(CompletionRequest(USER))
    assert ok.value.status == 200
    assert ok.value.body_excerpt.startswith("<!DOCTYPE html>")


async def test_html_error_page_from_a_gateway_is_retried(llm_server: LLMServer, autojump_clock: Any) -> None:
    llm_server.script(html_reply(502), html_reply(502))
    async with _client(llm_server, retry=RetrySettings(max_retries=1, jitter_factor=0)) as client:
        with pytest.raises(
            LLMHTTPError,
            match=r"HTTP 502 Bad Gateway: an HTML error page \(a proxy or gateway in the way\?\) "
            r"\(gave up after 2 attempts\)$",
        ):
            await client.complete(CompletionRequest(USER))
    assert _waits(llm_server) == [1.0]


async def test_garbage_is_not_json(llm_server: LLMServer) -> None:
    llm_server.script(garbage_reply(), json_reply([1, 2, 3]))
    async with _client(llm_server) as client:
        with pytest.raises(LLMResponseError, match=r"answered HTTP 200, but the body is not JSON") as info:
            await client.complete(CompletionRequest(USER))
        with pytest.raises(LLMResponseError, match=r"the body is JSON list, not an object"):
            await client.complete(CompletionRequest(USER))
    assert info.value.body_excerpt == "this is not {json"
    assert len(llm_server.requests) == 2  # not retried


@pytest.mark.parametrize(
    ("body", "match"),
    [
        ({"id": "x", "object": "chat.completion"}, r"answered HTTP 200, but the answer has no choices$"),
        ({"id": "x", "choices": None}, r"answered HTTP 200, but the answer has no choices$"),
        ({"id": "x", "choices": {"0": {}}}, r"answered HTTP 200, but choices is not a list$"),
    ],
)
async def test_missing_choices_are_not_a_completion(
    llm_server: LLMServer, body: dict[str, Any], match: str
) -> None:
    llm_server.script(json_reply(body))
    async with _client(llm_server) as client:
        with pytest.raises(LLMResponseError, match=match):
            await client.complete(CompletionRequest(USER))


async def test_provider_error_inside_a_200(llm_server: LLMServer) -> None:
    llm_server.script(provider_error_reply("Context length exceeded", code=400))
    async with _client(llm_server) as client:
        with pytest.raises(
            LLMProviderError,
            match=r"answered HTTP 200 with a provider error \(code 400\): Context length exceeded",
        ) as info:
            await client.complete(CompletionRequest(USER))
    assert (info.value.status, info.value.provider_message) == (400, "Context length exceeded")
    assert len(llm_server.requests) == 1


async def test_provider_error_inside_a_choice_and_upstream_raw_message(llm_server: LLMServer) -> None:
    error = {"code": "bad", "message": "Provider returned error", "metadata": {"raw": "upstream said no"}}
    llm_server.script(json_reply({"choices": [{"index": 0, "error": error}]}))
    async with _client(llm_server) as client:
        with pytest.raises(
            LLMProviderError, match=r"\(code bad\): Provider returned error \(upstream said no\)"
        ):
            await client.complete(CompletionRequest(USER))


async def test_body_excerpt_is_short(llm_server: LLMServer) -> None:
    llm_server.script(server_error(400, "x" * 5000))
    async with _client(llm_server) as client:
        with pytest.raises(LLMHTTPError) as info:
            await client.complete(CompletionRequest(USER))
    assert len(info.value.body_excerpt) == 300
    assert info.value.provider_message == "x" * 300


# --- retries on virtual time ----------------------------------------------------------


async def test_retry_after_seconds_is_honoured(llm_server: LLMServer, autojump_clock: Any) -> None:
    llm_server.script(rate_limited(7), content_reply("ok"))
    async with _client(llm_server) as client:
        assert (await client.complete(CompletionRequest(USER))).content == "ok"
    assert _waits(llm_server) == [7.0]


async def test_gemini_s_retry_delay_in_the_body_is_honoured(
    llm_server: LLMServer, autojump_clock: Any
) -> None:
    # Gemini's OpenAI-compatible endpoint says how long to wait in its 429's body, not in a header:
    # before, the backoff's 1 s was waited, and the request came too early
    info = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "13s"}
    error = {"code": 429, "message": "Resource has been exhausted", "status": "RESOURCE_EXHAUSTED"}
    llm_server.script(json_reply([{"error": {**error, "details": [info]}}], status=429), content_reply("ok"))
    async with _client(llm_server) as client:
        assert (await client.complete(CompletionRequest(USER))).content == "ok"
    assert _waits(llm_server) == [13.0]


async def test_retry_after_http_date_is_measured_from_the_server_date(
    llm_server: LLMServer, autojump_clock: Any
) -> None:
    now = 1_700_000_000
    llm_server.script(rate_limited(http_date(now + 12), date=http_date(now)), content_reply("ok"))
    async with _client(llm_server) as client:
        await client.complete(CompletionRequest(USER))
    assert _waits(llm_server) == [12.0]


async def test_retry_after_is_capped_at_max_delay(llm_server: LLMServer, autojump_clock: Any) -> None:
    llm_server.script(rate_limited(3600), content_reply("ok"))
    async with _client(llm_server, retry=RetrySettings(jitter_factor=0, max_delay=30)) as client:
        await client.complete(CompletionRequest(USER))
    assert _waits(llm_server) == [30.0]


async def test_429_without_retry_after_backs_off_exponentially(
    llm_server: LLMServer, autojump_clock: Any
) -> None:
    llm_server.script(rate_limited(), rate_limited(), rate_limited(), content_reply("ok"))
    async with _client(llm_server) as client:
        await client.complete(CompletionRequest(USER))
    assert _waits(llm_server) == [1.0, 2.0, 4.0]


@pytest.mark.parametrize("status", [500, 502, 503, 504])
async def test_5xx_is_retried(llm_server: LLMServer, autojump_clock: Any, status: int) -> None:
    llm_server.script(server_error(status), server_error(status), content_reply("ok"))
    async with _client(llm_server) as client:
        assert (await client.complete(CompletionRequest(USER))).content == "ok"
    assert _waits(llm_server) == [1.0, 2.0]


async def test_backoff_is_capped_and_retries_run_out(llm_server: LLMServer, autojump_clock: Any) -> None:
    retry = RetrySettings(max_retries=4, initial_delay=3, exponential_base=3, max_delay=20, jitter_factor=0)
    llm_server.script(*[server_error(503, "overloaded")] * 5)
    async with _client(llm_server, retry=retry) as client:
        with pytest.raises(
            LLMHTTPError, match=r"HTTP 503 Service Unavailable: overloaded \(gave up after 5 attempts\)$"
        ) as info:
            await client.complete(CompletionRequest(USER))
    assert info.value.status == 503
    assert _waits(llm_server) == [3.0, 9.0, 20.0, 20.0]


async def test_max_retries_zero_means_one_attempt(llm_server: LLMServer, autojump_clock: Any) -> None:
    llm_server.script(server_error(500))
    async with _client(llm_server, retry=RetrySettings(max_retries=0)) as client:
        with pytest.raises(LLMHTTPError, match=r"HTTP 500 Internal Server Error: upstream exploded$"):
            await client.complete(CompletionRequest(USER))
    assert len(llm_server.requests) == 1


async def test_provider_error_with_a_5xx_code_is_retried(llm_server: LLMServer, autojump_clock: Any) -> None:
    llm_server.script(provider_error_reply("upstream timeout", code=502), content_reply("ok"))
    async with _client(llm_server) as client:
        assert (await client.complete(CompletionRequest(USER))).content == "ok"
    assert _waits(llm_server) == [1.0]


async def test_dropped_connection_is_retried(llm_server: LLMServer, autojump_clock: Any) -> None:
    llm_server.script(drop_connection(), drop_connection(), content_reply("ok"))
    async with _client(llm_server) as client:
        assert (await client.complete(CompletionRequest(USER))).content == "ok"
    assert [r.outcome for r in llm_server.requests] == ["dropped", "dropped", "answered"]
    assert _waits(llm_server) == [1.0, 2.0]


async def test_slow_answer_times_out_and_is_retried(llm_server: LLMServer, autojump_clock: Any) -> None:
    llm_server.script(delayed(content_reply("late"), 100), content_reply("ok"))
    retry = RetrySettings(jitter_factor=0, timeout_seconds=10)
    async with _client(llm_server, retry=retry) as client:
        start = trio.current_time()
        assert (await client.complete(CompletionRequest(USER))).content == "ok"
        assert trio.current_time() - start == 11.0  # 10 s attempt deadline + 1 s backoff
    assert _waits(llm_server) == [11.0]


async def test_timeouts_run_out(llm_server: LLMServer, autojump_clock: Any) -> None:
    llm_server.script(*[delayed(content_reply("late"), 100)] * 3)
    retry = RetrySettings(max_retries=2, jitter_factor=0, timeout_seconds=10)
    async with _client(llm_server, retry=retry) as client:
        with pytest.raises(
            LLMTransportError,
            match=r"no whole answer within 10s \(timeout_seconds in \[tool\.zorkgpt\.retry\] bounds each "
            r"request, the last byte of its answer included\) \(gave up after 3 attempts\)",
        ) as info:
            await client.complete(CompletionRequest(USER))
    assert info.value.status is None
    assert _waits(llm_server) == [11.0, 12.0]


async def test_connection_refused_is_retried_then_reported(autojump_clock: Any) -> None:
    listener = trio.socket.socket()
    await listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    listener.close()  # nothing listens there now
    retry = RetrySettings(max_retries=2, jitter_factor=0)
    async with open_llm_client(base_url=f"http://127.0.0.1:{port}/v1", model="m", retry=retry) as client:
        start = trio.current_time()
        with pytest.raises(
            LLMTransportError, match=r"failed: cannot connect to .*\(gave up after 3 attempts\)"
        ):
            await client.complete(CompletionRequest(USER))
        assert trio.current_time() - start == 3.0  # waits of 1 s and 2 s


@pytest.mark.parametrize(
    ("retry", "reply", "error"),
    [
        (RetrySettings(retry_on_rate_limit=False), rate_limited(1), LLMHTTPError),
        (RetrySettings(retry_on_server_error=False), server_error(500), LLMHTTPError),
        (RetrySettings(retry_on_server_error=False), provider_error_reply(code=503), LLMProviderError),
        (RetrySettings(retry_on_timeout=False), drop_connection(), LLMTransportError),
        (
            RetrySettings(retry_on_timeout=False, timeout_seconds=5),
            delayed(content_reply("x"), 9),
            LLMTransportError,
        ),
    ],
)
async def test_each_retry_switch_turns_its_retries_off(
    llm_server: LLMServer, autojump_clock: Any, retry: RetrySettings, reply: Reply, error: type[Exception]
) -> None:
    llm_server.script(reply, content_reply("never reached"))
    async with _client(llm_server, retry=retry) as client:
        with pytest.raises(error):
            await client.complete(CompletionRequest(USER))
    assert len(llm_server.requests) == 1


async def test_jitter_comes_from_the_injected_rng(llm_server: LLMServer, autojump_clock: Any) -> None:
    retry = RetrySettings(initial_delay=2, jitter_factor=0.25)
    llm_server.script(server_error(), server_error(), server_error(), content_reply("ok"))
    async with _client(llm_server, retry=retry, rng=random.Random(7)) as client:
        await client.complete(CompletionRequest(USER))
    twin = random.Random(7)
    expected = [2 * 2**n * (1 + twin.uniform(-0.25, 0.25)) for n in range(3)]
    assert _waits(llm_server) == pytest.approx(expected, abs=1e-9)
    assert _waits(llm_server) != [2.0, 4.0, 8.0]
    assert all(0.75 * 2 * 2**n <= w <= 1.25 * 2 * 2**n for n, w in enumerate(_waits(llm_server)))


async def test_retries_are_reported_as_events(llm_server: LLMServer, autojump_clock: Any) -> None:
    sink = RecordingSink()
    llm_server.script(rate_limited(4), content_reply("ok"))
    async with _client(llm_server, events=sink) as client:
        await client.complete(CompletionRequest(USER))
    ((name, fields),) = sink.events
    assert name == "llm_retry"
    assert {k: fields[k] for k in ("retry", "max_retries", "delay", "kind", "status")} == {
        "retry": 1,
        "max_retries": 5,
        "delay": 4.0,
        "kind": "rate_limit",
        "status": 429,
    }
    ((level, line),) = sink.lines
    assert level == "WARNING"
    assert line.endswith("retry 1/5 in 4.00s (Retry-After)")


# --- cancellation ---------------------------------------------------------------------


async def test_cancelling_the_caller_aborts_the_request_at_once(
    llm_server: LLMServer, autojump_clock: Any
) -> None:
    llm_server.script(delayed(content_reply("too late"), 1000), content_reply("next"))
    async with _client(llm_server) as client:
        start = trio.current_time()
        with trio.move_on_after(5) as scope:
            await client.complete(CompletionRequest(USER))
        assert scope.cancelled_caught
        assert trio.current_time() - start == 5.0
        # the client is still usable; the aborted connection is not reused
        assert (await client.complete(CompletionRequest(USER))).content == "next"
        assert trio.current_time() - start == 5.0
    assert [r.connection for r in llm_server.requests] == [1, 2]


async def test_cancelling_during_backoff_stops_waiting(llm_server: LLMServer, autojump_clock: Any) -> None:
    llm_server.script(rate_limited(100), content_reply("never"))
    async with _client(llm_server) as client:
        start = trio.current_time()
        with trio.move_on_after(10) as scope:
            await client.complete(CompletionRequest(USER))
    assert scope.cancelled_caught
    assert trio.current_time() - start == 10.0
    assert len(llm_server.requests) == 1


# --- the key never shows --------------------------------------------------------------


async def test_key_is_not_in_reprs(llm_server: LLMServer) -> None:
    async with _client(llm_server, api_key=KEY) as client:
        assert isinstance(client, LLMClient)
        assert KEY not in repr(client)
        assert "api_key=<set>" in repr(client)


async def test_key_echoed_by_the_provider_is_scrubbed_everywhere(
    llm_server: LLMServer, autojump_clock: Any
) -> None:
    echo = f"Incorrect API key provided: {KEY}. You can find your key at https://example.invalid"
    llm_server.script(
        server_error(500, echo),  # retried: logged
        json_reply({"error": {"message": echo}}, status=401),
        Reply(body=f"<html>{KEY}</html>".encode(), headers=(("content-type", "text/html"),)),
        provider_error_reply(echo, code=400),
        garbage_reply(f"oops {KEY}".encode()),
    )
    errors: list[Exception] = []
    recorder = EventRecorder()
    async with _client(llm_server, api_key=KEY, events=recorder) as client:
        for _ in range(4):
            with pytest.raises((LLMHTTPError, LLMResponseError, LLMProviderError)) as info:
                await client.complete(CompletionRequest(USER))
            errors.append(info.value)
    assert llm_server.requests[0].headers["authorization"] == f"Bearer {KEY}"  # it was sent...
    for error in errors:  # ...and is nowhere else
        for text in (str(error), repr(error), error.body_excerpt, error.provider_message or ""):
            assert KEY not in text
    assert "[REDACTED]" in str(errors[0])
    assert "[REDACTED]" in errors[1].body_excerpt
    reported = json.dumps(recorder.recent) + "\n".join(recorder.lines)
    assert reported.count("[REDACTED]") >= 1  # the retried 500's error, in llm_retry and its log line
    assert KEY not in reported
