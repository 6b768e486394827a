"""The synchronous episode loop (Requirement 9): a game MCP server, the agent, and a ``bridge.Bridge``.

Each turn: build the game-state text and recent memories, ask the agent for an action
(``Bridge.get_action``), play it through the game server's ``play_action``, read the game's own
``status`` (score, moves, location, game over, victory), record the turn. The game server is a
``per_episode`` session; the agent is offered its read-only tools (``memory``, ``get_map``,
``inventory``; never ``play_action``) together with the configured reasoning servers.

The episode ends at the turn limit, when the game is over (the game says so: ``GAME OVER`` in
``play_action``, ``game_over`` in ``status``), or on Ctrl-C, which stops the turn in flight, stops
every server and still returns an :class:`EpisodeSummary`. Victory and the maximum score come from
the game (``status``), never from a guess on the score.

Relative log paths (``[tool.zorkgpt.files] json_log_file`` / ``episode_log_file``) are relative to the
current folder, as in ZorkGPT.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from .config import McpConfig, ServerConfig, Settings
from .errors import ConfigError, GameError, MCPError
from .observability import EventRecorder, LogFiles

if TYPE_CHECKING:
    from bridge import Bridge

    from .engine import ToolCallRecord

__all__ = [
    "GAME_SERVER_NAME",
    "GAME_TOOLS_FOR_AGENT",
    "EpisodeSummary",
    "GameStatus",
    "Orchestrator",
    "TurnRecord",
    "default_walkthrough",
    "game_server_config",
]

GAME_SERVER_NAME = "zork"
GAME_TOOLS_FOR_AGENT = ("memory", "get_map", "inventory")
"""The game tools the agent is offered (issue 5 §3): read-only; ``play_action`` is the orchestrator's."""
RECENT_MEMORIES = 8

_GAME_OVER = re.compile(r"(?:\A|\n)GAME OVER\s*\Z")  # the last line of play_action (seeds 003 §1)


def game_server_config(game_path: Path, seed: int | None) -> ServerConfig:
    """The game MCP server (seed 003) as a per_episode stdio server; the agent sees only its read-only tools.

    Args:
        game_path: the story file.
        seed: the interpreter's RNG seed (``None``: Jericho's default).
    """
    args = ["-m", "zorkmcp.game.server", "--game", str(game_path)]
    if seed is not None:
        args += ["--seed", str(seed)]
    return ServerConfig(
        name=GAME_SERVER_NAME,
        type="stdio",
        command=sys.executable,
        args=tuple(args),
        lifecycle="per_episode",
        tools=GAME_TOOLS_FOR_AGENT,
    )


def default_walkthrough(game_path: Path) -> list[str] | None:
    """The commands the offline scripted model plays: Jericho's walkthrough for the game.

    The game is named by the file's stem (``zork1.z3`` → ``zork1``); a file Jericho has no
    walkthrough for gets Zork I's (the game this project is about).

    Args:
        game_path: the story file.

    Returns:
        The commands, or ``None`` when Jericho knows neither (the scripted model's default opening).
    """
    from .game import walkthrough

    for name in dict.fromkeys((game_path.stem.lower(), "zork1")):
        try:
            return walkthrough(name)
        except GameError:
            continue
    return None  # pragma: no cover - Jericho always knows zork1


@attrs.frozen(kw_only=True)
class GameStatus:
    """What the game server's ``status`` tool says (the game's own view, not a guess)."""

    game: str
    location: str
    score: int
    max_score: int | None
    moves: int
    game_over: bool
    victory: bool
    died: bool

    @classmethod
    def from_content(cls, content: Any) -> GameStatus:
        """Read the ``status`` tool's JSON object.

        Args:
            content: the ``ToolCallResult.content`` of a ``status`` call (a dict).

        Raises:
            GameError: the content is not the status object.
        """
        if not isinstance(content, Mapping):
            raise GameError(f"the game server's status is not a JSON object: {str(content)[:200]!r}")
        try:
            max_score = content.get("max_score")
            return cls(
                game=str(content["game"]),
                location=str(content["location"]),
                score=int(content["score"]),
                max_score=None if max_score is None else int(max_score),
                moves=int(content["moves"]),
                game_over=bool(content["game_over"]),
                victory=bool(content["victory"]),
                died=bool(content.get("died", False)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise GameError(f"the game server's status lacks {exc}: {dict(content)!r}") from None


@attrs.frozen(kw_only=True)
class TurnRecord:
    """One played turn."""

    turn: int
    action: str
    reasoning: str
    new_objective: str | None
    observation: str
    location: str
    score: int
    max_score: int | None
    moves: int
    tool_calls: int
    tools_used: tuple[str, ...]
    game_over: bool
    victory: bool
    seconds: float
    calls: tuple[ToolCallRecord, ...] = ()
    """This turn's tool calls, in order (name, arguments, duration, outcome, result preview)."""


@attrs.frozen(kw_only=True)
class EpisodeSummary:
    """The end of an episode; ``as_json()`` is what ``--summary-json`` writes.

    ``stopped`` says why the episode ended: ``"victory"``, ``"game over"``, ``"turn limit"``,
    ``"interrupted"`` (Ctrl-C) or ``"error"`` (then ``error`` says what went wrong).
    """

    score: int
    max_score: int | None
    moves: int
    turns: int
    victory: bool
    game_over: bool
    tool_calls: int
    model: str
    scripted: bool
    location: str = ""
    stopped: str = "turn limit"
    error: str | None = None
    episode_id: str = ""

    @property
    def interrupted(self) -> bool:
        """The episode was stopped with Ctrl-C."""
        return self.stopped == "interrupted"

    def as_json(self) -> dict[str, Any]:
        """The ``--summary-json`` object (issue 5 §4): exactly these nine keys."""
        return {
            "score": self.score,
            "max_score": self.max_score,
            "moves": self.moves,
            "turns": self.turns,
            "victory": self.victory,
            "game_over": self.game_over,
            "tool_calls": self.tool_calls,
            "model": self.model,
            "scripted": self.scripted,
        }


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return str(content)


@attrs.define
class Orchestrator:
    """Plays one episode of a game with the agent (synchronous; Requirement 9, 10.2).

    Args:
        settings: the ``[tool.zorkgpt.*]`` settings.
        game_path: the story file.
        seed: the game's RNG seed (reproducible runs).
        max_turns: the turn limit; default ``[tool.zorkgpt.orchestrator] max_turns_per_episode``.
        mcp_enabled: default ``[tool.zorkgpt.mcp] enabled``; when false ``mcp_config.json`` is not
            read, no reasoning server is started and the agent gets no tools (Requirement 9.4).
        model: overrides the configured model.
        base_url: overrides the configured endpoint.
        walkthrough: commands for the offline scripted model; default :func:`default_walkthrough`.
        on_start: called once the servers and the model are up, with the model's name and whether
            it is the offline scripted model.
        on_turn: called after every turn (the CLI's live display).
        recorder: collects the events and episode-log lines (written to the log files between turns).
    """

    settings: Settings
    game_path: Path
    seed: int | None = None
    max_turns: int | None = None
    mcp_enabled: bool | None = None
    model: str | None = None
    base_url: str | None = None
    walkthrough: Sequence[str] | None = None
    on_start: Callable[[str, bool], None] | None = None
    on_turn: Callable[[TurnRecord], None] | None = None
    recorder: EventRecorder = attrs.Factory(EventRecorder)
    records: list[TurnRecord] = attrs.Factory(list)
    status: GameStatus | None = None
    model_name: str = ""
    scripted: bool = False

    @property
    def mcp_on(self) -> bool:
        """Whether the reasoning servers run and the agent gets tools."""
        return self.settings.mcp.enabled if self.mcp_enabled is None else self.mcp_enabled

    @property
    def turn_limit(self) -> int:
        """``max_turns``, else ``max_turns_per_episode``."""
        return (
            self.max_turns if self.max_turns is not None else self.settings.orchestrator.max_turns_per_episode
        )

    def log_files(self) -> LogFiles:
        """The JSON-lines event log and the episode log (relative paths: to the current folder)."""
        files = self.settings.files
        return LogFiles(json_log=Path(files.json_log_file), episode_log=Path(files.episode_log_file))

    def servers(self) -> McpConfig:
        """The reasoning servers from ``mcp_config.json`` (when MCP is on) plus the game server.

        Raises:
            ConfigError: ``mcp_config.json`` is missing or invalid, or names a server ``zork``
                (an ``MCPError``, Requirement 9.3).
        """
        game = game_server_config(self.game_path, self.seed)
        if not self.mcp_on:
            return McpConfig(servers=(game,))  # Requirement 9.4: mcp_config.json is not even read
        reasoning = McpConfig.from_file(self.settings.mcp_config_path())
        if any(s.name == GAME_SERVER_NAME for s in reasoning.servers):
            raise ConfigError(
                f"mcp_config.json ({reasoning.source}) defines a server named '{GAME_SERVER_NAME}', which "
                "zorkmcp play reserves for the game server; rename it"
            )
        return McpConfig(servers=(*reasoning.servers, game), source=reasoning.source)

    def _bridge(self) -> Bridge:
        from bridge import Bridge

        servers = self.servers()
        walkthrough = (
            self.walkthrough if self.walkthrough is not None else default_walkthrough(self.game_path)
        )
        try:
            return Bridge(
                self.settings,
                servers=servers,
                agent_tools=self.mcp_on,
                recorder=self.recorder,
                model=self.model,
                base_url=self.base_url,
                walkthrough=walkthrough,
            )
        except MCPError:
            raise
        except (ValueError, TypeError, OSError) as exc:  # Requirement 9.3: always an MCPError
            raise MCPError(f"could not set up the MCP manager: {exc}") from exc

    def run(self) -> EpisodeSummary:
        """Play until victory, game over or the turn limit; Ctrl-C ends the episode with a summary.

        Returns:
            The summary; ``stopped`` says why the episode ended.

        Raises:
            MCPError: the MCP servers could not be set up (Requirement 9.3): a bad
                ``mcp_config.json`` (``ConfigError``), a server that does not start on the first
                turn (``MCPServerStartupError``), a model that cannot call tools.
        """
        files = self.log_files()
        bridge = self._bridge()
        stopped = "turn limit"
        error: str | None = None
        try:
            with bridge:
                try:
                    self._start(bridge)
                    for _ in range(self.turn_limit):
                        if self.status is not None and self.status.game_over:
                            break
                        self._turn(bridge, files)
                except KeyboardInterrupt:
                    stopped = "interrupted"
                except GameError as exc:  # the game server stopped answering mid-episode
                    stopped, error = "error", str(exc)
                    self.recorder.log("ERROR", f"Episode stopped: {exc}")
        except KeyboardInterrupt:  # while the servers were starting or stopping
            stopped = "interrupted"
        finally:
            files.write(*self.recorder.drain())
        status = self.status
        if stopped == "turn limit" and status is not None and status.game_over:
            stopped = "victory" if status.victory else "game over"
        summary = EpisodeSummary(
            score=status.score if status else 0,
            max_score=status.max_score if status else None,
            moves=status.moves if status else 0,
            turns=len(self.records),
            victory=bool(status and status.victory),
            game_over=bool(status and status.game_over),
            tool_calls=sum(r.tool_calls for r in self.records),
            model=self.model_name,
            scripted=self.scripted,
            location=status.location if status else "",
            stopped=stopped,
            error=error,
            episode_id=bridge.setup.episode_id,
        )
        self.recorder.emit("episode_complete", stopped=stopped, error=error, **summary.as_json())
        self.recorder.log(
            "INFO",
            f"Episode complete ({stopped}): score {summary.score}/{summary.max_score}, "
            f"moves {summary.moves}, turns {summary.turns}, tool calls {summary.tool_calls}",
        )
        files.write(*self.recorder.drain())
        return summary

    def _game_status(self, bridge: Bridge) -> GameStatus:
        result = bridge.call_tool(f"{GAME_SERVER_NAME}.status")
        if result.is_error:
            raise GameError(f"the game server did not answer status: {result.error_message}")
        self.status = GameStatus.from_content(result.content)
        return self.status

    def _start(self, bridge: Bridge) -> None:
        self.model_name = bridge.model.model
        self.scripted = bridge.model.scripted
        status = self._game_status(bridge)
        self.recorder.emit(
            "episode_start",
            game=status.game,
            game_file=str(self.game_path),
            seed=self.seed,
            max_turns=self.turn_limit,
            mcp_enabled=self.mcp_on,
            model=self.model_name,
            scripted=self.scripted,
            max_score=status.max_score,
        )
        self.recorder.log(
            "INFO",
            f"Episode {bridge.setup.episode_id}: {status.game} ({self.game_path.name}, seed {self.seed}), "
            f"model {self.model_name}{' (offline scripted model)' if self.scripted else ''}, "
            f"MCP {'on' if self.mcp_on else 'off'}, up to {self.turn_limit} turns",
        )
        if self.scripted:
            self.recorder.emit("llm_offline_model", model=self.model_name)
        if self.on_start is not None:
            self.on_start(self.model_name, self.scripted)

    def _memories(self) -> str | None:
        recent = self.records[-RECENT_MEMORIES:]
        if not recent:
            return None
        lines = ["Recent turns (oldest first):"]
        for r in recent:
            first = " ".join(r.observation.split())[:160]
            lines.append(f"- Turn {r.turn}: > {r.action} -> {first}")
        objective = next((r.new_objective for r in reversed(self.records) if r.new_objective), None)
        if objective:
            lines.append(f"Current objective: {objective}")
        return "\n".join(lines)

    def _state_text(self, turn: int, bridge: Bridge) -> str:
        status = self.status
        assert status is not None
        if self.records:
            observation = self.records[-1].observation
        else:
            observation = _text_of(bridge.call_tool(f"{GAME_SERVER_NAME}.memory").content)
        maximum = f"/{status.max_score}" if status.max_score is not None else ""
        return (
            f"Turn {turn}. Location: {status.location}. Score: {status.score}{maximum}. "
            f"Moves: {status.moves}.\n\n{observation}"
        )

    def _turn(self, bridge: Bridge, files: LogFiles) -> None:
        started = time.perf_counter()
        turn = len(self.records) + 1
        decision = bridge.get_action(self._state_text(turn, bridge), self._memories())
        action = decision["action"] or "look"
        result = bridge.call_tool(f"{GAME_SERVER_NAME}.play_action", {"action": action})
        text = _text_of(result.content) if not result.is_error else f"(game error) {result.error_message}"
        status = self._game_status(bridge)
        if not result.is_error and bool(_GAME_OVER.search(text)) != status.game_over:
            self.recorder.log("WARNING", f"Turn {turn}: play_action and status disagree on GAME OVER")
        last = bridge.last
        calls = last.turn.tool_calls if last is not None and last.turn is not None else ()
        record = TurnRecord(
            turn=turn,
            action=action,
            reasoning=decision.get("reasoning") or "",
            new_objective=decision.get("new_objective"),
            observation=text,
            location=status.location,
            score=status.score,
            max_score=status.max_score,
            moves=status.moves,
            tool_calls=len(calls),
            tools_used=tuple(sorted({c.name for c in calls})),
            game_over=status.game_over,
            victory=status.victory,
            seconds=time.perf_counter() - started,
            calls=tuple(calls),
        )
        self.records.append(record)
        self.recorder.emit(
            "turn_complete",
            turn=turn,
            action=action,
            location=status.location,
            score=status.score,
            moves=status.moves,
            tool_calls=len(calls),
            game_over=status.game_over,
            victory=status.victory,
            game_error=result.error_message if result.is_error else None,
        )
        outcome = " GAME OVER (victory)" if status.victory else " GAME OVER" if status.game_over else ""
        self.recorder.log(
            "INFO",
            f"Turn {turn}: Game: > {action} -> {status.location}, score {status.score}, "
            f"moves {status.moves}{outcome}",
        )
        files.write(*self.recorder.drain())
        if self.on_turn is not None:
            self.on_turn(record)
