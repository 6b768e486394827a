"""The shipped stdio servers (``python -m zorkmcp.servers.thinking``, ``python -m zorkmcp.game.server``)
as real processes, fed what a client or a user at a terminal may give them.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import trio

REPO = Path(__file__).resolve().parents[1]
GAME = REPO / "zorkmcp" / "game" / "data" / "zork1.z3"
THINK_SERVER = [sys.executable, "-m", "zorkmcp.servers.thinking"]
GAME_SERVER = [sys.executable, "-m", "zorkmcp.game.server", "--game", str(GAME), "--seed", "12"]

GUARD = 60.0
"""Seconds before a blocking wait gives up (a hang guard, never an assertion on time)."""


def _line(message: Any) -> bytes:
    return json.dumps(message).encode() + b"\n"


# --- JSON nested deeper than the decoder recurses ---------------------------------------------------


@pytest.mark.parametrize("command", [THINK_SERVER, GAME_SERVER], ids=["think", "game"])
async def test_json_nested_too_deeply_is_a_parse_error_and_the_server_lives_on(command: list[str]) -> None:
    # A line of 100,000 "[" is one JSON-RPC parse error (-32700, id null); json.loads raised
    # RecursionError, which is no ValueError: the server died with a traceback, exit 1, and every
    # later request of the session went unanswered.
    thought = "[" * 50_000 + "]" * 50_000
    lines = [
        b"[" * 100_000 + b"\n",
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "arguments": {"a": '
        + thought.encode()
        + b"}}}\n",
        _line({"jsonrpc": "2.0", "id": 2, "method": "ping"}),
    ]
    done = await trio.run_process(
        command, stdin=b"".join(lines), capture_stdout=True, capture_stderr=True, check=False
    )
    assert (done.returncode, done.stderr) == (0, b"")
    parse_error = {"code": -32700, "message": "Parse error: the JSON is nested too deeply"}
    assert [json.loads(line) for line in done.stdout.splitlines()] == [
        {"jsonrpc": "2.0", "id": None, "error": parse_error},
        {"jsonrpc": "2.0", "id": None, "error": parse_error},
        {"jsonrpc": "2.0", "id": 2, "result": {}},
    ]


# --- the think server's command line ----------------------------------------------------------------

THINK_HELP = """\
usage: python -m zorkmcp.servers.thinking [-h] [--sdk]

Serve MCP over stdio (newline-delimited JSON-RPC on stdin/stdout) until stdin closes: one tool,
think (thought, thoughtNumber, totalThoughts, nextThoughtNeeded, ...), which records a thought
and answers with the progress as JSON. Put it in an MCP client's configuration, e.g.
{"mcpServers": {"thinking": {"command": "python3", "args": ["-m", "zorkmcp.servers.thinking"]}}}

options:
  -h, --help  show this help and exit
  --sdk       serve the same tool with the MCP SDK's server (about half a second slower to start)
"""


@pytest.mark.parametrize("flag", ["--help", "-h"])
async def test_think_server_help_prints_the_usage_and_exits_0(flag: str) -> None:
    # It said "usage: ... (unexpected: --help)" on stderr and exited 2, as for a wrong flag; the game
    # server's --help (argparse) exits 0.
    done = await trio.run_process(
        [*THINK_SERVER, flag], stdin=b"", capture_stdout=True, capture_stderr=True, check=False
    )
    assert (done.returncode, done.stdout.decode(), done.stderr) == (0, THINK_HELP, b"")


async def test_think_server_names_a_wrong_flag_and_where_help_is() -> None:
    done = await trio.run_process(
        [*THINK_SERVER, "--port", "3"], stdin=b"", capture_stdout=True, capture_stderr=True, check=False
    )
    assert (done.returncode, done.stdout, done.stderr.decode()) == (
        2,
        b"",
        "usage: python -m zorkmcp.servers.thinking [-h] [--sdk]  (unexpected: --port 3; --help says more)\n",
    )


# --- Ctrl-C while the game server opens its game ----------------------------------------------------


def _wait_for_reader(fifo: Path, server: subprocess.Popen[bytes]) -> int:
    """Open ``fifo`` for writing once the server has opened it to read (it is then blocked reading it)."""
    deadline = time.monotonic() + GUARD
    while True:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # ENXIO: no reader yet
                raise
        assert server.poll() is None, server.stderr.read() if server.stderr else b""
        assert time.monotonic() < deadline, "the server never read pyproject.toml"
        time.sleep(0.01)  # real-time: the server is a separate process starting its interpreter


def test_ctrl_c_while_the_game_server_opens_its_game_exits_130_without_a_traceback(tmp_path: Path) -> None:
    # Opening the game (reading ./pyproject.toml, importing Jericho and numpy, loading the story)
    # takes ~0.1 s before the serving loop; Ctrl-C in it printed a KeyboardInterrupt traceback and
    # the process ended by SIGINT instead of the documented 130. A FIFO as ./pyproject.toml holds
    # the server in that phase for as long as the test needs.
    fifo = tmp_path / "pyproject.toml"
    os.mkfifo(fifo)
    server = subprocess.Popen(
        [sys.executable, "-m", "zorkmcp.game.server"],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        writer = _wait_for_reader(fifo, server)
        try:
            server.send_signal(signal.SIGINT)
            stdout, stderr = server.communicate(timeout=GUARD)
        finally:
            os.close(writer)
    finally:
        if server.returncode is None:
            server.kill()
            server.communicate()
    assert (server.returncode, stdout, stderr) == (130, b"", b"")
