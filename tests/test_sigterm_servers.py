"""Where SIGINT is ignored (a job started with ``&`` in a script), SIGTERM takes the Ctrl-C path, and
its servers end: none is left under PID 1, even one that is busy in a call or ignores both SIGTERM
and the end of its input."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
from typing import TYPE_CHECKING

from play_support import offline_env
from servers.helpers import MISBEHAVING

if TYPE_CHECKING:
    from pathlib import Path

GUARD = 60.0
"""Seconds before a blocking wait gives up (a hang guard, never an assertion on time)."""


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_sigterm_with_sigint_ignored_ends_the_servers_before_the_command(tmp_path: Path) -> None:
    # "stubborn" ignores SIGTERM and the end of its input, as a server busy in a long call would keep
    # running after its pipes close: only SIGKILL ends it.
    fifo = tmp_path / "ready.fifo"
    os.mkfifo(fifo)
    server = {"command": sys.executable, "args": ["-S", str(MISBEHAVING), "stubborn"],
              "env": {"MISBEHAVING_READY_FIFO": str(fifo), "MISBEHAVING_CALLS_FIFO": str(fifo)}}  # fmt: skip
    (tmp_path / "mcp_config.json").write_text(json.dumps({"mcpServers": {"bad": server}}))
    reader = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # read-write: select() wakes only for data
    command = subprocess.Popen(
        [sys.executable, "-m", "zorkmcp.cli", "call", "bad.hang", "{}", "--config", "mcp_config.json",
         "--timeout", "600"],
        cwd=tmp_path, env=offline_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=_ignore_sigint,
    )  # fmt: skip
    server_pid = None
    try:
        heard = b""
        while b"CALL hang\n" not in heard:  # started, then in the call
            assert select.select([reader], [], [], GUARD)[0], f"the server never got the call: {heard!r}"
            heard += os.read(reader, 4096)
        server_pid = int(heard.split()[1])
        pidfd = os.pidfd_open(server_pid)
        command.send_signal(signal.SIGTERM)
        command.communicate(timeout=GUARD)
        assert command.returncode == 143  # the Ctrl-C path's status for SIGTERM
        try:
            assert select.select([pidfd], [], [], GUARD)[0], f"server {server_pid} outlived zorkmcp"
        finally:
            os.close(pidfd)
    finally:
        os.close(reader)
        if command.returncode is None:
            command.kill()
            command.wait()
        if server_pid is not None:
            try:
                os.kill(server_pid, signal.SIGKILL)  # only reached when the test fails
            except ProcessLookupError:
                pass
