"""A standard output that was closed (``>&-``): ``sys.stdout`` is ``None``, and a command that writes
there says so once, instead of a traceback (``zorkmcp report``) or silence (``zorkmcp play``)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest
from play_support import offline_env, write_project, zork1_path
from report_data import episode_events, write_events

import zorkmcp
from zorkmcp._cli_report import add_report_parser, run_report
from zorkmcp._stdout import OutputError, output_failed, print_line

REPO = Path(zorkmcp.__file__).resolve().parents[1]
"""The tree under test: the commands run its zorkmcp."""
CLOSED = "cannot write to standard output: it is closed (send it to /dev/null to drop it)"


def test_print_line_to_a_closed_stdout_raises_output_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """``sys.stdout.write`` on ``None`` was an ``AttributeError``, which no caller catches."""
    monkeypatch.setattr(sys, "stdout", None)
    with pytest.raises(OutputError, match=r"it is closed \(send it to /dev/null to drop it\)") as caught:
        print_line("zorkmcp report: wrote x.html")
    assert output_failed(caught.value.error, "zorkmcp report: wrote x.html, but ") == 1


def test_report_with_stdout_closed_says_the_page_is_written_and_what_failed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``zorkmcp report DIR >&-`` ended in an ``AttributeError`` traceback, the page written."""
    log = write_events(tmp_path / "events.jsonl", episode_events())
    parser = argparse.ArgumentParser(prog="zorkmcp")
    add_report_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["report", str(log)])
    monkeypatch.setattr(sys, "stdout", None)
    assert run_report(args) == 1
    assert capsys.readouterr().err == f"zorkmcp report: wrote {tmp_path / 'report.html'}, but {CLOSED}\n"
    assert (tmp_path / "report.html").is_file()


def test_play_with_stdout_closed_says_so_once_and_plays(tmp_path: Path) -> None:
    """``zorkmcp play >&-`` printed nothing and said nothing (rich writes to no file then)."""
    pyproject = write_project(
        tmp_path,
        enabled=False,
        files={"json_log_file": str(tmp_path / "ev.jsonl"), "episode_log_file": str(tmp_path / "ep.log")},
    )
    entry = "import sys; from zorkmcp._entry import main; sys.exit(main())"
    command = [sys.executable, "-c", entry, "play", "--turns", "2", "--game", str(zork1_path())]
    command += ["--pyproject", str(pyproject), "--summary-json", str(tmp_path / "summary.json")]
    done = subprocess.run(  # the shell closes the child's stdout: Python cannot start one so
        ["sh", "-c", '"$@" >&-', "sh", *command],
        capture_output=True,
        text=True,
        env=offline_env(PYTHONPATH=str(REPO)),
        cwd=tmp_path,
        check=False,
        timeout=60,
    )
    assert (done.returncode, done.stderr) == (
        0,
        "zorkmcp: standard output is closed; nothing is printed there, the command goes on\n",
    )
    assert '"stopped": "turn limit"' in (tmp_path / "summary.json").read_text(encoding="utf-8")
