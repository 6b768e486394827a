"""A ``zorkmcp`` command killed with SIGKILL leaves nothing behind, whatever its servers did first.

The guard (:mod:`zorkmcp._pidfds`) finds what a dead command started by its ``ZORKMCP_OWNER`` token
and by the sessions of the processes carrying it. These are the cases those did not reach: the
guard itself killed while the command runs (it was started again only at the next spawn, which a
command in a long call never makes), and a child of a server that left its session *and* dropped
its environment (a code-running server's sandbox: ``Popen(..., env={}, start_new_session=True)``)
or wrote over it (``setproctitle``). Real ``zorkmcp`` processes and real servers; everything a test
starts is marked with a variable of its own (or reported by PID) and killed when it ends, passed or
failed.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from play_support import offline_env
from servers.helpers import MISBEHAVING

if TYPE_CHECKING:
    from collections.abc import Iterator

GUARD = 60.0
"""Seconds before a blocking wait gives up (a hang guard, never an assertion on time)."""
GONE_WITHIN = 10.0
"""Seconds what a killed command started gets to be gone (the guard takes milliseconds)."""
MARK = "CHAOSPROBE_MARK"

# A stdio MCP server (stdlib only) whose tool "sandbox" starts a child that leaves the server's
# session and has no ZORKMCP_* variable to find it by, reports the child's PID on the FIFO named by
# argv[1], and stays busy in the call (it never answers, and ignores the end of its input).
_SANDBOX_SERVER = r"""
import ctypes, json, os, subprocess, sys, time
fifo, how = sys.argv[1], sys.argv[2]
SLEEP = [sys.executable, "-S", "-c", "import time\nwhile True: time.sleep(100)"]
CLOBBER = '''
import ctypes, os, time
os.setsid()
stat = open("/proc/self/stat").read().rsplit(")", 1)[1].split()
ctypes.memset(int(stat[47]), ord("x"), int(stat[48]) - int(stat[47]) - 1)  # as setproctitle does
os.write(1, b"clobbered\\n")
while True: time.sleep(100)
'''

def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()

for line in sys.stdin:
    request = json.loads(line)
    method, ident = request.get("method"), request.get("id")
    if ident is None:
        continue
    if method == "initialize":
        version = request["params"]["protocolVersion"]
        send({"jsonrpc": "2.0", "id": ident, "result": {"protocolVersion": version,
              "capabilities": {"tools": {}}, "serverInfo": {"name": "sandbox", "version": "1"}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": [
            {"name": "sandbox", "description": "runs a sandbox", "inputSchema": {"type": "object"}}]}})
    elif method == "tools/call":
        if how == "empty-env":
            child = subprocess.Popen(SLEEP, env={}, start_new_session=True, stdout=subprocess.DEVNULL)
        else:
            child = subprocess.Popen([sys.executable, "-S", "-c", CLOBBER], stdout=subprocess.PIPE)
            assert child.stdout.readline() == b"clobbered\n"
        with open(fifo, "w") as f:
            f.write(f"SANDBOX {child.pid}\n")
        while True:
            time.sleep(100)
    else:
        send({"jsonrpc": "2.0", "id": ident, "result": {}})
while True:
    time.sleep(100)
"""


def _marked(mark: str) -> dict[int, str]:
    """Live processes (not zombies) whose environment carries ``CHAOSPROBE_MARK=<mark>``: command lines."""
    wanted = f"{MARK}={mark}".encode()
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ")
        except OSError:
            continue
        if wanted in environ and state not in (b"Z", b"X"):
            found[int(entry)] = cmdline.decode(errors="replace").strip()
    return found


def _kill_all(pids: set[int]) -> None:
    for pid in pids:
        with suppress(OSError):
            pidfd = os.pidfd_open(pid)
            try:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            finally:
                os.close(pidfd)


@contextmanager
def _marked_command(
    argv: list[str], cwd: Path, also: set[int]
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``zorkmcp ARGV`` in a session of its own, offline, marked; leaving, whatever is marked (and the
    PIDs put in ``also``) is killed."""
    mark = uuid.uuid4().hex
    command = subprocess.Popen(
        [sys.executable, "-m", "zorkmcp.cli", *argv],
        cwd=cwd,
        env=offline_env(**{MARK: mark}),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        yield command, mark
    finally:
        if command.poll() is None:
            command.kill()
            command.wait()
        _kill_all(set(_marked(mark)) | also)  # only left when the test failed


def _gone(pids: set[int]) -> set[int]:
    """Wait until ``pids`` have ended (at most GONE_WITHIN); those still running."""
    pinned = {}
    for pid in pids:
        with suppress(OSError):
            pinned[os.pidfd_open(pid)] = pid
    try:
        poller = select.poll()
        for pidfd in pinned:
            poller.register(pidfd, select.POLLIN)
        left = set(pinned)
        # real-time: the guard, a process of its own, ends them; bounded by GONE_WITHIN
        while left and (ready := poller.poll(GONE_WITHIN * 1000)):
            for pidfd, _ in ready:
                poller.unregister(pidfd)
                left.discard(pidfd)
        return {pinned[pidfd] for pidfd in left}
    finally:
        for pidfd in pinned:
            os.close(pidfd)


def _read_line(fd: int, prefix: bytes) -> bytes:
    heard = b""
    while prefix not in heard or not heard.split(prefix, 1)[1].endswith(b"\n"):
        assert select.select([fd], [], [], GUARD)[0], f"never heard {prefix!r}: {heard!r}"
        heard += os.read(fd, 4096)
    return heard.split(prefix, 1)[1].split(b"\n", 1)[0]


def _fifo(path: Path) -> int:
    os.mkfifo(path)
    return os.open(path, os.O_RDWR | os.O_NONBLOCK)  # read-write: select() wakes only for data


def _guards(mark: str) -> set[int]:
    return {pid for pid, line in _marked(mark).items() if "zorkmcp/_pidfds.py" in line}


def test_a_guard_killed_while_the_command_runs_is_started_again_and_still_ends_its_servers(
    tmp_path: Path,
) -> None:
    # The server is busy in a call and ignores SIGTERM and the end of its input, with a child that
    # called setsid: killed after its guard, the command left both running for good, under PID 1.
    fifo = tmp_path / "calls.fifo"
    reader = _fifo(fifo)
    server = {"command": sys.executable, "args": ["-S", str(MISBEHAVING), "stubborn,setsid-child"],
              "env": {"MISBEHAVING_CALLS_FIFO": str(fifo)}}  # fmt: skip
    config = {"mcpServers": {"bad": server}}
    (tmp_path / "mcp_config.json").write_text(json.dumps(config))
    argv = ["call", "bad.hang", "{}", "--config", "mcp_config.json", "--timeout", "600"]
    try:
        with _marked_command(argv, tmp_path, set()) as (command, mark):
            _read_line(reader, b"CALL ")
            first = _guards(mark)
            assert len(first) == 1, _marked(mark)
            _kill_all(first)
            assert _gone(first) == set()
            deadline = time.monotonic() + GONE_WITHIN
            while not (second := _guards(mark)) and time.monotonic() < deadline:
                time.sleep(0.01)  # real-time: the command starts its guard again on its own; bounded
            assert len(second) == 1, _marked(mark)
            assert second != first
            started = set(_marked(mark))
            assert len(started) == 4, _marked(mark)  # the command, its new guard, the server, its child
            command.kill()
            command.wait()
            assert _gone(started) == set()
            assert _marked(mark) == {}
    finally:
        os.close(reader)


@pytest.mark.parametrize("how", ["empty-env", "clobbered-env"])
def test_kill_9_ends_a_sandbox_that_left_the_session_and_the_environment_of_its_server(
    tmp_path: Path, how: str
) -> None:
    fifo = tmp_path / "sandbox.fifo"
    reader = _fifo(fifo)
    (tmp_path / "sandbox_server.py").write_text(_SANDBOX_SERVER)
    server = {"command": sys.executable, "args": ["-S", "sandbox_server.py", str(fifo), how]}
    config = {"mcpServers": {"box": server}}
    (tmp_path / "mcp_config.json").write_text(json.dumps(config))
    argv = ["call", "box.sandbox", "{}", "--config", "mcp_config.json", "--timeout", "600"]
    sandbox: set[int] = set()
    try:
        with _marked_command(argv, tmp_path, sandbox) as (command, mark):
            sandbox.add(int(_read_line(reader, b"SANDBOX ")))
            started = set(_marked(mark))
            assert len(started) == 3, _marked(mark)  # the command, its guard, the server
            assert sandbox.isdisjoint(started)  # nothing to find it by but its parent
            command.kill()
            command.wait()
            assert _gone(started | sandbox) == set()
    finally:
        os.close(reader)
