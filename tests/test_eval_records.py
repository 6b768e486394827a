"""Which episode records a run's summary, report and ``--resume`` take: the one rule for a record
(its fields of the kinds ``zorkmcp eval`` writes, the arm and seed of its path), and a report that
draws exactly the episodes its summary covers. Real files, real Zork and the offline scripted model."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest
from play_support import zork1_path

from zorkmcp.cli import main
from zorkmcp.eval import read_episode, render_eval_report
from zorkmcp.eval._runner import write_run_summary

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)


def _record(arm: str, seed: int, score: int, **fields: Any) -> dict[str, Any]:
    """A record as ``zorkmcp eval`` writes it (``_record`` in zorkmcp/eval/_runner.py)."""
    return {
        "arm": arm, "seed": seed, "score": score, "max_score": 350, "moves": 11, "turns": 10,
        "victory": False, "game_over": False, "deaths": 0, "tool_calls": 0, "tool_errors": 0,
        "tool_timeouts": 0, "tools": {}, "llm_requests": 10, "prompt_tokens": 1000,
        "completion_tokens": 70, "wall_seconds": 1.5, "start_seconds": 0.25, "scores": [0] * 9 + [score],
        "runner": "local", "pid": 4242, "host": "box", "model": "scripted-walkthrough", "scripted": True,
        "mcp": False, "servers": [], "max_turns": 10, "game": "zork1.z3", "sampling": {},
        "stopped": "turn limit", **fields,
    }  # fmt: skip


# A Ray task that died: what zorkmcp/eval/_ray.py's _failed writes, nulls and all.
_DIED = {
    "max_score": None, "moves": 0, "turns": 0, "scores": [], "pid": None, "host": None,
    "start_seconds": None, "runner": "ray", "stopped": "error", "error": "RuntimeError: the worker died",
}  # fmt: skip

SCORES = {"walkA": [5, 5, 5, 0], "walkB": [0, 5, 10, 0]}  # seeds 12-15; walkB's seed 15 failed


def _write_run(run: Path) -> list[dict[str, Any]]:
    """Two arms x seeds 12-15, seed by seed (as collect_episodes gives them)."""
    records = []
    for i, seed in enumerate(range(12, 16)):
        for arm, scores in SCORES.items():
            fields = _DIED if (arm, seed) == ("walkB", 15) else {}
            record = _record(arm, seed, scores[i], **fields)
            folder = run / "episodes" / arm
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"seed-{seed}.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
            records.append(record)
    return records


def _row(arm: str, episodes: int, failed: int, score: str, low_high: str) -> str:
    return (
        f"<tr><td class=nw>{arm}</td><td class=n>{episodes}</td><td class=n>{failed}</td>"
        f"<td class=n>{score}</td><td class=n>{low_high}</td>"
    )


# -- one rule for a record: the report skips and says why, --resume plays it again -------------------


@pytest.mark.parametrize(
    ("key", "raw", "why"),
    [
        ("score", '"lots"', "score is &quot;lots&quot;, not an integer"),
        ("score", "null", "score is null, not an integer"),
        ("score", "NaN", "score is NaN, not an integer"),
        ("score", "1" + "0" * 5000, "not JSON"),  # past the interpreter's 4300 digits
        ("scores", '"abc"', "scores is &quot;abc&quot;, not a list of integers"),
        ("scores", "[0, 5, 2.5]", "scores is [0, 5, 2.5], not a list of integers"),
        ("max_score", '"350"', "max_score is &quot;350&quot;, not an integer or null"),
        ("moves", "-3", "moves is -3, not a count (an integer &gt;= 0)"),
        ("prompt_tokens", "1.5", "prompt_tokens is 1.5, not a count (an integer &gt;= 0) or null"),
        ("wall_seconds", "Infinity", "wall_seconds is Infinity, not a number of seconds (finite, &gt;= 0)"),
        (
            "wall_seconds",
            "1" + "0" * 400,  # a float of it overflows
            "wall_seconds is 1" + "0" * 38 + "…, not a number of seconds (finite, &gt;= 0)",
        ),
        ("victory", '"no"', "victory is &quot;no&quot;, not true or false"),
        (
            "tools",
            '{"thinking.think": {"calls": "3"}}',
            "tools is {&quot;thinking.think&quot;: {&quot;calls&quot;: &quot;3&quot;}}, not an object of "
            "tools, each with counts and seconds",
        ),
        ("arm", '"other"', "arm is &quot;other&quot;, but the file is in walkA/"),
        ("seed", "14", "seed is 14, but the file is seed-15.json"),
        ("seed", "true", "seed is true, not a count (an integer &gt;= 0)"),
        # a score no episode ends with: past the game's 350, not the last of the scores played
        ("score", "999", "score is 999, above max_score 350"),
        ("score", "-50", "score is -50, but the last of scores is 0"),
        ("scores", "[0, 400, 0]", "scores holds 400, above max_score 350"),
    ],
)
def test_a_record_with_a_field_of_the_wrong_kind_is_skipped_and_said_why(
    tmp_path: Path, key: str, raw: str, why: str
) -> None:
    _write_run(tmp_path)
    path = tmp_path / "episodes" / "walkA" / "seed-15.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**record, key: "@@"}).replace('"@@"', raw), encoding="utf-8")
    assert read_episode(path) is None  # --resume plays it again
    html = render_eval_report(tmp_path).read_text(encoding="utf-8")
    assert (  # no summary.json says which arms and seeds the run plays
        "<p class=sub>7 episodes · model scripted-walkthrough · seeds 12–15</p><p class=warn>1 episode "
        f"file(s) could not be read and are left out: walkA/seed-15.json ({why}). zorkmcp eval --resume "
        "with this folder as --out plays such an episode again when its arm and seed are among the "
        "run's.</p>"
    ) in html
    # walkA: 5, 5, 5; walkB: 0, 5, 10 and the failed episode of seed 15, whose nulls are the writer's
    assert _row("walkA", 3, 0, "5.00 ± 0.00", "5–5") in html
    assert _row("walkB", 4, 1, "5.00 ± 2.89", "0–10") in html
    assert "<td>other</td>" not in html
    assert read_episode(tmp_path / "episodes" / "walkB" / "seed-15.json") == _record("walkB", 15, 0, **_DIED)


def test_a_score_below_0_needs_a_death(tmp_path: Path) -> None:
    # Zork I takes 10 points a death: a player who dies at 0 ends at -10. Nothing else takes points.
    from zorkmcp.eval._results import read_episode_file

    path = tmp_path / "episodes" / "walkA" / "seed-12.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(_record("walkA", 12, -10, deaths=0)))
    why = "score is -10, below 0 with no death (deaths is 0): only a death takes points"
    assert read_episode_file(path) == (None, why)
    died = _record("walkA", 12, -10, deaths=1)
    path.write_text(json.dumps(died))
    assert read_episode_file(path) == (died, "")


# -- the report draws what the summary covers ---------------------------------------------------------


def test_the_runs_report_draws_exactly_the_episodes_its_summary_covers(tmp_path: Path) -> None:
    records = _write_run(tmp_path)
    # a resume with --episodes 2: the summary of seeds 12 and 13; seeds 14 and 15 stay in the folder
    summary = write_run_summary(tmp_path, records[:4])
    assert {name: (arm["episodes"], arm["seeds"]) for name, arm in summary["arms"].items()} == {
        "walkA": (2, [12, 13]),
        "walkB": (2, [12, 13]),
    }
    assert json.loads((tmp_path / "summary.json").read_text())["arms"]["walkA"]["seeds"] == [12, 13]
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert (
        "<p class=sub>4 episodes · model scripted-walkthrough · seeds 12–13</p><p class=note>4 other "
        "episode file(s) in episodes/ are left out: summary.json does not cover them (seeds or arms of an "
        "earlier run in this folder).</p>"
    ) in page
    assert _row("walkA", 2, 0, "5.00 ± 0.00", "5–5") in page
    assert _row("walkB", 2, 0, "2.50 ± 2.50", "0–5") in page
    # zorkmcp report draws the folder again from its summary.json: the same page
    assert render_eval_report(tmp_path, tmp_path / "again.html").read_text(encoding="utf-8") == page
    # an arm removed from the eval file: its files stay, the summary and the page leave it out
    write_run_summary(tmp_path, [r for r in records if r["arm"] == "walkA"])
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "<td>walkB</td>" not in page
    assert _row("walkA", 4, 0, "3.75 ± 1.25", "0–5") in page
    assert "<p class=note>4 other episode file(s) in episodes/ are left out" in page
    # a file the summary covers that is gone since: left out, and said
    (tmp_path / "episodes" / "walkA" / "seed-13.json").unlink()
    html = render_eval_report(tmp_path, tmp_path / "again.html").read_text(encoding="utf-8")
    assert (
        "<p class=sub>3 episodes · model scripted-walkthrough · seeds 12–15</p><p class=warn>1 episode "
        "file(s) could not be read and are left out: walkA/seed-13.json (missing). zorkmcp eval --resume "
        "with this folder as --out plays such an episode again.</p>"
    ) in html
    assert _row("walkA", 3, 0, "3.33 ± 1.67", "0–5") in html


# -- the command, with real Zork -----------------------------------------------------------------------

EVAL_FILE = """\
[eval]
episodes = 4
seed = 12
max_turns = 2
concurrency = 4

[[arms]]
name = "walkA"
mcp = false
{more}"""

WALK_B = """
[[arms]]
name = "walkB"
mcp = false
"""


def _eval(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str, arms: str = WALK_B) -> str:
    (tmp_path / "e3.toml").write_text(EVAL_FILE.format(more=arms))
    code = main(["eval", "e3.toml", "--game", str(zork1_path()), "--out", "run", "--quiet", *args])
    out = capsys.readouterr().out
    assert code == 0, out
    return out


def _header(run: Path) -> str:
    page = (run / "report.html").read_text(encoding="utf-8")
    return page[page.index("<p class=sub>") : page.index("<h2>Arms</h2>")]


def test_a_resume_with_fewer_seeds_or_arms_reports_what_its_summary_covers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    _eval(tmp_path, capsys)
    out = _eval(tmp_path, capsys, "--resume", "--episodes", "2")
    assert "0 episode(s) played, 4 resumed" in out
    summary = json.loads((run / "summary.json").read_text())
    assert {name: arm["seeds"] for name, arm in summary["arms"].items()} == {
        "walkA": [12, 13],
        "walkB": [12, 13],
    }
    assert _header(run) == (
        "<p class=sub>4 episodes · model scripted-walkthrough · seeds 12–13</p><p class=note>4 other "
        "episode file(s) in episodes/ are left out: summary.json does not cover them (seeds or arms of an "
        "earlier run in this folder).</p>"
    )
    page = (run / "report.html").read_bytes()
    assert main(["report", "run"]) == 0  # drawn again from the folder: the same page
    assert (run / "report.html").read_bytes() == page
    out = _eval(tmp_path, capsys, "--resume", "--seed", "13", "--episodes", "2", arms="")  # walkB removed
    assert "0 episode(s) played, 2 resumed" in out
    assert list(json.loads((run / "summary.json").read_text())["arms"]) == ["walkA"]
    assert _header(run) == (
        "<p class=sub>2 episodes · model scripted-walkthrough · seeds 13–14</p><p class=note>6 other "
        "episode file(s) in episodes/ are left out: summary.json does not cover them (seeds or arms of an "
        "earlier run in this folder).</p>"
    )
    assert "<td>walkB</td>" not in (run / "report.html").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("key", "raw"),
    [
        ("score", '"lots"'),
        ("score", "null"),
        ("score", "NaN"),
        ("scores", '"abc"'),
        ("arm", '"other"'),
        ("score", "999"),  # hand-edited: 999 of 350
        ("score", "-50"),  # hand-edited: the scores played end at 0
    ],
)
def test_resume_plays_again_a_record_with_a_field_of_the_wrong_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], key: str, raw: str
) -> None:
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    _eval(tmp_path, capsys, "--episodes", "2", arms="")
    path = run / "episodes" / "walkA" / "seed-13.json"
    played = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**played, key: "@@"}).replace('"@@"', raw), encoding="utf-8")
    out = _eval(tmp_path, capsys, "--episodes", "2", "--resume", arms="")
    assert "1 episode(s) played, 1 resumed" in out
    again = json.loads(path.read_text(encoding="utf-8"))
    assert (again["arm"], again["seed"], again["score"], again["scores"]) == ("walkA", 13, 0, [0, 0])
    summary = json.loads((run / "summary.json").read_text())
    assert {name: arm["seeds"] for name, arm in summary["arms"].items()} == {"walkA": [12, 13]}
    assert "<p class=warn>" not in (run / "report.html").read_text(encoding="utf-8")


def test_files_no_resume_of_the_run_plays_are_said_so_by_the_run_and_its_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The page said --resume plays them again: it never plays a seed or an arm outside the run's.
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    _eval(tmp_path, capsys, "--episodes", "2", arms="")
    played = (run / "episodes" / "walkA" / "seed-12.json").read_text(encoding="utf-8")
    (run / "episodes" / "walkA" / "seed-99.json").write_text("{", encoding="utf-8")
    (run / "episodes" / "walkA" / "seed-abc.json").write_text("{}", encoding="utf-8")
    (run / "episodes" / "other").mkdir()
    (run / "episodes" / "other" / "seed-13.json").write_text(played, encoding="utf-8")
    (run / "episodes" / "walkA" / "seed-13.json").write_text("{", encoding="utf-8")  # the run's: played again
    (tmp_path / "e3.toml").write_text(EVAL_FILE.format(more=""))
    command = ["eval", "e3.toml", "--game", str(zork1_path()), "--out", "run", "--quiet", "--episodes", "2"]
    code = main([*command, "--resume"])
    out, err = capsys.readouterr()
    assert code == 0, out
    assert "1 episode(s) played, 1 resumed" in out
    assert err.splitlines() == [
        "zorkmcp eval: 3 episode file(s) in run are not of this run's seeds and arms, such as "
        "run/episodes/other/seed-13.json: the run leaves them as they are and out of its summary and report"
    ]
    assert json.loads((run / "summary.json").read_text())["plan"] == {
        "arms": ["walkA"],
        "first_seed": 12,
        "last_seed": 13,
    }
    assert _header(run) == (
        "<p class=sub>2 episodes · model scripted-walkthrough · seeds 12–13</p><p class=warn>3 file(s) in "
        "episodes/ could not be read and are no episode of this run: walkA/seed-99.json (seed 99 is not one "
        "of the run&#x27;s (12…13); not JSON), walkA/seed-abc.json (not a seed-&lt;N&gt;.json name; has no "
        "arm), other/seed-13.json (other is not an arm of the run; arm is &quot;walkA&quot;, but the file "
        "is in other/). They are left out, and no zorkmcp eval --resume of this run plays them: move them "
        "out of the folder, or remove them.</p>"
    )
    (run / "episodes" / "walkA" / "seed-12.json").write_text("{", encoding="utf-8")  # the run's, unread
    assert main(["report", "run"]) == 0
    assert (
        "<p class=warn>1 episode file(s) could not be read and are left out: walkA/seed-12.json (not JSON). "
        "zorkmcp eval --resume with this folder as --out plays such an episode again.</p>"
    ) in _header(run)
