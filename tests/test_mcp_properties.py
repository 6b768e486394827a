"""Property tests (Hypothesis, >= 100 examples each) for the MCP layer: properties 7, 33–38, 41–43 of
seeds 001, the name table, truncation, and timeouts on virtual time."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
import pytest
import trio
import trio.testing
from backends import AUTOJUMP_THRESHOLD
from hypothesis import given, settings
from hypothesis import strategies as st

from zorkmcp.config import McpSettings, ServerConfig
from zorkmcp.mcp import (
    WIRE_NAME_PATTERN,
    ToolCallResult,
    ToolTable,
    assign_wire_names,
    build_server_env,
    build_tool_infos,
    convert_call_result,
    open_toolbox,
)
from zorkmcp.mcp._results import truncate_content

names = st.text(min_size=1, max_size=80)
env_names = st.text(
    alphabet=st.characters(codec="utf-8", exclude_characters="=\x00"), min_size=1, max_size=20
)
secretish = st.builds(
    lambda a, m, b: a + m + b,
    st.text(alphabet="ABCXYZ_abc", max_size=5),
    st.sampled_from(["API_KEY", "TOKEN", "SECRET", "PASSWORD", "api_key", "Token"]),
    st.text(alphabet="ABCXYZ_abc", max_size=5),
)
env_maps = st.dictionaries(st.one_of(env_names, secretish), st.text(max_size=10), max_size=12)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
# Schemas already in the portable subset (zorkmcp.mcp._schema): offered unchanged (property 36).
schemas = st.fixed_dictionaries(
    {
        "type": st.just("object"),
        "properties": st.dictionaries(
            st.text(max_size=8),
            st.sampled_from([{"type": "string"}, {"type": "integer", "description": "how many"}]),
            max_size=3,
        ),
    },
)


def _is_secret(name: str) -> bool:
    """The test's own oracle (the markers written out here, not read from the code under test)."""
    return any(marker in name.upper() for marker in ("API_KEY", "TOKEN", "SECRET", "PASSWORD"))


# Property 7: environment variable merging (Requirement 3.2).
@given(base=env_maps, server_env=env_maps)
def test_env_merge_withholds_secrets_unless_asked(base: dict[str, str], server_env: dict[str, str]) -> None:
    merged, withheld = build_server_env(server_env, base)
    for name, value in server_env.items():
        assert merged[name] == value
    for name, value in base.items():
        if name in server_env:
            continue
        if _is_secret(name):
            assert name not in merged
            assert name in withheld
        else:
            assert merged[name] == value
    assert set(merged) == set(server_env) | {n for n in base if not _is_secret(n)}
    assert list(withheld) == sorted(n for n in base if _is_secret(n) and n not in server_env)


# The name table: any server/tool names map to valid, unique wire names and back.
@given(pairs=st.lists(st.tuples(names, names), max_size=12), data=st.data())
def test_wire_names_are_valid_unique_stable_and_route_back(pairs: list[tuple[str, str]], data: Any) -> None:
    wire = assign_wire_names(pairs)
    assert set(wire) == set(pairs)
    assert len(set(wire.values())) == len(wire)  # unique
    assert all(WIRE_NAME_PATTERN.fullmatch(name) for name in wire.values())  # ^[a-zA-Z0-9_-]{1,64}$
    shuffled = data.draw(st.permutations(pairs))
    assert assign_wire_names(shuffled) == wire  # independent of order: same names every turn
    tools = build_tool_infos(
        [
            (ServerConfig(name=s, command="x"), [types.Tool(name=t, input_schema={"type": "object"})])
            for s, t in pairs
        ],
        McpSettings(),
    )
    table = ToolTable(tools)
    assert len(tools) == len(set(pairs))
    for info in tools:
        assert info.name == f"{info.server}.{info.tool}"  # property 34
        assert table.resolve(info.wire_name) is info  # property 35: routing by lookup
        if info.name not in table.ambiguous:
            assert table.resolve(info.name) is info
    canonical = [info.name for info in tools]
    assert set(table.ambiguous) == {n for n in canonical if canonical.count(n) > 1}


@given(server=names, tool=names)
def test_simple_names_keep_a_readable_wire_name(server: str, tool: str) -> None:
    wire = assign_wire_names([(server, tool)])[(server, tool)]
    safe = all(c.isascii() and (c.isalnum() or c in "_-") for c in server + tool)
    if safe and len(server) + len(tool) + 2 <= 64 and (server[0].isalpha() or server[0] == "_"):
        assert wire == f"{server}__{tool}"
    elif safe and len(server) + len(tool) + 3 <= 64:  # Gemini: a name starts with a letter or "_"
        assert wire == f"_{server}__{tool}"
    else:
        assert WIRE_NAME_PATTERN.fullmatch(wire)


tool_lists = st.lists(
    st.builds(
        lambda name, description, schema: types.Tool(name=name, description=description, input_schema=schema),
        names,
        st.none() | st.text(max_size=30),
        schemas,
    ),
    max_size=6,
    unique_by=lambda tool: tool.name,
)


# Properties 33, 36, 37, 38: complete translation to OpenAI format.
@given(servers=st.lists(st.tuples(names, tool_lists), max_size=4, unique_by=lambda entry: entry[0]))
def test_translation_to_openai_format(servers: list[tuple[str, list[types.Tool]]]) -> None:
    entries = [(ServerConfig(name=name, command="x"), tools) for name, tools in servers]
    infos = build_tool_infos(entries, McpSettings(tool_call_timeout_seconds=12))
    assert len(infos) == sum(len(tools) for _, tools in servers)  # property 37
    expected = [(name, tool) for name, tools in servers for tool in tools]
    for info, (server, tool) in zip(infos, expected, strict=True):
        schema = info.openai_schema()
        assert set(schema) == {"type", "function"}
        assert schema["type"] == "function"
        assert set(schema["function"]) == {"name", "description", "parameters"}
        assert WIRE_NAME_PATTERN.fullmatch(schema["function"]["name"])
        # Property 36: a schema already in the portable subset is the parameters unchanged.
        assert schema["function"]["parameters"] == tool.input_schema
        assert schema["function"]["description"] == (tool.description or "")
        assert info.name == f"{server}.{tool.name}"  # property 34
        assert info.timeout == 12
        json.dumps(schema)  # property 38: a valid JSON tool definition


text_blocks = st.lists(st.text(max_size=40).map(lambda t: types.TextContent(type="text", text=t)), max_size=4)


# Properties 41 and 42: success and error format of converted results.
@given(
    blocks=text_blocks,
    is_error=st.booleans(),
    structured=st.none() | st.dictionaries(st.text(), st.integers()),
)
def test_call_results_convert_to_tool_call_results(
    blocks: list[types.TextContent], is_error: bool, structured: dict[str, int] | None
) -> None:
    raw = types.CallToolResult(content=list(blocks), is_error=is_error, structured_content=structured)
    result = convert_call_result(raw, max_bytes=1 << 20)
    assert result.is_error is is_error
    assert not result.timed_out
    if is_error:
        assert result.error_message  # property 42: a message, even when the server sent none
    else:
        assert result.error_message is None  # property 41
        if not blocks:  # structuredContent only stands in for missing content blocks
            assert result.content == ("" if structured is None else structured)
        elif len(blocks) > 1:
            assert isinstance(result.content, list)
            assert len(result.content) == len(blocks)
    json.dumps(result.to_dict())


# Property 43: serialisation.
@given(content=json_values, is_error=st.booleans(), message=st.none() | st.text(), timed_out=st.booleans())
def test_to_dict_is_the_seeds_shape_and_json(
    content: Any, is_error: bool, message: str | None, timed_out: bool
) -> None:
    result = ToolCallResult(content=content, is_error=is_error, error_message=message, timed_out=timed_out)
    data = result.to_dict()
    if is_error:
        assert data == {"error": message, "content": content}
    else:
        assert data == {"content": content}
    assert json.loads(json.dumps(data)) == data


@given(content=json_values, cap=st.integers(min_value=0, max_value=200))
def test_truncation_keeps_at_most_the_cap_and_says_how_much_was_cut(content: Any, cap: int) -> None:
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)
    size = len(text.encode("utf-8", "surrogatepass"))
    result = truncate_content(content, cap)
    if size <= cap:
        assert result is content
    else:
        assert isinstance(result, str)
        kept, marker = result.rsplit("…[truncated ", 1)
        assert len(kept.encode("utf-8", "surrogatepass")) <= cap
        assert text.startswith(kept)
        assert marker == f"{size - len(kept.encode('utf-8', 'surrogatepass'))} bytes]"


def _hang_server() -> Any:
    from mcp.server.lowlevel import Server

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="hang", input_schema={"type": "object"})])

    async def call_tool(ctx: Any, params: Any) -> types.CallToolResult:
        await trio.Event().wait()
        raise AssertionError("unreachable")  # pragma: no cover

    return Server("h", on_list_tools=list_tools, on_call_tool=call_tool)


# Timeouts on virtual time: any timeout gives exactly that delay and a timed-out error result.
@settings(max_examples=100)
@given(timeout=st.floats(min_value=0.001, max_value=1e5), per_server=st.booleans())
def test_any_timeout_is_exact_on_virtual_time(timeout: float, per_server: bool) -> None:
    server = ServerConfig(
        name="h", type="inprocess", module=f"{__name__}:_hang_server", timeout=timeout if per_server else None
    )

    async def check() -> tuple[float, ToolCallResult]:
        async with open_toolbox([server], McpSettings(tool_call_timeout_seconds=timeout)) as toolbox:
            start = trio.current_time()
            result = await toolbox.call_tool("h.hang", {})
            return trio.current_time() - start, result

    elapsed, result = trio.run(check, clock=trio.testing.MockClock(autojump_threshold=AUTOJUMP_THRESHOLD))
    assert elapsed == timeout or abs(elapsed - timeout) <= 1e-9 * timeout
    assert result.timed_out
    assert result.is_error
    assert result.error_message == f"Tool call timed out after {timeout:g}s"


@pytest.mark.parametrize(
    ("server", "tool", "wire"),
    [
        ("1password", "get_item", "_1password__get_item"),  # Gemini refused "1password__get_item"
        ("-x", "t", "_-x__t"),
        ("thinking", "think", "thinking__think"),
        ("_private", "t", "_private__t"),
        ("日本", "検索", "______"),
    ],
)
def test_a_wire_name_starts_with_a_letter_or_an_underscore(server: str, tool: str, wire: str) -> None:
    assert assign_wire_names([(server, tool)])[(server, tool)] == wire
