"""``zorkmcp play``'s synchronous orchestrator (Requirement 9): one episode through ``bridge.Bridge``.

The episode loop itself is :class:`zorkmcp.episode.Episode` (written once, also driven by
``zorkmcp eval``); this module drives it synchronously: the agent's turns go through
``Bridge.get_action`` and the game's tools through ``Bridge.call_tool`` (the game server is a
``per_episode`` session; the agent is offered its read-only tools with the configured reasoning
servers). Ctrl-C stops the turn in flight, stops every server and still returns an
:class:`EpisodeSummary`.

Relative log paths (``[tool.zorkgpt.files] json_log_file`` / ``episode_log_file``) are relative to the
current folder, as in ZorkGPT.
"""

from __future__ import annotations

import os
from contextlib import ExitStack, asynccontextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs

from ._bridge import Bridge, ChatModelFactory, _episode_id, _refuse_inside_event_loop, check_walkthrough
from ._urls import safe_url
from .config import McpConfig, SamplingSettings, Settings
from .episode import (
    GAME_SERVER_NAME,
    GAME_TOOLS_FOR_AGENT,
    AskAgent,
    Episode,
    EpisodeSummary,
    GameStatus,
    Step,
    TurnRecord,
    default_walkthrough,
    drive,
    game_server_config,
    scripted_walkthrough,
)
from .errors import CassetteError, ConfigError, GameError, MCPError, RunWriteError
from .game import story_md5
from .llm import CassetteHeader, ChatModel, ModelChoice, RecordingModel, ReplayModel
from .llm._cassette import CassetteFile
from .observability import EventRecorder, LogFiles

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Sequence

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


MAX_TURNS: Final = 1_000_000
"""The most turns an episode may be given (as ``max_turns_per_episode``)."""


def _path(value: str | os.PathLike[str]) -> Path:
    """A path argument given as a ``str`` or any path (``record="run.jsonl"``) is a :class:`Path`."""
    if isinstance(value, (str, os.PathLike)) and not isinstance(value, bytes):
        return Path(value)
    raise TypeError(f"Orchestrator: expected a path (a str or pathlib.Path), got {type(value).__name__}")


def _optional_path(value: str | os.PathLike[str] | None) -> Path | None:
    return None if value is None else _path(value)


def _settings(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not isinstance(value, Settings):
        raise TypeError(
            f"Orchestrator: settings must be a zorkmcp.config.Settings, got {type(value).__name__} (read a "
            "file with Settings.from_pyproject(path), or pass Settings() for the defaults)"
        )


def _optional(
    kind: type, said: str, *, none: bool = True
) -> Callable[[object, attrs.Attribute[Any], object], None]:
    def check(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if (none and value is None) or (
            isinstance(value, kind) and (kind is bool or not isinstance(value, bool))
        ):
            return
        allowed = f"{said} or None" if none else said
        raise TypeError(f"Orchestrator: {attribute.name} must be {allowed}, got {type(value).__name__}")

    return check


def _integer(high: int | None) -> Callable[[object, attrs.Attribute[Any], object], None]:
    """An optional whole number: any (a seed), or ``0..high`` (a turn limit)."""

    def check(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is None:
            return
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(
                f"Orchestrator: {attribute.name} must be an int or None, got {type(value).__name__}"
            )
        if high is not None and not 0 <= value <= high:
            raise ValueError(f"Orchestrator: {attribute.name} must be from 0 to {high}, got {value}")

    return check


def _commands(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """The scripted model's walkthrough: a list of commands (a str would be played letter by letter)."""
    check_walkthrough(value, what=f"Orchestrator: {attribute.name}")


def _callback(_: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and not callable(value):
        raise TypeError(
            f"Orchestrator: {attribute.name} must be a function or None, got {type(value).__name__}"
        )


@attrs.define
class Orchestrator:
    """Plays one episode of a game with the agent (synchronous; Requirement 9, 10.2).

    Args:
        settings: the ``[tool.zorkgpt.*]`` settings.
        game_path: the story file.
        seed: the game's RNG seed (reproducible runs).
        max_turns: the turn limit; default: replaying, the recorded episode's (its cassette's
            ``max_turns``: a replay of a recording cut short stops where its cassette ends, with
            ``stopped`` ``"end of cassette"``), else ``[tool.zorkgpt.orchestrator] max_turns_per_episode``.
        mcp_enabled: default: replaying, the recorded episode's (the cassette's
            ``settings.mcp_enabled``), else ``[tool.zorkgpt.mcp] enabled``; when false
            ``mcp_config.json`` is not read, no reasoning server is started and the agent gets no
            tools (Requirement 9.4).
        model: overrides the configured model.
        base_url: overrides the configured endpoint.
        walkthrough: commands for the offline scripted model; default :func:`default_walkthrough`
            (read only when that model plays).
        record: write every model exchange of the episode to this cassette; :meth:`run` holds it
            (:class:`zorkmcp.llm.RecordingModel`) from before anything starts until the episode ends.
        replay: answer from this cassette instead of a model (no network); see
            :class:`zorkmcp.llm.ReplayModel`. The agent's ``max_tool_iterations`` and sampling are
            the recorded episode's (the cassette's ``settings``), as they shape the requests.
        on_start: called once the servers and the model are up, with the model's name and whether
            it is the offline scripted model.
        on_turn: called after every turn (the CLI's live display).
        recorder: collects the events and episode-log lines (written to the log files between turns);
            an ``episode_id`` its context holds is the episode's (the summary's too).

    :meth:`run` plays the episode once; a second call raises ``RuntimeError``.

    Raises:
        TypeError: an argument of the wrong type (``settings`` not a ``Settings``, ``max_turns="5"``,
            a ``walkthrough`` given as one str); ``game_path``, ``record`` and ``replay`` take a str
            or any path.
        ValueError: ``max_turns`` outside ``0..1000000``.
    """

    settings: Settings = attrs.field(validator=_settings)
    game_path: Path = attrs.field(converter=_path)
    seed: int | None = attrs.field(default=None, validator=_integer(None))
    max_turns: int | None = attrs.field(default=None, validator=_integer(MAX_TURNS))
    mcp_enabled: bool | None = attrs.field(default=None, validator=_optional(bool, "a bool"))
    model: str | None = attrs.field(default=None, validator=_optional(str, "a str"))
    base_url: str | None = attrs.field(default=None, validator=_optional(str, "a str"))
    walkthrough: Sequence[str] | None = attrs.field(default=None, validator=_commands)
    record: Path | None = attrs.field(default=None, converter=_optional_path)
    replay: Path | None = attrs.field(default=None, converter=_optional_path)
    on_start: Callable[[str, bool], None] | None = attrs.field(default=None, validator=_callback)
    on_turn: Callable[[TurnRecord], None] | None = attrs.field(default=None, validator=_callback)
    recorder: EventRecorder = attrs.field(
        factory=EventRecorder, validator=_optional(EventRecorder, "a zorkmcp.EventRecorder", none=False)
    )
    episode: Episode | None = None
    summary: EpisodeSummary | None = None
    """The summary, once the episode has ended (also when :meth:`run` raised)."""
    _replayed: ReplayModel | None = attrs.field(default=None, init=False, repr=False)
    _recording: CassetteFile | None = attrs.field(default=None, init=False, repr=False)
    _played: bool = attrs.field(default=False, init=False, repr=False)
    """:meth:`run` has started the episode (an Orchestrator plays one)."""

    @property
    def recording(self) -> CassetteFile | None:
        """The cassette ``record`` writes, once :meth:`run` has begun (else ``None``); its
        ``started`` says whether anything was written to it."""
        return self._recording

    @property
    def replayed(self) -> ReplayModel | None:
        """The cassette replayed (``replay``, read once), else ``None``.

        Raises:
            CassetteError: the cassette is missing or not a cassette.
        """
        if self.replay is None:
            return None
        if self._replayed is None:
            self._replayed = ReplayModel(self.replay)
        return self._replayed

    @property
    def mcp_on(self) -> bool:
        """Whether the reasoning servers run and the agent gets tools.

        ``mcp_enabled``; else, replaying, the recorded episode's; else ``[tool.zorkgpt.mcp] enabled``.
        """
        if self.mcp_enabled is not None:
            return self.mcp_enabled
        recorded = self.replayed.settings.get("mcp_enabled") if self.replayed is not None else None
        return recorded if isinstance(recorded, bool) else self.settings.mcp.enabled

    @property
    def turn_limit(self) -> int:
        """``max_turns``; else, replaying, the recorded episode's turn limit; else ``max_turns_per_episode``.

        A cassette that does not tell the recorded limit (an older zorkmcp's): the turns it holds.

        Raises:
            CassetteError: replaying, and the cassette is missing or not a cassette.
        """
        if self.max_turns is not None:
            return self.max_turns
        if self.replayed is not None:
            recorded = self.replayed.recorded_turn_limit
            return recorded if recorded is not None else self.replayed.turn_limit
        return self.settings.orchestrator.max_turns_per_episode

    def played_settings(self) -> Settings:
        """The settings the agent plays with: ``settings``, replaying with the recorded episode's
        ``max_tool_iterations`` and agent sampling (its cassette's ``settings``), which shape the
        requests the replay must send again.

        Raises:
            CassetteError: the cassette records one of them as a value it cannot have.
        """
        replayed = self.replayed
        if replayed is None:
            return self.settings
        recorded, settings = replayed.settings, self.settings
        key = "max_tool_iterations"
        try:
            if (iterations := recorded.get(key)) is not None:
                settings = attrs.evolve(
                    settings, mcp=attrs.evolve(settings.mcp, max_tool_iterations=iterations)
                )
            key = "agent_sampling"
            if (sampling := recorded.get(key)) is not None:
                if not isinstance(sampling, dict):
                    raise TypeError(f"expected a JSON object, got {sampling!r}")
                settings = attrs.evolve(settings, agent_sampling=SamplingSettings(**sampling))
        except (TypeError, ValueError) as exc:
            raise CassetteError(
                f"{self.replay}: the header's settings.{key} is not valid ({exc}); record the cassette again"
            ) from None
        return settings

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
        """The episode's Bridge; nothing has started yet (a cassette recorded is not yet held)."""
        servers = self.servers()
        walkthrough = self.walkthrough
        if walkthrough is None and self.replay is None:
            walkthrough = scripted_walkthrough(
                self.settings, self.game_path, model=self.model, base_url=self.base_url
            )
        chat_model = self._cassette_model(walkthrough)
        try:
            return Bridge(
                self.played_settings(),
                servers=servers,
                agent_tools=self.mcp_on,
                recorder=self.recorder,
                model=self.model,
                base_url=self.base_url,
                walkthrough=walkthrough,
                chat_model=chat_model,
                log_files=self.log_files(),
            )
        except MCPError:
            raise
        except (ValueError, TypeError, OSError) as exc:  # Requirement 9.3: always an MCPError
            raise MCPError(f"could not set up the MCP manager: {exc}") from exc

    def _cassette_model(self, walkthrough: Sequence[str] | None) -> ChatModelFactory | None:
        """The chat model of a recorded (``record``) or replayed (``replay``) episode, else ``None``."""
        replayed = self.replayed
        if replayed is not None:
            recorded_md5 = replayed.header.get("game_md5")
            if recorded_md5 is not None and recorded_md5 != story_md5(self.game_path):
                raise CassetteError(
                    f"{self.replay}: the cassette was recorded with another story file "
                    f"({replayed.header.get('game')}); pass it with --game"
                )
            if self.mcp_enabled is False and replayed.settings.get("mcp_enabled") is True:
                raise CassetteError(
                    f"{self.replay}: the cassette was recorded with MCP on (its header's "
                    "settings.mcp_enabled is true), and this run turns it off, so the tools offered would "
                    "differ at turn 1; drop --no-mcp"
                )
            self.played_settings()  # its settings are valid
            return lambda: _fixed(replayed)
        if self.record is None:
            return None
        choice = ModelChoice.from_settings(
            self.settings, model_override=self.model, base_url_override=self.base_url, walkthrough=walkthrough
        )
        header = CassetteHeader(
            model=choice.plays,
            scripted=choice.scripted is not None,
            game=self.game_path.name,
            game_md5=story_md5(self.game_path),
            seed=self.seed,
            max_turns=self.turn_limit,
            settings={
                "base_url": safe_url(choice.base_url),  # no user info: a cassette holds no secret
                "mcp_enabled": self.mcp_on,
                "max_tool_iterations": self.settings.mcp.max_tool_iterations,
                "agent_sampling": attrs.asdict(self.settings.agent_sampling),
            },
        )
        self._recording = cassette = CassetteFile(self.record, header)  # held by run()
        _episode_id(None, self.recorder)  # the notice is the episode's: the Bridge takes the same id
        choice.announce(self.recorder)
        recorder = self.recorder

        @asynccontextmanager
        async def recording() -> AsyncIterator[ChatModel]:
            async with choice.open(recorder) as inner:
                yield RecordingModel.onto(inner, cassette)

        return recording

    def run(self) -> EpisodeSummary:
        """Play until victory, game over or the turn limit; every way out ends with ``episode_complete``.

        Ctrl-C (also while the servers start) and a game server that stops answering end the
        episode with a summary (``stopped`` is ``"interrupted"`` / ``"error"``). A server that does
        not start, a model that fails, a log or the cassette that cannot be written (a full disk), or
        an ``on_start`` / ``on_turn`` callback that raises also write ``episode_complete`` (when the
        log can take it) and set :attr:`summary` (``stopped="error"``), then raise. A replay of a
        recording cut short (Ctrl-C, an error, a crash) that plays every turn its cassette holds ends
        with ``stopped`` ``"end of cassette"``.

        Returns:
            The summary; ``stopped`` says why the episode ended.

        Raises:
            CassetteError: before anything started: the cassette replayed is not one, or does not
                fit this run (another story file, ``mcp_enabled=False`` for a recording with MCP on);
                the cassette recorded is held by another recording (the message names its process).
            MCPError: the MCP servers could not be set up (Requirement 9.3): a bad
                ``mcp_config.json`` (``ConfigError``, before anything started), a server that does
                not start on the first turn (``MCPServerStartupError``), a model that cannot call tools.
            LLMError: the model endpoint failed beyond its retries.
            Exception: what ``on_start`` or ``on_turn`` raised (the episode stopped there, as an error).
            RunWriteError: the event log, the episode log or the cassette cannot be written (a full
                disk); the episode stopped at that turn, and each file keeps the whole lines it held.
            RuntimeError: ``run()`` was called before and started its episode: an Orchestrator plays
                one episode (its recorder, its summary and a replayed cassette are that episode's);
                create a new Orchestrator for the next. Or it was called while an event loop runs in
                this thread (nothing has started then: call it from a worker thread).
        """
        _refuse_inside_event_loop(
            "Orchestrator.run()",
            advice="Call it from a worker thread: await asyncio.to_thread(orchestrator.run), or "
            "trio.to_thread.run_sync(orchestrator.run)",
        )
        if self._played:
            raise RuntimeError(
                "this Orchestrator has played its episode (run() was called before): an Orchestrator "
                "plays one episode; create a new Orchestrator for the next"
            )
        bridge = self._bridge()
        with ExitStack() as holds:
            if self._recording is not None:
                holds.enter_context(self._recording)  # before anything starts, until the episode ends
            return self._run(bridge)

    def _run(self, bridge: Bridge) -> EpisodeSummary:
        replayed = self.replayed
        self._played = True
        self.episode = episode = Episode(
            events=self.recorder,
            episode_id=bridge.setup.episode_id,
            game_path=self.game_path,
            seed=self.seed,
            turn_limit=self.turn_limit,
            mcp_on=self.mcp_on,
            on_start=self.on_start,
            on_turn=self.on_turn,
            replayed_from=None if self.replay is None else str(self.replay),
            cassette_turns=None if replayed is None or self.max_turns is not None else max(replayed.turns, 1),
            model_use=bridge.setup.model_use,  # the summary's llm_requests and tokens: every turn's
        )
        self._tell_incomplete()
        stopped, error = "turn limit", None
        failure: Exception | None = None
        try:
            with bridge:
                drive(episode.steps(bridge.model.model, bridge.model.scripted), _answer_with(bridge))
        except KeyboardInterrupt:
            stopped = "interrupted"
        except Exception as exc:  # noqa: BLE001 - on_start / on_turn's own fault too: the episode ends
            stopped, error = "error", f"{type(exc).__name__}: {exc}"
            failure = None if isinstance(exc, GameError) else exc
            self.recorder.log("ERROR", f"Episode stopped: {error}")
        self.summary = episode.finish(stopped, error)
        self._tell_cut_short()
        try:
            bridge.setup.flush()
        except RunWriteError as exc:
            # the log cannot take episode_complete: the episode's record is not whole
            if not isinstance(failure, RunWriteError):  # else it was said when the episode stopped
                self.recorder.log("ERROR", f"Episode log incomplete: {type(exc).__name__}: {exc}")
                with suppress(RunWriteError):  # into the other log, when it has room
                    bridge.setup.flush()
            if error is None and stopped != "interrupted":
                self.summary = attrs.evolve(
                    self.summary, stopped="error", error=f"{type(exc).__name__}: {exc}"
                )
                failure = exc
        if failure is not None:
            raise failure
        return self.summary

    def _tell_incomplete(self) -> None:
        """A replay of a cassette whose last line is incomplete (a crash, ``kill -9``) says so first."""
        replayed = self.replayed
        if replayed is None or replayed.incomplete_line is None:
            return
        held = f"{replayed.turns} whole turn{'' if replayed.turns == 1 else 's'}"
        self.recorder.log(
            "WARNING",
            f"{self.replay}: its last line (line {replayed.incomplete_line}) is incomplete: the recording "
            f"stopped in the middle of a write (a crash or kill -9); the replay plays the {held} before it",
        )

    def _tell_cut_short(self) -> None:
        """A replay that played every turn of a cassette whose recording was cut short says so."""
        replayed = self.replayed
        if replayed is None or self.summary is None or self.summary.stopped != "end of cassette":
            return
        self.recorder.log(
            "WARNING",
            f"{self.replay}: the recording was cut short (Ctrl-C, an error or a crash): the cassette holds "
            f"{replayed.turns} of the recorded episode's {replayed.recorded_turn_limit} turns, and the "
            "replay played them all",
        )

    @property
    def records(self) -> list[TurnRecord]:
        """The turns played so far."""
        return self.episode.records if self.episode is not None else []

    @property
    def status(self) -> GameStatus | None:
        """The game's latest status."""
        return self.episode.status if self.episode is not None else None


@asynccontextmanager
async def _fixed(model: ChatModel) -> AsyncIterator[ChatModel]:
    yield model


def _answer_with(bridge: Bridge) -> Callable[[Step], Any]:
    """Answer the episode loop's steps through the Bridge (blocking calls into its trio loop)."""

    def answer(step: Step) -> Any:
        if isinstance(step, AskAgent):
            bridge.get_action(step.state_text, step.memories)
            return bridge.last
        return bridge.call_tool(step.name, step.arguments)

    return answer
