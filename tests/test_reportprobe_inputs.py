"""``zorkmcp report`` given what a user has at hand instead of a run or a log, each said in one line.

A real run (``zorkmcp eval --no-mcp``, the offline scripted model, real Zork: one episode of two
turns) gives the run folder and its event log. A reader who gives the folder that holds the runs
(``runs/``), the project's folder, or ``zorkmcp play``'s ``logs/`` is told the runs or logs in it and
the command that draws the latest (before: "not an eval run folder; run zorkmcp eval first", and with
``--episode`` "no episode"); a log with no episode in it is said to be empty, or not JSON, or of other
events (before: "no episode records found", with nothing to do); an ``--output`` that is a folder or
in a folder that is not there is said before anything is drawn (before: "cannot be written (Is a
directory); mend the folder"); and a ``summary.json`` that is not zorkmcp's is said on the page,
which draws every episode file in its place (before: nothing was said).
"""

from __future__ import annotations

import json
import os
import shutil
from typing import TYPE_CHECKING

import pytest
from play_support import zork1_path
from test_report_browser import KEYS

from zorkmcp.cli import main
from zorkmcp.eval import ReportInputError, render_episode_report

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project folder: ``runs/first`` and ``runs/second`` (a real run, and a copy of it started
    later), and ``logs/zorkmcp_events.jsonl`` (the run's event log, as zorkmcp play keeps one)."""
    folder = tmp_path_factory.mktemp("project")
    with pytest.MonkeyPatch.context() as patch:
        for name in KEYS:
            patch.delenv(name, raising=False)
        patch.chdir(folder)
        common = ["--game", str(zork1_path()), "--turns", "2", "--episodes", "1", "--no-mcp", "--quiet"]
        assert main(["eval", *common, "--out", "runs/first"]) == 0
    shutil.copytree(folder / "runs" / "first", folder / "runs" / "second")
    os.utime(folder / "runs" / "first" / "episodes", (1_700_000_000, 1_700_000_000))
    os.utime(folder / "runs" / "second" / "episodes", (1_700_000_100, 1_700_000_100))
    (folder / "logs").mkdir()
    shutil.copy(events_of(folder / "runs" / "first"), folder / "logs" / "zorkmcp_events.jsonl")
    return folder


def events_of(run: Path) -> Path:
    return run / "episodes" / "no-mcp" / "seed-12.events.jsonl"


def refused(
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
) -> str:
    """``zorkmcp report ARGS`` in ``folder``: exit 2, nothing on stdout; its line on stderr."""
    monkeypatch.chdir(folder)
    assert main(["report", *args]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    return err


# --- a folder that holds runs or logs, not a run ------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ("runs",),
            "runs: not an eval run folder (no episodes/ inside), but it holds 2 eval run(s): first, second; "
            "give one: zorkmcp report runs/second (the latest)",
        ),
        (
            ("runs", "--episode", "no-mcp/seed-12"),  # before: "runs: no episode 'no-mcp/seed-12'"
            "runs: not an eval run folder (no episodes/ inside), but it holds 2 eval run(s): first, second; "
            "give one: zorkmcp report runs/second --episode no-mcp/seed-12 (the latest)",
        ),
        (
            (".",),  # the project's folder: its runs/
            ".: not an eval run folder (no episodes/ inside), but it holds 2 eval run(s): runs/first, "
            "runs/second; give one: zorkmcp report runs/second (the latest)",
        ),
        (
            ("logs",),
            "logs: not an eval run folder (no episodes/ inside), but it holds 1 event log(s): "
            "zorkmcp_events.jsonl; give one: zorkmcp report logs/zorkmcp_events.jsonl",
        ),
        (
            ("logs", "--episode", "no-mcp-seed-12"),
            "logs: not an eval run folder (no episodes/ inside), but it holds 1 event log(s): "
            "zorkmcp_events.jsonl; give one: zorkmcp report logs/zorkmcp_events.jsonl "
            "--episode no-mcp-seed-12",
        ),
    ],
)
def test_a_folder_of_runs_or_logs_names_them_and_the_command_for_the_latest(
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: tuple[str, ...],
    said: str,
) -> None:
    assert refused(project, monkeypatch, capsys, *args) == f"zorkmcp report: {said}\n"


def test_the_command_named_draws_the_page(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project)
    assert main(["report", "logs/zorkmcp_events.jsonl", "--episode", "no-mcp-seed-12", "-o", "ep.html"]) == 0
    assert capsys.readouterr().out == "zorkmcp report: wrote ep.html\n"
    assert "episode no-mcp-seed-12" in (project / "ep.html").read_text(encoding="utf-8")


def test_a_folder_of_neither_is_still_no_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "logs").mkdir()  # an empty logs/: nothing to name
    (tmp_path / "notes.txt").write_text("hi\n", encoding="utf-8")
    for args in ((".",), (".", "--episode", "mcp/seed-1")):
        assert refused(tmp_path, monkeypatch, capsys, *args) == (
            "zorkmcp report: .: not an eval run folder (no episodes/ inside); run zorkmcp eval first\n"
        )


# --- a log that holds no episode ----------------------------------------------------------------------

TO_GIVE = (
    "give a JSON-lines event log (zorkmcp play's logs/zorkmcp_events.jsonl, an eval episode's "
    "seed-<N>.events.jsonl) or an eval run's folder"
)


def test_a_log_with_no_episode_says_what_it_holds_and_what_to_give(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = events_of(project / "runs" / "first").read_bytes()
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "cut.jsonl").write_bytes(real[:300])  # its first line, cut short
    (tmp_path / "two.jsonl").write_bytes(b"\x00\xff binary\nnot json\n")
    (tmp_path / "other.jsonl").write_text(json.dumps({"event_type": "llm_retry"}) + "\n", encoding="utf-8")
    said = {
        "empty.jsonl": "the file is empty",
        "cut.jsonl": "no line is an episode's event, and 1 line is not a JSON object (a file of another "
        "kind, or one cut short)",
        "two.jsonl": "no line is an episode's event, and 2 lines are not JSON objects (a file of another "
        "kind, or one cut short)",
        "other.jsonl": "no line is an episode's event (episode_start, turn_complete)",
    }
    for name, what in said.items():
        line = f"{name}: no episode records: {what}; {TO_GIVE}"
        assert refused(tmp_path, monkeypatch, capsys, name) == f"zorkmcp report: {line}\n"
        with pytest.raises(ReportInputError) as caught:  # the Python API says the same
            render_episode_report(tmp_path / name, tmp_path / "p.html")
        assert str(caught.value) == f"{tmp_path / name}: no episode records: {what}; {TO_GIVE}"
    assert not (tmp_path / "p.html").exists()


# --- an --output that cannot be a page ---------------------------------------------------------------


@pytest.mark.parametrize("drawn", ["runs/first", "logs/zorkmcp_events.jsonl"])
def test_an_output_that_is_a_folder_or_in_no_folder_is_said_before_drawing(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], drawn: str
) -> None:
    nothing = "(nothing was written)"
    said = {
        "runs": f"--output runs: that is a folder; name the page's file: --output runs/report.html {nothing}",
        "gone/x.html": "--output gone/x.html: its folder gone does not exist; create it (mkdir -p gone), or "
        f"pass another --output FILE.html {nothing}",
        "ep.txt/x.html": "--output ep.txt/x.html: ep.txt is not a folder; pass another --output FILE.html "
        f"{nothing}",
    }
    (project / "ep.txt").write_text("a file\n", encoding="utf-8")
    for output, line in said.items():
        assert refused(project, monkeypatch, capsys, drawn, "-o", output) == f"zorkmcp report: {line}\n"
    assert not (project / "runs" / "report.html").exists()
    assert not (project / "gone").exists()


# --- a summary.json that is not zorkmcp's -------------------------------------------------------------


def test_a_damaged_summary_is_said_on_the_page(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    shutil.copytree(project / "runs" / "first", run)
    whole = (run / "summary.json").read_text(encoding="utf-8")
    (run / "summary.json").write_text(whole[:40], encoding="utf-8")  # cut short
    monkeypatch.chdir(tmp_path)
    assert main(["report", "run"]) == 0
    assert capsys.readouterr().out == "zorkmcp report: wrote run/report.html\n"
    page = (run / "report.html").read_text(encoding="utf-8")
    assert (
        "<p class=warn>summary.json in this folder is not one zorkmcp eval wrote (it does not parse, or "
        "lacks the arms and comparisons), so it cannot say which episodes are the run's: the page draws "
        "every episode file in episodes/. zorkmcp eval --resume does not replace such a file: move it "
        "away, then resume with this folder as --out to write the run's summary again.</p>"
    ) in page
    (run / "summary.json").write_text(whole, encoding="utf-8")  # the run's own: not a word
    assert main(["report", "run"]) == 0
    assert "is not one zorkmcp eval wrote" not in (run / "report.html").read_text(encoding="utf-8")
