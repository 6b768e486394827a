"""The report's figures put ticks at whole turns and whole points only: a short episode has no turn 1.5.

The figures are drawn as the report draws them (the functions that build each one) and read back
through matplotlib: the tick labels inside each axis's limits, after the figure is drawn.
"""

from __future__ import annotations

from typing import Any

from zorkmcp.eval._report import _episode_figure, _score_curves
from zorkmcp.eval._results import EpisodeEvents


def shown_ticks(axis: Any, limits: tuple[float, float]) -> list[str]:
    lo, hi = sorted(limits)
    return [
        tick.get_text()
        for tick in axis.get_ticklabels()
        if lo <= tick.get_position()[axis.axis_name == "y"] <= hi
    ]


def test_a_two_turn_run_has_turns_1_and_2_and_whole_scores() -> None:
    figure = _score_curves({"mcp": [{"scores": [0, 5]}, {"scores": [0, 10]}], "no-mcp": [{"scores": [0, 0]}]})
    figure.canvas.draw()
    ax = figure.axes[0]
    assert shown_ticks(ax.xaxis, ax.get_xlim()) == ["1", "2"]
    assert shown_ticks(ax.yaxis, ax.get_ylim()) == ["0", "2", "4", "6", "8", "10"]


def test_a_three_turn_episode_has_whole_turns_scores_and_tool_calls() -> None:
    turns = [
        {"type": "turn_complete", "turn": 1, "score": 0, "tool_calls": 1},
        {"type": "turn_complete", "turn": 2, "score": 0, "tool_calls": 3},
        {"type": "turn_complete", "turn": 3, "score": 5, "tool_calls": 0},
    ]
    figure = _episode_figure(EpisodeEvents(episode_id="ep", turns=turns))
    figure.canvas.draw()
    score, tools = figure.axes
    assert shown_ticks(score.xaxis, score.get_xlim()) == ["1", "2", "3"]
    assert shown_ticks(score.yaxis, score.get_ylim()) == ["0", "1", "2", "3", "4", "5", "6"]
    assert shown_ticks(tools.yaxis, tools.get_ylim()) == ["0", "1", "2", "3"]
