"""Which progress ``zorkmcp eval`` shows: live bars only on a terminal that redraws.

``FORCE_COLOR=1 zorkmcp eval > log`` made rich take the file for a terminal, and the bars wrote their
frames into it with cursor moves; ``TERM=dumb`` and ``TTY_INTERACTIVE=0`` got bars they cannot show.
Each now gets the one line per finished episode that the README promises when stdout is not a
terminal. A forced terminal (a program's ``force_terminal=True``) still gets the bars.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import pytest
from rich.console import Console

from zorkmcp._cli_eval import LiveProgress
from zorkmcp.config import Settings
from zorkmcp.eval import ArmSpec, EvalPlan
from zorkmcp.game import PACKAGED_GAME

if TYPE_CHECKING:
    from pathlib import Path


def _plan(tmp_path: Path) -> EvalPlan:
    return EvalPlan(
        arms=(ArmSpec(name="mcp"),), episodes=2, seed=12, max_turns=5, concurrency=1,
        game_path=PACKAGED_GAME, out=tmp_path / "run", settings=Settings(),
    )  # fmt: skip


def test_force_color_into_a_file_gets_lines_not_bars(tmp_path: Path) -> None:
    with (tmp_path / "log").open("w", encoding="utf-8") as file:
        console = Console(file=file, _environ={"FORCE_COLOR": "1", "TERM": "xterm-256color"})
        assert console.is_terminal  # rich's reading of FORCE_COLOR
        assert LiveProgress(console, _plan(tmp_path), quiet=False).mode == "lines"


@pytest.mark.parametrize("environ", [{"TERM": "dumb"}, {"TTY_INTERACTIVE": "0"}])
def test_a_terminal_that_does_not_redraw_gets_lines(tmp_path: Path, environ: dict[str, str]) -> None:
    console = Console(file=io.StringIO(), force_terminal=True, _environ=environ)
    assert LiveProgress(console, _plan(tmp_path), quiet=False).mode == "lines"


def test_a_forced_terminal_gets_bars(tmp_path: Path) -> None:
    console = Console(file=io.StringIO(), force_terminal=True)
    assert LiveProgress(console, _plan(tmp_path), quiet=False).mode == "live"
