"""The embedded reasoning server: the stdlib stdio server, the in-process SDK server, the core."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING, Any, TextIO

import mcp_types
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.client import Client
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from zorkmcp.servers import _stdio_jsonrpc as rpc
from zorkmcp.servers._thinking_core import (
    TOOL_INPUT_SCHEMA,
    TOOL_NAME,
    ThinkingError,
    ThinkingSession,
)
from zorkmcp.servers.thinking import create_server, create_stdio_server

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from pathlib import Path

SERVER = StdioServerParameters(command=sys.executable, args=["-m", "zorkmcp.servers.thinking"])

# One scripted conversation, run against every transport; the answers must be identical.
SCRIPT: list[tuple[str, dict[str, Any]]] = [
    ("think", {"thought": "Locked door.", "thoughtNumber": 1, "totalThoughts": 2, "nextThoughtNeeded": True}),
    ("think", {"thought": "Try the key.", "thoughtNumber": 2, "totalThoughts": 2, "nextThoughtNeeded": True}),
    (
        "think",
        {
            "thought": "Or go around.",
            "thoughtNumber": 3,
            "totalThoughts": 2,
            "nextThoughtNeeded": False,
            "branchFromThought": 1,
            "branchId": "detour",
        },
    ),
    ("think", {"thought": "", "thoughtNumber": 0, "totalThoughts": True}),  # invalid → isError
    ("think", {"thought": "Revised.", "thoughtNumber": 4, "totalThoughts": 4, "nextThoughtNeeded": False,
               "isRevision": True, "revisesThought": 2, "needsMoreThoughts": None}),
]  # fmt: skip

EXPECTED = [
    ({"thoughtNumber": 1, "totalThoughts": 2, "nextThoughtNeeded": True, "branches": [],
      "thoughtHistoryLength": 1}, False),
    ({"thoughtNumber": 2, "totalThoughts": 2, "nextThoughtNeeded": True, "branches": [],
      "thoughtHistoryLength": 2}, False),
    ({"thoughtNumber": 3, "totalThoughts": 3, "nextThoughtNeeded": False, "branches": ["detour"],
      "thoughtHistoryLength": 3}, False),
    (None, True),
    ({"thoughtNumber": 4, "totalThoughts": 4, "nextThoughtNeeded": False, "branches": ["detour"],
      "thoughtHistoryLength": 4}, False),
]  # fmt: skip


@pytest.fixture
def errlog(tmp_path: Path) -> Iterator[TextIO]:
    # The SDK needs a real file (with a descriptor) for the server's stderr.
    with (tmp_path / "server-stderr.txt").open("w") as f:
        yield f


async def _run_script(session: ClientSession | Client) -> tuple[list[Any], list[tuple[str, bool]], MCPError]:
    tools = await session.list_tools()
    listing = [(t.name, t.description, t.input_schema) for t in tools.tools]
    results = []
    for name, arguments in SCRIPT:
        result = await session.call_tool(name, arguments)
        assert len(result.content) == 1
        content = result.content[0]
        assert isinstance(content, mcp_types.TextContent)
        results.append((content.text, result.is_error))
    with pytest.raises(MCPError, match=r"Unknown tool: nope \(available: think\)") as excinfo:
        await session.call_tool("nope", {})
    return listing, results, excinfo.value


def _check_results(results: list[tuple[str, bool]]) -> None:
    for (text, is_error), (progress, expected_error) in zip(results, EXPECTED, strict=True):
        assert is_error is expected_error
        payload = json.loads(text)
        if expected_error:
            assert payload["status"] == "failed"
            assert "thought must be a non-empty string" in payload["error"]
            assert "nextThoughtNeeded is required" in payload["error"]
        else:
            assert payload == progress


async def _stdio_run(errlog: TextIO) -> tuple[list[Any], list[tuple[str, bool]], MCPError, str]:
    async with stdio_client(SERVER, errlog=errlog) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        assert init.server_info.name == "zorkmcp-thinking"
        assert init.capabilities.tools is not None
        listing, results, error = await _run_script(session)
        assert (await session.send_ping()) is not None
        return listing, results, error, init.protocol_version


async def test_stdio_server_with_the_sdk_client(errlog: TextIO) -> None:
    listing, results, error, version = await _stdio_run(errlog)
    assert version == mcp_types.version.LATEST_HANDSHAKE_VERSION
    assert listing == [(TOOL_NAME, listing[0][1], dict(TOOL_INPUT_SCHEMA))]
    assert "nextThoughtNeeded" in listing[0][1]
    _check_results(results)
    assert error.code == mcp_types.INVALID_PARAMS


async def test_in_memory_server_gives_identical_results(errlog: TextIO) -> None:
    stdio = await _stdio_run(errlog)
    # mode="legacy" pairs the server with the SDK's InMemoryTransport (initialize handshake);
    # mode="auto" drives it through the SDK's direct in-process dispatcher.
    for mode in ("legacy", "auto"):
        async with Client(create_server(), mode=mode) as client:
            listing, results, error = await _run_script(client)
        assert listing == stdio[0]
        assert results == stdio[1]
        assert (error.code, error.message) == (stdio[2].code, stdio[2].message)


async def test_stdio_server_with_sdk_auto_negotiation(errlog: TextIO) -> None:
    # Client(mode="auto") probes server/discover first; -32601 makes it fall back to initialize.
    async with Client(SERVER, mode="auto") as client:
        assert client.protocol_version == mcp_types.version.LATEST_HANDSHAKE_VERSION
        _, results, _ = await _run_script(client)
    _check_results(results)


async def test_create_server_is_fresh_each_time() -> None:
    arguments = SCRIPT[0][1]
    for _ in range(2):
        async with Client(create_server(), mode="legacy") as client:
            result = await client.call_tool(TOOL_NAME, arguments)
            content = result.content[0]
            assert isinstance(content, mcp_types.TextContent)
            assert json.loads(content.text)["thoughtHistoryLength"] == 1


# --- the stdio loop, line by line ---------------------------------------------------------------


def _request(method: str, params: object = None, request_id: object = 1) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode() + b"\n"


def _initialize(version: str = "2025-06-18", request_id: object = 1) -> bytes:
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    return _request("initialize", params, request_id)


async def test_stdio_process_answers_garbage_and_keeps_running() -> None:
    lines = [
        _initialize(),
        b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n',
        b"this is not json\n",
        b"\xff\xfe\n",  # not UTF-8
        b"\n",  # blank lines are skipped
        b"[1, 2]\n",
        b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}\n',
        _request("ping", request_id="p"),
        _request("resources/list", request_id=7),
        _request("tools/call", {"name": "think", "arguments": "x"}, request_id=8),
        _request("tools/call", {"arguments": {}}, request_id=9),
        _request("tools/call", [1], request_id=10),
        _request("tools/call", {"name": "think", "arguments": SCRIPT[0][1]}, request_id=11),
    ]
    done = await trio.run_process(
        [sys.executable, "-m", "zorkmcp.servers.thinking"],
        stdin=b"".join(lines),
        capture_stdout=True,
        capture_stderr=True,
    )
    assert done.returncode == 0  # clean exit on stdin EOF
    assert done.stderr == b""
    responses = [json.loads(line) for line in done.stdout.splitlines()]
    assert all(r["jsonrpc"] == "2.0" for r in responses)
    assert [r["id"] for r in responses] == [1, None, None, None, "p", 7, 8, 9, 10, 11]
    assert responses[0]["result"]["protocolVersion"] == "2025-06-18"
    assert [r["error"]["code"] for r in responses[1:4]] == [-32700, -32700, -32600]
    assert responses[4]["result"] == {}
    assert responses[5]["error"]["code"] == -32601
    assert [r["error"]["code"] for r in responses[6:9]] == [-32602, -32602, -32602]
    assert responses[9]["result"]["isError"] is False
    assert json.loads(responses[9]["result"]["content"][0]["text"])["thoughtHistoryLength"] == 1


def test_stdio_server_does_not_import_the_sdk() -> None:
    # A fresh server is spawned every turn (Requirement 3), so it must start fast;
    # importing the SDK alone costs > 1 s.
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "zorkmcp.servers.thinking"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    imported = {line.rsplit("|", 1)[-1].strip().split(".")[0] for line in done.stderr.splitlines()}
    assert "zorkmcp" in imported
    heavy = {
        "mcp",
        "mcp_types",
        "trio",
        "anyio",
        "pydantic",
        "attrs",
        "cattrs",
        "httpx",
        "httpx2",
        "dataclasses",
    }
    assert imported & heavy == set()


def test_protocol_versions_match_the_sdk_client() -> None:
    assert set(rpc.SUPPORTED_PROTOCOL_VERSIONS) <= set(mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS)
    assert rpc.LATEST_PROTOCOL_VERSION == mcp_types.version.LATEST_HANDSHAKE_VERSION


@pytest.mark.parametrize(
    ("requested", "answered"),
    [(v, v) for v in rpc.SUPPORTED_PROTOCOL_VERSIONS]
    + [("1999-01-01", rpc.LATEST_PROTOCOL_VERSION), ("2026-07-28", rpc.LATEST_PROTOCOL_VERSION)],
)
def test_initialize_negotiates_the_version(requested: str, answered: str) -> None:
    server = create_stdio_server()
    response = server.handle_line(_initialize(requested, request_id="init"))
    assert response is not None
    assert response["id"] == "init"
    assert response["result"]["protocolVersion"] == answered
    assert response["result"]["capabilities"] == {"tools": {}}
    assert response["result"]["serverInfo"]["name"] == "zorkmcp-thinking"
    assert server.protocol_version == answered


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3, "reason": "x"}},
        {"jsonrpc": "2.0", "method": "notifications/unknown"},
        {"jsonrpc": "2.0", "id": 5, "result": {}},  # a response to a request we never sent
        {"method": "tools/list"},  # malformed notification: still never answered
    ],
)
def test_notifications_and_responses_get_no_answer(message: dict[str, Any]) -> None:
    assert create_stdio_server().handle_message(message) is None


def test_tool_exceptions_become_error_results() -> None:
    def broken(arguments: Mapping[str, Any]) -> tuple[str, bool]:
        raise RuntimeError("boom")

    tool = rpc.StdioTool(name="broken", description="", input_schema={"type": "object"}, function=broken)
    server = rpc.JsonRpcServer([tool], name="t", version="0")
    response = server.handle_message(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "broken"}}
    )
    assert response is not None
    assert response["result"]["isError"] is True
    assert response["result"]["content"][0]["text"] == "internal error in tool broken: RuntimeError: boom"


@given(st.text().filter(lambda s: s.strip() and "\n" not in s))
def test_non_json_lines_are_parse_errors(line: str) -> None:
    try:
        json.loads(line)
    except ValueError:
        pass
    else:
        return  # valid JSON is not what this property is about
    server = create_stdio_server()
    response = server.handle_line(line.encode())
    assert response is not None
    assert response["id"] is None
    assert response["error"]["code"] == -32700
    assert response["error"]["message"].startswith("Parse error: ")
    # and the server still answers afterwards
    assert server.handle_line(_request("ping")) == {"jsonrpc": "2.0", "id": 1, "result": {}}


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(), children, max_size=3),
    max_leaves=10,
)
_messages = _json | st.fixed_dictionaries(
    {"jsonrpc": st.sampled_from(["2.0", "1.0"]), "method": st.sampled_from(
        ["initialize", "ping", "tools/list", "tools/call", "x", "notifications/cancelled"]) | st.text()},
    optional={"id": _json, "params": _json},
)  # fmt: skip


@given(_messages)
def test_any_message_gets_a_well_formed_answer_or_none(message: Any) -> None:
    server = create_stdio_server()
    response = server.handle_message(message)
    if response is None:
        assert isinstance(message, dict)
        assert "id" not in message or "method" not in message
        return
    assert response["jsonrpc"] == "2.0"
    assert ("result" in response) != ("error" in response)
    if "error" in response:
        assert response["error"]["code"] in {-32600, -32601, -32602}
    json.dumps(response)  # serialisable


# --- the core -----------------------------------------------------------------------------------

_positive = st.integers(min_value=1, max_value=10**6)
# JSON Schema's "integer" is any number whose fractional part is zero, and models send 1.0.
_whole_positive = _positive | _positive.map(float)
_valid_arguments = st.fixed_dictionaries(
    {
        "thought": st.text(min_size=1).filter(str.strip),
        "thoughtNumber": _whole_positive,
        "totalThoughts": _whole_positive,
        "nextThoughtNeeded": st.booleans(),
    },
    optional={
        "isRevision": st.none() | st.booleans(),
        "revisesThought": st.none() | _whole_positive,
        "branchFromThought": st.none() | _whole_positive,
        "branchId": st.none() | st.sampled_from(["a", "b", "detour", "plan B"]),
        "needsMoreThoughts": st.none() | st.booleans(),
        "somethingElse": _json,  # unknown keys are ignored
    },
)


@settings(max_examples=100)
@given(st.lists(_valid_arguments, min_size=1, max_size=8))
def test_valid_arguments_give_consistent_progress(calls: list[dict[str, Any]]) -> None:
    session = ThinkingSession()
    branches: list[str] = []
    for i, arguments in enumerate(calls, start=1):
        text, is_error = session.call(arguments)
        assert is_error is False
        progress = json.loads(text)
        if arguments.get("branchFromThought") is not None and arguments.get("branchId") is not None:
            if arguments["branchId"] not in branches:
                branches.append(arguments["branchId"])
        assert progress == {
            "thoughtNumber": arguments["thoughtNumber"],
            "totalThoughts": max(arguments["thoughtNumber"], arguments["totalThoughts"]),
            "nextThoughtNeeded": arguments["nextThoughtNeeded"],
            "branches": branches,
            "thoughtHistoryLength": i,
        }
        # 2.0 is answered as 2 (== alone would take 2.0 for 2)
        assert type(progress["thoughtNumber"]) is type(progress["totalThoughts"]) is int


# Numbers that are no integer >= 1: a fraction, NaN, an infinity, or a whole number below 1 (0, -3.0).
_not_positive_integers = (
    st.integers(max_value=0)
    | st.integers(max_value=0).map(float)
    | st.floats().filter(lambda value: not value.is_integer())
)
_wrong_values: dict[str, st.SearchStrategy[Any]] = {
    "thought": st.none() | st.integers() | st.just("") | st.just("   ") | st.lists(st.text(), max_size=2),
    "thoughtNumber": _not_positive_integers | st.booleans() | st.text() | st.none(),
    "totalThoughts": _not_positive_integers | st.booleans() | st.text() | st.none(),
    "nextThoughtNeeded": st.integers() | st.text() | st.none(),
    "isRevision": st.integers() | st.text(),
    "revisesThought": _not_positive_integers | st.booleans() | st.text(),
    "branchFromThought": _not_positive_integers | st.text(),
    "branchId": st.integers() | st.just(""),
    "needsMoreThoughts": st.integers() | st.text(),
}


@settings(max_examples=100)
@given(_valid_arguments, st.data())
def test_invalid_arguments_give_an_error_naming_the_key(
    arguments: dict[str, Any], data: st.DataObject
) -> None:
    key = data.draw(st.sampled_from(sorted(_wrong_values)))
    broken = dict(arguments)
    if data.draw(st.booleans()) and key in TOOL_INPUT_SCHEMA["required"]:
        del broken[key]
        expected = f"{key} is required"
    else:
        broken[key] = data.draw(_wrong_values[key])
        expected = f"{key} must be"
    session = ThinkingSession()
    with pytest.raises(ThinkingError, match=f"^invalid think arguments: .*{expected}"):
        session.think(broken)
    assert session.history == []
    text, is_error = session.call(broken)
    assert is_error is True
    assert json.loads(text)["status"] == "failed"
    assert expected in json.loads(text)["error"]


@pytest.mark.parametrize("arguments", [None, [], "thought", 3])
def test_arguments_must_be_an_object(arguments: Any) -> None:
    with pytest.raises(ThinkingError, match=r"^arguments must be an object, got "):
        ThinkingSession().think(arguments)
