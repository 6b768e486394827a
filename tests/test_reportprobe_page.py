"""report.html as a reader of many arms, long names, stopped runs and failed episodes meets it.

The pages are drawn from run folders as ``zorkmcp eval`` leaves them (records, ``summary.json``
with the run's ``plan``); the figures are read back through matplotlib, after they are drawn: their
tick labels, line styles, colours and where the legend is. tests/test_reportprobe_browser.py opens
real runs' pages in Chromium.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
from report_data import short_record

from zorkmcp.cli import main
from zorkmcp.eval import render_episode_report, render_eval_report, summarize
from zorkmcp.eval._report import _episode_figure, _score_curves
from zorkmcp.eval._results import EpisodeEvents

if TYPE_CHECKING:
    from pathlib import Path


def record(arm: str, seed: int, score: int, **extra: Any) -> dict[str, Any]:
    return short_record(arm, seed, score, **extra)


def write_run(run: Path, records: list[dict[str, Any]], plan: dict[str, Any] | None = None) -> Path:
    """``run`` as zorkmcp eval leaves it: each record in ``episodes/<arm>/``, and summary.json."""
    for r in records:
        path = run / "episodes" / r["arm"] / f"seed-{r['seed']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(r), encoding="utf-8")
    summary = summarize(records, plan=plan)
    (run / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return run


def shown_ticks(axis: Any) -> list[str]:
    limits = sorted(axis.get_view_interval())
    along = 0 if axis.axis_name == "x" else 1
    return [t.get_text() for t in axis.get_ticklabels() if limits[0] <= t.get_position()[along] <= limits[1]]


LONG = [f"arm-{i:02d}-very_long_configuration_name_" + "x" * 40 for i in range(2)]
LONG = [name[:64] for name in LONG]


# --- long arm names ---------------------------------------------------------------------------------


def test_a_long_arm_name_may_wrap_in_the_tables_a_short_one_does_not(tmp_path: Path) -> None:
    run = write_run(tmp_path, [record(arm, seed, 5 * seed) for seed in (1, 2) for arm in [*LONG, "b"]])
    html = render_eval_report(run).read_text(encoding="utf-8")
    wrapped = "arm-00-very_<wbr>long_<wbr>configuration_<wbr>name_<wbr>xxxxxxxxxxxxxxxxxxxxxxxxxxxx"
    assert f"<tr><td class=long>{wrapped}</td><td class=n>2</td>" in html  # the summary table
    assert f"<tr><td class=long>{wrapped} − arm-01-very_<wbr>" in html  # a comparison
    assert "<tr><td class=nw>b</td><td class=n>2</td>" in html  # a short name stays on one line
    assert "td.long{min-width:12em;overflow-wrap:anywhere}" in html


def test_twenty_arms_show_the_first_arms_pairs_and_fold_the_others(tmp_path: Path) -> None:
    arms = [f"arm{i}" for i in range(20)]
    run = write_run(tmp_path, [record(arm, seed, seed) for seed in (1, 2) for arm in arms])
    html = render_eval_report(run).read_text(encoding="utf-8")
    section = html[html.index("<h2>Comparisons</h2>") : html.index("<h2>Figures</h2>")]
    shown, folded = section.split("<details>")
    assert shown.count("<tr><td class=nw>arm0 − ") == 19
    assert shown.count("<tr><td class=nw>") == 19
    assert (
        "<p class=note>190 pairs of arms: the table shows the 19 of the first arm, arm0; the other 171 "
        "follow, folded.</p>"
    ) in shown
    assert folded.startswith(
        "<summary>The other 171 comparisons (every pair of the other arms)</summary>"
        "<div class=wide><table class=pairs>"
    )
    assert folded.count("<tr><td class=nw>") == 171
    assert "arm0 − " not in folded
    assert "<tr><td class=nw>arm18 − arm19</td>" in folded


def test_twenty_arms_figures_tell_each_arm_apart(tmp_path: Path) -> None:
    arms = {f"arm{i}": [record(f"arm{i}", 1, 5, scores=[0, 5])] for i in range(20)}
    figure = _score_curves(arms)
    figure.canvas.draw()
    [ax] = figure.axes
    lines = ax.get_lines()
    styles = {(line.get_color(), line.get_linestyle()) for line in lines}
    assert len(styles) == 20  # the eleventh arm was drawn as the first (C0, solid), and so on
    assert [line.get_linestyle() for line in lines[:2]] == ["-", "--"]  # coinciding curves both show
    from zorkmcp.eval._report import _strip  # the old page drew the arms across, their names overlapping

    legend = ax.get_legend().get_window_extent()
    assert legend.y1 < ax.get_window_extent().y0  # below the axes: inside, it covered the curves
    strip = _strip(arms, lambda r: r.get("score"), "score", "Final score per episode", whole=True)
    strip.canvas.draw()
    [ax] = strip.axes
    assert shown_ticks(ax.yaxis) == list(arms)  # one name a line, the first on top
    assert (
        ax.yaxis.get_ticklabels()[0].get_window_extent().y0
        > ax.yaxis.get_ticklabels()[1].get_window_extent().y0
    )
    assert shown_ticks(ax.xaxis) == ["5"]  # every score 5: not 4.8, 4.9, 5.0, …


def test_equal_scores_are_ticked_in_whole_points_and_tool_calls_never_below_0() -> None:
    arms = {"mcp": [record("mcp", s, 15, tool_calls=1) for s in (1, 2)], "no-mcp": [record("no-mcp", 1, 15)]}
    curves = _score_curves({"mcp": [record("mcp", 1, 15, scores=[15, 15, 15])]})
    curves.canvas.draw()
    assert shown_ticks(curves.axes[0].yaxis) == ["15"]  # was 14.2, 14.4 … 15.8
    from zorkmcp.eval._report import _strip

    scores = _strip(arms, lambda r: r.get("score"), "score", "Final score", whole=True)
    scores.canvas.draw()
    assert shown_ticks(scores.axes[0].yaxis) == ["15"]  # was 14.2, 14.4 … 15.8
    rates = _strip(
        arms, lambda r: r["tool_calls"] / r["turns"], "tool calls / turn", "Tool calls", from_zero=True
    )
    rates.canvas.draw()
    assert rates.axes[0].get_ylim()[0] == 0.0


def test_no_figure_of_tool_calls_when_no_episode_called_a_tool(tmp_path: Path) -> None:
    run = write_run(tmp_path, [record(arm, seed, 5 * seed) for seed in (1, 2) for arm in ("a", "b")])
    html = render_eval_report(run).read_text(encoding="utf-8")
    assert html.count("data:image/png;base64,") == 2  # score over turns, final scores
    assert "Tool calls per turn, per episode" not in html


def test_a_dollar_in_an_arm_name_is_drawn_as_written(tmp_path: Path) -> None:
    name = r"cost $\frac$ budget"  # matplotlib's math mode: a ValueError, the report a traceback
    run = write_run(tmp_path, [record(arm, seed, 5 * seed) for seed in (1, 2) for arm in (name, "b")])
    assert render_eval_report(run).read_text(encoding="utf-8").count("data:image/png;base64,") == 2
    arms = {name: [record(name, 1, 5)], "b": [record("b", 1, 0)]}
    figure = _score_curves(arms)
    figure.canvas.draw()
    assert [t.get_text() for t in figure.axes[0].get_legend().get_texts()] == [
        r"cost \$\frac\$ budget (n=1)",
        "b (n=1)",
    ]


def test_one_win_in_250_is_not_0_percent(tmp_path: Path) -> None:
    records = [record("a", seed, 10, victory=seed == 1) for seed in range(250)]
    html = render_eval_report(write_run(tmp_path, records)).read_text(encoding="utf-8")
    assert "<td class=n>10–10</td><td class=n>0.4%</td>" in html


# --- a run stopped early ----------------------------------------------------------------------------

PLAN = {"arms": ["mcp", "no-mcp", "extra"], "first_seed": 12, "last_seed": 14}


def test_a_stopped_run_says_which_episodes_it_did_not_play(tmp_path: Path) -> None:
    # Ctrl-C after one episode of mcp and one of no-mcp: the summary covers those two
    run = write_run(tmp_path, [record("mcp", 12, 10), record("no-mcp", 12, 5)], plan=PLAN)
    html = render_eval_report(run).read_text(encoding="utf-8")
    assert (
        "<p class=sub>2 episodes · model m · seed 12</p><p class=warn>7 of the run's 9 episodes were not "
        "played (mcp: 2 of 3; no-mcp: 2 of 3; extra: 3 of 3, so it is in no table or figure): the run "
        "was stopped before them. zorkmcp eval --resume with this folder as --out plays them.</p><h2>"
    ) in html
    # a file the summary covers that is gone is said once, as missing, not counted again
    (run / "episodes" / "mcp" / "seed-12.json").unlink()
    html = render_eval_report(run).read_text(encoding="utf-8")
    assert "7 of the run's 9 episodes were not played (mcp: 2 of 3;" in html
    assert "mcp/seed-12.json (missing)" in html

    # a run that played its plan (a failed episode was played) has no such note
    plan = {"arms": ["a"], "first_seed": 1, "last_seed": 2}
    run = write_run(
        tmp_path / "done", [record("a", 1, 0), record("a", 2, 5, error="LLMHTTPError: 400")], plan=plan
    )
    html = render_eval_report(run).read_text(encoding="utf-8")
    assert "<p class=sub>2 episodes · model m · seeds 1–2</p><h2>Arms</h2>" in html


def test_the_report_of_a_run_stopped_before_any_episode_ended(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # zorkmcp eval stopped by Ctrl-C before the first episode ended: summary.json and summary.csv
    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").write_text(json.dumps(summarize([], plan=PLAN)), encoding="utf-8")
    assert main(["report", str(run)]) == 2
    assert capsys.readouterr().err == (
        f"zorkmcp report: {run}: this eval run finished no episode (its summary.json covers none: the run "
        "was stopped before the first one ended), so there is nothing to draw; to play them, run the same "
        f"zorkmcp eval command with --resume --out {run}\n"
    )
    (tmp_path / "other").mkdir()  # a folder of no run
    assert main(["report", str(tmp_path / "other")]) == 2
    assert "not an eval run folder (no episodes/ inside)" in capsys.readouterr().err


# --- one failed episode's page ----------------------------------------------------------------------

ERROR = (
    "LLMHTTPError: POST http://127.0.0.1:8000/v1/chat/completions answered HTTP 400 Bad Request: " + "x" * 400
)


def test_a_failed_episodes_page_names_its_error_kind_in_the_card_and_the_error_below(tmp_path: Path) -> None:
    base = {"episode_id": "a-seed-12", "timestamp": 1.0}
    turn = {
        "event_type": "turn_complete",
        "turn": 1,
        "action": "look",
        "score": 0,
        "moves": 1,
        "tool_calls": 0,
    }
    end = {"event_type": "episode_complete", "stopped": "error", "error": ERROR, "score": 0, "turns": 1}
    start = {"event_type": "episode_start", "game": "zork1", "seed": 12, "max_score": 350}
    log = tmp_path / "seed-12.events.jsonl"
    log.write_text("".join(json.dumps(base | e) + "\n" for e in (start, turn, end)), encoding="utf-8")
    html = render_episode_report(log, tmp_path / "page.html").read_text(encoding="utf-8")
    assert "<div class='card'><b>failed: LLMHTTPError</b><span>result</span></div>" in html
    assert f"</div><p class='warn err'>{ERROR}</p>" in html  # whole, where it may wrap
    assert "p.err{white-space:pre-wrap;font-weight:400}" in html


def test_a_one_turn_episodes_figure_has_whole_ticks_and_a_death_below_0() -> None:
    one = [{"turn": 1, "score": 0, "tool_calls": 0}]
    figure = _episode_figure(EpisodeEvents(episode_id="ep", turns=one))
    figure.canvas.draw()
    score, tools = figure.axes
    assert shown_ticks(score.xaxis) == ["1"]  # was 0.64, 0.72, …
    assert shown_ticks(tools.yaxis) == ["0", "1"]  # was −0.045 … 0.045
    died = [{"turn": 1, "score": 0, "tool_calls": 0}, {"turn": 2, "score": -10, "tool_calls": 0}]
    figure = _episode_figure(EpisodeEvents(episode_id="ep", turns=died))
    figure.canvas.draw()
    assert figure.axes[0].get_ylim()[0] < -10  # the axis began at 0: the death's -10 was not drawn


def test_an_arm_none_of_whose_episodes_scored_reads_a_dash(tmp_path: Path) -> None:
    failed = {"error": "LLMHTTPError: 400", "scores": [], "turns": 0}
    run = write_run(
        tmp_path, [record("a", 1, 5), record("a", 2, 0)] + [record("b", s, 0, **failed) for s in (1, 2)]
    )
    html = render_eval_report(run).read_text(encoding="utf-8")
    assert "<tr><td class=nw>a</td><td class=n>2</td><td class=n>0</td><td class=n>2.50 ± 2.50</td>" in html
    assert (  # was "– ± –" and "–––"
        "<tr><td class=nw>b</td><td class=n>2</td><td class=n>2</td><td class=n>–</td><td class=n>–</td>"
    ) in html


@pytest.mark.filterwarnings("error")
def test_an_arm_name_the_font_cannot_draw_warns_nothing(tmp_path: Path) -> None:
    # a folder named by hand: matplotlib's font has no CJK glyphs, and warned once per glyph and figure
    name = "モデル-日本語"
    run = write_run(tmp_path, [record(arm, seed, 5 * seed) for seed in (1, 2) for arm in (name, "b")])
    html = render_eval_report(run).read_text(encoding="utf-8")
    assert f"<tr><td class=nw>{name}</td><td class=n>2</td>" in html
