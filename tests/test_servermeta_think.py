"""What a client of the shipped think server sees before and at a call: its listing (title, annotations)
and the numbers it takes, the same from every variant.

The variants: ``python -m zorkmcp.servers.thinking`` (the standard-library loop), the same with
``--sdk`` (the MCP SDK's server), and ``create_server`` over the SDK's memory transport. Each one
is run for real.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from typing import TYPE_CHECKING, Any

import mcp_types
import pytest
import trio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from test_bridge import GUARD

from zorkmcp.servers.thinking import create_server

if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractAsyncContextManager

THINK = [sys.executable, "-m", "zorkmcp.servers.thinking"]
VARIANTS = ["stdlib", "sdk", "inprocess"]

# What @modelcontextprotocol/server-sequential-thinking declares for its tool (title "Sequential
# Thinking"): a client reads these to decide whether to ask the user before each call.
ANNOTATIONS = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}


def _client(variant: str, errlog: Any) -> AbstractAsyncContextManager[Client]:
    if variant == "inprocess":
        return Client(create_server(), mode="legacy")
    args = ["-m", "zorkmcp.servers.thinking", *(["--sdk"] if variant == "sdk" else [])]
    params = StdioServerParameters(command=sys.executable, args=args)
    return Client(stdio_client(params, errlog=errlog), mode="legacy")


async def _with_client(variant: str, body: Callable[[Client], Any]) -> Any:
    with tempfile.TemporaryFile("w+") as errlog:
        async with _client(variant, errlog) as client:
            result = await body(client)
        errlog.seek(0)
        assert "Traceback" not in errlog.read()
    return result


async def _listing(client: Client) -> list[dict[str, Any]]:
    return [tool.model_dump(by_alias=True, exclude_none=True) for tool in (await client.list_tools()).tools]


@pytest.mark.parametrize("variant", VARIANTS)
async def test_think_is_listed_with_a_title_and_the_references_annotations(variant: str) -> None:
    listing = await _with_client(variant, _listing)
    assert [(tool["name"], tool["title"], tool["annotations"]) for tool in listing] == [
        ("think", "Think", ANNOTATIONS)
    ]
    assert listing[0]["inputSchema"]["properties"]["thoughtNumber"] == {
        "type": "integer",
        "minimum": 1,
        "description": "The number of this thought (1, 2, 3, ...).",
    }


async def test_the_stdlib_loop_writes_title_and_annotations_on_the_wire() -> None:
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    done = await trio.run_process(
        THINK, stdin=b"".join(json.dumps(line).encode() + b"\n" for line in lines), capture_stdout=True
    )
    tool = json.loads(done.stdout.splitlines()[1])["result"]["tools"][0]
    assert list(tool) == ["name", "title", "description", "inputSchema", "annotations"]
    assert (tool["title"], tool["annotations"]) == ("Think", ANNOTATIONS)


_CALLS: list[dict[str, Any]] = [
    # JSON Schema's "integer" is any number with a zero fractional part: 1.0 is one.
    {"thought": "a", "thoughtNumber": 1.0, "totalThoughts": 3.0, "nextThoughtNeeded": True},
    {"thought": "b", "thoughtNumber": 2, "totalThoughts": 2.0, "nextThoughtNeeded": True,
     "revisesThought": 1.0, "isRevision": True},
    {"thought": "c", "thoughtNumber": 4.0, "totalThoughts": 3, "nextThoughtNeeded": False,
     "branchFromThought": 2.0, "branchId": "x"},
    # Not integers: refused with the key named, nothing recorded.
    {"thought": "d", "thoughtNumber": 1.5, "totalThoughts": True, "nextThoughtNeeded": False},
    {"thought": "e", "thoughtNumber": "2", "totalThoughts": 0.0, "nextThoughtNeeded": False,
     "branchFromThought": -1.0},
]  # fmt: skip

_ANSWERS = [
    (False, '{"thoughtNumber": 1, "totalThoughts": 3, "nextThoughtNeeded": true, "branches": [], '
            '"thoughtHistoryLength": 1}'),
    (False, '{"thoughtNumber": 2, "totalThoughts": 2, "nextThoughtNeeded": true, "branches": [], '
            '"thoughtHistoryLength": 2}'),
    (False, '{"thoughtNumber": 4, "totalThoughts": 4, "nextThoughtNeeded": false, "branches": ["x"], '
            '"thoughtHistoryLength": 3}'),
    (True, '{"error": "invalid think arguments: thoughtNumber must be an integer >= 1, got 1.5 (number); '
           'totalThoughts must be an integer >= 1, got true (boolean)", "status": "failed"}'),
    (True, '{"error": "invalid think arguments: thoughtNumber must be an integer >= 1, got \\"2\\" (string); '
           'totalThoughts must be an integer >= 1, got 0.0 (number); branchFromThought must be an integer '
           '>= 1, got -1.0 (number)", "status": "failed"}'),
]  # fmt: skip


@pytest.mark.parametrize("variant", VARIANTS)
async def test_integer_valued_floats_are_integers_in_every_variant(variant: str) -> None:
    async def calls(client: Client) -> list[tuple[bool, str]]:
        answers = []
        for arguments in _CALLS:
            result = await client.call_tool("think", arguments)
            [content] = result.content
            assert isinstance(content, mcp_types.TextContent)
            answers.append((result.is_error, content.text))
        return answers

    assert await _with_client(variant, calls) == _ANSWERS


def test_help_to_a_reader_that_has_gone_ends_quietly() -> None:
    # `python -m zorkmcp.servers.thinking --help | head -1`: a BrokenPipeError traceback before.
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first byte
    try:
        done = subprocess.run(
            [sys.executable, "-m", "zorkmcp.servers.thinking", "--help"],
            stdout=write,
            stderr=subprocess.PIPE,
            timeout=GUARD,
            check=False,
        )
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (0, b"")
