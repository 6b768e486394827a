"""A tool description longer than OpenAI's API takes (1024 characters) is cut for the model.

OpenAI answers a request whose tool has a longer description with HTTP 400 (``Invalid
'tools[0].function.description': string too long. Expected a string with maximum length 1024``), so
one such tool failed every request of every turn: ``@modelcontextprotocol/server-sequential-thinking``
(README's example, ``examples/mcp_config.sequential-thinking.json``) has 2781 characters. The model is
now offered the lines that fit and ``…``, and the episode log says so once per episode; ``zorkmcp
tools --json`` still gives the description whole.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from llm_server import LLMServer, content_reply
from mcp.server.lowlevel import Server
from node_support import NODE, THINKING, needs_node_package
from servers.helpers import RecordingSink

from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.engine import TurnOptions, run_turn
from zorkmcp.llm import open_llm_client
from zorkmcp.mcp import McpManager, open_toolbox

LINE = "- a line of advice that the tool's author thought the model should read first\n"  # 78 characters
LONG = "Searches the archive.\n" + LINE * 30  # 22 + 2340 = 2362 characters
CUT = "Searches the archive.\n" + LINE * 11 + LINE[:-1] + "…"  # 958 characters: the lines that fit


def test_a_description_is_whole_up_to_1024_characters_and_cut_after() -> None:
    from zorkmcp.mcp._tools import offered_description

    assert offered_description("") == ""
    assert offered_description("x" * 1024) == "x" * 1024
    assert offered_description(LONG) == CUT
    assert len(CUT) == 958
    # No line break near the end: whole words; none at all: the characters that fit.
    assert offered_description("word " * 300) == "word " * 203 + "word…"
    assert offered_description("x" * 1025) == "x" * 1023 + "…"
    # Characters beyond the Basic Multilingual Plane count twice (UTF-16), as some endpoints count them.
    assert offered_description("🔍" * 512) == "🔍" * 512
    assert offered_description("🔍" * 513) == "🔍" * 511 + "…"


def archive_server() -> Server[Any]:
    """One tool with a long description, one with a short one."""

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        no_args = {"type": "object", "properties": {}}
        return types.ListToolsResult(
            tools=[
                types.Tool(name="search", description=LONG, input_schema=no_args),
                types.Tool(name="count", description="Counts.", input_schema=no_args),
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text="0")])  # pragma: no cover

    return Server("archive", on_list_tools=list_tools, on_call_tool=call_tool)


ARCHIVE = ServerConfig(name="archive", type="inprocess", module=f"{__name__}:archive_server")
WARNING = (
    "WARNING",
    "MCP tool 'archive.search': its description has 2362 characters, more than OpenAI's API takes "
    "(1024); the model is offered it cut to 1024",
)


async def test_the_model_is_offered_the_cut_description_and_told_once(llm_server: LLMServer) -> None:
    sink = RecordingSink()
    manager = McpManager(McpConfig(servers=(ARCHIVE,)), McpSettings(enabled=True), events=sink)
    llm_server.script(content_reply("look"), content_reply("look"))
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o-test") as model:
        for _ in range(2):  # two turns of one episode
            await run_turn(
                model,
                [{"role": "user", "content": "what now?"}],
                open_toolbox=manager.open_turn,
                options=TurnOptions(final_response_format=None),
            )
    for body in llm_server.bodies:
        assert [tool["function"]["description"] for tool in body["tools"]] == [CUT, "Counts."]
    assert [line for line in sink.lines if line[0] == "WARNING"] == [WARNING]
    async with open_toolbox([ARCHIVE], McpSettings()) as toolbox:
        assert toolbox.tools[0].description == LONG  # what `zorkmcp tools --json` prints


@needs_node_package(THINKING)
async def test_server_sequential_thinking_is_offered_within_the_limit() -> None:
    assert NODE is not None
    sink = RecordingSink()
    server = ServerConfig(name="sequential-thinking", command=NODE, args=(str(THINKING),))
    async with open_toolbox([server], McpSettings(), events=sink) as toolbox:
        (offered,) = toolbox.openai_tools()
        whole = toolbox.tools[0].description
    description = offered["function"]["description"]
    assert len(whole) > 1024
    assert len(description) <= 1024
    assert description.endswith("\n- Generates a solution hypothesis…")
    assert whole.startswith(description.removesuffix("…"))
    assert [line for line in sink.lines if line[0] == "WARNING"] == [
        (
            "WARNING",
            f"MCP tool 'sequential-thinking.sequentialthinking': its description has {len(whole)} "
            "characters, more than OpenAI's API takes (1024); the model is offered it cut to 1024",
        )
    ]
