"""Helpers shared by the MCP tests: configurations of the test servers and process checks."""

from __future__ import annotations

import errno
import json
import os
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import trio

from zorkmcp.config import ServerConfig

__all__ = [
    "MISBEHAVING",
    "RecordingSink",
    "is_alive",
    "misbehaving",
    "modules_loaded_by",
    "pids_from_stderr",
    "session_processes",
    "thinking",
]

MISBEHAVING = Path(__file__).with_name("misbehaving.py")


def misbehaving(mode: str = "ok", *, name: str = "bad", **options: Any) -> ServerConfig:
    """A :class:`ServerConfig` for ``misbehaving.py`` in ``mode`` (``-S``: no site, starts fast)."""
    return ServerConfig(name=name, command=sys.executable, args=("-S", str(MISBEHAVING), mode), **options)


def thinking(*, name: str = "thinking", **options: Any) -> ServerConfig:
    """The embedded reasoning server as a stdio subprocess (as the default mcp_config.json has it)."""
    return ServerConfig(name=name, command=sys.executable, args=("-m", "zorkmcp.servers.thinking"), **options)


def is_alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting for PID 1 to reap it counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    except OSError:  # pragma: no cover - not Linux
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


def session_processes(marker: bytes = b"misbehaving.py") -> list[tuple[int, bytes]]:
    """Live processes started by an MCP session (they carry a ``ZORKMCP_SESSION`` token) from this
    checkout's ``misbehaving.py`` whose command line contains ``marker``, with their command lines.

    Other checkouts' test runs may share the machine: their servers run another path and are ignored.
    """
    own = bytes(MISBEHAVING)
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        tagged = any(item.startswith(b"ZORKMCP_SESSION=") for item in environ.split(b"\0"))
        if tagged and own in cmdline and marker in cmdline and is_alive(pid):
            found.append((pid, cmdline))
    return found


def pids_from_stderr(lines: tuple[str, ...] | list[str], prefix: str = "PID") -> list[int]:
    """The PIDs the misbehaving server announced on stderr (``PID n`` / ``CHILD n``)."""
    return [int(line.split()[1]) for line in lines if line.startswith(prefix + " ")]


def content_json(content: Any) -> Any:
    """``content`` as JSON (the toolbox already parses JSON object text)."""
    return json.loads(content) if isinstance(content, str) else content


class RecordingSink:
    """An ``EventSink`` that keeps everything, for assertions."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.lines: list[tuple[str, str]] = []

    def emit(self, event_type: str, /, **fields: Any) -> None:
        self.events.append((event_type, fields))

    def log(self, level: str, message: str, /) -> None:
        self.lines.append((level, message))

    def types(self) -> list[str]:
        return [event for event, _ in self.events]


def modules_loaded_by(statement: str, modules: tuple[str, ...]) -> list[str]:
    """Which of ``modules`` a fresh interpreter has imported after running ``statement``."""
    code = f"import sys; {statement}; print(','.join(m for m in {modules!r} if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return [name for name in done.stdout.strip().split(",") if name]


def fifo_at(path: Path) -> Path:
    os.mkfifo(path)
    return path


async def release(fifo: Path, *, guard: float = 60.0) -> None:
    """Write one line to ``fifo`` for the server waiting on it (in a thread; the clock stands still).

    The open waits for the server to open its end; a server that never does fails the test after
    ``guard`` real seconds instead of hanging it (a hang guard, not a timing).
    """

    def write() -> None:
        give_up = time.monotonic() + guard
        while True:
            try:
                fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO until a reader has it open
                break
            except OSError as exc:
                if exc.errno != errno.ENXIO or time.monotonic() > give_up:
                    raise
                select.select([], [], [], 0.001)
        try:
            os.write(fd, b"go\n")
        finally:
            os.close(fd)

    await trio.to_thread.run_sync(write)


async def announced(fifo: Path, count: int = 1, *, guard: float = 60.0) -> list[str]:
    """The first ``count`` lines servers write to ``fifo`` (read in a thread; the clock stands still).

    Each writer opens the FIFO for one line. The reader holds it open for writing too, so its open
    never blocks and no writer's close ends the reading; a server that never announces itself fails
    the test after ``guard`` real seconds instead of hanging it (a hang guard, not a timing).
    """

    def read() -> list[str]:
        fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
        try:
            data = b""
            give_up = time.monotonic() + guard
            while data.count(b"\n") < count:
                ready, _, _ = select.select([fd], [], [], max(0.0, give_up - time.monotonic()))
                if not ready:
                    raise AssertionError(f"{count} server(s) did not announce themselves on {fifo}: {data!r}")
                data += os.read(fd, 4096)
        finally:
            os.close(fd)
        return [line.strip() for line in data.decode().splitlines()[:count]]

    return await trio.to_thread.run_sync(read)
