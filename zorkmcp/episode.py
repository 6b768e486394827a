"""The one episode loop (Requirement 9): play a game through its MCP server with the agent.

The loop is written once, as a generator of steps (no I/O of its own): it yields what it needs —
"ask the agent" (:class:`AskAgent`) or "call a game tool" (:class:`CallGame`) — and is sent back the
answer. Two drivers run it:

* :func:`drive` — synchronously, one step at a time: ``zorkmcp play``'s orchestrator answers through
  ``bridge.Bridge`` (``get_action`` / ``call_tool``), Requirement 9 and 10;
* :func:`drive_async` — awaited in a task: ``zorkmcp eval`` plays many episodes at once in one
  event loop (and one per Ray worker), each with its own agent and game server.

Each turn: build the game-state text and recent memories, ask the agent for an action, play it
with the game server's ``play_action``, read the game's own ``status`` (score, moves, location,
game over, victory), record the turn (``turn_complete``). The episode ends at the turn limit or
when the game is over; victory and the maximum score come from the game, never from a guess.
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections.abc import Awaitable, Callable, Generator, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

import attrs

from .config import ServerConfig
from .errors import GameError

if TYPE_CHECKING:
    from pathlib import Path

    from .agent import AgentAction
    from .config import Settings
    from .engine import ToolCallRecord
    from .llm import ModelUse
    from .mcp import ToolCallResult
    from .observability import EventSink

__all__ = [
    "GAME_SERVER_NAME",
    "GAME_TOOLS_FOR_AGENT",
    "AskAgent",
    "CallGame",
    "Episode",
    "EpisodeSummary",
    "GameStatus",
    "Step",
    "TurnRecord",
    "default_walkthrough",
    "drive",
    "drive_async",
    "game_server_config",
    "inprocess_game_server_config",
    "scripted_walkthrough",
]

GAME_SERVER_NAME = "zork"
GAME_TOOLS_FOR_AGENT = ("memory", "get_map", "inventory")
"""The game tools the agent is offered: read-only; ``play_action`` is the episode loop's."""
RECENT_MEMORIES = 8
OBSERVATION_CHARS = 4000
"""``turn_complete.observation``: the game's text after the action, up to this many characters."""
REASONING_CHARS = 2000
SHORT_CHARS = 200
"""Arguments and results of tool calls in ``turn_complete.tools`` are cut to this many characters."""

_GAME_OVER = re.compile(r"(?:\A|\n)GAME OVER\s*\Z")  # the last line of play_action (seeds 003 §1)


def game_server_config(game_path: Path, seed: int | None) -> ServerConfig:
    """The game MCP server (seed 003) as a per_episode stdio server; the agent sees only its read-only tools.

    Args:
        game_path: the story file.
        seed: the interpreter's RNG seed (``None``: Jericho's default).
    """
    args = ["-m", "zorkmcp.game.server", f"--game={game_path}"]  # one word: a name may start with "-"
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


def inprocess_game_server_config(game_path: Path, seed: int | None) -> ServerConfig:
    """The same game server as :func:`game_server_config`, run in this process (what ``zorkmcp eval`` plays).

    The game is opened in a worker thread when the session starts and served over the SDK's memory
    transport (:func:`zorkmcp.game.server.create_server`): a few milliseconds and under a megabyte
    per episode, where a game server process costs about 12 ms of CPU even forked from a zygote,
    and 27 MB.

    Args:
        game_path: the story file.
        seed: the interpreter's RNG seed (``None``: Jericho's default).
    """
    from .game.server import create_server

    return ServerConfig(
        name=GAME_SERVER_NAME,
        type="inprocess",
        module="zorkmcp.game.server:create_server",
        factory=partial(create_server, str(game_path), seed),
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


def scripted_walkthrough(
    settings: Settings, game_path: Path, *, model: str | None = None, base_url: str | None = None
) -> list[str] | None:
    """:func:`default_walkthrough` when the offline scripted model will play, else ``None`` (nothing read).

    Reading a walkthrough imports Jericho (and numpy): about 0.1 s of CPU and 11 MB that a process
    whose model is real never needs (``zorkmcp play`` with a model: 1.10 → 0.96 s of CPU, 92 → 81 MB).

    Args:
        settings: the settings that choose the model (:meth:`zorkmcp.llm.ModelChoice.from_settings`).
        game_path: the story file.
        model: overrides the configured model.
        base_url: overrides the configured endpoint.
    """
    from .llm import ModelChoice

    choice = ModelChoice.from_settings(settings, model_override=model, base_url_override=base_url)
    return default_walkthrough(game_path) if choice.scripted is not None else None


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
    """This turn's tool calls, in order (name, arguments, outcome, duration, result preview)."""


@attrs.frozen(kw_only=True)
class EpisodeSummary:
    """The end of an episode; ``as_json()`` is what ``--summary-json`` writes.

    ``stopped`` says why the episode ended: ``"victory"``, ``"game over"``, ``"turn limit"``,
    ``"end of cassette"`` (a replay that played every turn of a recording cut short),
    ``"interrupted"`` (Ctrl-C) or ``"error"`` (then ``error`` says what went wrong).
    ``replayed_from``: the cassette a replay played (as it was given), else ``None``.

    What the episode's model use cost, as its :class:`~zorkmcp.llm.MeteredModel` counted it (the
    agent's requests and the MCP servers' sampling requests alike): ``llm_requests``, the model
    requests answered with a completion; ``prompt_tokens`` and ``completion_tokens``, the tokens
    their answers reported, summed (``None``: unknown, no answer reported them; 0 when the model
    answered nothing).
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
    replayed_from: str | None = None
    llm_requests: int = 0
    prompt_tokens: int | None = 0
    completion_tokens: int | None = 0

    @property
    def interrupted(self) -> bool:
        """The episode was stopped with Ctrl-C."""
        return self.stopped == "interrupted"

    @property
    def tokens_in_out(self) -> str:
        """``24,510 / 210``: ``prompt_tokens / completion_tokens`` as the summary table and the episode
        log show them (``–`` for unknown), as the live view, ``zorkmcp eval``'s table and its report do."""
        counts = (self.prompt_tokens, self.completion_tokens)
        return " / ".join("–" if n is None else f"{n:,}" for n in counts)

    def as_json(self) -> dict[str, Any]:
        """The ``--summary-json`` object: exactly these fourteen keys (``error`` ``None`` but after one,
        ``prompt_tokens`` and ``completion_tokens`` ``None`` when unknown), and ``replayed_from`` for a
        replay (absent otherwise)."""
        replayed = {} if self.replayed_from is None else {"replayed_from": self.replayed_from}
        return {
            "score": self.score,
            "max_score": self.max_score,
            "moves": self.moves,
            "turns": self.turns,
            "victory": self.victory,
            "game_over": self.game_over,
            "tool_calls": self.tool_calls,
            "llm_requests": self.llm_requests,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "model": self.model,
            "scripted": self.scripted,
            "stopped": self.stopped,
            "error": self.error,
            **replayed,
        }


def _no_model_use() -> ModelUse:
    from .llm import ModelUse  # not at import: the llm package loads the HTTP client

    return ModelUse()


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return str(content)


@attrs.frozen
class AskAgent:
    """A step: choose the next action (answer with the agent's :class:`~zorkmcp.agent.AgentAction`)."""

    turn: int
    state_text: str
    memories: str | None


@attrs.frozen
class CallGame:
    """A step: call one of the game server's tools (answer with its ``ToolCallResult``)."""

    tool: str
    arguments: Mapping[str, Any] = attrs.field(factory=dict)

    @property
    def name(self) -> str:
        """The canonical tool name (``zork.play_action``)."""
        return f"{GAME_SERVER_NAME}.{self.tool}"


Step = AskAgent | CallGame
Steps = Generator[Step, Any, None]


@attrs.define
class Episode:
    """The plain state of one episode and its loop (:meth:`steps`); no I/O, no async resources.

    Args:
        events: the episode's event sink.
        episode_id: the episode's id (in the log).
        game_path: the story file (for the log).
        seed: the game's RNG seed.
        turn_limit: the most turns to play.
        mcp_on: whether the agent has tools (for the log).
        on_start: called once the game answered its first status, with the model's name and
            whether it is scripted.
        on_turn: called after every turn.
        replayed_from: the cassette a replay plays (as it was given; in ``episode_start``,
            ``episode_complete`` and the episode log's first line), else ``None``.
        cassette_turns: a replay's cassette holds this many turns, fewer than ``turn_limit`` (its
            recording was cut short): the episode ends after them, with ``stopped`` ``"end of
            cassette"``; ``None``: no such end.
        model_use: what the episode's model answered, counted by the
            :class:`~zorkmcp.llm.MeteredModel` its driver gives the agent and the MCP servers'
            sampler (the summary's ``llm_requests`` and tokens); default: nothing counted.
    """

    events: EventSink
    episode_id: str
    game_path: Path
    seed: int | None
    turn_limit: int
    mcp_on: bool
    on_start: Callable[[str, bool], None] | None = None
    on_turn: Callable[[TurnRecord], None] | None = None
    replayed_from: str | None = None
    cassette_turns: int | None = None
    model_use: ModelUse = attrs.Factory(_no_model_use)
    records: list[TurnRecord] = attrs.Factory(list)
    status: GameStatus | None = None
    model_name: str = ""
    scripted: bool = False

    def steps(self, model_name: str, scripted: bool) -> Steps:
        """The loop: yields steps, is sent their answers, returns when the episode is over."""
        self.model_name, self.scripted = model_name, scripted
        yield from self._read_status()
        self._announce()
        while len(self.records) < self._last_turn and not (self.status is not None and self.status.game_over):
            yield from self._turn()

    @property
    def _last_turn(self) -> int:
        """The most turns the episode plays: the turn limit, or a replay's cassette's turns if fewer."""
        held = self.cassette_turns
        return self.turn_limit if held is None else min(self.turn_limit, held)

    def _read_status(self) -> Steps:
        result: ToolCallResult = yield CallGame("status")
        if result.is_error:
            raise GameError(f"the game server did not answer status: {result.error_message}")
        self.status = GameStatus.from_content(result.content)

    def _announce(self) -> None:
        status = self.status
        assert status is not None
        self.events.emit(
            "episode_start",
            game=status.game,
            game_file=str(self.game_path),
            seed=self.seed,
            max_turns=self.turn_limit,
            mcp_enabled=self.mcp_on,
            model=self.model_name,
            scripted=self.scripted,
            max_score=status.max_score,
            **({} if self.replayed_from is None else {"replayed_from": self.replayed_from}),
        )
        replayed = (
            f", replayed from the cassette {self.replayed_from}" if self.replayed_from is not None else ""
        )
        self.events.log(
            "INFO",
            f"Episode {self.episode_id}: {status.game} ({self.game_path.name}, seed {self.seed}), "
            f"model {self.model_name}{' (offline scripted model)' if self.scripted else ''}, "
            f"MCP {'on' if self.mcp_on else 'off'}, up to {self.turn_limit} turns{replayed}",
        )
        if self.on_start is not None:
            self.on_start(self.model_name, self.scripted)

    def _turn(self) -> Steps:
        started = time.perf_counter()
        turn = len(self.records) + 1
        if self.records:
            observation = self.records[-1].observation
        else:
            first: ToolCallResult = yield CallGame("memory")
            observation = _text_of(first.content)
        decision: AgentAction = yield AskAgent(turn, self._state_text(turn, observation), self._memories())
        action = decision.action or "look"
        result: ToolCallResult = yield CallGame("play_action", {"action": action})
        text = _text_of(result.content) if not result.is_error else f"(game error) {result.error_message}"
        yield from self._read_status()
        status = self.status
        assert status is not None
        if not result.is_error and bool(_GAME_OVER.search(text)) != status.game_over:
            self.events.log("WARNING", f"Turn {turn}: play_action and status disagree on GAME OVER")
        calls = decision.turn.tool_calls if decision.turn is not None else ()
        record = TurnRecord(
            turn=turn,
            action=action,
            reasoning=decision.reasoning or "",
            new_objective=decision.new_objective,
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
        self._report_turn(record, game_error=result.error_message if result.is_error else None)
        if self.on_turn is not None:
            self.on_turn(record)

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

    def _state_text(self, turn: int, observation: str) -> str:
        status = self.status
        assert status is not None
        maximum = f"/{status.max_score}" if status.max_score is not None else ""
        return (
            f"Turn {turn}. Location: {status.location}. Score: {status.score}{maximum}. "
            f"Moves: {status.moves}.\n\n{observation}"
        )

    def _report_turn(self, record: TurnRecord, *, game_error: str | None) -> None:
        """``turn_complete`` carries what a reader of the log needs to follow the episode."""
        self.events.emit(
            "turn_complete",
            turn=record.turn,
            action=record.action,
            location=record.location,
            score=record.score,
            moves=record.moves,
            tool_calls=record.tool_calls,
            game_over=record.game_over,
            victory=record.victory,
            game_error=game_error,
            observation=record.observation[:OBSERVATION_CHARS],
            reasoning=record.reasoning[:REASONING_CHARS],
            new_objective=record.new_objective,
            tools=[_call_summary(call) for call in record.calls],
        )
        outcome = " GAME OVER (victory)" if record.victory else " GAME OVER" if record.game_over else ""
        self.events.log(
            "INFO",
            f"Turn {record.turn}: Game: > {record.action} -> {record.location}, score {record.score}, "
            f"moves {record.moves}{outcome}",
        )

    def finish(self, stopped: str, error: str | None) -> EpisodeSummary:
        """End the episode: the summary, and ``episode_complete`` (on every way out)."""
        status = self.status
        if stopped == "turn limit" and status is not None and status.game_over:
            stopped = "victory" if status.victory else "game over"
        elif stopped == "turn limit" and self._last_turn <= len(self.records) < self.turn_limit:
            stopped = "end of cassette"  # a replay that played every turn of a recording cut short
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
            episode_id=self.episode_id,
            replayed_from=self.replayed_from,
            llm_requests=self.model_use.requests,
            prompt_tokens=self.model_use.tokens("prompt_tokens"),
            completion_tokens=self.model_use.tokens("completion_tokens"),
        )
        self.events.emit("episode_complete", **summary.as_json())
        self.events.log(
            "INFO",
            f"Episode complete ({summary.stopped}): score {summary.score}/{summary.max_score}, "
            f"moves {summary.moves}, turns {summary.turns}, tool calls {summary.tool_calls}, "
            f"model requests {summary.llm_requests}, tokens in / out {summary.tokens_in_out}",
        )
        return summary


def drive(steps: Steps, answer: Callable[[Step], Any]) -> None:
    """Run the loop synchronously: each step is answered by ``answer`` (which may block)."""
    try:
        step = next(steps)
        while True:
            step = steps.send(answer(step))
    except StopIteration:
        return


async def drive_async(steps: Steps, answer: Callable[[Step], Awaitable[Any]]) -> None:
    """Run the loop in a task: each step is answered by awaiting ``answer``."""
    try:
        step = next(steps)
        while True:
            step = steps.send(await answer(step))
    except StopIteration:
        return


def _call_summary(call: ToolCallRecord) -> dict[str, Any]:
    arguments = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments, default=str)
    return {
        "name": call.name,
        "server": call.server,
        "arguments": arguments[:SHORT_CHARS],
        "result": (call.result_preview or "")[:SHORT_CHARS],
        "duration_ms": round(call.duration * 1000, 1),
        "outcome": call.outcome,
    }
