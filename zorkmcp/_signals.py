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
ignores SIGHUP: it stays ignored), and SIGINT at Python's own handler or ignored.

A job started in the background of a non-interactive shell (``cmd &`` in a script, ``bash -c``, a
CI step; ``timeout``, Slurm and systemd then stop it with SIGTERM) has SIGINT ignored: the shell asks
that a Ctrl-C in its terminal stop the script, not the job. trio puts in its own SIGINT handler
(which delivers ``KeyboardInterrupt`` at a checkpoint) only where Python's is in place as
``trio.run`` starts, so with SIGINT ignored the Ctrl-C path could not be reached. There, while the
process runs one thread (``/proc/self/task``), SIGINT is blocked (``pthread_sigmask``) and Python's
handler is put back: a real SIGINT stays pending, never delivered, in this thread and in every
thread started after (a thread starts with the mask of the one that starts it), while trio, and
:func:`held_ctrl_c`, put in their handlers as under a terminal. SIGTERM and SIGHUP then call the
SIGINT handler in place, as the signal would have called it (in the main thread; from another,
``_thread.interrupt_main``), without the signal: the same Ctrl-C path, exit status 143 or 129. Once
the block ends, SIGINT is ignored again (a SIGINT held meanwhile is dropped) and unblocked. Nothing
of trio's private machinery is used: only its documented rule for when it puts in its handler
(``tests/test_sigprobe_background.py`` fails if that changes). A process started meanwhile (a
server) inherits SIGINT blocked instead of ignored, and at its default: a SIGINT sent to it waits
unseen until it unblocks the signal (Python never does by itself). Each server runs in a session of
its own, where a terminal's Ctrl-C does not reach anyway.

Where SIGINT is ignored and cannot be held so (another thread already runs, or ``/proc`` cannot
tell), SIGTERM and SIGHUP keep ending the command on the spot, but not alone: the servers it started
end first (:func:`_end_with_servers`). An idle server would end anyway, as its pipes close; one busy
in a call, or one that ignores the end of its input, would outlive the command (it ran on under PID 1).
And the terminal is put back first (:func:`on_sudden_end`): a live view had turned its echo off and
hidden its cursor, and the shell was left with neither. SIGKILL (``kill -9``, the OOM killer) cannot
be handled at all: then the command's guard (:mod:`zorkmcp._pidfds`) ends its servers.

Once a command is stopping, what it still writes (``zorkmcp eval``'s summary and ``report.html``)
takes a moment, and a user who finds the first Ctrl-C slow presses it again. Under :func:`held_ctrl_c`
that press is held back: the command finishes, and says so (a line on stderr); a further press
stops it there, and the command says what it did not write (a press that comes while a finalizer
runs is raised a moment later, once it has run: there it would be dropped). A Ctrl-C that Python
itself raises while a finalizer runs (``__del__``: Jericho's ``FrotzEnv`` as the run's games are
freed) can only be dropped there; under :func:`stops_as_ctrl_c` it is counted
(:func:`ctrl_c_in_finalizers`) instead of being printed as an ``Exception ignored in …`` traceback,
and a command may count it as a press.
"""

from __future__ import annotations

import _thread
import os
import signal
import sys
import threading
from contextlib import ExitStack, contextmanager, suppress
from functools import partial
from typing import TYPE_CHECKING, Any, Final

from ._pidfds import guard_pid, process_children, wait_for_pidfds

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

__all__ = [
    "CtrlCHold",
    "ctrl_c_again_later",
    "ctrl_c_in_finalizers",
    "held_ctrl_c",
    "interruption",
    "on_sudden_end",
    "reader_gone",
    "stopped_status",
    "stops_as_ctrl_c",
]

_STOPS: Final = (signal.SIGTERM, signal.SIGHUP)
_received: list[signal.Signals] = []
_armed: list[bool] = []
"""Non-empty while :func:`stops_as_ctrl_c` has taken over: SIGINT then stops the command."""
_blocked: list[bool] = []
"""Non-empty while :func:`stops_as_ctrl_c` keeps an ignored SIGINT blocked, Python's handler back."""
_in_finalizers: list[bool] = []
"""A ``True`` per Ctrl-C raised in a finalizer, where Python drops it (:func:`_ctrl_c_in_a_finalizer`)."""
_insisting: list[CtrlCHold] = []
"""The :class:`CtrlCHold` whose press insisted (it raised ``KeyboardInterrupt``), until it is released."""
_sudden_end: list[Callable[[], object]] = []
"""What puts the terminal back (:func:`on_sudden_end`) when a signal ends the command on the spot."""
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
    _in_finalizers.clear()
    with ExitStack() as handlers:
        main = threading.current_thread() is threading.main_thread()
        if main and signal.getsignal(signal.SIGINT) is signal.SIG_IGN and _the_only_thread():
            # SIGINT ignored (a job in the background of a script): it stays so for the kernel (blocked,
            # in this thread and every thread and process started from it), while Python's handler is
            # back, for trio and the Ctrl-C path that SIGTERM and SIGHUP take (see the module docstring)
            unblocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
            handlers.callback(signal.pthread_sigmask, signal.SIG_SETMASK, unblocked)
            handlers.callback(signal.signal, signal.SIGINT, signal.SIG_IGN)  # first: drops a SIGINT held
            signal.signal(signal.SIGINT, signal.default_int_handler)
            _blocked.append(True)
            handlers.callback(_blocked.clear)
        if main and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            for stop in _STOPS:
                if signal.getsignal(stop) is signal.SIG_DFL:
                    handlers.callback(signal.signal, stop, signal.signal(stop, _as_ctrl_c))
            _armed.append(True)
            _terminal[:] = [fd for fd in (1, 2) if os.isatty(fd)]
            handlers.callback(_armed.clear)
            handlers.callback(setattr, sys, "unraisablehook", sys.unraisablehook)
            sys.unraisablehook = partial(_ctrl_c_in_a_finalizer, sys.unraisablehook)
        elif main:
            for stop in _STOPS:
                if signal.getsignal(stop) is signal.SIG_DFL:
                    handlers.callback(signal.signal, stop, signal.signal(stop, _end_with_servers))
        yield


def _ctrl_c_in_a_finalizer(previous: Callable[[Any], object], unraisable: Any) -> None:
    """``sys.unraisablehook``: a Ctrl-C raised in a finalizer is counted, not printed as a traceback.

    Python raises ``KeyboardInterrupt`` in whatever code runs when the signal is handled; in a
    ``__del__`` it can only print it (``Exception ignored in: <function FrotzEnv.__del__ …>``) and
    go on, as if the key had not been pressed. It cannot be delivered again from here: a signal
    raised in this hook is handled at once, in this hook. A press that insisted on a
    :class:`CtrlCHold` is raised again a moment later (a finalizer its handler could not see, a
    ``weakref.finalize`` callback or a generator closed as it is freed: the command would otherwise
    go on waiting); any other is counted (:func:`ctrl_c_in_finalizers`), for a command that can act
    on it once it gets there.
    """
    if isinstance(unraisable.exc_value, KeyboardInterrupt):
        if _insisting and _insisting[-1].raise_later():
            return
        _in_finalizers.append(True)
        return
    previous(unraisable)


def ctrl_c_in_finalizers() -> int:
    """How many Ctrl-C Python raised in a finalizer, where it was dropped, since :func:`stops_as_ctrl_c`."""
    return len(_in_finalizers)


class CtrlCHold:
    """Ctrl-C held back while a command finishes what it must still write; see :func:`held_ctrl_c`.

    Attributes:
        pressed: the presses since :meth:`hold` (counting the ``pressed`` it was given).
    """

    def __init__(self, notice: str) -> None:
        self.notice = notice
        self.pressed = 0
        self.holding = False
        """Whether :meth:`hold` was called: the command is finishing."""
        self._taken = False
        self._alarm = False
        """SIGALRM is this hold's: a press that came while a finalizer ran is raised at it."""
        self._ended = False

    def hold(self, *, pressed: int = 0, loop_ending: bool = False) -> None:
        """From now on hold Ctrl-C back: the first press writes the notice, the next raises it.

        Called again while holding, it keeps the presses already seen (at least ``pressed``).

        SIGTERM, SIGHUP and a reader gone take the same path (:func:`stops_as_ctrl_c`). Nothing
        changes outside the main thread, or where Ctrl-C is not Python's own
        (``signal.default_int_handler``). In a job in the background of a script, where the shell
        ignores SIGINT, :func:`stops_as_ctrl_c` holds real presses back (blocked) and puts Python's
        handler back: then the hold counts SIGTERM and SIGHUP, each a press.

        Args:
            pressed: presses already seen (``1``: the command caught one and says so itself), so the
                next press is the one that insists.
            loop_ending: called as a trio loop ends (an instrument's ``after_run``): Ctrl-C is still
                the loop's, which would give it back to Python's own right after; taken over instead.
        """
        self.pressed = max(self.pressed, pressed) if self.holding else pressed
        self.holding = True
        current = signal.getsignal(signal.SIGINT)
        if (
            not self._taken
            and threading.current_thread() is threading.main_thread()
            and (current is signal.default_int_handler or (loop_ending and callable(current)))
        ):
            signal.signal(signal.SIGINT, self._handle)
            self._taken = True

    def end(self) -> None:
        """The command has given up finishing (a press insisted): further presses change nothing."""
        self._ended = True
        if self in _insisting:
            _insisting.remove(self)

    def raise_later(self) -> bool:
        """Raise the press that insisted again in a moment: Python dropped it in a finalizer.

        ``False`` when there is nothing to raise (the command has given up finishing, or the hold is
        released) or it cannot be put off (SIGALRM is not free).
        """
        return self._taken and not self._ended and self.pressed >= 2 and self._later()

    def release(self) -> None:
        """Ctrl-C is Python's own again (as before the hold, or after the loop it took over from)."""
        if self._taken and signal.getsignal(signal.SIGINT) == self._handle:
            signal.signal(signal.SIGINT, signal.default_int_handler)
        self._taken = False
        if self in _insisting:
            _insisting.remove(self)
        if self._alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            self._alarm = False

    def _handle(self, signum: int, frame: Any) -> None:
        if self._ended:
            return
        if signum == signal.SIGINT:  # else SIGALRM: a press that came while a finalizer ran, raised now
            self.pressed += 1
        if self.pressed < 2:
            with suppress(OSError):  # a signal handler: the descriptor, not a stream another write holds
                os.write(2, self.notice.encode("utf-8", "backslashreplace") + b"\n")
            return
        if _in_a_finalizer(frame) and self._later():
            return
        if self not in _insisting:  # raised where Python drops it (a finalizer not seen here): again later
            _insisting.append(self)
        raise KeyboardInterrupt  # pressed again: the user insists

    def _later(self) -> bool:
        """Raise the press once the finalizer it came in has run: at SIGALRM, in :data:`FINALIZER_WAIT`.

        A ``KeyboardInterrupt`` raised in a finalizer (``__del__``) is dropped there: the press would
        be lost. Whether it can be put off: SIGALRM is free (at its default), in the main thread.
        """
        if not self._alarm:
            if signal.getsignal(signal.SIGALRM) is not signal.SIG_DFL:
                return False
            signal.signal(signal.SIGALRM, self._handle)
            self._alarm = True
        signal.setitimer(signal.ITIMER_REAL, FINALIZER_WAIT)
        return True


def ctrl_c_again_later() -> bool:
    """A press that insisted was raised where it is dropped: raise it again (:meth:`CtrlCHold.raise_later`).

    For a ``KeyboardInterrupt`` caught where Python's unraisable hook does not see it: trio catches
    what an instrument's hook raises, logs it and disables the instrument. ``False``: there is no
    press to raise again.
    """
    return bool(_insisting) and _insisting[-1].raise_later()


FINALIZER_WAIT: Final = 0.01
"""Seconds after which a press that came while a finalizer ran is raised (again put off if another runs)."""


def _in_a_finalizer(frame: Any) -> bool:
    """Whether Python is running a finalizer (``__del__``) in ``frame`` or in a frame that called it."""
    while frame is not None:
        if frame.f_code.co_name == "__del__":
            return True
        frame = frame.f_back
    return False


@contextmanager
def held_ctrl_c(notice: str) -> Iterator[CtrlCHold]:
    """A :class:`CtrlCHold` for the block, not holding yet (call its :meth:`~CtrlCHold.hold`).

    Enter it before the work whose end it guards, so that it outlives everything entered after it
    (a live view that restores the terminal): Ctrl-C is Python's own again once the block ends.

    Args:
        notice: the line written on stderr at the first held press (what the command still does, and
            that pressing again stops it without that).
    """
    hold = CtrlCHold(notice)
    try:
        yield hold
    finally:
        hold.release()


def _as_ctrl_c(signum: int, frame: Any) -> None:
    stop = signal.Signals(signum)
    if stop == signal.SIGHUP:
        _to_null(_terminal)  # the terminal hung up
    _stop(stop, frame)


def reader_gone(fd: int) -> bool:
    """The reader of ``fd`` went away (``EPIPE``): point ``fd`` at ``/dev/null`` and stop as on Ctrl-C.

    Called where a write to standard output failed, in any thread. Returns whether the command
    will stop so (under :func:`stops_as_ctrl_c`); if not, the caller ends it as it would have.
    """
    _to_null([fd])
    if not _armed:
        return False
    _stop(signal.SIGPIPE, sys._getframe(1))
    return True


@contextmanager
def on_sudden_end(restore: Callable[[], object]) -> Iterator[None]:
    """Within the block, ``restore`` is called when SIGTERM or SIGHUP ends the command on the spot
    (where SIGINT is ignored: :func:`_end_with_servers`), before it ends; ``with`` blocks do not
    unwind then. For what the command set on its terminal (:func:`zorkmcp._console.keys_not_echoed`).
    """
    _sudden_end.append(restore)
    try:
        yield
    finally:
        _sudden_end.remove(restore)


SERVERS_GRACE = 1.0
"""Seconds the servers get to end on SIGTERM before SIGKILL, when the command ends on the spot."""


def _end_with_servers(signum: int, frame: Any) -> None:
    """End the command as the signal would (its default), its servers first: SIGTERM, then SIGKILL.

    Blocking, in a process that is ending: nothing else of it runs any more. The servers are found
    as the command's descendants in ``/proc`` (each runs in a session of its own, so no process group
    holds them all), each pinned with a pidfd, so a PID used again meanwhile is never hit. The guard
    (:mod:`zorkmcp._pidfds`) is left alone: once the command has ended, it kills what is left.
    """
    del frame
    for restore in reversed(_sudden_end):
        restore()
    pinned = []
    guard = guard_pid()
    # Linux only (/proc, pidfds), as the session sweep (zorkmcp.mcp._sweep); elsewhere the default alone
    for pid in _descendants(os.getpid()) if hasattr(os, "pidfd_open") and os.path.isdir("/proc") else ():
        if pid == guard:
            continue
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
    children = process_children()
    found, queue = [], list(children.get(root, ()))
    while queue:
        pid = queue.pop(0)
        found.append(pid)
        queue.extend(children.get(pid, ()))
    return found


def _stop(cause: signal.Signals, frame: Any) -> None:
    """Take the Ctrl-C path, remembering the first cause (for :func:`interruption` and the exit status).

    ``frame``: what runs in the main thread (where a signal handler was called, else the caller's).
    Where SIGINT is blocked (:func:`stops_as_ctrl_c`), raising it would leave it pending: Python's
    handler is called instead, as the signal would have called it, here in the main thread, else in
    the main thread at once (``_thread.interrupt_main``, which simulates a SIGINT there).
    """
    if not _received:
        _received.append(cause)
    if not _blocked:
        signal.raise_signal(signal.SIGINT)
    elif threading.current_thread() is not threading.main_thread():
        _thread.interrupt_main(signal.SIGINT)
    elif callable(handler := signal.getsignal(signal.SIGINT)):
        handler(signal.SIGINT, frame)


def _the_only_thread() -> bool:
    """Whether this process runs one thread (any, Python's or a library's: ``/proc/self/task``).

    A signal mask is a thread's own: SIGINT blocked in this thread alone would reach another one,
    and Python would run its handler all the same. Where ``/proc`` cannot tell, ``False``.
    """
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return False


def _to_null(fds: list[int]) -> None:
    """Point these descriptors at ``/dev/null``: what is written to them from now on goes nowhere."""
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in fds:
            os.dup2(null, fd)
    finally:
        os.close(null)
