"""The statistics of summary.json and report.html where every score is equal, at any size.

Scores as large as a record holds (up to 2**53): the standard error of equal scores is exactly 0
and their mean is the score, so such arms get no 95% interval and the reading says the data cannot
tell. Through floating point, eleven scores of 10**15 + 7 had a mean of 10**15 + 6.9 and a standard
error of 0.04, and the comparison of two such arms an interval of no spread it had seen.
"""

from __future__ import annotations

from typing import Any

import pytest
from report_data import short_record

from zorkmcp.eval import comparison_reading, paired_interval, summarize, welch_interval
from zorkmcp.eval._stats import standard_error


def record(arm: str, seed: int, score: int, **extra: Any) -> dict[str, Any]:
    """A game of no stated maximum (``max_score`` 0), one score a turn."""
    return short_record(arm, seed, score, max_score=0, scores=[score], scripted=False) | extra


HUGE = 10**15 + 7
"""A score float arithmetic cannot average exactly: 11 of them summed are not a double."""


@pytest.mark.parametrize(("value", "n"), [(HUGE, 11), (HUGE, 13), (2**53 - 1, 5), (2**52 + 3, 10), (0.1, 3)])
def test_equal_scores_have_no_spread_whatever_their_size(value: float, n: int) -> None:
    assert standard_error([float(value)] * n) == 0.0
    assert paired_interval([float(value)] * n) is None
    assert welch_interval([float(value)] * n, [float(value)] * n) is None


def test_two_arms_of_equal_huge_scores_cannot_tell() -> None:
    episodes = [record(arm, seed, HUGE) for seed in range(11) for arm in ("a", "b")]
    summary = summarize(episodes)
    assert summary["arms"]["a"]["mean_score"] == 1000000000000007.0
    assert summary["arms"]["a"]["se_score"] == 0.0
    [comparison] = summary["comparisons"]
    assert (comparison["se"], comparison["ci95"]) == (0.0, None)
    assert comparison["paired"] | {"method": ""} == {
        "pairs": 11,
        "diff_mean_score": 0.0,
        "se": 0.0,
        "ci95": None,
        "method": "",
    }
    assert comparison_reading(comparison) == (
        "no spread in the differences (0.00 on each of 11 seeds): cannot estimate a 95% interval, so the "
        "data cannot tell"
    )
