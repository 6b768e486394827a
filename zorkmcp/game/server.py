"""The game MCP server (seeds 003): one game of real Zork per server process.

Run it as ``python -m zorkmcp.game.server [--game PATH] [--seed N]``; it speaks MCP over stdio,
so any MCP client can play (Claude Desktop too). Tools:

* ``play_action(action)``: play a command; the game's text, ``+N points! (Total: T)`` when points
  were gained, ``[Score: S | Moves: M]``, and ``GAME OVER`` when the game ended.
* ``memory()``: location, score, moves, game, the last 5 actions, the current observation.
* ``get_map()``: explored locations and their exits, ``[Current]`` marking where the player is.
* ``inventory()``: ``Inventory: a, b, c`` or an empty-handed message.
* ``status()``: JSON ``{"game", "location", "score", "max_score", "moves", "game_over", "victory",
  "died"}`` — not in seed 003; for programs that drive the game (``zorkmcp play`` reads the victory
  and the maximum score from it instead of guessing).

The game is chosen by ``--game``, else the ``GAME`` environment variable (a name such as
``zork1`` or a path), else ``[tool.zorkgpt.files] game_file_path`` of ``./pyproject.toml``, else
the copy of Microsoft's MIT release of Zork I that ships with the package (see
:func:`~zorkmcp.game.resolve_game_path`). The seed comes from ``--seed`` or
``ZORKMCP_GAME_SEED``.

For an in-process server (``"type": "inprocess"``, ``"module": "zorkmcp.game.server:create_server"``)
:func:`create_server` returns a fresh server object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Annotated

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from .. import __version__
from ..config import Settings
from ..errors import ConfigError, GameError
from ._paths import resolve_game_path
from ._state import GameState

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "SERVER_NAME",
    "build_server",
    "create_server",
    "main",
]

SERVER_NAME = "Text Adventure Server"  # seeds 003 §Server Initialization

_INSTRUCTIONS = (
    "A game of Zork (a text adventure). Play commands with play_action ('north', 'take lamp', "
    "'open mailbox'); memory, get_map and inventory report the state without playing a move."
)


def build_server(state: GameState) -> MCPServer:
    """A game MCP server over an existing game state (seeds 003 §MCP Tools).

    Args:
        state: the game it plays; the server's tools share it.

    Returns:
        The server, ready for ``run_stdio_async`` or an in-memory client.
    """
    server = MCPServer(SERVER_NAME, instructions=_INSTRUCTIONS, version=__version__, log_level="WARNING")
    read_only = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)

    # The tools are async and call the game inline: a step takes tens of microseconds, and
    # running them on the event loop serialises them (Jericho is not thread-safe).
    @server.tool(
        description=(
            "Play one game command (e.g. 'north', 'take lamp', 'open mailbox') and return the game's "
            "response, points gained, the score and moves, and GAME OVER when the game has ended."
        ),
        annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False),
        structured_output=False,
    )
    async def play_action(
        action: Annotated[str, Field(description="The command to play, e.g. 'north' or 'take lamp'.")],
    ) -> str:
        try:
            return state.play_action(action)
        except GameError as exc:
            raise ToolError(str(exc)) from exc

    @server.tool(
        description=(
            "Summary of the game: location, score, moves, the last 5 actions with their results, "
            "and the current observation. Does not play a move."
        ),
        annotations=read_only,
        structured_output=False,
    )
    async def memory() -> str:
        return state.get_memory()

    @server.tool(
        description=(
            "Map of the explored locations and the exits learned from movement commands; "
            "[Current] marks where the player is. Does not play a move."
        ),
        annotations=read_only,
        structured_output=False,
    )
    async def get_map() -> str:
        return state.get_map()

    @server.tool(
        description="The items the player carries. Does not play a move.",
        annotations=read_only,
        structured_output=False,
    )
    async def inventory() -> str:
        return state.get_inventory()

    @server.tool(
        description=(
            "The game's state as JSON: game, location, score, max_score, moves, game_over, victory "
            "(the game was won) and died (the last action killed the player). Does not play a move."
        ),
        annotations=read_only,
        structured_output=False,
    )
    async def status() -> str:
        return json.dumps(state.get_status())

    return server


def create_server(game_path: str | None = None, seed: int | None = None) -> MCPServer:
    """A fresh game server with its own game.

    Args:
        game_path: the story file; ``None`` follows ``GAME``, ``game_file_path`` of
            ``./pyproject.toml``, then the packaged Zork I (:func:`resolve_game_path`).
        seed: the interpreter's RNG seed; ``None`` reads ``ZORKMCP_GAME_SEED``.

    Returns:
        The server. Building it reads the story file: call it outside an
        event loop, or in a worker thread.

    Raises:
        GameError: no playable game file, or ``ZORKMCP_GAME_SEED`` is not a non-negative integer.
        ConfigError: ``./pyproject.toml`` is unusable (read only when ``game_path`` is ``None``).
    """
    if seed is None:
        seed = _seed_from_env(os.environ)
    settings = Settings.from_pyproject() if game_path is None else None
    path = resolve_game_path(
        game_path,
        settings.files.game_file_path if settings is not None else None,
        settings_base=settings.source.parent if settings is not None and settings.source else None,
    )
    return build_server(GameState.open(path, seed=seed))


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m zorkmcp.game.server [--game PATH] [--seed N]``: serve one game over stdio.

    Args:
        argv: the command-line arguments (default ``sys.argv[1:]``).

    Returns:
        The exit status: 0 after the client closed the connection, 2 when no game could be opened.
    """
    parser = argparse.ArgumentParser(
        prog="python -m zorkmcp.game.server",
        description=(
            "Serve one game of Zork over MCP (stdio): play_action, memory, get_map, inventory, status."
        ),
    )
    parser.add_argument(
        "--game", metavar="PATH", help="the story file (default: GAME, game_file_path, or zork1)"
    )
    parser.add_argument(
        "--seed", type=_non_negative_int, help="the interpreter's RNG seed (default: ZORKMCP_GAME_SEED)"
    )
    args = parser.parse_args(argv)
    try:
        server = create_server(args.game, args.seed)
    except (GameError, ConfigError) as exc:
        print(f"zorkmcp game server: {exc}", file=sys.stderr)
        return 2
    anyio.run(server.run_stdio_async, backend="trio")
    return 0


def _seed_from_env(env: Mapping[str, str]) -> int | None:
    text = env.get("ZORKMCP_GAME_SEED", "").strip()
    if not text:
        return None
    try:
        return _non_negative_int(text)
    except argparse.ArgumentTypeError as exc:
        raise GameError(f"ZORKMCP_GAME_SEED: {exc}") from None


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"a seed must be a non-negative integer, got {text!r}")
    return value


if __name__ == "__main__":
    sys.exit(main())
