"""The live view as a demanding user's terminal gets it, rendered in process: a 20-column terminal, a
terminal whose encoding is not UTF-8, ``FORCE_COLOR`` with the output in a file, and warnings written
to the terminal a live display draws on (a real pseudo-terminal)."""

from __future__ import annotations

import io
import os
import select
import termios
from typing import TYPE_CHECKING

import attrs
from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from zorkmcp._console import TerminalConsole, keys_not_echoed
from zorkmcp._live import LiveView, Progress
from zorkmcp.engine import ToolCallRecord
from zorkmcp.orchestrator import TurnRecord

if TYPE_CHECKING:
    from pathlib import Path


def _record(turn: int, score: int, **changes: str) -> TurnRecord:
    call = ToolCallRecord(
        id=f"call_{turn}",
        name="thinking.think",
        server="thinking",
        arguments={"thought": f"Turn {turn}: the window"},
        iteration=1,
        duration=0.25,
        outcome="ok",
        result_preview='{"thoughtNumber": 1}',
    )
    record = TurnRecord(
        turn=turn,
        action="Open window",
        reasoning="Following the scripted walkthrough.",
        new_objective=None,
        observation="Behind House\nYou are behind the white house.",
        location="Behind House",
        score=score,
        max_score=350,
        moves=turn,
        tool_calls=1,
        tools_used=("thinking.think",),
        game_over=False,
        victory=False,
        seconds=0.1,
        calls=(call,),
    )
    return attrs.evolve(record, **changes)


def _view(*records: TurnRecord) -> LiveView:
    view = LiveView(turn_limit=500)
    for record in records:
        view.add(record)
    return view


def test_a_20_column_terminal_shows_the_turn_the_score_and_the_action_whole() -> None:
    """The header was one line with a bar between its parts: ``tur… score 35/350  m…`` (the turn and
    the moves cut), and the action cut to ``…`` after the location."""
    console = Console(record=True, width=20, height=30, force_terminal=True, color_system=None)
    console.print(_view(_record(36, 5), _record(37, 35)))
    lines = console.export_text().splitlines()
    assert lines[:6] == [
        "turn 37/500",
        "score 35/350",
        "moves 37",
        "at Behind House",
        "> Open window",
        "score 0–35 ▂█",
    ]
    assert "╭─ tool calls: 1 ──╮" in lines  # "tool calls — turn 37: 1" does not fit the border
    assert max(len(line) for line in lines) <= 20


def test_a_long_action_goes_under_the_location_rather_than_being_cut() -> None:
    action = "put the jewel-encrusted egg in the trophy case"
    console = Console(record=True, width=60, height=30, force_terminal=True, color_system=None)
    console.print(_view(_record(3, 5, location="Living Room", action=action)))
    lines = console.export_text().splitlines()
    assert lines[0].startswith("turn 3/500 ")
    assert lines[0].endswith(" score 5/350  moves 3")
    assert lines[1:3] == ["at Living Room", "> put the jewel-encrusted egg in the trophy case"]


def _ascii_console(width: int) -> tuple[Console, io.BytesIO]:
    """A terminal console whose stream is ASCII (``PYTHONIOENCODING=ascii``: escapes for the rest)."""
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii", errors="backslashreplace", write_through=True)
    return Console(file=stream, width=width, height=24, force_terminal=True, color_system=None), raw


def test_a_terminal_that_cannot_show_unicode_gets_the_view_in_ascii_each_line_within_its_width() -> None:
    """Each ``▁``, ``·``, ``–``, ``✓``, ``→`` and ``…`` was written as a six-character escape after rich
    had measured it as one cell: every line of the frame was wider than the terminal, wrapped, and
    the live view left each frame on the screen below the one before. Outside text the encoding
    lacks is escaped before it is measured, so the panels keep their borders."""
    console, raw = _ascii_console(80)
    record = _record(3, 5, observation="Café “Zork” — 日本 …", location="Café", action="Open window")
    console.print(_view(_record(2, 0), record))
    lines = raw.getvalue().decode("ascii").splitlines()
    assert lines[:6] == [
        "turn 3/500" + " " * 50 + "score 5/350  moves 3",
        "at Caf\\xe9  > Open window",
        "score 0-5 _#",
        "+- game " + "-" * 71 + "+",
        "| Caf\\xe9 \\u201cZork\\u201d \\u2014 \\u65e5\\u672c \\u2026" + " " * 26 + "|",
        "+" + "-" * 78 + "+",
    ]
    assert lines[9:11] == [
        "+- tool calls - turn 3: 1 " + "-" * 53 + "+",
        '| t3   + thinking.think {"thought": "Turn ~ > {"thoughtNumber": ~  0.25s ok    |',
    ]
    assert max(len(line) for line in lines) == 80


def test_a_table_on_a_terminal_that_cannot_show_unicode_keeps_its_columns() -> None:
    """``zorkmcp eval`` with ``PYTHONIOENCODING=ascii``: each ``±`` was measured as one cell and
    written as four (``\\xb1``), and the summary table's borders went out of line."""
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii", errors="backslashreplace", write_through=True)
    console = TerminalConsole(file=stream, width=60, force_terminal=True, color_system=None)
    table = Table("arm", "score ± se", "model")
    table.add_row("mcp", "0.00 ± 0.00", "qwen — 7b")
    console.print(table)
    assert raw.getvalue().decode("ascii").splitlines() == [
        "+---------------------------------------+",
        "| arm | score \\xb1 se  | model          |",
        "|-----+----------------+----------------|",
        "| mcp | 0.00 \\xb1 0.00 | qwen \\u2014 7b |",
        "+---------------------------------------+",
    ]


def test_force_color_with_the_output_in_a_file_gets_a_line_per_turn(tmp_path: Path) -> None:
    """``FORCE_COLOR=1 zorkmcp play > log``: rich takes the file for a terminal, and the live view
    wrote its every frame into it with the cursor moves, four times a second, where the README
    promises one line per turn when stdout is not a terminal."""
    out = tmp_path / "out.txt"
    with out.open("w", encoding="utf-8") as file:
        console = Console(file=file, width=200, _environ={"FORCE_COLOR": "1", "TERM": "xterm-256color"})
        assert console.is_terminal  # rich's reading of FORCE_COLOR: colours
        progress = Progress(console, quiet=False)
        progress.start(12)
        progress.turn(_record(3, 5))
        progress.stop()
    assert progress.mode == "lines"
    expected = 'turn=3 score=5/350 moves=3 tool_calls=1 location="Behind House" action="Open window"\n'
    assert out.read_text(encoding="utf-8") == expected


def test_tty_interactive_0_asks_for_the_lines_on_a_terminal() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, _environ={"TTY_INTERACTIVE": "0"})
    assert Progress(console, quiet=False).mode == "lines"
    assert Progress(Console(file=io.StringIO(), force_terminal=True), quiet=False).mode == "live"


def _pty() -> tuple[int, int]:
    """A pseudo-terminal (master, slave) that writes ``\\n`` as it is (no ``\\r\\n``), for exact bytes."""
    master, slave = os.openpty()
    modes = termios.tcgetattr(slave)
    modes[1] &= ~termios.ONLCR  # the output modes
    termios.tcsetattr(slave, termios.TCSANOW, modes)
    return master, slave


def _read_all(master: int) -> bytes:
    """What the terminal got, up to the display's last write (it shows the cursor again).

    The kernel hands a pseudo-terminal's output to its master side a moment after the write.
    """
    shown = b""
    while not shown.endswith(b"\x1b[?25h"):
        ready = select.select([master], [], [], 10)[0]  # real-time: the kernel's hand-over
        assert ready, shown
        shown += os.read(master, 65536)
    return shown


def test_a_warning_on_the_terminal_of_a_live_display_is_printed_above_it() -> None:
    """A warning on stderr, the same terminal as the live view's stdout, was written where the cursor
    was, at the end of the display's last line (``frame twowarning: …``): the next frame was drawn
    over it (the warning was lost) and, counted from the wrong line, left the top of the last
    frame on the screen."""
    master, slave = _pty()
    try:
        with open(slave, "w", encoding="utf-8", closefd=False) as out, open(os.dup(slave), "w") as err:
            console = TerminalConsole(file=out, width=40, height=10, force_terminal=True, color_system=None)
            warnings = TerminalConsole(file=err, width=40, force_terminal=True, color_system=None)
            with keys_not_echoed(console):
                live = Live(Text("frame one\nframe two"), console=console, auto_refresh=False)
                live.start(refresh=True)
                warnings.print("warning: a server said \x1b[2J")
                live.stop()
        shown = _read_all(master)
    finally:
        os.close(master)
        os.close(slave)
    up = b"\r\x1b[2K\x1b[1A\x1b[2K"  # to the first line of the two-line frame, each erased
    assert shown == (
        b"\x1b[?25lframe one\nframe two"
        + up
        + b"warning: a server said \\x1b[2J\nframe one\nframe two"
        + up
        + b"frame one\nframe two\n\x1b[?25h"
    )


def test_a_warning_to_another_file_is_written_there_while_a_live_display_draws(tmp_path: Path) -> None:
    master, slave = _pty()
    log = tmp_path / "err.log"
    try:
        with open(slave, "w", encoding="utf-8", closefd=False) as out, log.open("w") as err:
            console = TerminalConsole(file=out, width=40, height=10, force_terminal=True, color_system=None)
            warnings = TerminalConsole(file=err, width=40, color_system=None)
            with keys_not_echoed(console):
                live = Live(Text("frame"), console=console, auto_refresh=False)
                live.start(refresh=True)
                warnings.print("warning: to the log")
                live.stop()
        shown = _read_all(master)
    finally:
        os.close(master)
        os.close(slave)
    assert log.read_text() == "warning: to the log\n"
    assert shown == b"\x1b[?25lframe\r\x1b[2Kframe\n\x1b[?25h"
