"""Comparisons of arms with no observed spread, and ``summary.csv``'s text from outside.

Zork's scores are coarse (0, 5, 10, 25…): two seeds whose differences are equal are common. The
paired interval was then the point ``[10, 10]`` and the reading "mcp scores higher (paired 95%
interval above 0)", while Welch's interval was ``[-66, 86]``. With no spread there is no 95%
interval: ``null``, and the reading says the data cannot tell. Expected values by hand.
"""

from __future__ import annotations

import csv
import json
import re
from typing import TYPE_CHECKING, Any

import pytest

from zorkmcp.eval import comparison_reading, render_eval_report, summarize, write_summary_csv

if TYPE_CHECKING:
    from pathlib import Path


def record(arm: str, seed: int, score: int, **extra: Any) -> dict[str, Any]:
    base = {
        "arm": arm, "seed": seed, "score": score, "max_score": 350, "moves": 5, "turns": 5,
        "victory": False, "game_over": False, "deaths": 0, "tool_calls": 0, "tool_errors": 0,
        "tool_timeouts": 0, "llm_requests": 5, "prompt_tokens": 100, "completion_tokens": 10,
        "wall_seconds": 1.0, "scores": [score], "runner": "local", "pid": 7, "host": "h", "model": "m",
        "scripted": False, "stopped": "turn limit",
    }  # fmt: skip
    return base | extra


def test_two_seeds_with_equal_differences_give_no_paired_interval_and_no_winner() -> None:
    # mcp 10, 35; no-mcp 0, 25: the differences are 10 and 10. Welch: variances 312.5 each, se 17.6777,
    # df 2, t(0.975, 2) = 4.302653, half width 76.0609
    summary = summarize(
        [record("mcp", 1, 10), record("mcp", 2, 35), record("no-mcp", 1, 0), record("no-mcp", 2, 25)]
    )
    (comparison,) = summary["comparisons"]
    assert comparison["ci95"] == pytest.approx([-66.0609, 86.0609], abs=1e-4)
    assert comparison["se"] == pytest.approx(17.6777, abs=1e-4)
    assert comparison["paired"] == {
        "pairs": 2,
        "diff_mean_score": 10.0,
        "se": 0.0,
        "ci95": None,
        "method": "paired t interval over the seeds both arms scored",
    }
    assert '"ci95": null' in json.dumps(comparison["paired"])
    assert comparison_reading(comparison) == (
        "no difference shown (Welch's 95% interval holds 0); no spread in the differences (+10.00 on each of "
        "2 seeds): no paired interval"
    )


def test_arms_with_no_spread_at_all_give_no_interval_and_say_the_data_cannot_tell() -> None:
    summary = summarize([record("a", 1, 10), record("a", 2, 10), record("b", 1, 0), record("b", 2, 0)])
    (comparison,) = summary["comparisons"]
    assert (comparison["ci95"], comparison["se"]) == (None, 0.0)
    assert (comparison["paired"]["ci95"], comparison["paired"]["se"]) == (None, 0.0)
    assert comparison_reading(comparison) == (
        "no spread in the differences (+10.00 on each of 2 seeds): cannot estimate a 95% interval, so the "
        "data cannot tell"
    )
    apart = summarize([record("a", 1, 10), record("a", 2, 10), record("b", 3, 0), record("b", 4, 0)])
    assert comparison_reading(apart["comparisons"][0]) == (
        "no spread in either arm's scores: cannot estimate a 95% interval, so the data cannot tell"
    )


def test_the_terminal_line_shows_no_interval_and_the_reading() -> None:
    from zorkmcp._cli_eval import comparison_line

    summary = summarize(
        [record("mcp", 1, 10), record("mcp", 2, 35), record("no-mcp", 1, 0), record("no-mcp", 2, 25)]
    )
    line = comparison_line(summary["comparisons"][0])
    assert re.sub(r"95% CI \S … \S\)", "95% CI none)", line) == (
        "mcp − no-mcp: mean score difference 10.00 (95% CI -66.06 … 86.06); seed by seed (2 pairs): 10.00 "
        "(95% CI none) → no difference shown (Welch's 95% interval holds 0); no spread in the differences "
        "(+10.00 on each of 2 seeds): no paired interval"
    )  # (the dash for "none" is the summary table's)


def test_the_report_says_why_an_interval_is_missing(tmp_path: Path) -> None:
    episodes = [record("a", 1, 10), record("a", 2, 10), record("b", 1, 0), record("b", 2, 0)]
    page = render_eval_report(tmp_path, episodes=episodes).read_text(encoding="utf-8")
    row = page[page.index("<th>reading</th>") :].split("</tr>")[1]
    assert "– (no spread in either arm's scores)" in row
    assert "– (no spread in the differences)" in row
    assert (
        "no spread in the differences (+10.00 on each of 2 seeds): cannot estimate a 95% interval, so the "
        "data cannot tell"
    ) in row
    assert "scores higher" not in row


HOSTILE = 'upstream said "no", then \x1b[31mRED\x1b[0m\x07, a\r\nnew line\tand tab \x9b2J'
SHOWN = 'upstream said "no", then \\x1b[31mRED\\x1b[0m\\x07, a\\x0d\nnew line\tand tab \\x9b2J'


def test_summary_csv_shows_control_characters_as_escapes_and_reads_back_printable_text(
    tmp_path: Path,
) -> None:
    # a provider's message with ESC: `cat summary.csv` recoloured the terminal
    writer = write_summary_csv  # what a run writes summary.csv with, too
    path = tmp_path / "summary.csv"
    writer([record("a", 1, 0, error=f"LLMHTTPError: {HOSTILE}", model="m\x1b]0;title\x07")], path)
    raw = path.read_bytes()
    assert not re.search(rb"[\x00-\x08\x0b-\x0c\x0e-\x1f\x7f]|\xc2[\x80-\x9f]", raw.replace(b"\r\n", b"\n"))
    with path.open(encoding="utf-8", newline="") as f:
        (row,) = list(csv.DictReader(f))
    assert row["error"] == f"LLMHTTPError: {SHOWN}"
    assert row["model"] == "m\\x1b]0;title\\x07"
    printable = 'LLMHTTPError: commas, "quotes",\nand a second line'
    writer([record("a", 1, 0, error=printable)], path)
    with path.open(encoding="utf-8", newline="") as f:
        assert next(csv.DictReader(f))["error"] == printable  # the csv module's quoting, as before


def test_the_public_summary_is_the_runs_own_unknown_tokens_and_disabled_servers(tmp_path: Path) -> None:
    # zorkmcp.eval.summarize / write_summary_csv gave 0 tokens for an endpoint that sends no usage,
    # and no servers_disabled, where the run's summary.json said null and counted them
    records = [
        record("mcp", 1, 10, prompt_tokens=None, completion_tokens=None, servers_disabled=["flaky"]),
        record("mcp", 2, 20, prompt_tokens=None, completion_tokens=None, servers_disabled=[]),
        record("no-mcp", 1, 5, prompt_tokens=120, completion_tokens=7, servers_disabled=[]),
        record("no-mcp", 2, 5, prompt_tokens=None, completion_tokens=3),
    ]
    arms = summarize(records, plan={"arms": ["mcp", "no-mcp"], "first_seed": 1, "last_seed": 2})["arms"]
    assert (arms["mcp"]["prompt_tokens"], arms["mcp"]["completion_tokens"]) == (None, None)
    assert (arms["no-mcp"]["prompt_tokens"], arms["no-mcp"]["completion_tokens"]) == (120, 10)
    assert (arms["mcp"]["servers_disabled"], arms["no-mcp"]["servers_disabled"]) == ({"flaky": 1}, {})
    assert summarize(records, plan={"arms": ["mcp"], "first_seed": 1, "last_seed": 2})["plan"] == {
        "arms": ["mcp"],
        "first_seed": 1,
        "last_seed": 2,
    }
    assert "plan" not in summarize(records)
    write_summary_csv(records, tmp_path / "summary.csv")
    with (tmp_path / "summary.csv").open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [(r["arm"], r["prompt_tokens"], r["servers_disabled"]) for r in rows] == [
        ("mcp", "", "1"),
        ("mcp", "", "0"),
        ("no-mcp", "120", "0"),
        ("no-mcp", "", ""),
    ]
