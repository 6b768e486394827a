"""The game MCP server (seeds 003): one game of real Zork per server process.

Run it as ``python -m zorkmcp.game.server [--game PATH] [--seed N] [--sdk]``; it speaks MCP over
stdio, so any MCP client can play (Claude Desktop too). By default it is served on the standard
library's JSON-RPC loop (:mod:`zorkmcp.servers._stdio_jsonrpc`): importing the MCP SDK and pydantic
costs about 0.6 s of CPU and 35 MB per process, and ``zorkmcp play`` starts one game server per
episode. ``--sdk`` serves the same tools with the SDK's lowlevel server (:func:`build_lowlevel_server`,
the tools and answers of the stdlib loop); :func:`build_server` builds them as an SDK ``MCPServer``,
and a test keeps the listings equal. Tools:

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
:func:`create_server` returns a fresh server object: the same tools on the SDK's lowlevel server
(:func:`build_lowlevel_server`). ``zorkmcp eval`` plays each episode's game that way.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from typing import TYPE_CHECKING, Annotated, Any

from .. import __version__
from .._argtypes import game_seed
from ..errors import ConfigError, GameError
from ..servers._stdio_jsonrpc import JsonRpcServer, StdioTool
from ._actions import MAX_ACTION_LENGTH
from ._paths import resolve_game_path
from ._state import GameState

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from mcp.server.lowlevel import Server
    from mcp.server.mcpserver import MCPServer

__all__ = [
    "SERVER_NAME",
    "TOOL_LISTINGS",
    "build_lowlevel_server",
    "build_server",
    "build_stdio_server",
    "create_server",
    "main",
    "open_game",
    "preload",
]

SERVER_NAME = "Text Adventure Server"  # seeds 003 §Server Initialization

_INSTRUCTIONS = (
    "A game of Zork (a text adventure). Play commands with play_action ('north', 'take lamp', "
    "'open mailbox'); memory, get_map and inventory report the state without playing a move."
)


_DESCRIPTIONS: dict[str, str] = {
    "play_action": (
        "Play one game command (e.g. 'north', 'take lamp', 'open mailbox') and return the game's "
        "response, points gained, the score and moves, and GAME OVER when the game has ended."
    ),
    "memory": (
        "Summary of the game: location, score, moves, the last 5 actions with their results, "
        "and the current observation. Does not play a move."
    ),
    "get_map": (
        "Map of the explored locations and the exits learned from movement commands; "
        "[Current] marks where the player is. Does not play a move."
    ),
    "inventory": "The items the player carries. Does not play a move.",
    "status": (
        "The game's state as JSON: game, location, score, max_score, moves, game_over, victory "
        "(the game was won) and died (the last action killed the player). Does not play a move."
    ),
}
_TITLES: dict[str, str] = {
    "play_action": "Play a Command",
    "memory": "Game Summary",
    "get_map": "Explored Map",
    "inventory": "Inventory",
    "status": "Game Status",
}
"""Display names (MCP 2025-06-18 ``title``); a client of an older revision ignores them."""
_ACTION_DESCRIPTION = (
    f"The command to play, e.g. 'north' or 'take lamp': at most {MAX_ACTION_LENGTH} characters of "
    "printable ASCII (no control characters, no backslash)."
)
_ACTION_LIMITS: dict[str, int] = {"maxLength": MAX_ACTION_LENGTH}
"""The limit :func:`~._actions.validate_action` enforces, stated in the schema so that a model sees it
before it calls. Published only: every variant checks it in ``validate_action`` and answers its message
(as a pydantic constraint, :func:`build_server`'s ``MCPServer`` would answer in pydantic's words). No
``pattern``: the printable-ASCII rule is in the description, where every model reads it."""
_READ_ONLY: dict[str, bool] = {"readOnlyHint": True, "idempotentHint": True, "openWorldHint": False}
_PLAYS: dict[str, bool] = {
    "readOnlyHint": False,
    "destructiveHint": False,
    "idempotentHint": False,
    "openWorldHint": False,
}
"""A move changes the game, and the same move twice is two moves (``take lamp`` then "You already
have that!", a second ``north`` somewhere else). Not destructive: it changes nothing but this server's
own game (the commands that would write or read files, or restart the game, are refused), and
playing is the tool's purpose: a client that asks the user before a destructive call would ask before
every move."""


def _listing(name: str) -> dict[str, object]:
    properties: dict[str, object] = {}
    schema: dict[str, object] = {"type": "object", "properties": properties, "title": f"{name}Arguments"}
    if name == "play_action":
        properties["action"] = {
            "description": _ACTION_DESCRIPTION,
            **_ACTION_LIMITS,
            "title": "Action",
            "type": "string",
        }
        schema["required"] = ["action"]
    annotations = _PLAYS if name == "play_action" else _READ_ONLY
    return {
        "name": name,
        "title": _TITLES[name],
        "description": _DESCRIPTIONS[name],
        "inputSchema": schema,
        "annotations": annotations,
    }


TOOL_LISTINGS: tuple[dict[str, object], ...] = tuple(_listing(name) for name in _DESCRIPTIONS)
"""``tools/list`` of the game server, exactly as the SDK's ``MCPServer`` lists :func:`build_server`."""


def build_stdio_server(state: GameState) -> JsonRpcServer:
    """The game's tools on the standard library's JSON-RPC loop (the default of ``main``).

    Args:
        state: the game it plays.
    """
    return JsonRpcServer(_tools(state), name=SERVER_NAME, version=__version__, instructions=_INSTRUCTIONS)


def build_lowlevel_server(state: GameState) -> Server[Any]:
    """The same tools and answers as :func:`build_stdio_server` on the SDK's lowlevel server (in-process use).

    Building it takes 0.03 ms of CPU, against 1.6-2.2 ms for :func:`build_server`'s ``MCPServer``
    (a pydantic model per tool); ``zorkmcp eval`` builds one per episode.

    Args:
        state: the game it plays; the tools call it inline on the event loop (a step takes
            tens of microseconds, and Jericho is not thread-safe).
    """
    from ..servers._lowlevel import lowlevel_server

    return lowlevel_server(_tools(state), name=SERVER_NAME, version=__version__, instructions=_INSTRUCTIONS)


def _tools(state: GameState) -> list[StdioTool]:
    """The game's tools (seeds 003 §MCP Tools) over ``state``, with their listings."""

    def play(arguments: Mapping[str, object]) -> str:
        action = arguments.get("action")
        if not isinstance(action, str):
            raise GameError("action must be a string, e.g. 'north'")
        return state.play_action(action)

    runs: dict[str, Callable[[Mapping[str, object]], str]] = {
        "play_action": play,
        "memory": lambda _: state.get_memory(),
        "get_map": lambda _: state.get_map(),
        "inventory": lambda _: state.get_inventory(),
        "status": lambda _: json.dumps(state.get_status()),
    }

    def tool(listing: dict[str, Any]) -> StdioTool:
        name, run = listing["name"], runs[listing["name"]]

        def function(arguments: Mapping[str, Any]) -> tuple[str, bool]:
            try:
                return run(arguments), False
            except GameError as exc:  # the SDK server's wording for a ToolError
                return f"Error executing tool {name}: {exc}", True

        return StdioTool(
            name=name,
            title=listing["title"],
            description=listing["description"],
            input_schema=listing["inputSchema"],
            annotations=listing["annotations"],
            function=function,
        )

    return [tool(dict(listing)) for listing in TOOL_LISTINGS]


def build_server(state: GameState) -> MCPServer:
    """A game MCP server over an existing game state (seeds 003 §MCP Tools).

    Args:
        state: the game it plays; the server's tools share it.

    Returns:
        The server, ready for ``run_stdio_async`` or an in-memory client.
    """
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp.types import ToolAnnotations
    from pydantic import Field

    server = MCPServer(SERVER_NAME, instructions=_INSTRUCTIONS, version=__version__, log_level="WARNING")
    read_only = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)

    # The tools are async and call the game inline: a step takes tens of microseconds, and
    # running them on the event loop serialises them (Jericho is not thread-safe).
    async def play_action(action: str) -> str:
        try:
            return state.play_action(action)
        except GameError as exc:
            raise ToolError(str(exc)) from exc

    # Real objects, not strings: the SDK evaluates string annotations in this module's globals,
    # where the lazily imported pydantic ``Field`` is not.
    play_action.__annotations__ = {
        # json_schema_extra, not max_length: listed, and checked by validate_action in its own words
        "action": Annotated[
            str, Field(description=_ACTION_DESCRIPTION, json_schema_extra=dict(_ACTION_LIMITS))
        ],
        "return": str,
    }
    plays = ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
    )
    server.tool(
        title=_TITLES["play_action"],
        description=_DESCRIPTIONS["play_action"],
        annotations=plays,
        structured_output=False,
    )(play_action)

    def add_read_only(name: str, read: Callable[[], str]) -> None:
        async def tool() -> str:
            return read()

        tool.__name__ = name  # the SDK names the arguments model after the function
        server.tool(
            title=_TITLES[name],
            description=_DESCRIPTIONS[name],
            annotations=read_only,
            structured_output=False,
        )(tool)

    add_read_only("memory", state.get_memory)
    add_read_only("get_map", state.get_map)
    add_read_only("inventory", state.get_inventory)
    add_read_only("status", lambda: json.dumps(state.get_status()))
    return server


def create_server(game_path: str | None = None, seed: int | None = None) -> Server[Any]:
    """A fresh in-process game server with its own game (:func:`build_lowlevel_server`).

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
    return build_lowlevel_server(open_game(game_path, seed))


def open_game(game_path: str | None = None, seed: int | None = None) -> GameState:
    """The game a server plays (see :func:`create_server` for the arguments and errors)."""
    if seed is None:
        seed = _seed_from_env(os.environ)
    settings = None
    if game_path is None:  # only then: reading the settings costs the config package's imports
        from ..config import Settings

        settings = Settings.from_pyproject()
    path = resolve_game_path(
        game_path,
        settings.files.game_file_path if settings is not None else None,
        settings_base=settings.source.parent if settings is not None and settings.source else None,
    )
    return GameState.open(path, seed=seed)


def preload() -> None:
    """Import what opening a game needs (Jericho, numpy: about 55 ms of CPU) now, not on the first open."""
    from . import _jericho

    _jericho.preload()


def zygote_preload() -> None:
    """Import what a game needs, once, in a zygote that forks game server processes.

    Jericho (and numpy, which it imports) is what a game server spends most of its start on; a
    server forked from a zygote that has imported it starts in a few milliseconds
    (:mod:`zorkmcp.mcp._zygote`; ``zorkmcp eval`` opens one when an arm runs the game server as a
    process, named in its ``mcp_config.json``). The zygote runs OpenBLAS on one thread whatever the
    environment says: a process that forks must not have threads, and a game server does no linear
    algebra.
    """
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    preload()


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m zorkmcp.game.server [--game PATH] [--seed N]``: serve one game over stdio.

    Args:
        argv: the command-line arguments (default ``sys.argv[1:]``).

    Returns:
        The exit status: 0 after the client closed the connection, 2 when no game could be opened,
        130 on Ctrl-C (with ``--sdk`` the process ends by SIGINT itself, which a shell reports as 130).
    """
    parser = argparse.ArgumentParser(
        prog="python -m zorkmcp.game.server",
        description=(
            "Serve one game of Zork over MCP (stdio): play_action, memory, get_map, inventory, status."
        ),
    )
    parser.add_argument(
        "--game",
        metavar="PATH",
        help="the story file or a game's name (default: GAME, game_file_path, or zork1)",
    )
    parser.add_argument(
        "--seed", type=game_seed, help="the interpreter's RNG seed (default: ZORKMCP_GAME_SEED)"
    )
    parser.add_argument(
        "--sdk", action="store_true", help="serve with the MCP SDK's server (slower to start; same tools)"
    )
    args = parser.parse_args(argv)
    try:
        return _serve(args)
    except KeyboardInterrupt:  # Ctrl-C while the game opens, as much as while it is served
        return 130


def _serve(args: argparse.Namespace) -> int:
    """Open the game ``args`` name and serve it on stdin/stdout (see :func:`main`)."""
    # Jericho imports numpy, whose OpenBLAS starts a thread per core at import; this process does no
    # linear algebra. One thread: a start to the first answer costs 118 instead of 188 ms of CPU
    # (measured on 2 cores; zorkmcp play starts one game server per episode). A value the user set
    # is kept.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        state = open_game(args.game, args.seed)
    except (GameError, ConfigError) as exc:
        print(f"zorkmcp game server: {exc}", file=sys.stderr)
        return 2
    if args.sdk:
        import anyio
        from mcp.server.stdio import stdio_server

        # The lowlevel server of create_server, not build_server's MCPServer: the same tools run by the
        # same code as the stdlib loop, so the two variants answer alike to every call (MCPServer
        # answers an argument that is no string in pydantic's words).
        server = build_lowlevel_server(state)

        async def run() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        # The SDK reads stdin in a worker thread that Ctrl-C cannot interrupt: with Python's handler
        # the server would hang until its input closed, then exit 1 with a traceback.
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # an ignored SIGINT stays ignored
            signal.signal(signal.SIGINT, signal.SIG_DFL)
        anyio.run(run, backend="trio")
        return 0
    build_stdio_server(state).serve(sys.stdin.buffer, sys.stdout.buffer)
    return 0


def _seed_from_env(env: Mapping[str, str]) -> int | None:
    text = env.get("ZORKMCP_GAME_SEED", "").strip()
    if not text:
        return None
    try:
        return game_seed(text)
    except argparse.ArgumentTypeError as exc:
        raise GameError(f"ZORKMCP_GAME_SEED: a seed {exc}") from None


if __name__ == "__main__":
    sys.exit(main())
