"""A fork server ("zygote"): one preloaded interpreter that forks a fresh server process per session.

Usage: ``python -m zorkmcp.servers._zygote FD MODULE [MODULE...]``. Each ``MODULE`` is imported once
and must define ``main(argv) -> int``; if it also defines ``zygote_preload()``, that is called once
after the import, to import (or set up) what ``main`` would otherwise import lazily in every child.
Requests arrive on file descriptor ``FD``, one end of a Unix ``SOCK_SEQPACKET`` socket pair (one
JSON message per packet); the owner's side is :mod:`zorkmcp.mcp._zygote`, which documents why this
exists and what it saves.

Messages, zygote to owner:

* ``{"op": "ready", "pid"}`` once every module is imported, or ``{"op": "failed", "error"}`` (then
  the zygote exits with status 1).
* ``{"op": "reaped", "pid"}`` answers each ``reap`` request once the child is reaped.
* ``{"op": "spawned", "pid"}`` answers each ``spawn`` request, in order; ``{"op": "error",
  "error"}`` when ``fork`` failed.
* ``{"op": "exited", "pid", "status"}`` once a child has exited (``status``: its exit code, or
  minus the signal that killed it). The child is **not** reaped: it stays a zombie, so its PID and
  its process-group ID cannot be reused while the owner kills what is left of its group.

Owner to zygote:

* ``{"op": "spawn", "module", "argv", "env", "cwd"}`` with three file descriptors attached (the
  child's stdin, stdout and stderr). The child runs in its own session and process group, with
  ``env`` as its whole environment, and calls ``module.main(argv)``.
* ``{"op": "reap", "pid"}``: the owner has seen the child exit and killed its group; reap it now.

When the owner closes its end (or dies), every unreaped child's process group is killed (safe:
those children are unreaped), they are reaped, and the zygote exits with status 0.

Standard library only, like the servers it preloads: this module is on the start-up path of every
episode.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import importlib
import json
import os
import selectors
import signal
import socket
import sys
import traceback
from typing import Any

__all__ = ["main"]

_MAX_MESSAGE = 1 << 18
"""The largest request accepted (a spawn request carries the child's whole environment; the
owner's socket buffer, about 200 KiB, bounds it first)."""


def _send(control: socket.socket, message: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):  # the owner is gone: the EOF ends the loop
        control.send(json.dumps(message).encode())


def _status(info: os.waitid_result) -> int:
    if info.si_code == os.CLD_EXITED:
        return info.si_status
    return -info.si_status  # killed or dumped core: minus the signal


def _fresh_stdio() -> None:
    """New ``sys.stdin``/``stdout``/``stderr`` on fds 0-2, encoded as the zygote's own were."""
    streams: list[Any] = []
    for fd, old in ((0, sys.__stdin__), (1, sys.__stdout__), (2, sys.__stderr__)):
        encoding = old.encoding if old is not None else "utf-8"
        errors = old.errors if old is not None else "strict"
        mode = "r" if fd == 0 else "w"
        # stderr is line-buffered, as in a fresh interpreter.
        buffering = 1 if fd == 2 else -1
        streams.append(open(fd, mode, buffering=buffering, encoding=encoding, errors=errors, closefd=False))
    sys.stdin, sys.stdout, sys.stderr = streams
    # The originals too, as at start-up: they keep the streams alive when a server rebinds
    # sys.stdout (the thinking server does), and a collected wrapper closes its buffer.
    vars(sys).update(__stdin__=streams[0], __stdout__=streams[1], __stderr__=streams[2])


def _exit_code(exc: SystemExit) -> int:
    """What the interpreter would exit with for ``exc``."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


def _run_child(module: Any, argv: list[str]) -> int:
    try:
        code = module.main(argv)
        return code if isinstance(code, int) else 0
    except SystemExit as exc:
        return _exit_code(exc)
    except BaseException:  # noqa: BLE001 - the child must end with os._exit, whatever happened
        traceback.print_exc()
        return 1


class _Zygote:
    def __init__(self, control: socket.socket, modules: dict[str, Any]) -> None:
        self.control = control
        self.modules = modules
        self.children: set[int] = set()
        """Forked and not yet reaped."""
        self.reported: set[int] = set()
        """Children whose exit was reported to the owner (still unreaped until it asks)."""
        self.dispositions = {sig: signal.getsignal(sig) for sig in (signal.SIGCHLD,)}
        self.wake_read, self.wake_write = os.pipe()
        os.set_blocking(self.wake_read, False)
        os.set_blocking(self.wake_write, False)
        self.selector = selectors.DefaultSelector()

    def serve(self) -> int:
        signal.signal(signal.SIGCHLD, lambda signum, frame: None)  # a handler, so the wake-up fd fires
        signal.set_wakeup_fd(self.wake_write, warn_on_full_buffer=False)
        self.selector.register(self.control, selectors.EVENT_READ, "control")
        self.selector.register(self.wake_read, selectors.EVENT_READ, "wake")
        _send(self.control, {"op": "ready", "pid": os.getpid()})
        while True:
            for key, _ in self.selector.select():
                if key.data == "wake":
                    self.drain_wakeups()
                    self.report_exits()
                elif not self.handle_request():
                    self.shut_down()
                    return 0
            self.report_exits()  # a child may have exited while a request was handled

    def drain_wakeups(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while os.read(self.wake_read, 4096):
                pass

    def report_exits(self) -> None:
        """Tell the owner about every child that exited; leave it a zombie (see the module doc)."""
        for pid in sorted(self.children - self.reported):
            try:
                info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:  # pragma: no cover - reaped behind our back
                self.children.discard(pid)
                continue
            if info is None:
                continue
            self.reported.add(pid)
            _send(self.control, {"op": "exited", "pid": pid, "status": _status(info)})

    def handle_request(self) -> bool:
        """Handle one request; ``False`` once the owner has closed its end."""
        try:
            data, fds, _flags, _address = socket.recv_fds(self.control, _MAX_MESSAGE, 3)
        except InterruptedError:  # pragma: no cover - PEP 475 retries; kept for clarity
            return True
        except (ConnectionResetError, BrokenPipeError):
            return False
        if not data:
            for fd in fds:
                os.close(fd)
            return False
        try:
            request = json.loads(data)
            op = request.get("op")
            if op == "spawn" and len(fds) == 3:
                self.spawn(request, fds)
            elif op == "reap":
                self.reap(int(request["pid"]))
        finally:
            for fd in fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
        return True

    def spawn(self, request: dict[str, Any], fds: list[int]) -> None:
        module = self.modules.get(request.get("module", ""))
        if module is None:
            _send(self.control, {"op": "error", "error": f"module not preloaded: {request.get('module')!r}"})
            return
        try:
            pid = os.fork()
        except OSError as exc:
            _send(self.control, {"op": "error", "error": f"fork failed: {exc}", "errno": exc.errno})
            return
        if pid == 0:  # pragma: no cover - runs in the child (coverage does not follow os.fork)
            self.become_child(module, request, fds)
        self.children.add(pid)
        _send(self.control, {"op": "spawned", "pid": pid})

    def become_child(self, module: Any, request: dict[str, Any], fds: list[int]) -> None:  # pragma: no cover
        code = 1
        try:
            os.setsid()
            signal.set_wakeup_fd(-1)
            for sig, disposition in self.dispositions.items():
                signal.signal(sig, disposition)
            self.selector.close()
            self.control.close()
            os.close(self.wake_read)
            os.close(self.wake_write)
            for target, fd in enumerate(fds):
                os.dup2(fd, target)
            for fd in fds:
                if fd > 2:
                    os.close(fd)
            _fresh_stdio()
            os.environ.clear()
            os.environ.update(request.get("env") or {})
            cwd = request.get("cwd")
            if cwd:
                os.chdir(cwd)
            argv = [str(arg) for arg in request.get("argv") or []]
            sys.argv = [getattr(module, "__file__", None) or module.__name__, *argv]
            code = _run_child(module, argv)
        except BaseException:  # noqa: BLE001 - whatever happens, the child must not return here
            with contextlib.suppress(BaseException):
                traceback.print_exc()
        finally:
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(BaseException):
                    stream.flush()
            os._exit(code & 0xFF if code >= 0 else 1)

    def reap(self, pid: int) -> None:
        if pid in self.reported:  # only an exited child is reaped (waitpid must not block the loop)
            self.children.discard(pid)
            self.reported.discard(pid)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        _send(self.control, {"op": "reaped", "pid": pid})

    def shut_down(self) -> None:
        """The owner is gone: kill every unreaped child's group (safe: unreaped), then reap them."""
        for pid in self.children:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        for pid in self.children:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
        self.children.clear()


def main(argv: list[str] | None = None) -> int:
    """Preload the modules, then serve spawn requests until the control socket closes.

    Args:
        argv: ``[FD, MODULE, ...]`` (default ``sys.argv[1:]``).

    Returns:
        The exit status: 0 once the owner closed the socket, 1 if a module (or its
        ``zygote_preload``) failed, 2 on a usage error.
    """
    args = sys.argv[1:] if argv is None else list(argv)
    if len(args) < 2 or not args[0].isdigit():
        print("usage: python -m zorkmcp.servers._zygote FD MODULE [MODULE...]", file=sys.stderr)
        return 2
    control = socket.socket(fileno=int(args[0]))
    try:
        modules = {name: importlib.import_module(name) for name in args[1:]}
        for name, module in modules.items():
            if not callable(getattr(module, "main", None)):
                raise TypeError(f"module {name!r} has no main(argv)")
            preload = getattr(module, "zygote_preload", None)
            if callable(preload):
                preload()
    except Exception as exc:  # noqa: BLE001 - reported to the owner, which falls back to spawning normally
        _send(control, {"op": "failed", "error": "".join(traceback.format_exception_only(exc)).strip()})
        return 1
    # The preloaded objects move to the collector's permanent generation: a child's collections no
    # longer write to them, so their pages stay shared with the zygote. A game server forked from
    # the game's zygote, after a full collection: 5.0 instead of 10.3 MB of private memory.
    gc.freeze()
    try:
        return _Zygote(control, modules).serve()
    except OSError as exc:  # pragma: no cover - the zygote itself failed; the owner sees EOF
        print(f"zygote: {exc}", file=sys.stderr)
        return 1 if exc.errno != errno.EPIPE else 0


if __name__ == "__main__":
    sys.exit(main())
