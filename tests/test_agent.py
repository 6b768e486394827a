"""The agent: messages, the final answer and its parsing, and whole turns against the loopback LLM.

Seeds 000 §3.2 (messages, fallback), 001 properties 2, 15, 46–48, 002 Requirements 1, 12, 15.
"""

from __future__ import annotations

import json
import re
from typing import Any

import engine_servers
import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st
from llm_server import LLMServer, agent_reply, content_reply, tool_call, tool_call_reply

from zorkmcp.agent import (
    DEFAULT_ACTION,
    SYSTEM_PROMPT,
    AgentResponse,
    ZorkAgent,
    build_messages,
    clean_action,
    parse_agent_response,
)
from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.errors import MCPServerStartupError, ModelCompatibilityError
from zorkmcp.llm import open_llm_client
from zorkmcp.mcp import McpManager
from zorkmcp.observability import EventRecorder

CACHE = {"type": "ephemeral"}
PROBE = ServerConfig(name="p", type="inprocess", module="engine_servers:create_probe_server", timeout=5)
BROKEN = ServerConfig(name="broken", type="inprocess", module="engine_servers:create_broken_server")
ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()))


@pytest.fixture(autouse=True)
def _reset_servers() -> None:
    engine_servers.reset_probe()


def manager(*servers: ServerConfig, events: EventRecorder | None = None) -> McpManager:
    return McpManager(McpConfig(servers=servers or (PROBE,)), McpSettings(enabled=True), events=events)


# --- build_messages -------------------------------------------------------------------


def test_messages_use_the_system_role_and_append_memories() -> None:
    messages = build_messages("West of House", "You saw a mailbox.", model="openai/gpt-4o")
    assert messages == [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": "West of House\n\nYou saw a mailbox."},
    ]


@pytest.mark.parametrize("memories", [None, ""])
def test_messages_without_memories(memories: str | None) -> None:
    (_, user) = build_messages("Kitchen", memories, model="gpt-4o")
    assert user["content"] == "Kitchen"


@pytest.mark.parametrize("model", ["o1", "o1-mini", "openai/o1-preview", "o1-2024-12-17"])
def test_o1_style_models_get_the_prompt_as_a_user_message(model: str) -> None:
    (prompt, user) = build_messages("Attic", model=model, system_prompt="be terse")
    assert prompt == {"role": "user", "content": "be terse"}
    assert user["role"] == "user"


@pytest.mark.parametrize("model", ["gpt-4o", "anthropic/claude-3.5-sonnet", "o3-mini", "llama-3.1-o1x"])
def test_other_models_keep_the_system_role(model: str) -> None:
    assert build_messages("Attic", model=model)[0]["role"] == "system"


@settings(max_examples=100)
@given(state=ANY_TEXT, memories=st.none() | ANY_TEXT, model=st.text(max_size=30), prompt=ANY_TEXT)
def test_messages_carry_the_prompt_and_state_and_no_caching_markers(
    state: str, memories: str | None, model: str, prompt: str
) -> None:
    """Property 15 is the chat client's: it marks system and user messages on the wire (checked in
    test_engine_properties.py and test_llm_client.py); the agent's messages carry no marker."""
    messages = build_messages(state, memories, model=model, system_prompt=prompt)
    assert len(messages) == 2
    assert all("cache_control" not in m for m in messages)
    assert [m["content"] for m in messages] == [prompt, f"{state}\n\n{memories}" if memories else state]


# --- AgentResponse and parsing --------------------------------------------------------


def test_response_schema_is_a_strict_json_schema() -> None:
    schema = AgentResponse.json_schema()
    assert schema["type"] == "json_schema"
    inner = schema["json_schema"]
    assert inner["name"] == "AgentResponse"
    assert inner["strict"] is True
    assert inner["schema"]["required"] == ["thinking", "action", "new_objective"]
    assert inner["schema"]["additionalProperties"] is False
    assert set(inner["schema"]["properties"]) == {"thinking", "action", "new_objective"}


@pytest.mark.parametrize(
    "content",
    [
        '{"thinking": "t", "action": "open mailbox", "new_objective": "read leaflet"}',
        '```json\n{"thinking": "t", "action": "open mailbox", "new_objective": "read leaflet"}\n```',
        'Sure!\n{"thinking": "t", "action": "open mailbox", "new_objective": "read leaflet"}\nDone.',
        '{"reasoning": "t", "action": "open mailbox", "new_objective": "read leaflet", "extra": 1}',
        # What worked before thinking was left out: still works.
        '<THINK>{}</THINK>\n```json\n{"thinking": "t", "action": "open mailbox", "new_objective": '
        '"read leaflet"}\n```\nI picked it because {reasons}.',
        '[{"thinking": "t", "action": "open mailbox", "new_objective": "read leaflet"}]',
    ],
)
def test_parse_accepts_the_shapes_models_produce(content: str) -> None:
    assert parse_agent_response(content) == AgentResponse(
        thinking="t", action="open mailbox", new_objective="read leaflet"
    )


@pytest.mark.parametrize("objective", [None, "", "   "])
def test_a_blank_objective_is_none(objective: str | None) -> None:
    content = json.dumps({"thinking": "t", "action": "n", "new_objective": objective})
    assert parse_agent_response(content).new_objective is None


PROBE_THINKING = (
    "<think>\nI'm North of House... The JSON must look like {\"action\": ...}. I'll open it.\n</think>\n\n"
)


@pytest.mark.parametrize(
    ("content", "action"),
    [
        # DeepSeek-R1 / Qwen3 distills on Ollama: thinking (with braces) in the content, then the answer.
        (
            PROBE_THINKING + '{"thinking": "t", "action": "read leaflet", "new_objective": null}',
            "read leaflet",
        ),
        # The chat template opened the thinking: only its "</think>" is in the content.
        (
            'I\'ll say {"thinking": "d", "action": "draft"}.\n</think>\n{"thinking": "t", "action": "up"}',
            "up",
        ),
        # A draft in the thinking and nothing valid after it but the answer.
        ('<think>{"thinking": "d", "action": "draft"}</think>{"action": "west"} {"note": 1}', "west"),
        # Prose with braces after the answer (JSON then "Extra data" before).
        ('{"thinking": "t", "action": "n"}\n\nNote: the format was {"thinking", "action"}.', "n"),
        # An example answer quoted first, the real one last.
        (
            'Format: {"thinking": "...", "action": "<one game command>"}. Mine: {"action": "open mailbox"}',
            "open mailbox",
        ),
        # Two answers: the last one is the model's last word.
        ('{"thinking": "a", "action": "north"}\n{"thinking": "b", "action": "south"}', "south"),
        # Tags inside the answer's own strings are text, not the end of the thinking.
        (PROBE_THINKING + '{"thinking": "no </think> or <think> here", "action": "east"}', "east"),
    ],
)
def test_parse_finds_the_last_answer_outside_the_thinking(content: str, action: str) -> None:
    assert parse_agent_response(content).action == action


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("go north", "no JSON object in the answer: 'go north'"),
        ("", "the answer is empty"),
        (" \n ", "the answer is only white space: ' \\n '"),
        ('{"thinking": "t"}', """the JSON object in the answer has no "action": '{"thinking": "t"}'"""),
        (
            '{"thinking": "t", "action": "  "}',
            'the JSON object in the answer has "action": "  ", not a non-empty string: '
            """'{"thinking": "t", "action": "  "}'""",
        ),
        (
            '{"thinking": "t", "action": 3}',
            'the JSON object in the answer has "action": 3, not a non-empty string: '
            """'{"thinking": "t", "action": 3}'""",
        ),
        (
            '{"a": {"action": "n"}} {"action": null}',
            'none of the 2 JSON objects in the answer has a usable action (the last has "action": null, '
            """not a non-empty string): '{"a": {"action": "n"}} {"action": null}'""",
        ),
        ('["north"]', """expected a JSON object as the answer, got an array: '["north"]'"""),
        ("null", "expected a JSON object as the answer, got null: 'null'"),
        (  # Python notation, but a bare name that is no literal: nothing is evaluated
            "{'action': north}",
            "no JSON object in the answer (Expecting property name enclosed in double quotes at "
            """"'action': north}"): "{'action': north}\"""",
        ),
        (
            'Sure: {"thinking": "t", "action": "open mail',
            "no JSON object in the answer (Unterminated string starting at '\"open mail'): "
            """'Sure: {"thinking": "t", "action": "open mail'""",
        ),
        (
            '<think>I\'d say {"action": "north"} but',
            "the model sent only thinking (a <think> block), no answer after it: "
            """'<think>I\\'d say {"action": "north"} but'""",
        ),
        (
            PROBE_THINKING + "I would go north.",
            "no JSON object in the answer outside its thinking: 'I would go north.'",
        ),
        ("x" * 300, f"no JSON object in the answer: '{'x' * 200}'… (300 characters)"),
    ],
)
def test_parse_errors_say_what_the_model_sent(content: str, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        parse_agent_response(content)


NOT_THINK = ANY_TEXT.filter(lambda text: "think>" not in text.lower())
BRACES = st.sampled_from(
    [
        "{",
        "}",
        "{reasons}",
        '{"thinking", "action"}',
        '{"note": 1}',
        '{"action": ""}',
        '{"action": 3}',
        "[1]",
        "{{",
    ]
)
DRAFT = st.builds(lambda a: json.dumps({"thinking": "draft", "action": a}), ANY_TEXT.filter(str.strip))


def prose(*parts: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.lists(st.one_of(NOT_THINK, *parts), max_size=4).map(" ".join)


@settings(max_examples=200)
@given(
    answer=st.fixed_dictionaries(
        {"thinking": ANY_TEXT, "action": ANY_TEXT.filter(str.strip), "new_objective": st.none() | ANY_TEXT}
    ),
    thinking=prose(BRACES, DRAFT),
    before=prose(BRACES, DRAFT),
    after=prose(BRACES),
    style=st.sampled_from(["<think>{}</think>", "{}</think>", "<think>{}</think>\n\n", ""]),
    indent=st.sampled_from([None, 2]),
)
def test_the_answer_is_found_after_any_thinking_and_before_any_prose(
    answer: dict[str, Any], thinking: str, before: str, after: str, style: str, indent: int | None
) -> None:
    """Whatever the thinking holds (braces, drafts), an example quoted before the answer, and prose
    with braces or objects that are not answers after it: the answer is the one the model gave."""
    opening = style.replace("{}", thinking)
    content = f"{opening}{before}\n{json.dumps(answer, indent=indent)}\n{after}"
    objective = answer["new_objective"]
    assert parse_agent_response(content) == AgentResponse(
        thinking=answer["thinking"],
        action=answer["action"],
        new_objective=objective if objective and objective.strip() else None,
    )


@settings(max_examples=200)
@given(text=ANY_TEXT.filter(lambda t: t.strip() and "{" not in t and "think>" not in t.lower()))
def test_an_answer_without_an_object_is_quoted_in_the_error(text: str) -> None:
    try:
        json.loads(text)
    except ValueError:
        expected = f"no JSON object in the answer: {text.strip()[:200]!r}"
    else:
        expected = "expected a JSON object as the answer, got "
    with pytest.raises(ValueError, match=f"^{re.escape(expected)}"):
        parse_agent_response(text)


@settings(max_examples=100)
@given(
    thinking=ANY_TEXT,
    action=ANY_TEXT.filter(str.strip),
    objective=st.none() | ANY_TEXT,
    extra=st.dictionaries(
        st.text(max_size=5).filter(lambda k: k not in ("thinking", "action", "new_objective", "reasoning")),
        st.integers(),
        max_size=2,
    ),
    wrapper=st.sampled_from(["{}", "```json\n{}\n```", "```\n{}\n```", "My answer:\n{}\nThanks.", "  {}  "]),
    indent=st.sampled_from([None, 2]),
)
def test_parse_round_trips_every_agent_response(
    thinking: str, action: str, objective: str | None, extra: dict[str, int], wrapper: str, indent: int | None
) -> None:
    """Properties 46, 47: a parsed response has thinking, action and the optional objective, as sent."""
    body = json.dumps(
        {"thinking": thinking, "action": action, "new_objective": objective, **extra}, indent=indent
    )
    parsed = parse_agent_response(wrapper.replace("{}", body))
    assert parsed == AgentResponse(
        thinking=thinking, action=action, new_objective=objective if objective and objective.strip() else None
    )


# --- clean_action ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("open mailbox", "open mailbox"),
        ("  open   mailbox \n", "open mailbox"),
        ("north\nsouth", "north"),
        ("\n\n  west", "west"),
        ("> north", "north"),
        ("Action: take lamp", "take lamp"),
        ("`take lamp`", "take lamp"),
        ('"go west"', "go west"),
        ("'> north'", "north"),
        ("> > north", "north"),
        ("turn on\x00lamp", "turn on lamp"),
        ("north\u2028south", "north south"),
        ("", DEFAULT_ACTION),
        ("   ", DEFAULT_ACTION),
        ("```", DEFAULT_ACTION),
        (">", DEFAULT_ACTION),
        ("x" * 500, "x" * 120),
    ],
)
def test_clean_action_examples(raw: str, clean: str) -> None:
    assert clean_action(raw) == clean


@settings(max_examples=100)
@given(
    raw=ANY_TEXT | st.sampled_from(["> > north", "'> look'", "action: `> up`", "\"'x'\"", "a" * 119 + "`b"])
)
def test_clean_action_is_always_one_game_command(raw: str) -> None:
    """Property 2: non-empty, single line, printable, bounded, and cleaning it again changes nothing."""
    action = clean_action(raw)
    assert action
    assert action == action.strip()
    assert len(action.splitlines()) == 1
    assert action.isprintable()
    assert len(action) <= 120
    assert clean_action(action) == action


@settings(max_examples=100)
@given(
    words=st.lists(st.from_regex(r"\A[a-z]{1,8}\Z"), min_size=1, max_size=4),
    pad=st.sampled_from(["", " ", "\n"]),
)
def test_clean_action_keeps_plain_commands(words: list[str], pad: str) -> None:
    command = " ".join(words)
    assert clean_action(f"{pad}{command}{pad}") == command


# --- ZorkAgent.generate_action against the loopback server ----------------------------


async def act(
    llm_server: LLMServer, agent_kwargs: dict[str, Any], *, model: str = "gpt-4o-test", **kw: Any
) -> Any:
    async with open_llm_client(base_url=llm_server.base_url, model=model) as client:
        agent = ZorkAgent(model=client, **agent_kwargs)
        return await agent.generate_action("West of House", "Memories: none.", **kw)


async def test_a_turn_with_a_tool_call_returns_the_parsed_action(llm_server: LLMServer) -> None:
    llm_server.script(
        tool_call_reply(tool_call("p__ok", {"tag": "map"}, id="c1")),
        agent_reply("open mailbox", thinking="mail first", new_objective="read the leaflet"),
    )
    events = EventRecorder()
    action = await act(
        llm_server, {"settings": McpSettings(enabled=True), "mcp": manager(events=events), "events": events}
    )
    assert action.as_dict() == {
        "action": "open mailbox",
        "reasoning": "mail first",
        "new_objective": "read the leaflet",
    }
    assert action.parse_error is None
    assert action.turn is not None
    assert [(c.name, c.outcome) for c in action.turn.tool_calls] == [("p.ok", "ok")]
    first, second = llm_server.bodies
    assert [t["function"]["name"] for t in first["tools"]] == ["p__ok", "p__fail", "p__hang"]  # property 1
    assert first["messages"][0]["role"] == "system"
    assert second["messages"][-1]["tool_call_id"] == "c1"
    assert events.lines[-1] == "[INFO] Turn 1: Agent action: open mailbox"


async def test_incompatible_model_fails_before_any_tool_call(llm_server: LLMServer) -> None:
    """Requirement 12.5: checked once the tools are known, before the first LLM call."""
    settings_ = McpSettings(enabled=True)
    with pytest.raises(ModelCompatibilityError, match="Model 'deepseek-r1' does not support tool calling"):
        await act(llm_server, {"settings": settings_, "mcp": manager()}, model="deepseek-r1")
    assert llm_server.requests == []
    assert engine_servers.PROBE_LOG == []


async def test_force_tool_support_lets_an_unlisted_model_use_tools(llm_server: LLMServer) -> None:
    llm_server.script(agent_reply("north"))
    settings_ = McpSettings(enabled=True, force_tool_support=True)
    action = await act(llm_server, {"settings": settings_, "mcp": manager()}, model="deepseek-r1")
    assert action.action == "north"
    assert "tools" in llm_server.bodies[0]


async def test_without_mcp_a_reasoning_model_runs_without_tools(llm_server: LLMServer) -> None:
    """Requirement 1.5, property 48: MCP disabled is the same path with no tool parameters."""
    llm_server.script(agent_reply("north"))
    action = await act(llm_server, {"settings": McpSettings()}, model="o1-mini")
    assert action.action == "north"
    (body,) = llm_server.bodies
    assert "tools" not in body
    assert "tool_choice" not in body
    assert "response_format" not in body
    assert body["messages"][0] == {"role": "user", "content": SYSTEM_PROMPT, "cache_control": CACHE}


async def test_unparseable_answer_falls_back_to_look(llm_server: LLMServer) -> None:
    """Seeds 000 §3.2: ``{"action": "look", "reasoning": "Parse error: …"}`` and agent_parse_error;
    the error quotes what the model sent."""
    llm_server.script(content_reply("I would go north, I think."))
    events = EventRecorder()
    action = await act(llm_server, {"settings": McpSettings(), "events": events})
    assert action.as_dict() == {
        "action": "look",
        "reasoning": "Parse error: no JSON object in the answer: 'I would go north, I think.'",
        "new_objective": None,
    }
    why = "no JSON object in the answer: 'I would go north, I think.'"
    assert [(e["raw_response"], e["error"]) for e in events.of_type("agent_parse_error")] == [
        ("I would go north, I think.", why)
    ]
    assert f"[ERROR] Turn 1: Failed to parse agent response: {why}" in events.lines
    (complete,) = events.of_type("mcp_session_complete")
    assert complete["final_action"] == "look"


async def test_an_answer_after_thinking_with_braces_is_played(llm_server: LLMServer) -> None:
    """What a DeepSeek-R1 or Qwen3 distill on Ollama sends: the thinking in the content, then the answer."""
    answer = '{"thinking": "The mailbox is right here.", "action": "open mailbox", "new_objective": null}'
    llm_server.script(content_reply(PROBE_THINKING + answer))
    events = EventRecorder()
    action = await act(llm_server, {"settings": McpSettings(), "events": events})
    assert action.as_dict() == {
        "action": "open mailbox",
        "reasoning": "The mailbox is right here.",
        "new_objective": None,
    }
    assert action.parse_error is None
    assert events.of_type("agent_parse_error") == []
    assert [line for line in events.lines if line.startswith("[ERROR]")] == []


async def test_a_cut_off_answer_says_why_the_model_stopped(llm_server: LLMServer) -> None:
    llm_server.script(content_reply('{"thinking": "a long plan', finish_reason="length"))
    events = EventRecorder()
    action = await act(llm_server, {"settings": McpSettings(), "events": events})
    why = (
        "no JSON object in the answer (Unterminated string starting at '\"a long plan'): "
        """'{"thinking": "a long plan' (the model stopped with finish_reason 'length': its answer was """
        "cut at the endpoint's own token limit (no max_tokens was sent); set max_tokens in "
        "[tool.zorkgpt.agent_sampling] (in zorkmcp eval: the arm's max_tokens), or give the model server a "
        "larger context)"
    )
    assert (action.action, action.reasoning, action.parse_error) == ("look", f"Parse error: {why}", why)
    assert [e["error"] for e in events.of_type("agent_parse_error")] == [why]


@pytest.mark.parametrize(("content", "sent"), [(None, "no content"), ("", "empty content")])
async def test_no_answer_at_all_is_a_parse_error_that_says_so(
    llm_server: LLMServer, content: str | None, sent: str
) -> None:
    """Nothing to parse, even after the forced final call: still the seeds' fallback and an
    agent_parse_error (a missing answer is an answer that could not be used), worded as what happened."""
    llm_server.script(content_reply(content), content_reply(content))
    events = EventRecorder()
    action = await act(llm_server, {"settings": McpSettings(), "events": events})
    why = f"the model sent {sent}, even to the forced final call"
    assert (action.action, action.reasoning, action.parse_error) == ("look", f"Parse error: {why}", why)
    assert len(llm_server.requests) == 2
    assert [(e["raw_response"], e["error"]) for e in events.of_type("agent_parse_error")] == [(content, why)]
    assert f"[ERROR] Turn 1: No agent response: {why}" in events.lines


async def test_turn_deadline_gives_look_and_no_parse_error(
    llm_server: LLMServer, autojump_clock: trio.testing.MockClock
) -> None:
    """The deadline has its own event (turn_deadline_exceeded): no agent_parse_error, no ERROR line."""
    llm_server.script(tool_call_reply(tool_call("p__hang", {"tag": "slow"})), agent_reply("late"))
    events = EventRecorder()
    settings_ = McpSettings(enabled=True, turn_timeout_seconds=2)
    start = trio.current_time()
    action = await act(llm_server, {"settings": settings_, "mcp": manager(events=events), "events": events})
    assert trio.current_time() - start == pytest.approx(2.0, abs=0.05)
    assert action.as_dict() == {
        "action": "look",
        "reasoning": "No answer: the turn deadline of 2s passed before the model gave one",
        "new_objective": None,
    }
    assert action.parse_error is None
    assert events.of_type("mcp_session_complete")[0]["final_action"] == "look"
    assert [e["deadline_seconds"] for e in events.of_type("turn_deadline_exceeded")] == [2]
    assert events.of_type("agent_parse_error") == []
    assert [line for line in events.lines if line.startswith("[ERROR]")] == []
    assert "[INFO] Turn 1: Agent action: look" in events.lines


async def test_disabled_mcp_falls_back_to_a_turn_without_tools(llm_server: LLMServer) -> None:
    """Requirements 6.1, 6.7–6.10: first turn fails fast; later the server is retried once, then disabled,
    and from then on the agent says so (``mcp_disabled_fallback``) and runs without tools."""
    events = EventRecorder()
    mgr = manager(BROKEN, events=events)
    agent_kwargs = {"settings": McpSettings(enabled=True), "mcp": mgr, "events": events}
    with pytest.raises(MCPServerStartupError, match="Failed to start MCP server 'broken'"):
        await act(llm_server, agent_kwargs)
    assert llm_server.requests == []

    llm_server.script(agent_reply("north"), agent_reply("south"))
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o") as client:
        agent = ZorkAgent(model=client, **agent_kwargs)
        second = await agent.generate_action("state")  # retried once, failed again: disabled
        assert mgr.is_disabled
        assert [e["server"] for e in events.of_type("mcp_disabled_fallback")] == ["broken"]
        third = await agent.generate_action("state")
    assert (second.action, third.action) == ("north", "south")
    fallbacks = events.of_type("mcp_disabled_fallback")
    assert len(fallbacks) == 2
    assert fallbacks[1]["reason"] == "every MCP server is disabled for this episode"
    assert "[INFO] Turn 2: Continuing without MCP tools" in events.lines
    for body in llm_server.bodies:
        assert "tools" not in body
        assert "tool_choice" not in body


async def test_turns_are_numbered_per_call(llm_server: LLMServer) -> None:
    llm_server.script(agent_reply("north"), agent_reply("east"))
    events = EventRecorder()
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o") as client:
        agent = ZorkAgent(model=client, settings=McpSettings(), events=events)
        await agent.generate_action("a")
        await agent.generate_action("b", turn=41)
    assert [line for line in events.lines if "Agent action" in line] == [
        "[INFO] Turn 1: Agent action: north",
        "[INFO] Turn 41: Agent action: east",
    ]
