"""Probes of how zorkmcp answers an MCP server's ``sampling/createMessage``, field by field.

Real parts only: the SDK's server of ``tests/servers/sampling_probe.py`` in process (it sends raw
params, so every field of the MCP specification's ``CreateMessageRequest`` is the test's to choose)
and the loopback chat-completions server (``tests/llm_server.py``) behind a real ``LLMClient``, on
the mock clock.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
import trio
import trio.testing
from llm_server import LLMServer, Reply, content_reply, json_reply
from servers.helpers import RecordingSink

from zorkmcp.config import McpConfig, McpSettings, RetrySettings, ServerConfig
from zorkmcp.llm import open_llm_client
from zorkmcp.mcp import McpManager, ModelSampler, ToolCallResult

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from zorkmcp.llm import ChatModel

API_KEY = "sk-probe-SECRET-0123456789"
CACHED = {"type": "ephemeral"}
LAMP = {"role": "user", "content": {"type": "text", "text": "Where is the lamp?"}}
NO_TOOLS = "but zorkmcp does not sample with tools (it declares no sampling.tools capability)"


@pytest.fixture
async def model(llm_server: LLMServer) -> AsyncIterator[ChatModel]:
    """A real ``LLMClient`` on the loopback server, with an API key (no retries)."""
    async with open_llm_client(
        base_url=llm_server.base_url,
        model="test-model",
        api_key=API_KEY,
        retry=RetrySettings(max_retries=0),
    ) as client:
        yield client


def manager_of(model: ChatModel, events: RecordingSink, **options: Any) -> McpManager:
    server = ServerConfig(
        name="prober",
        type="inprocess",
        module="servers.sampling_probe:create_server",
        sampling=True,
        **options,
    )
    return McpManager(
        McpConfig(servers=(server,)), McpSettings(enabled=True), events=events, sampler=ModelSampler(model)
    )


async def ask(model: ChatModel, events: RecordingSink, params: dict[str, Any], **raw: Any) -> Any:
    """One turn, one call of ``prober.raw``: what the server got back."""
    async with manager_of(model, events).open_turn() as toolbox:
        answer = await toolbox.call_tool("prober.raw", {"params": params, **raw})
    assert not answer.is_error, answer
    return answer.content


def sampled(events: RecordingSink) -> list[dict[str, Any]]:
    return [fields for name, fields in events.events if name == "mcp_sampling"]


def errors(events: RecordingSink) -> list[str | None]:
    return [fields["error"] for fields in sampled(events)]


TOOL_USE = {"type": "tool_use", "id": "call_1", "name": "look", "input": {}}
TOOL_RESULT = {"type": "tool_result", "toolUseId": "call_1", "content": [{"type": "text", "text": "A lamp."}]}


async def test_tool_content_in_the_messages_is_refused_not_shown_to_the_model_as_placeholders(
    llm_server: LLMServer, model: ChatModel, autojump_clock: trio.testing.MockClock
) -> None:
    # zorkmcp declares no sampling.tools, so a tool_use/tool_result turn is not one it can translate;
    # it used to reach the model as "[tool_use content not shown]" / "[tool_result content not shown]"
    # and the server got an answer to a conversation the model could not read.
    events = RecordingSink()
    params = {
        "messages": [
            LAMP,
            {"role": "assistant", "content": [TOOL_USE]},
            {"role": "user", "content": [TOOL_RESULT]},
        ],
        "maxTokens": 50,
    }
    answers = await ask(model, events, params)
    refusal = f"a message holds tool_use content, {NO_TOOLS}"
    assert answers == [{"error": refusal, "code": -32602}]
    assert llm_server.bodies == []
    assert errors(events) == [refusal]


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"messages": [], "maxTokens": 50}, "the request has no messages"),
        ({"messages": [LAMP], "maxTokens": 0}, "maxTokens must be at least 1, got 0"),
        (
            {"messages": [LAMP], "maxTokens": 50, "temperature": 3},
            "temperature must be between 0 and 2, got 3.0",
        ),
        (
            {
                "messages": [LAMP],
                "maxTokens": 50,
                "tools": [{"name": "look", "inputSchema": {"type": "object"}}],
                "toolChoice": {"mode": "auto"},
            },
            f"the request sets tools or toolChoice, {NO_TOOLS}",
        ),
        (
            {"messages": [LAMP], "maxTokens": 50, "toolChoice": {"mode": "none"}},
            f"the request sets tools or toolChoice, {NO_TOOLS}",
        ),
    ],
    ids=["no-messages", "maxTokens-0", "temperature-3", "tools", "toolChoice"],
)
async def test_a_request_with_invalid_params_gets_the_invalid_params_error_code(
    llm_server: LLMServer,
    model: ChatModel,
    autojump_clock: trio.testing.MockClock,
    params: dict[str, Any],
    message: str,
) -> None:
    # JSON-RPC -32602 (invalid params), as the SDK answers a request its types refuse (no maxTokens)
    # and as the specification's sampling section names for bad tool content; it was -32600.
    events = RecordingSink()
    answers = await ask(model, events, params)
    assert answers == [{"error": message, "code": -32602}]
    assert llm_server.bodies == []
    assert errors(events) == [message]


@pytest.mark.parametrize(
    ("finish_reason", "result"),
    [
        ("content_filter", {"stopReason": "content_filter"}),
        (None, {}),
        ("stop", {"stopReason": "endTurn"}),
        ("length", {"stopReason": "maxTokens"}),
    ],
)
async def test_the_stop_reason_is_the_models_own(
    llm_server: LLMServer,
    model: ChatModel,
    autojump_clock: trio.testing.MockClock,
    finish_reason: str | None,
    result: dict[str, str],
) -> None:
    # A content-filtered answer (cut, not finished) was reported as "endTurn", and so was an answer
    # whose finish_reason the endpoint did not report (stopReason is optional: "if known").
    events = RecordingSink()
    llm_server.script(content_reply("Take the", finish_reason=finish_reason))
    answers = await ask(model, events, {"messages": [LAMP], "maxTokens": 50})
    assert answers == [
        {
            "role": "assistant",
            "content": {"type": "text", "text": "Take the"},
            "model": "test-model",
            **result,
        }
    ]


async def test_the_fields_the_model_cannot_use_are_dropped_and_the_rest_translated(
    llm_server: LLMServer, model: ChatModel, autojump_clock: trio.testing.MockClock
) -> None:
    events = RecordingSink()
    llm_server.script(content_reply("north"))
    params = {
        "messages": [
            LAMP,
            {"role": "assistant", "content": {"type": "text", "text": "In the"}},
            {"role": "user", "content": [{"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}]},
        ],
        "systemPrompt": "Be brief.",
        "maxTokens": 10**12,
        "temperature": 0,
        "stopSequences": ["\n"],
        "includeContext": "allServers",
        "modelPreferences": {"hints": [{"name": "claude"}], "costPriority": 0.9},
        "metadata": {"trace": "abc"},
        "_meta": {"progressToken": "p1"},
    }
    answers = await ask(model, events, params)
    assert answers == [
        {
            "role": "assistant",
            "content": {"type": "text", "text": "north"},
            "model": "test-model",
            "stopReason": "endTurn",
        }
    ]
    assert llm_server.bodies == [
        {
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "Be brief.", "cache_control": CACHED},
                {"role": "user", "content": "Where is the lamp?", "cache_control": CACHED},
                {"role": "assistant", "content": "In the"},
                {
                    "role": "user",
                    "content": "[audio: audio/wav, 8 bytes of base64 not shown]",
                    "cache_control": CACHED,
                },
            ],
            "stream": False,
            "temperature": 0.0,
            "max_tokens": 4096,
            "stop": ["\n"],
        }
    ]


async def test_a_failed_model_request_is_an_internal_error_without_the_api_key(
    llm_server: LLMServer, model: ChatModel, autojump_clock: trio.testing.MockClock
) -> None:
    events = RecordingSink()
    echoed = {"error": {"message": f"Incorrect API key provided: {API_KEY}", "type": "auth"}}
    llm_server.script(json_reply(echoed, status=401))
    [answer] = await ask(model, events, {"messages": [LAMP], "maxTokens": 50})
    assert llm_server.requests[0].headers["authorization"] == f"Bearer {API_KEY}"
    # the server is told the kind of failure; the endpoint's URL and the provider's words (which
    # may echo part of a key) are the user's: in the event and the log, the key itself redacted
    assert answer == {"error": "the model request failed (HTTP 401)", "code": -32603}
    [error] = [fields["error"] for fields in sampled(events)]
    assert error.startswith("the model request failed: POST http://127.0.0.1:")
    assert error.endswith(
        "answered HTTP 401 Unauthorized: Incorrect API key provided: [REDACTED] — check the API key"
    )
    assert API_KEY not in repr(events.events) + repr(events.lines)


async def test_an_unreachable_model_is_said_to_the_server_without_its_address(
    autojump_clock: trio.testing.MockClock,
) -> None:
    events = RecordingSink()
    with trio.socket.socket() as unused:  # a port nothing listens on
        await unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    async with open_llm_client(
        base_url=f"http://127.0.0.1:{port}/v1", model="m", api_key=API_KEY, retry=RetrySettings(max_retries=0)
    ) as gone:
        [answer] = await ask(gone, events, {"messages": [LAMP], "maxTokens": 50})
    assert answer == {
        "error": "the model request failed "
        "(the model's endpoint could not be reached, or did not answer in time)",
        "code": -32603,
    }
    [error] = [fields["error"] for fields in sampled(events)]
    assert error.startswith(
        f"the model request failed: POST http://127.0.0.1:{port}/v1/chat/completions failed: "
    )


async def test_a_request_the_server_withdraws_cancels_the_model_request(
    llm_server: LLMServer, model: ChatModel, autojump_clock: trio.testing.MockClock
) -> None:
    events = RecordingSink()
    never = trio.Event()
    llm_server.script(Reply(hold=never))
    answers = await ask(model, events, {"messages": [LAMP], "maxTokens": 50}, wait=2)
    await trio.testing.wait_all_tasks_blocked()
    assert answers == [{"error": "Request 'sampling/createMessage' timed out", "code": -32001}]
    assert [(fields["duration_ms"], fields["error"]) for fields in sampled(events)] == [
        (2000.0, "cancelled: the server withdrew the request, or the session closed")
    ]


async def test_a_request_sent_after_the_tool_call_ended_is_refused(
    llm_server: LLMServer, model: ChatModel, autojump_clock: trio.testing.MockClock
) -> None:
    events = RecordingSink()
    manager = manager_of(model, events, lifecycle="per_episode")
    async with manager.open_episode() as episode, manager.open_turn(episode) as toolbox:
        started = await toolbox.call_tool("prober.later", {"params": {"messages": [LAMP], "maxTokens": 50}})
        await trio.sleep(5)  # virtual: the server sends its request 1s after the call ended
        outcome = await toolbox.call_tool("prober.outcome", {})
    refusal = "zorkmcp answers sampling/createMessage only during a tool call to this server"
    assert started == ToolCallResult(content="started")
    assert outcome == ToolCallResult(content={"error": refusal, "code": -32600})
    assert llm_server.bodies == []
    assert [(fields["tool"], fields["error"]) for fields in sampled(events)] == [(None, refusal)]
