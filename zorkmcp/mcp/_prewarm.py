"""Prewarmed ``per_turn`` sessions: the next turn's server starts while this turn runs.

A fresh ``per_turn`` process costs its spawn + ``initialize`` + ``tools/list`` (about 50 ms for the
embedded stdlib server, about a second for an MCP SDK server, 250–900 ms for a node server), and
its close. Inside a long-lived owner (``bridge.Bridge``, through
:meth:`~zorkmcp.mcp.McpManager.open_episode`) neither needs to be on the turn's critical path:

* while turn N runs, turn N+1's process for each ``per_turn`` server is spawned, initialized and
  its tools listed in the background: a *spare*, never used before its turn;
* turn N takes its spare at once (or waits for the rest of its start-up), and the spare for turn
  N+1 is started right then;
* when turn N is done with its session, the session is released and closed by its owning task in
  the episode's nursery, after the turn has returned. At most :data:`MAX_CONCURRENT_TEARDOWNS` used
  sessions close at once (a :class:`TeardownGate` owned by the episode): a released session waits
  for its turn to close, still alive, off every turn's critical path. When the episode ends the gate
  opens and every session closes at once, within the transport's teardown bound.

Every turn still gets its own fresh process; there is at most one spare per server; spares end
with the episode. A spare's events never carry the turn that happens to run when they are
reported: those of its start have no ``turn`` (it starts in the background, for a later turn, even
when that turn comes before it is ready), and from then on they carry the turn that took it (its
stop and what the server says during and after that turn), or none if no turn did.

A spare that failed to start (or died before its turn) is handled like a failed start in that
turn: the first turn raises, later turns retry once and then disable the server.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import anyio.to_thread
from attrs import Factory, define

from zorkmcp.errors import MCPServerStartupError

from ._session import ServerSession, _only_exceptions, open_server_session, report_stop_failure

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    import httpx2

    from zorkmcp.config import McpSettings, ServerConfig
    from zorkmcp.observability import EventSink

    from ._sampling import SamplingPolicy
    from ._zygote import Forker


__all__ = ["MAX_CONCURRENT_TEARDOWNS", "Spare", "TeardownGate", "start_spare"]

MAX_CONCURRENT_TEARDOWNS = 4
"""How many used sessions of one episode may be closing at the same time (until the episode ends)."""


class TeardownGate:
    """Lets at most ``limit`` sessions close at once, until :meth:`open` lets every one close now.

    Args:
        limit: sessions closing at the same time.
    """

    def __init__(self, limit: int = MAX_CONCURRENT_TEARDOWNS) -> None:
        self._limiter = anyio.CapacityLimiter(limit)
        self._open = False
        self._waiting: set[anyio.CancelScope] = set()
        self._closing = 0

    @property
    def closing(self) -> int:
        """Sessions closing now (each holds a token, or the gate is open)."""
        return self._closing

    def open(self) -> None:
        """The episode ends: every session waiting for a token, and every later one, closes at once."""
        self._open = True
        for scope in self._waiting:
            scope.cancel()

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[_Slot]:
        """A place in the queue, entered before the session it will close; left after that session."""
        slot = _Slot(self)
        try:
            yield slot
        finally:
            slot.leave()


class _Slot:
    def __init__(self, gate: TeardownGate) -> None:
        self._gate = gate
        self._held = False
        self._counted = False

    async def acquire(self) -> None:
        """Wait until this session may close (a token, or the gate opened)."""
        gate = self._gate
        with anyio.CancelScope() as wait:
            if gate._open:
                wait.cancel()
            gate._waiting.add(wait)
            try:
                await gate._limiter.acquire_on_behalf_of(self)
                self._held = True
            finally:
                gate._waiting.discard(wait)
        gate._closing += 1
        self._counted = True

    def leave(self) -> None:
        if self._counted:
            self._gate._closing -= 1
            self._counted = False
        if self._held:
            self._gate._limiter.release_on_behalf_of(self)
            self._held = False


@define(eq=False)
class Spare:
    """One background session of a ``per_turn`` server, owned by its own task in the episode nursery.

    Attributes:
        server: what was started.
        session: the ready session (``None`` until ready, or when the start failed).
        error: why the start failed.
        turn: the turn that took this spare (``None`` until one did); its events after its start
            carry it.
    """

    server: ServerConfig
    session: ServerSession | None = None
    error: MCPServerStartupError | None = None
    turn: int | None = None
    _ready: anyio.Event = Factory(anyio.Event)
    _release: anyio.Event = Factory(anyio.Event)
    _done: anyio.Event = Factory(anyio.Event)
    _cancel: anyio.CancelScope = Factory(anyio.CancelScope)

    async def wait_ready(self) -> None:
        """Wait until the session is ready or its start failed."""
        await self._ready.wait()

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def release(self) -> None:
        """End the session (returns at once; the owning task closes it in the background).

        A spare still starting is cancelled; a ready one is closed gracefully (stdin EOF first).
        """
        self._release.set()
        if not self._ready.is_set():
            self._cancel.cancel()

    @property
    def closed(self) -> bool:
        return self._done.is_set()

    async def wait_closed(self) -> None:
        await self._done.wait()


@define
class _SpareEvents:
    """The event sink of one spare: no ``turn`` while it starts, then the turn that took it.

    The spare starts during the turn before the one it serves and closes after that one has
    returned; the recorder's context then names a turn the session has nothing to do with.
    """

    events: EventSink
    spare: Spare

    def emit(self, event_type: str, /, **fields: Any) -> None:
        turn = self.spare.turn if self.spare.ready else None  # None: no turn (EventRecorder.emit)
        fields.setdefault("turn", turn)
        self.events.emit(event_type, **fields)

    def log(self, level: str, message: str, /) -> None:
        self.events.log(level, message)


async def _own(
    spare: Spare,
    settings: McpSettings,
    events: EventSink,
    gate: TeardownGate,
    pool: httpx2.AsyncBaseTransport | None,
    zygote: Forker | None,
    sampling: SamplingPolicy | None,
) -> None:
    started = False
    events = _SpareEvents(events, spare)
    try:
        async with gate.slot() as slot:
            with spare._cancel:
                async with open_server_session(
                    spare.server, settings, events=events, pool=pool, zygote=zygote, sampling=sampling
                ) as session:
                    spare.session = session
                    started = True
                    spare._ready.set()
                    await spare._release.wait()
                    await slot.acquire()  # still alive until a token frees up (or the episode ends)
    except MCPServerStartupError as exc:
        spare.error = exc  # handled by the turn that takes this spare
    except BaseException as exc:
        if not started or not _only_exceptions(exc):
            raise
        # The session already served its turn; a failure while closing it must not end the episode.
        report_stop_failure(events, spare.server.name, exc)
    finally:
        spare._ready.set()
        spare._done.set()


def start_spare(
    nursery: anyio.abc.TaskGroup,
    server: ServerConfig,
    settings: McpSettings,
    events: EventSink,
    *,
    gate: TeardownGate | None = None,
    pool: httpx2.AsyncBaseTransport | None = None,
    zygote: Forker | None = None,
    sampling: SamplingPolicy | None = None,
) -> Spare:
    """Start ``server`` in the background in a task of ``nursery``; returns at once.

    Args:
        nursery: the owner of the spare's task (the episode's nursery).
        server: what to start.
        settings: startup timeout.
        events: where events go.
        gate: bounds how many used sessions close at once (default: no bound).
        pool: a remote server's connection pool, owned by the episode (default: the session's own).
        zygote: the episode's zygote (default: the server is spawned with ``Popen``).
        sampling: the episode's sampler (see :func:`~._session.open_server_session`).
    """
    spare = Spare(server)
    gate = gate if gate is not None else TeardownGate(limit=1_000_000)
    nursery.start_soon(
        _own, spare, settings, events, gate, pool, zygote, sampling, name=f"zorkmcp-spare-{server.name}"
    )
    return spare
