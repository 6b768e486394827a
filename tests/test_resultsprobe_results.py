"""Tool results as real servers send them, and what the model reads of them.

* A result whose ``structuredContent`` does not match the tool's ``outputSchema`` (or is missing, or
  the schema cannot be checked against) reaches the model as any result does, with one warning per
  tool and episode; the SDK's check used to turn it into ``Tool call failed: RuntimeError: …`` and
  the model lost what the tool had done (and was invited to do it again).
* An error result says its text once (``{"error": "city not found", "content": null}``), and stays
  within ``max_result_bytes`` as a whole; it used to carry the text twice, up to twice the cap.
* A blob resource whose MIME type says text (server-everything's ``text/plain`` blobs) is shown as
  its text, not as ``[binary: text/plain, 55 bytes]``.

Through an SDK low-level server in this process (a real ``ClientSession`` over the memory
transport), a real turn against the loopback chat-completions server, and
``@modelcontextprotocol/server-everything`` on Node.js (skipped without it).
"""

from __future__ import annotations

import base64
import json
from typing import Any

import mcp_types as types
from llm_server import LLMServer, content_reply, tool_call, tool_call_reply
from mcp.server.lowlevel import Server
from node_support import EVERYTHING, NODE, needs_node_package
from servers.helpers import RecordingSink

from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.engine import TurnOptions, run_turn
from zorkmcp.llm import open_llm_client
from zorkmcp.mcp import McpManager, ToolCallResult, convert_call_result, open_toolbox

WEATHER_OUT = {
    "type": "object",
    "properties": {"temp": {"type": "number"}, "unit": {"type": "string"}},
    "required": ["temp", "unit"],
}
BROKEN_OUT = {"type": "object", "properties": {"temp": {"type": "nonsense"}}}
NO_ARGS = {"type": "object", "properties": {}}
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(1226)).decode()  # 1234 bytes


def text(value: str) -> types.TextContent:
    return types.TextContent(type="text", text=value)


def blob(data: bytes, mime: str | None) -> types.EmbeddedResource:
    contents = types.BlobResourceContents(
        uri="file:///notes.txt", mime_type=mime, blob=base64.b64encode(data).decode()
    )
    return types.EmbeddedResource(type="resource", resource=contents)


def convert(
    content: list[types.ContentBlock],
    structured: Any = None,
    *,
    is_error: bool = False,
    max_bytes: int = 65536,
) -> ToolCallResult:
    raw = types.CallToolResult(content=content, structured_content=structured, is_error=is_error)
    return convert_call_result(raw, max_bytes=max_bytes)


def weather_server() -> Server[Any]:
    """Tools with an ``outputSchema`` answering as servers in the wild do, and plain error results."""

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        checked = ("wrong_type", "no_structure", "matches", "declined")
        return types.ListToolsResult(
            tools=[
                *(types.Tool(name=name, input_schema=NO_ARGS, output_schema=WEATHER_OUT) for name in checked),
                types.Tool(name="broken_schema", input_schema=NO_ARGS, output_schema=BROKEN_OUT),
                types.Tool(name="not_found", input_schema=NO_ARGS),
                types.Tool(name="render", input_schema=NO_ARGS),
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        match params.name:
            case "wrong_type":  # the temperature as a string: '21' is not of type 'number'
                return types.CallToolResult(
                    content=[text("It is 21 C")], structured_content={"temp": "21", "unit": "C"}
                )
            case "no_structure":  # an outputSchema declared, only text sent (bricks-mcp, Hubitat)
                return types.CallToolResult(content=[text("It is 21 C")])
            case "broken_schema":  # {"type": "nonsense"}: not JSON Schema, nothing can be checked
                return types.CallToolResult(content=[text("It is 21 C")], structured_content={"temp": 21})
            case "matches":
                return types.CallToolResult(
                    content=[text('{"temp": 21, "unit": "C"}')], structured_content={"temp": 21, "unit": "C"}
                )
            case "declined":  # an error result need not match its outputSchema
                return types.CallToolResult(content=[text("city not found")], is_error=True)
            case "not_found":
                return types.CallToolResult(content=[text("city not found")], is_error=True)
            case "render":
                return types.CallToolResult(
                    content=[
                        text("render failed"),
                        types.ImageContent(type="image", data=PNG, mime_type="image/png"),
                    ],
                    is_error=True,
                )
        raise AssertionError(params.name)  # pragma: no cover

    return Server("weather", on_list_tools=list_tools, on_call_tool=call_tool)


WEATHER = ServerConfig(name="weather", type="inprocess", module=f"{__name__}:weather_server")


# --- a result that does not match its outputSchema ------------------------------------------------


async def test_a_result_that_does_not_match_its_output_schema_is_shown_with_one_warning() -> None:
    sink = RecordingSink()
    async with open_toolbox([WEATHER], McpSettings(), events=sink) as toolbox:
        wrong_type = await toolbox.call_tool("weather.wrong_type", {})
        again = await toolbox.call_tool("weather.wrong_type", {})
        no_structure = await toolbox.call_tool("weather.no_structure", {})
        broken_schema = await toolbox.call_tool("weather.broken_schema", {})
        matches = await toolbox.call_tool("weather.matches", {})
        declined = await toolbox.call_tool("weather.declined", {})
    assert wrong_type == again == ToolCallResult(content="It is 21 C")
    assert no_structure == broken_schema == ToolCallResult(content="It is 21 C")
    assert matches == ToolCallResult(content={"temp": 21, "unit": "C"})
    assert declined == ToolCallResult(content=None, is_error=True, error_message="city not found")
    assert [line for line in sink.lines if line[0] != "DEBUG"] == [
        (
            "WARNING",
            "MCP tool 'weather.wrong_type' returned a result that does not match its outputSchema "
            "($.temp: '21' is not of type 'number'); the model is shown the result as it is",
        ),
        (
            "WARNING",
            "MCP tool 'weather.no_structure' returned no structuredContent, which its outputSchema asks "
            "for; the model is shown the result as it is",
        ),
        (
            "WARNING",
            "MCP tool 'weather.broken_schema' has an outputSchema its results cannot be checked against "
            "('nonsense' is not valid under any of the given schemas); "
            "the model is shown the result as it is",
        ),
    ]


# --- error results --------------------------------------------------------------------------------


def test_an_error_result_says_its_text_once() -> None:
    assert convert([text("city not found")], is_error=True) == ToolCallResult(
        content=None, is_error=True, error_message="city not found"
    )
    assert convert([text("boom: disk full")], {"code": 28}, is_error=True).content is None
    assert convert([text('{"code": 28}')], {"code": 28}, is_error=True) == ToolCallResult(
        content=None, is_error=True, error_message='{"code": 28}'
    )
    assert convert([], is_error=True) == ToolCallResult(
        content=None, is_error=True, error_message="The tool reported an error without a message"
    )
    # What the message cannot hold stays in the content: other blocks, a structure with no block.
    image = types.ImageContent(type="image", data=PNG, mime_type="image/png")
    assert convert([text("render failed"), image], is_error=True) == ToolCallResult(
        content="[image: image/png, 1234 bytes]", is_error=True, error_message="render failed"
    )
    assert convert([], {"code": 28}, is_error=True) == ToolCallResult(
        content={"code": 28}, is_error=True, error_message="The tool reported an error without a message"
    )


def test_an_error_result_stays_within_the_cap_as_a_whole() -> None:
    failed = convert([text("Traceback: " + "x" * 4989)], is_error=True, max_bytes=1000)
    assert failed.content is None
    assert failed.error_message == "Traceback: " + "x" * 989 + "…[truncated 4000 bytes]"
    assert len(json.dumps(failed.to_dict(), ensure_ascii=False)) == 1053  # was 2074: the text twice
    # The content gets what the message left of the budget.
    notes = blob(b"n" * 2000, "text/plain")
    both = convert([text("e" * 600), notes], is_error=True, max_bytes=1000)
    assert both.error_message == "e" * 600
    assert both.content == (
        '{"type": "resource", "uri": "file:///notes.txt", "mime_type": "text/plain", "text": "'
        + "n" * 315
        + "…[truncated 1687 bytes]"
    )


async def test_the_model_reads_each_error_once_in_a_real_turn(llm_server: LLMServer) -> None:
    manager = McpManager(McpConfig(servers=(WEATHER,)), McpSettings(enabled=True))
    llm_server.script(
        tool_call_reply(
            tool_call("weather__not_found", {}, id="c1"),
            tool_call("weather__render", {}, id="c2"),
            tool_call("weather__wrong_type", {}, id="c3"),
        ),
        content_reply("done"),
    )
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o-test") as model:
        result = await run_turn(
            model,
            [{"role": "user", "content": "weather?"}],
            open_toolbox=manager.open_turn,
            options=TurnOptions(final_response_format=None),
        )
    assert result.content == "done"
    assert [m for m in llm_server.bodies[1]["messages"] if m["role"] == "tool"] == [
        {"role": "tool", "tool_call_id": "c1", "content": '{"error": "city not found", "content": null}'},
        {
            "role": "tool",
            "tool_call_id": "c2",
            "content": '{"error": "render failed", "content": "[image: image/png, 1234 bytes]"}',
        },
        {"role": "tool", "tool_call_id": "c3", "content": '{"content": "It is 21 C"}'},
    ]


# --- blobs that are text --------------------------------------------------------------------------


def test_a_blob_whose_type_says_text_is_shown_as_its_text() -> None:
    def shown(data: bytes, mime: str | None) -> Any:
        return convert([blob(data, mime)]).content

    resource = {"type": "resource", "uri": "file:///notes.txt"}
    assert shown(b"hello notes\nline 2", "text/plain") == {
        **resource,
        "mime_type": "text/plain",
        "text": "hello notes\nline 2",
    }
    assert shown(b'{"a": 1}', "application/json; charset=utf-8")["text"] == '{"a": 1}'
    assert shown(b"<svg/>", "image/svg+xml")["text"] == "<svg/>"
    assert shown(b"k: v\r\n", "application/vnd.api+yaml")["text"] == "k: v\r\n"
    # Not text after all, or not said to be: the placeholder.
    assert shown(b"\xff\xfe bad utf-8", "text/plain")["blob"] == "[binary: text/plain, 12 bytes]"
    assert shown(b"a\x00b", "text/plain")["blob"] == "[binary: text/plain, 3 bytes]"
    archive = shown(b"PK\x03\x04" + bytes(16), "application/zip")
    assert archive["blob"] == "[binary: application/zip, 20 bytes]"
    assert shown(b"plain words", None)["blob"] == "[binary: application/octet-stream, 11 bytes]"
    # A textual blob holding base64 media is a placeholder like any other text.
    png_uri = f"data:image/png;base64,{PNG}".encode()
    assert shown(png_uri, "text/plain")["text"] == "[image: image/png, 1234 bytes]"


# --- server-everything ----------------------------------------------------------------------------


@needs_node_package(EVERYTHING)
async def test_server_everythings_blob_resource_is_read_as_text() -> None:
    assert NODE is not None
    server = ServerConfig(name="everything", command=NODE, args=(str(EVERYTHING), "stdio"))
    async with open_toolbox([server], McpSettings()) as toolbox:
        result = await toolbox.call_tool(
            "everything.get-resource-reference", {"resourceType": "Blob", "resourceId": 2}
        )
    intro, resource, outro = result.content
    assert (intro, outro) == (
        "Returning resource reference for Resource 2:",
        "You can access this resource using the URI: demo://resource/dynamic/blob/2",
    )
    assert resource.pop("text").startswith("Resource 2: This is a base64 blob created at ")
    assert resource == {
        "type": "resource",
        "uri": "demo://resource/dynamic/blob/2",
        "mime_type": "text/plain",
    }
