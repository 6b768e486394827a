"""``zorkmcp eval`` piped: no line ends with a space, as ``zorkmcp play``'s do.

Before, rich's wrapping left a space at the end of each line of the offline model's notice
(``… offline scripted `` / ``model``) and padded the centred ``Eval summary`` title with spaces to
the table's width. Real parts: the command as a process, its output a pipe; real Zork.
"""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING

from play_support import offline_env, zork1_path

if TYPE_CHECKING:
    from pathlib import Path


def test_piped_eval_output_has_no_line_that_ends_with_a_space(tmp_path: Path) -> None:
    command = [
        sys.executable, "-m", "zorkmcp", "eval", "--episodes", "1", "--turns", "1", "--no-mcp",
        "--game", str(zork1_path()), "--out", str(tmp_path / "run"),
    ]  # fmt: skip
    done = subprocess.run(
        command, cwd=tmp_path, env=offline_env(COLUMNS="80"), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "Eval summary" in [line.strip() for line in lines]
    assert any(line.startswith("No API key for") for line in lines)
    assert [line for line in lines if line.endswith(" ")] == []
