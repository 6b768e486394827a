"""A process that exits while a stdio server's teardown is still under way leaves no process behind.

``bridge.Bridge`` runs its event loop in a daemon thread, which the interpreter drops at exit; a
second Ctrl-C while ``zorkmcp play`` stopped its servers ended the process there, and a server that
ignores the end of its input (and SIGTERM) ran on under PID 1 with its children. Real processes: a
Python program whose daemon thread holds such a server and is stopping it when the program ends.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING

import pytest
from servers.helpers import is_alive

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not hasattr(os, "pidfd_open"), reason="needs /proc and pidfds"
)

GUARD = 60.0
"""Seconds before the program is given up on (a hang guard, never an assertion on time)."""

STUBBORN = """\
import os, signal
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # and it never reads its stdin: only SIGKILL ends it
children = []
for new_session in (False, True):
    child = os.fork()
    if child == 0:
        if new_session:
            os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        while True:
            signal.pause()
    children.append(child)
print(*children, flush=True)
while True:
    signal.pause()
"""
"""A server that ignores the end of its input and SIGTERM, with a child in its group and one that
left it (``setsid``); it writes their PIDs on stdout."""

PROGRAM = textwrap.dedent(
    """\
    import sys, threading
    import trio
    from zorkmcp.mcp._stdio import open_stdio_transport

    stopping = threading.Event()

    async def serve():
        async with open_stdio_transport(sys.executable, ["-c", sys.argv[1]]) as (read, _, info):
            children = (await read.receive()).line
            print(info.pid, children, flush=True)
            stopping.set()  # leaving the block: the teardown gives the server its grace first

    threading.Thread(target=trio.run, args=(serve,), daemon=True).start()
    stopping.wait()
    """
)
"""Holds the server in a daemon thread's event loop (as ``bridge.Bridge`` does) and ends as soon as
that loop begins to stop it."""


def test_a_server_still_stopping_at_exit_is_killed_with_its_children(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, STUBBORN],
        cwd=tmp_path, capture_output=True, text=True, timeout=GUARD, check=False,
    )  # fmt: skip
    pids = [int(word) for word in done.stdout.split()]
    assert len(pids) == 3, (done.stdout, done.stderr)
    try:
        assert done.returncode == 0, done.stderr
        assert [is_alive(pid) for pid in pids] == [False, False, False]  # server, its child, the setsid one
        assert done.stderr.endswith(  # after the warning about its line of PIDs (not JSON-RPC)
            f"MCP server {sys.executable} -c '{STUBBORN}' was not stopped yet when the process exited: "
            "killed, with what it started\n"
        )
    finally:
        for pid in pids:  # the old code left them running
            if is_alive(pid):
                os.kill(pid, signal.SIGKILL)
