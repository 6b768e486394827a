"""``zorkmcp play``'s own lines break between words: in a narrow terminal, in a pipe, and in ``--help``.

In a 40-column terminal the banner was cut mid-word (``model s`` / ``cripted-walkthrough``), and so
were the warnings on stderr (``server is n`` / ``ot running``): both were written as one soft-wrapped
line that the terminal folded. In a pipe, the offline model's notice kept the space that ended each
of its lines (``playing with `` then a newline), and the summary's title was padded with spaces. The
description and epilog of ``play --help``, written out at 100 columns, were cut mid-word by an
80-column terminal. An empty path given to a flag (``--summary-json "$OUT"`` with ``OUT`` unset) was
the flag left out.

Real Zork through Jericho and the offline scripted model; the terminal test runs the zorkmcp of the
tree under test in a real tmux pane (real time, bounded and marked).
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

import pytest
from play_support import run_in_tmux, write_project, zork1_path
from rich.console import Console

import zorkmcp
from zorkmcp._console import TerminalConsole
from zorkmcp.cli import build_parser, main

REPO = Path(zorkmcp.__file__).resolve().parents[1]
ENTRY = "import sys; from zorkmcp._entry import main; sys.exit(main())"
ZORKMCP = f"env PYTHONPATH={REPO} {sys.executable} -c '{ENTRY}'"
"""``zorkmcp`` of the tree under test."""

NOTICE_40 = [
    "No LLM configured (no API key for",
    "https://openrouter.ai/api/v1): playing",
    "with the offline scripted model, which",
    "replays Jericho's walkthrough of the",
    "game — no LLM is called. To play with a",
    "real model, set OPENROUTER_API_KEY, or",
    "pass --base-url for a local server such",
    "as http://127.0.0.1:11434/v1 (Ollama).",
]
BANNER_40 = [
    "zorkmcp play: zork1.z3, seed 12, model",
    "scripted-walkthrough, MCP off (no",
    "tools), up to 1 turn",
]
LOGS_40 = ["Logs: logs/events.jsonl (events),", "logs/episode.log (episode)"]
REPLAY_WARNING_40 = [
    "warning: --model m is not used with",
    "--replay: no model is called, the",
    "cassette answers as the recorded model",
    "scripted-walkthrough",
]


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)


def _project(folder: Path) -> Path:
    logs = {"json_log_file": "logs/events.jsonl", "episode_log_file": "logs/episode.log"}
    return write_project(folder, mcp_config=None, enabled=False, files=logs)


def _terminal(file: io.StringIO) -> Console:
    return TerminalConsole(file=file, force_terminal=True, width=40, color_system=None, emoji=False)


def test_banner_logs_and_warnings_break_between_words_in_40_columns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _project(tmp_path)
    game = ["--game", str(zork1_path()), "--turns", "1", "--quiet"]

    out, err = io.StringIO(), io.StringIO()
    code = main(["play", *game, "--record", "c.jsonl"], console=_terminal(out), err=_terminal(err))
    assert code == 0, err.getvalue()
    lines = out.getvalue().splitlines()
    assert lines[:11] == NOTICE_40 + BANNER_40
    title = lines.index("            Episode summary")
    assert lines[11] == "settings:"  # the path, longer than the width, is folded onto the lines below
    assert "".join(lines[12:title]) == str(tmp_path / "pyproject.toml")
    assert lines[-2:] == LOGS_40
    assert max(len(line) for line in lines) <= 40

    out, err = io.StringIO(), io.StringIO()
    code = main(
        ["play", *game, "--replay", "c.jsonl", "--model", "m"], console=_terminal(out), err=_terminal(err)
    )
    assert code == 0, err.getvalue()
    assert out.getvalue().splitlines()[:4] == ["Replaying c.jsonl: no model is called.", *BANNER_40]
    assert err.getvalue().splitlines() == REPLAY_WARNING_40


def test_piped_output_has_no_line_that_ends_with_a_space(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    _project(tmp_path)
    out, err = io.StringIO(), io.StringIO()
    argv = ["play", "--game", str(zork1_path()), "--turns", "1", "--quiet"]
    code = main(argv, console=Console(file=out, width=80), err=Console(file=err, width=80))
    assert code == 0, err.getvalue()
    lines = out.getvalue().splitlines()
    assert lines[:6] == [
        "No LLM configured (no API key for https://openrouter.ai/api/v1): playing with",
        "the offline scripted model, which replays Jericho's walkthrough of the game — no",
        "LLM is called. To play with a real model, set OPENROUTER_API_KEY, or pass",
        "--base-url for a local server such as http://127.0.0.1:11434/v1 (Ollama).",
        "zorkmcp play: zork1.z3, seed 12, model scripted-walkthrough, MCP off (no tools), up to 1 turn",
        f"settings: {tmp_path / 'pyproject.toml'}",
    ]  # the banner is one line however long, for grep
    assert lines[6] == "                          Episode summary"
    assert [line for line in lines if line != line.rstrip()] == []


@pytest.mark.parametrize("flag", ["--summary-json", "--record", "--replay", "--pyproject"])
def test_an_empty_path_is_refused_before_anything_starts(
    flag: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    _project(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(["play", "--game", str(zork1_path()), "--turns", "1", "--quiet", flag, ""])
    assert exited.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert (
        err.splitlines()[-1]
        == f"zorkmcp play: error: argument {flag}: must be the path of a file, got an empty one ('')"
    )
    assert not (tmp_path / "logs").exists()  # nothing started


def _play_help(monkeypatch: pytest.MonkeyPatch, columns: int) -> list[str]:
    monkeypatch.setenv("COLUMNS", str(columns))
    (subparsers,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    play: argparse.ArgumentParser = subparsers.choices["play"]
    return play.format_help().splitlines()


def test_play_help_fits_an_80_column_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _play_help(monkeypatch, 80)
    assert [line for line in lines if len(line) > 80] == []
    start = lines.index("Play Zork I with the agent. The game runs as an MCP server (per episode); the")
    assert lines[start : start + 5] == [
        "Play Zork I with the agent. The game runs as an MCP server (per episode); the",
        "agent may use the reasoning servers of mcp_config.json and the game's",
        "read-only tools (memory, get_map, inventory). With no API key and no local",
        "base URL configured, the offline scripted model plays Jericho's walkthrough",
        "(and says so).",
    ]
    # the example keeps its line and its indent; the escapes stay together
    assert '  turn=3 score=0/350 moves=3 tool_calls=0 location="North of House" action="n"' in lines
    assert any("shown as escapes (\\x1b)" in line for line in lines)


def test_play_help_in_40_columns_breaks_no_flag_at_its_hyphen(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _play_help(monkeypatch, 40)
    assert [line for line in lines if line.endswith("-")] == []
    start = lines.index("Play Zork I with the agent. The game")
    assert lines[start : start + 9] == [
        "Play Zork I with the agent. The game",
        "runs as an MCP server (per episode);",
        "the agent may use the reasoning",
        "servers of mcp_config.json and the",
        "game's read-only tools (memory,",
        "get_map, inventory). With no API key",
        "and no local base URL configured, the",
        "offline scripted model plays Jericho's",
        "walkthrough (and says so).",
    ]


def test_a_40_column_terminal_shows_the_banner_and_a_warning_word_by_word(tmp_path: Path) -> None:
    _project(tmp_path)
    game = f"--game {zork1_path()} --turns 1 --quiet"
    command = (
        f"{ZORKMCP} play {game} --record c.jsonl; {ZORKMCP} play {game} --replay c.jsonl --model m; "
        'echo "exit=$?"'
    )
    lines = run_in_tmux(tmp_path, command, 40, 100)  # real-time: a real terminal
    assert lines[:11] == NOTICE_40 + BANNER_40, lines
    replay = lines.index("Replaying c.jsonl: no model is called.")
    # the warning is said as the replay starts, before its banner
    assert lines[replay - 6 : replay + 4] == [*LOGS_40, *REPLAY_WARNING_40, lines[replay], *BANNER_40], lines
    assert lines[-3:] == [*LOGS_40, "exit=0"], lines


def test_a_turn_limit_past_the_largest_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # it was the orchestrator's ValueError, a traceback and exit 1, once the settings were read
    monkeypatch.chdir(tmp_path)
    _project(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(["play", "--game", str(zork1_path()), "--quiet", "--turns", "1000001"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "zorkmcp play: error: argument --turns: must be at most 1000000, as max_turns_per_episode, "
        "got '1000001'"
    )
    assert not (tmp_path / "logs").exists()
