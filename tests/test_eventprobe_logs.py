"""The logs as a reader finds them (Requirement 7): valid line by line after a writer was killed in the
middle of a line, an episode log that holds no terminal's commands, and event times that never go back.

Real ``LogFiles`` on real files, the real ``EventRecorder``; the last test plays a real episode
(``zorkmcp play`` in process, real Zork, a real in-process MCP server whose log message holds control
characters, the loopback chat-completions server in a thread of its own).
"""

from __future__ import annotations

import io
import json
import logging
import time
from typing import TYPE_CHECKING

import pytest
from llm_server import agent_reply, tool_call, tool_call_reply
from play_support import write_project
from play_support import zork1_path as zork1
from rich.console import Console
from test_bridge import llm_in_thread

from zorkmcp.cli import main
from zorkmcp.observability import EventRecorder, LogFiles

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)


def _one_event(turn: int) -> tuple[list[dict[str, object]], list[str]]:
    recorder = EventRecorder(context={"episode_id": "ep"})
    recorder.set_context(turn=turn)
    recorder.emit("turn_complete", action="north")
    recorder.log("INFO", f"Turn {turn}: Game: > north")
    events, lines = recorder.drain()
    for event in events:
        event["timestamp"] = 1.5
    return events, lines


# --- a log whose last line has no line break ------------------------------------------------------


def test_an_event_line_torn_by_kill_9_is_cut_off_before_the_next_run_appends(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A play killed with kill -9 in the middle of its write leaves half a line; the next run's first
    # events were glued to it (one line that is no JSON: jq stopped there, the report lost the event).
    events_log, episode_log = tmp_path / "events.jsonl", tmp_path / "episode.log"
    events_log.write_bytes(
        b'{"timestamp": 1.0, "event_type": "x"}\n{"timestamp": 2.0, "event_type": "turn_comp'
    )
    episode_log.write_bytes(b"old [INFO] Turn 1: Game: > nor")
    with caplog.at_level(logging.WARNING, logger="zorkmcp.observability"):
        LogFiles(json_log=events_log, episode_log=episode_log).write(*_one_event(2))
    assert events_log.read_text().splitlines() == [
        '{"timestamp": 1.0, "event_type": "x"}',
        '{"timestamp": 1.5, "event_type": "turn_complete", "episode_id": "ep", "turn": 2, "action": "north"}',
    ]
    assert episode_log.read_text() == "old [INFO] Turn 1: Game: > nor\nep [INFO] Turn 2: Game: > north\n"
    assert [r.getMessage() for r in caplog.records] == [
        f"{events_log}: its last line was cut short (43 bytes, not JSON: a process stopped in the "
        "middle of writing it, such as by kill -9); it was removed before the next events"
    ]


def test_a_whole_event_line_without_its_line_break_is_kept_and_ended(tmp_path: Path) -> None:
    events_log = tmp_path / "events.jsonl"
    events_log.write_bytes(b'{"timestamp": 1.0, "event_type": "x"}')  # an editor that drops the last break
    LogFiles(json_log=events_log, episode_log=None).write(*_one_event(1))
    assert [json.loads(line)["event_type"] for line in events_log.read_text().splitlines()] == [
        "x",
        "turn_complete",
    ]


def test_a_log_that_is_only_a_torn_line_is_emptied_first(tmp_path: Path) -> None:
    events_log = tmp_path / "events.jsonl"
    events_log.write_bytes(b'{"timestamp": 1795')
    LogFiles(json_log=events_log, episode_log=None).write(*_one_event(1))
    assert events_log.read_text() == (
        '{"timestamp": 1.5, "event_type": "turn_complete", "episode_id": "ep", "turn": 1, '
        '"action": "north"}\n'
    )


# --- the episode log holds text, not a terminal's commands ------------------------------------------


def test_control_characters_in_an_episode_log_line_are_written_escaped(tmp_path: Path) -> None:
    # A server's coloured log message put ESC sequences into the file (tail -f obeyed them) and a NUL
    # made grep call the log a binary file.
    episode_log = tmp_path / "episode.log"
    recorder = EventRecorder(context={"episode_id": "ep"})
    recorder.log(
        "INFO", "MCP server 'probe' [info]: \x1b[31mred\x1b[0m nul:\x00 bell:\x07 del:\x7f c1:\x9b tab:\tend"
    )
    LogFiles(json_log=None, episode_log=episode_log).write(*recorder.drain())
    assert episode_log.read_text() == (
        "ep [INFO] MCP server 'probe' [info]: \\x1b[31mred\\x1b[0m nul:\\x00 bell:\\x07 del:\\x7f c1:\\x9b "
        "tab:\tend\n"
    )


def test_a_played_episodes_log_escapes_the_control_characters_of_a_tools_error(tmp_path: Path) -> None:
    logs = {
        "json_log_file": str(tmp_path / "events.jsonl"),
        "episode_log_file": str(tmp_path / "episode.log"),
    }
    chatty = {"type": "inprocess", "module": "engine_servers:create_probe_server", "lifecycle": "per_episode"}
    pyproject = write_project(tmp_path, mcp_config={"mcpServers": {"p": chatty}}, files=logs)
    with llm_in_thread() as llm:
        pyproject.write_text(
            pyproject.read_text()
            + f'\n[tool.zorkgpt.llm]\nclient_base_url = "{llm.base_url}"\nagent_model = "gpt-4o"\n'
        )
        llm.script(
            tool_call_reply(tool_call("p__fail", {"tag": "\x1b]0;owned\x07\x00"})),
            agent_reply("north"),
        )
        code = main(
            ["play", "--game", str(zork1()), "--pyproject", str(pyproject), "--turns", "1", "--quiet"],
            console=Console(file=io.StringIO(), width=120),
            err=Console(file=io.StringIO(), width=400),
        )
    assert code == 0
    text = (tmp_path / "episode.log").read_text()
    assert [line.split(" ", 1)[1] for line in text.splitlines() if "Tool call failed" in line] == [
        "[WARNING] Turn 1 Iteration 1: Tool call failed: p.fail - Error executing tool fail: "
        "probe failure \\x1b]0;owned\\x07\\x00"
    ]
    assert not any(ord(c) < 32 and c not in "\t\n" for c in text)


# --- event times ------------------------------------------------------------------------------------


def test_event_timestamps_are_unix_seconds_that_never_go_back(monkeypatch: pytest.MonkeyPatch) -> None:
    # The wall clock set back (NTP, by hand) during an episode put later events before earlier ones.
    now = time.time()
    recorder = EventRecorder(context={"episode_id": "ep"})
    wall = iter([now + 3600.0, now - 3600.0, now - 7200.0])
    monkeypatch.setattr(time, "time", lambda: next(wall))
    for kind in ("mcp_tool_call", "mcp_tool_result", "turn_complete"):
        recorder.emit(kind)
    monkeypatch.undo()
    stamps = [e["timestamp"] for e in recorder.events]
    assert stamps == sorted(stamps)
    assert all(isinstance(t, float) and abs(t - now) < 60 for t in stamps)
