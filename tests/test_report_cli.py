"""``zorkmcp report`` as a process: an output that cannot be written, a page it must not replace, an
``--episode`` outside the run.

A reader that goes away (the "wrote" line's, or the page's with ``-o /dev/stdout``) ends the command
with status 141 and nothing on stderr (no traceback, no "Exception ignored" at exit); a standard
output that cannot be written for another reason (``> /dev/full``) is one line on stderr, status 1.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import IO

import pytest
from report_data import write_run

PYTEST_HTML = "<html><head><title>Test Report</title></head><body>pytest-html</body></html>\n"


def zorkmcp_report(
    *args: str, cwd: Path, stdout: int | IO[bytes] = subprocess.PIPE
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zorkmcp.cli", "report", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        check=False,
        timeout=120,
    )


def with_reader_gone(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``zorkmcp report`` with stdout a pipe whose reader went away before the command wrote a byte."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return zorkmcp_report(*args, cwd=cwd, stdout=write_end)
    finally:
        os.close(write_end)


@pytest.fixture
def run(tmp_path: Path) -> Path:
    write_run(tmp_path / "run", seeds=2, failed=False)
    return tmp_path / "run"


# --- standard output ---------------------------------------------------------------------------


def test_the_wrote_line_to_a_reader_gone_exits_141_and_says_nothing(run: Path) -> None:
    done = with_reader_gone("run", cwd=run.parent)
    assert (done.returncode, done.stderr) == (141, "")
    assert (run / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_the_wrote_line_to_a_full_disk_is_one_line_and_status_1(run: Path) -> None:
    with open("/dev/full", "wb") as full:
        done = zorkmcp_report("run", cwd=run.parent, stdout=full)
    assert (done.returncode, done.stderr) == (
        1,
        "zorkmcp report: wrote run/report.html, but cannot write to standard output: "
        "No space left on device\n",
    )
    assert (run / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("output", ["/dev/stdout", "/dev/fd/1"])
def test_the_page_to_a_reader_gone_exits_141_and_says_nothing(run: Path, output: str) -> None:
    done = with_reader_gone("run", "-o", output, cwd=run.parent)
    assert (done.returncode, done.stderr) == (141, "")
    assert not (run / "report.html").exists()


# --- a page zorkmcp did not write --------------------------------------------------------------


def test_a_foreign_report_html_beside_a_log_is_not_replaced(run: Path) -> None:
    logs = run.parent / "logs"
    logs.mkdir()
    (logs / "report.html").write_text(PYTEST_HTML, encoding="utf-8")
    (logs / "zorkmcp_events.jsonl").write_bytes(
        (run / "episodes" / "mcp" / "seed-1.events.jsonl").read_bytes()
    )
    done = zorkmcp_report("logs/zorkmcp_events.jsonl", cwd=run.parent)
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        "zorkmcp report: logs/report.html is not a page zorkmcp wrote, and this report would replace it; "
        "move it, or pass --output FILE.html (nothing was written)\n",
    )
    assert (logs / "report.html").read_text(encoding="utf-8") == PYTEST_HTML
    # asked for by name, it is replaced
    done = zorkmcp_report("logs/zorkmcp_events.jsonl", "-o", "logs/report.html", cwd=run.parent)
    assert (done.returncode, done.stdout) == (0, "zorkmcp report: wrote logs/report.html\n")
    assert "<title>zorkmcp episode mcp-s1</title>" in (logs / "report.html").read_text(encoding="utf-8")


def test_a_foreign_report_html_in_a_run_folder_is_not_replaced(run: Path) -> None:
    (run / "report.html").write_text(PYTEST_HTML, encoding="utf-8")
    done = zorkmcp_report("run", cwd=run.parent)
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        "zorkmcp report: run/report.html is not a page zorkmcp wrote, and this report would replace it; "
        "move it, or pass --output FILE.html (nothing was written)\n",
    )
    assert (run / "report.html").read_text(encoding="utf-8") == PYTEST_HTML
    done = zorkmcp_report("run", "--output", "run/report.html", cwd=run.parent)
    assert (done.returncode, done.stdout) == (0, "zorkmcp report: wrote run/report.html\n")
    # a page zorkmcp drew is drawn again without a word
    done = zorkmcp_report("run", cwd=run.parent)
    assert (done.returncode, done.stdout, done.stderr) == (0, "zorkmcp report: wrote run/report.html\n", "")
    # a folder that is not a run says so, whatever report.html it holds
    project = run.parent / "project"
    project.mkdir()
    (project / "report.html").write_text(PYTEST_HTML, encoding="utf-8")
    done = zorkmcp_report(".", cwd=project)
    assert (done.returncode, done.stderr) == (
        2,
        "zorkmcp report: .: not an eval run folder (no episodes/ inside); run zorkmcp eval first\n",
    )


def test_a_foreign_page_beside_an_episode_log_is_not_replaced(run: Path) -> None:
    page = run / "episodes" / "mcp" / "seed-2.html"
    page.write_text(PYTEST_HTML, encoding="utf-8")
    done = zorkmcp_report("run", "--episode", "mcp/seed-2", cwd=run.parent)
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        "zorkmcp report: run/episodes/mcp/seed-2.html is not a page zorkmcp wrote, and this report would "
        "replace it; move it, or pass --output FILE.html (nothing was written)\n",
    )
    assert page.read_text(encoding="utf-8") == PYTEST_HTML


# --- --episode ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "episode",
    ["../../r4/episodes/mcp/seed-1", "{r4}/episodes/mcp/seed-1", "mcp/../../../r4/episodes/no-mcp/seed-2"],
)
def test_an_episode_outside_the_run_is_refused(tmp_path: Path, episode: str) -> None:
    write_run(tmp_path / "r4", seeds=2, failed=False)
    write_run(tmp_path / "r5", seeds=2, failed=False)
    episode = episode.format(r4=tmp_path / "r4")
    done = zorkmcp_report("r5", "--episode", episode, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (
        2,
        "",
        f"zorkmcp report: r5: --episode {episode!r} is not an episode of this run; give <arm>/seed-<N> "
        "(e.g. mcp/seed-1) or an episode_id from an episodes/<arm>/seed-<N>.events.jsonl file\n",
    )
    assert sorted(p.name for p in (tmp_path / "r4" / "episodes" / "mcp").glob("*.html")) == []
    assert sorted(p.name for p in (tmp_path / "r4" / "episodes" / "no-mcp").glob("*.html")) == []
