"""``zorkmcp report`` given a part of an eval run's folder instead of the folder or an event log.

A real run (``zorkmcp eval --no-mcp``, the offline scripted model, real Zork: one episode of two
turns) leaves ``summary.json``, ``summary.csv``, ``report.html`` and ``episodes/<arm>/seed-<N>.*``;
a reader who gives one of those (tab completion lands there) is told what it is and the command
that draws it. Each was "no episode records (episode_start/turn_complete) found" or "not an eval
run folder (no episodes/ inside); run zorkmcp eval first" before, with nothing to do.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest
from play_support import zork1_path
from report_data import episode_events, write_events
from test_report_browser import KEYS

from zorkmcp.cli import main

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding ``run``, a real run, and that run's page of episode ``no-mcp/seed-12``."""
    folder = tmp_path_factory.mktemp("run")
    with pytest.MonkeyPatch.context() as patch:
        for name in KEYS:
            patch.delenv(name, raising=False)
        patch.chdir(folder)
        common = ["--game", str(zork1_path()), "--turns", "2", "--episodes", "1", "--no-mcp", "--quiet"]
        assert main(["eval", *common, "--out", "run"]) == 0
        assert main(["report", "run", "--episode", "no-mcp/seed-12"]) == 0
    return folder


def report(
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *args: str
) -> str:
    monkeypatch.chdir(folder)
    assert main(["report", *args]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    return err


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("run/summary.json", "that is the summary of the eval run run, not an event log; to draw the run"),
        (
            "run/summary.csv",
            "that is the episodes' table of the eval run run, not an event log; to draw the run",
        ),
        ("run/report.html", "that is the page of the eval run run, not an event log; to draw the run"),
    ],
)
def test_a_file_of_the_run_names_the_folder_to_give(
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], given: str, said: str
) -> None:
    err = report(folder, monkeypatch, capsys, given)
    assert err == f"zorkmcp report: {given}: {said}, give its folder: zorkmcp report run\n"


@pytest.mark.parametrize(("name", "what"), [("seed-12.json", "record"), ("seed-12.html", "page")])
def test_an_episodes_record_or_page_names_the_command_for_its_episode(
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], name: str, what: str
) -> None:
    given = f"run/episodes/no-mcp/{name}"
    assert (folder / given).is_file()
    assert report(folder, monkeypatch, capsys, given) == (
        f"zorkmcp report: {given}: that is the {what} of the episode no-mcp/seed-12 of the eval run run, "
        "not its event log; to draw it, run zorkmcp report run --episode no-mcp/seed-12\n"
    )


def test_the_episodes_folder_or_an_arms_folder_names_the_run(
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert report(folder, monkeypatch, capsys, "run/episodes") == (
        "zorkmcp report: run/episodes: that is the episodes/ folder of the eval run run; give the run's "
        "folder: zorkmcp report run\n"
    )
    assert report(folder, monkeypatch, capsys, "run/episodes/no-mcp") == (
        "zorkmcp report: run/episodes/no-mcp: that is the folder of the arm no-mcp of the eval run run; give "
        "the run's folder: zorkmcp report run, or one episode of it: zorkmcp report run --episode "
        "no-mcp/seed-<N>\n"
    )


def test_a_page_is_no_event_log_but_a_log_named_like_one_is_drawn(
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    page = folder / "run" / "report.html"
    (tmp_path / "page.html").write_bytes(page.read_bytes())
    assert report(tmp_path, monkeypatch, capsys, "page.html") == (
        "zorkmcp report: page.html: that is an HTML page, not an event log; give a JSON-lines event log "
        "(zorkmcp play's logs/zorkmcp_events.jsonl, an eval episode's seed-<N>.events.jsonl) or an eval "
        "run's folder\n"
    )
    # a log may have any name: one named like the run's summary is drawn
    write_events(tmp_path / "summary.json", episode_events())
    (tmp_path / "episodes").mkdir()
    assert main(["report", "summary.json", "-o", "page.html"]) == 0
    assert "zork1: episode ep-7f3a" in (tmp_path / "page.html").read_text(encoding="utf-8")
    assert json.loads((tmp_path / "summary.json").read_text().splitlines()[0])["episode_id"] == "ep-7f3a"
