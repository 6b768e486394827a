"""``McpManager``: which servers run when, and what happens when one does not start.

The policy (seeds 000 §Error Handling and §Graceful Degradation; Requirements 6.1, 6.7–6.10;
properties 26–27), applied per server:

* The first turn of an episode (and :meth:`McpManager.open_episode`): a server that fails to start
  raises :class:`~zorkmcp.errors.MCPServerStartupError` — the configuration is probably wrong.
* Later turns: a failed start is retried once, at once, in the same turn. If the retry fails the
  server is disabled for the rest of the episode (a warning and an ``mcp_disabled_fallback``
  event), :meth:`McpManager.is_server_disabled` says so, and the turn goes on with the other
  servers' tools. :attr:`McpManager.is_disabled` (the seeds' flag) is true once every server is.
* A ``per_episode`` server whose process died mid-episode gives error results for the rest of that
  turn; the next turn restarts it under the same rule (start, retry once, else disable).
* A ``per_episode`` session closes in the background once the episode lets it go (at its end, or
  when a turn replaces it after it died); its stop carries the last turn that used it, or no turn
  when none did, never the turn running when the stop is reported (as a spare's, :mod:`._prewarm`).

Sampling (:mod:`zorkmcp.mcp._sampling`): given a ``sampler`` (the episode's model), the manager
declares the ``sampling`` capability to every session of a server with ``"sampling": true``,
whatever its lifecycle or transport, and counts the per-turn limit by its own turns. Without one
those servers are not told the client can sample (they may then offer fewer tools), and a warning
says so once per episode.

Two things the manager says once per episode, however many toolboxes it builds (one per turn, one
more whenever a tool list changes, and one for the program's own calls): each tool left out for its
schema (``mcp_tool_excluded`` and its warning), and, when the tools offered to the model are more
than OpenAI's API takes in one request (:data:`MAX_OPENAI_TOOLS`), a warning and an
``mcp_too_many_tools`` event. The tools are offered all the same: other endpoints take more.

The manager is a plain object: it holds configuration and per-server health, no async resources,
so it survives between ``trio.run`` calls (the plain ``get_action()`` path). Servers are owned by
the nurseries inside :meth:`McpManager.open_turn` and :meth:`McpManager.open_episode`.
"""

from __future__ import annotations

import os
from collections.abc import (
    AsyncIterator,
    Awaitable,
    Callable,
    Collection,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from functools import partial
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import anyio
import anyio.abc
import anyio.to_thread
from attrs import define, evolve

from zorkmcp.config import McpConfig
from zorkmcp.errors import MCPServerStartupError, exception_leaves
from zorkmcp.observability import EventSink, NullSink

from ._env import build_server_env
from ._prewarm import MAX_CONCURRENT_TEARDOWNS, Spare, TeardownGate, start_spare
from ._remote import open_remote_pool
from ._sampling import SamplingPolicy
from ._session import ServerHandle, ServerSession, start_server
from ._tools import Toolbox
from ._zygote import ZygoteGone, ZygoteGroup, open_zygote, same_python_vars, zygote_module, zygote_supported

if TYPE_CHECKING:
    import httpx2

    from zorkmcp.config import McpSettings, ServerConfig

    from ._results import ToolCallResult
    from ._sampling import Sampler

__all__ = [
    "MAX_OPENAI_TOOLS",
    "SPARE_CLOSE_WAIT",
    "EpisodeServers",
    "McpManager",
    "open_toolbox",
    "open_zygotes",
    "too_many_tools_advice",
]

_T = TypeVar("_T")

SPARE_CLOSE_WAIT = 3.0
"""After a failed first turn: how long to wait for released spares to end (teardown is bounded at 2.5 s)."""
_OWN_CALLS_RESULT_BYTES = 1 << 30
"""The result cap of the program's own calls (:meth:`EpisodeServers.toolbox`): the largest
``max_result_bytes`` allows, so never reached. ``max_result_bytes`` caps what the model is shown;
the engine reads the game's ``status`` JSON and its text whole."""


MAX_OPENAI_TOOLS = 128
"""The most tools OpenAI's chat completions take in one request: more are refused with HTTP 400
(``Invalid 'tools': array too long. Expected an array with maximum length 128``). Other endpoints
take more, so the engine offers every tool and only warns (Requirement 8.5: all tools are made
available)."""


def too_many_tools_advice() -> str:
    """What the warnings about more than :data:`MAX_OPENAI_TOOLS` tools say after the count."""
    return (
        f"OpenAI's API takes at most {MAX_OPENAI_TOOLS} tools in one request and refuses more "
        "(HTTP 400, \"Invalid 'tools': array too long\"); to offer fewer, give a server a "
        '"tools" allow-list in mcp_config.json'
    )


def tools_per_server(servers: Iterable[str]) -> dict[str, int]:
    """How many of ``servers`` (one name per tool) each server has, the most first (then in order)."""
    counts: dict[str, int] = {}
    for server in servers:
        counts[server] = counts.get(server, 0) + 1
    return dict(sorted(counts.items(), key=lambda item: -item[1]))


def _shown_counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{server}: {count}" for server, count in counts.items())


@contextmanager
def _plain_errors() -> Iterator[None]:
    """Re-raise an exception group holding exactly one exception as that exception.

    Nurseries wrap everything that crosses them in ``ExceptionGroup``; callers of our context
    managers should see their own ``LLMError`` or our ``MCPServerStartupError`` as themselves.
    Groups of several exceptions are left alone.
    """
    try:
        yield
    except BaseExceptionGroup as group:
        leaves = exception_leaves(group)
        if len(leaves) != 1:
            raise
        _reraise(leaves[0])


def _cancelled(exc: BaseException) -> bool:
    """True when ``exc`` is a cancellation (alone, or every leaf of a group is one)."""
    cancelled = anyio.get_cancelled_exc_class()
    return all(isinstance(leaf, cancelled) for leaf in exception_leaves(exc))


def _reraise(exc: BaseException) -> NoReturn:
    """Raise ``exc`` from inside an ``except`` block without chaining it to the handled group."""
    context, cause, suppress = exc.__context__, exc.__cause__, exc.__suppress_context__
    try:
        raise exc
    finally:
        exc.__context__, exc.__cause__, exc.__suppress_context__ = context, cause, suppress
        del exc


_StartOne = Callable[[anyio.abc.TaskGroup, "ServerConfig"], Awaitable[ServerHandle | None]]


async def _start_all(
    nursery: anyio.abc.TaskGroup,
    servers: Sequence[ServerConfig],
    start_one: _StartOne,
) -> dict[str, ServerHandle]:
    """Start ``servers`` concurrently into ``nursery``; the first failure (config order) is raised."""
    handles: dict[str, ServerHandle] = {}

    async def one(server: ServerConfig) -> None:
        handle = await start_one(nursery, server)
        if handle is not None:
            handles[server.name] = handle

    order = {server.name: index for index, server in enumerate(servers)}
    try:
        async with anyio.create_task_group() as starters:
            for server in servers:
                starters.start_soon(one, server)
    except BaseExceptionGroup as group:
        failures, rest = group.split(MCPServerStartupError)
        if failures is None or rest is not None:
            raise
        errors = [e for e in exception_leaves(failures) if isinstance(e, MCPServerStartupError)]
        first = min(errors, key=lambda e: order.get(e.server, len(order)))
        _reraise(first)
    return handles


@define
class _Health:
    disabled: bool = False
    starts: int = 0
    failures: int = 0


@define
class _Attempts:
    """The start policy for one server in one turn (Requirements 6.1, 6.7–6.10; properties 26–27).

    :meth:`run` makes an attempt; a failed attempt is an ``mcp_server_start_failed`` event. On the
    first turn (``fail_fast``) the failure is raised; on later turns one retry follows at once, and
    if that fails too the server is disabled (``mcp_disabled_fallback``) and :meth:`run` returns
    ``None``.
    """

    manager: McpManager
    server: ServerConfig
    fail_fast: bool

    async def run(self, attempt: Callable[[], Awaitable[_T]]) -> _T | None:
        manager, name = self.manager, self.server.name
        health, turn, events = manager._health[name], manager.turn, manager._events
        for number in (1, 2):
            health.starts += 1
            try:
                result = await attempt()
            except MCPServerStartupError as error:
                health.failures += 1
                events.emit("mcp_server_start_failed", server=name, turn=turn, error=str(error))
                if self.fail_fast:
                    raise  # Requirement 6.1: the first turn fails fast
                if number == 2:  # Requirements 6.9, 6.10
                    manager._disable(self.server, turn, error)
                    return None
                events.log("WARNING", f"Turn {turn}: MCP server '{name}' failed to start, retrying: {error}")
                continue
            if number == 2:
                events.log("INFO", f"Turn {turn}: MCP server '{name}' retry successful")
            return result
        raise AssertionError("unreachable")  # pragma: no cover


@define
class _EpisodeSessionEvents:
    """The event sink of one ``per_episode`` session: once the episode lets it go, its last turn.

    While turns use the session its events take the turn that runs (the recorder's context). The
    episode lets it go at its end (:meth:`EpisodeServers.close_all`) or when a turn replaces it after
    it died (:meth:`EpisodeServers.restart`); it then closes in the background, and its stop is
    reported whenever that ends: it carries the last turn that used the session (``served``), or
    none when no turn did, never the turn that happens to run by then.
    """

    events: EventSink
    served: int | None = None
    released: bool = False

    def emit(self, event_type: str, /, **fields: Any) -> None:
        if self.released:
            fields.setdefault("turn", self.served)  # None: no turn (EventRecorder.emit)
        self.events.emit(event_type, **fields)

    def log(self, level: str, message: str, /) -> None:
        self.events.log(level, message)


class EpisodeServers:
    """The ``per_episode`` sessions of one episode, owned by :meth:`McpManager.open_episode`.

    Pass it to :meth:`McpManager.open_turn` in the same ``trio.run`` to borrow the sessions.
    """

    def __init__(
        self,
        nursery: anyio.abc.TaskGroup,
        settings: McpSettings,
        events: EventSink,
        *,
        prewarm: bool = False,
        reported: set[tuple[str, str]] | None = None,
        sampling: SamplingPolicy | None = None,
    ) -> None:
        self._nursery = nursery
        self._sampling = sampling
        self._settings = settings
        self._events = events
        self._reported = reported if reported is not None else set()
        """The tools left out already reported this episode (shared with the manager's toolboxes)."""
        self._handles: dict[str, ServerHandle] = {}
        self._sinks: dict[ServerHandle, _EpisodeSessionEvents] = {}
        """The event sink of each session started by :meth:`start_session` (by its handle)."""
        self._prewarm = prewarm
        self._spares: dict[str, Spare] = {}
        self._gate = TeardownGate(MAX_CONCURRENT_TEARDOWNS)
        self._own_toolbox: tuple[list[tuple[ServerSession, tuple[Any, ...]]], Toolbox] | None = None
        """The last :meth:`toolbox` and what it was built from: a game call every turn need not
        build the tool table again (about 0.2 ms each) while no session or tool list changed."""
        self.pools: dict[str, httpx2.AsyncBaseTransport] = {}
        """One connection pool per remote server for the whole episode (its ``per_episode`` session
        and every ``per_turn`` session borrow it), owned by :meth:`McpManager.open_episode`."""
        self.zygote: ZygoteGroup | None = None
        """The zygotes the episode's embedded servers are forked from (:mod:`zorkmcp.mcp._zygote`),
        owned by :meth:`McpManager.open_episode` or its caller (``None``: spawned with ``Popen``)."""

    @property
    def prewarm(self) -> bool:
        """Whether ``per_turn`` servers are prewarmed (see :mod:`zorkmcp.mcp._prewarm`)."""
        return self._prewarm

    @property
    def spares(self) -> Mapping[str, Spare]:
        """The background session waiting for the next turn, per ``per_turn`` server."""
        return dict(self._spares)

    @property
    def closing(self) -> int:
        """Used sessions closing in the background now (at most ``MAX_CONCURRENT_TEARDOWNS`` until
        the episode ends)."""
        return self._gate.closing

    def warm(self, server: ServerConfig) -> None:
        """Start the next turn's session of ``server`` in the background (at most one spare)."""
        self.drop_spare(server.name)
        self._spares[server.name] = self._start_spare(server)

    def take_spare(self, server: ServerConfig, turn: int | None = None) -> Spare:
        """The spare waiting for ``turn`` (started now if there is none); the next one starts now.

        Once started, the spare's events carry ``turn`` (its start has none: it is prewarmed).
        """
        spare = self._spares.pop(server.name, None)
        if spare is None:
            spare = self._start_spare(server)
        spare.turn = turn
        self.warm(server)
        return spare

    def _start_spare(self, server: ServerConfig) -> Spare:
        pool = self.pools.get(server.name)
        return start_spare(
            self._nursery,
            server,
            self._settings,
            self._events,
            gate=self._gate,
            pool=pool,
            zygote=self.zygote,
            sampling=self._sampling,
        )

    def drop_spare(self, name: str) -> None:
        """Release the spare of server ``name``, if any (it closes in the background)."""
        spare = self._spares.pop(name, None)
        if spare is not None:
            spare.release()

    def release_spares(self) -> list[Spare]:
        """Release every spare (they close in the background) and return them."""
        released = list(self._spares.values())
        for spare in released:
            spare.release()
        self._spares.clear()
        return released

    def session_of(self, name: str) -> ServerSession | None:
        """The current session of ``per_episode`` server ``name`` (``None`` if it is not running)."""
        handle = self._handles.get(name)
        return handle.session if handle is not None else None

    def needs_start(self, name: str) -> bool:
        """Whether ``per_episode`` server ``name`` has no live session."""
        session = self.session_of(name)
        return session is None or not session.alive

    def adopt(self, handles: Mapping[str, ServerHandle]) -> None:
        """Take ``handles`` (started into this episode's nursery) as the episode's sessions."""
        self._handles.update(handles)

    async def start_session(self, server: ServerConfig) -> ServerHandle:
        """Start a session of ``per_episode`` server ``server`` into the episode (one attempt).

        Its stop, in the background, carries the last turn that used it (:meth:`serve`).

        Raises:
            MCPServerStartupError: the server did not start.
        """
        events = _EpisodeSessionEvents(self._events)
        handle = await start_server(
            self._nursery,
            server,
            self._settings,
            events=events,
            pool=self.pools.get(server.name),
            zygote=self.zygote,
            sampling=self._sampling,
        )
        self._sinks[handle] = events
        return handle

    def serve(self, names: Iterable[str], turn: int) -> None:
        """Turn ``turn`` uses the sessions of ``per_episode`` servers ``names`` (those running)."""
        for name in names:
            handle = self._handles.get(name)
            sink = self._sinks.get(handle) if handle is not None else None
            if sink is not None:
                sink.served = turn

    def _let_go(self, handle: ServerHandle) -> None:
        """The episode no longer uses ``handle``: from now on its events carry its last turn."""
        sink = self._sinks.pop(handle, None)
        if sink is not None:
            sink.released = True

    async def restart(self, server: ServerConfig, attempts: _Attempts, turn: int) -> None:
        """Replace the dead session of ``server`` (if any) by a new one started under ``attempts``."""
        old = self._handles.pop(server.name, None)
        if old is not None:
            self._events.log(
                "WARNING",
                f"Turn {turn}: restarting MCP server '{server.name}': {old.session.describe_death()}",
            )
            self._events.emit("mcp_server_restart", server=server.name, turn=turn)
            self._let_go(old)
            self._nursery.start_soon(self._close_when_allowed, old)
        handle = await attempts.run(partial(self.start_session, server))
        if handle is not None:
            self._handles[server.name] = handle

    async def _close_when_allowed(self, handle: ServerHandle) -> None:
        async with self._gate.slot() as slot:
            await slot.acquire()
            handle.close()
            await handle.wait_closed()

    @property
    def sessions(self) -> Mapping[str, ServerSession]:
        """The current session of each running ``per_episode`` server."""
        return {name: handle.session for name, handle in self._handles.items()}

    def toolbox(self) -> Toolbox:
        """Every tool of the running ``per_episode`` servers, allow-lists ignored.

        For the program's own calls (the orchestrator's ``zork.play_action``, which the agent is
        not offered, and the game's ``status``); the agent gets its tools from
        :meth:`McpManager.open_turn`. Their results are not cut to ``max_result_bytes``: that cap is
        on what the model is shown, and a cut ``status`` would no longer be the JSON object the
        episode loop reads.
        """
        sessions = [handle.session for handle in self._handles.values()]
        key = [(session, session.tools) for session in sessions]
        cached = self._own_toolbox
        if cached is not None and _same(key, cached[0]):
            return cached[1]  # the same sessions with the same tool lists: the same table
        toolbox = Toolbox(
            sessions,
            evolve(self._settings, max_result_bytes=_OWN_CALLS_RESULT_BYTES),
            events=self._events,
            apply_allow_list=False,
            reported=self._reported,
        )
        self._own_toolbox = (key, toolbox)
        return toolbox

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any],
        *,
        timeout: float | None = None,  # noqa: ASYNC109 - the contract: per-tool default, scope inside
    ) -> ToolCallResult:
        """Call any tool of a ``per_episode`` server (see :meth:`toolbox` and :meth:`Toolbox.call_tool`).

        The result is whole: ``max_result_bytes`` does not apply to the program's own calls.

        Args:
            name: canonical (``zork.play_action``) or wire name.
            arguments: the tool's arguments.
            timeout: seconds (default: the tool's timeout).
        """
        return await self.toolbox().call_tool(name, arguments, timeout=timeout)

    def close_all(self) -> None:
        """The episode ends: release every spare and session; all close at once (the gate opens)."""
        self.release_spares()
        self._gate.open()
        for handle in self._handles.values():
            self._let_go(handle)
            handle.close()


def _same(key: Sequence[tuple[object, object]], cached: Sequence[tuple[object, object]]) -> bool:
    """Whether two keys hold the very same objects (identity: a tool list listed again is a new tuple)."""
    return len(key) == len(cached) and all(
        a is b and c is d for (a, c), (b, d) in zip(key, cached, strict=True)
    )


@define
class _TurnPlan:
    """Which servers a turn starts itself, takes from spares, and borrows from the episode."""

    active: list[ServerConfig]
    own: list[ServerConfig]
    warm: list[ServerConfig]
    shared: list[ServerConfig]
    fail_fast: bool

    @classmethod
    def of(cls, active: list[ServerConfig], episode: EpisodeServers | None, *, fail_fast: bool) -> _TurnPlan:
        warm_mode = episode is not None and episode.prewarm
        return cls(
            active=active,
            own=[s for s in active if episode is None or (s.lifecycle == "per_turn" and not warm_mode)],
            warm=[s for s in active if warm_mode and s.lifecycle == "per_turn"],
            shared=[s for s in active if episode is not None and s.lifecycle == "per_episode"],
            fail_fast=fail_fast,
        )


class McpManager:
    """Starts the configured MCP servers for turns and episodes and applies the failure policy.

    Args:
        config: the servers (``mcp_config.json``).
        settings: ``[tool.zorkgpt.mcp]``.
        events: where events and log lines go (default: nowhere; pass an ``EventRecorder`` to keep them).
        sampler: answers the ``sampling/createMessage`` requests of the servers with ``"sampling":
            true`` (:class:`~zorkmcp.mcp._sampling.ModelSampler` of the episode's model); ``None``:
            no server is told the client can sample, and a warning names those that ask for it.

    Attributes:
        turn: turns opened in this episode so far.
    """

    def __init__(
        self,
        config: McpConfig,
        settings: McpSettings,
        *,
        events: EventSink | None = None,
        sampler: Sampler | None = None,
    ) -> None:
        self.config = config
        self.settings = settings
        self._events = events if events is not None else NullSink()
        self._sampling = SamplingPolicy(sampler, turn=lambda: self.turn) if sampler is not None else None
        self._told_no_sampler = False
        self._excluded: set[tuple[str, str]] = set()
        """The tools left out (``mcp_tool_excluded``) already reported this episode: each toolbox
        (one per turn, one more when a tool list changes, one for the program's own calls) leaves
        them out again, and reports each once."""
        self.turn = 0
        self._health: dict[str, _Health] = {}
        self._told_tool_count = False
        self.reset()

    def reset(self) -> None:
        """Start a new episode: turn counter, retry state and disabled servers are cleared, and what is
        said once per episode (a tool left out, too many tools) will be said again."""
        self.turn = 0
        self._health = {server.name: _Health() for server in self.config.enabled_servers}
        self._excluded = set()
        self._told_tool_count = False
        self._told_no_sampler = False

    def _check_sampler(self) -> None:
        """Warn, once per episode, that servers asking for sampling get none: no model was given."""
        if self._sampling is not None or self._told_no_sampler:
            return
        asking = [server.name for server in self.config.enabled_servers if server.sampling]
        if not asking:
            return
        self._told_no_sampler = True
        names = ", ".join(repr(name) for name in asking)
        self._events.log(
            "WARNING",
            f'MCP server(s) {names} ask for sampling ("sampling": true), but the MCP layer was given no '
            "model: sampling is off (the capability is not declared, so such a server may offer fewer tools)",
        )

    @property
    def is_disabled(self) -> bool:
        """Whether MCP is off for the rest of the episode: every server has been disabled (seeds 000)."""
        return bool(self._health) and all(health.disabled for health in self._health.values())

    def is_server_disabled(self, name: str) -> bool:
        """Whether server ``name`` has been disabled for the rest of the episode."""
        health = self._health.get(name)
        return health is not None and health.disabled

    def _active(self) -> list[ServerConfig]:
        return [server for server in self.config.enabled_servers if not self._health[server.name].disabled]

    def _policy(
        self,
        *,
        fail_fast: bool,
        pools: Mapping[str, httpx2.AsyncBaseTransport] | None = None,
        zygote: ZygoteGroup | None = None,
    ) -> _StartOne:
        async def start_one(nursery: anyio.abc.TaskGroup, server: ServerConfig) -> ServerHandle | None:
            attempts = _Attempts(self, server, fail_fast)
            pool = pools.get(server.name) if pools is not None else None
            start = partial(
                start_server,
                nursery,
                server,
                self.settings,
                events=self._events,
                pool=pool,
                zygote=zygote,
                sampling=self._sampling,
            )
            return await attempts.run(start)

        return start_one

    def _episode_policy(self, episode: EpisodeServers) -> _StartOne:
        """How :meth:`open_episode` starts its ``per_episode`` servers (fail fast, as a first turn)."""

        async def start_one(nursery: anyio.abc.TaskGroup, server: ServerConfig) -> ServerHandle | None:
            del nursery  # the episode's own
            return await _Attempts(self, server, fail_fast=True).run(partial(episode.start_session, server))

        return start_one

    def _disable(self, server: ServerConfig, turn: int, error: MCPServerStartupError) -> None:
        """Requirements 6.9, 6.10: the retry failed too; the server is off for the rest of the episode."""
        self._health[server.name].disabled = True
        self._events.log(
            "WARNING",
            f"Turn {turn}: MCP server '{server.name}' failed again, "
            f"disabling it for the rest of the episode: {error}",
        )
        self._events.emit(
            "mcp_disabled_fallback",
            server=server.name,
            turn=turn,
            error=str(error),
            all_disabled=self.is_disabled,
        )

    @asynccontextmanager
    async def open_episode(
        self, *, prewarm: bool = True, zygotes: ZygoteGroup | None = None
    ) -> AsyncIterator[EpisodeServers]:
        """Start the ``per_episode`` servers for a whole episode (used by ``bridge.Bridge``).

        Resets the episode state (:meth:`reset`); a server that fails to start here raises, as on
        the first turn. Leaving the context ends them.

        Args:
            prewarm: start each ``per_turn`` server's next session in the background, so that a
                turn opened with this episode finds it ready (:mod:`zorkmcp.mcp._prewarm`).
            zygotes: zygotes to fork the episode's servers from, owned by the caller and open for
                longer than the episode (``zorkmcp eval`` opens them once per run, see
                :func:`open_zygotes`). ``None``: the episode opens its own, for its ``per_turn``
                servers.

        Raises:
            MCPServerStartupError: a ``per_episode`` server did not start.
        """
        self.reset()
        self._check_sampler()
        active = self._active()
        servers = [s for s in active if s.lifecycle == "per_episode"]
        with _plain_errors():
            # The episode's pools and zygote are opened before its nursery: every session closes first.
            async with AsyncExitStack() as resources:
                pools = {  # one pool per remote server, for all of its sessions
                    server.name: await resources.enter_async_context(open_remote_pool())
                    for server in active
                    if server.remote
                }
                if zygotes is None:
                    zygotes = await resources.enter_async_context(
                        open_zygotes(active, self._events, lifecycles=("per_turn",))
                    )
                async with anyio.create_task_group() as nursery:
                    episode = EpisodeServers(
                        nursery,
                        self.settings,
                        self._events,
                        prewarm=prewarm,
                        reported=self._excluded,
                        sampling=self._sampling,
                    )
                    episode.pools.update(pools)
                    episode.zygote = zygotes if zygotes.zygotes else None
                    try:
                        if prewarm:
                            for server in self._active():
                                if server.lifecycle == "per_turn":
                                    episode.warm(server)
                        episode.adopt(await _start_all(nursery, servers, self._episode_policy(episode)))
                        yield episode
                    finally:
                        episode.close_all()

    @asynccontextmanager
    async def open_turn(self, episode: EpisodeServers | None = None) -> AsyncIterator[Toolbox]:
        """Start this turn's servers concurrently and yield their tools.

        ``per_turn`` servers start in a nursery inside this context and end when it is left.
        ``per_episode`` servers are borrowed from ``episode`` (restarted there if they died); without
        an episode they are started for this turn only.

        Args:
            episode: the running episode's servers, from :meth:`open_episode` in the same ``trio.run``.

        Raises:
            MCPServerStartupError: on the first turn, a server did not start.
        """
        self.turn += 1
        self._check_sampler()
        plan = _TurnPlan.of(self._active(), episode, fail_fast=self.turn <= 1)
        toolbox: Toolbox | None = None
        closing_at: float | None = None
        cut_short = False
        with _plain_errors():
            try:
                async with anyio.create_task_group() as nursery:
                    start = anyio.current_time()
                    handles: dict[str, ServerHandle] = {}
                    taken: dict[str, Spare] = {}
                    try:
                        try:
                            await self._start_turn(plan, episode, nursery, handles, taken)
                        except BaseException as exc:
                            cut_short = _cancelled(exc)  # a turn's deadline, Ctrl-C: no failed start
                            raise
                        if episode is not None:
                            episode.serve((server.name for server in plan.shared), self.turn)
                        toolbox = self._turn_toolbox(plan, episode, handles, taken)
                        toolbox.startup_seconds = anyio.current_time() - start
                        self._check_tool_count(toolbox)
                        yield toolbox
                    finally:
                        closing_at = anyio.current_time()
                        await _end_turn(episode, handles, taken, failed=toolbox is None and not cut_short)
            finally:
                if toolbox is not None and closing_at is not None:
                    self._report_teardown(toolbox, closing_at, plan.own)

    async def _start_turn(
        self,
        plan: _TurnPlan,
        episode: EpisodeServers | None,
        nursery: anyio.abc.TaskGroup,
        handles: dict[str, ServerHandle],
        taken: dict[str, Spare],
    ) -> None:
        """Start, take or restart every server of ``plan`` concurrently."""
        async with anyio.create_task_group() as starters:
            if plan.own:
                starters.start_soon(self._start_into, handles, nursery, plan.own, plan.fail_fast, episode)
            if episode is None:
                return
            for server in plan.warm:
                starters.start_soon(self._take_spare, episode, server, plan.fail_fast, taken)
            for server in plan.shared:
                if episode.needs_start(server.name):
                    starters.start_soon(
                        episode.restart, server, _Attempts(self, server, plan.fail_fast), self.turn
                    )

    def _turn_toolbox(
        self,
        plan: _TurnPlan,
        episode: EpisodeServers | None,
        handles: Mapping[str, ServerHandle],
        taken: Mapping[str, Spare],
    ) -> Toolbox:
        """The turn's tools, in configuration order."""
        sessions: list[ServerSession] = []
        for server in plan.active:
            session: ServerSession | None = None
            if server in plan.shared and episode is not None:
                session = episode.session_of(server.name)
            elif server.name in handles:
                session = handles[server.name].session
            elif (spare := taken.get(server.name)) is not None:
                session = spare.session
            if session is not None:
                sessions.append(session)
        return Toolbox(sessions, self.settings, events=self._events, reported=self._excluded)

    def _check_tool_count(self, toolbox: Toolbox) -> None:
        """Warn, once per episode, when the model is offered more tools than OpenAI's API takes."""
        if self._told_tool_count or len(toolbox.tools) <= MAX_OPENAI_TOOLS:
            return
        self._told_tool_count = True
        counts = tools_per_server(info.server for info in toolbox.tools)
        self._events.log(
            "WARNING",
            f"Turn {self.turn}: {len(toolbox.tools)} MCP tools are offered to the model "
            f"({_shown_counts(counts)}); {too_many_tools_advice()}",
        )
        self._events.emit(
            "mcp_too_many_tools",
            turn=self.turn,
            tools=len(toolbox.tools),
            limit=MAX_OPENAI_TOOLS,
            servers=counts,
        )

    def _report_teardown(self, toolbox: Toolbox, closing_at: float, own: Sequence[ServerConfig]) -> None:
        toolbox.teardown_seconds = anyio.current_time() - closing_at
        self._events.emit(
            "mcp_turn_teardown",
            turn=self.turn,
            servers=[s.name for s in own],
            teardown_ms=round(toolbox.teardown_seconds * 1000, 1),
        )

    async def _take_spare(
        self, episode: EpisodeServers, server: ServerConfig, fail_fast: bool, taken: dict[str, Spare]
    ) -> None:
        """Give this turn the prewarmed session of ``server`` and start the next one.

        A spare that failed to start, or died while waiting, counts as a failed start of this turn:
        the first turn raises; later turns retry once (the spare just started for the next turn
        serves as the retry) and then disable the server.
        """
        try:
            spare = await _Attempts(self, server, fail_fast).run(
                partial(_ready_spare, episode, server, self.turn)
            )
        except MCPServerStartupError:
            episode.drop_spare(server.name)
            raise
        if spare is None:
            episode.drop_spare(server.name)  # a disabled server gets no more spares
        else:
            taken[server.name] = spare

    async def _start_into(
        self,
        handles: dict[str, ServerHandle],
        nursery: anyio.abc.TaskGroup,
        servers: Sequence[ServerConfig],
        fail_fast: bool,
        episode: EpisodeServers | None,
    ) -> None:
        if episode is None:
            policy = self._policy(fail_fast=fail_fast)
        else:
            policy = self._policy(fail_fast=fail_fast, pools=episode.pools, zygote=episode.zygote)
        handles.update(await _start_all(nursery, servers, policy))


async def _ready_spare(episode: EpisodeServers, server: ServerConfig, turn: int) -> Spare:
    """One start attempt of ``turn`` through a spare: its session once ready, or its failure raised."""
    spare = episode.take_spare(server, turn)
    try:
        await spare.wait_ready()
    except BaseException:
        # Cancelled while the spare starts (Ctrl-C, a deadline): it is neither this turn's nor the
        # episode's any more, so release it here or the episode's nursery never ends.
        spare.release()
        raise
    if spare.session is not None and spare.session.alive:
        return spare
    spare.release()
    raise spare.error or MCPServerStartupError(
        f"MCP server '{server.name}' died before its turn: "
        + (spare.session.describe_death() if spare.session is not None else "no session"),
        server=server.name,
        command=" ".join((server.command or "", *server.args)).strip(),
    )


async def _end_turn(
    episode: EpisodeServers | None,
    handles: Mapping[str, ServerHandle],
    taken: Mapping[str, Spare],
    *,
    failed: bool,
) -> None:
    """Leave a turn: its sessions are released (spares close in the episode, in the background).

    ``failed``: a server did not start (an error, not a cancellation). A start cut short by the
    turn's deadline leaves the episode's other spares for the next turn and waits for none of them:
    the turn ends at its deadline (Ctrl-C ends the episode, which stops them all).
    """
    if failed and episode is not None:
        # The turn failed to start (Requirement 6.1 ends the episode): no spare waits for a next
        # turn, and the caller sees no process left.
        released = [*episode.release_spares(), *taken.values()]
        for spare in taken.values():
            spare.release()
        with anyio.CancelScope(shield=True), anyio.move_on_after(SPARE_CLOSE_WAIT):
            for spare in released:
                await spare.wait_closed()
    for spare in taken.values():
        spare.release()  # closed by its own task in the episode, off the critical path
    for handle in handles.values():
        handle.close()


@asynccontextmanager
async def open_toolbox(
    servers: Sequence[ServerConfig],
    settings: McpSettings,
    *,
    events: EventSink | None = None,
    sampler: Sampler | None = None,
) -> AsyncIterator[Toolbox]:
    """Start ``servers`` concurrently and yield their tools, without any retry policy.

    The lower-level sibling of :meth:`McpManager.open_turn`, for one-off use (``zorkmcp tools``,
    ``zorkmcp call``, scripts). Leaving the context ends every server.

    Args:
        servers: the servers to start (``McpConfig.enabled_servers``, for instance).
        settings: timeouts and the result cap.
        events: where events and log lines go.
        sampler: answers the sampling requests of servers with ``"sampling": true`` (see
            :class:`McpManager`; the per-turn limit is then per session); ``None``: none is asked.

    Raises:
        MCPServerStartupError: a server did not start (the first one in ``servers`` order).
        ConfigError: two servers have one name (as :class:`~zorkmcp.config.McpConfig` refuses).
    """
    events = events if events is not None else NullSink()
    servers = McpConfig(servers=tuple(servers)).servers  # its checks: one name, one server
    sampling = SamplingPolicy(sampler) if sampler is not None else None

    async def start_one(nursery: anyio.abc.TaskGroup, server: ServerConfig) -> ServerHandle | None:
        return await start_server(nursery, server, settings, events=events, sampling=sampling)

    toolbox: Toolbox | None = None
    closing_at: float | None = None
    with _plain_errors():
        try:
            async with anyio.create_task_group() as nursery:
                start = anyio.current_time()
                handles = await _start_all(nursery, servers, start_one)
                try:
                    toolbox = Toolbox(
                        [handles[s.name].session for s in servers if s.name in handles],
                        settings,
                        events=events,
                    )
                    toolbox.startup_seconds = anyio.current_time() - start
                    yield toolbox
                finally:
                    closing_at = anyio.current_time()
                    for handle in handles.values():
                        handle.close()
        finally:
            if toolbox is not None and closing_at is not None:
                toolbox.teardown_seconds = anyio.current_time() - closing_at


@asynccontextmanager
async def open_zygotes(
    servers: Iterable[ServerConfig], events: EventSink, *, lifecycles: Collection[str] = ("per_turn",)
) -> AsyncIterator[ZygoteGroup]:
    """One zygote per module that a stdio server of ``servers`` can be forked from; leaving ends them.

    Eligible: a server with one of ``lifecycles`` whose command is ``python -m MODULE`` with
    ``MODULE`` in :data:`~zorkmcp.mcp._zygote.ZYGOTE_MODULES`, and whose ``PYTHON*`` variables are
    those of a server without ``env``. A zygote that does not start is a warning, not a failure:
    its servers are then spawned as usual (the group may be empty). The zygotes start with the
    environment a server without ``env`` gets (secrets withheld).

    Args:
        servers: the servers that will be started (an episode's, or a whole eval run's).
        events: where ``mcp_zygote_started`` and the warnings go.
        lifecycles: the lifecycles worth a zygote: ``per_turn`` always; ``per_episode`` too when
            the zygote outlives many episodes (``zorkmcp eval``).
    """
    env, _ = build_server_env({}, os.environ)
    modules = sorted(
        {
            module
            for server in servers
            if server.type == "stdio"
            and server.lifecycle in lifecycles
            and (module := zygote_module(server.command or "", server.args)) is not None
            and same_python_vars(build_server_env(server.env, os.environ)[0], env)
        }
    )
    async with AsyncExitStack() as stack:
        zygotes = []
        if zygote_supported():
            for module in modules:
                try:
                    zygote = await stack.enter_async_context(open_zygote([module], env=env))
                except ZygoteGone as exc:
                    events.log("WARNING", f"MCP servers are spawned one by one: {exc}")
                    continue
                events.emit("mcp_zygote_started", pid=zygote.pid, modules=[module])
                zygotes.append(zygote)
        yield ZygoteGroup(zygotes)
