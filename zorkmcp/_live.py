"""What ``zorkmcp play`` shows while it plays: a live view on a terminal, one line per turn otherwise
(and on a dumb terminal, ``TERM=dumb``, which cannot redraw).

The live view fits the terminal it is drawn on: every section is cut to a line budget computed from
the console's size at each refresh, so an 80×24 terminal shows the essentials and a bigger one shows
more game text, more reasoning, more tool calls and a longer score sparkline.

Every text from outside (the game's, the model's reasoning and action, a tool's name, arguments and
result) has its control characters written as escapes (``\\x1b``, :mod:`zorkmcp._controls`) before
it is measured, so a model cannot clear the screen or set the window title through the view, and the
lines keep their widths.
"""

from __future__ import annotations

import json
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

from rich.console import Console, ConsoleOptions, Group, RenderResult
from rich.live import Live
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from ._console import keys_not_echoed
from ._controls import visible_controls

if TYPE_CHECKING:
    from collections.abc import Sequence

    from .engine import ToolCallRecord
    from .llm import ModelUse
    from .orchestrator import TurnRecord

__all__ = ["LiveView", "Progress", "progress_line", "sparkline"]

BLOCKS = "▁▂▃▄▅▆▇█"
_OUTCOME_MARK = {
    "ok": ("✓", "green"),
    "error": ("✗", "red"),
    "invalid_arguments": ("✗", "red"),
    "timeout": ("⏱", "yellow"),
    "skipped": ("–", "dim"),
}


def _quote(text: str) -> str:
    return json.dumps(" ".join(visible_controls(text).split()), ensure_ascii=False)


def progress_line(record: TurnRecord) -> str:
    """One machine-readable line per turn (``key=value``; strings JSON-quoted), printed when stdout is
    not a terminal.

    Args:
        record: the turn just played.
    """
    maximum = f"/{record.max_score}" if record.max_score is not None else ""
    line = (
        f"turn={record.turn} score={record.score}{maximum} moves={record.moves} "
        f"tool_calls={record.tool_calls} location={_quote(record.location)} action={_quote(record.action)}"
    )
    if record.game_over:
        line += f" game_over=true victory={'true' if record.victory else 'false'}"
    return line


def sparkline(scores: Sequence[int], *, width: int, maximum: int | None = None) -> str:
    """The last ``width`` scores as unicode blocks (``▁`` is 0, ``█`` is ``maximum``).

    Args:
        scores: the score after each turn, oldest first.
        width: at most this many characters (the newest scores are kept).
        maximum: the top of the scale; the highest score shown when ``None`` or lower.
    """
    shown = list(scores)[-width:] if width > 0 else []
    top = max([maximum or 0, *shown, 1])
    return "".join(BLOCKS[max(0, min(len(BLOCKS) - 1, round(s / top * (len(BLOCKS) - 1))))] for s in shown)


def _short(value: Any, width: int) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(visible_controls(text).split())
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def _call_line(turn: int, call: ToolCallRecord, width: int, *, current: bool) -> Text:
    mark, style = _OUTCOME_MARK.get(call.outcome, ("?", "dim"))
    room = max(8, (width - len(call.name) - 24) // 2)
    line = Text(no_wrap=True, overflow="ellipsis", style="" if current else "dim")
    line.append(f"t{turn:<3} ")
    line.append(f"{mark} ", style=style)
    line.append(visible_controls(call.name), style="bold cyan")
    line.append(f" {_short(call.arguments, room)}")
    if call.result_preview:
        line.append(f" → {_short(call.result_preview, room)}")
    line.append(f"  {call.duration:.2f}s {call.outcome}", style=style)
    line.truncate(width, overflow="ellipsis")
    return line


def _clip(console: Console, text: str, width: int, lines: int, style: str = "") -> Text:
    """``text`` wrapped to ``width`` and cut to ``lines`` lines (``…`` marks a cut)."""
    wrapped = list(Text(_flat(text) or "-", style=style).wrap(console, max(1, width)))
    if len(wrapped) > lines:
        wrapped = wrapped[:lines]
        last = wrapped[-1]
        last.truncate(max(1, width - 1))
        last.append("…")
    return Text("\n").join(wrapped)


def _flat(text: str) -> str:
    """``text`` on one line, its control characters visible."""
    return " ".join(visible_controls(text).split())


def _model_use(use: ModelUse) -> str:
    """``requests 12 · tokens 24,510 / 210``: the model requests answered so far and their tokens."""
    tokens = (use.tokens(key) for key in ("prompt_tokens", "completion_tokens"))
    return f"requests {use.requests} · tokens " + " / ".join("–" if n is None else f"{n:,}" for n in tokens)


def _panel(body: Text, title: str) -> Panel:
    return Panel(body, title=title, title_align="left")


class LiveView:
    """The live view's renderable: the latest turn and the score history, laid out to the console size.

    Args:
        turn_limit: the episode's turn limit (``turn 37/500``).
        model_use: what the model has answered so far, shown beside where the player is when both
            fit on the line (``requests 12 · tokens 24,510 / 210``; ``–`` for tokens the endpoint
            does not report).
    """

    def __init__(self, turn_limit: int, model_use: ModelUse | None = None) -> None:
        self.turn_limit = turn_limit
        self.model_use = model_use
        self.records: list[TurnRecord] = []

    def add(self, record: TurnRecord) -> None:
        """Take the turn just played."""
        self.records.append(record)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        height = options.height or options.size.height
        if not self.records:
            yield Text("waiting for the first turn…", style="dim")
            return
        yield self._render(console, width, max(12, height - 1))

    def _header(self, width: int) -> Group:
        last = self.records[-1]
        maximum = last.max_score if last.max_score is not None else None
        grid = Table.grid(padding=(0, 1), expand=True)
        grid.add_column(no_wrap=True)
        grid.add_column(ratio=1)
        grid.add_column(no_wrap=True, justify="right")
        done = f"turn {last.turn}/{self.turn_limit}"
        score = f"score {last.score}" + (f"/{maximum}" if maximum is not None else "")
        grid.add_row(
            Text(done, style="bold"),
            ProgressBar(total=max(1, self.turn_limit), completed=last.turn),
            Text(f"{score}  moves {last.moves}", style="bold"),
        )
        state = " — victory" if last.victory else " — game over" if last.game_over else ""
        where = Text(no_wrap=True, overflow="ellipsis")
        where.append("at ", style="dim")
        where.append(_flat(last.location) or "?", style="bold yellow")
        where.append("  > ", style="dim")
        where.append(_flat(last.action), style="bold")
        where.append(state, style="bold red")
        placed: Text | Table = where
        use = _model_use(self.model_use) if self.model_use is not None else ""
        if use and where.cell_len + 2 + len(use) <= width:  # where the player is comes first
            placed = Table.grid(padding=(0, 2), expand=True)
            placed.add_column(ratio=1, no_wrap=True)
            placed.add_column(no_wrap=True, justify="right")
            placed.add_row(where, Text(use, style="dim"))
        scores = [r.score for r in self.records]
        label = f"score 0–{max(scores)} "
        spark = sparkline(scores, width=width - len(label) - 2)
        line = Text(label, style="dim").append(spark, style="green")
        return Group(grid, placed, line)

    def _render(self, console: Console, width: int, height: int) -> Group:
        last = self.records[-1]
        inner = width - 4
        body = height - 3 - 6  # the header, then three panels with two border lines each
        calls = self._recent_calls()
        game_need = len(Text(_flat(last.observation)).wrap(console, inner))
        reason_need = len(Text(_flat(last.reasoning)).wrap(console, inner))
        call_lines = max(1, min(len(calls), body // 3))
        reason_lines = max(1, min(reason_need, max(2, body // 5)))
        game_lines = max(1, min(game_need, body - call_lines - reason_lines))
        spare = body - call_lines - reason_lines - game_lines
        extra = max(0, min(spare, len(calls) - call_lines))
        call_lines += extra
        reason_lines += max(0, min(spare - extra, reason_need - reason_lines))
        shown = [
            _call_line(turn, call, inner, current=turn == last.turn) for turn, call in calls[:call_lines]
        ] or [Text("no tool calls yet", style="dim")]
        title = f"tool calls — turn {last.turn}: {last.tool_calls}"
        return Group(
            self._header(width),
            _panel(_clip(console, last.observation, inner, game_lines), "game"),
            _panel(_clip(console, last.reasoning, inner, reason_lines, "italic"), "reasoning"),
            _panel(Text("\n").join(shown), title),
        )

    def _recent_calls(self) -> list[tuple[int, ToolCallRecord]]:
        """Tool calls, this turn's first, then earlier turns' (newest first)."""
        found: list[tuple[int, ToolCallRecord]] = []
        for record in reversed(self.records[-50:]):
            found += [(record.turn, call) for call in record.calls]
        return found


class Progress:
    """Per-turn progress: the live view on a terminal, plain lines otherwise, nothing when quiet.

    A dumb terminal (``TERM=dumb`` or ``unknown``) gets the lines: rich's live display does not
    redraw there, and would show nothing until the episode ends.

    The live view's last frame stays on the screen when the episode ends (above the summary).

    Args:
        console: where to draw.
        quiet: show nothing.
    """

    def __init__(self, console: Console, *, quiet: bool) -> None:
        self.console = console
        live = console.is_terminal and not console.is_dumb_terminal
        self.mode = "off" if quiet else "live" if live else "lines"
        self.live: Live | None = None
        self.view: LiveView | None = None
        self._terminal = ExitStack()

    def start(self, turn_limit: int, model_use: ModelUse | None = None) -> None:
        """Start drawing (on a terminal) for an episode of at most ``turn_limit`` turns.

        Args:
            turn_limit: the episode's turn limit.
            model_use: the episode's model use, as it grows (the live view shows it).
        """
        if self.mode == "live":
            self.view = LiveView(turn_limit, model_use)
            self.live = Live(
                self.view, console=self.console, refresh_per_second=4, transient=False, redirect_stdout=False
            )
            self._terminal.enter_context(keys_not_echoed(self.console))
            self.live.start()

    def turn(self, record: TurnRecord) -> None:
        """Show the turn just played."""
        if self.live is not None and self.view is not None:
            self.view.add(record)
            self.live.refresh()
        elif self.mode == "lines":
            self.console.out(progress_line(record), highlight=False)
            self.console.file.flush()

    def stop(self) -> None:
        """Stop drawing; the last frame stays."""
        live, self.live = self.live, None
        if live is not None:
            live.stop()
        self._terminal.close()
