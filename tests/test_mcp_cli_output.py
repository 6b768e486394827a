"""``zorkmcp tools`` / ``zorkmcp call`` as processes: an output whose reader went away, a full disk.

A reader that goes away (``| head``) ends the command with status 141 (128 + SIGPIPE), as it ends
``zorkmcp play``, and with nothing on stderr (no traceback, no "Exception ignored" at exit); an
output that cannot be written for another reason (``> /dev/full``) is one line on stderr, status 1.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import IO

import pytest
from servers.helpers import MISBEHAVING

COMMANDS = {
    "call, a short result": ["call", "bad.echo", '{"text": "hi"}'],
    "call, a result larger than a pipe": ["call", "bad.big", '{"size": 2000000}'],
    "tools --json": ["tools", "--json"],
    "tools (a table)": ["tools"],
    "tools --lint": ["tools", "--lint"],
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A folder with mcp_config.json (the misbehaving server as ``bad``) and a pyproject.toml using it."""
    config = {"mcpServers": {"bad": {"command": sys.executable, "args": ["-S", str(MISBEHAVING), "ok"]}}}
    (tmp_path / "mcp_config.json").write_text(json.dumps(config))
    (tmp_path / "pyproject.toml").write_text(
        "[tool.zorkgpt.mcp]\nconfig_file = 'mcp_config.json'\nmax_result_bytes = 4000000\n"
    )
    return tmp_path


def _zorkmcp(project: Path, args: list[str], stdout: int | IO[bytes]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zorkmcp.cli", *args, "--pyproject", str(project / "pyproject.toml")],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        cwd=project,
        check=False,
    )


@pytest.mark.parametrize("args", COMMANDS.values(), ids=COMMANDS.keys())
def test_a_reader_gone_ends_the_command_with_141_and_nothing_on_stderr(
    project: Path, args: list[str]
) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the command writes a byte
    try:
        done = _zorkmcp(project, args, write_end)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (141, "")


def test_head_of_a_large_call_result(project: Path) -> None:
    command = [sys.executable, "-m", "zorkmcp.cli", *COMMANDS["call, a result larger than a pipe"]]
    pipeline = f"set -o pipefail; {shlex.join(command)} | head -c 10"
    done = subprocess.run(["bash", "-c", pipeline], capture_output=True, text=True, cwd=project, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (141, '{"content"', "")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args", COMMANDS.values(), ids=COMMANDS.keys())
def test_a_full_disk_is_one_line_and_status_1(project: Path, args: list[str]) -> None:
    with open("/dev/full", "wb") as full:
        done = _zorkmcp(project, args, full)
    assert (done.returncode, done.stderr) == (1, "cannot write to standard output: No space left on device\n")
