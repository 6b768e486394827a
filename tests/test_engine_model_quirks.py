"""The turn engine with models and servers that bend the OpenAI wire format, as real ones do.

Each test serves the quirk from the loopback chat-completions server (``tests/llm_server.py``) to a
turn with a real in-process MCP server (``engine_servers:create_tools_server``):

- a strict chat template (Mistral, Gemma in vLLM, TGI, llama.cpp ``--jinja``) that answers 400 to
  two user messages in a row, on the forced final call after an empty answer;
- the answer given as a tool call's arguments (a provider that implements ``response_format``
  through a tool call and leaks it; a model that "calls" the answer's schema inside the loop);
- gpt-oss's ``functions.`` prefix on a tool's name, and arguments encoded twice.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import engine_servers
import pytest
from llm_server import (
    LLMServer,
    RecordedRequest,
    Reply,
    content_reply,
    json_reply,
    tool_call,
    tool_call_reply,
)

from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.engine import FORCE_FINAL_MESSAGE, TurnOptions, run_turn
from zorkmcp.llm import open_llm_client
from zorkmcp.mcp import McpManager
from zorkmcp.observability import EventRecorder

TOOLS = ServerConfig(name="tools", type="inprocess", module="engine_servers:create_tools_server", timeout=5)
ANSWER_SCHEMA = {
    "type": "json_schema",
    "json_schema": {
        "name": "Final",
        "strict": True,
        "schema": {
            "type": "object",
            "properties": {"thinking": {"type": "string"}, "action": {"type": "string"}},
            "required": ["thinking", "action"],
            "additionalProperties": False,
        },
    },
}
CACHE = {"type": "ephemeral"}
ANSWER = '{"thinking": "the mailbox is here", "action": "open mailbox"}'
JOINED = "West of House\n\nPlease provide your final action now without calling any more tools."
"""The opening user message with the forced final request joined to it."""
ROLES_MUST_ALTERNATE = "Conversation roles must alternate user/assistant/user/assistant/..."


@pytest.fixture(autouse=True)
def _reset_servers() -> None:
    engine_servers.reset()


async def turn(
    llm_server: LLMServer,
    opening: list[dict[str, Any]],
    *,
    events: EventRecorder | None = None,
    **options: Any,
) -> Any:
    mgr = McpManager(McpConfig(servers=(TOOLS,)), McpSettings(enabled=True), events=events)
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o-test") as model:
        return await run_turn(
            model,
            opening,
            open_toolbox=lambda: mgr.open_turn(),
            options=TurnOptions(final_response_format=ANSWER_SCHEMA, **options),
            events=events,
        )


def strict_template(reply: Reply) -> Any:
    """A step that answers like vLLM with a Mistral chat template: 400 to two user messages in a row."""

    def step(request: RecordedRequest) -> Reply:
        roles = [m["role"] for m in request.messages if m["role"] in ("user", "assistant")]
        if any(a == b for a, b in itertools.pairwise(roles)):
            error = {
                "object": "error",
                "message": ROLES_MUST_ALTERNATE,
                "type": "BadRequestError",
                "code": 400,
            }
            return json_reply(error, status=400)
        return reply

    return step


def tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "tool"]


# --- Requirement 5.7 under a strict chat template ------------------------------------------


async def test_forced_final_after_an_empty_answer_joins_the_user_message(llm_server: LLMServer) -> None:
    llm_server.script(strict_template(content_reply("")), strict_template(content_reply(ANSWER)))
    opening = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "West of House"}]
    result = await turn(llm_server, opening)
    assert result.content == ANSWER
    assert result.forced_final
    final = llm_server.bodies[1]
    assert final["messages"] == [
        {"role": "system", "content": "be brief", "cache_control": CACHE},
        {"role": "user", "content": JOINED, "cache_control": CACHE},
    ]
    assert final["response_format"] == ANSWER_SCHEMA
    assert "tools" not in final
    assert result.messages == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": JOINED},
        {"role": "assistant", "content": ANSWER},
    ]
    assert opening[1] == {"role": "user", "content": "West of House"}  # the caller's list is untouched


async def test_forced_final_joins_user_content_given_as_parts(llm_server: LLMServer) -> None:
    """Content parts stay as they are (a part's cache_control marker too); the request is a new part."""
    llm_server.script(strict_template(content_reply(None)), strict_template(content_reply(ANSWER)))
    state = {"type": "text", "text": "West of House", "cache_control": {"type": "ephemeral"}}
    opening = [{"role": "system", "content": "be brief"}, {"role": "user", "content": [state]}]
    result = await turn(llm_server, opening)
    assert result.content == ANSWER
    assert llm_server.bodies[1]["messages"][1:] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "West of House", "cache_control": {"type": "ephemeral"}},
                {
                    "type": "text",
                    "text": "Please provide your final action now without calling any more tools.",
                },
            ],
            "cache_control": CACHE,
        }
    ]
    assert opening[1] == {"role": "user", "content": [state]}
    assert FORCE_FINAL_MESSAGE == "Please provide your final action now without calling any more tools."


# --- the answer as a tool call's arguments ----------------------------------------------------


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("Final", ANSWER),  # named like the answer's schema
        ("functions.Final", ANSWER),  # as gpt-oss names it
        ("json_tool_call", ANSWER),  # another name, but every required key is there
        ("Final", json.dumps(ANSWER)),  # encoded twice
    ],
)
async def test_forced_final_answer_leaked_as_a_tool_call_is_the_answer(
    llm_server: LLMServer, name: str, arguments: str
) -> None:
    llm_server.script(
        content_reply(""),
        tool_call_reply(
            tool_call("tools__echo", {"text": "stray"}, id="stray"),  # carries no answer: passed over
            tool_call(name, arguments, id="leak"),
        ),
    )
    events = EventRecorder()
    result = await turn(
        llm_server, [{"role": "user", "content": "West of House"}], events=events, parse_answer=json.loads
    )
    assert result.forced_final
    assert result.content == ANSWER
    assert result.answer == {"thinking": "the mailbox is here", "action": "open mailbox"}
    assert result.tool_calls == ()
    assert result.llm_requests == 2
    assert result.messages == [{"role": "user", "content": JOINED}, {"role": "assistant", "content": ANSWER}]
    assert (
        f"[INFO] Turn 0: The forced final answer came as a call to '{name}'; "
        "its arguments are the final answer"
    ) in events.lines
    (complete,) = events.of_type("mcp_session_complete")
    assert complete["tool_calls_count"] == 0
    assert complete["final_action"] == ANSWER[:100]


async def test_forced_final_text_beside_a_stray_call_is_the_answer(llm_server: LLMServer) -> None:
    """Some vLLM builds add a call to a plain answer; no tools were offered, so the text is the answer.
    The client keeps content None beside calls (Requirement 4.3): the text comes as text_beside_calls."""
    llm_server.script(
        content_reply(""),
        tool_call_reply(tool_call("tools__echo", {"text": "stray"}, id="stray"), content=ANSWER),
    )
    events = EventRecorder()
    result = await turn(
        llm_server, [{"role": "user", "content": "West of House"}], events=events, parse_answer=json.loads
    )
    assert result.forced_final
    assert (result.content, result.answer) == (
        ANSWER,
        {"thinking": "the mailbox is here", "action": "open mailbox"},
    )
    assert result.tool_calls == ()
    assert result.messages == [{"role": "user", "content": JOINED}, {"role": "assistant", "content": ANSWER}]
    assert (
        "[INFO] Turn 0: The forced final answer came as text beside a call to 'tools__echo' (no tools were "
        "offered); the text is the final answer"
    ) in events.lines


async def test_text_beside_calls_in_the_loop_is_not_an_answer(llm_server: LLMServer) -> None:
    """With tools offered, text beside a call is the model thinking aloud: the call runs."""
    llm_server.script(
        tool_call_reply(tool_call("tools__counter", {}, id="a"), content=ANSWER),
        content_reply('{"thinking": "counted", "action": "north"}'),
    )
    result = await turn(llm_server, [{"role": "user", "content": "West of House"}], parse_answer=json.loads)
    assert not result.forced_final
    assert [(call.name, call.outcome) for call in result.tool_calls] == [("tools.counter", "ok")]
    assert result.answer == {"thinking": "counted", "action": "north"}


async def test_a_call_to_the_answer_schema_in_the_loop_ends_the_loop(llm_server: LLMServer) -> None:
    """Not counted as a tool call; the same call next to a real one is an unknown tool as before."""
    llm_server.script(
        tool_call_reply(tool_call("Final", ANSWER, id="a"), tool_call("tools__counter", {}, id="b")),
        tool_call_reply(tool_call("Final", ANSWER, id="c")),
    )
    events = EventRecorder()
    result = await turn(llm_server, [{"role": "user", "content": "West of House"}], events=events, turn=7)
    assert result.content == ANSWER
    assert not result.forced_final
    assert result.iterations == 2
    assert result.llm_requests == 2
    assert [(c.id, c.name, c.outcome) for c in result.tool_calls] == [
        ("a", "Final", "error"),
        ("b", "tools.counter", "ok"),
    ]
    assert result.tool_calls[0].error_message == (
        "Unknown tool 'Final'. Available tools: tools.echo, tools.fail, tools.hang, tools.work, "
        "tools.counter, tools.pid"
    )
    assert [m["role"] for m in result.messages] == ["user", "assistant", "tool", "tool", "assistant"]
    assert result.messages[-1] == {"role": "assistant", "content": ANSWER}
    assert (
        "[INFO] Turn 7 Iteration 2: The model answered through a call to 'Final' (no such tool); "
        "its arguments are the final answer"
    ) in events.lines
    (complete,) = events.of_type("mcp_session_complete")
    assert (complete["iterations"], complete["tool_calls_count"]) == (2, 2)
    assert events.of_type("mcp_no_content") == []


# --- names and arguments as some models spell them ------------------------------------------


async def test_gpt_oss_functions_prefix_resolves_to_the_tool(llm_server: LLMServer) -> None:
    llm_server.script(
        tool_call_reply(
            tool_call("functions.tools__echo", {"text": "wire"}, id="w"),
            tool_call("functions.tools.echo", {"text": "canonical"}, id="c"),
            tool_call("functions.nope", {}, id="n"),
        ),
        content_reply(ANSWER),
    )
    result = await turn(llm_server, [{"role": "user", "content": "West of House"}])
    assert [(c.name, c.server, c.outcome) for c in result.tool_calls] == [
        ("tools.echo", "tools", "ok"),
        ("tools.echo", "tools", "ok"),
        ("functions.nope", None, "error"),
    ]
    answered = [json.loads(m["content"]) for m in tool_messages(llm_server.bodies[1])]
    assert answered[:2] == [{"content": "wire"}, {"content": "canonical"}]
    assert answered[2]["error"].startswith("Unknown tool 'functions.nope'. Available tools: tools.echo")
    # The history keeps the names the model sent.
    sent = llm_server.bodies[1]["messages"][1]["tool_calls"]
    assert [c["function"]["name"] for c in sent] == [
        "functions.tools__echo",
        "functions.tools.echo",
        "functions.nope",
    ]


async def test_arguments_encoded_twice_are_decoded_once_more(llm_server: LLMServer) -> None:
    llm_server.script(
        tool_call_reply(
            tool_call("tools__echo", json.dumps(json.dumps({"text": "twice"})), id="twice"),
            tool_call("tools__counter", json.dumps("{}"), id="empty"),
            tool_call("tools__echo", json.dumps("text"), id="str"),
        ),
        content_reply(ANSWER),
    )
    events = EventRecorder()
    result = await turn(llm_server, [{"role": "user", "content": "West of House"}], events=events)
    assert [(c.id, c.outcome, c.arguments) for c in result.tool_calls] == [
        ("twice", "ok", {"text": "twice"}),
        ("empty", "ok", {}),
        ("str", "invalid_arguments", '"text"'),
    ]
    assert [e["arguments"] for e in events.of_type("mcp_tool_call")] == [{"text": "twice"}, {}]
    answered = [json.loads(m["content"]) for m in tool_messages(llm_server.bodies[1])]
    assert answered[:2] == [{"content": "twice"}, {"content": 1}]
    assert answered[2] == {
        "error": "Invalid tool arguments for tools.echo: expected a JSON object, got a string",
        "content": None,
    }
