"""SIGTERM and SIGHUP, and a reader of standard output that goes away, stop a command the way Ctrl-C does.

A scheduler's stop (Slurm's ``scancel``, Kubernetes, systemd, ``timeout``, a plain ``kill``) is
SIGTERM, and a closed terminal (an ssh connection that drops, a terminal window closed) is SIGHUP.
Python's default for either ends the process on the spot. Our servers still end (their pipes close;
a run of ``zorkmcp eval`` and a turn of ``zorkmcp play`` killed so left no process), but nothing of
the Ctrl-C path runs: ``zorkmcp eval`` writes no summary and does not say how to go on, ``zorkmcp
play`` prints no summary. Under :func:`stops_as_ctrl_c`, either signal raises SIGINT in the process,
so the command takes its Ctrl-C path (trio delivers it at a checkpoint, as it does Ctrl-C), and the
exit status is then 128 + the signal (143 for SIGTERM, 129 for SIGHUP) instead of 130.

After SIGHUP the terminal is gone: writing to it fails (``EIO``), which would break the Ctrl-C path
halfway. So standard output and error, where they are that terminal, are pointed at ``/dev/null``
first (what ``nohup`` would have done): the files are written, and what would have been shown is
not. Output redirected to a file or a pipe stays where it goes.

A reader of standard output that goes away (``zorkmcp eval | head``) is the same kind of stop: the
next write fails with ``EPIPE``, and instead of the exception (a traceback through the run's task
group, no summary) :func:`reader_gone` points that output at ``/dev/null`` and raises SIGINT; the
exit status is 141 (128 + SIGPIPE, what a shell reports for a writer that SIGPIPE ended).

Only where it is safe to take over: in the main thread, with the signal at its default (``nohup``
ignores SIGHUP: it stays ignored), and SIGINT at Python's own handler (a job started in the
background of a non-interactive shell ignores SIGINT; raising it there would leave the signal with
no effect at all).

Where SIGINT is ignored, SIGTERM and SIGHUP keep ending the command on the spot, but not alone: the
servers it started end first (:func:`_end_with_servers`). An idle server would end anyway, as its
pipes close; one busy in a call, or one that ignores the end of its input, would outlive the command
(``zorkmcp call`` started with ``&`` in a script, then ``kill``: the server ran on under PID 1).
"""

from __future__ import annotations

import os
import signal
import threading
from contextlib import ExitStack, contextmanager, suppress
from typing import TYPE_CHECKING, Any, Final

from ._pidfds import wait_for_pidfds

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["interruption", "reader_gone", "stopped_status", "stops_as_ctrl_c"]

_STOPS: Final = (signal.SIGTERM, signal.SIGHUP)
_received: list[signal.Signals] = []
_armed: list[bool] = []
"""Non-empty while :func:`stops_as_ctrl_c` has taken over: SIGINT then stops the command."""
_terminal: list[int] = []
"""Standard output and error where they were a terminal when :func:`stops_as_ctrl_c` took over (once
the terminal hangs up, ``isatty`` says no more)."""


def interruption() -> str:
    """What stopped the command under :func:`stops_as_ctrl_c` (since it was entered): ``"SIGTERM"``,
    ``"SIGHUP"``, ``"SIGPIPE"`` (its output's reader went away) or ``"Ctrl-C"``."""
    return _received[0].name if _received else "Ctrl-C"


def stopped_status(code: int, interrupted: int) -> int:
    """``code``, or 128 + the signal when ``code`` is ``interrupted`` (130) and a signal stopped it."""
    return 128 + _received[0] if code == interrupted and _received else code


@contextmanager
def stops_as_ctrl_c() -> Iterator[None]:
    """Within the block SIGTERM and SIGHUP raise SIGINT (see the module docstring); then the old handlers."""
    _received.clear()
    with ExitStack() as handlers:
        if (
            threading.current_thread() is threading.main_thread()
            and signal.getsignal(signal.SIGINT) is signal.default_int_handler
        ):
            for stop in _STOPS:
                if signal.getsignal(stop) is signal.SIG_DFL:
                    handlers.callback(signal.signal, stop, signal.signal(stop, _as_ctrl_c))
            _armed.append(True)
            _terminal[:] = [fd for fd in (1, 2) if os.isatty(fd)]
            handlers.callback(_armed.clear)
        elif threading.current_thread() is threading.main_thread():
            for stop in _STOPS:
                if signal.getsignal(stop) is signal.SIG_DFL:
                    handlers.callback(signal.signal, stop, signal.signal(stop, _end_with_servers))
        yield


def _as_ctrl_c(signum: int, frame: Any) -> None:
    del frame
    stop = signal.Signals(signum)
    if stop == signal.SIGHUP:
        _to_null(_terminal)  # the terminal hung up
    _stop(stop)


def reader_gone(fd: int) -> bool:
    """The reader of ``fd`` went away (``EPIPE``): point ``fd`` at ``/dev/null`` and stop as on Ctrl-C.

    Called where a write to standard output failed, in any thread. Returns whether the command
    will stop so (under :func:`stops_as_ctrl_c`); if not, the caller ends it as it would have.
    """
    _to_null([fd])
    if not _armed:
        return False
    _stop(signal.SIGPIPE)
    return True


SERVERS_GRACE = 1.0
"""Seconds the servers get to end on SIGTERM before SIGKILL, when the command ends on the spot."""


def _end_with_servers(signum: int, frame: Any) -> None:
    """End the command as the signal would (its default), its servers first: SIGTERM, then SIGKILL.

    Blocking, in a process that is ending: nothing else of it runs any more. The servers are found
    as the command's descendants in ``/proc`` (each runs in a session of its own, so no process group
    holds them all), each pinned with a pidfd, so a PID used again meanwhile is never hit.
    """
    del frame
    pinned = []
    # Linux only (/proc, pidfds), as the session sweep (zorkmcp.mcp._sweep); elsewhere the default alone
    for pid in _descendants(os.getpid()) if hasattr(os, "pidfd_open") and os.path.isdir("/proc") else ():
        with suppress(OSError):
            pinned.append(os.pidfd_open(pid))
    try:
        for pidfd in pinned:
            with suppress(OSError):
                signal.pidfd_send_signal(pidfd, signal.SIGTERM)
        for pidfd in wait_for_pidfds(pinned, SERVERS_GRACE):
            with suppress(OSError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
    finally:
        for pidfd in pinned:
            os.close(pidfd)
    signal.signal(signum, signal.SIG_DFL)
    signal.raise_signal(signum)


def _descendants(root: int) -> list[int]:
    """Every process below ``root``, from ``/proc`` (children before their own children)."""
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with suppress(OSError, ValueError, IndexError):
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    parent = int(f.read().rsplit(b")", 1)[1].split()[1])
                children.setdefault(parent, []).append(int(entry.name))
    found, queue = [], list(children.get(root, ()))
    while queue:
        pid = queue.pop(0)
        found.append(pid)
        queue.extend(children.get(pid, ()))
    return found


def _stop(cause: signal.Signals) -> None:
    """Take the Ctrl-C path, remembering the first cause (for :func:`interruption` and the exit status)."""
    if not _received:
        _received.append(cause)
    signal.raise_signal(signal.SIGINT)


def _to_null(fds: list[int]) -> None:
    """Point these descriptors at ``/dev/null``: what is written to them from now on goes nowhere."""
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in fds:
            os.dup2(null, fd)
    finally:
        os.close(null)
