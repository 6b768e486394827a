"""``zorkmcp report -o`` never replaces what the page is drawn from.

The event log drawn, and every file of the eval run drawn but the pages the report writes there
(``summary.json``, ``summary.csv``, the run's lock, each record and event log under ``episodes/``),
are refused as the page, by name, through a symbolic link or a hard link: one line, exit status 2,
nothing written. The pages themselves (``report.html``, ``episodes/<arm>/seed-<N>.html``) are the
report's to replace.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import pytest
from report_data import episode_events, write_events, write_run

from zorkmcp.cli import main
from zorkmcp.eval import (
    ReportInputError,
    render_episode_report,
    render_eval_report,
    summarize,
    write_summary_csv,
)

if TYPE_CHECKING:
    from pathlib import Path


def files_of(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (a link as the link: its target's path), by its path inside."""
    found: dict[str, bytes] = {}
    for path in sorted(folder.rglob("*")):
        if path.is_symlink():
            found[path.relative_to(folder).as_posix()] = os.readlink(path).encode()
        elif path.is_file():
            found[path.relative_to(folder).as_posix()] = path.read_bytes()
    return found


def report(
    folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], *argv: str
) -> tuple[int, str, str]:
    """``zorkmcp report ARGV`` run in ``folder``: its exit status, stdout and stderr."""
    monkeypatch.chdir(folder)
    code = main(["report", *argv])
    out, err = capsys.readouterr()
    return code, out, err


# --- an event log --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("output", "make"),
    [
        ("ev.jsonl", None),
        ("./logs/../ev.jsonl", None),
        ("link.html", "symlink"),
        ("hard.html", "hardlink"),
    ],
)
def test_the_log_drawn_is_refused_as_the_page(
    output: str,
    make: str | None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    log = write_events(tmp_path / "ev.jsonl", episode_events())
    (tmp_path / "logs").mkdir()
    if make == "symlink":
        (tmp_path / output).symlink_to("ev.jsonl")
    elif make == "hardlink":
        os.link(log, tmp_path / output)
    before = files_of(tmp_path)
    code, out, err = report(tmp_path, monkeypatch, capsys, "ev.jsonl", "-o", output)
    shown = output.removeprefix("./")
    assert (code, out, err) == (
        2,
        "",
        f"zorkmcp report: --output {shown}: that is the event log drawn, which the page would replace; "
        "pass another --output FILE.html, or leave it out to write report.html (nothing was written)\n",
    )
    assert files_of(tmp_path) == before


def test_the_log_of_several_episodes_is_refused_as_the_page_of_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_events(tmp_path / "ev.jsonl", episode_events("run-a", 1) + episode_events("run-b", 2))
    before = files_of(tmp_path)
    code, out, err = report(tmp_path, monkeypatch, capsys, "ev.jsonl", "--episode", "run-b", "-o", "ev.jsonl")
    assert (code, out, err) == (
        2,
        "",
        "zorkmcp report: --output ev.jsonl: that is the event log drawn, which the page would replace; "
        "pass another --output FILE.html, or leave it out to write report-run-b.html (nothing was written)\n",
    )
    assert files_of(tmp_path) == before


def test_a_log_named_like_its_page_is_not_replaced_by_its_page(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_events(tmp_path / "report.html", episode_events())  # a log given the page's name
    before = files_of(tmp_path)
    code, out, err = report(tmp_path, monkeypatch, capsys, "report.html")
    assert (code, out, err) == (
        2,
        "",
        "zorkmcp report: report.html (the page without --output): that is the event log drawn, which the "
        "page would replace; pass --output FILE.html (nothing was written)\n",
    )
    code, out, err = report(tmp_path, monkeypatch, capsys, "report.html", "-o", "report.html")
    assert (code, out, err) == (
        2,
        "",
        "zorkmcp report: --output report.html: that is the event log drawn, which the page would replace; "
        "pass another --output FILE.html (nothing was written)\n",
    )
    assert files_of(tmp_path) == before
    code, out, err = report(tmp_path, monkeypatch, capsys, "report.html", "-o", "page.html")
    assert (code, out, err) == (0, "zorkmcp report: wrote page.html\n", "")


# --- an eval run folder --------------------------------------------------------------------------


@pytest.fixture
def run(tmp_path: Path) -> Path:
    """An eval run folder as ``zorkmcp eval`` leaves it: records, event logs, summary.json and .csv."""
    records = write_run(tmp_path / "run", seeds=2, failed=False)
    (tmp_path / "run" / "summary.json").write_text(json.dumps(summarize(records), indent=2) + "\n")
    write_summary_csv(records, tmp_path / "run" / "summary.csv")
    return tmp_path / "run"


RUN_PAGE = "run/report.html"
EPISODE_PAGE = "run/episodes/mcp/seed-2.html"


@pytest.mark.parametrize(
    ("argv", "output", "what", "default"),
    [
        (["run"], "run/summary.json", "the run's summary.json", RUN_PAGE),
        (["run"], "run/summary.csv", "the run's summary.csv", RUN_PAGE),
        (["run"], "run/.zorkmcp-eval.lock", "the run's .zorkmcp-eval.lock", RUN_PAGE),  # there or not
        (["run"], "run/episodes/no-mcp/seed-1.json", "the run's episodes/no-mcp/seed-1.json", RUN_PAGE),
        (
            ["run"],
            "run/episodes/mcp/seed-1.events.jsonl",
            "the run's episodes/mcp/seed-1.events.jsonl",
            RUN_PAGE,
        ),
        (["run", "--episode", "mcp/seed-2"], "run/summary.json", "the run's summary.json", EPISODE_PAGE),
        (
            ["run", "--episode", "mcp/seed-2"],
            "run/episodes/mcp/seed-2.json",
            "the run's episodes/mcp/seed-2.json",
            EPISODE_PAGE,
        ),
        (
            ["run", "--episode", "mcp/seed-2"],
            "run/episodes/mcp/seed-2.events.jsonl",
            "the event log drawn",
            EPISODE_PAGE,
        ),
        (
            ["run/episodes/mcp/seed-2.events.jsonl"],  # an episode's log given as it is
            "run/summary.csv",
            "the run's summary.csv",
            EPISODE_PAGE,
        ),
    ],
)
def test_a_file_of_the_run_drawn_is_refused_as_the_page(
    argv: list[str],
    output: str,
    what: str,
    default: str,
    run: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    before = files_of(run)
    code, out, err = report(run.parent, monkeypatch, capsys, *argv, "-o", output)
    assert (code, out, err) == (
        2,
        "",
        f"zorkmcp report: --output {output}: that is {what}, which the page would replace; pass another "
        f"--output FILE.html, or leave it out to write {default} (nothing was written)\n",
    )
    assert files_of(run) == before


@pytest.mark.parametrize("link", ["symlink", "hardlink"])
def test_a_link_to_a_file_of_the_run_is_that_file(
    link: str, run: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    page = run.parent / "page.html"
    if link == "symlink":
        page.symlink_to(run / "episodes" / "no-mcp" / "seed-2.json")
    else:
        os.link(run / "episodes" / "no-mcp" / "seed-2.json", page)
    before = files_of(run)
    code, out, err = report(run.parent, monkeypatch, capsys, "run", "-o", "page.html")
    assert (code, out, err) == (
        2,
        "",
        "zorkmcp report: --output page.html: that is the run's episodes/no-mcp/seed-2.json, which the page "
        "would replace; pass another --output FILE.html, or leave it out to write run/report.html (nothing "
        "was written)\n",
    )
    assert files_of(run) == before


def test_the_pages_the_report_writes_in_a_run_are_its_to_replace(
    run: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = report(run.parent, monkeypatch, capsys, "run", "-o", "run/summary.json")
    assert (code, out, err) == (
        2,
        "",
        "zorkmcp report: --output run/summary.json: that is the run's summary.json, which the page would "
        "replace; pass another --output FILE.html, or leave it out to write run/report.html (nothing was "
        "written)\n",
    )
    kept = {name: data for name, data in files_of(run).items() if not name.endswith(".html")}
    code, out, _ = report(run.parent, monkeypatch, capsys, "run", "--episode", "mcp/seed-2")
    assert (code, out) == (0, "zorkmcp report: wrote run/episodes/mcp/seed-2.html\n")
    argv = ["run", "--episode", "mcp/seed-1", "-o", "run/episodes/mcp/seed-2.html"]
    code, out, _ = report(run.parent, monkeypatch, capsys, *argv)  # another episode's page, by name
    assert (code, out) == (0, "zorkmcp report: wrote run/episodes/mcp/seed-2.html\n")
    assert "<title>zorkmcp episode mcp-s1</title>" in (run / "episodes" / "mcp" / "seed-2.html").read_text()
    code, out, _ = report(run.parent, monkeypatch, capsys, "run", "-o", "run/report.html")
    assert (code, out) == (0, "zorkmcp report: wrote run/report.html\n")
    assert {name: data for name, data in files_of(run).items() if not name.endswith(".html")} == kept


# --- from Python ---------------------------------------------------------------------------------


def test_the_python_functions_refuse_the_same_files(tmp_path: Path, run: Path) -> None:
    log = write_events(tmp_path / "ev.jsonl", episode_events())
    before = log.read_bytes()
    with pytest.raises(ReportInputError) as caught:
        render_episode_report(log, log)
    assert str(caught.value) == (
        f"{log}: that is the event log drawn, which the page would replace; give another out_path "
        "(nothing was written)"
    )
    assert log.read_bytes() == before
    summary = (run / "summary.json").read_bytes()
    with pytest.raises(ReportInputError) as caught:
        render_eval_report(run, run / "summary.json")
    assert str(caught.value) == (
        f"{run / 'summary.json'}: that is the run's summary.json, which the page would replace; give "
        "another out_path (nothing was written)"
    )
    assert (run / "summary.json").read_bytes() == summary
