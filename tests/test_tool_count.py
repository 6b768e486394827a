"""More tools than OpenAI's API takes in one request (128), and tools left out told once per episode.

OpenAI answers a request with more than 128 tools ``HTTP 400 Invalid 'tools': array too long``, so
the episode stops on its first request. The engine still offers every tool (Requirement 8.5: other
endpoints take more), but says so beforehand: ``zorkmcp tools`` (and ``--lint``) and, once at the
start of an episode, ``zorkmcp play`` (a warning and an ``mcp_too_many_tools`` event); and the
endpoint's refusal, when it comes, says what to do. The servers are in-process SDK servers defined
here; the model is the loopback HTTP server (tests/llm_server.py).
"""

from __future__ import annotations

import io
import json
from typing import TYPE_CHECKING, Any

import mcp_types as types
import pytest
from llm_server import LLMServer, RecordedRequest, Reply, agent_reply, json_reply
from mcp.server.lowlevel import Server
from play_support import events_of, read_events, write_project
from play_support import zork1_path as zork1
from rich.console import Console
from servers.helpers import RecordingSink
from test_bridge import llm_in_thread

from zorkmcp.cli import main
from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.errors import LLMHTTPError
from zorkmcp.llm import CompletionRequest, open_llm_client
from zorkmcp.mcp import McpManager

if TYPE_CHECKING:
    from pathlib import Path

    import trio.testing

ADVICE = (
    "OpenAI's API takes at most 128 tools in one request and refuses more (HTTP 400, \"Invalid 'tools': "
    'array too long"); to offer fewer, give a server a "tools" allow-list in mcp_config.json'
)
REMEDY = (
    'the endpoint takes fewer tools in one request: offer fewer with a "tools" allow-list per server in '
    "mcp_config.json (zorkmcp tools lists them)"
)
OPENAI_REFUSAL = (
    "Invalid 'tools': array too long. Expected an array with maximum length 128, but got an array with "
    "length 129 instead."
)


def _server(name: str, tools: list[types.Tool]) -> Server[Any]:
    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=params.name)])

    return Server(name, on_list_tools=list_tools, on_call_tool=call_tool)


def _plain(count: int) -> list[types.Tool]:
    return [
        types.Tool(name=f"t{i:03}", input_schema={"type": "object", "properties": {}}) for i in range(count)
    ]


def create_125_tools() -> Server[Any]:
    """125 tools: with the game's 3, the 128 OpenAI takes."""
    return _server("many", _plain(125))


def create_126_tools() -> Server[Any]:
    """126 tools: with the game's 3, one more than OpenAI takes."""
    return _server("many", _plain(126))


CONTRADICTORY = {
    "type": "object",
    "properties": {"id": {"allOf": [{"type": "string"}, {"type": "integer"}]}},
}
"""A schema no translation can offer: no value is both a string and an integer (a recursive one
is offered, cut after one level: tests/test_recursiveschema_translate.py)."""
CONTRADICTORY_REASON = "$.properties.id: allOf parts disagree about 'type'"


def create_left_out_server() -> Server[Any]:
    """Tools ``plain`` and ``lookup``; ``lookup``'s schema contradicts itself, so it is left out."""
    plain = types.Tool(name="plain", input_schema={"type": "object", "properties": {}})
    return _server("left-out", [plain, types.Tool(name="lookup", input_schema=CONTRADICTORY)])


def _inprocess(name: str, factory: str, **options: Any) -> dict[str, Any]:
    return {name: {"type": "inprocess", "module": f"test_tool_count:{factory}", **options}}


# --- zorkmcp tools ---------------------------------------------------------------------------------


def _tools(tmp_path: Path, factory: str, *flags: str) -> tuple[int, str]:
    config = tmp_path / "mcp_config.json"
    config.write_text(json.dumps({"mcpServers": _inprocess("many", factory)}))
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.zorkgpt.mcp]\nenabled = false\n")
    return main(["tools", *flags, "--config", str(config), "--pyproject", str(pyproject)]), str(config)


@pytest.mark.parametrize("flags", [("--lint",), ("--lint", "--json"), ("--json",)])
def test_tools_warns_when_play_would_offer_more_than_openai_takes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: tuple[str, ...]
) -> None:
    assert _tools(tmp_path, "create_126_tools", *flags)[0] == 0
    out, err = capsys.readouterr()
    assert err == (
        "warning: these servers offer 126 tools (many: 126), and zorkmcp play adds the game's 3: 129 in all; "
        f"{ADVICE}\n"
    )
    if "--lint" in flags and "--json" not in flags:
        assert out.splitlines()[-1] == "126 tool(s): 126 unchanged, 0 changed, 0 left out"
    else:
        assert len(json.loads(out)) == 126  # the output is the same, the warning is beside it
    assert _tools(tmp_path, "create_125_tools", *flags)[0] == 0  # 128 in all: nothing to say
    assert capsys.readouterr().err == ""


# --- zorkmcp play ----------------------------------------------------------------------------------


def _play(tmp_path: Path, llm: LLMServer, config: dict[str, Any]) -> tuple[int, str, list[dict[str, Any]]]:
    logs = {
        "json_log_file": str(tmp_path / "logs" / "events.jsonl"),
        "episode_log_file": str(tmp_path / "logs" / "episode.log"),
    }
    pyproject = write_project(tmp_path, mcp_config=config, files=logs)
    pyproject.write_text(
        pyproject.read_text()
        + f'[tool.zorkgpt.llm]\nclient_base_url = "{llm.base_url}"\nagent_model = "gpt-4o"\n'
    )
    out, err = io.StringIO(), io.StringIO()
    code = main(
        ["play", "--game", str(zork1()), "--pyproject", str(pyproject), "--quiet", "--turns", "3"],
        console=Console(file=out, width=120),
        err=Console(file=err, width=1000),
    )
    return code, err.getvalue(), read_events(tmp_path / "logs" / "events.jsonl")


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)


WARNING = "warning: Turn 1: 129 MCP tools are offered to the model (many: 126, zork: 3); " + ADVICE + "\n"


def test_play_warns_once_at_the_start_and_offers_every_tool(tmp_path: Path) -> None:
    """An endpoint that takes 129 tools gets them all, three turns; the warning and the event come once."""
    with llm_in_thread(default=agent_reply("look")) as llm:
        config = {"mcpServers": _inprocess("many", "create_126_tools", lifecycle="per_turn")}
        code, err, events = _play(tmp_path, llm, config)
        offered = [len(request.json["tools"]) for request in llm.requests]
    assert code == 0, err
    assert offered == [129, 129, 129]
    assert err.count("129 MCP tools") == 1
    assert WARNING in err
    (told,) = [
        {k: v for k, v in e.items() if k != "timestamp"} for e in events_of(events, "mcp_too_many_tools")
    ]
    assert told.pop("episode_id").startswith("episode-")
    assert told == {
        "event_type": "mcp_too_many_tools",
        "turn": 1,
        "tools": 129,
        "limit": 128,
        "servers": {"many": 126, "zork": 3},
    }
    log = (tmp_path / "logs" / "episode.log").read_text()
    assert log.count("129 MCP tools are offered to the model") == 1


def test_openais_refusal_of_the_tool_count_says_what_to_do(tmp_path: Path) -> None:
    def openai(request: RecordedRequest) -> Reply:  # as api.openai.com answers
        if len(request.json.get("tools", [])) > 128:
            error = {"message": OPENAI_REFUSAL, "type": "invalid_request_error", "param": "tools"}
            return json_reply({"error": {**error, "code": "array_above_max_length"}}, status=400)
        return agent_reply("look")

    with llm_in_thread(default=openai) as llm:
        config = {"mcpServers": _inprocess("many", "create_126_tools")}
        code, err, events = _play(tmp_path, llm, config)
    assert code == 1
    assert WARNING in err  # first the warning, then the refusal it foretold
    assert err.index(WARNING) < err.index(OPENAI_REFUSAL)
    (complete,) = events_of(events, "episode_complete")
    assert complete["error"] == (
        f"LLMHTTPError: POST {llm.base_url}/chat/completions answered HTTP 400 Bad Request: {OPENAI_REFUSAL} "
        f"— {REMEDY}"
    )


@pytest.mark.parametrize(
    "message",
    [
        OPENAI_REFUSAL,
        "You may not include more than 128 tools in your request.",  # GitHub Copilot's API
        "* tools[0].function_declarations: [FIELD_INVALID] At most 512 function declarations can be "
        "specified.",  # Gemini
    ],
)
async def test_an_endpoint_refusing_the_tool_count_says_what_to_do(
    llm_server: LLMServer, message: str
) -> None:
    llm_server.script(json_reply({"error": {"message": message}}, status=400))
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o") as client:
        with pytest.raises(LLMHTTPError) as caught:
            await client.complete(CompletionRequest([{"role": "user", "content": "hi"}]))
    assert str(caught.value) == (
        f"POST {llm_server.base_url}/chat/completions answered HTTP 400 Bad Request: {message} — {REMEDY}"
    )


# --- mcp_tool_excluded: once per server and tool per episode ----------------------------------------


def _manager(sink: RecordingSink) -> McpManager:
    servers = (
        ServerConfig(name="turn", type="inprocess", module="test_tool_count:create_left_out_server"),
        ServerConfig(
            name="ep",
            type="inprocess",
            module="test_tool_count:create_left_out_server",
            lifecycle="per_episode",
        ),
    )
    return McpManager(McpConfig(servers=servers), McpSettings(), events=sink)


def _told(sink: RecordingSink) -> tuple[list[dict[str, Any]], list[str]]:
    excluded = [fields for event, fields in sink.events if event == "mcp_tool_excluded"]
    warnings = [line for level, line in sink.lines if level == "WARNING" and "left out" in line]
    return excluded, warnings


async def test_a_tool_left_out_is_told_once_per_episode(autojump_clock: trio.testing.MockClock) -> None:
    """Three turns, the program's own calls between them (another toolbox), a per_turn and a
    per_episode server: each left-out tool is one event and one warning; a new episode tells again."""
    sink = RecordingSink()
    manager = _manager(sink)
    once = (
        [
            {"server": "turn", "tool": "lookup", "reason": CONTRADICTORY_REASON},
            {"server": "ep", "tool": "lookup", "reason": CONTRADICTORY_REASON},
        ],
        [
            f"MCP tool 'turn.lookup' left out: {CONTRADICTORY_REASON} (zorkmcp tools --lint explains)",
            f"MCP tool 'ep.lookup' left out: {CONTRADICTORY_REASON} (zorkmcp tools --lint explains)",
        ],
    )
    for episode_number in (1, 2):
        async with manager.open_episode() as episode:
            for _ in range(3):
                async with manager.open_turn(episode) as toolbox:
                    assert [info.name for info in toolbox.tools] == ["turn.plain", "ep.plain"]
                    assert (await toolbox.call_tool("turn.plain", {})).content == "plain"
                assert (await episode.call_tool("ep.plain", {})).content == "plain"
        excluded, warnings = _told(sink)
        assert sorted(map(json.dumps, excluded)) == sorted(map(json.dumps, once[0] * episode_number))
        assert sorted(warnings) == sorted(once[1] * episode_number)
