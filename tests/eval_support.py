"""For the eval tests: in-process game servers (``eval_support:seed_<N>`` is Zork I seeded with N),
and a run folder's records (:func:`episode_records`).

An in-process server does no real I/O, so ``MockClock(autojump_threshold=0)`` measures exactly the
virtual time the loopback model spends (a stdio game server would let the clock jump while it boots).
"""

from __future__ import annotations

import json
from functools import partial
from typing import TYPE_CHECKING, Any

from play_support import ZORK1_Z3

from zorkmcp.config import ServerConfig
from zorkmcp.episode import GAME_SERVER_NAME, GAME_TOOLS_FOR_AGENT

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

__all__ = ["episode_records", "inprocess_game", "prebuild"]


def episode_records(run: Path) -> dict[tuple[str, int], dict[str, Any]]:
    """The episode records of a run folder, by (arm, seed)."""
    found = {}
    for path in sorted((run / "episodes").glob("*/seed-*.json")):
        record = json.loads(path.read_text())
        found[(record["arm"], record["seed"])] = record
    return found


_BUILT: dict[int, Any] = {}


def prebuild(*seeds: int) -> None:
    """Build the seeded servers now (synchronously), so that starting them takes no real time.

    The MCP layer builds in-process servers in a worker thread; a slow build would let the mock
    clock jump while an episode waits for it.
    """
    from zorkmcp.game.server import create_server

    for seed in seeds:
        _BUILT[seed] = create_server(str(ZORK1_Z3), seed)


def _server(seed: int) -> Any:
    built = _BUILT.pop(seed, None)
    if built is not None:
        return built
    from zorkmcp.game.server import create_server

    return create_server(str(ZORK1_Z3), seed)


def __getattr__(name: str) -> Callable[[], Any]:
    if not name.startswith("seed_"):
        raise AttributeError(name)
    return partial(_server, int(name.removeprefix("seed_")))


def inprocess_game(seed: int) -> ServerConfig:
    """Zork I seeded with ``seed`` as an in-process per_episode game server."""
    return ServerConfig(
        name=GAME_SERVER_NAME,
        type="inprocess",
        module=f"eval_support:seed_{seed}",
        lifecycle="per_episode",
        tools=GAME_TOOLS_FOR_AGENT,
    )
