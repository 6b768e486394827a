"""``zorkmcp report`` of the logs ``zorkmcp play`` and ``bridge`` append to, as they write them.

Real Zork (Jericho) with the offline scripted model: several plays in one folder append their
episodes to one ``logs/zorkmcp_events.jsonl``, and each episode's page gets a name of its own; a log
of ``bridge.get_action()``/``bridge.Bridge`` (the agent's turns, no game) is said to be one. The
list of a log's episodes marks the episodes that ended in an error or were interrupted, and those
replayed from a cassette (``replayed_from``), which each episode's page says too.
"""

from __future__ import annotations

import re
import shutil
from typing import TYPE_CHECKING, Any

import pytest
from play_support import events_of, read_events, write_project, zork1_path
from report_data import episode_events, write_events

import bridge
from zorkmcp.cli import main
from zorkmcp.config import McpSettings, Settings
from zorkmcp.eval import ReportInputError, render_episode_report
from zorkmcp.observability import LogFiles

if TYPE_CHECKING:
    from pathlib import Path

KEYS = ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "GAME", "ZORKMCP_GAME_SEED")


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder two ``zorkmcp play`` runs played in (real Zork, seeds 12 and 13, two turns each)."""
    folder = tmp_path_factory.mktemp("played")
    write_project(folder, enabled=False)
    with pytest.MonkeyPatch.context() as patch:
        for name in KEYS:
            patch.delenv(name, raising=False)
        patch.chdir(folder)
        for seed in ("12", "13"):
            assert main(["play", "--game", str(zork1_path()), "--turns", "2", "--seed", seed, "--quiet"]) == 0
    return folder


@pytest.fixture
def folder(played: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of :func:`played`'s folder, the current directory."""
    shutil.copytree(played, tmp_path / "play")
    monkeypatch.chdir(tmp_path / "play")
    return tmp_path / "play"


def report(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["report", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def title(page: Path) -> str:
    found = re.search(r"<title>([^<]*)</title>", page.read_text(encoding="utf-8"))
    assert found is not None
    return found.group(1)


# --- each episode's page, a name of its own ------------------------------------------------------


def test_each_episode_of_a_play_log_gets_a_page_of_its_own(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = folder / "logs" / "zorkmcp_events.jsonl"
    starts = events_of(read_events(log), "episode_start")
    assert [start["seed"] for start in starts] == [12, 13]
    first, second = (start["episode_id"] for start in starts)
    for episode in (first, second):
        code, out, err = report(capsys, "logs/zorkmcp_events.jsonl", "--episode", episode)
        assert (code, out, err) == (0, f"zorkmcp report: wrote logs/report-{episode}.html\n", "")
    assert title(folder / "logs" / f"report-{first}.html") == f"zorkmcp episode {first}"
    assert title(folder / "logs" / f"report-{second}.html") == f"zorkmcp episode {second}"
    assert not (folder / "logs" / "report.html").exists()
    # a log of one episode, drawn without --episode: its page is report.html, as before
    one = folder / "one" / "zorkmcp_events.jsonl"
    one.parent.mkdir()
    lines = log.read_text(encoding="utf-8").splitlines(keepends=True)
    one.write_text("".join(line for line in lines if first in line), encoding="utf-8")
    assert report(capsys, "one/zorkmcp_events.jsonl") == (0, "zorkmcp report: wrote one/report.html\n", "")
    assert title(folder / "one" / "report.html") == f"zorkmcp episode {first}"


def test_an_episode_id_brings_no_path_into_the_pages_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "logs").mkdir()
    write_events(tmp_path / "logs" / "ev.jsonl", episode_events("../a b", 1) + episode_events("run-b", 2))
    assert report(capsys, "logs/ev.jsonl", "--episode", "../a b") == (
        0,
        "zorkmcp report: wrote logs/report-.._a_b.html\n",
        "",
    )
    assert sorted(p.name for p in tmp_path.rglob("*.html")) == ["report-.._a_b.html"]


# --- the list of a log's episodes ----------------------------------------------------------------


def _ended(events: list[dict[str, Any]], **fields: Any) -> list[dict[str, Any]]:
    """``events`` with ``fields`` in its ``episode_complete`` (and ``replayed_from`` in its start too)."""
    for event in events:
        if event["event_type"] == "episode_complete":
            event.update(fields)
        if event["event_type"] == "episode_start" and "replayed_from" in fields:
            event["replayed_from"] = fields["replayed_from"]
    return events


def test_the_list_marks_errors_interruptions_and_replays(tmp_path: Path) -> None:
    error = (
        "CassetteMismatchError: cassette rec.jsonl line 3, turn 2: the engine sent a request the "
        "cassette does not have there"
    )
    episodes = [
        _ended(episode_events("episode-live", 12)),
        _ended(episode_events("episode-replay", 12), replayed_from="rec.jsonl"),
        _ended(episode_events("episode-failed", 12), stopped="error", error=error, replayed_from="rec.jsonl"),
        _ended(episode_events("episode-stopped", 13), stopped="interrupted"),
        _ended(episode_events("episode-odd", 13), stopped="error", error="the game server\ndid not answer"),
    ]
    log = write_events(tmp_path / "zorkmcp_events.jsonl", [e for events in episodes for e in events])
    with pytest.raises(ReportInputError) as raised:
        render_episode_report(log, tmp_path / "p.html")
    started = "started 2026-11-23T08:00:00Z, 30 turns"
    assert str(raised.value) == (
        f"{log}: holds 5 episodes; pick one with --episode ID ("
        f"episode-live (seed 12, {started}); "
        f"episode-replay (seed 12, {started}, replayed from the cassette rec.jsonl); "
        f"episode-failed (seed 12, {started}, ended in an error: CassetteMismatchError, replayed from the "
        "cassette rec.jsonl); "
        f"episode-stopped (seed 13, {started}, interrupted); "
        f"episode-odd (seed 13, {started}, ended in an error: the game server did not answer)"
        "); the last is the most recent"
    )


def test_a_replay_names_its_cassette_on_its_page(tmp_path: Path) -> None:
    events = episode_events("episode-replay", 12)
    assert events[0]["event_type"] == "episode_start"
    events[0]["replayed_from"] = "cassettes/<rec>.jsonl"  # the start alone says it
    log = write_events(tmp_path / "replay.jsonl", events)
    html = render_episode_report(log, tmp_path / "replay.html").read_text(encoding="utf-8")
    assert (
        f"<p class=sub>{log} · seed 12 · MCP yes · zork1.z5 · at most 30 turns · replayed from the cassette "
        "cassettes/&lt;rec&gt;.jsonl</p>"
    ) in html
    assert "<div class='card'><b>qwen3-30b-a3b (replayed)</b><span>model</span></div>" in html
    live = write_events(tmp_path / "live.jsonl", episode_events("episode-live", 12))
    html = render_episode_report(live, tmp_path / "live.html").read_text(encoding="utf-8")
    assert "replayed" not in html
    assert "<div class='card'><b>qwen3-30b-a3b</b><span>model</span></div>" in html


# --- a log of bridge.get_action() / bridge.Bridge ------------------------------------------------


@pytest.fixture
def bridge_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The log ``bridge.Bridge`` (two turns) and ``bridge.get_action()`` (one) append to, as they do."""
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)
    logs = tmp_path / "logs"
    files = LogFiles(logs / "zorkmcp_events.jsonl", logs / "episode.log")
    with bridge.Bridge(
        Settings(mcp=McpSettings(enabled=False)), log_files=files, walkthrough=["open mailbox", "north"]
    ) as episode:
        assert episode.get_action("West of House")["action"] == "open mailbox"
        assert episode.get_action("North of House")["action"] == "north"
    files_table = {"json_log_file": str(files.json_log), "episode_log_file": str(files.episode_log)}
    pyproject = write_project(tmp_path / "loop", enabled=False, files=files_table)
    assert bridge.get_action("West of House", pyproject=pyproject)["action"]
    return logs / "zorkmcp_events.jsonl"


def test_a_bridge_log_is_said_to_be_one(
    bridge_log: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(bridge_log.parent.parent)
    assert {e["event_type"] for e in read_events(bridge_log)} >= {"mcp_session_complete"}
    assert report(capsys, "logs/zorkmcp_events.jsonl") == (
        2,
        "",
        "zorkmcp report: logs/zorkmcp_events.jsonl: looks like a log of bridge.get_action()/bridge.Bridge "
        "(3 agent turn(s), no episode_start/turn_complete): the report does not draw those, as the game "
        "loop is the calling code's and the log holds no game text or score; draw a log of zorkmcp play "
        "or zorkmcp eval, or read this one's events as JSON lines (README, Events)\n",
    )
    assert sorted(p.name for p in bridge_log.parent.iterdir()) == ["episode.log", "zorkmcp_events.jsonl"]


def test_a_bridge_episode_in_a_play_log_is_said_to_be_one(
    bridge_log: Path, folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = folder / "logs" / "zorkmcp_events.jsonl"
    with log.open("a", encoding="utf-8") as appended:
        appended.write(bridge_log.read_text(encoding="utf-8"))
    events = read_events(log)
    played = [start["episode_id"] for start in events_of(events, "episode_start")]
    bridged = events_of(events, "mcp_session_complete")[-1]["episode_id"]  # get_action()'s turn
    code, out, err = report(capsys, "logs/zorkmcp_events.jsonl", "--episode", bridged)
    assert (code, out, err) == (
        2,
        "",
        f"zorkmcp report: logs/zorkmcp_events.jsonl: episode {bridged!r} is 1 agent turn(s) of "
        "bridge.get_action()/bridge.Bridge: the report does not draw those, as the game loop is the calling "
        f"code's and the log holds no game text or score; the log's episodes: {', '.join(played)}\n",
    )
    code, out, err = report(capsys, "logs/zorkmcp_events.jsonl", "--episode", played[1])
    assert (code, out, err) == (0, f"zorkmcp report: wrote logs/report-{played[1]}.html\n", "")
