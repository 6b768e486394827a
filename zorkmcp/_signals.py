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
"""

from __future__ import annotations

import os
import signal
import threading
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any, Final

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
