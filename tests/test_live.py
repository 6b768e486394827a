"""The live view of ``zorkmcp play``: rendered on a recording console, and seen in a real terminal (tmux)."""

from __future__ import annotations

import io
import json
import os
import re
import select
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
from llm_server import completion
from play_support import HANG_SERVER, INPROCESS_THINKING, run_in_tmux, write_project, zork1_path
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from zorkmcp._console import TerminalConsole
from zorkmcp._live import LiveView, Progress, sparkline
from zorkmcp.cli import _TerminalNotices, build_parser, progress_line
from zorkmcp.engine import ToolCallRecord
from zorkmcp.llm import LLMResponse, ModelUse
from zorkmcp.orchestrator import TurnRecord

if TYPE_CHECKING:
    from collections.abc import Callable

ZORKMCP = Path(sys.executable).with_name("zorkmcp")

LIVING_ROOM = (
    "Living Room\nYou are in the living room. There is a doorway to the east, a wooden door with strange "
    "gothic lettering to the west, which appears to be nailed shut, a trophy case, and a large oriental "
    "rug in the center of the room. Above the trophy case hangs an elvish sword of great antiquity. A "
    "battery-powered brass lantern is on the trophy case."
)


def _call(turn: int) -> ToolCallRecord:
    return ToolCallRecord(
        id=f"call_{turn}",
        name="thinking.think",
        server="thinking",
        arguments={"thought": f"Turn {turn}: the kitchen window is open, the house is next."},
        iteration=1,
        duration=0.25,
        outcome="ok",
        result_preview='{"thoughtNumber": 1, "totalThoughts": 1}',
    )


def _record(turn: int, score: int, *, calls: tuple[ToolCallRecord, ...] = ()) -> TurnRecord:
    return TurnRecord(
        turn=turn,
        action="W",
        reasoning="Following the scripted walkthrough: step 12 of 396 is 'W'. " * 3,
        new_objective=None,
        observation=LIVING_ROOM,
        location="Living Room",
        score=score,
        max_score=350,
        moves=turn,
        tool_calls=len(calls),
        tools_used=tuple(sorted({c.name for c in calls})),
        game_over=False,
        victory=False,
        seconds=0.1,
        calls=calls,
    )


def _render(width: int, height: int) -> list[str]:
    view = LiveView(turn_limit=500)
    for turn, score in enumerate([0, 0, 5, 5, 10, 10, 15, 15, 25, 35], start=28):
        view.add(_record(turn, score, calls=(_call(turn), _call(turn)) if turn != 37 else ()))
    console = Console(record=True, width=width, height=height, force_terminal=True, color_system=None)
    console.print(view)
    return console.export_text().splitlines()


def test_view_fits_80x24_and_shows_the_turn() -> None:
    lines = _render(80, 24)
    text = "\n".join(lines)
    assert len(lines) <= 23
    assert max(len(line) for line in lines) <= 80
    assert lines[0].startswith("turn 37/500")
    assert "score 35/350" in lines[0]
    assert "moves 37" in lines[0]
    assert "Living Room" in lines[1]
    assert "> W" in lines[1]
    assert "▁▁▂▂▃▃▄▄▆█" in lines[2]
    assert "You are in the living room." in text
    assert "Following the scripted walkthrough" in text
    assert "t36  ✓ thinking.think" in text
    assert "0.25s ok" in text
    assert "tool calls — turn 37: 0" in text


def test_the_view_shows_what_the_model_has_answered_so_far_beside_where_the_player_is() -> None:
    use = ModelUse()
    view = LiveView(turn_limit=500, model_use=use)
    view.add(_record(1, 0))
    console = Console(record=True, width=80, height=24, force_terminal=True, color_system=None)
    console.print(view)
    assert console.export_text().splitlines()[1].endswith("requests 0 · tokens 0 / 0")
    use.count(LLMResponse(content="", model="m", usage={"prompt_tokens": 24510, "completion_tokens": 210}))
    use.count(LLMResponse(content="", model="m", usage={"prompt_tokens": 1200, "completion_tokens": 9}))
    console.print(view)  # the next refresh: the same object, counted since
    line = console.export_text().splitlines()[1]
    assert line.startswith("at Living Room  > W")
    assert line.endswith("requests 2 · tokens 25,710 / 219")
    assert len(line) == 80


def test_a_narrow_terminal_keeps_where_the_player_is_and_leaves_the_model_use_out() -> None:
    use = ModelUse()
    use.count(
        LLMResponse(content="", model="m", usage={"prompt_tokens": 1234567, "completion_tokens": 89012})
    )
    view = LiveView(turn_limit=500, model_use=use)
    view.add(_record(3, 5))
    console = Console(record=True, width=59, height=24, force_terminal=True, color_system=None)
    console.print(view)
    line = "at Living Room  > W  requests 1 · tokens 1,234,567 / 89,012"
    assert console.export_text().splitlines()[1] == line  # 59 columns: both fit
    console = Console(record=True, width=58, height=24, force_terminal=True, color_system=None)
    console.print(view)
    assert console.export_text().splitlines()[1].rstrip() == "at Living Room  > W"


def test_tokens_the_endpoint_does_not_report_show_as_unknown() -> None:
    use = ModelUse()
    use.count(LLMResponse(content="", model="m"))  # no usage in the answer
    view = LiveView(turn_limit=500, model_use=use)
    view.add(_record(1, 0))
    console = Console(record=True, width=80, height=24, force_terminal=True, color_system=None)
    console.print(view)
    assert console.export_text().splitlines()[1].endswith("requests 1 · tokens – / –")


def test_bigger_terminal_shows_more() -> None:
    small = _render(80, 24)
    big = _render(140, 45)
    assert len(big) > len(small)
    assert max(len(line) for line in big) <= 140
    assert sum("thinking.think" in line for line in big) > sum("thinking.think" in line for line in small)
    assert "battery-powered brass lantern is on the trophy case." in "\n".join(big)


def test_sparkline_scales_to_the_highest_score_shown() -> None:
    assert sparkline([0, 10, 20, 35], width=10) == "▁▃▅█"
    assert sparkline([0, 10, 20, 35], width=2) == "▅█"
    assert sparkline([0, 0], width=5) == "▁▁"
    assert sparkline([0, 175], width=5, maximum=350) == "▁▅"


def test_not_a_terminal_prints_progress_lines(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    with out.open("w", encoding="utf-8") as file:
        progress = Progress(Console(file=file, width=200), quiet=False)
        progress.start(12)
        progress.turn(_record(3, 5, calls=(_call(3),)))
        progress.stop()
    expected = 'turn=3 score=5/350 moves=3 tool_calls=1 location="Living Room" action="W"\n'
    assert out.read_text(encoding="utf-8") == expected
    assert progress_line(_record(3, 5, calls=(_call(3),))) + "\n" == expected


def test_quiet_prints_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    with out.open("w", encoding="utf-8") as file:
        progress = Progress(Console(file=file, force_terminal=True), quiet=True)
        progress.start(12)
        progress.turn(_record(1, 0))
        progress.stop()
    assert out.read_text(encoding="utf-8") == ""


# -- in a real terminal -------------------------------------------------------------------------------


def story_file() -> Path:
    """Zork I, the copy that ships with the package."""
    return zork1_path()


def _play_in_tmux(tmp_path: Path, width: int, height: int) -> list[str]:
    """``zorkmcp play --turns 12`` in a ``width``×``height`` tmux pane; the screen and its scrollback."""
    game = story_file()
    pyproject = write_project(
        tmp_path,
        mcp_config=INPROCESS_THINKING,
        files={"json_log_file": str(tmp_path / "events.jsonl"), "episode_log_file": str(tmp_path / "ep.log")},
    )
    return run_in_tmux(
        tmp_path, f"{ZORKMCP} play --turns 12 --game {game} --pyproject {pyproject}", width, height
    )


def _frame(lines: list[str]) -> list[str]:
    """The live view's last frame: from the ``turn 12/12`` line to the episode summary."""
    start = next(i for i, line in enumerate(lines) if line.startswith("turn 12/12"))
    end = next(i for i, line in enumerate(lines) if "Episode summary" in line)
    return lines[start:end]


def test_live_view_in_an_80x24_terminal(tmp_path: Path) -> None:
    lines = _play_in_tmux(tmp_path, 80, 24)
    frame = _frame(lines)
    text = "\n".join(frame)
    assert max(len(line) for line in lines) <= 80
    assert len(frame) <= 23
    assert "score 15/350" in frame[0]
    assert "moves 12" in frame[0]
    assert "at Living Room  > W" in frame[1]
    # 12 turns, 3 of them with a think call: 15 answers, and the tokens the summary table sums too
    tokens = re.search(r"tokens in / out\s*│\s*([\d,]+) / ([\d,]+)", "\n".join(lines))
    assert tokens is not None
    assert frame[1].endswith(f"requests 15 · tokens {tokens[1]} / {tokens[2]}")
    assert "score 0–15 ▁▁▁▃▃▃▃▃████" in frame[2]
    assert "You are in the living room." in text
    assert "step 12 of 396 is 'W'" in text
    assert "t11  ✓ thinking.think" in text
    assert "Turn 11: next step" not in text
    assert "s ok" in text


def test_live_view_in_a_120x40_terminal(tmp_path: Path) -> None:
    lines = _play_in_tmux(tmp_path, 120, 40)
    frame = _frame(lines)
    text = "\n".join(frame)
    assert max(len(line) for line in lines) <= 120
    assert "score 15/350" in frame[0]
    assert "[Score: 15 | Moves: 12]" in text
    assert '{"thought": "Turn 11: next step is' in text  # 80 columns cut the arguments shorter
    assert "t11  ✓ thinking.think" in text
    assert "t6   ✓ thinking.think" in text
    assert "t1   ✓ thinking.think" in text


def test_ctrl_c_leaves_the_last_frame_whole_and_typed_keys_unseen(tmp_path: Path) -> None:
    """The terminal's echo of ``^C`` wrapped the frame's full-width last line, and the final redraw
    then left the frame's first line on the screen twice; typed keys showed inside the frame."""
    fifo = tmp_path / "called.fifo"
    os.mkfifo(fifo)
    hang = {"command": sys.executable, "args": [str(HANG_SERVER), str(fifo), "--answer-first"]}
    pyproject = write_project(
        tmp_path, mcp_config={"mcpServers": {"thinking": hang | {"lifecycle": "per_episode"}}}
    )
    reader = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # always a writer: select() wakes only for data

    def interrupt(send: Callable[..., object]) -> None:
        called = b""
        while not called.endswith(b"\n"):  # turn 6's think call is in flight: turn 5's frame is up
            assert select.select([reader], [], [], 30)[0], "the think tool was never called"
            called += os.read(reader, 4096)
        send("xyzzy")
        send("C-c")

    try:
        lines = run_in_tmux(
            tmp_path,
            f"{ZORKMCP} play --turns 12 --game {story_file()} --pyproject {pyproject}; "
            "stty -a | tr ' ;' '\\n\\n' | grep -x -- '-\\?echo'",
            100,
            30,
            meanwhile=interrupt,
        )
    finally:
        os.close(reader)
    assert [line for line in lines if line.startswith("turn ")] == [
        "turn 5/12 " + "━" * 28 + "╸" + "━" * 40 + " score 5/350  moves 5"
    ]
    assert "interrupted (Ctrl-C)" in "\n".join(lines)
    assert not [line for line in lines if "xyzzy" in line or "^C" in line]
    assert lines[-1] == "echo"  # the terminal's echo is back once the command ends


# -- control characters from outside, dumb terminals -------------------------------------------------

HOSTILE = "\x1b[2J\x1b[H\x1b[31mRED\x1b[0m \x1b]0;pwned\x07 \x1b]52;c;cm0gLXJmIH4=\x07 \x9b2J \x7f"
HOSTILE_SHOWN = r"\x1b[2J\x1b[H\x1b[31mRED\x1b[0m \x1b]0;pwned\x07 \x1b]52;c;cm0gLXJmIH4=\x07 \x9b2J \x7f"
CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _hostile_record() -> TurnRecord:
    call = ToolCallRecord(
        id="call_1",
        name=f"thinking.think{HOSTILE}",
        server="thinking",
        arguments={"thought": HOSTILE},
        iteration=1,
        duration=0.25,
        outcome="ok",
        result_preview=HOSTILE,
    )
    record = _record(1, 0, calls=(call,))
    return attrs.evolve(
        record, reasoning=HOSTILE, observation=HOSTILE, location=HOSTILE, action=f"W{HOSTILE}"
    )


def test_live_view_shows_control_characters_as_escapes() -> None:
    view = LiveView(turn_limit=5)
    view.add(_hostile_record())
    out = io.StringIO()
    Console(file=out, width=400, height=60, force_terminal=True, color_system=None).print(view)
    text = out.getvalue()
    assert not CONTROL.search(text), repr(text)
    for shown in ("\\x1b[2J\\x1b[H\\x1b[31mRED", "\\x1b]0;pwned\\x07", "\\x9b2J", "\\x7f"):
        assert text.count(shown) >= 5, shown  # location, action, game text, reasoning, tool call


def test_progress_lines_show_control_characters_as_escapes() -> None:
    line = progress_line(_hostile_record())
    assert not CONTROL.search(line)
    assert "\\x9b2J" in line  # json.dumps leaves C1 characters as they are


def test_terminal_console_writes_no_control_character_from_its_text() -> None:
    out = io.StringIO()
    console = TerminalConsole(file=out, width=200, force_terminal=True, color_system="truecolor")
    table = Table("what", "value")
    table.add_row("model", HOSTILE)
    console.print(table)  # a string cell: made visible before it is measured
    console.print(Text("\x1b[2J\x9b2J", style="red"))  # a ready-made Text: made visible as it is written
    console.print(f"[yellow]warning:[/] {escape(HOSTILE)}", highlight=False)
    text = out.getvalue()
    assert text.count(HOSTILE_SHOWN) == 2
    assert "\\x1b[2J\\x9b2J" in text
    assert not CONTROL.search(re.sub(r"\x1b\[[0-9;]*m", "", text)), repr(text)  # only rich's colours
    assert "\x1b[31m" in text  # rich's own styles still reach the terminal


def test_warnings_on_stderr_show_control_characters_as_escapes() -> None:
    out = io.StringIO()
    notices = _TerminalNotices(TerminalConsole(file=out, width=400, force_terminal=True, color_system=None))
    notices.log("WARNING", f"server said {HOSTILE}")
    assert out.getvalue() == f"warning: server said {HOSTILE_SHOWN}\n"


def test_a_dumb_terminal_gets_progress_lines(tmp_path: Path) -> None:
    out = tmp_path / "out.txt"
    with out.open("w", encoding="utf-8") as file:
        console = Console(file=file, width=200, force_terminal=True, _environ={"TERM": "dumb"})
        progress = Progress(console, quiet=False)
        progress.start(12)
        progress.turn(_record(3, 5))
        progress.stop()
    assert progress.mode == "lines"
    assert out.read_text(encoding="utf-8") == progress_line(_record(3, 5)) + "\n"


def test_a_dumb_terminal_in_tmux_gets_a_line_per_turn(tmp_path: Path) -> None:
    game = story_file()
    pyproject = write_project(
        tmp_path,
        enabled=False,
        files={"json_log_file": str(tmp_path / "events.jsonl"), "episode_log_file": str(tmp_path / "ep.log")},
    )
    command = f"TERM=dumb {ZORKMCP} play --turns 3 --game {game} --pyproject {pyproject}"
    lines = run_in_tmux(tmp_path, command, 100, 30)
    turns = [line for line in lines if line.startswith("turn=")]
    assert [line.split()[0] for line in turns] == ["turn=1", "turn=2", "turn=3"], lines
    assert 'location="North of House"' in turns[0]
    assert not any(line.startswith("turn 3/3") for line in lines)  # no live frame


class _HostileModel(BaseHTTPRequestHandler):
    """A chat-completions endpoint whose every answer's thinking holds escape sequences."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        content = json.dumps({"thinking": f"think {HOSTILE} done", "action": "look", "new_objective": None})
        body = json.dumps(completion({"role": "assistant", "content": content})).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        del format, args


def test_live_view_in_tmux_shows_a_models_escape_codes_as_text(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _HostileModel)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        pyproject = write_project(
            tmp_path,
            enabled=False,
            files={"json_log_file": str(tmp_path / "ev.jsonl"), "episode_log_file": str(tmp_path / "ep.log")},
        )
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        command = (
            f"{ZORKMCP} play --turns 3 --game {story_file()} --pyproject {pyproject} "
            f"--base-url {url} --model hostile"
        )
        lines = run_in_tmux(tmp_path, command, 200, 40)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    text = "\n".join(lines)
    assert any(line.startswith("turn 3/3") for line in lines), text
    assert "think \\x1b[2J\\x1b[H\\x1b[31mRED\\x1b[0m \\x1b]0;pwned\\x07" in text
    assert "Episode summary" in text
    assert any("hostile" in line for line in lines if "model" in line)


def test_play_help_names_the_dumb_terminal_and_the_escapes() -> None:
    play = build_parser()._subparsers._group_actions[0].choices["play"]  # type: ignore[union-attr]
    text = play.format_help()
    assert not CONTROL.search(text)
    assert "When stdout is not a terminal, or is a dumb one (TERM=dumb)" in " ".join(text.split())
    assert "shown as escapes (\\x1b)" in text
