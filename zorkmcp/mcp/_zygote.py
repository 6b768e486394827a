"""The owner's side of the zygote: a preloaded Python process that forks servers.

A ``per_turn`` server must be a fresh process every turn. For the embedded ``think`` server
(``python -m zorkmcp.servers.thinking``, standard library only) most of that cost is the
interpreter starting up, paid again on every spawn. The zygote
(:mod:`zorkmcp.servers._zygote`) starts the interpreter and imports the server's module once;
each session is then an ``os.fork()`` of it: still a fresh process with its own state, in its own
session and process group, with its own environment and working directory. An episode opens one
for its ``per_turn`` servers (:meth:`~zorkmcp.mcp.McpManager.open_episode`); ``zorkmcp eval`` opens
one per server module for the whole run (:func:`~zorkmcp.mcp.open_zygotes`, grouped in a
:class:`ZygoteGroup`), including one for the game server when an arm's ``mcp_config.json`` runs it
as a process (the eval's own games run in its process), which imports Jericho in
``zygote_preload`` (110 → 12 ms of CPU per game server start).

Why we wrote our own: the measurement (``.venv/bin/python benchmarks/bench_zygote.py 400``; one
stdio-transport session per spawn, entered and left at once; CPU time of our process, of the
reaped children and of the zygote with the children it reaped; the two alternate in blocks of 20;
four runs of 40 to 400 spawns each on a 2-core VM, Python 3.11.7):

* ``Popen`` of ``python -m zorkmcp.servers.thinking``: 23.8-24.8 ms of CPU per spawn, of which
  1.8-1.9 ms in our own process.
* forked by the zygote: 3.2-3.5 ms of CPU per spawn, of which 1.3 ms in our own process (the
  transport's tasks, the same in both): about 2 ms for the zygote and the child.
* starting (and closing) a zygote, once per episode: about 32 ms of CPU.

``multiprocessing``'s ``forkserver`` would give a similar saving but not the process model the
stdio transport relies on: it reaps its children itself as soon as they exit (so a group kill
after the exit could hit a reused process-group ID), does not start them in their own session, and
runs ``Process`` targets rather than a server's ``main`` on the pipes we hand it.

What the transport keeps (see :mod:`zorkmcp.mcp._stdio`): the child runs in its own session; the
owner waits on a pidfd; the zygote never reaps on its own, so the child stays a zombie until the
owner has killed its process group and asks for the reap (the group ID cannot have been reused);
teardown is the transport's usual bounded sequence. The pidfd of a child is opened while the
zygote holds it unreaped, and checked against the zygote still being alive, so it always names the
right process.

Limits: the child inherits the zygote's interpreter state, so variables that only matter when an
interpreter starts (``PYTHONPATH``, ``PYTHONHASHSEED``, ...) must match the zygote's:
:meth:`Zygote.accepts` turns down a server whose ``PYTHON*`` variables differ (it is then spawned
normally); every child shares the zygote's hash seed. ``/proc/<pid>/environ`` of a forked child
shows the zygote's environment, not the child's: the transport's token scan finds the processes a
server *starts*, not the server itself (which it tracks by its pidfd anyway); likewise ``ps``
shows a forked server with the zygote's command line. If the zygote dies, its children are
re-parented and reaped by init: their sessions end normally, but their process groups are then
only signalled through the leader's pidfd, never by group ID. If the owner dies (``kill -9``), the
zygote sees its socket close and kills what it holds; the owner's guard (:mod:`zorkmcp._pidfds`)
kills the zygote and its children as well: the zygote's environment carries the owner's
``ZORKMCP_OWNER`` token, and its children show that environment.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import select
import signal
import socket
import subprocess
import sys
from contextlib import asynccontextmanager
from typing import IO, TYPE_CHECKING, Any, Protocol

import anyio
import anyio.abc
import anyio.lowlevel
import anyio.to_thread

from .._pidfds import OWNER_ENV_VAR, ensure_guard, owner_token
from ._events import logger

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping, Sequence

__all__ = [
    "STARTS_NO_PROCESS",
    "ZYGOTE_EXIT_GRACE",
    "ZYGOTE_MODULES",
    "ZYGOTE_START_TIMEOUT",
    "Forker",
    "Zygote",
    "ZygoteChild",
    "ZygoteGone",
    "ZygoteGroup",
    "open_zygote",
    "same_python_vars",
    "zygote_module",
    "zygote_supported",
]

ZYGOTE_MODULES: tuple[str, ...] = ("zorkmcp.servers.thinking", "zorkmcp.game.server")
"""Server modules that may be forked from a zygote (``python -m MODULE``): the embedded think
server, and the game server (a process per episode when an arm's ``mcp_config.json`` runs it)."""
STARTS_NO_PROCESS: frozenset[str] = frozenset(ZYGOTE_MODULES)
"""Modules whose server starts no process of its own: a server forked as one of them can leave no
stray behind, so its teardown does not walk ``/proc`` for one (:mod:`._sweep`). Those walks read
every process on the machine: at K = 64 episodes (``benchmarks/bench_eval.py``, a fresh ``think``
server per turn) they were 3-5 ms of all CPU per turn (steady 11-14 → 8-9 ms). A server of
another module a zygote preloads (the tests' misbehaving server) is still walked for."""
ZYGOTE_START_TIMEOUT = 10.0
"""Seconds the zygote gets to import its modules; after that the episode spawns servers normally."""
ZYGOTE_EXIT_GRACE = 1.0
"""Seconds the zygote gets to exit once its socket is closed, before it is killed."""
_REPLY_TIMEOUT = 5.0
"""Seconds to wait for the answer to a spawn request (the zygote answers right after ``fork``)."""
_KILL_GRACE = 0.2
_RECEIVE_SIZE = 65536


class ZygoteGone(OSError):
    """The zygote cannot start this server (it is not running, never started, or the request is too
    large for its socket): spawn the server another way."""


def zygote_supported() -> bool:
    """Whether this platform can run a zygote: pidfds, ``fork``, ``SOCK_SEQPACKET`` (Linux)."""
    return (
        sys.platform.startswith("linux")
        and hasattr(os, "pidfd_open")
        and hasattr(os, "fork")
        and hasattr(socket, "SOCK_SEQPACKET")
        and hasattr(socket, "send_fds")
    )


def zygote_module(command: str, args: Sequence[str], modules: Sequence[str] = ZYGOTE_MODULES) -> str | None:
    """The module a zygote could fork for this command line, or ``None``.

    Eligible: ``command`` is this interpreter (the configuration maps ``python`` and ``python3`` to
    it) and ``args`` are ``["-m", MODULE, ...]`` with ``MODULE`` in ``modules``.

    Args:
        command: the server's program.
        args: its arguments.
        modules: the modules that may be preloaded.
    """
    if command != sys.executable or len(args) < 2 or args[0] != "-m":
        return None
    return args[1] if args[1] in modules else None


def _python_vars(env: Mapping[str, str]) -> dict[str, str]:
    return {name: value for name, value in env.items() if name.startswith("PYTHON")}


def same_python_vars(env: Mapping[str, str], zygote_env: Mapping[str, str]) -> bool:
    """Whether a server's environment has the zygote's ``PYTHON*`` variables, no more, no fewer.

    They are read when an interpreter starts; a forked child keeps what the zygote read.

    Args:
        env: the server's full environment.
        zygote_env: the zygote's.
    """
    return _python_vars(env) == _python_vars(zygote_env)


def _exited(pidfd: int) -> bool:
    """Whether the process behind ``pidfd`` has exited (a pidfd is readable then); never blocks."""
    poller = select.poll()  # not select.select: an episode-heavy process has fds above 1024
    poller.register(pidfd, select.POLLIN)
    try:
        events = poller.poll(0)
    except OSError:  # pragma: no cover - poll itself failed
        return True
    done = select.POLLIN | select.POLLHUP | select.POLLERR | select.POLLNVAL
    return any(mask & done for _, mask in events)


class ZygoteChild:
    """A server process forked by the zygote: what the stdio transport needs to own it.

    Attributes:
        pid: the child's PID (also its process-group ID and session ID).
        pidfd: a pidfd for it; the caller owns it (and closes it).
        stdin: our end of its stdin (unbuffered, blocking until the transport sets it otherwise).
        stdout: our end of its stdout.
        stderr: our end of its stderr.
        status: its exit status once known (negative: killed by that signal), ``None`` before, or
            when the zygote died first.
    """

    def __init__(self, zygote: Zygote, pid: int, pidfd: int, pipes: tuple[int, int, int]) -> None:
        self._zygote = zygote
        self.pid = pid
        self.pidfd = pidfd
        self.stdin: IO[bytes] = os.fdopen(pipes[0], "wb", buffering=0)
        self.stdout: IO[bytes] = os.fdopen(pipes[1], "rb", buffering=0)
        self.stderr: IO[bytes] = os.fdopen(pipes[2], "rb", buffering=0)
        self.status: int | None = None
        self._exited = anyio.Event()
        self._reaped = False
        self._reap_done = anyio.Event()

    @property
    def zygote_pid(self) -> int:
        """The PID of the zygote that forked this child."""
        return self._zygote.pid

    @property
    def held(self) -> bool:
        """Whether the zygote still holds this child unreaped, so its PID and group ID are its own.

        ``False`` once it was reaped, or once the zygote died (init reaps orphans at once).
        """
        return not self._reaped and self._zygote.alive

    def _report(self, status: int | None) -> None:
        if not self._exited.is_set():
            self.status = status
            self._exited.set()

    async def wait(self) -> int | None:
        """Wait for the zygote's exit report, then have it reap the child; its exit status.

        Call it once the child has exited (its pidfd is readable) and its group has been killed.
        Returns once the child is reaped (by the zygote, or by init if the zygote died).

        Returns:
            The exit status, or ``None`` when the zygote died before reporting it.
        """
        await self._exited.wait()
        if not self._reaped:
            self._reaped = True
            self._zygote._reaping[self.pid] = self
            await self._zygote._request({"op": "reap", "pid": self.pid})
            if self._zygote._gone:
                self._reap_done.set()  # init reaps the orphans of a dead zygote
        await self._reap_done.wait()
        return self.status


class Zygote:
    """A running zygote (from :func:`open_zygote`): forks preloaded servers on request.

    Attributes:
        pid: the zygote's PID.
        modules: the modules it preloaded.
        env: the environment it was started with.
    """

    def __init__(
        self,
        process: subprocess.Popen[bytes],
        pidfd: int,
        control: socket.socket,
        modules: Sequence[str],
        env: Mapping[str, str],
    ) -> None:
        self.pid = process.pid
        self.modules = tuple(modules)
        self.env = dict(env)
        self._process = process
        self._pidfd: int | None = pidfd
        self._control = control
        self._lock = anyio.Lock()
        self._reply: dict[str, Any] | None = None
        self._replied = anyio.Event()
        self._ready = anyio.Event()
        self._failure: str | None = None
        self._gone = False
        self._children: dict[int, ZygoteChild] = {}
        """Adopted children whose exit has not been reported yet."""
        self._early: dict[int, int] = {}
        """Exit statuses reported before the spawner adopted the child."""
        self._reaping: dict[int, ZygoteChild] = {}
        """Children the zygote was asked to reap."""

    @property
    def alive(self) -> bool:
        """Whether the zygote is running (checked on its pidfd: exact, never blocks)."""
        return not self._gone and self._pidfd is not None and not _exited(self._pidfd)

    def accepts(self, command: str, args: Sequence[str], env: Mapping[str, str]) -> str | None:
        """The module to fork for this server, or ``None`` if it must be spawned normally.

        Args:
            command: the server's program.
            args: its arguments.
            env: its full environment; its ``PYTHON*`` variables must be the zygote's.
        """
        module = zygote_module(command, args, self.modules)
        if module is None or not same_python_vars(env, self.env):
            return None
        return module

    async def spawn(
        self, module: str, argv: Sequence[str], env: Mapping[str, str], cwd: str | None
    ) -> ZygoteChild:
        """Fork a fresh process running ``module.main(argv)``, in its own session.

        Once the request is sent, nothing is cancelled until the answer is in: a cancellation is
        seen by the caller's next checkpoint, after it owns the child.

        Args:
            module: a preloaded module.
            argv: its arguments (``sys.argv[1:]`` in the child).
            env: the child's whole environment.
            cwd: its working directory (``None``: the zygote's).

        Raises:
            ZygoteGone: the zygote is not running; nothing was started.
            OSError: the zygote could not fork.
        """
        async with self._lock:
            if not self.alive:
                raise ZygoteGone(f"the zygote (pid {self.pid}) is not running")
            request = {"op": "spawn", "module": module, "argv": list(argv), "env": dict(env), "cwd": cwd}
            stdin_r, stdin_w = os.pipe()
            stdout_r, stdout_w = os.pipe()
            stderr_r, stderr_w = os.pipe()
            ours = (stdin_w, stdout_r, stderr_r)
            pid: int | None = None
            try:
                with anyio.CancelScope(shield=True):
                    try:
                        reply = await self._exchange(request, (stdin_r, stdout_w, stderr_w))
                    finally:
                        for fd in (stdin_r, stdout_w, stderr_w):
                            os.close(fd)
                pid = self._spawned_pid(reply)
                return self._adopt(pid, ours)
            except BaseException:
                if pid is None:
                    for fd in ours:
                        os.close(fd)
                raise

    async def _exchange(self, request: dict[str, Any], fds: tuple[int, int, int]) -> dict[str, Any]:
        self._reply = None
        self._replied = anyio.Event()
        await self._request(request, fds)
        with anyio.move_on_after(_REPLY_TIMEOUT):
            await self._replied.wait()
        if self._reply is None:
            self._gone = True  # no answer: never pair a late one with the next request
            raise ZygoteGone(f"the zygote (pid {self.pid}) died or did not answer a spawn request")
        return self._reply

    def _spawned_pid(self, reply: dict[str, Any]) -> int:
        if reply.get("op") == "spawned":
            return int(reply["pid"])
        raise OSError(reply.get("errno") or 0, f"the zygote could not start the server: {reply.get('error')}")

    def _adopt(self, pid: int, ours: tuple[int, int, int]) -> ZygoteChild:
        """Own the child just forked: its pidfd, opened while the zygote holds it unreaped."""
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            pidfd = None
        if pidfd is None or not self.alive:
            # The zygote died since it answered: the PID may already belong to someone else. Our
            # pipe ends close below; a child still running reads EOF and exits on its own.
            if pidfd is not None:
                os.close(pidfd)
            for fd in ours:
                os.close(fd)
            raise ZygoteGone(f"the zygote (pid {self.pid}) died while starting a server")
        child = ZygoteChild(self, pid, pidfd, ours)
        if pid in self._early:
            child._report(self._early.pop(pid))
        else:
            self._children[pid] = child
        return child

    async def _request(self, message: dict[str, Any], fds: Sequence[int] = ()) -> None:
        """Send one message (with ``fds`` attached); a dead zygote marks it gone (no error)."""
        data = json.dumps(message).encode()
        await anyio.lowlevel.checkpoint()
        while not self._gone:
            try:
                if fds:
                    socket.send_fds(self._control, [data], list(fds))
                else:
                    self._control.send(data)
                return
            except BlockingIOError:
                await anyio.wait_writable(self._control)
            except OSError as exc:
                if exc.errno == errno.EMSGSIZE:  # an environment larger than the socket's buffer
                    raise ZygoteGone(f"a request of {len(data)} bytes is too large for the zygote") from exc
                self._lost()
        if fds:
            raise ZygoteGone(f"the zygote (pid {self.pid}) is not running")

    def _lost(self) -> None:
        """The zygote is gone: every waiter learns it now (statuses unknown)."""
        self._gone = True
        self._ready.set()
        self._replied.set()
        for child in self._children.values():
            child._report(None)
        for child in self._reaping.values():
            child._reap_done.set()

    def _dispatch(self, message: dict[str, Any]) -> None:
        op = message.get("op")
        if op == "ready":
            self._ready.set()
        elif op == "failed":
            self._failure = str(message.get("error", "")).strip()
            self._lost()
        elif op in ("spawned", "error"):
            self._reply = message
            self._replied.set()
        elif op == "exited":
            pid, status = int(message["pid"]), int(message["status"])
            child = self._children.pop(pid, None)
            if child is not None:
                child._report(status)
            else:
                self._early[pid] = status  # the spawner has not adopted it yet: see _adopt
        elif op == "reaped":
            reaped = self._reaping.pop(int(message["pid"]), None)
            if reaped is not None:
                reaped._reap_done.set()

    async def _read(self) -> None:
        """Read the zygote's messages until it closes its end (then it is gone).

        Cancelled (the run is stopping, Ctrl-C), the zygote is not said to have exited: it has not,
        and it is closed next by its owner.
        """
        try:
            while True:
                try:
                    data = self._control.recv(_RECEIVE_SIZE)
                except BlockingIOError:
                    await anyio.wait_readable(self._control)
                    continue
                except OSError:
                    break
                if not data:
                    break
                try:
                    message = json.loads(data)
                except ValueError:
                    logger.warning(
                        "zygote (pid %d) sent a message that is not JSON: %r", self.pid, data[:200]
                    )
                    continue
                self._dispatch(message)
        except BaseException:
            self._lost()
            raise
        if not self._gone:  # its end closed, not by us: it crashed or was killed
            logger.warning("zygote (pid %d) exited; servers are spawned with Popen from now on", self.pid)
        self._lost()


class Forker(Protocol):
    """What the stdio transport forks servers from: a :class:`Zygote` or a :class:`ZygoteGroup`."""

    def accepts(self, command: str, args: Sequence[str], env: Mapping[str, str]) -> str | None: ...

    async def spawn(
        self, module: str, argv: Sequence[str], env: Mapping[str, str], cwd: str | None
    ) -> ZygoteChild: ...


class ZygoteGroup:
    """Zygotes that each preloaded their own modules: a server is forked by the one that has its module.

    One zygote per module keeps every forked process small: a think server forked from the game
    server's zygote would carry Jericho and numpy (about 15 MB more resident memory each).
    The group owns nothing; each zygote is owned by whoever opened it.
    """

    def __init__(self, zygotes: Sequence[Zygote] = ()) -> None:
        self.zygotes = tuple(zygotes)
        self._by_module = {module: zygote for zygote in reversed(self.zygotes) for module in zygote.modules}

    def accepts(self, command: str, args: Sequence[str], env: Mapping[str, str]) -> str | None:
        """The module to fork for this server, or ``None`` (see :meth:`Zygote.accepts`)."""
        module = zygote_module(command, args, tuple(self._by_module))
        if module is None:
            return None
        return self._by_module[module].accepts(command, args, env)

    async def spawn(
        self, module: str, argv: Sequence[str], env: Mapping[str, str], cwd: str | None
    ) -> ZygoteChild:
        """Fork ``module`` from the zygote that preloaded it (see :meth:`Zygote.spawn`).

        Raises:
            ZygoteGone: no zygote of the group preloaded ``module``, or it is not running.
            OSError: the zygote could not fork.
        """
        zygote = self._by_module.get(module)
        if zygote is None:
            raise ZygoteGone(f"no zygote preloaded {module!r}")
        return await zygote.spawn(module, argv, env, cwd)


def _start(
    modules: Sequence[str], fd: int, env: Mapping[str, str], cwd: str | None
) -> subprocess.Popen[bytes]:
    ensure_guard()  # before the first process this owner starts (see zorkmcp._pidfds)
    return subprocess.Popen(
        [sys.executable, "-m", "zorkmcp.servers._zygote", str(fd), *modules],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,  # it reports a failed start on the socket; its children get pipes
        pass_fds=[fd],
        env=dict(env),
        cwd=cwd,
        start_new_session=True,
    )


def _pidfd_of(process: subprocess.Popen[bytes]) -> int:
    """A pidfd for the zygote just started; if that fails, it is killed and reaped first."""
    try:
        return os.pidfd_open(process.pid)
    except OSError:  # pragma: no cover - out of file descriptors
        process.kill()
        process.wait()
        raise


async def _wait_pidfd(pidfd: int, seconds: float) -> bool:
    """Wait up to ``seconds`` for the process behind ``pidfd`` to exit; whether it did."""
    with anyio.move_on_after(seconds):
        await anyio.wait_readable(pidfd)
    return _exited(pidfd)


async def _stop(zygote: Zygote, process: subprocess.Popen[bytes], pidfd: int) -> None:
    """Close the socket (the zygote kills and reaps what it still holds, then exits); bounded."""
    zygote._gone = True
    with contextlib.suppress(OSError):
        zygote._control.shutdown(socket.SHUT_RDWR)
    if not await _wait_pidfd(pidfd, ZYGOTE_EXIT_GRACE):
        logger.warning("zygote (pid %d) did not exit when its socket closed; killing it", zygote.pid)
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        if not await _wait_pidfd(pidfd, _KILL_GRACE):  # pragma: no cover - an unkillable process
            logger.warning("zygote (pid %d) survived SIGKILL", zygote.pid)
            return
    process.wait()  # it has exited: no blocking


@asynccontextmanager
async def open_zygote(
    modules: Sequence[str] = ("zorkmcp.servers.thinking",),
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
) -> AsyncIterator[Zygote]:
    """Start a zygote that has imported ``modules``; leaving the context ends it and its children.

    Open it before the sessions that use it and leave it after them (an episode's exit stack,
    entered before its nursery). Leaving closes the socket: the zygote kills the process group of
    every child it still holds, reaps them and exits (killed after :data:`ZYGOTE_EXIT_GRACE`).

    Args:
        modules: the server modules to preload (each defines ``main(argv) -> int``; default the
            embedded think server).
        env: the zygote's environment (default ``os.environ``); children get their own, but
            variables read when an interpreter starts (``PYTHON*``) come from here.
        cwd: the zygote's working directory (default ours).

    Raises:
        ZygoteGone: the zygote could not start, or did not import its modules within
            :data:`ZYGOTE_START_TIMEOUT` (the message says why).
    """
    if not zygote_supported():
        raise ZygoteGone("a zygote needs Linux (pidfds, fork, SOCK_SEQPACKET)")
    start_env = {**(os.environ if env is None else env), OWNER_ENV_VAR: owner_token()}
    try:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    except OSError as exc:
        raise ZygoteGone(f"the zygote for {', '.join(modules)} did not start: {exc}") from exc
    try:
        try:
            process = await anyio.to_thread.run_sync(_start, list(modules), theirs.fileno(), start_env, cwd)
        finally:
            theirs.close()
        # No checkpoint from here to the `try` below: a cancellation in between would leak the zygote.
        pidfd = _pidfd_of(process)
    except BaseException as exc:
        ours.close()
        if isinstance(exc, OSError):
            raise ZygoteGone(f"the zygote for {', '.join(modules)} did not start: {exc}") from exc
        raise
    ours.setblocking(False)
    zygote = Zygote(process, pidfd, ours, modules, start_env)
    started = False
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(zygote._read, name=f"zorkmcp-zygote-{process.pid}")
            try:
                with anyio.move_on_after(ZYGOTE_START_TIMEOUT):
                    await zygote._ready.wait()
                started = zygote._ready.is_set() and not zygote._gone
                if started:
                    yield zygote
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop(zygote, process, pidfd)
                tasks.cancel_scope.cancel()
        if not started:  # raised here, outside the task group: a plain error, not a group
            reason = zygote._failure or f"no answer within {ZYGOTE_START_TIMEOUT:g}s"
            raise ZygoteGone(f"the zygote for {', '.join(modules)} did not start: {reason}")
    finally:
        if process.returncode is None:  # pragma: no cover - unkillable, or the task group failed
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        zygote._pidfd = None
        anyio.notify_closing(pidfd)
        os.close(pidfd)
        anyio.notify_closing(ours)
        ours.close()
