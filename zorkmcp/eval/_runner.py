"""Playing many episodes at once: one task group of K workers, one HTTP pool per endpoint.

Each episode is the one episode loop (:class:`zorkmcp.episode.Episode`) awaited with
:func:`~zorkmcp.episode.drive_async`, with its own agent, game server and MCP servers as its arm
configures them; the game's RNG seed is the episode's seed. The game server runs in this process
(:func:`~zorkmcp.episode.inprocess_game_server_config`): its own Jericho interpreter, served over
the SDK's memory transport. When an episode ends its result —
``episodes/<arm>/seed-<N>.json`` (written atomically) and ``seed-<N>.events.jsonl`` — is written
from a worker thread. An episode that fails (a server that does not start, a model that fails) is
recorded with its ``error``; the run goes on.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import time
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager, nullcontext
from functools import partial
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

import anyio
import attrs
import httpx2

from .. import __version__
from .._outputs import remove_left_temp_files, write_atomically, write_remedy
from .._urls import safe_url
from ..agent import AgentAction, ZorkAgent
from ..config import McpConfig
from ..episode import (
    GAME_SERVER_NAME,
    AskAgent,
    Episode,
    Step,
    default_walkthrough,
    drive_async,
    inprocess_game_server_config,
)
from ..errors import ConfigError, GameError, LLMError, MCPError, RunStopped, RunWriteError, exception_leaves
from ..game import story_md5
from ..game.server import preload as preload_game
from ..llm import (
    OPENROUTER_HEADERS,
    LLMClient,
    MeteredModel,
    ModelChoice,
    ModelUse,
    key_variable,
    resolve_api_key,
)
from ..llm._client import new_http_client
from ..llm._metered import TOKEN_COUNTS
from ..llm._scripted import SCRIPTED_MODEL_NAME
from ..llm._select import key_hint, key_use
from ..llm._urls import is_local_base_url, is_openrouter
from ..mcp import EpisodeServers, McpManager, ModelSampler, ZygoteGroup, build_server_env, open_zygotes
from ..observability import EventRecorder, open_tracer
from ._results import read_episode_file
from ._spec import _RUN_FILES, arm_setup, setup_clash

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Collection, Iterable, Iterator
    from pathlib import Path

    from ..config import ServerConfig
    from ..engine import ToolCallRecord, TurnResult
    from ..llm import ChatModel
    from ._ray import RayPlacement
    from ._spec import EpisodeSpec, EvalPlan

__all__ = [
    "EpisodeResult",
    "EvalOutcome",
    "HttpPools",
    "Progress",
    "collect_episodes",
    "endpoint_of",
    "episode_paths",
    "files_outside",
    "open_http_pools",
    "open_run_zygotes",
    "play_episode",
    "play_episodes",
    "read_arm_configs",
    "read_episode",
    "remove_left_writes",
    "run_eval",
    "write_episode",
]

Runner = str  # "local" or "ray"
EPISODE_ERRORS: Final = (GameError, MCPError, LLMError, OSError, ValueError)
"""The errors that end an episode, and are recorded as its ``error``: the run goes on."""
STARTS_PER_CPU = 8
"""Episodes per CPU that may start their servers at once. Starting a server is CPU-bound: when each
episode's game server was a process forked from a zygote (about 12 ms of CPU each,
``benchmarks/bench_zygote.py``), letting 16 episodes start at once instead of 2 took 64 episodes'
starts from a 1.5 s to a 0.75 s spread (p95) on 2 cores; with the games in process, 1, 8 or 32 per
CPU measured the same. An arm's spawned ``per_episode`` server (a node server: 100 ms and more)
still starts 8 per CPU at once well inside any start-up timeout."""
_log = logging.getLogger("zorkmcp.eval")


class Progress(Protocol):
    """Told about episodes as they start, play turns and end (in the event loop, or Ray's driver: be quick).

    On Ray an episode's turns are not seen one by one: ``turned`` is not called, and the record
    given to ``finished`` has them all.
    """

    def started(self, spec: EpisodeSpec, /) -> None: ...

    def turned(self, spec: EpisodeSpec, /) -> None: ...

    def finished(self, record: dict[str, Any], /) -> None: ...

    def retried(self, spec: EpisodeSpec, event: dict[str, Any], /) -> None:
        """A model request of the episode failed and is retried: its ``llm_retry`` event's fields."""


class _OnRetry:
    """An episode's event listener that hands its ``llm_retry`` events' fields on (nothing else)."""

    def __init__(self, call: Callable[[dict[str, Any]], None]) -> None:
        self._call = call

    def emit(self, event_type: str, /, **fields: Any) -> None:
        if event_type == "llm_retry":
            self._call(fields)

    def log(self, level: str, message: str, /) -> None:
        del level, message


@attrs.frozen(kw_only=True)
class EpisodeResult:
    """What one episode produced: its ``seed-<N>.json`` object and its events (in order)."""

    record: dict[str, Any]
    events: list[dict[str, Any]]


HttpPools = dict[str, httpx2.AsyncClient]
"""One shared ``httpx2.AsyncClient`` per model endpoint (base URL)."""


@asynccontextmanager
async def open_http_pools(base_urls: Iterable[str], *, concurrency: int) -> AsyncIterator[HttpPools]:
    """One HTTP connection pool per endpoint, shared by every episode that talks to it.

    An ``httpx2`` pool (the MCP SDK's HTTP client): it looks over its connections once per request.
    httpx 0.28's pool (httpcore 1.0) counts them all again for each idle one, K² steps per request:
    at K = 256 (``benchmarks/bench_eval.py``'s 2-turn episodes without MCP) the eval process spent
    30 ms of CPU per turn instead of 16, and the run took 15.9 s instead of 9.1.

    Args:
        base_urls: the endpoints (repeats are fine).
        concurrency: how many episodes may send at once (keep-alive connections kept).
    """
    async with AsyncExitStack() as stack:
        pools: HttpPools = {}
        for url in dict.fromkeys(base_urls):
            made = await anyio.to_thread.run_sync(partial(new_http_client, url, keepalive=concurrency))
            pools[url] = await stack.enter_async_context(made)
        yield pools


def _reasoning(spec: EpisodeSpec) -> McpConfig | None:
    """The arm's reasoning servers (its ``mcp_config.json``, read now); ``None`` when the arm has no MCP."""
    if not spec.settings.mcp.enabled:
        return None
    reasoning = McpConfig.from_file(spec.settings.mcp_config_path())
    if any(s.name == GAME_SERVER_NAME for s in reasoning.servers):
        raise ConfigError(
            f"{reasoning.source} defines a server named '{GAME_SERVER_NAME}', reserved for the game"
        )
    return reasoning


def _server_names(reasoning: McpConfig | None) -> list[str]:
    """The names of the arm's enabled reasoning servers, sorted (``[]`` when the arm has no MCP)."""
    return sorted(server.name for server in reasoning.enabled_servers) if reasoning is not None else []


def _servers(spec: EpisodeSpec, reasoning: McpConfig | None) -> tuple[McpConfig, bool]:
    """The game server (seeded) plus the arm's reasoning servers, if it has MCP."""
    game = spec.game_server or inprocess_game_server_config(spec.game_path, spec.seed)
    if reasoning is None:
        return McpConfig(servers=(game,)), False
    return McpConfig(servers=(*reasoning.servers, game), source=reasoning.source), True


ArmConfigs = dict[str, McpConfig | None]
"""Each arm's reasoning servers, read once for the run (:func:`read_arm_configs`)."""


def read_arm_configs(specs: Iterable[EpisodeSpec]) -> ArmConfigs:
    """Read each arm's ``mcp_config.json`` once, so that all its episodes play one configuration.

    An arm's episodes differ only by seed. A file edited while the run goes on changes nothing in
    it. An arm whose file does not load is left out: its episodes read the file themselves and
    record the error. (On Ray each episode reads the file in its worker, where its ``${VAR}``
    values come from.)
    """
    configs: ArmConfigs = {}
    for spec in {spec.arm: spec for spec in specs}.values():
        try:
            configs[spec.arm] = _reasoning(spec)
        except (ConfigError, OSError):
            continue
    return configs


def _chat_model(spec: EpisodeSpec, pools: HttpPools, events: EventRecorder) -> tuple[ChatModel, ModelChoice]:
    """The arm's model: a fresh scripted model per episode, or an LLMClient on the shared pool."""
    choice = spec.model_choice()
    if choice.scripted is not None:  # it replays the game's walkthrough: read it only then
        choice = spec.model_choice(default_walkthrough(spec.game_path))
    choice.announce(events)
    if choice.scripted is not None:
        return choice.scripted, choice
    http = pools.get(choice.base_url)
    if http is None:
        raise ConfigError(f"no HTTP pool was opened for {choice.base_url} (arm {spec.arm})")
    llm = spec.settings.llm
    api_key, _ = resolve_api_key(llm, choice.base_url)
    client = LLMClient(
        http=http,
        base_url=choice.base_url,
        model=choice.model,
        api_key=api_key,
        retry=spec.settings.retry,
        extra_headers=OPENROUTER_HEADERS if is_openrouter(choice.base_url) else None,
        events=events,
        cache_control=llm.cache_control,
        key_use=key_use(llm, choice.base_url, choice.model, arm=True),  # a 401 names the key's variable
    )
    return client, choice


_Fallback = Literal["parse error", "deadline"]
"""Why a turn played the agent's fallback action: its final answer did not parse, or its deadline passed."""


def _fallback(action: AgentAction) -> _Fallback | None:
    """Whether the agent played its fallback action, and why (``None``: the model's own answer).

    A deadline comes first: it is none of the model's (the agent reports no parse error for it).
    """
    if action.turn is not None and action.turn.deadline_exceeded:
        return "deadline"
    return "parse error" if action.parse_error is not None else None


def endpoint_of(spec: EpisodeSpec) -> str | None:
    """The base URL an episode's model talks to (``None``: the offline scripted model)."""
    choice = spec.model_choice()
    return None if choice.scripted is not None else choice.base_url


@attrs.define
class _Tally:
    """What the episode record adds up beyond the summary: turns, tokens, deaths, scores, fallbacks."""

    turns: list[TurnResult] = attrs.Factory(list)
    scores: list[int] = attrs.Factory(list)
    deaths: int = 0
    use: ModelUse = attrs.Factory(ModelUse)
    """Model requests answered with a completion, in every turn (the one an error ended too), and
    their tokens: counted by the episode's :class:`~zorkmcp.llm.MeteredModel`."""
    retries: int = 0
    """Model requests that failed and were tried again (``llm_retry`` events): a rate limit, a 5xx."""
    parse_errors: int = 0
    """Played turns whose final answer did not parse: the agent played its fallback action."""
    deadlines: int = 0
    """Played turns whose turn deadline passed: the agent played its fallback action."""
    fallback: _Fallback | None = None
    """Why the answer of the turn being played was the fallback action, until the turn is played."""
    events: list[dict[str, Any]] = attrs.Factory(list)
    start_seconds: float | None = None
    servers: list[str] | None = None
    """The arm's enabled MCP servers, once its configuration is read (``[]`` without MCP)."""
    setup: dict[str, Any] | None = None
    """What the arm plays with beyond its model (:func:`~zorkmcp.eval._spec.arm_setup`), once read."""
    manager: McpManager | None = None
    """The episode's MCP manager, which knows the servers it disabled (start, retry once, else disable)."""
    base_url: str | None = None
    """The model's endpoint without user info, query or fragment; ``None`` for the offline scripted model."""
    game_md5: str | None = None
    """The story file's md5, as the episode began (``None``: it could not be read)."""

    def servers_disabled(self) -> list[str] | None:
        """The arm's servers the episode disabled after they failed to start twice; ``None``: not known."""
        if self.servers is None or self.manager is None:
            return None
        return [name for name in self.servers if self.manager.is_server_disabled(name)]


async def play_episode(
    spec: EpisodeSpec,
    pools: HttpPools,
    *,
    runner: Runner = "local",
    starting: anyio.CapacityLimiter | None = None,
    zygotes: ZygoteGroup | None = None,
    turned: Callable[[], None] | None = None,
    configs: ArmConfigs | None = None,
    retried: Callable[[dict[str, Any]], None] | None = None,
) -> EpisodeResult:
    """Play one episode with the one episode loop; failures end up in the record's ``error``.

    Cancellation (Ctrl-C) propagates: the episode's servers are stopped and nothing is returned.

    Args:
        spec: the episode.
        pools: the shared HTTP pools (one per endpoint).
        runner: ``"local"`` or ``"ray"`` (for the record).
        starting: bounds how many episodes start their servers at once (starting a server is
            CPU-bound; K at once on a small machine would push every start past its timeout).
        zygotes: the run's zygotes (:func:`open_run_zygotes`), which fork the embedded servers;
            ``None``: the episode opens its own for its ``per_turn`` servers.
        turned: called after each turn (in the event loop; must be quick).
        configs: the run's arm configurations (:func:`read_arm_configs`); an arm not in it (or
            ``None``): the episode reads its arm's ``mcp_config.json`` itself.
        retried: called with the fields of each ``llm_retry`` event (a model request that failed
            and is retried; in the event loop; must be quick).
    """
    started = time.perf_counter()
    recorder = EventRecorder()
    tally = _Tally()

    def on_retry(fields: dict[str, Any]) -> None:
        tally.retries += 1
        if retried is not None:
            retried(fields)

    recorder.add_listener(_OnRetry(on_retry))
    episode_id = f"{spec.arm}-seed-{spec.seed}"
    recorder.context["episode_id"] = episode_id
    episode = Episode(
        events=recorder,
        episode_id=episode_id,
        game_path=spec.game_path,
        seed=spec.seed,
        turn_limit=spec.max_turns,
        mcp_on=spec.settings.mcp.enabled,
        model_use=tally.use,  # its episode_complete says what the record says
    )

    def on_turn(record: Any) -> None:
        tally.scores.append(record.score)
        tally.parse_errors += tally.fallback == "parse error"  # counted once the turn is played
        tally.deadlines += tally.fallback == "deadline"
        tally.fallback = None
        tally.deaths += bool(episode.status is not None and episode.status.died)
        tally.events.extend(recorder.drain()[0])  # the recorder is bounded: hand over every turn
        if turned is not None:
            turned()

    def on_start(model: str, scripted: bool) -> None:
        del model, scripted
        tally.start_seconds = round(time.perf_counter() - started, 3)

    episode.on_turn, episode.on_start = on_turn, on_start
    stopped, error = "turn limit", None
    try:
        await _run_loop(spec, pools, recorder, episode, tally, starting, zygotes, configs)
    except EPISODE_ERRORS as exc:
        stopped, error = "error", f"{type(exc).__name__}: {exc}"
    except BaseExceptionGroup as group:
        # The episode's servers start in a task group: one that fails (out of open files) while the
        # run is being stopped comes out in a group. Its first error is the episode's, unless the
        # group holds anything else (a cancellation, Ctrl-C, a bug): that goes on up as it is.
        leaves = exception_leaves(group)
        if not all(isinstance(leaf, EPISODE_ERRORS) for leaf in leaves):
            raise
        stopped, error = "error", f"{type(leaves[0]).__name__}: {leaves[0]}"
    if error is not None:
        recorder.log("ERROR", f"Episode stopped: {error}")
    summary = episode.finish(stopped, error)
    tally.events.extend(recorder.drain()[0])
    record = _record(spec, summary, tally, runner=runner, wall=time.perf_counter() - started)
    return EpisodeResult(record=record, events=tally.events)


async def _run_loop(
    spec: EpisodeSpec,
    pools: HttpPools,
    recorder: EventRecorder,
    episode: Episode,
    tally: _Tally,
    starting: anyio.CapacityLimiter | None,
    zygotes: ZygoteGroup | None,
    configs: ArmConfigs | None,
) -> None:
    tally.game_md5 = await anyio.to_thread.run_sync(_story_md5, spec.game_path)
    if configs is not None and spec.arm in configs:
        reasoning = configs[spec.arm]
    else:
        reasoning = await anyio.to_thread.run_sync(_reasoning, spec)  # reads the arm's mcp_config.json
    tally.servers = _server_names(reasoning)
    tally.setup = arm_setup(spec.settings, reasoning)
    servers, mcp_on = _servers(spec, reasoning)
    chat, choice = _chat_model(spec, pools, recorder)
    tally.base_url = None if choice.scripted is not None else safe_url(choice.base_url)
    model: ChatModel = MeteredModel(chat, tally.use)
    episode.model_name, episode.scripted = model.model, model.scripted  # also when the servers fail
    # servers' sampling requests go to the metered model: their tokens count in the episode's
    manager = tally.manager = McpManager(
        servers, spec.settings.mcp, events=recorder, sampler=ModelSampler(model)
    )
    agent = ZorkAgent(
        model=model,
        settings=spec.settings.mcp,
        mcp=manager if mcp_on else None,
        sampling=spec.settings.agent_sampling,
        events=recorder,
        tracer=open_tracer(),
    )
    async with AsyncExitStack() as stack:
        async with starting if starting is not None else nullcontext():
            live = await stack.enter_async_context(
                manager.open_episode(zygotes=zygotes, prewarm=_worth_prewarming(servers, zygotes))
            )
        await drive_async(episode.steps(model.model, model.scripted), _answerer(agent, live, recorder, tally))


def _story_md5(path: Path) -> str | None:
    """The story file's md5 (the digest a cassette keeps of its game), ``None`` if it cannot be read."""
    try:
        return story_md5(path)
    except OSError:  # the episode's game fails to open, and says why
        return None


def _worth_prewarming(servers: McpConfig, zygotes: ZygoteGroup | None) -> bool:
    """Whether the episode should prewarm its ``per_turn`` servers: not when the run's zygotes fork them all.

    A spare forked from a zygote would hide about 5 ms of a turn that waits about a second for its
    model, at the price of a second process per ``per_turn`` server all episode long (measured at
    64 episodes: 51 instead of 40 MB RSS per episode, the same turns per second). A server that is
    spawned (node, ``npx``) or remote still gets its spare: its start is what prewarming is for.
    """
    per_turn = [server for server in servers.enabled_servers if server.lifecycle == "per_turn"]
    if zygotes is None or not per_turn:
        return True
    return not all(
        server.type == "stdio"
        and zygotes.accepts(server.command or "", server.args, build_server_env(server.env, os.environ)[0])
        for server in per_turn
    )


def _answerer(
    agent: ZorkAgent, live: EpisodeServers, recorder: EventRecorder, tally: _Tally
) -> Callable[[Step], Any]:
    async def answer(step: Step) -> Any:
        if isinstance(step, AskAgent):
            recorder.set_context(turn=step.turn)
            action: AgentAction = await agent.generate_action(
                step.state_text, step.memories, episode=live, turn=step.turn
            )
            if action.turn is not None:
                tally.turns.append(action.turn)
            tally.fallback = _fallback(action)
            return action
        return await live.call_tool(step.name, dict(step.arguments))

    return answer


def _record(spec: EpisodeSpec, summary: Any, tally: _Tally, *, runner: Runner, wall: float) -> dict[str, Any]:
    tools = _tool_use([call for turn in tally.turns for call in turn.tool_calls])
    record: dict[str, Any] = {
        "arm": spec.arm,
        "seed": spec.seed,
        "score": summary.score,
        "max_score": summary.max_score,
        "moves": summary.moves,
        "turns": summary.turns,
        "victory": summary.victory,
        "game_over": summary.game_over,
        "deaths": tally.deaths,
        "tool_calls": summary.tool_calls,
        "tool_errors": sum(use["errors"] for use in tools.values()),
        "tool_timeouts": sum(use["timeouts"] for use in tools.values()),
        "tools": tools,
        "parse_errors": tally.parse_errors,
        "deadlines": tally.deadlines,
        "context_trims": sum(turn.context_exceeded for turn in tally.turns),
        "llm_requests": tally.use.requests,
        **{key: tally.use.tokens(key) for key in TOKEN_COUNTS},
        "requests_without_usage": tally.use.unmetered,
        "llm_retries": tally.retries,
        "wall_seconds": round(wall, 3),
        "start_seconds": tally.start_seconds,
        "scores": list(tally.scores),
        "runner": runner,
        "pid": os.getpid(),
        "host": socket.gethostname(),  # with pid: which process, and on a cluster which node, played it
        "zorkmcp": __version__,  # a resume that keeps another version's episodes says so
        "model": summary.model,
        "scripted": summary.scripted,
        "base_url": tally.base_url,
        "mcp": spec.settings.mcp.enabled,
        **({"servers": tally.servers} if tally.servers is not None else {}),
        **({"servers_disabled": disabled} if (disabled := tally.servers_disabled()) is not None else {}),
        "max_turns": spec.max_turns,
        "game": spec.game_path.name,
        "game_md5": tally.game_md5,
        "sampling": _sampling(spec),
        **({"setup": tally.setup} if tally.setup is not None else {}),
        "stopped": summary.stopped,
    }
    if summary.error is not None:
        record["error"] = summary.error
    return record


def unreported_record(spec: EpisodeSpec, error: str, *, runner: Runner, wall: float) -> dict[str, Any]:
    """The record of an episode that failed where it played and reported nothing (its Ray worker died).

    It has every key of a played episode's record (:func:`_record`), so that the summary, the report
    and ``--resume`` read it as they read the others: what this machine knows of the episode (its
    model and endpoint, its arm's servers and setup, the story file's md5, ``wall``: how long it was
    in flight) is said; what only its player knew is not made up: the tokens it spent are ``null``
    (unknown, as for an endpoint that reports none), ``pid``, ``host``, ``max_score`` and
    ``start_seconds`` are ``null``; the turns, requests, tool calls and disabled servers it had
    before it died are not known here, and not counted (these fields hold counts, never ``null``).

    Its model is the one this machine would play, as a resume checks it (an empty name would stop
    ``--resume``: a model that is not the arm's).
    """
    tally = _Tally(game_md5=_story_md5(spec.game_path))
    try:
        reasoning = _reasoning(spec)
    except (ConfigError, OSError):  # as a played episode's: no servers or setup said
        pass
    else:
        tally.servers, tally.setup = _server_names(reasoning), arm_setup(spec.settings, reasoning)
    choice = spec.model_choice()
    tally.base_url = None if choice.scripted is not None else safe_url(choice.base_url)
    summary = SimpleNamespace(
        score=0, max_score=None, moves=0, turns=0, victory=False, game_over=False, tool_calls=0,
        model=choice.plays, scripted=choice.scripted is not None, stopped="error", error=error,
    )  # fmt: skip
    unknown = dict.fromkeys(("pid", "host", *TOKEN_COUNTS))  # what only its player knew
    record: dict[str, Any] = {}
    for key, value in _record(spec, summary, tally, runner=runner, wall=wall).items():
        record[key] = unknown.get(key, value)
        if key == "servers":  # none it is known to have disabled (the count is no null, as turns)
            record["servers_disabled"] = []
    return record


def _tool_use(calls: list[ToolCallRecord]) -> dict[str, dict[str, Any]]:
    """Per tool the model called (by canonical name, sorted): calls, errors, timeouts, skipped, seconds.

    ``errors`` counts error results and arguments that were not valid; ``skipped`` the calls a
    timeout earlier in their batch left unrun; ``seconds`` is the time the calls took.
    """
    use: dict[str, dict[str, Any]] = {}
    for call in calls:
        tool = use.setdefault(
            call.name, {"calls": 0, "errors": 0, "timeouts": 0, "skipped": 0, "seconds": 0.0}
        )
        tool["calls"] += 1
        tool["errors"] += call.outcome in ("error", "invalid_arguments")
        tool["timeouts"] += call.outcome == "timeout"
        tool["skipped"] += call.outcome == "skipped"
        tool["seconds"] += call.duration
    return {name: {**use[name], "seconds": round(use[name]["seconds"], 4)} for name in sorted(use)}


# -- files ------------------------------------------------------------------------------------------


def episode_paths(run_dir: Path, arm: str, seed: int) -> tuple[Path, Path]:
    """``episodes/<arm>/seed-<N>.json`` and ``seed-<N>.events.jsonl``."""
    folder = run_dir / "episodes" / arm
    return folder / f"seed-{seed}.json", folder / f"seed-{seed}.events.jsonl"


@contextmanager
def writing(path: Path) -> Iterator[None]:
    """An ``OSError`` writing ``path`` (a full disk, a folder gone): a :class:`RunWriteError` naming it."""
    try:
        yield
    except OSError as exc:
        raise RunWriteError(
            f"{path}: cannot be written ({exc.strerror or exc})", remedy=write_remedy(exc)
        ) from exc


def _replace(path: Path, text: str) -> None:
    with writing(path):
        write_atomically(path, text)


def write_episode(run_dir: Path, result: EpisodeResult) -> Path:
    """Write an episode's files, each atomically; the events first, so a JSON file means both are there.

    Synchronous (call it from a worker thread in async code).

    Raises:
        RunWriteError: a file or folder cannot be written (what was written before stays valid).
    """
    record = result.record
    json_path, events_path = episode_paths(run_dir, record["arm"], record["seed"])
    with writing(json_path.parent):
        json_path.parent.mkdir(parents=True, exist_ok=True)
    _replace(events_path, "".join(json.dumps(e, default=str) + "\n" for e in result.events))
    _replace(json_path, json.dumps(record, indent=2) + "\n")
    return json_path


def read_episode(path: Path) -> dict[str, Any] | None:
    """An episode's record, or ``None`` when the file is not that episode's record (play it again).

    ``None`` when it is missing, does not parse, has a field of the wrong kind (a score that is not
    an integer, ``NaN``, ``scores`` that is not a list of integers…) or names another arm or seed
    than its path: the one rule of :func:`~zorkmcp.eval._results.read_episode_file`, which the
    report follows too.
    """
    return read_episode_file(path)[0]


# -- many at once -----------------------------------------------------------------------------------


async def play_episodes(
    specs: list[EpisodeSpec],
    run_dir: Path,
    *,
    concurrency: int,
    on_start: Callable[[EpisodeSpec], None] | None = None,
    on_turn: Callable[[EpisodeSpec], None] | None = None,
    on_done: Callable[[dict[str, Any]], None] | None = None,
    on_retry: Callable[[EpisodeSpec, dict[str, Any]], None] | None = None,
) -> None:
    """Play ``specs``, at most ``concurrency`` at once, writing each episode's files when it ends.

    Episodes start in the order of ``specs`` (seed by seed): ``concurrency`` workers take the next
    one as each finishes, so a stopped run has played the first seeds, not a random few.

    Args:
        specs: the episodes to play.
        run_dir: the run's folder.
        concurrency: K, the most episodes in flight (at most :data:`STARTS_PER_CPU` per CPU start
            their servers at once).
        on_start: called when an episode starts (in the event loop; must be quick).
        on_turn: called when an episode has played a turn (in the event loop; must be quick).
        on_done: called with each record once its files are written.
        on_retry: called with an episode and its ``llm_retry`` event's fields when a model request
            of it failed and is retried (in the event loop; must be quick).

    Raises:
        RunWriteError: an episode's files cannot be written; the episodes in flight were cancelled
            (their servers stopped), and the files written before stay valid.
    """
    starting = anyio.CapacityLimiter(STARTS_PER_CPU * (os.cpu_count() or 1))
    # one spec per kind of episode: an arm's episodes share their model (endpoint_of costs about
    # 20 µs, which a plan of a million episodes made 20 s before the first one started)
    kinds = {(spec.arm, spec.model, spec.base_url, id(spec.settings)): spec for spec in specs}
    urls = [url for url in map(endpoint_of, kinds.values()) if url is not None]
    queue = iter(specs)  # shared by the workers; taking the next spec never awaits

    async def worker(pools: HttpPools, zygotes: ZygoteGroup) -> None:
        for spec in queue:
            if on_start is not None:
                on_start(spec)
            turned = partial(on_turn, spec) if on_turn is not None else None
            retried = partial(on_retry, spec) if on_retry is not None else None
            result = await play_episode(
                spec,
                pools,
                starting=starting,
                zygotes=zygotes,
                turned=turned,
                configs=configs,
                retried=retried,
            )
            await anyio.to_thread.run_sync(write_episode, run_dir, result)
            if on_done is not None:
                on_done(result.record)

    configs = await anyio.to_thread.run_sync(read_arm_configs, specs)
    try:
        async with (
            open_http_pools(urls, concurrency=concurrency) as pools,
            open_run_zygotes(specs, configs) as zygotes,
            anyio.create_task_group() as tg,
        ):
            if any(spec.game_server is None for spec in specs):  # the in-process game: import Jericho once
                await anyio.to_thread.run_sync(preload_game)
            for _ in range(min(concurrency, len(specs))):
                tg.start_soon(worker, pools, zygotes)
    except BaseExceptionGroup as group:
        writes, rest = group.split(RunWriteError)
        if writes is None:
            raise
        if rest is not None and rest.split(EPISODE_ERRORS)[1] is not None:
            raise  # Ctrl-C or a bug besides: not hidden behind the write error
        # The first write error: the others (several workers at once) say the same, and an episode's
        # error beside it (a server that failed to start as the run was stopped) is its consequence.
        first = exception_leaves(writes)[0]
        raise first from first.__cause__  # the OSError, without the group around it


class _RunLog:
    """The run's own events (its zygotes): warnings go to the ``zorkmcp.eval`` logger."""

    def emit(self, event_type: str, /, **fields: Any) -> None:
        _log.debug("%s %s", event_type, fields)

    def log(self, level: str, message: str, /) -> None:
        _log.log(logging.getLevelName(level), "%s", message)


def _servers_of_arms(specs: Iterable[EpisodeSpec], configs: ArmConfigs) -> list[ServerConfig]:
    """Every server of every arm whose configuration loaded."""
    arms = {spec.arm: spec for spec in specs}  # an arm's episodes differ only by seed
    return [
        server
        for arm, spec in arms.items()
        if arm in configs
        for server in _servers(spec, configs[arm])[0].servers
    ]


@asynccontextmanager
async def open_run_zygotes(
    specs: Iterable[EpisodeSpec], configs: ArmConfigs | None = None
) -> AsyncIterator[ZygoteGroup]:
    """Zygotes for the whole run, one per embedded server module the arms run as processes.

    The ``think`` server of the default configuration: about 3.6 ms of CPU per fresh process
    instead of 24 (``benchmarks/bench_zygote.py``). A game server an arm runs as a process (its
    ``mcp_config.json`` names ``python -m zorkmcp.game.server``) gets a zygote that has imported
    Jericho: about 12 ms instead of 115. Arms whose configuration does not load are left out here
    (their episodes record the error).

    Args:
        specs: the episodes the run will play.
        configs: the arms' configurations (:func:`read_arm_configs`; ``None``: read them now).
    """
    specs = list(specs)
    if configs is None:
        configs = await anyio.to_thread.run_sync(read_arm_configs, specs)
    servers = _servers_of_arms(specs, configs)
    async with open_zygotes(servers, _RunLog(), lifecycles=("per_turn", "per_episode")) as zygotes:
        yield zygotes


# -- the run ----------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class EvalOutcome:
    """How a run ended.

    Attributes:
        run_dir: the run's folder.
        episodes: every finished episode of the plan (played now or before, with ``--resume``).
        played: episodes played by this run.
        resumed: episodes found finished and not played again.
        interrupted: the run was stopped with Ctrl-C.
        summary: ``summary.json``'s object.
        write_error: why the run stopped early (a :class:`~zorkmcp.errors.RunStopped`): a file of
            its run it could not write (which file, and the system's reason), or its Ray cluster
            gone; else ``None``.
        write_remedy: what to do about it (``make room on its disk``), with ``write_error``.
    """

    run_dir: Path
    episodes: list[dict[str, Any]]
    played: int
    resumed: int
    interrupted: bool
    summary: dict[str, Any]
    write_error: str | None = None
    write_remedy: str | None = None


def collect_episodes(plan: EvalPlan) -> list[dict[str, Any]]:
    """The finished episodes of the plan on disk, seed by seed, in the plan's arm order.

    Only the plan's seeds and arms: files an earlier run left in the folder (other seeds, an arm
    since removed) are no part of this run's summary or report. A file that is not its episode's
    record (:func:`read_episode`) is left out.
    """
    on_disk = {arm.name: _record_names(plan.out, arm.name) for arm in plan.arms}
    found = []
    for seed in plan.seeds if any(on_disk.values()) else ():
        for arm in plan.arms:
            if f"seed-{seed}.json" in on_disk[arm.name]:  # one lookup, not one open, per planned episode
                record = read_episode(episode_paths(plan.out, arm.name, seed)[0])
                if record is not None:
                    found.append(record)
    return found


def _record_names(run_dir: Path, arm: str) -> frozenset[str]:
    """The names of the records in an arm's folder (``seed-12.json``); none when it cannot be listed.

    Listed once: trying to open each planned episode's file took 14 s for a plan of a million
    episodes (and the summary after a Ctrl-C waited for it).
    """
    try:
        with os.scandir(episode_paths(run_dir, arm, 0)[0].parent) as entries:
            return frozenset(
                e.name for e in entries if e.name.startswith("seed-") and e.name.endswith(".json")
            )
    except OSError:  # not made yet (no episode of the arm finished), or not readable: read_episode's case
        return frozenset()


_RESUME_KEYS: Final = {
    "model": "--model, or the arm's model",
    "scripted": "true: the offline scripted model, which plays when no API key is set",
    "base_url": "the model's endpoint: --base-url, the arm's base_url, agent_base_url in "
    "[tool.zorkgpt.llm], or OPENAI_BASE_URL",
    "mcp": "--no-mcp, --compare-mcp, or the arm's mcp",
    "servers": "the servers the arm's mcp_config.json enables (or its mcp_config)",
    "max_turns": "--turns, or max_turns in [eval]",
    "game": "--game, or game in [eval]",
    "game_md5": "the md5 of the story file: it was changed or replaced since, or --game (or game in [eval]) "
    "names another file of that name",
    "sampling": "the arm's temperature, top_p, top_k, min_p, max_tokens, or [tool.zorkgpt.agent_sampling]",
}
"""What a resumed record must share with the plan's episode, and what sets each; then its ``setup``
(:func:`~zorkmcp.eval._spec.setup_clash`): the agent's settings and each server's."""


@attrs.frozen
class _Planned:
    """What an arm's episodes would play with now, for a resume to compare its records with.

    Attributes:
        values: the values a kept record may have, per key of :data:`_RESUME_KEYS` (the first one
            is the plan's); a key left out is not checked.
        setup: :func:`~zorkmcp.eval._spec.arm_setup` of the arm (``None``: its mcp_config.json does
            not load, and every episode of the arm will record why).
        source: the arm's ``mcp_config.json``, for the message.
        offline: why the offline scripted model would play the arm's episodes now (no API key for
            its endpoint), said when a kept record played a real model; ``None``: a real model plays
            (or, on a cluster, each worker decides).
        online: the real model the arm's episodes would play now, and the variable whose key makes
            it so, said when a kept record played the offline scripted model (no key was set then);
            ``None``: the scripted model plays (or, on a cluster, each worker decides).
    """

    values: dict[str, tuple[Any, ...]]
    setup: dict[str, Any] | None
    source: Path | None
    offline: str | None = None
    online: str | None = None


def _planned(spec: EpisodeSpec, *, cluster: bool, game_md5: str | None) -> _Planned:
    """What a kept record of ``spec``'s arm may have (:class:`_Planned`).

    On a Ray cluster each worker decides from its own environment whether the offline scripted
    model plays, so a record may be either: the arm's model, or the scripted one. The scripted
    model has no endpoint: its records' ``base_url`` is ``null``, which is never a clash.
    """
    choice = spec.model_choice()
    offline = online = None
    if cluster:
        model: tuple[Any, ...] = (choice.model, SCRIPTED_MODEL_NAME)
        scripted: tuple[Any, ...] = (False, True)
    else:
        model = (choice.plays,)
        scripted = (choice.scripted is not None,)
        llm = spec.settings.llm
        variable = key_variable(llm, choice.base_url)
        if choice.scripted is not None:
            hint = key_hint(llm, choice.base_url, arm=True)
            offline = (
                f"there is no API key for {choice.endpoint} now (set {variable}, or the arm's api_key_env)"
                + (f"; {hint}" if hint else "")
            )
        elif resolve_api_key(llm, choice.base_url)[0] is not None and not is_local_base_url(choice.base_url):
            online = (
                f"the model {json.dumps(choice.model)} at {choice.endpoint} now, as {variable} is set "
                f"(unset it to go on with that run's offline model)"
            )
    values = {
        "model": model,
        "scripted": scripted,
        "base_url": (_endpoint(safe_url(choice.base_url)), None),
        "mcp": (spec.settings.mcp.enabled,),
        "max_turns": (spec.max_turns,),
        "game": (spec.game_path.name,),
        "sampling": (_sampling(spec),),
    }
    if game_md5 is not None:
        values["game_md5"] = (game_md5,)
    try:
        reasoning = _reasoning(spec)
    except (ConfigError, OSError):  # not checked: every episode of the arm will record why
        return _Planned(values, None, None, offline, online)
    values["servers"] = (_server_names(reasoning),)
    source = reasoning.source if reasoning is not None else None
    return _Planned(values, arm_setup(spec.settings, reasoning), source, offline, online)


def _endpoint(url: Any) -> Any:
    """A base URL as a resume compares it: ``…/v1/`` is ``…/v1``, the endpoint the client posts to."""
    return url.rstrip("/") if isinstance(url, str) else url


def _sampling(spec: EpisodeSpec) -> dict[str, Any]:
    """The sampling values the arm sets (temperature, top_p, …); the model's defaults are left out."""
    return {
        key: value for key, value in attrs.asdict(spec.settings.agent_sampling).items() if value is not None
    }


def _clash(record: dict[str, Any], planned: _Planned, arm: str, *, cluster: bool) -> str | None:
    """How a kept record differs from what its arm would play now: the first difference, in words."""
    if planned.offline is not None and record.get("scripted") is False:  # the cause, not its effect
        return (
            f"the episode played the model {json.dumps(record.get('model'))}, but this run's arm {arm} "
            f"would play the offline scripted model: {planned.offline}"
        )
    if planned.online is not None and record.get("scripted") is True:  # a key set since, not --model
        return (
            f"the episode played the offline scripted model (no API key was set when it played), but "
            f"this run's arm {arm} would play {planned.online}"
        )
    for key, allowed in planned.values.items():
        value = _endpoint(record[key]) if key == "base_url" and key in record else record.get(key)
        if key in record and value not in allowed:
            return (
                f"{key} is {json.dumps(record[key])} but this run's arm {arm} has "
                f"{json.dumps(allowed[0])} ({_RESUME_KEYS[key]})"
            )
    setup = record.get("setup")
    if isinstance(setup, dict) and planned.setup is not None:
        return setup_clash(setup, planned.setup, arm=arm, source=planned.source, cluster=cluster)
    return None


def resumable_episodes(
    plan: EvalPlan, *, retry_failed: bool = False, cluster: bool = False
) -> list[dict[str, Any]]:
    """The finished episodes ``--resume`` keeps (does not play again), each checked against the plan.

    A record the plan would play otherwise stops the resume before anything starts: its arm would
    mix two configurations and its mean would answer neither. Compared: the model and its endpoint
    (``base_url``), tools on or off and the servers' names, the turn limit, the game's name and
    md5, the sampling, and the record's ``setup`` (the agent's settings, each server's command,
    arguments, environment, lifecycle…). Not compared, as they change no episode: the concurrency,
    the runner (here or on Ray), the folder, the API key. Keys a record lacks (written by an older
    zorkmcp) are not checked, nor the servers of an arm whose ``mcp_config.json`` does not load. A
    file that is not its episode's record (:func:`read_episode`: it does not parse, has a field of
    the wrong kind or a score it cannot have, or names another arm or seed) is not kept: the
    episode is played again.

    Args:
        plan: the run to resume.
        retry_failed: leave out the failed episodes (with an ``error``), so they are played again.
        cluster: the run goes to a Ray cluster, whose workers decide from their own environment
            whether the offline scripted model plays, and expand ``${VAR}`` in the servers'
            settings: a record of either model is kept, and the servers' commands, arguments,
            environment, folders, URLs and headers are not compared.

    Raises:
        ConfigError: a kept record differs from the plan; the message names the file, the arm, what
            differs (both values, where they are not secret) and the setting that decides it.
    """
    kept: list[dict[str, Any]] = []
    planned: dict[str, _Planned] = {}
    clashes: list[tuple[Path, str]] = []
    game_md5: str | None = None
    for spec in plan.specs():
        path = episode_paths(plan.out, spec.arm, spec.seed)[0]
        record = read_episode(path)
        if record is None or (retry_failed and record.get("error")):
            continue
        kept.append(record)
        if spec.arm not in planned:
            game_md5 = game_md5 or _story_md5(spec.game_path)
            planned[spec.arm] = _planned(spec, cluster=cluster, game_md5=game_md5)
        clash = _clash(record, planned[spec.arm], spec.arm, cluster=cluster)
        if clash is not None:
            clashes.append((path, clash))
    if clashes:
        path, clash = clashes[0]
        more = f" (and {len(clashes) - 1} more episode file(s))" if len(clashes) > 1 else ""
        raise ConfigError(
            f"{path}: {clash}{more}; resume with the settings the run began with, or pass a new --out"
        )
    return kept


def files_outside(plan: EvalPlan) -> list[Path]:
    """The episode files in the run's folder that are no episode of the plan: ``--resume`` never plays them.

    ``episodes/<arm>/seed-<N>.json`` of a seed or an arm outside the plan (an earlier run's), and
    ``seed-*.json`` names that are no seed's (``seed-abc.json``). They stay as they are, and the
    run's summary and report leave them out.
    """
    arms, seeds = {arm.name for arm in plan.arms}, plan.seeds
    try:
        found = sorted(plan.out.glob("episodes/*/seed-*.json"))
    except OSError:
        return []
    return [path for path in found if not _of_the_plan(path, arms, seeds)]


_EPISODE_NAME: Final = re.compile(r"seed-(0|[1-9][0-9]*)\.(json|events\.jsonl)")
"""The name of an episode's file (:func:`episode_paths`), of any seed."""


def remove_left_writes(run_dir: Path) -> list[Path]:
    """Remove what a run killed while it wrote a file (``kill -9``) left in the folder: its temporary file.

    A file of the run is written through ``.NAME.PID.tmp`` beside it, renamed when whole
    (:func:`~zorkmcp._outputs.write_atomically`): a run killed in between leaves that file. Only
    those of the run's own files (``episodes/<arm>/.seed-N.json.PID.tmp``,
    ``.seed-N.events.jsonl.PID.tmp``, and ``.summary.json.PID.tmp``, ``.summary.csv.PID.tmp``,
    ``.report.html.PID.tmp`` at the top) whose process no longer runs are removed: a running one
    may be writing it (``zorkmcp report`` drawing the page). Call it while holding the folder
    (:func:`~zorkmcp.eval._spec.claim_run_folder`), so that no run of it is writing.

    Returns:
        The files removed (the top's first, then each arm's, sorted).
    """
    removed = remove_left_temp_files(run_dir, _RUN_FILES.__contains__)
    try:
        with os.scandir(run_dir / "episodes") as entries:
            arms = sorted(entry.name for entry in entries if entry.is_dir(follow_symlinks=False))
    except OSError:  # no episodes/ yet
        return removed
    for arm in arms:
        removed += remove_left_temp_files(
            run_dir / "episodes" / arm, lambda name: _EPISODE_NAME.fullmatch(name) is not None
        )
    return removed


def _of_the_plan(path: Path, arms: Collection[str], seeds: range) -> bool:
    """Whether ``episodes/<arm>/seed-<N>.json`` is the record of an episode of these arms and seeds
    (its name exactly as :func:`episode_paths` makes it: ``seed-012.json`` is no seed's)."""
    seed = path.name.removeprefix("seed-").removesuffix(".json")
    return (
        path.parent.name in arms
        and seed.isdecimal()
        and seed.isascii()
        and str(int(seed)) == seed
        and int(seed) in seeds
    )


def run_eval(
    plan: EvalPlan,
    *,
    kept: Iterable[dict[str, Any]] = (),
    ray: str | None = None,
    progress: Progress | None = None,
    on_ray_placed: Callable[[RayPlacement], None] | None = None,
) -> EvalOutcome:
    """Play the plan (here, or on Ray), then write ``summary.json``, ``summary.csv`` and ``report.html``.

    Synchronous: starts its own trio loop (or drives Ray). Ctrl-C cancels the episodes in flight
    (their servers are stopped), keeps every finished file and still writes the summary of what
    finished; the outcome says ``interrupted``. A file of the run that cannot be written (a full
    disk), or a Ray cluster that goes away, stops the run the same way, and the outcome's
    ``write_error`` says which and why; the summary is then written if it can be.

    Args:
        plan: what to play.
        kept: the finished episodes not to play again (``--resume``: :func:`resumable_episodes`, which
            also leaves out the failed ones for ``--retry-failed``); they count as resumed.
        ray: ``None`` plays in this process; ``"local"`` starts a local Ray runtime; any other value
            is the address of a cluster to join (``auto``, ``ray://head:10001``).
        progress: told when an episode starts and ends.
        on_ray_placed: on Ray, called once connected with how the episodes fit on the cluster (each
            task asks for a share of a CPU so that K run at once).

    Raises:
        RunWriteError: the summary cannot be written (after a run that wrote every episode).
    """
    specs = plan.specs()
    done = {(r["arm"], r["seed"]) for r in kept}
    pending = [spec for spec in specs if spec.key not in done]
    played: list[dict[str, Any]] = []
    interrupted = False
    stopped: RunStopped | None = None
    try:  # each episode's files make their folders: a cluster that cannot be joined leaves no folder
        _play(pending, plan, ray, progress, played.append, on_ray_placed)
    except KeyboardInterrupt:
        interrupted = True
    except RunStopped as exc:  # a file it cannot write, its Ray cluster gone
        stopped = exc
    episodes = collect_episodes(plan)
    try:
        with writing(plan.out):
            plan.out.mkdir(parents=True, exist_ok=True)
        summary = write_run_summary(plan.out, episodes, plan=plan)
    except RunWriteError:
        if stopped is None:
            raise
        from ._stats import summarize

        summary = summarize(episodes, plan=_plan_of(plan))  # told, not written: the first failure
    return EvalOutcome(
        run_dir=plan.out,
        episodes=episodes,
        played=len(played),
        resumed=len(done),
        interrupted=interrupted,
        summary=summary,
        write_error=str(stopped) if stopped is not None else None,
        write_remedy=stopped.remedy if stopped is not None else None,
    )


def _play(
    pending: list[EpisodeSpec],
    plan: EvalPlan,
    ray: str | None,
    progress: Progress | None,
    written: Callable[[dict[str, Any]], None],
    on_ray_placed: Callable[[RayPlacement], None] | None = None,
) -> None:
    """Play ``pending`` in this process (one trio loop) or as Ray tasks; Ctrl-C raises KeyboardInterrupt."""
    on_start = progress.started if progress is not None else None
    on_turn = progress.turned if progress is not None else None
    on_retry = progress.retried if progress is not None else None

    def on_done(record: dict[str, Any]) -> None:
        written(record)
        if progress is not None:
            progress.finished(record)

    if ray is not None:
        from ._ray import play_on_ray

        play_on_ray(
            pending,
            plan.out,
            concurrency=plan.concurrency,
            address=ray,
            on_start=on_start,
            on_done=on_done,
            on_placed=on_ray_placed,
        )
        return
    from .._bridge import run_trio

    run_trio(
        partial(
            play_episodes,
            pending,
            plan.out,
            concurrency=plan.concurrency,
            on_start=on_start,
            on_turn=on_turn,
            on_done=on_done,
            on_retry=on_retry,
        )
    )


def _plan_of(plan: EvalPlan) -> dict[str, Any]:
    """``summary.json``'s ``plan``: the arms and seeds the run plays (which files a resume plays)."""
    return {
        "arms": [arm.name for arm in plan.arms],
        "first_seed": plan.seeds.start,
        "last_seed": plan.seeds.stop - 1,
    }


def write_run_summary(
    run_dir: Path, episodes: list[dict[str, Any]], *, plan: EvalPlan | None = None
) -> dict[str, Any]:
    """``summary.json``, ``summary.csv`` and (when an episode finished) ``report.html``, all of ``episodes``.

    The page draws exactly the episodes the summary covers (each arm's ``seeds`` in
    ``summary.json``), not every file in ``episodes/``: it says how many others it left out, and
    of the files it could not read, which ones ``--resume`` plays again (those of the run's
    ``plan``, kept in ``summary.json``).

    Raises:
        RunWriteError: one of them cannot be written.
    """
    from ._report import render_eval_report
    from ._results import ReportInputError
    from ._stats import summarize, write_summary_csv

    summary = summarize(episodes, plan=_plan_of(plan) if plan is not None else None)
    _replace(run_dir / "summary.json", json.dumps(summary, indent=2) + "\n")
    with writing(run_dir / "summary.csv"):
        write_summary_csv(episodes, run_dir / "summary.csv")
    if episodes:  # a run stopped before any episode finished has nothing to draw
        try:
            render_eval_report(run_dir, episodes=episodes)
        except ReportInputError as exc:  # the page cannot be written (the records were just read)
            cause = exc.__cause__
            remedy = write_remedy(cause) if isinstance(cause, OSError) else "mend the folder"
            raise RunWriteError(str(exc), remedy=remedy) from exc
    return summary
