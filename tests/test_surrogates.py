"""Half an emoji from a model: a lone UTF-16 surrogate never ends an episode or blames a server.

Models split an emoji across tokens and emit ``"\\ud83d"`` alone, raw or as a JSON escape inside a
tool call's ``arguments``. The engine replaces a lone surrogate with U+FFFD where the model's text
comes in (property 11: the parsed tool calls; Requirement 5.3: the parsed arguments), so the call
reaches its server over any transport, the logs are written and the game gets a command. Arguments
that a caller passes as given (``zorkmcp call``, the Bridge) become an error result for that call,
and the stdio writer answers a request it cannot encode with an error, keeping the connection.

Real parts throughout: the loopback chat-completions server, the repository's think server and the
misbehaving test server as subprocesses (on the real clock: a child process cannot follow trio's
virtual time; nothing asserts a duration), the think server in process, real Zork.
"""

from __future__ import annotations

import io
import json
import sys
from typing import TYPE_CHECKING, Any

import mcp_types
import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st
from llm_server import (
    LLMServer,
    agent_reply,
    completion,
    content_reply,
    json_reply,
    tool_call,
    tool_call_reply,
)
from mcp.shared.exceptions import MCPError
from play_support import events_of, read_events, write_project
from play_support import zork1_path as zork1
from rich.console import Console
from servers.helpers import misbehaving, thinking
from test_bridge import llm_in_thread

from zorkmcp._cli_mcp import cmd_call
from zorkmcp.agent import ZorkAgent, clean_action
from zorkmcp.cli import main
from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.llm import CompletionRequest, FunctionCall, LLMResponse, open_llm_client
from zorkmcp.mcp import McpManager, open_server_session, open_toolbox

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="subprocess servers")

GUARD = 30  # seconds: a hung test fails instead of hanging the suite (never an assertion on time)
SETTINGS = McpSettings(enabled=True, server_startup_timeout_seconds=10)
GO = CompletionRequest([{"role": "user", "content": "go"}])
INPROCESS_THINKING = ServerConfig(
    name="thinking", type="inprocess", module="zorkmcp.servers.thinking:create_server"
)

# --- the rule, on what the model sent ---------------------------------------------------


@pytest.mark.parametrize(
    ("sent", "parsed"),
    [
        ('{"x": "\\ud800"}', '{"x": "\\ufffd"}'),  # the probe's arguments: an escaped lone high half
        ('{"x": "\\udc00 and \\ud83d"}', '{"x": "\\ufffd and \\ufffd"}'),
        ('{"x": "\\ude00\\ud83d"}', '{"x": "\\ufffd\\ufffd"}'),  # both halves, in the wrong order
        ('{"x": "\\ud83d\\ud83d\\ude00"}', '{"x": "\\ufffd\\ud83d\\ude00"}'),
        ('{"x": "\\ud83d\\ude00\\ud800"}', '{"x": "\\ud83d\\ude00\\ufffd"}'),  # a whole pair stays
        ('{"x": "\\uD83D\\uDE00", "y": "\\uDBFF"}', '{"x": "\\uD83D\\uDE00", "y": "\\ufffd"}'),
        ('{"x": "\\\\ud800\\ud800"}', '{"x": "\\\\ud800\\ufffd"}'),  # an escaped backslash, then text
        ('{"x": "\\\\\\ud800"}', '{"x": "\\\\\\ufffd"}'),  # an escaped backslash, then an escape
        ('{"x": "\ud800"}', '{"x": "\ufffd"}'),  # raw in the arguments string (escaped in the body)
        ({"x": "\ud800"}, '{"x": "\\ufffd"}'),  # arguments sent as an object
        ('{"x": "caf\\u00e9 \\n\\udc00"}', '{"x": "caf\\u00e9 \\n\\ufffd"}'),  # other escapes stay
    ],
)
async def test_tool_call_arguments_hold_no_lone_surrogate(
    llm_server: LLMServer, sent: str | dict[str, str], parsed: str
) -> None:
    llm_server.script(tool_call_reply(tool_call("p__ok", sent, id="c1")))
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o") as client:
        response = await client.complete(GO)
    assert response.tool_calls is not None
    assert response.tool_calls[0].function.arguments == parsed


async def test_content_names_and_ids_hold_no_lone_surrogate(llm_server: LLMServer) -> None:
    call = {"id": "c\udfff", "type": "function", "function": {"name": "p__\ud800", "arguments": "{}"}}
    llm_server.script(
        content_reply("half \ud83d, whole \ud83d\ude00, low \ude00"),
        json_reply(completion({"role": "assistant", "tool_calls": [call]}, model="m\ud800")),
    )
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o") as client:
        text = await client.complete(GO)
        calls = await client.complete(GO)
    assert text.content == "half \ufffd, whole \U0001f600, low \ufffd"
    assert calls.model == "m\ufffd"
    assert calls.tool_calls is not None
    (only,) = calls.tool_calls
    assert (only.id, only.function.name) == ("c\ufffd", "p__\ufffd")


def _reference(text: str) -> str:
    """The rule, one code point at a time: a high half followed by a low half is their character."""
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        after = text[index + 1] if index + 1 < len(text) else ""
        if "\ud800" <= char <= "\udbff" and "\udc00" <= after <= "\udfff":
            out.append(chr(0x10000 + (ord(char) - 0xD800) * 0x400 + (ord(after) - 0xDC00)))
            index += 2
            continue
        out.append("\ufffd" if "\ud800" <= char <= "\udfff" else char)
        index += 1
    return "".join(out)


def _referenced(value: Any) -> Any:
    if isinstance(value, str):
        return _reference(value)
    if isinstance(value, list):
        return [_referenced(item) for item in value]
    if isinstance(value, dict):
        return {_reference(key): _referenced(item) for key, item in value.items()}
    return value


HALVES = st.sampled_from(["\ud83d", "\ude00", "\ud800", "\udfff", "\U0001f600", "\\", "u", "a"])
TEXT = st.text(HALVES | st.characters(codec=None, exclude_categories=()), max_size=12)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=300)
@given(value=JSON_VALUES, ascii_only=st.booleans(), content=TEXT)
def test_any_arguments_parse_to_valid_unicode_by_the_rule(value: Any, ascii_only: bool, content: str) -> None:
    """Property 11 with half emoji: what the engine parses is the sent value with the rule applied."""
    sent = json.dumps(value, ensure_ascii=ascii_only)
    arguments = FunctionCall(name="t", arguments=sent).arguments
    assert json.loads(arguments) == _referenced(value)
    arguments.encode("utf-8")  # raises if a surrogate were left anywhere
    if _referenced(value) == value and not any("\ud800" <= ch <= "\udfff" for ch in sent):
        assert arguments == sent  # nothing to replace: the model's text is kept as sent
    assert LLMResponse(content=content, model="m").content == _reference(content)


async def test_the_final_answer_holds_no_lone_surrogate(
    llm_server: LLMServer, autojump_clock: trio.testing.MockClock
) -> None:
    """Property 2 and the answer's other fields: the escapes inside the content's JSON follow the rule."""
    content = (
        '{"thinking": "\\ud83d\\ude00 \\ud800", "action": "take \\udfff lamp", '
        '"new_objective": "find \\udc00"}'
    )
    llm_server.script(content_reply(content))
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o") as client:
        action = await ZorkAgent(model=client, settings=McpSettings()).generate_action("West of House")
    assert action.as_dict() == {
        "action": "take lamp",
        "reasoning": "\U0001f600 \ufffd",
        "new_objective": "find \ufffd",
    }
    assert action.parse_error is None


@pytest.mark.parametrize(
    ("action", "command"),
    [("open \ufffd mailbox", "open mailbox"), ("\ufffd", "look"), ("> \ufffd'north'", "north")],
)
def test_a_replaced_half_is_a_gap_in_the_command(action: str, command: str) -> None:
    """Property 2: U+FFFD is what the model's half emoji became; the game reads printable ASCII only."""
    assert clean_action(action) == command


# --- the call, over each transport ------------------------------------------------------


async def test_a_half_emoji_in_a_tool_call_reaches_the_stdio_server_and_keeps_it(
    llm_server: LLMServer,
) -> None:
    """The probe's fault: the first call killed the think server, the next one found it gone."""
    first = '{"thought": "half \\ud83d", "thoughtNumber": 1, "totalThoughts": 2, "nextThoughtNeeded": true}'
    second = (
        '{"thought": "\\ud83d\\ude00", "thoughtNumber": 2, "totalThoughts": 2, "nextThoughtNeeded": false}'
    )
    llm_server.script(
        tool_call_reply(tool_call("thinking__think", first, id="c1")),
        tool_call_reply(tool_call("thinking__think", second, id="c2")),
        agent_reply("open \ud800 mailbox", thinking="the \udfff mailbox"),
    )
    mcp = McpManager(McpConfig(servers=(thinking(),)), SETTINGS)
    with trio.fail_after(GUARD):
        async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o") as client:
            agent = ZorkAgent(model=client, settings=SETTINGS, mcp=mcp)
            action = await agent.generate_action("West of House")
    assert action.as_dict() == {
        "action": "open mailbox",
        "reasoning": "the \ufffd mailbox",
        "new_objective": None,
    }
    assert action.turn is not None
    assert [(c.name, c.outcome, c.arguments["thought"]) for c in action.turn.tool_calls] == [
        ("thinking.think", "ok", "half \ufffd"),
        ("thinking.think", "ok", "\U0001f600"),
    ]
    last = llm_server.bodies[2]["messages"]
    assert [m["tool_calls"][0]["function"]["arguments"] for m in (last[2], last[4])] == [
        '{"thought": "half \\ufffd", "thoughtNumber": 1, "totalThoughts": 2, "nextThoughtNeeded": true}',
        '{"thought": "\\ud83d\\ude00", "thoughtNumber": 2, "totalThoughts": 2, "nextThoughtNeeded": false}',
    ]
    assert json.loads(last[-1]["content"]) == {  # the same server process saw both thoughts
        "content": {
            "thoughtNumber": 2,
            "totalThoughts": 2,
            "nextThoughtNeeded": False,
            "branches": [],
            "thoughtHistoryLength": 2,
        }
    }


THOUGHT = {"thought": "\ud800", "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": False}
REFUSED = (
    "Tool call failed: arguments['thought'] holds '\\ud800', a lone surrogate: not valid Unicode, "
    "so the call was not sent"
)


@pytest.mark.parametrize("server", [thinking(), INPROCESS_THINKING], ids=["stdio", "inprocess"])
async def test_arguments_given_with_a_lone_surrogate_are_an_error_result(server: ServerConfig) -> None:
    with trio.fail_after(GUARD):
        async with open_toolbox([server], SETTINGS) as toolbox:
            refused = await toolbox.call_tool("thinking.think", THOUGHT)
            after = await toolbox.call_tool("thinking.think", {**THOUGHT, "thought": "\U0001f600"})
    assert (refused.is_error, refused.content, refused.error_message) == (True, None, REFUSED)
    assert (after.is_error, after.content["thoughtHistoryLength"]) == (False, 1)


def test_zorkmcp_call_answers_a_lone_surrogate_with_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # no settings: the embedded think server, a stdio subprocess
    args = '{"thought":"\\ud800","thoughtNumber":1,"totalThoughts":1,"nextThoughtNeeded":false}'
    assert cmd_call("thinking.think", args, None, None, None) == 1
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [json.dumps({"error": REFUSED, "content": None})]
    assert captured.err == ""


def _text(result: mcp_types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, mcp_types.TextContent)
    return block.text


async def test_the_stdio_writer_answers_a_request_it_cannot_encode_and_keeps_the_connection() -> None:
    """Below the toolbox: the SDK session's request with a lone surrogate never reaches the server."""
    with trio.fail_after(GUARD):
        async with open_server_session(misbehaving("ok"), SETTINGS) as session:
            with pytest.raises(MCPError, match=r"^the tools/call request was not sent: ") as refused:
                await session.client.call_tool("echo", {"text": "\ud800"})
            echoed = await session.client.call_tool("echo", {"text": "\U0001f600"})
            counted = await session.client.call_tool("pid", {})
            alive = session.alive
    assert str(refused.value) == (
        "the tools/call request was not sent: it holds '\\ud800', a lone surrogate, which UTF-8 cannot encode"
    )
    assert _text(echoed) == "\U0001f600"
    assert json.loads(_text(counted))["calls"] == 2  # the refused request never reached the server
    assert alive


# --- the episode: stdio servers, the game, the logs -------------------------------------


def test_play_goes_on_when_the_model_sends_half_an_emoji(tmp_path: Path) -> None:
    """The user's probe: ``zorkmcp play`` used to stop at the first call (exit 1, no turn played).

    Every turn calls the game server and the think server (both stdio) with a half emoji and answers
    with one in the action, the thinking and the objective: four turns are played, the events and the
    episode log are written, and no call fails.
    """
    thought = '{"thought": "\\ud800", "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": false}'
    turn = [
        tool_call_reply(tool_call("zork__memory", '{"x": "\\ud800"}'), tool_call("thinking__think", thought)),
        agent_reply("open \ud83d mailbox", thinking="half \ud83d", new_objective="\udfff"),
    ]
    logs = {
        "json_log_file": str(tmp_path / "events.jsonl"),
        "episode_log_file": str(tmp_path / "episode.log"),
    }
    pyproject = write_project(tmp_path, files=logs)
    out, err = io.StringIO(), io.StringIO()
    with llm_in_thread(*turn * 4) as llm:
        llm_table = f'client_base_url = "{llm.base_url}"\nagent_model = "gpt-4o"'
        pyproject.write_text(pyproject.read_text() + f"\n[tool.zorkgpt.llm]\n{llm_table}\n")
        code = main(
            ["play", "--game", str(zork1()), "--pyproject", str(pyproject), "--quiet", "--turns", "4"],
            console=Console(file=out, width=120),
            err=Console(file=err, width=400),
        )
    assert (code, err.getvalue()) == (0, "")
    events = read_events(tmp_path / "events.jsonl")
    (complete,) = events_of(events, "episode_complete")
    assert (complete["stopped"], complete["turns"], complete["moves"]) == ("turn limit", 4, 4)
    turns = events_of(events, "turn_complete")
    assert [(t["action"], t["reasoning"], t["new_objective"], t["game_error"]) for t in turns] == [
        ("open mailbox", "half \ufffd", "\ufffd", None)
    ] * 4
    calls = [
        (e["tool_name"], e["arguments"].get("x", e["arguments"].get("thought")))
        for e in events_of(events, "mcp_tool_call")
    ]
    assert calls == [("zork.memory", "\ufffd"), ("thinking.think", "\ufffd")] * 4
    assert events_of(events, "mcp_tool_error") == []
    assert "Turn 4: Agent action: open mailbox" in (tmp_path / "episode.log").read_text(encoding="utf-8")
