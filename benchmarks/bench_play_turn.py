"""Section 5: one whole ``zorkmcp play`` turn with the offline scripted model, broken down.

Two episodes run side by side, turns interleaved (order rotated), each a ``bridge.Bridge`` with the
orchestrator's servers: the embedded ``think`` server as a ``per_turn`` stdio server (the default
``mcp_config.json``, run with ``sys.executable``) and the Zork game server
(:func:`zorkmcp.orchestrator.game_server_config`, ``per_episode``, seed 12). The model is
``ScriptedModel`` playing Jericho's walkthrough (it calls ``think`` on every fifth turn, as in
``zorkmcp play`` without an API key).

* ``prewarmed`` — ``Bridge`` as the orchestrator uses it (``open_episode(prewarm=True)``);
* ``cold`` — the same ``Bridge`` code with the episode opened with ``prewarm=False``, so every turn
  starts and stops its ``think`` process on the critical path.

Each turn does what ``Orchestrator._turn`` does: ``Bridge.get_action`` then the game's
``play_action`` and ``status`` through ``Bridge.call_tool``. Startup / LLM / tools / teardown come
from ``bridge.last.turn.timings`` (the trio clock inside the turn); "engine + sync boundary" is the
rest of ``get_action`` (messages, parsing, the portal); "game" is ``play_action`` + ``status``.
After a prewarmed turn the benchmark waits, unmeasured, for the next spare (a real LLM takes longer).
"""

from __future__ import annotations

import sys
import time
from contextlib import ExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any

from _benchlib import MIN_ROUNDS, REPO, Report, Section, Stats, run_interleaved, setting

from bridge import Bridge
from zorkmcp.config import McpConfig, ServerConfig, Settings
from zorkmcp.llm import ScriptedModel
from zorkmcp.orchestrator import GAME_SERVER_NAME, GameStatus, default_walkthrough, game_server_config

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Sequence
    from pathlib import Path

    from zorkmcp.mcp import EpisodeServers
    from zorkmcp.mcp._prewarm import Spare

TURNS = setting("ZORKMCP_BENCH_ROUNDS")
WARMUP = 1
SEED = 12
BURST = 3
"""back-to-back: the measured turn is the last of this many turns played without a pause."""
COMPONENTS = {
    "startup": "MCP startup",
    "llm": "LLM (scripted)",
    "tools": "tool calls",
    "teardown": "MCP teardown",
    "engine": "engine + sync boundary",
    "game": "game (play_action+status)",
    "total": "whole turn",
}


def _game_path() -> Path:
    from zorkmcp.game import resolve_game_path

    return resolve_game_path()


class _BenchBridge(Bridge):
    """``bridge.Bridge`` with the episode's ``prewarm`` chosen, and its episode reached for settling.

    The episode is opened by ``Bridge``'s own code (``Bridge._episode``, with ``Bridge._prewarm``
    set here): the benchmark cannot fall behind it. Turns go through the real
    ``Bridge.get_action`` / ``Bridge.call_tool``.
    """

    def __init__(
        self, settings: Settings, *, prewarm: bool, walkthrough: Sequence[str], **options: Any
    ) -> None:
        @asynccontextmanager
        async def scripted() -> AsyncIterator[ScriptedModel]:
            yield ScriptedModel(walkthrough)  # what open_chat_model gives without an API key

        super().__init__(settings, chat_model=scripted, **{"log_files": None, **options})
        self._prewarm = prewarm

    @property
    def prewarm(self) -> bool:
        return self._prewarm

    @property
    def episode(self) -> EpisodeServers | None:
        """The open episode's ``per_episode`` servers (``None``: not open, or it has none)."""
        return self._open_live("_BenchBridge.episode").episode

    def spares(self) -> list[Spare]:
        episode = self.episode
        assert episode is not None

        async def current() -> list[Spare]:
            return list(episode.spares.values())

        return self._run(current)

    def settle(self, taken: list[Spare]) -> None:
        """Wait until the ``taken`` spares are closed and the next ones are ready (unmeasured)."""
        episode = self.episode
        assert episode is not None

        async def wait() -> None:
            current = list(episode.spares.values())
            for spare in taken:
                if spare not in current:
                    await spare.wait_closed()
            for spare in current:
                await spare.wait_ready()

        self._run(wait)


class _Player:
    """Plays turns like ``Orchestrator._turn`` and records where each turn's time went."""

    def __init__(self, bridge: _BenchBridge) -> None:
        self.bridge = bridge
        self.components: dict[str, list[float]] = {name: [] for name in COMPONENTS}
        self.observation = str(bridge.call_tool(f"{GAME_SERVER_NAME}.memory").content)
        self.status = GameStatus.from_content(bridge.call_tool(f"{GAME_SERVER_NAME}.status").content)
        self.turns = 0
        self.tool_calls = 0

    def turn(self, *, record: bool = True) -> float:
        """Play one turn; record where its time went (unless ``record`` is false); return its total ms."""
        bridge = self.bridge
        self.turns += 1
        status = self.status
        state = (
            f"Turn {self.turns}. Location: {status.location}. Score: {status.score}/{status.max_score}. "
            f"Moves: {status.moves}.\n\n{self.observation}"
        )
        start = time.perf_counter()
        decision = bridge.get_action(state)
        acted = time.perf_counter()
        result = bridge.call_tool(f"{GAME_SERVER_NAME}.play_action", {"action": decision["action"] or "look"})
        answer = bridge.call_tool(f"{GAME_SERVER_NAME}.status")
        end = time.perf_counter()
        assert not result.is_error, result
        assert not answer.is_error, answer
        self.observation = str(result.content)
        self.status = GameStatus.from_content(answer.content)
        last = bridge.last
        assert last is not None
        assert last.turn is not None
        timings = last.turn.timings
        self.tool_calls += len(last.turn.tool_calls)
        parts = {
            "startup": timings.startup,
            "llm": timings.llm,
            "tools": timings.tools,
            "teardown": timings.teardown,
        }
        parts["engine"] = (acted - start) - sum(parts.values())
        parts["game"] = end - acted
        parts["total"] = end - start
        if record:
            for name, seconds in parts.items():
                self.components[name].append(seconds * 1000)
        bridge.recorder.drain()
        return parts["total"] * 1000

    def sample(self, *, back_to_back: int = 0) -> float:
        """One measured turn (after ``back_to_back`` unmeasured ones, no pause between), then settle."""
        bridge = self.bridge
        used: list[Spare] = []
        measured = 0.0
        for index in range(back_to_back + 1):
            if bridge.prewarm:
                used += bridge.spares()  # the spare this turn takes
            measured = self.turn(record=index == back_to_back)
        if bridge.prewarm:
            bridge.settle(used)
        return measured


MODES = {
    "cold": "cold",
    "prewarmed": "prewarmed",
    "back_to_back": "back-to-back",
}


def test_play_turn(report: Report) -> None:
    began = time.perf_counter()
    section = Section(
        number=5,
        title=f"A whole zorkmcp play turn, scripted model ({TURNS} turns each, interleaved; ms)",
        columns=["component", *(f"{label} {q}" for label in MODES.values() for q in ("p50", "p95"))],
    )
    game = _game_path()
    settings = Settings.from_pyproject(REPO / "pyproject.toml")
    thinking = ServerConfig(name="thinking", command=sys.executable, args=("-m", "zorkmcp.servers.thinking"))
    servers = McpConfig(servers=(thinking, game_server_config(game, SEED)))
    walkthrough = default_walkthrough(game) or ["look"]
    with ExitStack() as stack:
        players = {
            mode: _Player(
                stack.enter_context(
                    _BenchBridge(
                        settings,
                        prewarm=mode != "cold",
                        walkthrough=walkthrough,
                        servers=servers,
                        agent_tools=True,
                    )
                )
            )
            for mode in MODES
        }
        run_interleaved(
            {
                "cold": players["cold"].sample,
                "prewarmed": players["prewarmed"].sample,
                "back_to_back": lambda: players["back_to_back"].sample(back_to_back=BURST - 1),
            },
            TURNS,
            warmup=WARMUP,
        )
    figures: dict[str, Any] = {
        "turns": TURNS,
        "warmup": WARMUP,
        "seed": SEED,
        "game": str(game),
        "variants": {},
    }
    stats = {
        mode: {name: Stats.of(values[WARMUP:]) for name, values in player.components.items()}
        for mode, player in players.items()
    }
    for mode, player in players.items():
        figures["variants"][mode] = {
            "label": MODES[mode],
            "turns_played": player.turns,
            "tool_calls": player.tool_calls,
            "final_score": player.status.score,
            "final_location": player.status.location,
            **{
                name: stats[mode][name].as_json(values[WARMUP:]) for name, values in player.components.items()
            },
        }
    for name, label in COMPONENTS.items():
        row = [label]
        for mode in MODES:
            row += [f"{stats[mode][name].p50:.2f}", f"{stats[mode][name].p95:.2f}"]
        section.rows.append(row)
    saved = stats["cold"]["total"].p50 - stats["prewarmed"]["total"].p50
    section.notes = [
        "MCP startup: open_turn → tools ready; tool calls: think, every 5th turn; MCP teardown: leaving "
        "open_turn; engine + sync boundary: the rest of Bridge.get_action; whole turn: get_action + game.",
        f"prewarmed: the next spare had time to start before the turn (a real LLM's latency gives it that); "
        f"whole turn p50 {saved:+.1f} ms against cold.",
        f"back-to-back (prewarmed): the measured turn is turn {BURST} of a burst without pauses, as zorkmcp "
        "play runs with the instant scripted model: it waits for the rest of its spare's start-up.",
        "With the instant scripted model the next spare's start-up overlaps the game calls, not an LLM wait.",
        f"Same walkthrough, seed {SEED}: "
        + "; ".join(
            f"{MODES[mode]}: {p.turns} turns, score {p.status.score} at {p.status.location}, "
            f"{p.tool_calls} think calls"
            for mode, p in players.items()
        ),
    ]
    if TURNS < MIN_ROUNDS:
        section.notes.append(f"only {TURNS} turns ($ZORKMCP_BENCH_ROUNDS); the figures want {MIN_ROUNDS}")
    section.figures = figures
    section.seconds = time.perf_counter() - began
    report.add(section)
