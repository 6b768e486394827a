"""Our own stdio transport for MCP servers: spawn, pipe, and end every process the session started.

Why not the SDK's ``mcp.client.stdio.stdio_client``: it hides the process (no PID, no exit status, no
stderr for error messages), signals the process group only when the server fails to exit within 2 s
(so children of a server that exits cleanly on EOF are orphaned), and can take 6.5 s for a stubborn
server. This module keeps the SDK's wire behaviour (newline-delimited JSON-RPC, a non-JSON line is
passed to the session as an ``Exception`` value and does not end it) and changes the lifecycle:

* The server runs in its own session and process group (``start_new_session=True``) with a unique
  ``ZORKMCP_SESSION=<token>`` in its environment, inherited by everything it starts.
* A watcher waits for the server to exit (on a pidfd: no polling). When it exits, its process group
  is killed at once — before the leader is reaped, so the group ID cannot have been reused by then
  (PIDs wrap within minutes on a busy machine) — and the session sees EOF, so a pending request
  fails promptly even when a leftover child still holds the stdout pipe.
* Written on anyio, so it keeps every guarantee under trio (the project's runtime) and under an
  asyncio host alike. The server is spawned with :class:`subprocess.Popen` in a worker thread (as
  trio itself does) and its pipes are read and written with ``os.read``/``os.write`` and
  ``anyio.wait_readable``/``wait_writable``: asyncio's own subprocess support on Python 3.11 reaps
  children from a watcher thread the moment they exit, which would make the group kill below unsafe.
* Inside an episode, a server that the episode's zygote has preloaded is forked by it instead
  (:mod:`zorkmcp.mcp._zygote`): same session, group, pidfd and teardown, without the interpreter's
  start-up. The zygote never reaps a child until asked, so the group kill stays before the reap.
* Teardown (shielded, bounded, no fixed sleeps): close stdin → wait for exit up to
  :data:`EOF_GRACE` (not at all for a server that let its start-up deadline pass,
  :attr:`ProcessInfo.startup_deadline`: it was waited for long enough, and its error is not held
  back) → SIGTERM the group → wait up to :data:`TERM_GRACE` → SIGKILL the group. The
  group is always killed when the server exits (children of a server that exited cleanly), and then
  every process whose environment carries the token (children that called ``setsid`` and escaped
  the group; a Linux ``/proc`` walk in a worker thread, shared by the sessions that end together,
  :mod:`zorkmcp.mcp._sweep`; skipped elsewhere, and for a server forked as one of our own modules,
  which start no process), and teardown waits for them to be gone, and for every process still in
  the server's session (children of the group still exiting: the kernel takes a dying process's
  environment with its memory, before it is gone). A well-behaved server costs only its own exit
  time; the worst case is about :data:`WORST_CASE_TEARDOWN` seconds, plus the walk (milliseconds;
  it is not cut short: a session left out of it would leave its strays running).
* Should this process die without a teardown (``kill -9``, the OOM killer), its guard ends every
  server and all they started: each server also carries ``ZORKMCP_OWNER=<token>``, and the guard,
  a small process of its own started with the first server, kills whatever carries it once our
  process is gone (:mod:`zorkmcp._pidfds` says why, and why not ``PR_SET_PDEATHSIG``).

Memory stays bounded whatever the server writes. A stdout line longer than :data:`MAX_LINE_BYTES`
ends the session at once: reading stops (the line is never held whole), the session sees EOF, so
its pending requests fail now instead of at their timeout, and the server is stopped (SIGTERM to
its group, SIGKILL after :data:`TERM_GRACE`; then a death like any other);
:attr:`ProcessInfo.protocol_error` says why. Of a stderr line only the first
:data:`STDERR_LINE_BYTES` are kept (the rest, up to its newline, is read and dropped).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import secrets
import select
import shlex
import signal
import subprocess
import threading
from collections import deque
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.lowlevel
import anyio.to_thread
import mcp_types
from attrs import define, field
from mcp.shared.message import SessionMessage

from .._jsontypes import json_kind
from .._pidfds import OWNER_ENV_VAR, ensure_guard, owner_token, wait_for_pidfds
from .._surrogates import lone_surrogate
from ._events import logger
from ._sweep import SESSION_ENV_VAR, kill_session_processes, sweep
from ._zygote import STARTS_NO_PROCESS, ZygoteChild, ZygoteGone

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Mapping, Sequence

    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

    from ._zygote import Forker

__all__ = [
    "EOF_GRACE",
    "INVALID_ANSWER",
    "KILL_GRACE",
    "MAX_LINE_BYTES",
    "SESSION_ENV_VAR",
    "SHOWN_ARGUMENT_CHARS",
    "STDERR_LINE_BYTES",
    "STDERR_TAIL_LINES",
    "TERM_GRACE",
    "WORST_CASE_TEARDOWN",
    "NotJsonRpc",
    "ProcessInfo",
    "open_stdio_transport",
    "shown_command",
]

EOF_GRACE = 1.5
"""Seconds a server gets to exit after its stdin closes (and pending writes flush)."""
TERM_GRACE = 0.5
"""Seconds between SIGTERM to the process group and SIGKILL."""
KILL_GRACE = 0.2
"""Seconds to wait for killed processes to be gone (only an unkillable process uses it up)."""
EXIT_DRAIN_GRACE = 0.2
"""After the server exited: how long a leftover may keep its stdout open before reading stops."""
STDERR_DRAIN_GRACE = 0.1
"""After everything is killed: how long to wait for the last stderr bytes."""
WORST_CASE_TEARDOWN = EOF_GRACE + TERM_GRACE + 2 * KILL_GRACE + STDERR_DRAIN_GRACE
STDERR_TAIL_LINES = 40
"""Lines of the server's stderr kept for error messages."""
STDERR_LINE_BYTES = 2048
"""Bytes kept of one stderr line (its start; a longer line is cut, and said to be)."""
MAX_LINE_BYTES = 64 * 1024 * 1024
"""The longest JSON-RPC line (without its newline) a server may write on stdout; a longer one ends
the session and the server (:attr:`ProcessInfo.protocol_error`)."""
_READ_SIZE = 65536

Escalation = Literal["none", "sigterm", "sigkill"]
_Process = subprocess.Popen[bytes] | ZygoteChild
"""A server process: spawned with ``Popen``, or forked by the episode's zygote."""


@define(kw_only=True, eq=False)
class ProcessInfo:
    """What is known about one server process; filled in while it runs and after teardown.

    Attributes:
        command: the command line (program and arguments).
        token: the value of ``ZORKMCP_SESSION`` in the server's environment.
        pid: the server's PID once spawned.
        returncode: the exit status once it exited (negative: killed by that signal).
        escalation: how far teardown had to go: ``"none"`` (exited on stdin EOF), ``"sigterm"``,
            ``"sigkill"`` (also how far stopping a server for its :attr:`protocol_error` went).
        strays_killed: processes found by the token after the group kill (escaped via ``setsid``).
        teardown_seconds: how long teardown took (``None`` until it ran).
        withheld_env: names of secret-looking variables left out of the environment.
        non_json_lines: stdout lines that were not JSON-RPC (passed to the session as errors).
        exited: set once the server process has exited.
        zygote_pid: the zygote that forked the server (``None``: spawned with ``Popen``).
        may_leave_strays: whether teardown looks for processes that escaped the group (``False``:
            forked as a module that starts no process, :data:`~._zygote.STARTS_NO_PROCESS`).
        protocol_error: what the server did that made the transport end the session and stop it,
            said of the server (``"sent a message of more than 64 MiB (...)"``); ``None``: nothing.
        stdout_ended: the server closed its stdout (end of file): it is exiting, or has exited.
        stopped: the server was still running, its stdout open, when zorkmcp began to stop it
            (teardown, or a :attr:`protocol_error`): its exit status is then its answer to being
            stopped (closing its stdin, a signal), not a status it chose.
        startup_deadline: until the server has started (answered ``initialize`` and ``tools/list``),
            when its start-up time is up (``anyio.current_time()``); ``None`` once it started, or
            without one. A teardown that begins at or after it gives no :data:`EOF_GRACE`: the
            stdin closes and SIGTERM follows at once, so the start-up error comes about
            :data:`TERM_GRACE` after the timeout at worst instead of :data:`EOF_GRACE` more.
    """

    command: tuple[str, ...]
    token: str = field(factory=lambda: secrets.token_hex(16))
    pid: int | None = None
    returncode: int | None = None
    escalation: Escalation = "none"
    strays_killed: int = 0
    teardown_seconds: float | None = None
    withheld_env: tuple[str, ...] = ()
    non_json_lines: int = 0
    zygote_pid: int | None = None
    may_leave_strays: bool = True
    protocol_error: str | None = None
    stdout_ended: bool = False
    stopped: bool = False
    startup_deadline: float | None = None
    exited: anyio.Event = field(factory=anyio.Event)
    """Set once the server process has exited, its group has been killed and it has been reaped."""
    _stderr: deque[str] = field(factory=lambda: deque(maxlen=STDERR_TAIL_LINES), alias="_stderr")

    @property
    def command_line(self) -> str:
        """The command as a shell-quoted string (for messages; see :func:`shown_command`)."""
        return shown_command(self.command)

    @property
    def stderr_tail(self) -> tuple[str, ...]:
        """The last :data:`STDERR_TAIL_LINES` lines the server wrote to stderr."""
        return tuple(self._stderr)

    @property
    def running(self) -> bool:
        """Whether the server process has been spawned and not yet exited."""
        return self.pid is not None and not self.exited.is_set()

    def note(self, line: str) -> None:
        """Append one line to the stderr ring buffer."""
        self._stderr.append(line)


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _open_pidfd(pid: int) -> int | None:
    """A pidfd for our own child ``pid`` (safe: it cannot be reused before we reap it)."""
    if not hasattr(os, "pidfd_open"):  # pragma: no cover - not Linux
        return None
    try:
        return os.pidfd_open(pid)
    except OSError:  # pragma: no cover - kernel older than 5.3
        return None


class _Pipe:
    """One end of a pipe to the server, non-blocking, read or written with anyio's fd waiting."""

    def __init__(self, file: Any) -> None:
        self._file = file
        self.fd: int = file.fileno()
        os.set_blocking(self.fd, False)
        self.closed = False

    async def receive_some(self) -> bytes:
        """Up to :data:`_READ_SIZE` bytes; ``b""`` at end of file."""
        await anyio.lowlevel.checkpoint()
        while True:
            if self.closed:
                raise anyio.ClosedResourceError
            try:
                return os.read(self.fd, _READ_SIZE)
            except BlockingIOError:
                await anyio.wait_readable(self.fd)

    async def send_all(self, data: bytes) -> None:
        view = memoryview(data)
        await anyio.lowlevel.checkpoint()
        while view:
            if self.closed:
                raise anyio.ClosedResourceError
            try:
                view = view[os.write(self.fd, view) :]
            except BlockingIOError:
                await anyio.wait_writable(self.fd)

    def close(self) -> None:
        """Close the pipe, waking any task that waits on it (it then sees ``ClosedResourceError``)."""
        if self.closed:
            return
        self.closed = True
        anyio.notify_closing(self.fd)
        with contextlib.suppress(OSError):
            self._file.close()


class NotJsonRpc(ValueError):
    """A line a server wrote on stdout that is not JSON-RPC; the session is handed it and goes on.

    Attributes:
        line: the line's first :data:`NOT_JSON_SHOWN` characters (undecodable bytes replaced).
        count: how many such lines the server has written, this one included.
    """

    def __init__(self, line: str, count: int) -> None:
        super().__init__(f"a line on stdout that is not JSON-RPC: {line!r}")
        self.line = line
        self.count = count


NOT_JSON_SHOWN = 200
"""Characters of a stdout line that is not JSON-RPC kept for messages and events."""
_NOISY_COMMANDS: set[str] = set()
"""Server commands that were warned about (logger ``zorkmcp.mcp``) for a stdout line that is not
JSON-RPC: a ``per_turn`` server with a banner would otherwise warn on stderr every turn of every
episode. Each session's own records (:class:`NotJsonRpc`) still say it once per process."""


SHOWN_ARGUMENT_CHARS = 1000
"""The most of one argument a message shows of a command (an argument of 600 KB was shown whole)."""


def shown_command(argv: Sequence[str]) -> str:
    """A command as messages show it: shell-quoted, each argument past :data:`SHOWN_ARGUMENT_CHARS`
    cut, with how many characters more it had."""
    return shlex.join(
        arg if len(arg) <= SHOWN_ARGUMENT_CHARS else f"{arg[:SHOWN_ARGUMENT_CHARS]}…({len(arg)} characters)"
        for arg in argv
    )


INVALID_ANSWER = "zorkmcp: invalid answer"
"""The ``data`` of the JSON-RPC error a stdio transport hands the session in place of an answer that is
not valid JSON-RPC (:func:`_invalid_answer`): its message says what is wrong, and is the whole reason."""


def _answer_problem(data: dict[str, Any]) -> str | None:
    """What makes ``data``, a JSON-RPC answer the SDK refused, invalid; ``None`` when it is not one."""
    if data.get("jsonrpc") != "2.0":
        found = "is missing" if "jsonrpc" not in data else f"is {json.dumps(data['jsonrpc'])[:40]}"
        return f'its "jsonrpc" {found}, where JSON-RPC 2.0 needs "jsonrpc": "2.0"'
    if "result" in data and not isinstance(data["result"], dict):
        return f'its "result" is {json_kind(data["result"])}, where an MCP result is an object'
    if "error" in data:
        return 'its "error" is not a JSON-RPC error object ({"code": integer, "message": string})'
    return None


def _invalid_answer(text: bytes, shown: str) -> SessionMessage | None:
    """An answer to one of our requests that is not valid JSON-RPC, as an error for that request.

    A server that answers a request with a malformed response (``"result": null``, no ``"jsonrpc"``)
    has answered all the same: left as a line that is not JSON-RPC, its request would wait for its
    timeout (a tool call's timeout aborts the rest of its batch; ``initialize``'s fails the start-up
    as "no answer"). Its request fails at once instead, saying what is wrong with the answer. An
    error object without a valid ``code`` that still has a ``message`` gives that message.
    """
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if not isinstance(data, dict) or "method" in data or not ("result" in data or "error" in data):
        return None
    ident = data.get("id")
    if isinstance(ident, bool) or not isinstance(ident, int | str):
        return None
    error = data.get("error")
    if data.get("jsonrpc") == "2.0" and "result" not in data and isinstance(error, dict):
        if isinstance(message := error.get("message"), str):  # its code is missing or not an integer
            code = error.get("code")
            code = code if isinstance(code, int) and not isinstance(code, bool) else mcp_types.INTERNAL_ERROR
            return SessionMessage(
                mcp_types.JSONRPCError(
                    jsonrpc="2.0", id=ident, error=mcp_types.ErrorData(code=code, message=message)
                )
            )
    problem = _answer_problem(data)
    if problem is None:
        return None
    reason = f"the server answered with something that is not a valid JSON-RPC response ({problem}): {shown}"
    error_data = mcp_types.ErrorData(code=mcp_types.INTERNAL_ERROR, message=reason, data=INVALID_ANSWER)
    return SessionMessage(mcp_types.JSONRPCError(jsonrpc="2.0", id=ident, error=error_data))


def _parse_line(line: bytes, info: ProcessInfo) -> SessionMessage | Exception | None:
    text = line.strip()
    if not text:
        return None
    try:
        message = mcp_types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValueError:
        shown = text[: 4 * NOT_JSON_SHOWN].decode("utf-8", "replace")[:NOT_JSON_SHOWN]  # characters
        if (answer := _invalid_answer(text, shown)) is not None:
            info.note(f"[stdout, not a valid JSON-RPC answer] {shown}")
            return answer
        info.note(f"[stdout, not JSON-RPC] {shown}")
        info.non_json_lines += 1
        first = info.command_line not in _NOISY_COMMANDS
        _NOISY_COMMANDS.add(info.command_line)
        logger.log(
            logging.WARNING if first else logging.DEBUG,
            "MCP server %s wrote a line that is not JSON-RPC (ignored; said once per server command): %r",
            info.command_line,
            shown,
        )
        return NotJsonRpc(shown, info.non_json_lines)
    return SessionMessage(message)


def _size(n: int) -> str:
    """A byte count for messages: ``64 MiB``, ``512 KiB``, or ``1000 bytes``."""
    for unit, scale in (("MiB", 1024 * 1024), ("KiB", 1024)):
        if n % scale == 0:
            return f"{n // scale} {unit}"
    return f"{n} bytes"


async def _read_stdout(
    stdout: _Pipe,
    send: MemoryObjectSendStream[SessionMessage | Exception],
    info: ProcessInfo,
    done: anyio.Event,
    overflowed: Callable[[], None],
) -> None:
    """Pass each stdout line to the session; stop at EOF or at a line over :data:`MAX_LINE_BYTES`.

    An overlong line is never held whole: once the part not yet ended by a newline is longer than
    the limit, reading stops with ``info.protocol_error`` set and ``overflowed`` is called (it stops
    the server); the session then sees EOF. At most the limit plus one read is ever buffered.
    """
    buffer = bytearray()
    scanned = 0
    deliver = True
    try:
        while True:
            try:
                chunk = await stdout.receive_some()
            except (anyio.ClosedResourceError, OSError):
                break
            if not chunk:
                info.stdout_ended = True
                break
            buffer += chunk
            limit = MAX_LINE_BYTES
            while (end := buffer.find(b"\n", scanned)) >= 0 and end <= limit:
                line = bytes(buffer[:end])
                del buffer[: end + 1]
                scanned = 0
                item = _parse_line(line, info) if deliver else None
                if item is None:
                    continue
                try:
                    await send.send(item)
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    deliver = False  # the session is gone; keep draining so the server never blocks
            scanned = len(buffer)
            if end > limit or scanned > limit:
                buffer.clear()
                info.protocol_error = (
                    f"sent a message of more than {_size(limit)} (the limit of one JSON-RPC line)"
                )
                logger.warning("MCP server %s %s; stopping it", info.command_line, info.protocol_error)
                overflowed()
                break
    finally:
        send.close()
        done.set()


def _note_stderr(info: ProcessInfo, line: bytes | bytearray) -> None:
    text = line[:STDERR_LINE_BYTES].decode("utf-8", "replace").rstrip()
    if len(line) > STDERR_LINE_BYTES:
        text += f" [... line cut at {_size(STDERR_LINE_BYTES)}]"
    info.note(text)
    logger.debug("[%s stderr] %s", info.command_line, text)


async def _read_stderr(stderr: _Pipe, info: ProcessInfo, done: anyio.Event) -> None:
    """Note each stderr line in ``info``, cut at :data:`STDERR_LINE_BYTES`.

    A line is noted as soon as it is too long and the rest of it is dropped as it arrives, so at
    most :data:`STDERR_LINE_BYTES` plus one read is held, however long a line (or none ends).
    """
    buffer = bytearray()
    cut = False  # the line being read was noted already (cut); drop the rest of it
    try:
        while True:
            try:
                chunk = await stderr.receive_some()
            except (anyio.ClosedResourceError, OSError):
                break
            if not chunk:
                break
            buffer += chunk
            *lines, rest = buffer.split(b"\n")
            for line in lines:
                if cut:
                    cut = False
                    continue
                _note_stderr(info, line)
            if not cut and len(rest) > STDERR_LINE_BYTES:
                _note_stderr(info, rest)
                cut = True
            buffer = bytearray() if cut else bytearray(rest)
    finally:
        if buffer.strip():
            _note_stderr(info, buffer)
        done.set()


def _unsendable(message: SessionMessage, exc: ValueError, info: ProcessInfo) -> SessionMessage | None:
    """The answer to a message that cannot be written as a JSON line: an error response for a request.

    A lone surrogate (half an emoji, ``"\\ud800"`` typed into ``zorkmcp call``) has no UTF-8 form.
    Failing the writer would end the connection and blame the server; instead the request is not
    sent and its caller gets a JSON-RPC error (a failed tool call, Requirement 6), and the server
    never sees it. Anything else (a notification, a response) is dropped with a warning.
    """
    data = message.message.model_dump(by_alias=True, exclude_unset=True)
    bad = lone_surrogate(data)
    why = f"it holds {bad[1]!r}, a lone surrogate, which UTF-8 cannot encode" if bad is not None else str(exc)
    request = message.message
    if not isinstance(request, mcp_types.JSONRPCRequest):
        logger.warning("MCP server %s: a message was not sent: %s", info.command_line, why)
        return None
    error = mcp_types.ErrorData(
        code=mcp_types.INVALID_PARAMS, message=f"the {request.method} request was not sent: {why}"
    )
    return SessionMessage(mcp_types.JSONRPCError(jsonrpc="2.0", id=request.id, error=error))


async def _deliver(send: MemoryObjectSendStream[SessionMessage | Exception], item: SessionMessage) -> None:
    """Hand the session an answer the writer made up.

    A task of its own: the session may be busy writing (an inline request handler) while the writer
    would wait for it to read, and neither would move.
    """
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        await send.send(item)


async def _write_stdin(
    stdin: _Pipe,
    receive: MemoryObjectReceiveStream[SessionMessage],
    info: ProcessInfo,
    reader_scope: anyio.CancelScope,
    done: anyio.Event,
    answer: Callable[[SessionMessage], None],
) -> None:
    try:
        async with receive:
            async for message in receive:
                try:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                    encoded = data.encode()
                except ValueError as exc:  # PydanticSerializationError, UnicodeEncodeError
                    refusal = _unsendable(message, exc, info)
                    if refusal is not None:
                        answer(refusal)
                    continue
                try:
                    await stdin.send_all(encoded)
                except (anyio.ClosedResourceError, OSError):
                    break
            else:
                return
        # The server stopped reading. If it is dying, the exit watcher ends the session; if it
        # lives on with its stdin closed, end the session here so pending requests fail now.
        with anyio.move_on_after(EXIT_DRAIN_GRACE):
            await info.exited.wait()
        if not info.exited.is_set():
            reader_scope.cancel()
    finally:
        done.set()


async def _wait_exit(process: _Process, pidfd: int | None) -> None:
    """Return once the server has exited, **without reaping it** where a pidfd allows.

    While the exited leader is an unreaped zombie its PID, and so its process-group ID, cannot be
    reused; that is what makes the group kill after it safe on a machine where PIDs wrap quickly.
    A child of the zygote always has a pidfd, and the zygote does not reap it until asked.
    """
    if pidfd is not None:
        await anyio.wait_readable(pidfd)  # a pidfd is readable once its process exited
        return
    assert isinstance(process, subprocess.Popen)  # zygote children always have a pidfd
    while process.poll() is None:  # noqa: ASYNC110  # pragma: no cover - no pidfd (not Linux)
        await anyio.sleep(0.05)


def _has_exited(pidfd: int | None, info: ProcessInfo) -> bool:
    """Whether the server has exited, or is exiting on its own, by now (no waiting, no reaping).

    A server that ends closes its stdout a moment before it is gone (the kernel closes its files
    first), and the exit watcher may not have run yet when it exited a moment ago; its pidfd already
    says so (readable). Without a pidfd only the watcher's word counts.
    """
    if info.exited.is_set() or info.stdout_ended:
        return True
    if pidfd is None:  # pragma: no cover - no pidfd (not Linux)
        return False
    poller = select.poll()  # not select.select: a pidfd may be above FD_SETSIZE
    poller.register(pidfd, select.POLLIN)
    return bool(poller.poll(0))


def _group_is_ours(process: _Process) -> bool:
    """Whether the server's process-group ID still names its group (its leader is unreaped).

    Always for a ``Popen`` child (only the exit watcher reaps it). A zygote child is held by the
    zygote; if the zygote died, init may have reaped it and the ID may be reused.
    """
    return process.held if isinstance(process, ZygoteChild) else True


def _signal_server(process: _Process, pidfd: int | None, sig: signal.Signals) -> None:
    """Signal the server's process group, or only the server (by pidfd) when the group ID is not safe."""
    if _group_is_ours(process):
        _signal_group(process.pid, sig)
    elif pidfd is not None:
        with contextlib.suppress(OSError):
            signal.pidfd_send_signal(pidfd, sig)


async def _reap(process: _Process) -> int | None:
    """Reap the exited server; its exit status (``None``: a zygote child whose zygote died)."""
    if isinstance(process, ZygoteChild):
        return await process.wait()
    return process.wait()  # it has exited: no blocking


async def _watch_exit(
    process: _Process,
    pidfd: int | None,
    info: ProcessInfo,
    reader_scope: anyio.CancelScope,
    reader_done: anyio.Event,
) -> None:
    await _wait_exit(process, pidfd)
    # The server is gone: whatever is left of its group can only hold our pipes open. Killed before
    # the leader is reaped (see _wait_exit), then reaped at once (it is a zombie: no blocking).
    if _group_is_ours(process):
        _signal_group(process.pid, signal.SIGKILL)
    info.returncode = await _reap(process)
    info.exited.set()
    with anyio.move_on_after(EXIT_DRAIN_GRACE):
        await reader_done.wait()
    reader_scope.cancel()


async def _stop_broken(process: _Process, pidfd: int | None, info: ProcessInfo) -> None:
    """Stop a server that broke the protocol: SIGTERM its group, SIGKILL after :data:`TERM_GRACE`.

    No stdin EOF first: such a server is blocked writing a line nobody reads. Its exit is then a
    death like any other (the exit watcher kills what is left of its group); teardown, when the
    session's owner closes it, finds it gone and looks for strays as usual.
    """
    steps: tuple[tuple[signal.Signals, Escalation, float], ...] = (
        (signal.SIGTERM, "sigterm", TERM_GRACE),
        (signal.SIGKILL, "sigkill", KILL_GRACE),
    )
    info.stopped = not _has_exited(pidfd, info)
    for sig, escalation, grace in steps:
        if info.exited.is_set():  # the group is signalled only while its leader is unreaped
            return
        info.escalation = escalation
        _signal_server(process, pidfd, sig)
        with anyio.move_on_after(grace):
            await info.exited.wait()


async def _wait_gone(pidfds: list[int], deadline: float) -> None:
    """Wait (until ``deadline``) for the processes behind ``pidfds`` to exit; always close the fds."""
    try:
        with anyio.CancelScope(deadline=deadline):
            for pidfd in pidfds:
                await anyio.wait_readable(pidfd)  # a pidfd is readable once its process exited
    finally:
        for pidfd in pidfds:
            anyio.notify_closing(pidfd)
            os.close(pidfd)


async def _stop(
    process: _Process,
    pidfd: int | None,
    stdin: _Pipe,
    info: ProcessInfo,
    write_send: MemoryObjectSendStream[SessionMessage],
    writer_scope: anyio.CancelScope,
    writer_done: anyio.Event,
    stderr_done: anyio.Event,
) -> None:
    """The bounded shutdown sequence (see the module docstring); runs shielded.

    Every group signal is sent while the leader is not yet reaped (``info.exited`` unset): the exit
    watcher is the only reaper and kills the group itself just before reaping, so a group ID is
    never signalled after it could have been reused.
    """
    start = anyio.current_time()
    timed_out = info.startup_deadline is not None and start >= info.startup_deadline
    eof_deadline = start if timed_out else start + EOF_GRACE
    info.stopped = info.stopped or not _has_exited(pidfd, info)
    write_send.close()  # lets the writer flush what the session already handed over, then stop
    with anyio.CancelScope(deadline=eof_deadline):
        await writer_done.wait()
    writer_scope.cancel()
    stdin.close()
    with anyio.CancelScope(deadline=eof_deadline):
        await info.exited.wait()
    if not info.exited.is_set():
        info.escalation = "sigterm"
        _signal_server(process, pidfd, signal.SIGTERM)
        with anyio.move_on_after(TERM_GRACE):
            await info.exited.wait()
    if not info.exited.is_set():
        info.escalation = "sigkill"
        _signal_server(process, pidfd, signal.SIGKILL)
        with anyio.move_on_after(KILL_GRACE):
            await info.exited.wait()
    if not info.exited.is_set():  # pragma: no cover - an unkillable (D-state) process
        logger.warning("MCP server %s (pid %d) survived SIGKILL", info.command_line, process.pid)
    # Children of a server that exited cleanly were killed with its group by the exit watcher;
    # children that called setsid are only found by the token in their environment, and those of
    # the group still exiting only by the session they are in (the token went with their memory).
    # No timeout around the sweep: a session that stopped waiting before its walk began would be
    # left out of every walk (the walk is bounded; it is shared by the sessions that end together).
    if info.may_leave_strays:
        swept = await sweep(info.token, session=process.pid)
        info.strays_killed = len(swept.killed)
        await _wait_gone(swept.killed + swept.exiting, anyio.current_time() + KILL_GRACE)
    with anyio.move_on_after(STDERR_DRAIN_GRACE):
        await stderr_done.wait()
    info.teardown_seconds = anyio.current_time() - start


_RUNNING_LOCK = threading.Lock()
_RUNNING: dict[str, tuple[int | None, str]] = {}
"""Every stdio server of this process from its start until its teardown has ended: its token → its
pidfd (``None`` without pidfds) and command line. :func:`_kill_left_running` ends those left at exit."""


def _forget_running_in_child() -> None:
    """After ``fork``: the parent's servers are not the child's to end (nor its lock, held or not)."""
    global _RUNNING_LOCK  # another thread of the parent may have held it: none runs here
    _RUNNING_LOCK = threading.Lock()
    _RUNNING.clear()


os.register_at_fork(after_in_child=_forget_running_in_child)


@atexit.register
def _kill_left_running() -> None:
    """At interpreter exit, SIGKILL every server whose teardown has not ended, and all it started.

    Teardown runs in an event loop, and a loop in a daemon thread (``bridge.Bridge``'s, which
    ``zorkmcp play`` drives) is dropped when the interpreter exits, whatever it was doing: a second
    Ctrl-C while ``zorkmcp play`` stopped its servers ended the process during a server's grace
    (:data:`EOF_GRACE`), and a server that ignores the end of its input ran on under PID 1, with its
    children. The server is signalled through its pidfd and what it started is found by its token
    (:func:`~._sweep.kill_session_processes`); never its group: the exit watcher, in the loop's
    thread, may reap the server meanwhile, after which the group ID could name another group.
    Registered when this module is first imported, so it runs after the exit hooks registered later
    (``bridge``'s, which closes an open Bridge gracefully first).
    """
    with _RUNNING_LOCK:
        left = dict(_RUNNING)
        pinned = []
        for pidfd, _ in left.values():
            if pidfd is None:  # pragma: no cover - no pidfds (not Linux): its token alone
                continue
            with contextlib.suppress(OSError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                pinned.append(os.dup(pidfd))  # ours to wait on, whoever closes the original
    if not left:
        return
    for pidfds in kill_session_processes(frozenset(left)).values():
        pinned += pidfds
    try:
        wait_for_pidfds(pinned, KILL_GRACE)
    finally:
        for pidfd in pinned:
            os.close(pidfd)
    for _, command_line in left.values():
        logger.warning(
            "MCP server %s was not stopped yet when the process exited: killed, with what it started",
            command_line,
        )


def _spawn(argv: list[str], env: dict[str, str], cwd: str | None) -> subprocess.Popen[bytes]:
    """Start the server in its own session and process group (the group is what teardown kills).

    This process's guard is started first if it is not running (:func:`~.._pidfds.ensure_guard`).
    """
    ensure_guard()
    return subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )


async def _start(
    command: str, args: Sequence[str], env: dict[str, str], cwd: str | None, zygote: Forker | None
) -> tuple[_Process, str | None]:
    """Fork the server from ``zygote`` when it accepts it, else spawn it with ``Popen``.

    A dead zygote is not an error: the server is spawned with ``Popen`` instead.

    Returns:
        The process, and the module the zygote forked it as (``None``: spawned).
    """
    module = zygote.accepts(command, args, env) if zygote is not None else None
    if zygote is not None and module is not None:
        try:
            return await zygote.spawn(module, args[2:], env, cwd), module
        except ZygoteGone as exc:
            logger.debug("spawning %s with Popen: %s", shlex.join([command, *args]), exc)
    return await anyio.to_thread.run_sync(_spawn, [command, *args], env, cwd), None


def _handles_of(process: _Process) -> tuple[int | None, tuple[_Pipe, _Pipe, _Pipe]]:
    """The process's pidfd (``None`` without pidfds) and its stdin, stdout and stderr, non-blocking.

    On failure the process group is killed (and a ``Popen`` child reaped) before the error
    propagates; a zygote child is reaped by its zygote when the episode ends.
    """
    pidfd = process.pidfd if isinstance(process, ZygoteChild) else None
    try:
        if pidfd is None:
            pidfd = _open_pidfd(process.pid)
        assert process.stdin is not None
        assert process.stdout is not None
        assert process.stderr is not None
        return pidfd, (_Pipe(process.stdin), _Pipe(process.stdout), _Pipe(process.stderr))
    except BaseException:  # pragma: no cover - a pipe that cannot be made non-blocking
        _signal_server(process, pidfd, signal.SIGKILL)
        if isinstance(process, subprocess.Popen):
            process.wait()
        raise


@asynccontextmanager
async def open_stdio_transport(
    command: str,
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    info: ProcessInfo | None = None,
    zygote: Forker | None = None,
) -> AsyncIterator[
    tuple[
        MemoryObjectReceiveStream[SessionMessage | Exception],
        MemoryObjectSendStream[SessionMessage],
        ProcessInfo,
    ]
]:
    """Spawn an MCP server and connect to it over its stdin/stdout.

    Yields ``(read_stream, write_stream, info)``; the streams go to
    ``mcp.client.session.ClientSession``. Leaving the context ends the server and every process it
    started (see the module docstring); ``info`` then holds the exit status, the stderr tail and the
    teardown duration.

    Args:
        command: the program to run.
        args: its arguments.
        env: the environment (``None``: ours). ``ZORKMCP_SESSION`` and ``ZORKMCP_OWNER`` are added.
        cwd: the working directory (``None``: ours).
        info: a :class:`ProcessInfo` to fill in (lets the caller read it after a failed start);
            a new one when ``None``.
        zygote: the episode's zygote (:mod:`zorkmcp.mcp._zygote`): a server it accepts is forked
            from it instead of spawned (spawned as usual if the zygote has died).

    Raises:
        OSError: the program could not be started (``FileNotFoundError`` when it does not exist).
    """
    if info is None:
        info = ProcessInfo(command=(command, *args))
    full_env = {
        **(os.environ if env is None else env),
        SESSION_ENV_VAR: info.token,
        OWNER_ENV_VAR: owner_token(),
    }
    process, module = await _start(command, args, full_env, cwd, zygote)
    # No checkpoint from the spawn to the `try` around the task group: a cancellation in between
    # would leak the process.
    info.pid = process.pid
    if isinstance(process, ZygoteChild):
        info.zygote_pid = process.zygote_pid
    info.may_leave_strays = module not in STARTS_NO_PROCESS
    pidfd, (stdin, stdout, stderr) = _handles_of(process)
    read_send, read_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_receive = anyio.create_memory_object_stream[SessionMessage](0)
    reader_scope, writer_scope = anyio.CancelScope(), anyio.CancelScope()
    reader_done, writer_done, stderr_done = anyio.Event(), anyio.Event(), anyio.Event()

    async def reader() -> None:
        with reader_scope:
            await _read_stdout(stdout, read_send, info, reader_done, overflowed)

    def overflowed() -> None:
        tasks.start_soon(_stop_broken, process, pidfd, info)

    async def writer() -> None:
        with writer_scope:
            await _write_stdin(stdin, write_receive, info, reader_scope, writer_done, answer)
        write_receive.close()

    def answer(item: SessionMessage) -> None:
        tasks.start_soon(_deliver, read_send, item)

    # The exit watcher is the only reaper: shielded so that a cancelled caller cannot stop it before
    # teardown has seen the server exit; teardown stops it explicitly at the very end.
    watcher_scope = anyio.CancelScope(shield=True)

    async def watcher() -> None:
        with watcher_scope:
            await _watch_exit(process, pidfd, info, reader_scope, reader_done)

    with _RUNNING_LOCK:
        _RUNNING[info.token] = (pidfd, info.command_line)
    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(reader)
            tasks.start_soon(writer)
            tasks.start_soon(_read_stderr, stderr, info, stderr_done)
            tasks.start_soon(watcher)
            try:
                yield read_receive, write_send, info
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop(
                        process, pidfd, stdin, info, write_send, writer_scope, writer_done, stderr_done
                    )
                watcher_scope.cancel()
                tasks.cancel_scope.cancel()
    finally:
        if not info.exited.is_set():  # pragma: no cover - unkillable, or the task group failed to open
            _signal_server(process, pidfd, signal.SIGKILL)
        with _RUNNING_LOCK:
            _RUNNING.pop(info.token, None)
        if pidfd is not None:
            anyio.notify_closing(pidfd)
            os.close(pidfd)
        for memory_stream in (read_send, read_receive, write_send, write_receive):
            memory_stream.close()
        for pipe in (stdin, stdout, stderr):
            pipe.close()
