"""Eval statistics: standard errors, the t quantile, Welch intervals, summary.json and summary.csv.

Expected values are written out by hand: table t quantiles, and Welch intervals computed from
the samples' means and variances with a t quantile found by integrating the t density (Simpson).
"""

from __future__ import annotations

import csv
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zorkmcp.eval import (
    comparison_reading,
    paired_interval,
    summarize,
    t_quantile,
    welch_interval,
    write_summary_csv,
)
from zorkmcp.eval._stats import standard_error

if TYPE_CHECKING:
    from pathlib import Path


def record(arm: str, seed: int, score: int, **extra: Any) -> dict[str, Any]:
    base = {
        "arm": arm,
        "seed": seed,
        "score": score,
        "max_score": 350,
        "moves": 12,
        "turns": 10,
        "victory": False,
        "game_over": False,
        "deaths": 0,
        "tool_calls": 0,
        "tool_errors": 0,
        "tool_timeouts": 0,
        "llm_requests": 10,
        "prompt_tokens": 1000,
        "completion_tokens": 100,
        "wall_seconds": 30.0,
        "scores": [score],
        "runner": "local",
        "pid": 7,
        "model": "m",
        "scripted": False,
    }
    return base | extra


@pytest.mark.parametrize(
    ("df", "expected"), [(1, 12.7062), (2, 4.3027), (4, 2.7764), (10, 2.2281), (30, 2.0423)]
)
def test_t_quantile_matches_the_table(df: float, expected: float) -> None:
    assert t_quantile(0.975, df) == pytest.approx(expected, abs=1e-4)


def test_t_quantile_fractional_df_and_lower_tail() -> None:
    assert t_quantile(0.975, 3.2) == pytest.approx(3.0728, abs=1e-4)
    assert t_quantile(0.025, 4) == pytest.approx(-2.7764, abs=1e-4)
    assert t_quantile(0.5, 7) == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize(("p", "df", "match"), [(0.0, 3, "p must be in"), (0.9, 0, "degrees of freedom")])
def test_t_quantile_rejects_bad_arguments(p: float, df: float, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        t_quantile(p, df)


def test_standard_error() -> None:
    assert standard_error([10, 20, 30]) == pytest.approx(5.7735, abs=1e-4)
    assert standard_error([0, 0, 30]) == pytest.approx(10.0, abs=1e-4)
    assert standard_error([5]) is None


def test_welch_interval_unequal_variances() -> None:
    # var 100 and 300, n 3 each: se 11.5470, df 3.2, t 3.0728.
    diff, lo, hi = welch_interval([10, 20, 30], [0, 0, 30]) or (0, 0, 0)
    assert (diff, lo, hi) == pytest.approx((10.0, -25.4820, 45.4820), abs=1e-4)


def test_welch_interval_equal_variances_has_pooled_df() -> None:
    # var 100 each, n 3 each: df 4, se 8.1650, half width 2.7764 * 8.1650 = 22.6696.
    diff, lo, hi = welch_interval([10, 20, 30], [0, 10, 20]) or (0, 0, 0)
    assert (diff, lo, hi) == pytest.approx((10.0, -12.6696, 32.6696), abs=1e-4)


def test_welch_interval_edge_cases() -> None:
    assert welch_interval([1], [1, 2]) is None
    assert welch_interval([5, 5], [3, 3]) is None  # no spread in either arm: no 95% interval


@given(
    st.lists(st.integers(0, 350), min_size=2, max_size=8),
    st.lists(st.integers(0, 350), min_size=2, max_size=8),
)
def test_welch_interval_is_centred_on_the_difference(a: list[int], b: list[int]) -> None:
    result = welch_interval(a, b)
    if len(set(a)) == len(set(b)) == 1:  # no spread in either: no interval
        assert result is None
        return
    assert result is not None
    assert result[1] < result[2]
    diff, lo, hi = result
    assert lo <= diff <= hi
    assert diff - lo == pytest.approx(hi - diff, abs=1e-9)


def test_paired_interval_by_hand() -> None:
    # differences 2, 1, 3, 2: mean 2, sd sqrt(2/3), se 0.408248; t(0.975, 3) = 3.182446
    diff, lo, hi = paired_interval([2, 1, 3, 2]) or (0, 0, 0)
    assert diff == pytest.approx(2.0)
    assert (lo, hi) == pytest.approx((0.700772, 3.299228), abs=1e-5)


def test_paired_interval_edge_cases() -> None:
    assert paired_interval([]) is None
    assert paired_interval([4]) is None
    assert paired_interval([3, 3, 3]) is None  # no spread in the differences: no 95% interval


@given(st.lists(st.integers(0, 350), min_size=2, max_size=8), st.integers(-50, 50))
def test_a_shift_seed_by_seed_has_no_paired_interval_and_welch_holds_it(
    scores: list[int], shift: int
) -> None:
    # The seed moves both arms alike: seed by seed only the shift is left, with no spread to estimate
    # a 95% interval from (it was the point [shift, shift], read as certain).
    a = [float(s + shift) for s in scores]
    assert paired_interval([x - y for x, y in zip(a, scores, strict=True)]) is None
    welch = welch_interval(a, scores)
    if len(set(scores)) == 1:  # no spread in either arm either
        assert welch is None
    else:
        assert welch is not None
        assert welch[1] <= shift <= welch[2]


@pytest.mark.parametrize(
    ("welch", "paired", "reading"),
    [
        ([0.7, 3.3], None, "a scores higher (Welch's 95% interval above 0)"),
        ([-9.2, 15.2], {"pairs": 4, "ci95": [0.7, 3.3]}, "a scores higher (paired 95% interval above 0)"),
        ([-9.2, 15.2], {"pairs": 4, "ci95": [-3.3, -0.1]}, "b scores higher (paired 95% interval below 0)"),
        ([0.7, 3.3], {"pairs": 4, "ci95": [-1.0, 3.3]}, "no difference shown (paired 95% interval holds 0)"),
        (  # a zero-width interval (an older summary.json's) is no interval
            [-29, 29],
            {"pairs": 4, "ci95": [0.0, 0.0], "diff_mean_score": 0.0},
            "no difference shown (Welch's 95% interval holds 0); no spread in the differences (0.00 on each "
            "of 4 seeds): no paired interval",
        ),
        ([-9.2, 15.2], {"pairs": 1, "ci95": None}, "no difference shown (Welch's 95% interval holds 0)"),
        ([-9.2, -0.5], {"pairs": 0, "ci95": None}, "b scores higher (Welch's 95% interval below 0)"),
        (None, {"pairs": 1, "ci95": None}, "too few scored episodes to tell (an interval needs two per arm)"),
    ],
)
def test_comparison_reading_reads_the_paired_interval_first(
    welch: list[float] | None, paired: dict[str, Any] | None, reading: str
) -> None:
    comparison = {"a": "a", "b": "b", "diff_mean_score": 1.0, "ci95": welch, "paired": paired}
    assert comparison_reading(comparison) == reading


def test_summarize_arms_and_comparison() -> None:
    episodes = [
        record("mcp", 1, 10, tool_calls=3, victory=True),
        record("mcp", 2, 20, tool_calls=6),
        record("mcp", 3, 30, tool_calls=9),
        record("no-mcp", 1, 0),
        record("no-mcp", 2, 0),
        record("no-mcp", 3, 30),
        record("no-mcp", 4, 350, error="LLMTransportError: connect timeout"),
    ]
    summary = summarize(episodes)
    assert list(summary["arms"]) == ["mcp", "no-mcp"]
    mcp, plain = summary["arms"]["mcp"], summary["arms"]["no-mcp"]
    assert (mcp["episodes"], mcp["failed"], plain["episodes"], plain["failed"]) == (3, 0, 4, 1)
    assert mcp["mean_score"] == pytest.approx(20.0)
    assert mcp["se_score"] == pytest.approx(5.7735, abs=1e-4)
    assert plain["mean_score"] == pytest.approx(10.0)  # the failed 350 is left out
    assert plain["se_score"] == pytest.approx(10.0, abs=1e-4)
    assert mcp["win_rate"] == pytest.approx(0.3333, abs=1e-4)
    assert mcp["tool_calls_per_turn"] == pytest.approx(0.6)
    assert plain["prompt_tokens"] == 4000  # tokens count every episode, failed too
    assert mcp["mean_moves"] == pytest.approx(12.0)
    assert mcp["mean_wall_seconds"] == pytest.approx(30.0)
    (comparison,) = summary["comparisons"]
    assert (comparison["a"], comparison["b"]) == ("mcp", "no-mcp")
    assert comparison["diff_mean_score"] == pytest.approx(10.0)
    assert comparison["ci95"] == pytest.approx([-25.4820, 45.4820], abs=1e-4)
    # seeds 1-3 scored in both arms (4 failed): differences 10, 20, 0; se 5.773503; t(0.975, 2) = 4.302653
    paired = comparison["paired"]
    assert (paired["pairs"], paired["diff_mean_score"]) == (3, pytest.approx(10.0))
    assert paired["se"] == pytest.approx(5.773503, abs=1e-6)
    assert paired["ci95"] == pytest.approx([-14.841380, 34.841380], abs=1e-5)


def test_an_arms_summary_names_its_models_and_servers() -> None:
    summary = summarize(
        [
            record("mcp", 1, 5, model="m", servers=["thinking", "search"]),
            record("mcp", 2, 5, model="m", servers=["thinking", "search"], error="boom"),
            record("no-mcp", 1, 5, model="m", servers=[]),
            record("old", 1, 5, model="m"),  # written before records named their servers
        ]
    )
    assert [(name, arm["models"], arm["servers"]) for name, arm in summary["arms"].items()] == [
        ("mcp", ["m"], ["search", "thinking"]),
        ("no-mcp", ["m"], []),
        ("old", ["m"], None),
    ]


def _use(
    calls: int, errors: int = 0, timeouts: int = 0, skipped: int = 0, seconds: float = 0.0
) -> dict[str, Any]:
    return {"calls": calls, "errors": errors, "timeouts": timeouts, "skipped": skipped, "seconds": seconds}


def test_an_arms_summary_says_how_each_tool_was_used() -> None:
    think_1, inventory, think_2 = (
        _use(3, errors=1, seconds=0.03),
        _use(1, seconds=0.002),
        _use(5, 0, 1, 2, 0.05),
    )
    summary = summarize(
        [
            record("mcp", 1, 5, tools={"thinking.think": think_1, "zork.inventory": inventory}),
            record("mcp", 2, 5, tools={"thinking.think": think_2}),
            record("mcp", 3, 5, tools={"thinking.think": _use(100)}, error="boom"),  # failed: left out
            record("mcp", 4, 5),  # an older version's record (its 10 turns are not in calls_per_turn)
            record("no-mcp", 1, 5, tools={}),
            record("old", 1, 5),  # written before records named their tools
        ]
    )
    tools = {name: arm["tools"] for name, arm in summary["arms"].items()}
    assert tools["no-mcp"] == {}
    assert tools["old"] is None
    assert list(tools["mcp"]) == ["thinking.think", "zork.inventory"]  # most called first
    assert tools["mcp"]["thinking.think"] == {
        "calls": 8, "calls_per_turn": pytest.approx(0.4), "episodes": 2, "errors": 1, "timeouts": 1,
        "skipped": 2, "mean_ms": pytest.approx(10.0),
    }  # fmt: skip
    assert tools["mcp"]["zork.inventory"] == {
        "calls": 1, "calls_per_turn": pytest.approx(0.05), "episodes": 1, "errors": 0, "timeouts": 0,
        "skipped": 0, "mean_ms": pytest.approx(2.0),
    }  # fmt: skip


def test_summarize_one_comparison_per_pair_in_arm_order() -> None:
    episodes = [record(arm, 1, 5) for arm in ("c", "a", "b")]
    summary = summarize(episodes)
    pairs = [(c["a"], c["b"]) for c in summary["comparisons"]]
    assert pairs == [("c", "a"), ("c", "b"), ("a", "b")]
    assert summary["arms"]["c"]["se_score"] is None
    assert all(c["ci95"] is None for c in summary["comparisons"])
    assert all(c["paired"]["pairs"] == 1 and c["paired"]["ci95"] is None for c in summary["comparisons"])


def test_summarize_an_arm_of_failures_only() -> None:
    summary = summarize([record("x", 1, 5, error="boom"), record("y", 1, 5), record("y", 2, 7)])
    x = summary["arms"]["x"]
    assert (x["episodes"], x["failed"], x["mean_score"], x["win_rate"]) == (1, 1, None, None)
    assert summary["comparisons"][0]["diff_mean_score"] is None


def test_summary_csv_has_one_row_per_episode(tmp_path: Path) -> None:
    path = tmp_path / "summary.csv"
    write_summary_csv([record("mcp", 1, 10), record("no-mcp", 1, 0, error="boom")], path)
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["arm"], r["seed"], r["score"], r["error"]) for r in rows] == [
        ("mcp", "1", "10", ""),
        ("no-mcp", "1", "0", "boom"),
    ]
    assert "scores" not in rows[0]
    assert list(rows[0])[17:20] == ["pid", "host", "model"]  # which process, on which machine
    assert rows[0]["prompt_tokens"] == "1000"


_PASS = (
    "pass the records zorkmcp eval writes "
    "(episodes/<arm>/seed-<N>.json; zorkmcp.eval.read_run_episodes reads a run's)"
)


@pytest.mark.parametrize(
    ("episodes", "message"),
    [
        ([{}], f"episodes[0] has no arm: {_PASS}"),
        ([record("a", 1, 5), {"arm": "a", "seed": 2}], f"episodes[1] has no score: {_PASS}"),
        ([{**record("a", 1, 5), "score": "5"}], f'episodes[0] score is "5", not an integer: {_PASS}'),
        ([record("a", -1, 5)], f"episodes[0] seed is -1, not a count (an integer >= 0): {_PASS}"),
        (
            [record("a", 1, 5, scores=[5, None])],
            f"episodes[0] scores is [5, null], not a list of integers: {_PASS}",
        ),
        (["seed-1.json"], f"episodes[0] is str, not an episode record (a JSON object): {_PASS}"),
    ],
)
def test_summarize_and_the_csv_refuse_what_is_not_an_episode_record(
    episodes: list[Any], message: str, tmp_path: Path
) -> None:
    """A library caller's records are checked by the rule the report and --resume read files by:
    a record without an arm or seed made an arm named "" of seed null, a score of "5" was left out."""
    with pytest.raises(ValueError, match=r"^episodes\[") as summarized:
        summarize(episodes)
    assert str(summarized.value) == message
    with pytest.raises(ValueError, match=r"^episodes\[") as written:
        write_summary_csv(episodes, tmp_path / "summary.csv")
    assert str(written.value) == message
    assert not (tmp_path / "summary.csv").exists()
