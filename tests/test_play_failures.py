"""Every way out of ``zorkmcp play`` writes ``episode_complete`` and prints what happened.

A model that fails, a server that does not start on the first turn, Ctrl-C while the servers are
still starting: each ends with the summary on stdout, the cause on stderr, ``episode_complete``
(``stopped``, ``error``) in the event log, and the documented exit status. Real Zork, real servers,
the loopback LLM in a thread of its own.
"""

from __future__ import annotations

import io
import json
import os
import re
import selectors
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from llm_server import RecordedRequest, Reply, agent_reply, json_reply
from play_support import (
    default_sigint,
    descendants,
    events_of,
    is_running,
    offline_env,
    read_events,
    stopped_by_a_full_disk,
    write_project,
)
from play_support import zork1_path as zork1
from rich.console import Console
from test_bridge import llm_in_thread

from zorkmcp.cli import main
from zorkmcp.config import Settings
from zorkmcp.errors import RunWriteError
from zorkmcp.orchestrator import Orchestrator

if TYPE_CHECKING:
    from collections.abc import Callable

GUARD = 60.0
"""Seconds before a blocking wait gives up (a hang guard, never an assertion on time)."""


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No API key from the environment: the offline scripted model plays (no real model is called)."""
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)


def play(pyproject: Path, *extra: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(
        ["play", "--game", str(zork1()), "--pyproject", str(pyproject), "--quiet", "--turns", "3", *extra],
        console=Console(file=out, width=120),
        err=Console(file=err, width=400),
    )
    return code, out.getvalue(), " ".join(err.getvalue().split())


def project(folder: Path, *, llm: str = "", **options: Any) -> Path:
    """A project whose logs go to ``folder/logs`` (``llm``: the body of a [tool.zorkgpt.llm] table)."""
    logs = {
        "json_log_file": str(folder / "logs" / "zorkmcp_events.jsonl"),
        "episode_log_file": str(folder / "logs" / "episode.log"),
    }
    pyproject = write_project(folder, files=logs, **options)
    if llm:
        pyproject.write_text(pyproject.read_text() + f"\n[tool.zorkgpt.llm]\n{llm}\n")
    return pyproject


def the_end(folder: Path) -> dict[str, Any]:
    (complete,) = events_of(read_events(folder / "logs" / "zorkmcp_events.jsonl"), "episode_complete")
    return complete


def test_a_model_that_fails_ends_the_episode_with_a_summary(tmp_path: Path) -> None:
    refusal = json_reply({"error": {"message": "Invalid model name"}}, status=400)
    with llm_in_thread(refusal) as llm:
        llm_table = f'client_base_url = "{llm.base_url}"\nagent_model = "gpt-4o"'
        code, out, err = play(project(tmp_path, llm=llm_table), "--summary-json", str(tmp_path / "s.json"))
    assert code == 1
    assert re.search(r"stopped\s+│ error: LLMHTTPError: .*Invalid model name", " ".join(out.split()))
    assert "zorkmcp play: the model failed (LLMHTTPError):" in err
    assert "Invalid model name" in err
    complete = the_end(tmp_path)
    assert (complete["stopped"], complete["turns"], complete["score"]) == ("error", 0, 0)
    assert complete["error"].startswith("LLMHTTPError: ")
    summary = json.loads((tmp_path / "s.json").read_text())  # scripts read how it ended from here too
    assert {k: summary[k] for k in ("stopped", "turns", "score", "model")} == {
        "stopped": "error", "turns": 0, "score": 0, "model": "gpt-4o",
    }  # fmt: skip
    assert summary["error"] == complete["error"]


def test_a_server_that_does_not_start_ends_the_episode_with_a_summary(tmp_path: Path) -> None:
    crash = "import sys; sys.stderr.write('no thoughts today'); sys.exit(3)"
    config = {"mcpServers": {"thinking": {"command": sys.executable, "args": ["-c", crash]}}}
    code, out, err = play(project(tmp_path, mcp_config=config), "--summary-json", str(tmp_path / "s.json"))
    assert code == 1
    assert "Episode summary" in out
    assert re.search(r"stopped\s+│ error: MCPServerStartupError: Failed to start MCP server 'thinking'", out)
    assert "no thoughts today" in err  # the whole error, once, as it came
    assert err.count("Last stderr lines:") == 1
    # and the last line names the failure, in one line
    assert err.endswith(
        "zorkmcp play: an MCP server did not start (MCPServerStartupError): Failed to start MCP server "
        "'thinking': the server closed the connection during startup"
    ), err
    complete = the_end(tmp_path)
    assert (complete["stopped"], complete["turns"]) == ("error", 0)
    summary = json.loads((tmp_path / "s.json").read_text())
    assert (summary["stopped"], summary["turns"], summary["error"]) == ("error", 0, complete["error"])


def test_ctrl_c_while_the_servers_start_ends_the_episode_with_a_summary(tmp_path: Path) -> None:
    """The first second: a per_episode server is still starting (it never answers) when Ctrl-C comes."""
    fifo = tmp_path / "started.fifo"
    os.mkfifo(fifo)
    stuck = textwrap.dedent(f"""\
        import os, time
        with open({str(fifo)!r}, "w") as f:
            f.write(f"started {{os.getpid()}}\\n")
        time.sleep(600)  # real-time: a server process that never answers; Ctrl-C ends it first
        """)
    config = {
        "mcpServers": {"slow": {"command": sys.executable, "args": ["-c", stuck], "lifecycle": "per_episode"}}
    }
    write_project(tmp_path, mcp_config=config)
    reader = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # read-write: select() wakes only for data
    process = subprocess.Popen(
        [sys.executable, "-m", "zorkmcp.cli", "play", "--game", str(zork1()), "--quiet"],
        cwd=tmp_path, env=offline_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=default_sigint,
    )  # fmt: skip
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(reader, selectors.EVENT_READ)
            assert selector.select(timeout=GUARD), "the server never started"
        stuck_pid = int(os.read(reader, 4096).split()[1])
        children = descendants(process.pid)
        assert stuck_pid in children
        process.send_signal(signal.SIGINT)
        out, err = (b.decode() for b in process.communicate(timeout=GUARD))
    finally:
        os.close(reader)
        if process.returncode is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, err
    assert [pid for pid, (start, _) in children.items() if is_running(pid, start)] == []
    assert "Episode summary" in out
    assert "interrupted (Ctrl-C)" in out
    assert "Traceback" not in err
    complete = the_end(tmp_path)
    assert (complete["stopped"], complete["turns"]) == ("interrupted", 0)


def test_a_file_the_episode_could_not_write_stops_it_before_it_starts(tmp_path: Path) -> None:
    # A path under a file (or a folder where a file goes) was found when the episode wrote it: the
    # log at its start, --record at the first model call, --summary-json after the whole episode.
    (tmp_path / "notes.txt").write_text("a file, not a folder\n")
    under_a_file = tmp_path / "notes.txt" / "out.json"
    pyproject = project(tmp_path, enabled=False)
    cases = [
        (
            ("--summary-json", str(under_a_file)),
            f"--summary-json {under_a_file}",
            "pass another --summary-json",
        ),
        (("--record", str(under_a_file)), f"--record {under_a_file}", "pass another --record"),
    ]
    for extra, named, remedy in cases:
        code, out, err = play(pyproject, *extra)
        assert code == 2
        assert out == ""
        assert err == (
            f"zorkmcp play: configuration error (ConfigError): {named}: {tmp_path / 'notes.txt'} is not a "
            f"folder, so the file {under_a_file} cannot be made there; {remedy}"
        )
    code, out, err = play(pyproject, "--summary-json", str(tmp_path))
    assert (code, out) == (2, "")
    assert err == (
        f"zorkmcp play: configuration error (ConfigError): --summary-json {tmp_path}: {tmp_path} is a "
        "folder, not a file; pass another --summary-json"
    )
    log = tmp_path / "notes.txt" / "events.jsonl"
    pyproject = write_project(tmp_path / "p", enabled=False, files={"json_log_file": str(log)})
    code, out, err = play(pyproject)
    assert (code, out) == (2, "")
    assert err == (
        f"zorkmcp play: configuration error (ConfigError): [tool.zorkgpt.files] json_log_file ({log}): "
        f"{tmp_path / 'notes.txt'} is not a folder, so the file {log} cannot be made there; set another path "
        f"in {pyproject}"
    )
    nothing_written = ["mcp_config.json", "notes.txt", "p", "pyproject.toml"]  # no logs/ folder either
    assert sorted(p.name for p in tmp_path.iterdir()) == nothing_written


FULL = Path("/dev/full")
"""A device every write to fails with ENOSPC: a full disk, from the kernel, without root."""

needs_dev_full = pytest.mark.skipif(not FULL.exists(), reason="needs /dev/full")


def fills_up(link: Path, *, at: int) -> Callable[[RecordedRequest], Reply]:
    """The model's answers (``look``); at request ``at`` the disk ``link`` leads to is full from then on.

    ``link`` is a symbolic link to the real file; it is turned to /dev/full while the engine waits for
    that answer, so the file keeps what it held and nothing more can be added.
    """
    count = 0

    def step(request: RecordedRequest) -> Reply:
        nonlocal count
        del request
        count += 1
        if count == at:
            link.unlink()
            link.symlink_to(FULL)
        return agent_reply("look")

    return step


def on_loopback(pyproject: Path, base_url: str) -> Path:
    pyproject.write_text(pyproject.read_text() + f'\n[tool.zorkgpt.llm]\nclient_base_url = "{base_url}"\n')
    return pyproject


@needs_dev_full
def test_a_log_on_a_disk_full_from_the_start_stops_the_episode_with_a_summary(tmp_path: Path) -> None:
    pyproject = project(tmp_path, enabled=False)
    events_log = tmp_path / "logs" / "zorkmcp_events.jsonl"
    events_log.parent.mkdir()
    events_log.symlink_to(FULL)  # the check before the episode cannot tell a full disk
    code, out, err = play(pyproject, "--summary-json", str(tmp_path / "s.json"))
    reason = f"{events_log}: cannot be written (No space left on device)"
    summary = stopped_by_a_full_disk(code, out, err, events_log, tmp_path / "s.json")
    assert re.search(r"stopped\s+│ error: RunWriteError: ", out), out
    assert summary["turns"] == 0
    episode = (tmp_path / "logs" / "episode.log").read_text()  # the other log, on another disk, says so
    assert f"[ERROR] Episode stopped: RunWriteError: {reason}" in episode
    assert "[INFO] Episode complete (error)" in episode


@needs_dev_full
def test_a_log_whose_disk_fills_up_mid_episode_stops_it_at_that_turn(tmp_path: Path) -> None:
    events_log = tmp_path / "logs" / "zorkmcp_events.jsonl"
    kept = tmp_path / "logs" / "kept.jsonl"
    events_log.parent.mkdir()
    kept.touch()
    events_log.symlink_to(kept)
    with llm_in_thread(default=fills_up(events_log, at=4)) as llm:
        pyproject = on_loopback(project(tmp_path, enabled=False), llm.base_url)
        code, out, err = play(pyproject, "--turns", "10", "--summary-json", str(tmp_path / "s.json"))
    summary = stopped_by_a_full_disk(code, out, err, events_log, tmp_path / "s.json")
    # the fourth answer came, the log could not take it: the episode stopped there, three turns played
    assert summary["turns"] == 3
    # what the log held before stays valid JSON lines, none torn: up to the last write before the
    # disk filled (turn 3's end was to be written with turn 4's answer)
    text = kept.read_text()
    assert text.endswith("\n")
    assert [e["turn"] for e in events_of(read_events(kept), "turn_complete")] == [1, 2]
    assert "[INFO] Episode complete (error)" in (tmp_path / "logs" / "episode.log").read_text()


class _FullAtTheEnd:
    """A reader of the episode's events: when ``episode_complete`` comes, ``link``'s disk is full."""

    def __init__(self, link: Path) -> None:
        self.link = link

    def emit(self, event_type: str, /, **fields: object) -> None:
        del fields
        if event_type == "episode_complete":
            self.link.unlink()
            self.link.symlink_to(FULL)

    def log(self, level: str, message: str, /) -> None:
        del level, message


@needs_dev_full
def test_a_log_that_cannot_take_the_episodes_end_makes_it_an_error(tmp_path: Path) -> None:
    # Every turn was played and logged; only episode_complete found the disk full. The command must not
    # say all went well: the log does not say how the episode ended.
    events_log, kept = tmp_path / "logs" / "zorkmcp_events.jsonl", tmp_path / "logs" / "kept.jsonl"
    events_log.parent.mkdir()
    kept.touch()
    events_log.symlink_to(kept)
    settings = Settings.from_pyproject(project(tmp_path, enabled=False))
    orchestrator = Orchestrator(settings, game_path=zork1(), seed=12, max_turns=3)
    orchestrator.recorder.add_listener(_FullAtTheEnd(events_log))
    reason = f"{events_log}: cannot be written (No space left on device)"
    with pytest.raises(RunWriteError, match=re.escape(reason)):
        orchestrator.run()
    summary = orchestrator.summary
    assert summary is not None
    assert (summary.turns, summary.stopped, summary.error) == (3, "error", f"RunWriteError: {reason}")
    assert [e["turn"] for e in events_of(read_events(kept), "turn_complete")] == [1, 2, 3]
    assert events_of(read_events(kept), "episode_complete") == []
    assert (
        f"[ERROR] Episode log incomplete: RunWriteError: {reason}"
        in (tmp_path / "logs" / "episode.log").read_text()
    )
