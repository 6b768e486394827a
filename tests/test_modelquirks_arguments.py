"""Tool-call arguments that small local models write as Python or JavaScript, not JSON.

Served from the loopback chat-completions server (``tests/llm_server.py``) to a real agent turn
with a real in-process MCP server (``engine_servers:create_probe_server``). The endpoint answers
like vLLM: it reads the ``arguments`` of every call in the history back with ``json.loads`` and
answers 400 when one is not JSON (``_postprocess_messages``), so a call left as the model wrote
it would end the episode on the next request.
"""

from __future__ import annotations

import json
from typing import Any

import engine_servers
import pytest
from llm_server import (
    LLMServer,
    RecordedRequest,
    Reply,
    agent_reply,
    json_reply,
    sse_reply,
    tool_call,
    tool_call_reply,
)

from zorkmcp.agent import ZorkAgent
from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.llm import open_llm_client
from zorkmcp.llm._text import relaxed_json_object
from zorkmcp.mcp import McpManager
from zorkmcp.observability import EventRecorder

PROBE = ServerConfig(name="p", type="inprocess", module="engine_servers:create_probe_server", timeout=5)


@pytest.fixture(autouse=True)
def _reset_servers() -> None:
    engine_servers.reset_probe()


def like_vllm(reply: Reply) -> Any:
    """A step that answers 400 when an assistant tool call in the history has arguments that are not JSON."""

    def step(request: RecordedRequest) -> Reply:
        for message in request.messages:
            for call in message.get("tool_calls") or ():
                try:
                    json.loads(call["function"]["arguments"])
                except ValueError as exc:
                    error = {"object": "error", "message": str(exc), "type": "BadRequestError", "code": 400}
                    return json_reply(error, status=400)
        return reply

    return step


async def play_turn(llm_server: LLMServer, events: EventRecorder) -> Any:
    mgr = McpManager(McpConfig(servers=(PROBE,)), McpSettings(enabled=True), events=events)
    async with open_llm_client(base_url=llm_server.base_url, model="qwen2.5:3b") as client:
        agent = ZorkAgent(model=client, settings=McpSettings(enabled=True), mcp=mgr, events=events)
        return await agent.generate_action("West of House")


def history_calls(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [call for m in body["messages"] for call in m.get("tool_calls") or ()]


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("{'tag': 'map'}", '{"tag": "map"}'),  # a Python dict's repr
        ('{"tag": "map",}', '{"tag": "map"}'),  # a trailing comma
        ("{'tag': 'map', 'seconds': 0.0,}", '{"tag": "map", "seconds": 0.0}'),
        ("{tag: 'map', seconds: +0}", '{"tag": "map", "seconds": 0}'),  # JavaScript's bare keys
        ("{'tag': \"map\", 'seconds': 0}", '{"tag": "map", "seconds": 0}'),  # quotes of both kinds
    ],
)
async def test_arguments_in_python_or_javascript_notation_run_the_call(
    llm_server: LLMServer, written: str, expected: str
) -> None:
    llm_server.script(
        like_vllm(tool_call_reply(tool_call("p__ok", written, id="c1"))),
        like_vllm(agent_reply("open mailbox")),
    )
    events = EventRecorder()
    action = await play_turn(llm_server, events)
    assert action.action == "open mailbox"
    assert action.parse_error is None
    assert [(kind, tag) for kind, tag, _, _ in engine_servers.PROBE_LOG] == [("ok", "map")]
    assert history_calls(llm_server.bodies[1]) == [
        {"id": "c1", "type": "function", "function": {"name": "p__ok", "arguments": expected}}
    ]
    tool_message = llm_server.bodies[1]["messages"][-1]
    assert tool_message["role"] == "tool"
    assert "error" not in json.loads(tool_message["content"])
    assert not [line for line in events.lines if "Invalid tool arguments" in line]


async def test_python_none_and_true_become_json_null_and_true(llm_server: LLMServer) -> None:
    written = "{'tag': 'map', 'note': None, 'deep': True}"
    llm_server.script(tool_call_reply(tool_call("p__ok", written, id="c1")), agent_reply("north"))
    await play_turn(llm_server, EventRecorder())
    (call,) = history_calls(llm_server.bodies[1])
    assert call["function"]["arguments"] == '{"tag": "map", "note": null, "deep": true}'


async def test_streamed_python_arguments_are_joined_then_read(llm_server: LLMServer) -> None:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {"model": "qwen2.5:3b", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    first = {"index": 0, "id": "c7", "type": "function", "function": {"name": "p__ok", "arguments": "{'tag'"}}
    llm_server.script(
        sse_reply(
            chunk({"role": "assistant", "tool_calls": [first]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": ": 'lamp',}"}}]}, "tool_calls"),
        ),
        agent_reply("turn on lamp"),
    )
    action = await play_turn(llm_server, EventRecorder())
    assert action.action == "turn on lamp"
    assert [(kind, tag) for kind, tag, _, _ in engine_servers.PROBE_LOG] == [("ok", "lamp")]
    (call,) = history_calls(llm_server.bodies[1])
    assert call["function"]["arguments"] == '{"tag": "lamp"}'


async def test_arguments_cut_short_are_not_guessed_and_the_model_is_told(llm_server: LLMServer) -> None:
    # vLLM answers 400 to a history call whose arguments are not JSON: the turn used to end there
    llm_server.script(
        tool_call_reply(tool_call("p__ok", "{'tag': 'ma", id="c1"), finish_reason="length"),
        like_vllm(agent_reply("north")),
    )
    events = EventRecorder()
    action = await play_turn(llm_server, events)
    assert action.action == "north"
    assert engine_servers.PROBE_LOG == []
    (call,) = history_calls(llm_server.bodies[1])
    assert call["function"]["arguments"] == "{}"  # sent back as JSON; the result says what it was
    error = json.loads(llm_server.bodies[1]["messages"][-1]["content"])["error"]
    assert error.startswith("Invalid tool arguments for p.ok: ")
    assert error.endswith("; the arguments as sent: \"{'tag': 'ma\"")


@pytest.mark.parametrize(
    "text",
    [
        "{'tag': __import__('os').getcwd()}",  # a call: never evaluated
        "{'tag': 'a' + 'b'}",
        "{**spread}",
        "{1: 'one'}",
        "['tag', 'map']",  # not an object
        "{'tag': 'map'",  # cut short
        "{'tag': float('nan')}",
        "{'tag': 1e999}",  # infinity is no JSON
        "{'tag': {'x'}}",  # a set
        "{'tag': b'bytes'}",
        "I will call the map tool {now}",
        "{" * 5000 + "}" * 5000,
    ],
)
def test_text_that_is_not_a_literal_object_is_not_read(text: str) -> None:
    assert relaxed_json_object(text) is None
