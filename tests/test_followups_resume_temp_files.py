"""``zorkmcp eval --resume`` after a run killed inside an atomic write removes what that write left.

A file of the run is written through ``.NAME.PID.tmp`` beside it and renamed when whole; ``kill -9``
in between leaves the temporary file in the run's folder. A resume (which holds the folder) removes
those of processes that no longer run, and says so in one line; one of a running process (another
command may be writing it) and any other file stay. Real runs of the command, offline scripted model.
"""

from __future__ import annotations

import os
import subprocess
from typing import TYPE_CHECKING

import pytest
from eval_support import episode_records
from play_support import zork1_path

from zorkmcp.cli import main

if TYPE_CHECKING:
    from pathlib import Path


def _eval(run: Path, *flags: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    args = ["--no-mcp", "--episodes", "2", "--turns", "1", "--concurrency", "2", "--quiet"]
    code = main(["eval", "--game", str(zork1_path()), "--out", str(run), *args, *flags])
    out, err = capsys.readouterr()
    return code, out, err


def _ended_pid() -> int:
    """The id of a process that has ended (and been reaped): no process runs with it."""
    process = subprocess.Popen(["true"])  # any program that ends at once
    process.wait()
    return process.pid


@pytest.mark.parametrize("flag", ["--resume", "--retry-failed"])
def test_a_resume_removes_the_temporary_files_of_a_killed_run_and_keeps_a_running_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    code, out, err = _eval(run, capsys=capsys)
    assert code == 0, out + err
    arm = run / "episodes" / "no-mcp"
    dead, live = _ended_pid(), os.getpid()
    left = [
        arm / f".seed-19.json.{dead}.tmp",
        arm / f".seed-19.events.jsonl.{dead}.tmp",
        run / f".summary.json.{dead}.tmp",
        run / f".report.html.{dead}.tmp",
    ]
    kept = [
        arm / f".seed-13.json.{live}.tmp",  # a running process's (this one's): it may be writing it
        run / ".summary.csv.1.tmp",  # init's: it always runs
        arm / f".notes.txt.{dead}.tmp",  # no file of a run
        run / f".seed-12.json.{dead}.tmp",  # an episode's name, but not in an arm's folder
        arm / f".seed-12.json.{dead}.temp",
        arm / f"seed-12.json.{dead}.tmp",
        arm / ".seed-12.json.0.tmp",  # no process's id
        arm / ".seed-12.json.99999999.tmp",  # past any process id
    ]
    for path in left + kept:
        path.write_text("half a fi")
    (arm / f".seed-14.json.{dead}.tmp").mkdir()  # a folder, not a file the run wrote
    kept.append(arm / f".seed-14.json.{dead}.tmp")
    before = {path: path.read_bytes() for path in sorted(run.rglob("seed-*.json"))}

    code, out, err = _eval(run, flag, capsys=capsys)

    assert code == 0, out + err
    assert err.splitlines() == [
        f"zorkmcp eval: removed 4 temporary file(s) that a run killed while writing left in {run}, such as "
        f"{run / f'.report.html.{dead}.tmp'}"
    ]
    assert [path for path in left if path.exists()] == []
    assert [path for path in kept if not path.exists()] == []
    assert "0 episode(s) played, 2 resumed" in out
    assert sorted(episode_records(run)) == [("no-mcp", 12), ("no-mcp", 13)]
    assert {path: path.read_bytes() for path in sorted(run.rglob("seed-*.json"))} == before


def test_a_resume_with_no_temporary_file_left_says_nothing_of_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    assert _eval(run, capsys=capsys)[0] == 0
    code, out, err = _eval(run, "--resume", capsys=capsys)
    assert (code, err) == (0, "")
    assert "0 episode(s) played, 2 resumed" in out
