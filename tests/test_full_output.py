"""An output that cannot take more (``> /dev/full``): ``play`` and ``eval`` say so once and go on, and
their files are written; before, rich's write raised ``OSError`` and the run ended with a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
from play_support import offline_env, zork1_path

if TYPE_CHECKING:
    from pathlib import Path

NOTICE = (
    "zorkmcp: standard output cannot be written (No space left on device); nothing more is printed "
    "there, the command goes on\n"
)


@pytest.mark.parametrize("command", ["play", "eval"])
def test_a_full_output_is_said_once_and_the_command_goes_on(command: str, tmp_path: Path) -> None:
    more = (
        ["--turns", "2", "--summary-json", "s.json"]
        if command == "play"
        else ["--episodes", "2", "--turns", "2", "--out", "run"]
    )
    with open("/dev/full", "wb") as full:
        done = subprocess.run(
            [sys.executable, "-m", "zorkmcp.cli", command, "--game", str(zork1_path()), "--no-mcp", *more],
            cwd=tmp_path, env=offline_env(), stdout=full, stderr=subprocess.PIPE, text=True, timeout=120,
            check=False,
        )  # fmt: skip
    assert (done.returncode, done.stderr) == (0, NOTICE)
    if command == "play":
        assert json.loads((tmp_path / "s.json").read_text())["turns"] == 2
    else:
        assert json.loads((tmp_path / "run" / "summary.json").read_text())["arms"]["no-mcp"]["episodes"] == 2
