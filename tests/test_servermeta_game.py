"""What a client of the shipped game server sees before and at a call: the tools' titles, annotations
and the limits of ``play_action``'s argument, and the same answers to bad arguments, from every variant.

The variants: ``python -m zorkmcp.game.server`` (the standard-library loop), the same with ``--sdk``
(the MCP SDK's server), ``create_server`` (what ``zorkmcp eval`` plays in process) and
``build_server`` (an SDK ``MCPServer``), each run for real on the packaged Zork I.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mcp_types
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from zorkmcp.game import PACKAGED_GAME, GameState
from zorkmcp.game.server import build_server, create_server

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from contextlib import AbstractAsyncContextManager

REPO = Path(__file__).resolve().parents[1]
READS = {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False}

LISTED = [
    ("play_action", "Play a Command",
     {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False, "openWorldHint": False}),
    ("memory", "Game Summary", READS),
    ("get_map", "Explored Map", READS),
    ("inventory", "Inventory", READS),
    ("status", "Game Status", READS),
]  # fmt: skip

ACTION_SCHEMA = {
    "type": "string",
    "title": "Action",
    "maxLength": 198,
    "description": (
        "The command to play, e.g. 'north' or 'take lamp': at most 198 characters of printable ASCII "
        "(no control characters, no backslash)."
    ),
}


def _client(variant: str, errlog: Any) -> AbstractAsyncContextManager[Client]:
    if variant == "inprocess":
        return Client(create_server(str(PACKAGED_GAME), 12), mode="legacy")
    if variant == "mcpserver":
        return Client(build_server(GameState.open(PACKAGED_GAME, seed=12)), mode="legacy")
    args = ["-m", "zorkmcp.game.server", "--game", str(PACKAGED_GAME), "--seed", "12"]
    params = StdioServerParameters(
        command=sys.executable, args=[*args, *(["--sdk"] if variant == "sdk" else [])], cwd=str(REPO)
    )
    return Client(stdio_client(params, errlog=errlog), mode="legacy")


async def _with_client(variant: str, body: Callable[[Client], Awaitable[Any]]) -> Any:
    with tempfile.TemporaryFile("w+") as errlog:
        async with _client(variant, errlog) as client:
            result = await body(client)
        errlog.seek(0)
        assert "Traceback" not in errlog.read()
    return result


async def _listing(client: Client) -> list[dict[str, Any]]:
    return [tool.model_dump(by_alias=True, exclude_none=True) for tool in (await client.list_tools()).tools]


@pytest.mark.parametrize("variant", ["stdlib", "sdk", "inprocess", "mcpserver"])
async def test_every_variant_lists_titles_annotations_and_the_actions_limits(variant: str) -> None:
    listing = await _with_client(variant, _listing)
    assert [(tool["name"], tool["title"], tool["annotations"]) for tool in listing] == LISTED
    assert listing[0]["inputSchema"]["properties"] == {"action": ACTION_SCHEMA}
    assert listing[0]["inputSchema"]["required"] == ["action"]


_BAD = [
    ({"action": 5}, "Error executing tool play_action: action must be a string, e.g. 'north'"),
    ({}, "Error executing tool play_action: action must be a string, e.g. 'north'"),
    ({"action": None}, "Error executing tool play_action: action must be a string, e.g. 'north'"),
    ({"action": "x" * 199},
     "Error executing tool play_action: action is 199 characters long; "
     "the game reads at most 198 per command"),
]  # fmt: skip


@pytest.mark.parametrize("variant", ["stdlib", "sdk", "inprocess"])
async def test_the_served_variants_answer_bad_arguments_in_the_same_words(variant: str) -> None:
    # --sdk answered an argument that is no string in pydantic's words ("1 validation error for
    # play_actionArguments ... Input should be a valid string [type=string_type, ...] For further
    # information visit https://errors.pydantic.dev/...", "Field required" for none at all). The
    # stdlib and inprocess cases pass on the old code too: guards that the listed maxLength is not
    # enforced in other words than validate_action's.
    async def calls(client: Client) -> list[tuple[bool, str]]:
        answers = []
        for arguments, _ in _BAD:
            result = await client.call_tool("play_action", arguments)
            [content] = result.content
            assert isinstance(content, mcp_types.TextContent)
            answers.append((result.is_error, content.text))
        longest = await client.call_tool("play_action", {"action": "x" * 198})  # the limit itself plays
        assert longest.is_error is False
        return answers

    assert await _with_client(variant, calls) == [(True, message) for _, message in _BAD]
