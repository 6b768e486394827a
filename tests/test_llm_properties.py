"""Properties 10–15 of seeds 001 with Hypothesis, through the real loopback server where it matters."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import pytest
import trio
import trio.testing
from backends import AUTOJUMP_THRESHOLD
from hypothesis import given, settings
from hypothesis import strategies as st
from llm_server import LLMServer, Reply, completion, content_reply, json_reply, serve_llm, tool_call

from zorkmcp.config import RetrySettings, SamplingSettings
from zorkmcp.llm import (
    CompletionRequest,
    FunctionCall,
    LLMClient,
    LLMResponse,
    ToolCall,
    open_llm_client,
    supports_tool_calling,
    with_cache_control,
)

PROPERTY = settings(max_examples=100, deadline=None)
USER = [{"role": "user", "content": "West of House"}]
NO_RETRY = RetrySettings(max_retries=0)


def exchange(reply: Reply, send: Callable[[LLMClient], Awaitable[Any]]) -> tuple[Any, LLMServer]:
    """Serve ``reply`` once, let ``send`` talk to it through a real client, on a MockClock."""
    outcome: list[Any] = []

    async def main() -> None:
        async with (
            serve_llm(reply) as server,
            open_llm_client(base_url=server.base_url, model="prop/model", retry=NO_RETRY) as client,
        ):
            outcome.append(await send(client))
            outcome.append(server)

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=AUTOJUMP_THRESHOLD))
    return outcome[0], outcome[1]


# --- strategies -----------------------------------------------------------------------

json_scalars = (
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False) | st.text()
)
json_values = st.recursive(
    json_scalars.filter(lambda v: not (isinstance(v, float) and v in (float("inf"), float("-inf")))),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
WIRE_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"
wire_names = st.text(alphabet=WIRE_ALPHABET, min_size=1, max_size=64)
property_schemas = st.sampled_from(
    [
        {"type": "string"},
        {"type": "integer"},
        {"type": "boolean"},
        {"type": "array", "items": {"type": "string"}},
    ]
)
openai_tools = st.builds(
    lambda name, description, props, required: {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": props, "required": sorted(props)[:required]},
        },
    },
    wire_names,
    st.text(max_size=40),
    st.dictionaries(st.text(alphabet=WIRE_ALPHABET, min_size=1, max_size=16), property_schemas, max_size=4),
    st.integers(0, 4),
)
bad_names = st.text(max_size=70).filter(lambda n: re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", n) is None)

raw_tool_calls = st.fixed_dictionaries(
    {
        "function": st.fixed_dictionaries(
            {"name": st.text(min_size=1, max_size=30)},
            optional={
                "arguments": st.text()
                | st.dictionaries(
                    st.text(max_size=6), json_scalars.filter(lambda v: not isinstance(v, float)), max_size=3
                )
            },
        )
    },
    optional={"id": st.text(max_size=20), "type": st.just("function")},
)
assistant_messages = st.fixed_dictionaries(
    {"role": st.just("assistant")},
    optional={
        "content": st.none() | st.text(),
        "tool_calls": st.none() | st.lists(raw_tool_calls, max_size=4),
    },
)


def expected_ids(raw: list[dict[str, Any]], taken: frozenset[str] = frozenset()) -> list[str]:
    """The provider's id when the conversation (``taken``) and the answer do not hold it yet; else
    ``call_1_<index>`` (answer 1, the call's index), with ``_2``, ``_3``… after it if the conversation
    or the answer holds that too (a provider's own id in the answer is never taken from it)."""
    ids: list[str] = []
    provider_ids = {item["id"] for item in raw if item.get("id")}
    for index, item in enumerate(raw):
        given = item.get("id")
        if given and given not in ids and given not in taken:
            ids.append(given)
            continue
        fresh, suffix = f"call_1_{index}", 2
        while fresh in ids or fresh in taken or fresh in provider_ids:
            fresh, suffix = f"call_1_{index}_{suffix}", suffix + 1
        ids.append(fresh)
    return ids


def expected_calls(raw: list[dict[str, Any]]) -> tuple[ToolCall, ...]:
    calls = []
    for index, item in enumerate(raw):
        function = item["function"]
        arguments = function.get("arguments")
        if arguments is None or arguments == "":
            arguments = "{}"
        elif not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        calls.append(
            ToolCall(
                id=expected_ids(raw)[index],
                type=item.get("type", "function"),
                function=FunctionCall(name=function["name"], arguments=arguments),
            )
        )
    return tuple(calls)


def is_openai_tool(tool: Mapping[str, Any]) -> bool:
    function = tool.get("function")
    return (
        tool.get("type") == "function"
        and isinstance(function, Mapping)
        and re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", function.get("name", "")) is not None
        and isinstance(function.get("parameters", {}), Mapping)
        and function.get("parameters", {}).get("type", "object") == "object"
    )


# --- property 10 ----------------------------------------------------------------------


@PROPERTY
@given(tools=st.lists(openai_tools, min_size=1, max_size=5))
def test_property_10_tool_schemas_go_out_in_openai_format(tools: list[dict[str, Any]]) -> None:
    """Property 10: a request with tools carries them, unchanged, in OpenAI format."""
    _, server = exchange(
        content_reply("ok"),
        lambda client: client.complete(CompletionRequest(USER, tools=tools, tool_choice="auto")),
    )
    sent = server.requests[0].json
    assert sent["tools"] == tools
    assert all(is_openai_tool(tool) for tool in sent["tools"])
    assert sent["tool_choice"] == "auto"


@PROPERTY
@given(good=st.lists(openai_tools, max_size=3), bad=bad_names, where=st.integers(0, 3))
def test_property_10_tools_not_in_openai_format_never_leave(
    good: list[dict[str, Any]], bad: str, where: int
) -> None:
    """Property 10: a tool whose name breaks the OpenAI rule is refused before anything is sent."""
    tools = list(good)
    position = min(where, len(tools))
    tools.insert(position, {"type": "function", "function": {"name": bad, "parameters": {"type": "object"}}})

    async def send(client: LLMClient) -> str:
        with pytest.raises(ValueError, match=rf"tools\[{position}\]\.function\.name must match") as info:
            await client.complete(CompletionRequest(USER, tools=tools))
        return str(info.value)

    _, server = exchange(content_reply("unused"), send)
    assert server.requests == []


# --- properties 11 and 12 -------------------------------------------------------------


@PROPERTY
@given(calls=st.lists(raw_tool_calls, min_size=1, max_size=5), content=st.none() | st.text())
def test_property_11_tool_calls_are_parsed(calls: list[dict[str, Any]], content: str | None) -> None:
    """Property 11: tool calls in the answer come back in order with ids, names and arguments."""
    message = {"role": "assistant", "content": content, "tool_calls": calls}
    response, _ = exchange(
        json_reply(completion(message, finish_reason="tool_calls")),
        lambda c: c.complete(CompletionRequest(USER)),
    )
    assert isinstance(response, LLMResponse)
    assert response.tool_calls == expected_calls(calls)
    assert response.finish_reason == "tool_calls"
    for raw, call in zip(calls, response.tool_calls, strict=True):
        if raw.get("id") and [c.get("id") for c in calls].count(raw["id"]) == 1:
            assert call.id == raw["id"]  # a provider's id that is new is kept, always
        assert call.type == "function"
    assert len({call.id for call in response.tool_calls}) == len(calls)  # never twice in one answer


# Ids from a tiny alphabet, so that answers repeat each other's and the conversation's.
small_ids = st.text(alphabet="01", max_size=2) | st.sampled_from(["call_1_0", "call_1_1", "call_1_1_2"])


@PROPERTY
@given(
    history=st.lists(small_ids.filter(bool), max_size=4),
    calls=st.lists(
        st.fixed_dictionaries({"function": st.just({"name": "game__look"})}, optional={"id": small_ids}),
        min_size=1,
        max_size=5,
    ),
)
def test_property_11_tool_call_ids_never_repeat_within_a_conversation(
    history: list[str], calls: list[dict[str, Any]]
) -> None:
    """A provider's id is kept when new; one the conversation or the answer already holds (llama.cpp
    answers "0" every time, some providers give two calls one id) gets a fresh one."""
    conversation = [*USER]
    for call_id in history:
        conversation.append(
            {"role": "assistant", "content": None, "tool_calls": [tool_call("game__look", id=call_id)]}
        )
        conversation.append({"role": "tool", "tool_call_id": call_id, "content": "{}"})
    message = {"role": "assistant", "content": None, "tool_calls": calls}
    response, _ = exchange(
        json_reply(completion(message, finish_reason="tool_calls")),
        lambda c: c.complete(CompletionRequest(conversation)),
    )
    assert response.tool_calls is not None
    ids = [call.id for call in response.tool_calls]
    assert ids == expected_ids(calls, frozenset(history))
    assert len(set(ids)) == len(ids)
    assert not set(ids) & set(history)


@PROPERTY
@given(message=assistant_messages)
def test_property_12_content_and_tool_calls_are_exclusive(message: dict[str, Any]) -> None:
    """Property 12: with tool calls content is None; with content tool calls are None ([] counts as none)."""
    response, _ = exchange(json_reply(completion(message)), lambda c: c.complete(CompletionRequest(USER)))
    assert isinstance(response, LLMResponse)
    assert response.tool_calls is None or response.content is None
    if message.get("tool_calls"):
        assert response.content is None
        assert response.tool_calls == expected_calls(message["tool_calls"])
    else:
        assert response.tool_calls is None
        assert response.content == message.get("content")


# --- property 13 ----------------------------------------------------------------------

noise = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789/.:", max_size=12)


# The seeds' lists (000 §2.4), written out here: the test must not take them from the code it checks.
REASONING_PATTERNS = ("o1-", "o3-", "qwq", "deepseek-r1", "deepseek-reasoner", "-reasoning", "r1-")
TOOL_FAMILIES = (
    "gpt-4",
    "gpt-3.5",
    "claude-3",
    "claude-sonnet",
    "claude-opus",
    "claude-haiku",
    "gemini",
    "mistral",
    "mixtral",
    "llama-3.1",
    "llama-3.2",
    "command-r",
)


def _mixed_case(draw: st.DrawFn, text: str) -> str:
    flips = draw(st.lists(st.booleans(), min_size=len(text), max_size=len(text)))
    return "".join(c.upper() if flip else c for c, flip in zip(text, flips, strict=True))


@st.composite
def reasoning_models(draw: st.DrawFn) -> str:
    return draw(noise) + _mixed_case(draw, draw(st.sampled_from(REASONING_PATTERNS))) + draw(noise)


@st.composite
def tool_family_models(draw: st.DrawFn) -> str:
    name = draw(noise) + _mixed_case(draw, draw(st.sampled_from(TOOL_FAMILIES))) + draw(noise)
    return name if not any(p in name.lower() for p in REASONING_PATTERNS) else "openai/gpt-4o"


@PROPERTY
@given(model=reasoning_models())
def test_property_13_reasoning_models_cannot_call_tools(model: str) -> None:
    """Property 13 / Requirement 12.2: a reasoning-model pattern anywhere, any case → False."""
    assert supports_tool_calling(model) is False
    assert supports_tool_calling(model, force=True) is True  # Requirement 12.4


@PROPERTY
@given(model=tool_family_models())
def test_property_13_known_families_can_call_tools(model: str) -> None:
    """Property 13 / Requirement 12.3: known tool families → True."""
    assert supports_tool_calling(model) is True


@PROPERTY
@given(model=st.text(max_size=40), force=st.booleans())
def test_property_13_only_reasoning_patterns_say_no(model: str, force: bool) -> None:
    """Property 13: the answer is False exactly when a reasoning pattern occurs and force is off."""
    expected = force or not any(pattern in model.lower() for pattern in REASONING_PATTERNS)
    assert supports_tool_calling(model, force=force) is expected


@pytest.mark.parametrize(
    ("model", "supported"),
    [
        ("openai/o1-mini", False),
        ("openai/o3-mini-high", False),
        ("qwen/QwQ-32B", False),
        ("deepseek/deepseek-r1", False),
        ("deepseek/deepseek-reasoner", False),
        ("x-ai/grok-3-mini-reasoning", False),
        ("anthropic/claude-3.5-sonnet", True),
        ("openai/gpt-4o-mini", True),
        ("google/gemini-2.0-flash", True),
        ("meta-llama/llama-3.1-70b-instruct", True),
        ("some/unknown-model", True),
    ],
)
def test_property_13_examples(model: str, supported: bool) -> None:
    assert supports_tool_calling(model) is supported


# --- property 14 (and: parameters left None are not sent) -----------------------------

SAMPLING_KEYS = ("temperature", "top_p", "top_k", "min_p", "max_tokens")
sampling = st.fixed_dictionaries(
    {},
    optional={
        "temperature": st.none() | st.floats(0, 2),
        "top_p": st.none() | st.floats(0, 1),
        "top_k": st.none() | st.integers(0, 200),
        "min_p": st.none() | st.floats(0, 1),
        "max_tokens": st.none() | st.integers(1, 4096),
        "stop": st.none() | st.text(max_size=5) | st.lists(st.text(max_size=5), max_size=3),
        "tool_choice": st.none() | st.sampled_from(["auto", "none"]),
    },
)


@PROPERTY
@given(
    response_format=st.none() | st.dictionaries(st.text(max_size=10), json_values, max_size=5),
    params=sampling,
)
def test_property_14_response_format_passes_through_exactly(
    response_format: dict[str, Any] | None, params: dict[str, Any]
) -> None:
    """Property 14: response_format goes out exactly as given, and not at all when None; so do
    the sampling parameters — a parameter left None is never sent."""
    _, server = exchange(
        content_reply("ok"),
        lambda c: c.complete(
            CompletionRequest(
                USER,
                response_format=response_format,
                sampling=SamplingSettings(**{k: v for k, v in params.items() if k in SAMPLING_KEYS}),
                **{k: v for k, v in params.items() if k not in SAMPLING_KEYS},
            )
        ),
    )
    body = server.requests[0].json
    given_keys = {k for k, v in params.items() if v is not None}
    if response_format is not None:
        given_keys.add("response_format")
        assert body["response_format"] == response_format
    assert set(body) == {"model", "messages", "stream"} | given_keys
    assert body["stream"] is False
    for key in given_keys - {"response_format"}:
        assert body[key] == (list(params[key]) if isinstance(params[key], list) else params[key])


# --- property 15 ----------------------------------------------------------------------

chat_messages = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["system", "user", "assistant", "tool"]), "content": st.text(max_size=20)},
        optional={"cache_control": st.just({"type": "persistent"}), "name": st.text(max_size=5)},
    ),
    min_size=1,
    max_size=6,
)


@PROPERTY
@given(messages=chat_messages)
def test_property_15_system_and_user_messages_carry_cache_control(messages: list[dict[str, Any]]) -> None:
    """Property 15: every system and user message on the wire has cache_control; nothing else changes."""
    before = json.loads(json.dumps(messages))
    _, server = exchange(content_reply("ok"), lambda c: c.complete(CompletionRequest(messages)))
    sent = server.requests[0].messages
    assert messages == before  # the caller's list is untouched
    assert len(sent) == len(messages)
    for original, wire in zip(messages, sent, strict=True):
        if original["role"] in ("system", "user"):
            assert wire["cache_control"] == original.get("cache_control", {"type": "ephemeral"})
        else:
            assert ("cache_control" in wire) == ("cache_control" in original)
        assert {k: v for k, v in wire.items() if k != "cache_control"} == {
            k: v for k, v in original.items() if k != "cache_control"
        }


@PROPERTY
@given(messages=chat_messages)
def test_property_15_with_cache_control_is_idempotent(messages: list[dict[str, Any]]) -> None:
    once = with_cache_control(messages)
    assert with_cache_control(once) == once
    assert all("cache_control" in m for m in once if m["role"] in ("system", "user"))
