"""One MCP server: transport (stdio subprocess or in-process), ``ClientSession``, startup and shutdown.

The building blocks, from low to high:

* :func:`open_server_session` — an async context manager: start one server, ``initialize()`` then
  ``tools/list`` (seeds 000 §MCP SDK Integration; property 8), all bounded by
  ``server_startup_timeout_seconds``; any failure before it yields is a plain
  :class:`~zorkmcp.errors.MCPServerStartupError` naming the server, the command, the exit status and
  the last stderr lines. Leaving it ends the server (property 9).
* :func:`start_server` — runs :func:`open_server_session` in a task of a nursery you own and gives
  back a :class:`ServerHandle` once the server is ready. This is how servers start concurrently, and
  how a longer-lived owner (an episode, or a future prewarmer) can start a session in the
  background, hand it to a turn, and close it off the critical path.
"""

from __future__ import annotations

import errno
import importlib
import math
import os
import signal
import sys
from contextlib import AsyncExitStack, asynccontextmanager, nullcontext
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.abc
import anyio.to_thread
import mcp_types
from attrs import define, field
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError as SdkMCPError
from mcp.shared.memory import create_client_server_memory_streams

from zorkmcp.errors import MCPServerStartupError, exception_leaves
from zorkmcp.observability import EventSink, NullSink

from ._env import build_server_env
from ._notifications import ServerNotifications
from ._remote import RemoteStatus, open_remote_pool, open_remote_transport, remote_startup_error
from ._stdio import ProcessInfo, open_stdio_transport

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Awaitable, Callable, Mapping

    import httpx2
    from mcp.client._transport import ReadStream, WriteStream
    from mcp.server.lowlevel import Server
    from mcp.shared.message import SessionMessage

    from zorkmcp.config import McpSettings, RemoteKind, ServerConfig

    from ._zygote import Forker

__all__ = [
    "INPROCESS_SHUTDOWN_GRACE",
    "ServerHandle",
    "ServerSession",
    "list_all_tools",
    "open_server_session",
    "start_server",
]

INPROCESS_SHUTDOWN_GRACE = 1.0
"""Seconds an in-process server gets to finish after its input closes before it is cancelled."""
_MAX_TOOL_PAGES = 100
_CLIENT_INFO = mcp_types.Implementation(name="zorkmcp", version="0.1.0")


@define(kw_only=True, eq=False)
class ServerSession:
    """A started server: its ``ClientSession``, its tools and what we know about its process.

    Attributes:
        config: the server's configuration.
        client: the SDK session (initialized).
        tools: the server's tools as listed at startup (before the allow-list).
        process: the subprocess (``None`` for ``inprocess`` servers).
        startup_seconds: spawn (or connect) + initialize + tools/list.
        failure: why the connection is unusable, once it is.
        notes: the server's notifications as events (logs, progress, a changed tool list).
        remote: what the HTTP layer saw (remote servers only; ``session_expired`` after a 404).
    """

    config: ServerConfig
    client: ClientSession
    tools: tuple[mcp_types.Tool, ...]
    process: ProcessInfo | None
    startup_seconds: float
    failure: str | None = None
    _finished: anyio.Event | None = field(default=None, alias="finished")
    notes: ServerNotifications | None = None
    remote: RemoteStatus | None = None
    _reconnect: Callable[[], Awaitable[bool]] | None = field(default=None, alias="reconnect")

    @property
    def name(self) -> str:
        """The server's name in ``mcp_config.json``."""
        return self.config.name

    @property
    def alive(self) -> bool:
        """Whether calls can still reach the server."""
        if self.failure is not None:
            return False
        if self.process is not None:
            return self.process.running and self.process.protocol_error is None
        return self._finished is None or not self._finished.is_set()

    async def renew(self) -> bool:
        """A remote session the server forgot (HTTP 404): open a new one, once; whether it worked.

        The task that owns the connection opens it; calls made meanwhile wait. Stdio and in-process
        sessions cannot be renewed (``False``).
        """
        if self._reconnect is None:
            return False
        return await self._reconnect()

    def describe_death(self) -> str:
        """A sentence for an error result: which server is gone and what it said last."""
        parts = [f"MCP server '{self.name}' is not running"]
        if self.process is not None and self.process.protocol_error is not None:
            parts = [f"MCP server '{self.name}' {self.process.protocol_error}; it was stopped"]
        if self.process is not None and self.process.returncode is not None:
            parts[0] += f" ({_ended(self.process.returncode)})"
        if self.failure:
            parts.append(self.failure)
        if self.process is not None and self.process.stderr_tail:
            parts.append("last stderr lines: " + " | ".join(self.process.stderr_tail[-5:]))
        return "; ".join(parts)


@define(eq=False)
class ServerHandle:
    """A server running in a task started by :func:`start_server`.

    :meth:`close` asks the task to end the session; :meth:`wait_closed` waits until the server and
    every process it started are gone.
    """

    session: ServerSession
    _stop: anyio.Event = field(alias="stop")
    _done: anyio.Event = field(alias="done")

    def close(self) -> None:
        """Ask the owning task to end the session (returns at once)."""
        self._stop.set()

    @property
    def closed(self) -> bool:
        """Whether the session has ended and the server is gone."""
        return self._done.is_set()

    async def wait_closed(self) -> None:
        """Wait until the session has ended."""
        await self._done.wait()


def _hint(command: str) -> str:
    program = os.path.basename(command)
    if program in ("npx", "node", "npm"):
        return " (Node.js >= 20 is needed for this server)"
    if program in ("uvx", "uv"):
        return " (uv is needed for this server: https://docs.astral.sh/uv/)"
    return ""


def _reason(exc: BaseException, server: ServerConfig) -> str:
    cancelled = anyio.get_cancelled_exc_class()
    leaves = [leaf for leaf in exception_leaves(exc) if not isinstance(leaf, cancelled)] or [exc]
    leaf = leaves[0]
    if isinstance(leaf, FileNotFoundError) and server.type == "stdio":
        return f"command not found: {server.command!r}{_hint(server.command or '')}"
    if isinstance(leaf, PermissionError) and server.type == "stdio":
        return f"permission denied running {server.command!r}"
    if isinstance(leaf, SdkMCPError):
        if leaf.code == mcp_types.CONNECTION_CLOSED:
            return "the server closed the connection during startup"
        return f"the server answered with an error: {leaf.message} (code {leaf.code})"
    if isinstance(leaf, MCPServerStartupError):
        return str(leaf)
    if isinstance(leaf, OSError) and leaf.errno in (errno.EMFILE, errno.ENFILE):
        return (
            f"{type(leaf).__name__}: {leaf} (each server takes a few file descriptors: allow more open "
            "files, `ulimit -n`, or run fewer episodes at once, --concurrency)"
        )
    if isinstance(leaf, OSError) and leaf.errno == errno.EAGAIN and server.type == "stdio":
        return (
            f"{type(leaf).__name__}: {leaf} (no process could be started: allow more processes, "
            "`ulimit -u`, or run fewer episodes at once, --concurrency)"
        )
    return f"{type(leaf).__name__}: {leaf}"


def _ended(exit_status: int) -> str:
    """How a process ended: ``exit status 3``, or ``killed by SIGTERM`` for a status of -15."""
    if exit_status >= 0:
        return f"exit status {exit_status}"
    try:
        return f"killed by {signal.Signals(-exit_status).name}"
    except ValueError:
        return f"killed by signal {-exit_status}"


def _startup_error(server: ServerConfig, info: ProcessInfo | None, reason: str) -> MCPServerStartupError:
    if server.type == "inprocess":
        command = f"inprocess {server.module}"
    elif info is not None:
        command = info.command_line
    else:
        command = " ".join([server.command or "", *server.args])
    exit_status = info.returncode if info is not None else None
    tail = info.stderr_tail if info is not None else ()
    lines = [f"Failed to start MCP server '{server.name}': {reason}", f"Command: {command}"]
    if exit_status is not None:  # a negative status is the signal that ended it (-15: SIGTERM)
        lines.append(f"Exit status: {exit_status}" + (f" ({_ended(exit_status)})" if exit_status < 0 else ""))
    if tail:
        lines.append("Last stderr lines:")
        lines.extend(f"  {line}" for line in tail[-10:])
    return MCPServerStartupError(
        "\n".join(lines), server=server.name, command=command, exit_status=exit_status, stderr_tail=tail
    )


async def list_all_tools(client: ClientSession) -> tuple[mcp_types.Tool, ...]:
    """Every tool of an initialized session, following ``nextCursor`` (at most 100 pages)."""
    tools: list[mcp_types.Tool] = []
    cursor: str | None = None
    for _ in range(_MAX_TOOL_PAGES):
        params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
        result = await client.list_tools(params=params)
        tools.extend(result.tools)
        cursor = result.next_cursor
        if not cursor:
            break
    return tuple(tools)


async def _load_factory(spec: str) -> Callable[[], Any]:
    module_name, sep, attr_path = spec.rpartition(":")
    if not sep or not module_name or not attr_path:
        raise ValueError(f"inprocess module must look like 'package.module:factory', got {spec!r}")
    module = sys.modules.get(module_name)
    if module is None:
        module = await anyio.to_thread.run_sync(importlib.import_module, module_name)
    target: Any = module
    for attr in attr_path.split("."):
        target = getattr(target, attr)
    if not callable(target):
        raise TypeError(f"{spec!r} is not callable")
    return cast("Callable[[], Any]", target)


def _lowlevel_server(obj: Any, spec: str) -> Server[Any]:
    from mcp.server.lowlevel import Server
    from mcp.server.mcpserver import MCPServer

    if isinstance(obj, MCPServer):
        # The SDK's own in-memory transport unwraps MCPServer the same way (mcp/client/_memory.py).
        lowlevel: Server[Any] = obj._lowlevel_server
        return lowlevel
    if isinstance(obj, Server):
        return obj
    raise TypeError(f"{spec!r} returned {type(obj).__name__}, expected an mcp Server or MCPServer")


async def _run_inprocess(
    server: Server[Any],
    read: ReadStream[SessionMessage | Exception],
    write: WriteStream[SessionMessage],
    name: str,
    finished: anyio.Event,
    events: EventSink,
) -> None:
    try:
        await server.run(read, write, server.create_initialization_options(), raise_exceptions=False)
    except Exception as exc:  # noqa: BLE001
        # An in-process server that crashes ends its session (calls get error results), not the turn.
        events.emit("mcp_server_died", server=name, reason=f"the in-process server crashed: {exc!r}")
        events.log("ERROR", f"in-process MCP server '{name}' crashed: {exc!r}")
    finally:
        finished.set()
        await _close_quietly(write)


async def _close_quietly(stream: WriteStream[Any]) -> None:
    with anyio.CancelScope(shield=True):
        await stream.aclose()


async def _build_inprocess(server: ServerConfig) -> Server[Any]:
    """A fresh server object for one session, made in a worker thread (a factory may read files).

    Built before the start-up deadline starts: a worker thread cannot be cancelled anyway, and the
    deadline then bounds what it is for, the MCP handshake.
    """
    spec = server.module or ""
    factory = server.factory if server.factory is not None else await _load_factory(spec)
    return _lowlevel_server(await anyio.to_thread.run_sync(factory), spec)


@asynccontextmanager
async def _open_inprocess_transport(
    server: ServerConfig, lowlevel: Server[Any], finished: anyio.Event, events: EventSink
) -> AsyncIterator[tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]]]:
    async with create_client_server_memory_streams() as (client_streams, server_streams):
        client_read, client_write = client_streams
        server_read, server_write = server_streams
        async with anyio.create_task_group() as nursery:
            nursery.start_soon(
                _run_inprocess, lowlevel, server_read, server_write, server.name, finished, events
            )
            try:
                yield client_read, client_write
            finally:
                # EOF the server instead of cancelling it (as mcp/client/_memory.py does); bounded.
                with anyio.CancelScope(shield=True):
                    await client_write.aclose()
                    with anyio.move_on_after(INPROCESS_SHUTDOWN_GRACE):
                        await finished.wait()
                nursery.cancel_scope.cancel()


def report_stop_failure(events: EventSink, server: str, exc: BaseException) -> None:
    """A session that already served its turn failed while closing: an event, never a turn failure."""
    error = f"{type(exc).__name__}: {exc}"
    events.emit("mcp_server_stop_failed", server=server, error=error)
    events.log("ERROR", f"MCP server '{server}' failed while shutting down: {error}")


def _only_exceptions(exc: BaseException) -> bool:
    """True when every leaf is an ``Exception`` (no cancellation, KeyboardInterrupt, SystemExit)."""
    return all(isinstance(leaf, Exception) for leaf in exception_leaves(exc))


_Streams = tuple["ReadStream[SessionMessage | Exception]", "WriteStream[SessionMessage]"]


@define(kw_only=True, eq=False)
class _Opening:
    """What a start-up knows so far (for its error message): the process, the HTTP status."""

    info: ProcessInfo | None = None
    status: RemoteStatus | None = None
    finished: anyio.Event | None = None


async def _enter_stdio(
    stack: AsyncExitStack,
    server: ServerConfig,
    opening: _Opening,
    events: EventSink,
    options: _Options,
) -> _Streams:
    if not server.command:
        raise ValueError("a stdio server needs a 'command'")
    env, withheld = build_server_env(server.env, options.base_env)
    if withheld:
        # Requirement 3.2: say which names were withheld, never their values.
        events.emit("mcp_env_withheld", server=server.name, names=list(withheld))
        events.log("DEBUG", f"MCP server '{server.name}': withheld variables {', '.join(withheld)}")
    opening.info = ProcessInfo(command=(server.command, *server.args), withheld_env=withheld)
    read, write, _ = await stack.enter_async_context(
        open_stdio_transport(
            server.command, server.args, env=env, cwd=server.cwd, info=opening.info, zygote=options.zygote
        )
    )
    return read, write


async def _enter_remote(
    stack: AsyncExitStack,
    server: ServerConfig,
    opening: _Opening,
    events: EventSink,
    pool: httpx2.AsyncBaseTransport,
) -> _Streams:
    read, write, opening.status = await stack.enter_async_context(
        open_remote_transport(
            name=server.name,
            url=server.url or "",
            kind=cast("RemoteKind", server.type),
            headers=server.headers,
            pool=pool,
            events=events,
        )
    )
    return read, write


async def _enter_transport(
    stack: AsyncExitStack,
    server: ServerConfig,
    lowlevel: Server[Any] | None,
    opening: _Opening,
    events: EventSink,
    options: _Options,
) -> _Streams:
    if lowlevel is not None:
        opening.finished = anyio.Event()
        return await stack.enter_async_context(
            _open_inprocess_transport(server, lowlevel, opening.finished, events)
        )
    return await _enter_stdio(stack, server, opening, events, options)


@define(kw_only=True, frozen=True)
class _Options:
    base_env: Mapping[str, str]
    pool: httpx2.AsyncBaseTransport | None
    zygote: Forker | None = None


def _failure(
    server: ServerConfig, opening: _Opening, exc: BaseException | None, reason: str | None
) -> MCPServerStartupError:
    if server.remote:
        return remote_startup_error(
            exc or TimeoutError(reason),
            name=server.name,
            url=server.url or "",
            headers=server.headers,
            status=opening.status,
            reason=reason,
            kind=cast("RemoteKind", server.type),
        )
    if reason is None and opening.info is not None and opening.info.protocol_error is not None:
        reason = f"the server {opening.info.protocol_error}; it was stopped"
    if reason is None:
        reason = _reason(exc, server) if exc is not None else "unknown failure"
    return _startup_error(server, opening.info, reason)


def _started(server: ServerConfig, session: ServerSession, events: EventSink) -> None:
    info = session.process
    events.emit(
        "mcp_server_started",
        server=server.name,
        pid=info.pid if info else None,
        zygote_pid=info.zygote_pid if info else None,
        startup_ms=round(session.startup_seconds * 1000, 1),
        tools=[tool.name for tool in session.tools],
    )


def _stopped(server: ServerConfig, info: ProcessInfo | None, events: EventSink) -> None:
    fields: dict[str, Any] = {"server": server.name}
    if info is not None:
        fields.update(
            pid=info.pid,
            exit_status=info.returncode,
            escalation=info.escalation,
            strays_killed=info.strays_killed,
            teardown_ms=round((info.teardown_seconds or 0.0) * 1000, 1),
        )
    events.emit("mcp_server_stopped", **fields)


def _client_session(read: Any, write: Any, notes: ServerNotifications) -> ClientSession:
    return ClientSession(
        read, write, client_info=_CLIENT_INFO, logging_callback=notes.on_log, message_handler=notes.on_message
    )


@define(kw_only=True, eq=False)
class _Reconnect:
    """The link between a remote session's callers and the task that owns its connection."""

    session: ServerSession | None = None
    request: anyio.Event = field(factory=anyio.Event)
    done: anyio.Event = field(factory=anyio.Event)
    closing: bool = False

    async def __call__(self) -> bool:
        """Open a new MCP session in the owning task (after an expiry); whether it worked."""
        if self.closing or self.session is None or self.session.failure is not None:
            return False
        self.done = anyio.Event()
        self.request.set()
        await self.done.wait()
        return self.session.failure is None


async def _hold_remote(
    server: ServerConfig,
    opening: _Opening,
    events: EventSink,
    options: _Options,
    notes: ServerNotifications,
    link: _Reconnect,
    *,
    task_status: anyio.abc.TaskStatus[ClientSession],
) -> None:
    """Own a remote server's connection; open a fresh MCP session each time ``link`` asks for one."""
    first = True
    async with open_remote_pool() if options.pool is None else nullcontext(options.pool) as pool:
        while not link.closing:
            link.request = anyio.Event()
            try:
                async with AsyncExitStack() as stack:
                    read, write = await _enter_remote(stack, server, opening, events, pool)
                    client = await stack.enter_async_context(_client_session(read, write, notes))
                    await client.initialize()
                    if first:
                        task_status.started(client)
                        first = False
                    else:
                        _reconnected(link, client, opening, events)
                    await link.request.wait()
            except Exception as exc:
                if first:
                    raise
                _reconnect_failed(link, server, exc, opening, events)
                return


def _reconnected(link: _Reconnect, client: ClientSession, opening: _Opening, events: EventSink) -> None:
    assert link.session is not None
    link.session.client = client
    link.session.remote = opening.status
    events.emit("mcp_session_renewed", server=link.session.name)
    events.log("INFO", f"MCP server '{link.session.name}': the session expired; a new one is open")
    link.done.set()


def _reconnect_failed(
    link: _Reconnect, server: ServerConfig, exc: Exception, opening: _Opening, events: EventSink
) -> None:
    error = remote_startup_error(
        exc, name=server.name, url=server.url or "", headers=server.headers, status=opening.status
    )
    reason = str(error).splitlines()[0].removeprefix(f"Failed to start MCP server '{server.name}': ")
    if error.command not in reason:
        reason += f" at {error.command}"  # the URL, as shown (no user info, query or fragment)
    if link.session is not None:
        forgot = link.session.remote is not None and link.session.remote.session_expired
        what = "the server forgot the MCP session, and a new one" if forgot else "a new MCP session"
        link.session.failure = f"{what} failed: {reason}"
    events.log("ERROR", f"MCP server '{server.name}': {reason}")
    link.done.set()


@asynccontextmanager
async def _connect_remote(
    server: ServerConfig, opening: _Opening, events: EventSink, options: _Options
) -> AsyncIterator[ServerSession]:
    start = anyio.current_time()
    notes = ServerNotifications(server.name, events)
    link = _Reconnect()
    async with anyio.create_task_group() as owner:
        client = await owner.start(_hold_remote, server, opening, events, options, notes, link)
        try:
            tools = await list_all_tools(client)
            link.session = ServerSession(
                config=server,
                client=client,
                tools=tools,
                process=None,
                startup_seconds=anyio.current_time() - start,
                notes=notes,
                remote=opening.status,
                reconnect=link,
            )
            yield link.session
        finally:
            link.closing = True  # the owner leaves its session normally (Streamable HTTP: DELETE)
            link.request.set()


@asynccontextmanager
async def _connect(
    server: ServerConfig,
    lowlevel: Server[Any] | None,
    opening: _Opening,
    events: EventSink,
    options: _Options,
) -> AsyncIterator[ServerSession]:
    """Transport, ``ClientSession``, initialize, ``tools/list`` (the caller bounds the time)."""
    if server.remote:
        async with _connect_remote(server, opening, events, options) as session:
            yield session
        return
    start = anyio.current_time()
    notes = ServerNotifications(server.name, events)
    async with AsyncExitStack() as stack:
        read, write = await _enter_transport(stack, server, lowlevel, opening, events, options)
        client = await stack.enter_async_context(_client_session(read, write, notes))
        await client.initialize()  # property 8: the handshake comes before discovery
        tools = await list_all_tools(client)
        yield ServerSession(
            config=server,
            client=client,
            tools=tools,
            process=opening.info,
            startup_seconds=anyio.current_time() - start,
            finished=opening.finished,
            notes=notes,
        )


@asynccontextmanager
async def open_server_session(
    server: ServerConfig,
    settings: McpSettings,
    *,
    events: EventSink | None = None,
    base_env: Mapping[str, str] | None = None,
    pool: httpx2.AsyncBaseTransport | None = None,
    zygote: Forker | None = None,
) -> AsyncIterator[ServerSession]:
    """Start one MCP server and yield its initialized session with its tools listed.

    Args:
        server: the server's configuration (``stdio``, ``inprocess``, or remote ``http`` / ``sse``).
        settings: ``server_startup_timeout_seconds`` bounds connect or spawn + initialize + tools/list.
        events: where events go (``mcp_server_started``, ``mcp_server_stopped``, ``mcp_env_withheld``,
            and the server's notifications).
        base_env: the environment to merge the server's ``env`` into (default ``os.environ``).
        pool: a remote server's connection pool from :func:`~zorkmcp.mcp._remote.open_remote_pool`,
            owned by the episode; without one the session opens (and closes) its own.
        zygote: the episode's zygote (:mod:`zorkmcp.mcp._zygote`); a stdio server it accepts is
            forked from it instead of spawned.

    Raises:
        MCPServerStartupError: the server did not start (plain, never inside an exception group).
    """
    events = events if events is not None else NullSink()
    timeout = settings.server_startup_timeout_seconds
    options = _Options(base_env=os.environ if base_env is None else base_env, pool=pool, zygote=zygote)
    opening = _Opening()
    session: ServerSession | None = None
    try:
        lowlevel = await _build_inprocess(server) if server.type == "inprocess" else None
        with anyio.CancelScope(deadline=anyio.current_time() + timeout) as startup_scope:
            async with _connect(server, lowlevel, opening, events, options) as session:
                startup_scope.deadline = math.inf
                _started(server, session, events)
                yield session
        if session is None:  # only the startup deadline gets here
            raise _failure(
                server, opening, None, f"no answer to initialize and tools/list within {timeout:g}s"
            )
    except BaseException as exc:
        if session is not None or isinstance(exc, MCPServerStartupError) or not _only_exceptions(exc):
            raise
        raise _failure(server, opening, exc, None) from exc
    finally:
        if session is not None:
            _stopped(server, opening.info, events)


async def _serve(
    server: ServerConfig,
    settings: McpSettings,
    events: EventSink | None,
    pool: httpx2.AsyncBaseTransport | None,
    zygote: Forker | None,
    *,
    task_status: anyio.abc.TaskStatus[ServerHandle] = anyio.TASK_STATUS_IGNORED,
) -> None:
    stop, done = anyio.Event(), anyio.Event()
    started = False
    try:
        async with open_server_session(server, settings, events=events, pool=pool, zygote=zygote) as session:
            task_status.started(ServerHandle(session, stop=stop, done=done))
            started = True
            await stop.wait()
    except BaseException as exc:
        if not started or not _only_exceptions(exc):
            raise
        # The session already ended; an error while closing it must not take down the turn.
        report_stop_failure(events if events is not None else NullSink(), server.name, exc)
    finally:
        done.set()


async def start_server(
    nursery: anyio.abc.TaskGroup,
    server: ServerConfig,
    settings: McpSettings,
    *,
    events: EventSink | None = None,
    pool: httpx2.AsyncBaseTransport | None = None,
    zygote: Forker | None = None,
) -> ServerHandle:
    """Start a server in a new task of ``nursery`` and return once it is ready.

    The task owns the session (entered and left in that one task) until :meth:`ServerHandle.close`
    or until ``nursery`` is cancelled; either way teardown is complete when the task ends.

    Args:
        nursery: the owner of the server's task (a turn's or an episode's nursery).
        server: what to start.
        settings: startup timeout.
        events: where events go.
        pool: a remote server's connection pool, owned by the caller (see :func:`open_server_session`).
        zygote: the episode's zygote, owned by the caller (see :func:`open_server_session`).

    Raises:
        MCPServerStartupError: the server did not start.
    """
    handle: ServerHandle = await nursery.start(_serve, server, settings, events, pool, zygote)
    return handle
