"""The MCP layer over the SDK's in-memory transport (``"type": "inprocess"``): translation to OpenAI
format, naming, routing, result conversion, truncation, and timeouts on virtual time."""

from __future__ import annotations

import base64
import json
from typing import Any

import anyio
import mcp_types as types
import pytest
import trio
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.errors import MCPServerStartupError
from zorkmcp.mcp import McpManager, ToolCallResult, open_toolbox

# --- in-process servers (factories referenced as f"{__name__}:factory") ---------------------------

CANCELLED: list[str] = []
IMAGE = base64.b64encode(b"\x89PNG" + bytes(1230)).decode()  # 1234 bytes
AUDIO = base64.b64encode(bytes(300)).decode()
BLOB = base64.b64encode(bytes(10)).decode()
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"size": {"type": "integer", "minimum": 0}},
    "additionalProperties": False,
}
RICH_TOOLS = [
    "text",
    "json_text",
    "json_scalar",
    "multi",
    "structured",
    "image",
    "audio",
    "resource",
    "blob",
    "link",
    "empty",
    "error",
    "rpc_error",
    "big",
    "hang",
    "count",
]


def _text(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def rich_server() -> Server[Any]:
    """One tool per kind of result; ``count`` counts calls on this server instance."""
    calls = 0

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        tools = [types.Tool(name=name, input_schema={"type": "object"}) for name in RICH_TOOLS]
        tools[0] = types.Tool(name="text", description="Say hello.", input_schema=SCHEMA)
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        nonlocal calls
        calls += 1
        args = params.arguments or {}
        match params.name:
            case "text":
                return _text("hello")
            case "json_text":
                return _text('{"a": [1, 2], "b": null}')
            case "json_scalar":
                return _text("42")
            case "multi":
                return types.CallToolResult(
                    content=[
                        types.TextContent(type="text", text="one"),
                        types.TextContent(type="text", text="[2]"),
                    ]
                )
            case "structured":
                return types.CallToolResult(
                    content=[types.TextContent(type="text", text="x is 1")], structured_content={"x": 1}
                )
            case "image":
                return types.CallToolResult(
                    content=[types.ImageContent(type="image", data=IMAGE, mime_type="image/png")]
                )
            case "audio":
                return types.CallToolResult(
                    content=[types.AudioContent(type="audio", data=AUDIO, mime_type="audio/wav")]
                )
            case "resource":
                resource = types.TextResourceContents(
                    uri="file:///notes.txt", mime_type="text/plain", text="abc"
                )
                return types.CallToolResult(
                    content=[types.EmbeddedResource(type="resource", resource=resource)]
                )
            case "blob":
                blob = types.BlobResourceContents(uri="file:///x.bin", mime_type="application/zip", blob=BLOB)
                return types.CallToolResult(content=[types.EmbeddedResource(type="resource", resource=blob)])
            case "link":
                link = types.ResourceLink(
                    type="resource_link", uri="file:///map.png", name="map", description="Map"
                )
                return types.CallToolResult(content=[link])
            case "empty":
                return types.CallToolResult(content=[])
            case "error":
                return types.CallToolResult(
                    content=[types.TextContent(type="text", text="bad things")], is_error=True
                )
            case "rpc_error":
                raise MCPError(code=types.INVALID_PARAMS, message="no such thing")
            case "big":
                return _text("y" * int(args.get("size", 100)))
            case "hang":
                try:
                    await anyio.Event().wait()
                except anyio.get_cancelled_exc_class():
                    CANCELLED.append(params.name)
                    raise
            case "count":
                return _text(json.dumps({"calls": calls}))
        raise AssertionError(params.name)  # pragma: no cover

    return Server("rich", on_list_tools=list_tools, on_call_tool=call_tool)


def high_level_server() -> MCPServer:
    server = MCPServer("high")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @server.tool()
    def greet() -> str:
        return "hello"

    @server.tool()
    def evens(n: int) -> list[int]:
        return list(range(0, n, 2))

    @server.tool()
    def point() -> dict[str, int]:
        return {"x": 1, "result": 2}

    return server


def never_ready_server() -> Server[Any]:
    """Its lifespan never finishes, so initialize is never answered."""
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def lifespan(server: Server[Any]) -> Any:
        await anyio.Event().wait()
        yield  # pragma: no cover

    return Server("never", lifespan=lifespan)


not_a_server = 42


def inproc(factory: str, *, name: str = "rich", **options: Any) -> ServerConfig:
    return ServerConfig(name=name, type="inprocess", module=f"{__name__}:{factory}", **options)


SETTINGS = McpSettings(tool_call_timeout_seconds=30, server_startup_timeout_seconds=3)


# --- translation, naming, routing -----------------------------------------------------------------


async def test_tools_are_translated_to_openai_format() -> None:
    async with open_toolbox([inproc("rich_server")], SETTINGS) as toolbox:
        schemas = toolbox.openai_tools()
    assert len(schemas) == len(RICH_TOOLS)  # property 37: every tool
    assert schemas[0] == {
        "type": "function",
        "function": {
            "name": "rich__text",
            "description": "Say hello.",
            # The portable subset: additionalProperties goes (zorkmcp.mcp._schema).
            "parameters": {"type": "object", "properties": {"size": {"type": "integer", "minimum": 0}}},
        },
    }
    assert schemas[1]["function"]["description"] == ""  # a missing description becomes ""
    assert [info.name for info in toolbox.tools][:2] == ["rich.text", "rich.json_text"]


async def test_allow_list_and_per_server_timeout() -> None:
    server = inproc("rich_server", tools=("text", "count", "absent"), timeout=2.5)
    async with open_toolbox([server], SETTINGS) as toolbox:
        assert [info.tool for info in toolbox.tools] == ["text", "count"]
        assert {info.timeout for info in toolbox.tools} == {2.5}
        result = await toolbox.call_tool("rich.hang", {})
    assert result.is_error
    assert result.error_message == "Unknown tool 'rich.hang'. Available tools: rich.text, rich.count"


async def test_call_by_wire_or_canonical_name_routes_to_the_right_server() -> None:
    servers = [inproc("rich_server", name="first"), inproc("rich_server", name="second.one")]
    async with open_toolbox(servers, SETTINGS) as toolbox:
        assert toolbox.resolve("second.one.count") is not None
        info = toolbox.resolve("second_one__count")
        assert info is not None
        assert (info.server, info.tool) == ("second.one", "count")
        await toolbox.call_tool("second.one.count", {})
        second = await toolbox.call_tool("second_one__count", {})
        first = await toolbox.call_tool("first__count", {})
    assert second.content == {"calls": 2}
    assert first.content == {"calls": 1}


async def test_unknown_tool_is_an_error_result_listing_the_tools() -> None:
    async with open_toolbox([inproc("rich_server", tools=("text",))], SETTINGS) as toolbox:
        result = await toolbox.call_tool("rich.nothing", {"a": 1})
    assert result == ToolCallResult(
        content=None, is_error=True, error_message="Unknown tool 'rich.nothing'. Available tools: rich.text"
    )
    assert result.to_dict() == {"error": result.error_message, "content": None}


# --- result conversion ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "content"),
    [
        ("text", "hello"),
        ("json_text", {"a": [1, 2], "b": None}),
        ("json_scalar", "42"),
        ("multi", ["one", [2]]),
        ("structured", "x is 1"),  # the content blocks are the result, not structuredContent
        ("image", "[image: image/png, 1234 bytes]"),
        ("audio", "[audio: audio/wav, 300 bytes]"),
        (
            "resource",
            {"type": "resource", "uri": "file:///notes.txt", "mime_type": "text/plain", "text": "abc"},
        ),
        (
            "blob",
            {
                "type": "resource",
                "uri": "file:///x.bin",
                "mime_type": "application/zip",
                "blob": "[binary: application/zip, 10 bytes]",
            },
        ),
        ("link", {"type": "resource_link", "uri": "file:///map.png", "name": "map", "description": "Map"}),
        ("empty", ""),
    ],
)
async def test_result_conversion(tool: str, content: Any) -> None:
    async with open_toolbox([inproc("rich_server")], SETTINGS) as toolbox:
        result = await toolbox.call_tool(f"rich.{tool}", {})
    assert result == ToolCallResult(content=content)
    assert result.to_dict() == {"content": content}
    json.dumps(result.to_dict())


async def test_error_results() -> None:
    async with open_toolbox([inproc("rich_server")], SETTINGS) as toolbox:
        tool_error = await toolbox.call_tool("rich.error", {})
        rpc_error = await toolbox.call_tool("rich.rpc_error", {})
        not_an_object = await toolbox.call_tool("rich.text", ["a"])  # type: ignore[arg-type]
    assert tool_error == ToolCallResult(content=None, is_error=True, error_message="bad things")
    assert rpc_error.is_error
    assert not rpc_error.timed_out
    assert rpc_error.error_message == "Tool call failed: no such thing"
    assert not_an_object.error_message == "Tool call failed: arguments must be a JSON object"


@pytest.mark.parametrize(("size", "truncated"), [(100, 0), (101, 1), (5000, 4900)])
async def test_large_results_are_truncated_with_a_marker(size: int, truncated: int) -> None:
    settings = McpSettings(max_result_bytes=100)
    async with open_toolbox([inproc("rich_server")], settings) as toolbox:
        result = await toolbox.call_tool("rich.big", {"size": size})
    if truncated:
        assert result.content == "y" * 100 + f"…[truncated {truncated} bytes]"
    else:
        assert result.content == "y" * 100


async def test_high_level_mcpserver_objects_work_inprocess() -> None:
    async with open_toolbox([inproc("high_level_server", name="calc")], SETTINGS) as toolbox:
        assert [info.tool for info in toolbox.tools] == ["add", "greet", "evens", "point"]
        added = await toolbox.call_tool("calc.add", {"a": 2, "b": 3})
        greeting = await toolbox.call_tool("calc.greet", {})
        evens = await toolbox.call_tool("calc.evens", {"n": 7})
        point = await toolbox.call_tool("calc.point", {})
    # MCPServer wraps non-object results as structured {"result": value}; the LLM sees the value.
    assert added.content == 5
    assert greeting.content == "hello"
    assert evens.content == [0, 2, 4, 6]  # (its text blocks would be "0", "2", ... one per item)
    assert point.content == {"x": 1, "result": 2}  # a real object is never unwrapped


async def test_the_embedded_thinking_server_runs_inprocess() -> None:
    server = ServerConfig(name="thinking", type="inprocess", module="zorkmcp.servers.thinking:create_server")
    manager = McpManager(McpConfig(servers=(server,)), SETTINGS)
    async with manager.open_turn() as toolbox:
        arguments = {
            "thought": "open the mailbox",
            "thoughtNumber": 1,
            "totalThoughts": 2,
            "nextThoughtNeeded": True,
        }
        result = await toolbox.call_tool("thinking__think", arguments)
    assert not result.is_error
    assert result.content["thoughtNumber"] == 1


async def test_a_factory_given_in_code_is_called_instead_of_the_module() -> None:
    made: list[str] = []

    def factory() -> Server[Any]:
        made.append("called")
        return rich_server()

    # The module does not exist: naming the server is all it is for when a factory is given.
    server = ServerConfig(
        name="made", type="inprocess", module="no_such_package.elsewhere:x", factory=factory
    )
    async with open_toolbox([server], SETTINGS) as toolbox:
        result = await toolbox.call_tool("made.text", {"size": 1})
    assert (result.is_error, result.content) == (False, "hello")
    assert made == ["called"]


# --- timeouts on virtual time ---------------------------------------------------------------------


async def test_timeout_is_exact_and_the_server_is_told(autojump_clock: trio.testing.MockClock) -> None:
    CANCELLED.clear()
    async with open_toolbox([inproc("rich_server", timeout=7)], SETTINGS) as toolbox:
        start = trio.current_time()
        result = await toolbox.call_tool("rich.hang", {})
        assert trio.current_time() - start == pytest.approx(7)
        explicit = await toolbox.call_tool("rich.hang", {}, timeout=0.25)
        assert trio.current_time() - start == pytest.approx(7.25)
        after = await toolbox.call_tool("rich.count", {})  # the session is still usable
    assert result == ToolCallResult(
        content=None, is_error=True, error_message="Tool call timed out after 7s", timed_out=True
    )
    assert explicit.error_message == "Tool call timed out after 0.25s"
    assert after.content == {"calls": 3}
    # notifications/cancelled reached the server: its handler was cancelled, once per call.
    assert CANCELLED == ["hang", "hang"]


async def test_startup_timeout_on_virtual_time(autojump_clock: trio.testing.MockClock) -> None:
    start = trio.current_time()
    with pytest.raises(
        MCPServerStartupError, match=r"no answer to initialize and tools/list within 3s"
    ) as info:
        async with open_toolbox([inproc("never_ready_server", name="never")], SETTINGS):
            pytest.fail("should not start")  # pragma: no cover
    assert trio.current_time() - start >= 3
    assert info.value.server == "never"
    assert info.value.command.startswith("inprocess ")


@pytest.mark.parametrize(
    ("module", "match"),
    [
        ("no_such_module_zork:factory", r"ModuleNotFoundError: No module named 'no_such_module_zork'"),
        (f"{__name__}:not_a_server", r"TypeError: '.*:not_a_server' is not callable"),
        (f"{__name__}", r"ValueError: inprocess module must look like 'package.module:factory'"),
        (f"{__name__}:inproc", r"TypeError: inproc\(\) missing 1 required positional argument"),
    ],
)
async def test_bad_inprocess_modules_are_startup_errors(module: str, match: str) -> None:
    server = ServerConfig(name="broken", type="inprocess", module=module)
    with pytest.raises(MCPServerStartupError, match=r"Failed to start MCP server 'broken': " + match):
        async with open_toolbox([server], SETTINGS):
            pytest.fail("should not start")  # pragma: no cover


# --- lifecycles over the memory transport ---------------------------------------------------------


async def test_per_episode_sessions_are_borrowed_and_per_turn_sessions_are_fresh() -> None:
    config = McpConfig(
        servers=(
            inproc("rich_server", name="episode", lifecycle="per_episode", tools=("count",)),
            inproc("rich_server", name="turn", tools=("count",)),
        )
    )
    manager = McpManager(config, SETTINGS)
    counts = []
    async with manager.open_episode() as episode:
        assert set(episode.sessions) == {"episode"}
        for _ in range(3):
            async with manager.open_turn(episode) as toolbox:
                assert toolbox.servers == ("episode", "turn")
                a = await toolbox.call_tool("episode.count", {})
                b = await toolbox.call_tool("turn.count", {})
                counts.append((a.content["calls"], b.content["calls"]))
        # The program (not the agent) may call any per_episode tool, allow-list or not.
        text = await episode.call_tool("episode.text", {})
    assert counts == [(1, 1), (2, 1), (3, 1)]
    assert text.content == "hello"
    assert manager.turn == 3


async def test_body_exceptions_come_out_plain() -> None:
    manager = McpManager(McpConfig(servers=(inproc("rich_server"),)), SETTINGS)
    with pytest.raises(KeyError, match="from the body"):
        async with manager.open_turn():
            raise KeyError("from the body")
