"""``zorkmcp play`` end to end: real Zork, real MCP servers, the offline scripted model.

In process through ``zorkmcp.cli.main`` and as real subprocesses (``python -m zorkmcp.cli`` and the
``zorkmcp`` console script), including Ctrl-C between turns and inside a tool call.
"""

from __future__ import annotations

import io
import json
import os
import re
import select
import selectors
import shutil
import signal
import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING, Any

import pytest
from play_support import (
    HANG_SERVER,
    INPROCESS_THINKING,
    PER_TURN_THINKING,
    default_sigint,
    descendants,
    events_of,
    is_running,
    offline_env,
    read_events,
    write_project,
    zork1_path,
)
from rich.console import Console

from zorkmcp.cli import main

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

SUMMARY_KEYS = [
    "score",
    "max_score",
    "moves",
    "turns",
    "victory",
    "game_over",
    "tool_calls",
    "llm_requests",
    "prompt_tokens",
    "completion_tokens",
    "model",
    "scripted",
    "stopped",
    "error",
]
BANNER = "No LLM configured"
PROGRESS = re.compile(
    r'^turn=(\d+) score=(-?\d+)/350 moves=(\d+) tool_calls=(\d+) location="([^"]*)" action="([^"]*)"'
)
SAFETY_TIMEOUT = 120  # seconds; only reached when something hangs (never a wall-clock assertion)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)


def summary_of(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert list(data) == SUMMARY_KEYS
    return data


def terminal(width: int = 120) -> Console:
    return Console(file=io.StringIO(), force_terminal=True, width=width, color_system="truecolor")


def text_of(console: Console) -> str:
    file = console.file
    assert isinstance(file, io.StringIO)
    return file.getvalue()


# -- the 350-point run -------------------------------------------------------------------------------


def test_play_wins_zork1_with_350_points_and_the_reasoning_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pyproject = write_project(tmp_path / "project", mcp_config=INPROCESS_THINKING)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    monkeypatch.chdir(run_dir)  # relative log paths are relative to the current folder

    code = main(
        ["play", "--game", str(zork1_path()), "--pyproject", str(pyproject), "--quiet",
         "--summary-json", "out/summary.json"]
    )  # fmt: skip

    out, err = capsys.readouterr()
    assert code == 0, err
    summary = summary_of(run_dir / "out" / "summary.json")
    assert {k: v for k, v in summary.items() if k != "tool_calls"} == {
        "score": 350, "max_score": 350, "moves": 394, "turns": 396, "victory": True, "game_over": True,
        "llm_requests": 476, "prompt_tokens": 541712, "completion_tokens": 14839,
        "model": "scripted-walkthrough", "scripted": True, "stopped": "victory", "error": None,
    }  # fmt: skip
    assert summary["tool_calls"] == 80  # each a request of its own: 396 answers and 80 tool calls
    # One banner: the llm module's own warning goes to the episode log only.
    assert out.count(BANNER) == 1
    assert "OFFLINE SCRIPTED MODEL" not in out + err
    assert "turn=" not in out  # --quiet
    assert re.search(r"score\s+│ 350 / 350", out)
    assert re.search(r"stopped\s+│ victory", out)
    assert re.search(r"model requests\s+│ 476\s", out)
    assert re.search(r"tokens in / out\s+│ 541,712 / 14,839\s", out)

    assert not (tmp_path / "project" / "logs").exists()
    events = read_events(run_dir / "logs" / "zorkmcp_events.jsonl")
    calls = events_of(events, "mcp_tool_call")
    assert len(calls) == summary["tool_calls"]
    assert {c["tool_name"] for c in calls} == {"thinking.think"}
    assert len(events_of(events, "mcp_tool_result")) == len(calls)
    assert len(events_of(events, "mcp_session_complete")) == 396
    turns = events_of(events, "turn_complete")
    assert [t["turn"] for t in turns] == list(range(1, 397))
    assert (turns[-1]["victory"], turns[-1]["game_over"], turns[-2]["game_over"]) == (True, True, False)
    (complete,) = events_of(events, "episode_complete")
    assert (complete["stopped"], complete["victory"], complete["score"]) == ("victory", True, 350)
    assert events_of(events, "llm_offline_model")
    episode_log = (run_dir / "logs" / "episode.log").read_text(encoding="utf-8")
    assert "[INFO] Turn 1 Iteration 1: Agent calling tool thinking.think" in episode_log
    assert "[INFO] No API key for" in episode_log  # said once per episode; the banner shows it
    assert "[INFO] Turn 396: Game: > " in episode_log
    assert "GAME OVER (victory)" in episode_log


# -- per-turn reasoning servers, a real subprocess ---------------------------------------------------


def test_play_subprocess_starts_a_thinking_server_every_turn(tmp_path: Path) -> None:
    write_project(tmp_path, mcp_config=PER_TURN_THINKING)  # the repository's default mcp_config.json
    result = subprocess.run(
        [sys.executable, "-m", "zorkmcp.cli", "play", "--game", str(zork1_path()), "--turns", "12",
         "--summary-json", "summary.json"],
        cwd=tmp_path, env=offline_env(), capture_output=True, text=True, timeout=SAFETY_TIMEOUT, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    summary = summary_of(tmp_path / "summary.json")
    assert (summary["turns"], summary["moves"], summary["scripted"], summary["victory"]) == (
        12,
        12,
        True,
        False,
    )
    assert summary["tool_calls"] > 0

    # stdout is not a terminal: one machine-readable progress line per turn
    assert result.stdout.count(BANNER) == 1
    progress = [m for m in map(PROGRESS.match, result.stdout.splitlines()) if m]
    assert [int(m.group(1)) for m in progress] == list(range(1, 13))
    assert progress[0].group(5, 6) == ("North of House", "N")
    assert sum(int(m.group(4)) for m in progress) == summary["tool_calls"]
    assert int(progress[-1].group(2)) == summary["score"]

    events = read_events(tmp_path / "logs" / "zorkmcp_events.jsonl")
    thinking = [e for e in events_of(events, "mcp_server_started") if e["server"] == "thinking"]
    # Prewarmed per_turn servers (bridge.Bridge): each turn's process was started in the background
    # during the turn before, so 12 turns used 12 fresh processes; the spare started for a 13th turn
    # was closed with the episode (it may not have finished starting by then, and then reports nothing).
    assert len(thinking) in (12, 13)
    assert len({e["pid"] for e in thinking}) == len(thinking)  # a fresh process every turn, never reused
    stopped = [e for e in events_of(events, "mcp_server_stopped") if e["server"] == "thinking"]
    assert sorted(e["pid"] for e in stopped) == sorted(e["pid"] for e in thinking)
    for pid in {e["pid"] for e in events_of(events, "mcp_server_started")}:
        assert not is_running(pid, None)
    calls = events_of(events, "mcp_tool_call")
    assert calls
    assert len(calls) == summary["tool_calls"]
    assert len(events_of(events, "mcp_tool_result")) == len(calls)
    assert len(events_of(events, "mcp_session_complete")) == 12
    first = calls[0]["turn"]
    episode_log = (tmp_path / "logs" / "episode.log").read_text(encoding="utf-8")
    assert f"[INFO] Turn {first} Iteration 1: Agent calling tool thinking.think" in episode_log
    assert "[INFO] Turn 12: Game: > " in episode_log


# -- MCP on and off (Requirement 9.4) ----------------------------------------------------------------


def marker_config(marker: Path) -> dict[str, Any]:
    """The think server, started through a shell that first creates ``marker``."""
    command = f"touch '{marker}' && exec '{sys.executable}' -m zorkmcp.servers.thinking"
    return {"mcpServers": {"thinking": {"command": "sh", "args": ["-c", command]}}}


@pytest.mark.parametrize("how", ["--no-mcp", "enabled = false"])
def test_with_mcp_off_no_reasoning_server_starts_and_no_tool_is_called(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], how: str
) -> None:
    marker = tmp_path / "think-server-started"
    if how == "--no-mcp":
        pyproject = write_project(tmp_path, mcp_config=marker_config(marker), max_turns=2)
    else:  # mcp_config.json is broken: it must not even be read
        pyproject = write_project(tmp_path, mcp_config="{ broken", enabled=False, max_turns=2)
    monkeypatch.chdir(tmp_path)
    args = ["play", "--game", str(zork1_path()), "--pyproject", str(pyproject), "--summary-json", "s.json"]
    code = main([*args, "--no-mcp"] if how == "--no-mcp" else args)
    out, err = capsys.readouterr()
    assert code == 0, err
    summary = summary_of(tmp_path / "s.json")
    assert (summary["turns"], summary["tool_calls"]) == (2, 0)  # max_turns_per_episode = 2
    assert not marker.exists()
    assert "MCP off (no tools)" in out
    events = read_events(tmp_path / "logs" / "zorkmcp_events.jsonl")
    assert {e["server"] for e in events_of(events, "mcp_server_started")} == {"zork"}
    assert events_of(events, "mcp_tool_call") == []
    assert [e["tool_calls_count"] for e in events_of(events, "mcp_session_complete")] == [0, 0]


def test_with_mcp_on_the_same_reasoning_server_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "think-server-started"
    pyproject = write_project(tmp_path, mcp_config=marker_config(marker))
    monkeypatch.chdir(tmp_path)
    code = main(
        ["play", "--game", str(zork1_path()), "--pyproject", str(pyproject), "--turns", "1", "--quiet"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert marker.exists()
    assert "MCP on" in out
    events = read_events(tmp_path / "logs" / "zorkmcp_events.jsonl")
    assert [e["tool_name"] for e in events_of(events, "mcp_tool_call")] == ["thinking.think"]


# -- errors ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("{ not json", r"configuration error \(ConfigError\):.*mcp_config\.json"),
        (None, r"configuration error \(ConfigError\):.*mcp_config\.json"),
        ({"mcpServers": {"thinking": {}}}, r"configuration error \(ConfigError\):.*command"),
    ],
)
def test_a_broken_mcp_config_exits_2_with_a_clear_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], config: Any, message: str
) -> None:
    pyproject = write_project(tmp_path, mcp_config=config)
    code = main(["play", "--game", str(zork1_path()), "--pyproject", str(pyproject)])
    out, err = capsys.readouterr()
    assert code == 2
    assert re.search(r"zorkmcp play: " + message, " ".join(err.split())), err
    assert "Episode summary" not in out


@pytest.mark.parametrize("command", ["play", "eval"])
def test_an_error_shows_a_path_as_it_is_even_with_colons(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # rich read ":abc:" as an emoji code: "/tmp/zork:abc:.z3" was shown as "/tmp/zork🔤.z3"
    monkeypatch.chdir(tmp_path)
    game = tmp_path / "zork:abc:.z3"
    more = ["--out", str(tmp_path / "run")] if command == "eval" else ["--turns", "1"]
    assert main([command, "--game", str(game), *more]) == 2
    err = capsys.readouterr().err
    assert f"game file not found: {game} (from --game)" in err, err


def test_game_file_errors_exit_2_and_say_how_to_pass_the_game(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "project"
    pyproject = write_project(project, files={"game_file_path": "games/zork1.z3"})
    monkeypatch.chdir(tmp_path)

    assert main(["play", "--game", "nope.z3", "--pyproject", str(pyproject)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    # a name with a story's suffix: looked for here, then in the games folders
    assert re.search(
        rf"zorkmcp play: game error: --game nope\.z3: no file nope\.z3 in {re.escape(str(tmp_path))}, and no "
        r"story file named nope\.z3 in games, .*zorkmcp/game/data\. Put the file",
        err,
    ), err

    monkeypatch.setenv("GAME", str(tmp_path / "missing.z3"))
    assert main(["play", "--pyproject", str(pyproject)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert re.search(r"missing\.z3 \(from the GAME environment variable\)", err), err

    monkeypatch.delenv("GAME")
    assert main(["play", "--pyproject", str(pyproject)]) == 2
    err = "".join(capsys.readouterr().err.split())  # the path may be wrapped anywhere
    # relative game_file_path: relative to the pyproject's folder, not to the current one
    assert (
        "".join(f"{project / 'games' / 'zork1.z3'}(fromgame_file_pathin[tool.zorkgpt.files])".split()) in err
    )


@pytest.mark.parametrize("given", ["play --game", "eval --game", "eval.toml"])
def test_a_game_name_plays_the_game_of_that_name(
    given: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The README's eval file says game = "zork1", and --game takes a name as GAME does.
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GAME", raising=False)
    monkeypatch.setenv("ZORKMCP_GAMES_DIR", str(tmp_path / "no-games-here"))
    if given == "play --game":
        args = ["play", "--game", "zork1", "--turns", "1", "--no-mcp", "--quiet", "--summary-json", "s.json"]
    elif given == "eval --game":
        args = ["eval", "--game", "zork1", "--episodes", "1", "--turns", "1", "--no-mcp", "--quiet"]
    else:
        (tmp_path / "eval.toml").write_text('[eval]\ngame = "zork1"\nepisodes = 1\nmax_turns = 1\n')
        args = ["eval", "eval.toml", "--no-mcp", "--quiet"]
    code = main([*args, "--out", "run"] if given.startswith("eval") else args)
    _, err = capsys.readouterr()
    assert code == 0, err
    if given == "play --game":
        assert summary_of(tmp_path / "s.json")["turns"] == 1
    else:
        (record,) = [json.loads(p.read_text()) for p in (tmp_path / "run" / "episodes").glob("*/seed-*.json")]
        assert (record["game"], record["turns"], record.get("error")) == ("zork1.z3", 1, None)


@pytest.mark.parametrize("given", ["./-zork.z3", "-zork.z3"])
def test_a_story_file_whose_name_starts_with_a_dash_plays(
    given: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Its path reached the game server as a word of its own, which the server took for an option.
    monkeypatch.chdir(tmp_path)
    shutil.copy(zork1_path(), tmp_path / "-zork.z3")
    code = main(["play", f"--game={given}", "--turns", "1", "--quiet", "--summary-json", "s.json"])
    _, err = capsys.readouterr()
    assert code == 0, err
    assert summary_of(tmp_path / "s.json")["turns"] == 1


@pytest.mark.parametrize("command", [["play", "--turns", "1"], ["eval", "--episodes", "1", "--turns", "1"]])
def test_a_current_folder_that_was_removed_is_one_line_and_exit_2(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()  # as `mkdir d; cd d; rmdir ../d` leaves a shell
    code = main(command)
    out, err = capsys.readouterr()
    assert code == 2
    assert err == (
        f"zorkmcp {command[0]}: the current folder no longer exists (it was removed); cd to a folder that "
        "exists and run the command again\n"
    )
    assert out == ""
    assert list(tmp_path.iterdir()) == []


def test_log_paths_under_the_home_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # "~/…" is the home folder, as in game_file_path and config_file; not a folder named "~" here
    home, project = tmp_path / "home", tmp_path / "project"
    monkeypatch.setenv("HOME", str(home))
    files = {"json_log_file": "~/zlogs/events.jsonl", "episode_log_file": "~/zlogs/episode.log"}
    pyproject = write_project(project, enabled=False, files=files)
    monkeypatch.chdir(project)
    code = main(
        ["play", "--game", str(zork1_path()), "--pyproject", str(pyproject), "--turns", "1", "--quiet"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert sorted(p.name for p in (home / "zlogs").iterdir()) == ["episode.log", "events.jsonl"]
    assert sorted(p.name for p in project.iterdir()) == ["mcp_config.json", "pyproject.toml"]
    assert f"Logs: {home}/zlogs/events.jsonl (events), {home}/zlogs/episode.log (episode)" in " ".join(
        out.split()
    )


@pytest.mark.parametrize(
    ("flags", "files", "message"),
    [
        (
            ["--summary-json", "logs/zorkmcp_events.jsonl"], {},
            "--summary-json logs/zorkmcp_events.jsonl: the same file as [tool.zorkgpt.files] json_log_file, "
            "and one file cannot be both; pass another --summary-json",
        ),
        (
            ["--summary-json", "out.json", "--record", "./out.json"], {},
            "--record ./out.json: the same file as --summary-json, and one file cannot be both; pass "
            "another --record",
        ),
        (
            ["--summary-json", "pyproject.toml"], {},
            "--summary-json pyproject.toml: that is the settings file, which play reads; pass another "
            "--summary-json",
        ),
        (
            ["--record", "mcp_config.json"], {},
            "--record mcp_config.json: that is the MCP config, which play reads; pass another --record",
        ),
        (
            [], {"json_log_file": "logs/all.log", "episode_log_file": "logs/all.log"},
            "[tool.zorkgpt.files] episode_log_file (logs/all.log): the same file as [tool.zorkgpt.files] "
            "json_log_file, and one file cannot be both; set another path in {pyproject}",
        ),
    ],
)  # fmt: skip
def test_one_file_for_two_outputs_or_an_input_is_refused_before_anything_is_written(
    flags: list[str],
    files: dict[str, str],
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pyproject = write_project(tmp_path, files=files)
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "zorkmcp_events.jsonl").write_text('{"event_type": "an earlier episode"}\n')
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    monkeypatch.chdir(tmp_path)
    code = main(["play", "--game", str(zork1_path()), "--turns", "1", "--quiet", *flags])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert " ".join(err.split()) == (
        f"zorkmcp play: configuration error (ConfigError): {message.format(pyproject=pyproject)}"
    )
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_outputs_written_in_place_may_be_shared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_project(tmp_path, enabled=False)
    monkeypatch.chdir(tmp_path)
    flags = ["--summary-json", "/dev/null", "--record", "/dev/null"]
    code = main(["play", "--game", str(zork1_path()), "--turns", "1", "--quiet", *flags])
    _, err = capsys.readouterr()
    assert code == 0, err


@pytest.mark.parametrize("flag", ["--pyproject", "--game"])
def test_a_path_to_read_with_a_name_too_long_is_one_line(
    flag: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    long = str(tmp_path / ("a" * 300))
    assert main(["play", flag, long, "--turns", "1", "--quiet"]) == 2
    expected = (
        f"zorkmcp play: configuration error (ConfigError): --pyproject {long}: cannot be read: File name "
        "too long"
        if flag == "--pyproject"
        else f"zorkmcp play: {long}: File name too long; give a shorter path"
    )
    assert " ".join(capsys.readouterr().err.split()) == expected


def test_settings_and_eval_files_saved_with_a_bom_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Windows Notepad starts UTF-8 files with a BOM; mcp_config.json is read past one, and so are these
    monkeypatch.chdir(tmp_path)
    pyproject = write_project(tmp_path, enabled=False, max_turns=1)
    pyproject.write_bytes(b"\xef\xbb\xbf" + pyproject.read_bytes())
    (tmp_path / "eval.toml").write_bytes(b'\xef\xbb\xbf[eval]\nepisodes = 1\nmax_turns = 1\nout = "run"\n')
    assert main(["play", "--game", str(zork1_path()), "--quiet", "--summary-json", "s.json"]) == 0
    assert summary_of(tmp_path / "s.json")["turns"] == 1  # max_turns_per_episode of that file
    assert main(["eval", "eval.toml", "--game", str(zork1_path()), "--quiet"]) == 0
    assert [p.name for p in (tmp_path / "run" / "episodes").glob("*/*.json")] == ["seed-12.json"]
    capsys.readouterr()


def test_a_warning_that_comes_back_every_turn_is_shown_once_and_logged_each_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # a per_turn server is listed every turn, and its allow-list names a tool it does not have
    config = {"mcpServers": {"thinking": {**PER_TURN_THINKING["mcpServers"]["thinking"], "tools": ["nope"]}}}
    write_project(tmp_path, mcp_config=config, max_turns=3)
    monkeypatch.chdir(tmp_path)
    assert main(["play", "--game", str(zork1_path()), "--quiet"]) == 0
    warning = "warning: MCP server 'thinking' has no tools named nope (from its 'tools' allow-list)"
    assert capsys.readouterr().err.splitlines() == [warning]
    log = (tmp_path / "logs" / "episode.log").read_text()
    assert log.count("MCP server 'thinking' has no tools named nope") == 3


def test_a_file_that_is_no_story_exits_2_before_any_server_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.z3"
    bad.write_bytes(bytes([218]) + bytes(100))
    pyproject = write_project(tmp_path)
    assert main(["play", "--game", str(bad), "--pyproject", str(pyproject)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert re.search(r"zorkmcp play: game error: .*bad\.z3 is not a Z-machine story file", err), err
    assert not (tmp_path / "logs").exists()


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["play", "--turns", "0"])
    assert exited.value.code == 2
    assert "--turns: must be a positive integer, got '0'" in capsys.readouterr().err
    assert main(["play", "--pyproject", str(tmp_path / "nope.toml")]) == 2
    assert re.search(r"--pyproject .*nope\.toml: no such file", " ".join(capsys.readouterr().err.split()))
    assert main(["play", "--pyproject", str(tmp_path)]) == 2
    assert " ".join(capsys.readouterr().err.split()) == (
        f"zorkmcp play: configuration error (ConfigError): --pyproject {tmp_path}: is a folder, not a "
        "settings file"
    )


# -- the live display --------------------------------------------------------------------------------


def test_live_display_renders_on_a_terminal_and_quiet_suppresses_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    (project / "games").mkdir(parents=True)
    shutil.copyfile(zork1_path(), project / "games" / "zork1.z3")
    pyproject = write_project(
        project, mcp_config=INPROCESS_THINKING, files={"game_file_path": "games/zork1.z3"}
    )
    monkeypatch.chdir(tmp_path)

    console, err = terminal(), terminal()
    assert main(["play", "--pyproject", str(pyproject), "--turns", "2"], console=console, err=err) == 0
    shown = text_of(console)
    assert text_of(err) == ""
    assert "\x1b[" in shown  # rendered for a terminal
    for cell in ["turn 1/2", "turn 2/2", "North of House", "Forest Path", "tool calls — turn 1: 1",
                 "thinking.think", "reasoning", "Episode summary"]:  # fmt: skip
        assert cell in shown, cell
    assert shown.count(BANNER) == 1
    assert "turn=" not in shown  # no plain progress lines on a terminal

    monkeypatch.setenv("GAME", str(zork1_path()))  # GAME wins over game_file_path
    quiet = terminal()
    assert (
        main(["play", "--pyproject", str(pyproject), "--turns", "2", "--quiet"], console=quiet, err=err) == 0
    )
    shown = text_of(quiet)
    assert "Episode summary" in shown
    assert shown.count(BANNER) == 1
    assert "tool calls —" not in shown
    assert "Forest Path" in shown  # the summary's location
    assert "North of House" not in shown
    assert "turn=" not in shown


# -- Ctrl-C ------------------------------------------------------------------------------------------


def _interrupt_and_collect(
    process: subprocess.Popen[bytes], pending: bytes, stop: signal.Signals = signal.SIGINT
) -> tuple[int, str, str]:
    process.send_signal(stop)
    out, err = process.communicate(timeout=SAFETY_TIMEOUT)
    return process.returncode, (pending + out).decode(), err.decode()


@pytest.mark.parametrize(
    ("stop", "status", "told"),
    [
        (signal.SIGINT, 130, "interrupted (Ctrl-C)"),
        (signal.SIGTERM, 143, "interrupted (SIGTERM)"),
        (signal.SIGHUP, 129, "interrupted (SIGHUP)"),  # its output is a pipe here, not the terminal
    ],
    ids=["ctrl-c", "sigterm", "sighup"],
)
def test_ctrl_c_between_turns_prints_the_summary_and_leaves_no_process(
    stop: signal.Signals, status: int, told: str, tmp_path: Path
) -> None:
    zorkmcp = shutil.which("zorkmcp")
    if zorkmcp is None:
        pytest.skip("the zorkmcp console script is not installed (pip install -e .)")
    write_project(tmp_path, mcp_config=PER_TURN_THINKING)
    process = subprocess.Popen(
        [zorkmcp, "play", "--game", str(zork1_path())],
        cwd=tmp_path, env=offline_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=default_sigint,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        seen = b""
        for line in process.stdout:  # blocks until zorkmcp prints; no sleeping, no polling
            seen += line
            if line.startswith(b"turn=3 "):
                break
        else:
            pytest.fail(
                f"zorkmcp play ended before turn 3: {seen.decode()} {process.communicate()[1].decode()}"
            )
        children = descendants(process.pid)
        code, out, err = _interrupt_and_collect(process, seen, stop)
    finally:
        if process.returncode is None:
            process.kill()
            process.wait()
    assert code == status, err
    assert any("zorkmcp.game.server" in cmd for _, cmd in children.values())
    assert [pid for pid, (start, _) in children.items() if is_running(pid, start)] == []
    assert "Episode summary" in out
    assert told in out
    turns = int(re.search(r"turns\s+│ (\d+)", out).group(1))  # type: ignore[union-attr]
    assert turns >= 3
    assert "Traceback" not in err
    events = read_events(tmp_path / "logs" / "zorkmcp_events.jsonl")
    assert events_of(events, "episode_complete")[0]["stopped"] == "interrupted"
    for pid in {e["pid"] for e in events_of(events, "mcp_server_started")}:
        assert not is_running(pid, None)


def _play(folder: Path, preexec: Callable[[], object] = default_sigint) -> subprocess.Popen[bytes]:
    """``zorkmcp play`` of Zork I in ``folder``, its output piped, ready for Ctrl-C (by default)."""
    return subprocess.Popen(
        [sys.executable, "-m", "zorkmcp.cli", "play", "--game", str(zork1_path())],
        cwd=folder, env=offline_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=preexec,
    )  # fmt: skip


def test_a_reader_that_goes_away_stops_play_as_ctrl_c_does(tmp_path: Path) -> None:
    # zorkmcp play | head: the next line after head's last fails (EPIPE); the episode stops as on
    # Ctrl-C (its servers stopped, episode_complete logged), exit status 141, and no traceback
    write_project(tmp_path, mcp_config=PER_TURN_THINKING)
    process = _play(tmp_path)
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith(b"turn=2 "):
                break
        children = descendants(process.pid)
        process.stdout.close()
        _out, err = process.communicate(timeout=SAFETY_TIMEOUT)
    finally:
        if process.returncode is None:
            process.kill()
            process.wait()
    assert (process.returncode, err.decode()) == (141, "")
    assert any("zorkmcp.game.server" in cmd for _, cmd in children.values())
    assert [pid for pid, (start, _) in children.items() if is_running(pid, start)] == []
    events = read_events(tmp_path / "logs" / "zorkmcp_events.jsonl")
    assert events_of(events, "episode_complete")[0]["stopped"] == "interrupted"


def test_sigterm_with_sigint_ignored_takes_the_ctrl_c_path(tmp_path: Path) -> None:
    # A job in the background of a non-interactive shell ignores SIGINT: SIGTERM there takes the
    # Ctrl-C path all the same (the summary, exit status 143), and its servers end before it.
    write_project(tmp_path, mcp_config=PER_TURN_THINKING)
    process = _play(tmp_path, preexec=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith(b"turn=1 "):
                break
        children = descendants(process.pid)
        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=SAFETY_TIMEOUT)
    finally:
        if process.returncode is None:
            process.kill()
            process.wait()
    assert process.returncode == 143
    assert b"Episode summary" in out
    assert any("zorkmcp.game.server" in cmd for _, cmd in children.values())
    for pid, (start, _) in children.items():  # its servers end all the same, before it
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        try:
            if is_running(pid, start):
                assert select.select([pidfd], [], [], SAFETY_TIMEOUT)[0], f"process {pid} outlived zorkmcp"
        finally:
            os.close(pidfd)


def test_ctrl_c_inside_a_tool_call_prints_the_summary_and_leaves_no_process(tmp_path: Path) -> None:
    fifo = tmp_path / "tool-called.fifo"
    os.mkfifo(fifo)
    config = {"mcpServers": {"thinking": {"command": sys.executable, "args": [str(HANG_SERVER), str(fifo)]}}}
    write_project(tmp_path, mcp_config=config)
    # Opened read-write, the pipe always has a writer: select() wakes only for data.
    reader = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
    process = _play(tmp_path)
    try:
        assert process.stdout is not None
        stdout_fd = process.stdout.fileno()
        seen = b""
        called = b""
        with selectors.DefaultSelector() as selector:
            selector.register(reader, selectors.EVENT_READ)
            selector.register(stdout_fd, selectors.EVENT_READ)
            while not called.endswith(b"\n"):  # wakes on output or on the tool's line, nothing else
                ready = selector.select(timeout=SAFETY_TIMEOUT)
                assert ready, "neither output nor a tool call"
                for key, _ in ready:
                    if key.fd == reader:
                        called += os.read(reader, 4096)
                    else:
                        chunk = os.read(stdout_fd, 65536)
                        if not chunk:
                            pytest.fail(
                                f"zorkmcp play ended: {seen.decode()} {process.communicate()[1].decode()}"
                            )
                        seen += chunk
        hang_pid = int(called.split()[1])
        children = descendants(process.pid)
        assert hang_pid in children
        code, out, err = _interrupt_and_collect(process, seen)
    finally:
        os.close(reader)
        if process.returncode is None:
            process.kill()
            process.wait()
    assert code == 130, err
    assert [pid for pid, (start, _) in children.items() if is_running(pid, start)] == []
    assert "Episode summary" in out
    assert "interrupted (Ctrl-C)" in out
    assert re.search(r"turns\s+│ 0\b", out)
    assert "Traceback" not in err
    events = read_events(tmp_path / "logs" / "zorkmcp_events.jsonl")
    assert [e["tool_name"] for e in events_of(events, "mcp_tool_call")] == ["thinking.think"]
    assert events_of(events, "episode_complete")[0]["stopped"] == "interrupted"


def test_a_terminal_without_unicode_gets_escapes_not_a_traceback(tmp_path: Path) -> None:
    """``PYTHONIOENCODING=ascii``: the dashes, ellipses and ± of the output come out as escapes."""
    env = offline_env(PYTHONIOENCODING="ascii")
    play = subprocess.run(
        [sys.executable, "-m", "zorkmcp.cli", "play", "--game", str(zork1_path()), "--turns", "2",
         "--no-mcp"],
        cwd=tmp_path, env=env, capture_output=True, timeout=SAFETY_TIMEOUT, check=False,
    )  # fmt: skip
    evaluate = subprocess.run(
        [sys.executable, "-m", "zorkmcp.cli", "eval", "--game", str(zork1_path()), "--episodes", "1",
         "--turns", "2", "--no-mcp", "--out", "run"],
        cwd=tmp_path, env=env, capture_output=True, timeout=SAFETY_TIMEOUT, check=False,
    )  # fmt: skip
    for result in (play, evaluate):
        assert result.returncode == 0, result.stderr.decode("ascii", "replace")
        assert b"Traceback" not in result.stderr
        assert max(result.stdout + result.stderr) < 128  # nothing but ASCII reached the terminal
    assert b"Logs: logs/zorkmcp_events.jsonl (events), logs/episode.log (episode)" in play.stdout
    assert b"score \\xb1 se" in evaluate.stdout


def test_the_sdks_own_log_records_do_not_reach_the_terminal() -> None:
    """``Error in sse_reader`` and its traceback (a remote server gone) were printed by Python's
    last-resort handler; zorkmcp's own warnings still are."""
    script = textwrap.dedent("""\
        import logging
        from zorkmcp.cli import main
        try:
            main(["--version"])
        except SystemExit:
            pass
        logging.getLogger("mcp.client.sse").error("Error in sse_reader", exc_info=ValueError("peer closed"))
        logging.getLogger("mcp.client.streamable_http").warning("Session termination failed: 400")
        logging.getLogger("zorkmcp.eval").warning("a warning of zorkmcp's own")
        """)
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=SAFETY_TIMEOUT, check=False
    )
    assert (result.returncode, result.stderr) == (0, "a warning of zorkmcp's own\n")


def test_eval_with_a_home_that_cannot_hold_matplotlib_s_cache_says_nothing_of_it(tmp_path: Path) -> None:
    # A read-only home on a cluster node: matplotlib warned on stderr that it made a temporary cache
    # folder and asked for MPLCONFIGDIR; the report is drawn all the same.
    env = offline_env(HOME=os.devnull)
    for name in ("MPLCONFIGDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME"):
        env.pop(name, None)
    done = subprocess.run(
        [sys.executable, "-m", "zorkmcp.cli", "eval", "--game", str(zork1_path()), "--episodes", "1",
         "--turns", "1", "--no-mcp", "--quiet", "--out", str(tmp_path / "run")],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "matplotlib" not in done.stderr.lower()
    assert (tmp_path / "run" / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
