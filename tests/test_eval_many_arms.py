"""The closing lines of a run of many arms: every pair of up to 5 arms, else the first arm's pairs.

Every pair of 40 arms is 780 long lines; a run of 8 printed 28. ``summary.json`` and ``report.html``
keep every pair.
"""

from __future__ import annotations

import io
from itertools import combinations
from pathlib import Path
from typing import Any

from rich.console import Console

from zorkmcp._cli_eval import print_outcome
from zorkmcp.eval import EvalOutcome


def comparison(a: str, b: str) -> dict[str, Any]:
    return {"a": a, "b": b, "diff_mean_score": 1.5, "se": 0.5, "ci95": [0.5, 2.5], "paired": None}


def closing_lines(arms: int) -> list[str]:
    names = [f"arm{i}" for i in range(arms)]
    summary = {"arms": {}, "comparisons": [comparison(a, b) for a, b in combinations(names, 2)]}
    outcome = EvalOutcome(run_dir=Path("run"), episodes=[], played=0, resumed=0, interrupted=False,
                          summary=summary)  # fmt: skip
    out = io.StringIO()
    print_outcome(Console(file=out, width=400), outcome)
    return [line for line in out.getvalue().splitlines() if " − " in line or line.startswith("…")]


def test_five_arms_show_every_pair() -> None:
    pairs = [line.split(":")[0] for line in closing_lines(5)]
    assert pairs == [
        "arm0 − arm1", "arm0 − arm2", "arm0 − arm3", "arm0 − arm4", "arm1 − arm2",
        "arm1 − arm3", "arm1 − arm4", "arm2 − arm3", "arm2 − arm4", "arm3 − arm4",
    ]  # fmt: skip


def test_more_arms_show_the_first_arms_pairs_and_say_where_the_rest_are() -> None:
    lines = closing_lines(7)
    assert [line.split(":")[0] for line in lines[:-1]] == [
        "arm0 − arm1", "arm0 − arm2", "arm0 − arm3", "arm0 − arm4", "arm0 − arm5", "arm0 − arm6",
    ]  # fmt: skip
    assert lines[-1] == "… and 15 more comparisons (every pair of arms) in summary.json and report.html"
