"""``zorkmcp eval``'s run folder: one run writes to it at a time, and its path need not be UTF-8.

Real ``zorkmcp eval`` processes, real Zork and the loopback model; two runs overlap for certain
because the first one's model holds its answers until the test has seen the second refused.
"""

from __future__ import annotations

import signal
import socket
import sys
from subprocess import DEVNULL
from typing import TYPE_CHECKING, Any

import trio
from attrs import evolve
from eval_support import episode_records
from llm_server import Reply, agent_reply
from play_support import offline_env, zork1_path

from zorkmcp.cli import main

if TYPE_CHECKING:
    from pathlib import Path

    import pytest
    from llm_server import LLMServer, RecordedRequest

LOCK = ".zorkmcp-eval.lock"


def _held_model(llm_server: LLMServer) -> tuple[trio.Event, trio.Event]:
    """The model answers no episode until ``release`` is set; ``asked`` is set at the first question."""
    asked, release = trio.Event(), trio.Event()

    def step(request: RecordedRequest) -> Reply:
        if request.method != "POST":  # the run's probe of the endpoint (GET /models)
            return Reply(status=404)
        asked.set()
        return evolve(agent_reply("look"), hold=release)

    llm_server.default = step
    return asked, release


def _eval_command(llm_server: LLMServer, run: Path, *flags: str) -> list[str]:
    return [
        sys.executable, "-m", "zorkmcp.cli", "eval", "--game", str(zork1_path()), "--base-url",
        llm_server.base_url, "--model", "m", "--no-mcp", "--episodes", "3", "--concurrency", "2",
        "--turns", "2", "--out", str(run), "--quiet", *flags,
    ]  # fmt: skip


async def _run(command: list[str], cwd: Path) -> trio.CompletedProcess[bytes]:
    with trio.fail_after(120):  # a hang guard
        return await trio.run_process(
            command, cwd=cwd, env=offline_env(), check=False, capture_stdout=True, capture_stderr=True
        )


async def test_a_second_run_into_a_folder_another_run_writes_to_is_refused_naming_its_pid(
    llm_server: LLMServer, tmp_path: Path, nursery: trio.Nursery
) -> None:
    asked, release = _held_model(llm_server)
    run = tmp_path / "same"
    done = trio.Event()
    outcome: dict[str, Any] = {}

    async def first_run() -> None:
        outcome["first"] = await _run(_eval_command(llm_server, run), tmp_path)
        done.set()

    nursery.start_soon(first_run)
    with trio.fail_after(120):
        await asked.wait()  # the first run plays: it holds its folder
    pid = int((run / LOCK).read_text())
    refused = (
        f"zorkmcp eval: ConfigError: --out {run}: another zorkmcp eval (pid {pid}) is writing to {run}; "
        "wait for it to end, or pass another --out (nothing was played or replaced)"
    )
    for flags in ((), ("--resume",), ("--retry-failed",), ("--resume", "--ray")):
        second = await _run(_eval_command(llm_server, run, *flags), tmp_path)
        assert (second.returncode, second.stdout, second.stderr.decode().splitlines()) == (2, b"", [refused])
    assert not episode_records(run)  # nothing of the second runs: no episode had ended
    release.set()
    with trio.fail_after(120):
        await done.wait()
    assert outcome["first"].returncode == 0, outcome["first"].stderr.decode()[-2000:]
    records = episode_records(run)
    assert sorted(records) == [("no-mcp", 12), ("no-mcp", 13), ("no-mcp", 14)]
    assert {r["pid"] for r in records.values()} == {pid}
    assert sorted(p.name for p in run.iterdir()) == ["episodes", "report.html", "summary.csv", "summary.json"]
    # once it has ended, the folder is free: a resume goes on with it
    again = await _run(_eval_command(llm_server, run, "--resume"), tmp_path)
    assert again.returncode == 0, again.stderr.decode()[-2000:]
    assert b"0 episode(s) played, 3 resumed" in again.stdout
    assert not (run / LOCK).exists()


async def test_a_run_killed_with_sigkill_leaves_no_claim_behind(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    asked, release = _held_model(llm_server)
    run = tmp_path / "run"
    process = await trio.lowlevel.open_process(
        _eval_command(llm_server, run), cwd=tmp_path, env=offline_env(), stdout=DEVNULL, stderr=DEVNULL
    )
    try:
        with trio.fail_after(120):
            await asked.wait()
        assert (run / LOCK).read_text() == f"{process.pid}\n"
        process.send_signal(signal.SIGKILL)
        await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.returncode == -signal.SIGKILL
    assert (run / LOCK).exists()  # the file stays, but nothing holds it
    release.set()
    resumed = await _run(_eval_command(llm_server, run, "--resume"), tmp_path)
    assert resumed.returncode == 0, resumed.stderr.decode()[-2000:]
    assert sorted(episode_records(run)) == [("no-mcp", 12), ("no-mcp", 13), ("no-mcp", 14)]
    assert sorted(p.name for p in run.iterdir()) == ["episodes", "report.html", "summary.csv", "summary.json"]
    # a run that writes nothing (its endpoint does not answer) leaves neither its folder nor its lock
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    command = _eval_command(
        llm_server, tmp_path / "runs" / "new", "--base-url", f"http://127.0.0.1:{port}/v1"
    )
    unreachable = await _run(command, tmp_path)
    assert unreachable.returncode == 2, unreachable.stderr.decode()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_a_run_folder_whose_name_is_not_utf8_gets_its_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Linux paths are bytes: b"bad\xffout" is "bad\udcffout" to Python, which UTF-8 cannot encode.
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "bad\udcffout"
    code = main([
        "eval", "--game", str(zork1_path()), "--no-mcp", "--episodes", "1", "--turns", "1", "--out", str(run),
        "--quiet",
    ])  # fmt: skip
    _, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert sorted(p.name for p in run.iterdir()) == ["episodes", "report.html", "summary.csv", "summary.json"]
    page = (run / "report.html").read_text(encoding="utf-8")
    assert "<title>zorkmcp eval bad\\xffout</title>" in page
    assert "<h1>zorkmcp eval: bad\\xffout</h1>" in page
    (run / "report.html").unlink()
    assert main(["report", str(run)]) == 0
    assert "<title>zorkmcp eval bad\\xffout</title>" in (run / "report.html").read_text(encoding="utf-8")
