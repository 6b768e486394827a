"""The turn engine against the loopback LLM server and real (in-process) MCP servers."""

from __future__ import annotations

import json
from typing import Any

import engine_servers
import pytest
import trio
from llm_server import LLMServer, agent_reply, content_reply, tool_call, tool_call_reply

from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.engine import FORCE_FINAL_MESSAGE, SKIPPED_AFTER_TIMEOUT, TurnOptions, run_tool_loop, run_turn
from zorkmcp.errors import ModelCompatibilityError
from zorkmcp.llm import open_llm_client
from zorkmcp.mcp import McpManager
from zorkmcp.observability import EventRecorder

TOOLS = ServerConfig(name="tools", type="inprocess", module="engine_servers:create_tools_server", timeout=5)
SCHEMA = {"type": "json_schema", "json_schema": {"name": "Final", "schema": {"type": "object"}}}
OPENING = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "state"}]


@pytest.fixture(autouse=True)
def _reset_servers() -> None:
    engine_servers.reset()


def manager(*servers: ServerConfig, events: EventRecorder | None = None, **settings: Any) -> McpManager:
    return McpManager(
        McpConfig(servers=servers or (TOOLS,)), McpSettings(enabled=True, **settings), events=events
    )


async def turn(llm_server: LLMServer, mgr: McpManager | None = None, **kwargs: Any) -> Any:
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o-test") as model:
        events, tracer = kwargs.pop("events", None), kwargs.pop("tracer", None)
        return await run_turn(
            model,
            OPENING,
            open_toolbox=(lambda: mgr.open_turn()) if mgr is not None else None,
            options=TurnOptions(final_response_format=SCHEMA, **kwargs),
            events=events,
            tracer=tracer,
        )


def tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "tool"]


async def test_tool_result_goes_into_history_before_next_call(llm_server: LLMServer) -> None:
    llm_server.script(
        tool_call_reply(tool_call("tools__echo", {"text": "hello"}, id="c1")),
        content_reply("done"),
    )
    result = await turn(llm_server, manager())
    assert result.content == "done"
    first, second = llm_server.bodies
    # Property 1/10: schemas offered in OpenAI format with wire-safe names; no response_format in the loop.
    assert [t["function"]["name"] for t in first["tools"]] == [
        "tools__echo",
        "tools__fail",
        "tools__hang",
        "tools__work",
        "tools__counter",
        "tools__pid",
    ]
    assert first["tool_choice"] == "auto"
    assert "response_format" not in first
    # Properties 3, 19, 44: the assistant's call and the JSON-serialized result precede the next call.
    assert second["messages"][-2]["tool_calls"][0]["id"] == "c1"
    assert tool_messages(second) == [
        {"role": "tool", "tool_call_id": "c1", "content": json.dumps({"content": "hello"})}
    ]
    assert result.iterations == 2
    assert [(c.name, c.outcome, c.arguments) for c in result.tool_calls] == [
        ("tools.echo", "ok", {"text": "hello"})
    ]
    assert result.messages[-1] == {"role": "assistant", "content": "done"}


async def test_timeout_aborts_rest_of_batch_and_answers_every_call(
    llm_server: LLMServer, autojump_clock: trio.testing.MockClock
) -> None:
    llm_server.script(
        tool_call_reply(
            tool_call("tools__echo", {"text": "a"}, id="a"),
            tool_call("tools__hang", {}, id="b"),
            tool_call("tools__echo", {"text": "c"}, id="c"),
            tool_call("tools__work", {"seconds": 1}, id="d"),
        ),
        content_reply("after timeout"),
    )
    events = EventRecorder()
    start = trio.current_time()
    result = await turn(llm_server, manager(events=events), events=events)
    assert result.content == "after timeout"
    answered = tool_messages(llm_server.bodies[1])
    assert [m["tool_call_id"] for m in answered] == ["a", "b", "c", "d"]
    assert json.loads(answered[1]["content"]) == {"error": "Tool call timed out after 5s", "content": None}
    for m in answered[2:]:
        assert json.loads(m["content"]) == {"error": SKIPPED_AFTER_TIMEOUT, "content": None}
    assert [c.outcome for c in result.tool_calls] == ["ok", "timeout", "skipped", "skipped"]
    assert result.tool_calls[1].duration == pytest.approx(5.0, abs=0.05)
    assert engine_servers.CALLS == []  # the skipped `work` never ran
    assert trio.current_time() - start == pytest.approx(5.0, abs=0.1)
    assert [e["tool_name"] for e in events.of_type("mcp_tool_timeout")] == ["tools.hang"]
    assert "Turn 0: Skipping remaining tools in batch after timeout" in "\n".join(events.lines)


async def test_non_timeout_error_continues_batch(llm_server: LLMServer) -> None:
    llm_server.script(
        tool_call_reply(
            tool_call("tools__fail", {"reason": "kaput"}, id="x"),
            tool_call("tools__echo", {"text": "still here"}, id="y"),
        ),
        content_reply("ok"),
    )
    events = EventRecorder()
    result = await turn(llm_server, manager(events=events), events=events)
    answered = tool_messages(llm_server.bodies[1])
    first = json.loads(answered[0]["content"])
    assert "kaput" in first["error"]
    assert json.loads(answered[1]["content"]) == {"content": "still here"}
    assert [c.outcome for c in result.tool_calls] == ["error", "ok"]
    assert [e["tool_name"] for e in events.of_type("mcp_tool_error")] == ["tools.fail"]


@pytest.mark.parametrize(
    ("raw", "why"),
    [("{not json", "Invalid tool arguments"), ("[1, 2]", "expected a JSON object, got an array")],
)
async def test_invalid_arguments_become_error_result(llm_server: LLMServer, raw: str, why: str) -> None:
    llm_server.script(
        tool_call_reply(tool_call("tools__echo", raw, id="bad"), tool_call("tools__counter", {}, id="good")),
        content_reply("fine"),
    )
    result = await turn(llm_server, manager())
    answered = tool_messages(llm_server.bodies[1])
    assert why in json.loads(answered[0]["content"])["error"]
    assert json.loads(answered[1]["content"]) == {"content": 1}
    assert [c.outcome for c in result.tool_calls] == ["invalid_arguments", "ok"]


async def test_null_arguments_are_no_arguments_and_a_number_is_named_in_json_s_words(
    llm_server: LLMServer,
) -> None:
    # Before: "null" was "expected a JSON object, got NoneType" (and 7 "got int"): Python's words
    llm_server.script(
        tool_call_reply(tool_call("tools__counter", "null", id="n"), tool_call("tools__echo", "7", id="s")),
        content_reply("fine"),
    )
    result = await turn(llm_server, manager())
    answered = tool_messages(llm_server.bodies[1])
    assert json.loads(answered[0]["content"]) == {"content": 1}
    assert json.loads(answered[1]["content"]) == {
        "error": "Invalid tool arguments for tools.echo: expected a JSON object, got a number",
        "content": None,
    }
    assert [c.outcome for c in result.tool_calls] == ["ok", "invalid_arguments"]


async def test_unknown_tool_lists_available_tools(llm_server: LLMServer) -> None:
    llm_server.script(tool_call_reply(tool_call("nope__nothing", {}, id="u")), content_reply("fine"))
    await turn(llm_server, manager())
    error = json.loads(tool_messages(llm_server.bodies[1])[0]["content"])["error"]
    assert "nope__nothing" in error
    assert "tools.echo" in error


async def test_max_iterations_forces_final_answer_with_schema(llm_server: LLMServer) -> None:
    llm_server.script(
        *(tool_call_reply(tool_call("tools__counter", {})) for _ in range(3)),
        agent_reply("open mailbox"),
    )
    events = EventRecorder()
    result = await turn(llm_server, manager(events=events), max_tool_iterations=3, events=events)
    bodies = llm_server.bodies
    assert len(bodies) == 4
    for body in bodies[:3]:  # property 14: no response_format inside the loop
        assert "response_format" not in body
        assert body["tool_choice"] == "auto"
    final = bodies[3]
    assert final["response_format"] == SCHEMA  # passed through exactly (Requirement 5.9)
    assert "tools" not in final  # Requirement 5.8: tools=None and tool_choice=None are not sent
    assert "tool_choice" not in final
    assert final["messages"][-1]["content"] == FORCE_FINAL_MESSAGE
    assert result.forced_final
    assert json.loads(result.content)["action"] == "open mailbox"
    assert [c.arguments for c in result.tool_calls] == [{}, {}, {}]
    assert len(events.of_type("mcp_no_content")) == 1
    # Per-turn fresh state: the counter server was one instance for the turn.
    assert [json.loads(m["content"]) for m in tool_messages(final)] == [{"content": n} for n in (1, 2, 3)]


async def test_neither_content_nor_tool_calls_warns_and_forces(llm_server: LLMServer) -> None:
    llm_server.script(content_reply(None, finish_reason="length"), agent_reply("look"))
    events = EventRecorder()
    result = await turn(llm_server, manager(events=events), events=events)
    assert [e["finish_reason"] for e in events.of_type("mcp_unexpected_state")] == ["length"]
    assert result.forced_final
    assert result.iterations == 1


async def test_sequential_execution(llm_server: LLMServer, autojump_clock: trio.testing.MockClock) -> None:
    calls = [tool_call("tools__work", {"seconds": 2, "label": str(i)}) for i in range(4)]
    llm_server.script(tool_call_reply(*calls), content_reply("done"))
    await turn(llm_server, manager())
    assert engine_servers.ACTIVE[1] == 1  # property 17: never two at once
    labels = [c[0] for c in engine_servers.CALLS]
    assert labels == ["0", "1", "2", "3"]
    for (_, _, end), (_, start, _) in zip(engine_servers.CALLS, engine_servers.CALLS[1:], strict=False):
        assert start >= end


async def test_incompatible_model_fails_before_first_tool_call(llm_server: LLMServer) -> None:
    mgr = manager()
    async with open_llm_client(base_url=llm_server.base_url, model="deepseek-r1") as model:
        with pytest.raises(ModelCompatibilityError, match="does not support tool calling"):
            await run_turn(model, OPENING, open_toolbox=lambda: mgr.open_turn())
    assert llm_server.requests == []


async def test_force_tool_support_bypasses_check(llm_server: LLMServer) -> None:
    llm_server.script(content_reply("ok"))
    mgr = manager()
    async with open_llm_client(base_url=llm_server.base_url, model="o1-mini") as model:
        result = await run_turn(
            model, OPENING, open_toolbox=lambda: mgr.open_turn(), options=TurnOptions(force_tool_support=True)
        )
    assert result.content == "ok"


async def test_without_tools_no_tool_parameters_are_sent(llm_server: LLMServer) -> None:
    llm_server.script(content_reply("plain"))
    result = await turn(llm_server, None)
    (body,) = llm_server.bodies
    assert "tools" not in body
    assert "tool_choice" not in body
    assert result.content == "plain"
    assert result.tools_offered == 0


async def test_turn_deadline_bounds_everything(
    llm_server: LLMServer, autojump_clock: trio.testing.MockClock
) -> None:
    llm_server.script(tool_call_reply(tool_call("tools__work", {"seconds": 100})), content_reply("late"))
    events = EventRecorder()
    start = trio.current_time()
    result = await turn(llm_server, manager(events=events), deadline=3.0, events=events)
    assert result.deadline_exceeded
    assert result.content is None
    assert trio.current_time() - start == pytest.approx(3.0, abs=0.1)
    assert len(events.of_type("turn_deadline_exceeded")) == 1


async def test_events_and_episode_log_lines(llm_server: LLMServer) -> None:
    llm_server.script(
        tool_call_reply(tool_call("tools__echo", {"text": "x"})),
        tool_call_reply(tool_call("tools__counter", {})),
        content_reply("done"),
    )
    events = EventRecorder(context={"episode_id": "ep-1", "turn": 15})
    await turn(llm_server, manager(events=events), events=events, turn=15)
    (call, _) = events.of_type("mcp_tool_call")
    assert call | {"timestamp": 0} == {
        "timestamp": 0,
        "event_type": "mcp_tool_call",
        "episode_id": "ep-1",
        "turn": 15,
        "tool_name": "tools.echo",
        "server_name": "tools",
        "arguments": {"text": "x"},
        "iteration": 1,
    }
    result = events.of_type("mcp_tool_result")[0]
    assert result["result_type"] == "str"
    assert result["result_length"] == 1
    assert result["is_error"] is False
    assert result["duration_ms"] >= 0
    (complete,) = events.of_type("mcp_session_complete")
    assert complete["iterations"] == 3
    assert complete["tool_calls_count"] == 2
    assert complete["tools_used"] == ["tools.counter", "tools.echo"]
    lines = events.lines
    assert "[INFO] Turn 15: MCP session started (max 20 iterations)" in lines
    assert "[INFO] Turn 15 Iteration 1: Agent calling tool tools.echo" in lines
    assert "[INFO] Turn 15 Iteration 2: Agent calling tool tools.counter" in lines
    assert "[INFO] Turn 15: MCP session complete (3 iterations, 2 tool calls)" in lines
    assert any(line.startswith("[DEBUG] Turn 15 Iteration 1: Tool arguments: ") for line in lines)
    assert any(line.startswith("[INFO] Turn 15 Iteration 1: Tool result received (") for line in lines)


async def test_run_tool_loop_does_not_modify_callers_messages(llm_server: LLMServer) -> None:
    llm_server.script(content_reply("x"))
    opening = [dict(m) for m in OPENING]
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o") as model:
        result = await run_tool_loop(model, opening, None)
    assert opening == OPENING
    assert len(result.messages) == 3


async def test_timings_are_reported(llm_server: LLMServer, autojump_clock: trio.testing.MockClock) -> None:
    llm_server.script(tool_call_reply(tool_call("tools__work", {"seconds": 4})), content_reply("done"))
    result = await turn(llm_server, manager())
    t = result.timings
    assert t.tools == pytest.approx(4.0, abs=0.05)
    assert t.total >= t.startup + t.llm + t.tools + t.teardown - 1e-9


DEADLINE_RULE = "deadline must be None or a finite number of seconds > 0"


@pytest.mark.parametrize(
    ("field", "value", "error", "message"),
    [
        ("deadline", -1, ValueError, f"{DEADLINE_RULE}, got -1"),
        ("deadline", 0, ValueError, f"{DEADLINE_RULE}, got 0"),
        ("deadline", float("nan"), ValueError, f"{DEADLINE_RULE}, got nan"),
        ("deadline", float("inf"), ValueError, f"{DEADLINE_RULE}, got inf"),
        ("deadline", "5", TypeError, f"{DEADLINE_RULE}, got '5' (str)"),
        ("deadline", True, TypeError, f"{DEADLINE_RULE}, got True (bool)"),
        ("max_tool_iterations", 0, ValueError, "max_tool_iterations must be an int >= 1, got 0"),
        ("max_tool_iterations", "3", TypeError, "max_tool_iterations must be an int >= 1, got '3' (str)"),
        ("max_tool_iterations", 2.5, TypeError, "max_tool_iterations must be an int >= 1, got 2.5 (float)"),
        ("max_tool_iterations", True, TypeError, "max_tool_iterations must be an int >= 1, got True (bool)"),
        ("turn", -1, ValueError, "turn must be an int >= 0, got -1"),
        ("turn", "x", TypeError, "turn must be an int >= 0, got 'x' (str)"),
        ("turn", 1.0, TypeError, "turn must be an int >= 0, got 1.0 (float)"),
        (
            "final_response_format",
            "json",
            TypeError,
            "final_response_format must be None or a mapping (a response_format), got 'json' (str)",
        ),
    ],
)
def test_turn_options_refuse_nonsense_at_construction(
    field: str, value: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as caught:
        TurnOptions(**{field: value})
    assert str(caught.value) == message


def test_turn_options_accept_their_bounds() -> None:
    options = TurnOptions(deadline=1e-3, max_tool_iterations=1, turn=0, final_response_format={})
    assert (options.deadline, options.max_tool_iterations, options.turn) == (1e-3, 1, 0)
    assert TurnOptions(deadline=2, final_response_format=SCHEMA).deadline == 2
    assert TurnOptions().deadline is None
