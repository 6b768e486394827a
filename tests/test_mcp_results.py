"""What the model is shown of a tool result (``zorkmcp.mcp._results``): the content blocks are the
result, ``structuredContent`` stands in only when there is none, blocks meant for the user only are
left out, and base64 media never reaches the model as text.

Pure conversions on ``mcp_types`` objects first, then through real servers: an SDK server over the
in-memory transport inside a real turn (the loopback LLM records what the model received), and
``@modelcontextprotocol/server-everything`` as a stdio process (skipped without Node.js or the package).
"""

from __future__ import annotations

import base64
import json
from typing import TYPE_CHECKING, Any

import mcp_types as types
from hypothesis import given
from hypothesis import strategies as st
from llm_server import LLMServer, content_reply, tool_call, tool_call_reply
from mcp.server.lowlevel import Server
from node_support import EVERYTHING, NODE, needs_node_package

from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.engine import TurnOptions, run_turn
from zorkmcp.llm import open_llm_client
from zorkmcp.mcp import McpManager, ToolCallResult, convert_call_result, open_toolbox

if TYPE_CHECKING:
    from collections.abc import Sequence

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(1226)).decode()  # 1234 bytes
JPEG = base64.b64encode(b"\xff\xd8\xff\xe0" + bytes(96)).decode()  # 100 bytes
WAV = base64.b64encode(b"RIFF" + (292).to_bytes(4, "little") + b"WAVE" + bytes(288)).decode()  # 300 bytes
ZIP = base64.b64encode(b"PK\x03\x04" + bytes(16)).decode()  # 20 bytes
SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"  # base64 alphabet, not media
WRAPPER = {"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]}
LIST_WRAPPER = {
    "type": "object",
    "properties": {"result": {"type": "array", "items": {"type": "integer"}}},
    "required": ["result"],
}
WEATHER = "It is 21 degrees and sunny; bring sunglasses."
NO_MESSAGE = "The tool reported an error without a message"


def text(value: str, audience: list[Any] | None = None) -> types.TextContent:
    annotations = types.Annotations(audience=audience) if audience is not None else None
    return types.TextContent(type="text", text=value, annotations=annotations)


def image(data: str = PNG, audience: list[Any] | None = None) -> types.ImageContent:
    annotations = types.Annotations(audience=audience) if audience is not None else None
    return types.ImageContent(type="image", data=data, mime_type="image/png", annotations=annotations)


def convert(
    content: Sequence[types.ContentBlock],
    structured: Any = None,
    *,
    is_error: bool = False,
    max_bytes: int = 1 << 20,
    output_schema: dict[str, Any] | None = None,
) -> ToolCallResult:
    raw = types.CallToolResult(content=list(content), structured_content=structured, is_error=is_error)
    return convert_call_result(raw, max_bytes=max_bytes, output_schema=output_schema)


# --- content blocks first -------------------------------------------------------------------------


def test_an_image_sent_as_a_block_and_in_structured_content_is_a_placeholder() -> None:
    # @modelcontextprotocol/server-filesystem's read_media_file: the image both ways.
    structured = {"content": [{"type": "image", "data": PNG, "mimeType": "image/png"}]}
    result = convert([image()], structured)
    assert result == ToolCallResult(content="[image: image/png, 1234 bytes]")
    assert json.dumps(result.to_dict()) == '{"content": "[image: image/png, 1234 bytes]"}'


def test_text_that_says_more_than_the_structure_is_what_the_model_reads() -> None:
    assert convert([text(WEATHER)], {"temp": 21}) == ToolCallResult(content=WEATHER)
    failed = convert([text("boom: disk full")], {"code": 28}, is_error=True)
    assert failed == ToolCallResult(content=None, is_error=True, error_message="boom: disk full")


def test_structured_content_stands_in_only_when_there_is_no_block() -> None:
    failed = convert([], {"code": 28}, is_error=True)
    assert failed == ToolCallResult(content={"code": 28}, is_error=True, error_message=NO_MESSAGE)
    assert convert([], {"temp": 21}) == ToolCallResult(content={"temp": 21})
    assert convert([], {"result": [1, 2]}, output_schema=LIST_WRAPPER).content == [1, 2]
    assert convert([], {"result": [1, 2]}).content == {"result": [1, 2]}  # no schema: not a wrapper
    assert convert([]) == ToolCallResult(content="")


def test_structured_content_types_only_the_text_it_restates() -> None:
    # The text disagrees with the structure: the text is the result.
    assert convert([text("5")], {"result": 6}, output_schema=WRAPPER).content == "5"
    assert convert([text("0"), text("2")], {"result": [0, 2, 4]}, output_schema=LIST_WRAPPER).content == [
        "0",
        "2",
    ]
    assert convert([text("true")], {"result": 1}, output_schema=WRAPPER).content == "true"  # 1 is not true
    assert convert([text("5"), image()], {"result": 5}, output_schema=WRAPPER).content == [
        "5",
        "[image: image/png, 1234 bytes]",
    ]
    # The text is the structure serialised (MCPServer's way): its JSON types are kept.
    assert convert([text("5")], {"result": 5}, output_schema=WRAPPER).content == 5
    assert convert([text("0"), text("2")], {"result": [0, 2]}, output_schema=LIST_WRAPPER).content == [0, 2]
    assert convert([text("7")], {"result": [7]}, output_schema=LIST_WRAPPER).content == [7]
    assert convert([text("5")], {"result": 5}).content == "5"  # no schema: not a wrapper


# --- who the blocks are for -----------------------------------------------------------------------


def test_blocks_for_the_user_only_are_left_out_unless_all_are() -> None:
    # server-everything's get-annotated-message (debug, with its image).
    debug: list[types.ContentBlock] = [text("Debug: cache hit", ["assistant"]), image(audience=["user"])]
    assert convert(debug) == ToolCallResult(content="Debug: cache hit")
    assert convert([text("Saved.", ["user"]), text('{"id": 7}')]).content == {"id": 7}
    both = [text("for you", ["user", "assistant"]), text("for the user", ["user"])]
    assert convert(both).content == "for you"
    link = types.ResourceLink(
        type="resource_link",
        uri="file:///log.txt",
        name="log",
        annotations=types.Annotations(audience=["user"]),
    )
    assert convert([link, text("the summary")]).content == "the summary"
    assert convert([text("a", []), text("b", ["user"])]).content == "a"  # an empty audience: everyone's
    # Every block is for the user: all are kept, a result must say something.
    everything_for_the_user: list[types.ContentBlock] = [
        text("Operation completed", ["user"]),
        image(audience=["user"]),
    ]
    assert convert(everything_for_the_user).content == [
        "Operation completed",
        "[image: image/png, 1234 bytes]",
    ]


def test_an_error_message_leaves_out_what_is_for_the_user_only() -> None:
    blocks = [
        text("Something went wrong, please contact support.", ["user"]),
        text("ENOSPC writing /data/save.qzl", ["assistant"]),
    ]
    assert convert(blocks, is_error=True) == ToolCallResult(
        content=None, is_error=True, error_message="ENOSPC writing /data/save.qzl"
    )


def test_an_error_message_holds_no_base64_media() -> None:
    screenshot = json.dumps({"error": "render failed", "last_frame": {"type": "image", "data": PNG}})
    blocks = [text(f"data:image/png;base64,{PNG}"), text(screenshot), text('{"code":  28}')]
    failed = convert(blocks, is_error=True)
    assert failed.error_message == (
        "[image: image/png, 1234 bytes]\n"
        '{"error": "render failed", "last_frame": "[image: image/png, 1234 bytes]"}\n'
        '{"code":  28}'  # JSON without media: the text as sent
    )
    assert failed.content is None  # the message says what the text blocks said


# --- no base64 media as text ----------------------------------------------------------------------


def test_media_in_structured_content_becomes_placeholders() -> None:
    structured = {
        "content": [
            {"type": "image", "data": PNG, "mimeType": "image/png"},
            {"type": "text", "text": "a chart"},
        ],
        "voice": {"type": "audio", "data": WAV, "mimeType": "audio/wav"},
        "untyped": {"type": "image", "data": JPEG},
        "archive": {"uri": "file:///x.zip", "mimeType": "application/zip", "blob": ZIP},
        "embedded": {"type": "resource", "resource": {"uri": "file:///y.bin", "blob": ZIP}},
        "thumbnail": f"data:image/jpeg;base64,{JPEG}",
        "attachment": f"data:application/octet-stream;name=a.bin;base64,{ZIP}",
        "raw": PNG,
        "nested": [[{"png": PNG}]],
        "sha256": SHA256,
        "short": "iVBORw0KGgo=",
        "note": "see data:image/png;base64,iVBORw0KGgo= inline",
    }
    assert convert([], structured).content == {
        "content": ["[image: image/png, 1234 bytes]", {"type": "text", "text": "a chart"}],
        "voice": "[audio: audio/wav, 300 bytes]",
        "untyped": "[image: image/jpeg, 100 bytes]",
        "archive": {
            "uri": "file:///x.zip",
            "mimeType": "application/zip",
            "blob": "[binary: application/zip, 20 bytes]",
        },
        "embedded": {
            "type": "resource",
            "resource": {"uri": "file:///y.bin", "blob": "[binary: application/zip, 20 bytes]"},
        },
        "thumbnail": "[image: image/jpeg, 100 bytes]",
        "attachment": "[binary: application/octet-stream, 20 bytes]",
        "raw": "[image: image/png, 1234 bytes]",
        "nested": [[{"png": "[image: image/png, 1234 bytes]"}]],
        "sha256": SHA256,
        "short": "iVBORw0KGgo=",
        "note": "see data:image/png;base64,iVBORw0KGgo= inline",
    }


def test_an_unwrapped_result_holding_an_image_is_a_placeholder() -> None:
    wrapped = {"result": {"type": "image", "data": PNG, "mimeType": "image/png"}}
    schema = {"type": "object", "properties": {"result": {"type": "object"}}}
    assert convert([], wrapped, output_schema=schema).content == "[image: image/png, 1234 bytes]"


def test_media_in_text_blocks_becomes_placeholders() -> None:
    as_json = json.dumps(
        {"name": "map.png", "image": {"type": "image", "data": PNG, "mimeType": "image/png"}}
    )
    resource = types.TextResourceContents(
        uri="file:///t.txt", mime_type="text/plain", text=f"data:audio/wav;base64,{WAV}"
    )
    blocks: list[types.ContentBlock] = [
        text(as_json),
        text(f"data:image/png;base64,{PNG}"),
        text(PNG),
        text(json.dumps(PNG)),  # the same, as a JSON string
        text('"hello"'),  # a JSON string that is not media stays text, quotes and all
        types.EmbeddedResource(type="resource", resource=resource),
        text(f"Here it is: data:image/png;base64,{JPEG[:8]}"),  # prose that names a data URI stays
    ]
    assert convert(blocks).content == [
        {"name": "map.png", "image": "[image: image/png, 1234 bytes]"},
        "[image: image/png, 1234 bytes]",
        "[image: image/png, 1234 bytes]",
        "[image: image/png, 1234 bytes]",
        '"hello"',
        {
            "type": "resource",
            "uri": "file:///t.txt",
            "mime_type": "text/plain",
            "text": "[audio: audio/wav, 300 bytes]",
        },
        f"Here it is: data:image/png;base64,{JPEG[:8]}",
    ]


def test_media_is_replaced_before_the_cap() -> None:
    big = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(299_992)).decode()  # 300000 bytes
    result = convert(
        [], {"content": [{"type": "image", "data": big, "mimeType": "image/png"}]}, max_bytes=100
    )
    assert result.content == {"content": ["[image: image/png, 300000 bytes]"]}


def test_json_nested_deeper_than_the_stack_stays_text() -> None:
    deep = "[" * 5000 + "]" * 5000  # Python 3.13 parses it, 3.11 does not: text on both
    assert convert([text(deep)]).content == deep
    assert convert([text("[" * 513 + "]" * 513)]).content == "[" * 513 + "]" * 513  # one past the limit
    assert convert([text("[" * 512 + "]" * 512)]).content == json.loads("[" * 512 + "]" * 512)
    assert convert([text('{"a": ' * 513 + "1" + "}" * 513)]).content == '{"a": ' * 513 + "1" + "}" * 513
    nested: Any = "leaf"
    for _ in range(700):
        nested = [nested]
    result = convert([], {"a": nested})
    assert result.content == {"a": nested}
    assert len(json.dumps(result.to_dict())) == len('{"content": {"a": "leaf"}}') + 2 * 700


# --- properties -----------------------------------------------------------------------------------

SIGNATURES = [
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff\xe0", "image/jpeg"),
    (b"GIF89a", "image/gif"),
    (b"OggS", "audio/ogg"),
    (b"%PDF-", "application/pdf"),
]


@st.composite
def media(draw: st.DrawFn) -> tuple[Any, str, int]:
    """A piece of base64 media in one of the shapes a server may use: (value, base64, size)."""
    signature, mime = draw(st.sampled_from(SIGNATURES))
    raw = signature + draw(st.binary(min_size=48, max_size=200))
    data = base64.b64encode(raw).decode()
    shape = draw(st.sampled_from(["image", "audio", "blob", "data_uri", "bare"]))
    value: Any = {
        "image": {"type": "image", "data": data, "mimeType": mime},
        "audio": {"type": "audio", "data": data, "mimeType": mime},
        "blob": {"uri": "file:///m", "mimeType": mime, "blob": data},
        "data_uri": f"data:{mime};base64,{data}",
        "bare": data,
    }[shape]
    return value, data, len(raw)


scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=12)


@st.composite
def with_media(draw: st.DrawFn) -> tuple[Any, list[tuple[str, int]]]:
    """A JSON value with media somewhere inside it, and the media's (base64, size)."""
    found: list[tuple[str, int]] = []

    def leaf(piece: tuple[Any, str, int]) -> Any:
        value, data, size = piece
        found.append((data, size))
        return value

    leaves = scalars | media().map(leaf)
    tree = draw(
        st.recursive(
            leaves,
            lambda children: (
                st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
            ),
            max_leaves=8,
        )
    )
    serialised = json.dumps(tree)  # (a leaf Hypothesis drew and then dropped is not in the tree)
    inside = [(data, size) for data, size in found if data in serialised]
    if not inside:
        tree = [tree, leaf(draw(media()))]
        inside = found[-1:]
    return tree, inside


@given(
    case=with_media(),
    where=st.sampled_from(["structured", "text", "text_and_structured", "block_and_structured"]),
)
def test_no_base64_media_reaches_the_model(case: tuple[Any, list[tuple[str, int]]], where: str) -> None:
    tree, found = case
    serialised = text(json.dumps(tree))
    choices: dict[str, list[types.ContentBlock]] = {
        "structured": [],
        "text": [serialised],
        "text_and_structured": [serialised],
        "block_and_structured": [image()],
    }
    blocks = choices[where]
    structured = None if where == "text" else {"value": tree}
    shown = json.dumps(convert(blocks, structured).to_dict(), ensure_ascii=False)
    for data, _size in found:
        assert data not in shown
    if where != "block_and_structured":
        for _data, size in found:
            assert f", {size} bytes]" in shown


AUDIENCES: list[list[Any] | None] = [
    None,
    [],
    ["user"],
    ["assistant"],
    ["user", "assistant"],
    ["assistant", "user"],
]


@given(audiences=st.lists(st.sampled_from(AUDIENCES), min_size=1, max_size=5))
def test_only_blocks_for_the_assistant_are_shown_unless_none_is(audiences: list[list[Any] | None]) -> None:
    blocks: list[types.ContentBlock] = [text(f"block {i}", audience) for i, audience in enumerate(audiences)]
    for_the_model = [
        f"block {i}" for i, audience in enumerate(audiences) if not audience or "assistant" in audience
    ]
    expected = for_the_model or [f"block {i}" for i in range(len(audiences))]
    assert convert(blocks).content == (expected[0] if len(expected) == 1 else expected)
    result = convert(blocks, is_error=True)
    assert result.content is None  # the message says what the text blocks said
    assert result.error_message == "\n".join(expected)


# --- through real servers -------------------------------------------------------------------------

FILES_OUTPUT = {"type": "object", "properties": {"content": {"type": "array"}}, "required": ["content"]}


def media_server() -> Server[Any]:
    """An SDK 2.3 server answering as server-filesystem, a weather server and server-everything do."""

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name="read_media_file", input_schema={"type": "object"}, output_schema=FILES_OUTPUT
                ),
                types.Tool(name="weather", input_schema={"type": "object"}),
                types.Tool(name="annotated", input_schema={"type": "object"}),
            ]
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        match params.name:
            case "read_media_file":
                return types.CallToolResult(
                    content=[image()],
                    structured_content={"content": [{"type": "image", "data": PNG, "mimeType": "image/png"}]},
                )
            case "weather":
                return types.CallToolResult(content=[text(WEATHER)], structured_content={"temp": 21})
            case "annotated":
                return types.CallToolResult(
                    content=[text("Debug: cache hit", ["assistant"]), image(audience=["user"])]
                )
        raise AssertionError(params.name)  # pragma: no cover

    return Server("media", on_list_tools=list_tools, on_call_tool=call_tool)


async def test_the_model_receives_placeholders_and_text_in_a_real_turn(llm_server: LLMServer) -> None:
    server = ServerConfig(name="media", type="inprocess", module=f"{__name__}:media_server")
    manager = McpManager(McpConfig(servers=(server,)), McpSettings(enabled=True))
    llm_server.script(
        tool_call_reply(
            tool_call("media__read_media_file", {"path": "/map.png"}, id="c1"),
            tool_call("media__weather", {}, id="c2"),
            tool_call("media__annotated", {}, id="c3"),
        ),
        content_reply("done"),
    )
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o-test") as model:
        result = await run_turn(
            model,
            [{"role": "user", "content": "look"}],
            open_toolbox=manager.open_turn,
            options=TurnOptions(final_response_format=None),
        )
    assert result.content == "done"
    second = llm_server.bodies[1]
    assert [m for m in second["messages"] if m["role"] == "tool"] == [
        {"role": "tool", "tool_call_id": "c1", "content": '{"content": "[image: image/png, 1234 bytes]"}'},
        {"role": "tool", "tool_call_id": "c2", "content": '{"content": "' + WEATHER + '"}'},
        {"role": "tool", "tool_call_id": "c3", "content": '{"content": "Debug: cache hit"}'},
    ]


@needs_node_package(EVERYTHING)
async def test_server_everything_over_stdio() -> None:
    assert NODE is not None
    server = ServerConfig(name="everything", command=NODE, args=(str(EVERYTHING), "stdio"))
    async with open_toolbox([server], McpSettings()) as toolbox:
        debug = await toolbox.call_tool(
            "everything.get-annotated-message", {"messageType": "debug", "includeImage": True}
        )
        error = await toolbox.call_tool(
            "everything.get-annotated-message", {"messageType": "error", "includeImage": True}
        )
        success = await toolbox.call_tool(
            "everything.get-annotated-message", {"messageType": "success", "includeImage": True}
        )
        weather = await toolbox.call_tool("everything.get-structured-content", {"location": "Chicago"})
    # The image is for the user ("audience": ["user"]); the texts for the assistant, both, the user.
    assert debug == ToolCallResult(content="Debug: Cache hit ratio 0.95, latency 150ms")
    assert error == ToolCallResult(content="Error: Operation failed")
    assert success == ToolCallResult(
        content=["Operation completed successfully", "[image: image/png, 4033 bytes]"]
    )
    assert weather == ToolCallResult(
        content={"temperature": 36, "conditions": "Light rain / drizzle", "humidity": 82}
    )
