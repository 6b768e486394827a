"""``zorkmcp eval`` and ``zorkmcp play`` in a narrow terminal (a tmux pane): every name and figure whole."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from play_support import run_in_tmux, zork1_path

if TYPE_CHECKING:
    from collections.abc import Callable


def _words(lines: list[str]) -> list[str]:
    return [" ".join(line.split()) for line in lines]


def _is(expected: str) -> Callable[[str], bool]:
    return lambda line: line == expected


def _matches(pattern: str) -> Callable[[str], bool]:
    return lambda line: re.fullmatch(pattern, line) is not None


SIDE_BY_SIDE = [  # in 40 columns: the figures down the side, both arms across
    _is("Eval summary"),
    _is("mcp no-mcp"),
    _is("─" * 37),
    _is("episodes 2 2"),
    _is("failed 0 0"),
    _is("score ± se 0.00 ± 0.00 0.00 ± 0.00"),
    _is("win rate 0% 0%"),
    _is("moves 2.0 2.0"),
    _is("tools/turn 0.50 0.00"),
    _matches(r"tokens in/out [\d,]+ / [\d,]+ [\d,]+ / [\d,]+"),
]
ONE_BY_ONE = [  # in 30 columns: one arm, then the other
    _is("Eval summary"),
    _is("mcp"),
    _is("─" * 25),
    _is("episodes 2"),
    _is("failed 0"),
    _is("score ± se 0.00 ± 0.00"),
    _is("win rate 0%"),
    _is("moves 2.0"),
    _is("tools/turn 0.50"),
    _matches(r"tokens in/out [\d,]+ / [\d,]+"),
    _is("no-mcp"),
    _is("─" * 25),
    _is("episodes 2"),
    _is("failed 0"),
    _is("score ± se 0.00 ± 0.00"),
    _is("win rate 0%"),
    _is("moves 2.0"),
    _is("tools/turn 0.00"),
    _matches(r"tokens in/out [\d,]+ / [\d,]+"),
]


@pytest.mark.parametrize(("width", "table"), [(40, SIDE_BY_SIDE), (30, ONE_BY_ONE)])
def test_the_bars_and_the_summary_keep_every_arm_and_figure_whole_in_a_narrow_terminal(
    tmp_path: Path, width: int, table: list[Callable[[str], bool]]
) -> None:
    zorkmcp = Path(sys.executable).with_name("zorkmcp")
    command = (
        f"{zorkmcp} eval --compare-mcp --episodes 2 --turns 2 --game {zork1_path()} --out {tmp_path / 'run'}"
    )
    lines = run_in_tmux(tmp_path, command, width, 60)
    assert max(len(line) for line in lines) <= width
    words = _words(lines)
    start = words.index("Eval summary")
    shown = words[start : start + len(table)]
    assert len(shown) == len(table), lines
    for line, expected in zip(shown, table, strict=True):
        assert expected(line), (line, lines)
    # the last picture of the bars: each arm's name, its episodes and its mean score on its line
    bar = r"(mcp|no-mcp) 2/2 mean score \d+\.\d( \d:\d\d:\d\d)?"
    assert sorted(w.split()[0] for w in words[:start] if re.fullmatch(bar, w)) == ["mcp", "no-mcp"], lines
    assert sum(1 for w in words[:start] if re.fullmatch(r"\d+\.\d turns/s", w)) == 2, lines


STACKED = [  # in 20 columns: each arm's name, then its figures one under the other
    _is("Eval summary"),
    _is("mcp"),
    _is("episodes 2"),
    _is("failed 0"),
    _is("score ± se"),
    _is("0.00 ± 0.00"),
    _is("win rate 0%"),
    _is("moves 2.0"),
    _is("tools/turn 0.50"),
    _is("tokens in/out"),
    _matches(r"[\d,]+ / [\d,]+"),
    _is("no-mcp"),
    _is("episodes 2"),
    _is("failed 0"),
    _is("score ± se"),
    _is("0.00 ± 0.00"),
    _is("win rate 0%"),
    _is("moves 2.0"),
    _is("tools/turn 0.00"),
    _is("tokens in/out"),
    _matches(r"[\d,]+ / [\d,]+"),
]


def test_the_summary_keeps_every_arm_and_figure_in_20_columns(tmp_path: Path) -> None:
    """Below the 28 columns one arm beside the figures' names takes, the arms' names and figures went
    blank (a header of nothing, "episodes" with no figure); each is now on a line of its own."""
    zorkmcp = Path(sys.executable).with_name("zorkmcp")
    command = (
        f"{zorkmcp} eval --compare-mcp --episodes 2 --turns 2 --game {zork1_path()} --out {tmp_path / 'run'}"
    )
    lines = run_in_tmux(tmp_path, command, 20, 120)
    assert max(len(line) for line in lines) <= 20
    words = _words(lines)
    start = words.index("Eval summary")
    shown = words[start : start + len(STACKED)]
    assert len(shown) == len(STACKED), lines
    for line, expected in zip(shown, STACKED, strict=True):
        assert expected(line), (line, lines)


def test_the_play_summary_folds_rather_than_cuts_in_20_columns(tmp_path: Path) -> None:
    """``zorkmcp play``'s closing table cut its labels and values in 20 columns (``locati…``)."""
    zorkmcp = Path(sys.executable).with_name("zorkmcp")
    command = f"{zorkmcp} play --turns 2 --game {zork1_path()} --quiet"
    lines = run_in_tmux(tmp_path, command, 20, 80)
    assert max(len(line) for line in lines) <= 20
    rows = [line.split("│")[1:3] for line in lines if line.count("│") == 3]  # │ label │ value │
    labels, values = ("".join(row[i].strip() for row in rows) for i in (0, 1))
    assert "…" not in labels + values, lines
    for label in ("score", "location", "tokensin/out", "model", "stopped"):
        assert label in labels.replace(" ", ""), (label, lines)
    for value in ("0/350", "ForestPath", "scripted-walkthrough", "turnlimit"):
        assert value in values.replace(" ", ""), (value, lines)
