"""SIGTERM stops a command the way Ctrl-C does.

A scheduler's stop (Slurm's ``scancel``, Kubernetes, systemd, ``timeout``, a plain ``kill``) is
SIGTERM, and Python's default for it ends the process on the spot. Our servers still end (their
pipes close; a run of ``zorkmcp eval`` and a turn of ``zorkmcp play`` killed so left no process),
but nothing of the Ctrl-C path runs: ``zorkmcp eval`` writes no summary and does not say how to go
on, ``zorkmcp play`` prints no summary. Under :func:`sigterm_as_ctrl_c`, SIGTERM raises SIGINT in
the process, so the command takes its Ctrl-C path (trio delivers it at a checkpoint, as it does
Ctrl-C), and the exit status is then 143 (128 + SIGTERM) instead of 130.

Only where it is safe to take over: in the main thread, with SIGTERM at its default, and SIGINT at
Python's own handler (a job started in the background of a non-interactive shell ignores SIGINT;
raising it there would leave SIGTERM with no effect at all).
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["EXIT_TERMINATED", "interruption", "sigterm_as_ctrl_c"]

EXIT_TERMINATED: Final = 128 + signal.SIGTERM
"""The exit status of a command stopped by SIGTERM (143), as a shell reports a process it ended."""

_received: list[int] = []


def interruption() -> str:
    """``"SIGTERM"`` if one came under :func:`sigterm_as_ctrl_c` (since it was entered), else ``"Ctrl-C"``."""
    return "SIGTERM" if _received else "Ctrl-C"


@contextmanager
def sigterm_as_ctrl_c() -> Iterator[None]:
    """Within the block SIGTERM raises SIGINT (see the module docstring); the old handler comes back."""
    _received.clear()
    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return

    def handler(signum: int, frame: Any) -> None:
        del frame
        _received.append(signum)
        signal.raise_signal(signal.SIGINT)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
