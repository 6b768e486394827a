"""Property tests of the turn engine and the agent (seeds 001 properties 1–3, 14–25, 28–32, 44, 46–48).

Each example is one whole agent turn inside ``trio.run`` on a ``MockClock``: a random script of
LLM replies (batches of tool calls that succeed, fail, hang past their timeout, name unknown tools
or carry invalid JSON; content answers; answers with neither) is served by the loopback
chat-completions server (``tests/llm_server.py``), the tools are a real in-process MCP server
(``engine_servers:create_probe_server``), and the checks read what really went over the wire, what
the server executed, the recorded events, the episode log lines and the OpenTelemetry spans.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any, Literal

import engine_servers
import trio
import trio.testing
from attrs import frozen
from backends import AUTOJUMP_THRESHOLD
from hypothesis import given, settings
from hypothesis import strategies as st
from llm_server import RecordedRequest, Reply, content_reply, serve_llm, tool_call, tool_call_reply
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from zorkmcp.agent import SYSTEM_PROMPT, AgentAction, AgentResponse, ZorkAgent
from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.engine import FORCE_FINAL_MESSAGE, SKIPPED_AFTER_TIMEOUT
from zorkmcp.llm import open_llm_client
from zorkmcp.mcp import McpManager
from zorkmcp.observability import EventRecorder, OtelTracer

MODEL = "gpt-4o-test"
TIMEOUT = 5.0
PROBE = ServerConfig(name="p", type="inprocess", module="engine_servers:create_probe_server", timeout=TIMEOUT)
TOOLS = {"ok": ("p__ok", "p.ok"), "fail": ("p__fail", "p.fail"), "hang": ("p__hang", "p.hang")}
AVAILABLE = "p.ok, p.fail, p.hang"
CACHE = {"type": "ephemeral"}
GAME_STATE = "West of House\nYou are standing in an open field west of a white house."
MEMORIES = "Remember: the mailbox holds a leaflet."

Kind = Literal["ok", "fail", "hang", "unknown", "bad_json", "bad_args"]
KINDS: tuple[Kind, ...] = ("ok", "fail", "hang", "unknown", "bad_json", "bad_args")

ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=("Cs",)), max_size=12)
"""Any code points but surrogates, line separators included (a lone surrogate from the model becomes
U+FFFD where its text comes in: tests/test_surrogates.py)."""
TAGS = ANY_TEXT
ECHOED_TAGS = st.text(st.characters(codec=None, exclude_categories=("Cs",)), max_size=12)
"""Tags of ``ok`` calls, which the tool returns in its result: the SDK's server encodes a result as
JSON text, and a lone surrogate cannot be (it answers "Error executing tool ok"). The other kinds
keep every code point in their arguments and errors."""
IDS = st.text(
    st.characters(codec="ascii", categories=("L", "N"), include_characters="_-:."), min_size=1, max_size=12
)


# --- scripts --------------------------------------------------------------------------


@frozen
class Call:
    """One tool call the scripted model makes."""

    id: str
    kind: Kind
    name: str
    arguments: str
    tag: str = ""
    seconds: float = 0.0

    @property
    def canonical(self) -> str:
        for wire, canonical in TOOLS.values():
            if self.name in (wire, canonical):
                return canonical
        return self.name

    @property
    def parsed(self) -> Any:
        return json.loads(self.arguments)

    def wire(self) -> dict[str, Any]:
        return tool_call(self.name, self.arguments, id=self.id)

    def sent_back(self) -> dict[str, Any]:
        """The call as the history sends it back: arguments that are not JSON at all as ``{}``."""
        return tool_call(self.name, "{}" if self.arguments in NOT_JSON else self.arguments, id=self.id)


NOT_JSON = frozenset({"{not json", '{"tag": ', "{'a': 1"})
"""Arguments no reading takes as JSON (cut short at max_tokens, say): sent back as ``{}``, as vLLM
reads every call of the history back as JSON."""


@frozen
class Batch:
    calls: tuple[Call, ...]
    content: str | None = None
    """Text sent alongside the tool calls (the client drops it: property 12)."""


@frozen
class Answer:
    content: str | None
    finish_reason: str | None = "stop"


@frozen
class Script:
    max_iterations: int
    batches: tuple[Batch, ...]
    ending: Answer
    """What the model says after the batches (if the iteration budget lets it)."""
    forced: Answer
    """The answer to the forced final call (used only when no content came in the loop)."""
    turn: int

    @property
    def processed(self) -> tuple[Batch, ...]:
        return self.batches[: self.max_iterations]

    @property
    def loop_calls(self) -> int:
        """LLM calls inside the loop."""
        return min(len(self.batches) + 1, self.max_iterations)

    @property
    def content_in_loop(self) -> bool:
        return len(self.batches) < self.max_iterations and bool(self.ending.content)

    @property
    def final_content(self) -> str | None:
        return self.ending.content if self.content_in_loop else self.forced.content

    def replies(self) -> list[Reply]:
        replies = [tool_call_reply(*(c.wire() for c in b.calls), content=b.content) for b in self.processed]
        if len(self.batches) < self.max_iterations:
            replies.append(content_reply(self.ending.content, finish_reason=self.ending.finish_reason))
        if not self.content_in_loop:
            replies.append(content_reply(self.forced.content, finish_reason=self.forced.finish_reason))
        return replies


@st.composite
def calls(draw: st.DrawFn, call_id: str) -> Call:
    kind: Kind = draw(st.sampled_from(KINDS))
    tools = TOOLS["ok"] if kind in ("ok", "bad_args") else TOOLS["fail"] if kind == "fail" else TOOLS["hang"]
    name = draw(st.sampled_from(tools))  # the model may use the wire or the canonical name
    tag = draw(ECHOED_TAGS if kind == "ok" else TAGS)
    if kind == "ok":
        seconds = draw(st.sampled_from([0.0, 0.25, 1.5, 4.75]))
        return Call(call_id, kind, name, json.dumps({"tag": tag, "seconds": seconds}), tag, seconds)
    if kind in ("fail", "hang"):
        return Call(call_id, kind, name, json.dumps({"tag": tag}), tag)
    if kind == "unknown":
        known = {n for pair in TOOLS.values() for n in pair}
        name = draw(st.from_regex(r"\A[a-z]{1,6}(__|\.)[a-z]{1,6}\Z").filter(lambda n: n not in known))
        return Call(call_id, kind, name, draw(st.sampled_from(["{}", json.dumps({"tag": tag})])))
    if kind == "bad_json":
        name = draw(st.sampled_from([n for pair in TOOLS.values() for n in pair]))
        # "null" is no arguments, as "" is (test_engine.py): not among the arguments refused
        raw = draw(st.sampled_from([*sorted(NOT_JSON), "[1, 2]", '"text"', "42", "true"]))
        return Call(call_id, kind, name, raw)
    bad = draw(st.sampled_from([{"tag": 5}, {}, {"tag": "x", "seconds": "slow"}, {"seconds": 1}]))
    return Call(call_id, kind, name, json.dumps(bad))


def final_contents(*, allow_none: bool = True) -> st.SearchStrategy[str | None]:
    """Whatever a model may answer: agent JSON with odd actions, prose, fences, garbage, huge text."""
    weird_actions = st.one_of(
        ANY_TEXT,
        st.sampled_from(
            [
                "",
                "   ",
                "\n",
                "open mailbox\nnorth",
                "> north",
                "`take lamp`",
                '"go west"',
                "action: up",
                "\x00\x1b[31mred",
                "north\u2028south",
                "\r\n\tlook around\r\n",
                "```",
                "x" * 5000,
            ]
        ),
        st.from_regex(r"\A[a-z]{1,8}( [a-z]{1,8}){0,3}\Z"),
    )
    agent_json = st.builds(
        lambda thinking, action, objective: json.dumps(
            {"thinking": thinking, "action": action, "new_objective": objective}
        ),
        ANY_TEXT,
        st.one_of(weird_actions, st.integers(), st.none(), st.lists(st.text(max_size=3), max_size=2)),
        st.one_of(st.none(), ANY_TEXT),
    )
    wrapped = st.builds(
        lambda body, how: how.format(body=body),
        agent_json,
        st.sampled_from(["{body}", "```json\n{body}\n```", "Here you go:\n{body}\nGood luck!", " {body} "]),
    )
    options: list[st.SearchStrategy[str | None]] = [
        wrapped,
        ANY_TEXT,
        st.text(max_size=200),
        st.builds(lambda n: "x" * n, st.integers(1000, 100_000)),
        st.sampled_from(
            ["[]", "{}", '{"action": null}', '["north"]', "null", '{"reasoning": "r", "action": "up"}']
        ),
    ]
    if allow_none:
        options.append(st.none())
    return st.one_of(*options)


@st.composite
def scripts(draw: st.DrawFn, *, max_batches: int = 4) -> Script:
    sizes = draw(st.lists(st.integers(1, 4), max_size=max_batches))
    ids = iter(f"{draw(IDS)}_{n}" for n in range(sum(sizes)))  # random, unique like a real API's
    batches = tuple(
        Batch(
            tuple(draw(calls(next(ids))) for _ in range(size)),
            draw(st.one_of(st.none(), st.text(max_size=10))),
        )
        for size in sizes
    )
    ending = draw(
        st.one_of(
            st.builds(Answer, final_contents(allow_none=False)),
            st.builds(
                Answer, st.sampled_from([None, ""]), st.sampled_from(["length", "content_filter", None])
            ),
        )
    )
    forced = draw(st.builds(Answer, final_contents()))
    return Script(
        max_iterations=draw(st.integers(1, 4)),
        batches=batches,
        ending=ending,
        forced=forced,
        turn=draw(st.integers(1, 500)),
    )


# --- running one turn -----------------------------------------------------------------


@frozen
class Run:
    action: AgentAction
    requests: list[RecordedRequest]
    events: EventRecorder
    spans: tuple[ReadableSpan, ...]
    executed: list[tuple[str, str, float, float | None]]


def run_agent(script: Script, *, mcp: bool = True) -> Run:
    engine_servers.reset_probe()
    events = EventRecorder(context={"episode_id": "ep-prop"})
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    settings_ = McpSettings(enabled=mcp, max_tool_iterations=script.max_iterations)
    manager = McpManager(McpConfig(servers=(PROBE,)), settings_, events=events) if mcp else None

    async def check() -> tuple[AgentAction, list[RecordedRequest]]:
        async with (
            serve_llm(*script.replies()) as server,
            open_llm_client(base_url=server.base_url, model=MODEL) as model,
        ):
            agent = ZorkAgent(
                model=model,
                settings=settings_,
                mcp=manager,
                events=events,
                tracer=OtelTracer(provider=provider),
            )
            action = await agent.generate_action(GAME_STATE, MEMORIES, turn=script.turn)
            return action, server.requests

    action, requests = trio.run(check, clock=trio.testing.MockClock(autojump_threshold=AUTOJUMP_THRESHOLD))
    provider.shutdown()
    return Run(action, requests, events, exporter.get_finished_spans(), list(engine_servers.PROBE_LOG))


# --- what should have happened --------------------------------------------------------


@frozen
class Expected:
    call: Call
    iteration: int
    outcome: Literal["ok", "error", "timeout", "skipped", "invalid_arguments"]

    @property
    def executed(self) -> bool:
        """The engine handed the call to the toolbox (it is neither skipped nor unparseable)."""
        return self.outcome not in ("skipped", "invalid_arguments")

    @property
    def reaches_server(self) -> bool:
        return self.executed and self.call.kind in ("ok", "fail", "hang")

    @property
    def duration(self) -> float:
        if self.outcome == "timeout":
            return TIMEOUT
        return self.call.seconds if self.outcome == "ok" else 0.0


def expected_calls(script: Script) -> list[Expected]:
    out: list[Expected] = []
    for iteration, batch in enumerate(script.processed, start=1):
        aborted = False
        for call in batch.calls:
            if aborted:
                outcome: Any = "skipped"
            elif call.kind == "hang":
                outcome, aborted = "timeout", True
            elif call.kind == "ok":
                outcome = "ok"
            elif call.kind == "bad_json":
                outcome = "invalid_arguments"
            else:
                outcome = "error"
            out.append(Expected(call, iteration, outcome))
    return out


def check_tool_message(message: dict[str, Any], exp: Expected) -> None:
    """Property 44: the tool message content is ``json.dumps(ToolCallResult.to_dict())``."""
    assert message["role"] == "tool"
    assert message["tool_call_id"] == exp.call.id
    content = message["content"]
    assert isinstance(content, str)
    data = json.loads(content)
    if exp.outcome == "ok":
        expected = {"content": {"tag": exp.call.tag, "seconds": exp.call.seconds}}
        assert data == expected
        assert content == json.dumps(expected)
        return
    assert set(data) == {"error", "content"}, data
    error = data["error"]
    exact = {
        "skipped": SKIPPED_AFTER_TIMEOUT,  # property 24
        "timeout": f"Tool call timed out after {TIMEOUT:g}s",  # property 25
    }
    if exp.outcome in exact:
        assert data == {"error": exact[exp.outcome], "content": None}
        assert content == json.dumps(data)
    elif exp.call.kind == "unknown":
        assert data == {
            "error": f"Unknown tool '{exp.call.name}'. Available tools: {AVAILABLE}",
            "content": None,
        }
    elif exp.call.kind == "bad_json":
        assert error.startswith(f"Invalid tool arguments for {exp.call.canonical}: "), error
        assert data["content"] is None
    elif exp.call.kind == "fail":
        assert f"probe failure {exp.call.tag}".strip() in error
    else:
        assert "validation error" in error, error


def check_action(action: str) -> None:
    """Property 2: a non-empty, single-line, printable game command."""
    assert isinstance(action, str)
    assert action
    assert action == action.strip()
    assert len(action.splitlines()) == 1
    assert action.isprintable()
    assert len(action) <= 120


def simple_command(text: str) -> bool:
    return re.fullmatch(r"[a-z]{1,8}( [a-z]{1,8}){0,3}", text) is not None


def agent_json(content: str | None) -> dict[str, Any] | None:
    """The agent object in ``content`` when it is one of the shapes the strategy builds."""
    if content is None:
        return None
    for candidate in (content, *re.findall(r"```json\n(.*)\n```", content, re.DOTALL)):
        try:
            data = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    start, end = content.find("{"), content.rfind("}")
    if 0 <= start < end:
        try:
            data = json.loads(content[start : end + 1])
        except ValueError:
            return None
        return data if isinstance(data, dict) else None
    return None


def check_final_action(run: Run, content: str | None) -> None:
    """Properties 2, 46, 47 and the seeds' fallback (``look`` + ``Parse error: …`` + event)."""
    action = run.action
    check_action(action.action)
    errors = run.events.of_type("agent_parse_error")
    data = agent_json(content)
    parsed = data is not None and isinstance(data.get("action"), str) and bool(data["action"].strip())
    if content is not None and "{" not in content:
        assert not parsed
    if parsed:
        assert data is not None
        assert errors == []
        assert action.parse_error is None
        thinking = data.get("thinking", data.get("reasoning", ""))
        if isinstance(thinking, str):
            assert action.reasoning == thinking
        objective = data.get("new_objective")
        assert action.new_objective == (
            objective if isinstance(objective, str) and objective.strip() else None
        )
        if simple_command(data["action"]):
            assert action.action == data["action"]
    elif data is not None or content is None or "{" not in content:
        # Not an agent answer: the seeds' fallback, with the event.
        assert action.action == "look"
        assert action.reasoning.startswith("Parse error: ")
        assert action.new_objective is None
        assert len(errors) == 1
        assert errors[0]["raw_response"] == (None if content is None else content[:2000])
    else:
        # Random text that happens to contain braces: either way the invariants hold.
        assert len(errors) == (1 if action.parse_error else 0)
    assert set(action.as_dict()) == {"action", "reasoning", "new_objective"}


def check_wire(run: Run, script: Script, expected: list[Expected], *, tools_offered: bool) -> None:
    bodies = [r.json for r in run.requests]
    forced = not script.content_in_loop
    assert len(bodies) == script.loop_calls + forced  # property 20 and 5.7: no request after content
    by_batch: dict[int, list[Expected]] = {}
    for exp in expected:
        by_batch.setdefault(exp.iteration, []).append(exp)
    for index, body in enumerate(bodies):
        assert body["model"] == MODEL
        messages = body["messages"]
        # Property 15: every system and user message carries cache_control, on the wire.
        for message in messages:
            if message["role"] in ("system", "user"):
                assert message.get("cache_control") == CACHE, message
        is_final = forced and index == len(bodies) - 1
        # The model answered nothing at all: the forced final request joins the user message, so
        # roles keep alternating (FORCE_FINAL_MESSAGE; strict Mistral/Gemma chat templates).
        joined = is_final and not script.processed
        assert messages[0] == {"role": "system", "content": SYSTEM_PROMPT, "cache_control": CACHE}
        assert messages[1] == {
            "role": "user",
            "content": f"{GAME_STATE}\n\n{MEMORIES}" + (f"\n\n{FORCE_FINAL_MESSAGE}" if joined else ""),
            "cache_control": CACHE,
        }
        roles = [m["role"] for m in messages]
        assert ("user", "user") not in itertools.pairwise(roles), roles
        if is_final or not tools_offered:
            # 5.8, 1.5, 48: no tools on the forced final call, nor in a turn without MCP.
            assert "tools" not in body
            assert "tool_choice" not in body
        else:
            # Property 1: the schemas are offered; property 14: no response_format inside the loop.
            assert [t["function"]["name"] for t in body["tools"]] == ["p__ok", "p__fail", "p__hang"]
            assert body["tool_choice"] == "auto"
        if is_final:
            assert body["response_format"] == AgentResponse.json_schema()  # 5.9
            if not joined:
                assert messages[-1] == {
                    "role": "user",
                    "content": FORCE_FINAL_MESSAGE,
                    "cache_control": CACHE,
                }
        else:
            assert "response_format" not in body
        if index == 0:
            assert len(messages) == 2
            continue
        # Properties 3, 19: the previous history, then the assistant's calls, then one answer per
        # tool_call_id in order, before this request.
        previous = bodies[index - 1]["messages"]
        if joined:
            assert messages[:-1] == previous[:-1]
            assert len(messages) == len(previous)
            continue
        assert messages[: len(previous)] == previous
        new = messages[len(previous) :]
        if index <= len(script.processed):
            batch = script.processed[index - 1]
            assert new[0] == {"role": "assistant", "tool_calls": [c.sent_back() for c in batch.calls]}
            answers = new[1 : 1 + len(batch.calls)]
            assert [m["tool_call_id"] for m in answers] == [c.id for c in batch.calls]
            for message, exp in zip(answers, by_batch[index], strict=True):
                check_tool_message(message, exp)
            new = new[1 + len(batch.calls) :]
        assert new == ([messages[-1]] if is_final else [])
    ids = [m["tool_call_id"] for m in bodies[-1]["messages"] if m["role"] == "tool"]
    assert ids == [exp.call.id for exp in expected]  # every id answered exactly once


def check_execution(run: Run, expected: list[Expected]) -> None:
    """Properties 16, 17, 22–25: what the server ran, in order, never overlapping, none after a timeout."""
    reached = [e for e in expected if e.reaches_server]
    assert [(kind, tag) for kind, tag, _, _ in run.executed] == [(e.call.kind, e.call.tag) for e in reached]
    for (_, _, _, end), (_, _, start, _) in zip(run.executed, run.executed[1:], strict=False):
        assert end is not None
        assert start >= end
    assert engine_servers.PROBE_ACTIVE[1] <= 1
    records = run.action.turn.tool_calls if run.action.turn else ()
    assert [(r.id, r.outcome, r.iteration) for r in records] == [
        (e.call.id, e.outcome, e.iteration) for e in expected
    ]
    for record, exp in zip(records, expected, strict=True):
        assert record.name == exp.call.canonical
        assert record.duration == exp.duration


def check_events(run: Run, script: Script, expected: list[Expected]) -> None:
    """Properties 21, 28, 29, 30 and the seeds' events of the loop."""
    executed = [e for e in expected if e.executed]
    calls_ = run.events.of_type("mcp_tool_call")
    assert [(c["tool_name"], c["arguments"], c["iteration"]) for c in calls_] == [
        (e.call.canonical, e.call.parsed, e.iteration) for e in executed
    ]
    for event in calls_:
        assert event["episode_id"] == "ep-prop"
    results = run.events.of_type("mcp_tool_result")
    assert len(results) == len(executed)
    for result, exp in zip(results, executed, strict=True):
        assert result["tool_name"] == exp.call.canonical
        assert result["is_error"] == (exp.outcome != "ok")
        assert result["duration_ms"] == exp.duration * 1000
        if exp.outcome == "ok":
            content = {"tag": exp.call.tag, "seconds": exp.call.seconds}
            assert result["result_type"] == "dict"
            assert result["result_length"] == len(str(content))
        else:  # an error's text is its message; the content holds nothing more
            assert (result["result_type"], result["result_length"]) == ("NoneType", len("None"))
    assert [e["tool_name"] for e in run.events.of_type("mcp_tool_timeout")] == [
        e.call.canonical for e in expected if e.outcome == "timeout"
    ]
    assert [e["tool_name"] for e in run.events.of_type("mcp_tool_error")] == [
        e.call.canonical for e in expected if e.outcome in ("error", "invalid_arguments")
    ]
    (complete,) = run.events.of_type("mcp_session_complete")
    assert complete["iterations"] == script.loop_calls
    assert complete["tool_calls_count"] == len(expected)
    assert complete["tools_used"] == sorted({e.call.canonical for e in expected if e.outcome != "skipped"})
    assert complete["final_action"] == run.action.action
    forced = not script.content_in_loop
    assert len(run.events.of_type("mcp_no_content")) == forced
    neither = len(script.batches) < script.max_iterations and not script.ending.content
    assert len(run.events.of_type("mcp_unexpected_state")) == neither


def check_log_lines(run: Run, script: Script, expected: list[Expected]) -> None:
    turn = script.turn
    calling = [line for line in run.events.lines if " Agent calling tool " in line]
    assert calling == [
        f"[INFO] Turn {turn} Iteration {e.iteration}: Agent calling tool {e.call.canonical}"
        for e in expected
        if e.executed
    ]
    summary = f"({script.loop_calls} iterations, {len(expected)} tool calls)"
    assert f"[INFO] Turn {turn}: MCP session complete {summary}" in run.events.lines
    assert run.events.lines[-1] == f"[INFO] Turn {turn}: Agent action: {run.action.action}"


def check_spans(run: Run, script: Script, expected: list[Expected]) -> None:
    """Properties 31, 32: one session span per turn, one span per tool call, under it."""
    sessions = [s for s in run.spans if s.name == "agent-tool-calling-session"]
    tools = [s for s in run.spans if s.name.startswith("mcp-tool-")]
    assert len(sessions) == 1
    assert len(run.spans) == 1 + len(tools)
    (session,) = sessions
    assert session.attributes is not None
    assert dict(session.attributes) == {
        "turn": script.turn,
        "mcp_enabled": True,
        "max_iterations": script.max_iterations,
        "tools_offered": 3,
        "iterations_used": script.loop_calls,
        "tools_called": len(expected),
        "final_action": run.action.action,
        "deadline_exceeded": False,
    }
    executed = [e for e in expected if e.executed]
    assert [s.name for s in tools] == [f"mcp-tool-{e.call.canonical}" for e in executed]
    assert session.context is not None
    for span, exp in zip(tools, executed, strict=True):
        assert span.parent is not None
        assert span.parent.span_id == session.context.span_id
        attributes = dict(span.attributes or {})
        assert attributes["tool_name"] == exp.call.canonical
        assert attributes.get("server_name") == ("p" if exp.call.kind != "unknown" else None)
        assert json.loads(str(attributes["input"])) == exp.call.parsed
        assert attributes["is_error"] == (exp.outcome != "ok")
        assert attributes["timed_out"] == (exp.outcome == "timeout")
        assert attributes["duration_ms"] == exp.duration * 1000
        # seeds 000 §Langfuse Integration: the tool's timeout, and the result as the model sees it
        assert attributes.get("timeout_seconds") == (TIMEOUT if exp.call.kind != "unknown" else None)
        assert ("error" in json.loads(str(attributes["output"]))) == (exp.outcome != "ok")


# --- the properties -------------------------------------------------------------------


@settings(max_examples=100)
@given(script=scripts())
def test_random_turn_scripts(script: Script) -> None:
    """Properties 1–3, 14–25, 28–32, 44, 46, 47 on one random turn with MCP tools."""
    run = run_agent(script)
    expected = expected_calls(script)
    check_wire(run, script, expected, tools_offered=True)
    check_execution(run, expected)
    check_events(run, script, expected)
    check_log_lines(run, script, expected)
    check_spans(run, script, expected)
    check_final_action(run, script.final_content)


@settings(max_examples=100)
@given(script=scripts(max_batches=2))
def test_mcp_disabled_runs_the_same_path_without_tools(script: Script) -> None:
    """Properties 48 and 1.5: no MCP, no tools on the wire, same parsing; stray tool calls are answered."""
    run = run_agent(script, mcp=False)
    # Without tools every call the model invents is unknown (or unparseable), answered, and the batch goes on.
    expected = [
        Expected(call, iteration, "invalid_arguments" if call.kind == "bad_json" else "error")
        for iteration, batch in enumerate(script.processed, start=1)
        for call in batch.calls
    ]
    bodies = [r.json for r in run.requests]
    assert len(bodies) == script.loop_calls + (not script.content_in_loop)
    for body in bodies:
        assert "tools" not in body
        assert "tool_choice" not in body
    ids = [m["tool_call_id"] for m in bodies[-1]["messages"] if m["role"] == "tool"]
    assert ids == [e.call.id for e in expected]
    for message, exp in zip(
        [m for m in bodies[-1]["messages"] if m["role"] == "tool"], expected, strict=True
    ):
        data = json.loads(message["content"])
        assert set(data) == {"error", "content"}
        assert data["content"] is None
        if exp.call.kind != "bad_json":
            assert data["error"].startswith(f"Unknown tool '{exp.call.name}'")
    assert run.executed == []
    records = run.action.turn.tool_calls if run.action.turn else ()
    assert [(r.id, r.outcome, r.iteration) for r in records] == [
        (e.call.id, e.outcome, e.iteration) for e in expected
    ]
    assert run.events.of_type("mcp_disabled_fallback") == []
    assert not any("MCP session" in line for line in run.events.lines)
    check_final_action(run, script.final_content)


def _error_answer_then_north(call: Call) -> str:
    """Play one batch of ``call``, then the action ``north``; the error the model was answered."""
    script = Script(
        max_iterations=3,
        batches=(Batch((call,)),),
        ending=Answer(json.dumps({"thinking": "t", "action": "north", "new_objective": None})),
        forced=Answer(None),
        turn=1,
    )
    run = run_agent(script)
    assert run.action.action == "north"
    (answer,) = [m for m in run.requests[1].json["messages"] if m["role"] == "tool"]
    return str(json.loads(answer["content"])["error"])


def test_lone_surrogate_in_a_tool_answer_reaches_the_next_request() -> None:
    """A model can send ``"\\ud800"`` in a tool name; the error answer naming it must still go out."""
    answer = _error_answer_then_north(Call("c1", "unknown", "think\ud800", "{}"))
    assert answer.startswith("Unknown tool 'think\ufffd'")


def test_lone_surrogate_in_a_tool_error_reaches_the_next_request() -> None:
    """A tool's error can echo a lone surrogate from its arguments; the answer carrying it must go out.

    Measuring the error against ``max_tool_result_bytes`` encoded it strictly, and the turn died of
    a ``UnicodeEncodeError`` instead of handing the error to the model.
    """
    call = Call("c1", "fail", "p__fail", json.dumps({"tag": "\ud800"}), tag="\ud800")
    assert "probe failure \ufffd" in _error_answer_then_north(call)
