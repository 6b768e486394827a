"""What OpenAI-compatible providers and the proxies in front of them answer, against the loopback
server: an HTML error page that is not the model's (nginx's 413, Cloudflare's 403), a redirect,
OpenAI's 429 ``insufficient_quota``, Groq's 400 ``tool_use_failed``, and a choice that holds its
answer somewhere other than ``message``."""

from __future__ import annotations

import itertools
from typing import Any

import trio
from llm_server import LLMServer, Reply, agent_reply, json_reply

from zorkmcp.config import RetrySettings
from zorkmcp.errors import LLMHTTPError
from zorkmcp.llm import CompletionRequest, open_llm_client

USER = [{"role": "user", "content": "West of House. What now?"}]
FAST = RetrySettings(jitter_factor=0.0)  # 1, 2, 4, 8, 16 s between 5 retries
ANSWER = '{"thinking": "scripted thinking", "action": "look", "new_objective": null}'


def _client(server: LLMServer) -> Any:
    return open_llm_client(base_url=server.base_url, model="test/model", retry=FAST)


def _page(status: int, title: str, *headers: tuple[str, str]) -> Reply:
    body = f"<html>\r\n<head><title>{title}</title></head>\r\n<body>\r\n<center><h1>{title}</h1></center>\r\n"
    body += "<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n"
    return Reply(status=status, body=body.encode(), headers=(("content-type", "text/html"), *headers))


def _waits(server: LLMServer) -> list[float]:
    times = [request.time for request in server.requests]
    return [later - earlier for earlier, later in itertools.pairwise(times)]


async def _fails(server: LLMServer) -> str:
    async with _client(server) as client:
        try:
            await client.complete(CompletionRequest(USER))
        except LLMHTTPError as error:
            return str(error).replace(server.base_url, "{base}")
    raise AssertionError("the request did not fail")


# --- an HTML page from a proxy is not a wrong base URL ------------------------------------------


async def test_nginx_413_says_the_request_is_too_large_not_that_the_base_url_is_wrong(
    llm_server: LLMServer,
) -> None:
    """nginx takes 1 MiB unless told otherwise; a long turn of tool results is more."""
    llm_server.script(_page(413, "413 Request Entity Too Large"))
    assert await _fails(llm_server) == (
        "POST {base}/chat/completions answered HTTP 413 Request Entity Too Large: an HTML error page (a "
        "proxy or gateway in the way?) — the request is larger than the endpoint, or a proxy in front of "
        "it, takes (nginx: 1 MiB unless client_max_body_size is raised); a smaller max_result_bytes in "
        "[tool.zorkgpt.mcp] keeps it smaller"
    )
    assert len(llm_server.requests) == 1


async def test_a_proxy_s_403_page_blames_the_proxy_or_the_key_not_the_base_url(llm_server: LLMServer) -> None:
    llm_server.script(_page(403, "Attention Required! | Cloudflare"))
    assert await _fails(llm_server) == (
        "POST {base}/chat/completions answered HTTP 403 Forbidden: an HTML error page (a proxy or gateway "
        "in the way?) — check the API key"
    )


async def test_a_404_page_still_says_the_base_url_is_probably_wrong(llm_server: LLMServer) -> None:
    llm_server.script(_page(404, "404 Not Found"))
    assert await _fails(llm_server) == (
        "POST {base}/chat/completions answered HTTP 404 Not Found: the endpoint returned HTML — is the base "
        "URL right? (expected …/v1, e.g. https://openrouter.ai/api/v1; got {base})"
    )


# --- a redirect (http:// for https://, a moved endpoint) -----------------------------------------


async def test_a_redirect_names_the_base_url_it_leads_to(llm_server: LLMServer) -> None:
    llm_server.script(
        _page(301, "301 Moved Permanently", ("location", "https://api.example.com/v1/chat/completions"))
    )
    assert await _fails(llm_server) == (
        "POST {base}/chat/completions answered HTTP 301 Moved Permanently: a redirect to "
        "https://api.example.com/v1/chat/completions (zorkmcp does not follow redirects) — set the base "
        "URL to https://api.example.com/v1"
    )


async def test_a_relative_redirect_with_no_body_names_where_it_leads(llm_server: LLMServer) -> None:
    llm_server.script(Reply(status=308, headers=(("location", "/api/v1/chat/completions?key=secret"),)))
    assert await _fails(llm_server) == (
        "POST {base}/chat/completions answered HTTP 308 Permanent Redirect: a redirect to "
        "{base_host}/api/v1/chat/completions (zorkmcp does not follow redirects) — set the base URL to "
        "{base_host}/api/v1"
    ).replace("{base_host}", llm_server.base_url.removesuffix("/v1"))


# --- 429s and 400s that their error code tells apart -----------------------------------------------

INSUFFICIENT_QUOTA = json_reply(
    {
        "error": {
            "message": "You exceeded your current quota, please check your plan and billing details.",
            "type": "insufficient_quota",
            "param": None,
            "code": "insufficient_quota",
        }
    },
    status=429,
)


async def test_insufficient_quota_is_not_retried_as_a_rate_limit(
    llm_server: LLMServer, autojump_clock: Any
) -> None:
    """No wait brings credit back: the user hears at once, not after six requests and 31 s."""
    llm_server.script(INSUFFICIENT_QUOTA, agent_reply("look"))
    started = trio.current_time()
    assert await _fails(llm_server) == (
        "POST {base}/chat/completions answered HTTP 429 Too Many Requests: You exceeded your current quota, "
        "please check your plan and billing details. — no wait mends a quota or credit that is used up: "
        "not retried"
    )
    assert len(llm_server.requests) == 1
    assert trio.current_time() - started == 0.0


async def test_a_plain_429_is_still_retried(llm_server: LLMServer, autojump_clock: Any) -> None:
    rate_limited = json_reply(
        {"error": {"message": "Rate limit reached", "type": "requests", "code": "rate_limit_exceeded"}},
        status=429,
    )
    llm_server.script(rate_limited, agent_reply("look"))
    async with _client(llm_server) as client:
        response = await client.complete(CompletionRequest(USER))
    assert response.content == ANSWER
    assert _waits(llm_server) == [1.0]


TOOL_USE_FAILED = json_reply(
    {
        "error": {
            "message": "Failed to call a function. Please adjust your prompt. See 'failed_generation' for "
            "more details.",
            "type": "invalid_request_error",
            "code": "tool_use_failed",
            "failed_generation": '<function=game__look>{"x": }</function>',
        }
    },
    status=400,
)


async def test_groq_tool_use_failed_is_sampled_again(llm_server: LLMServer, autojump_clock: Any) -> None:
    """The model wrote a call Groq could not parse: a new sample usually does not, as after a 5xx."""
    llm_server.script(TOOL_USE_FAILED, agent_reply("look"))
    async with _client(llm_server) as client:
        response = await client.complete(CompletionRequest(USER))
    assert response.content == ANSWER
    assert _waits(llm_server) == [1.0]
    assert llm_server.requests[0].json == llm_server.requests[1].json


async def test_groq_tool_use_failed_every_time_gives_up_after_the_retries(
    llm_server: LLMServer, autojump_clock: Any
) -> None:
    llm_server.script(*[TOOL_USE_FAILED] * 6)
    assert await _fails(llm_server) == (
        "POST {base}/chat/completions answered HTTP 400 Bad Request: Failed to call a function. Please "
        "adjust your prompt. See 'failed_generation' for more details. (gave up after 6 attempts)"
    )
    assert _waits(llm_server) == [1.0, 2.0, 4.0, 8.0, 16.0]


async def test_another_400_is_not_retried(llm_server: LLMServer) -> None:
    too_long = json_reply(
        {
            "object": "error",
            "message": "This model's maximum context length is 4096 tokens.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
        status=400,
    )
    llm_server.script(too_long, agent_reply("look"))
    assert await _fails(llm_server) == (
        "POST {base}/chat/completions answered HTTP 400 Bad Request: This model's maximum context length is "
        "4096 tokens."
    )
    assert len(llm_server.requests) == 1


# --- a choice that holds its answer elsewhere than in "message" ------------------------------------


async def test_a_choice_with_text_instead_of_a_message_keeps_the_text(llm_server: LLMServer) -> None:
    """Some proxies answer a chat request in a text completion's shape (``choices[0].text``)."""
    body = {
        "id": "chatcmpl-026cc97b",
        "object": "text_completion",
        "model": "wolfram/miquliz-120b-v2.0",
        "choices": [{"index": 0, "text": ANSWER, "finish_reason": "eos_token", "logprobs": None}],
        "usage": {"prompt_tokens": 12644, "completion_tokens": 21, "total_tokens": 12665},
    }
    llm_server.script(json_reply(body))
    async with _client(llm_server) as client:
        response = await client.complete(CompletionRequest(USER))
    assert response.content == ANSWER
    assert response.tool_calls is None
    assert response.finish_reason == "eos_token"
    assert response.model == "wolfram/miquliz-120b-v2.0"
    assert response.usage == {"prompt_tokens": 12644, "completion_tokens": 21, "total_tokens": 12665}


async def test_one_stream_chunk_as_the_body_is_read_from_its_delta(llm_server: LLMServer) -> None:
    chunk = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "test-model",
        "choices": [
            {
                "index": 0,
                "delta": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "game__look", "arguments": "{}"},
                        }
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
    }
    llm_server.script(json_reply(chunk))
    async with _client(llm_server) as client:
        response = await client.complete(CompletionRequest(USER))
    assert response.content is None
    assert response.tool_calls is not None
    assert [(call.id, call.function.name, call.function.arguments) for call in response.tool_calls] == [
        ("c1", "game__look", "{}")
    ]
