"""Ctrl-C while ``zorkmcp tools`` or ``call`` waits for a server to start: 130, no traceback, no process.

The server (``tests/servers/misbehaving.py``, ``no-init``: it never answers ``initialize``) writes its
PID to a FIFO once it is spawned, so the test sends SIGINT exactly while the command waits for it,
without polling. The command then stops the server and exits 130 with one line, ``interrupted``.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from typing import TYPE_CHECKING

import pytest
from play_support import default_sigint, descendants, is_running, offline_env
from servers.helpers import MISBEHAVING, fifo_at

if TYPE_CHECKING:
    from pathlib import Path

SAFETY_TIMEOUT = 60  # seconds; only reached when something hangs (never a wall-clock assertion)


def _spawned(fifo: Path, process: subprocess.Popen[str]) -> str:
    """The line the server writes to ``fifo`` once it runs (a hang guard, not a timing); the command
    writing on stderr first (it ended: a usage error) fails the test at once."""
    assert process.stderr is not None
    fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # never blocks; no writer's close ends the read
    try:
        data = b""
        give_up = time.monotonic() + SAFETY_TIMEOUT
        while b"\n" not in data:
            err = process.stderr.fileno()
            ready, _, _ = select.select([fd, err], [], [], max(0.0, give_up - time.monotonic()))
            if err in ready:
                raise AssertionError(f"the command wrote before its server started: {process.communicate()}")
            if not ready:
                raise AssertionError(f"the server did not start: {data!r}")
            data += os.read(fd, 4096)
    finally:
        os.close(fd)
    return data.decode().strip()


@pytest.mark.parametrize(
    "args", [["tools"], ["tools", "--json", "slow"], ["call", "slow.echo", '{"text": "x"}']], ids=str
)
def test_ctrl_c_while_a_server_starts_exits_130_and_leaves_no_process(
    tmp_path: Path, args: list[str]
) -> None:
    fifo = fifo_at(tmp_path / "ready")
    server = {
        "command": sys.executable,
        "args": ["-S", str(MISBEHAVING), "no-init"],
        "env": {"MISBEHAVING_READY_FIFO": str(fifo)},
    }
    (tmp_path / "mcp_config.json").write_text(json.dumps({"mcpServers": {"slow": server}}))
    (tmp_path / "pyproject.toml").write_text(
        "[tool.zorkgpt.mcp]\nconfig_file = 'mcp_config.json'\nserver_startup_timeout_seconds = 600\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "zorkmcp.cli", *args],
        cwd=tmp_path, env=offline_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=default_sigint,
    )  # fmt: skip
    try:
        announced = _spawned(fifo, process)
        children = descendants(process.pid)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=SAFETY_TIMEOUT)
    finally:
        if process.returncode is None:
            process.kill()
            process.wait()
    assert (process.returncode, out, err) == (130, "", "interrupted\n")
    pid = int(announced.removeprefix("PID "))
    assert pid in children
    assert [child for child, (start, _) in children.items() if is_running(child, start)] == []
