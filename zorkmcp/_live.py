"""What ``zorkmcp play`` shows while it plays: a live view on a terminal, one line per turn otherwise
(and on a dumb terminal, ``TERM=dumb``, which cannot redraw).

The live view fits the terminal it is drawn on: every section is cut to a line budget computed from
the console's size at each refresh, so an 80×24 terminal shows the essentials and a bigger one shows
more game text, more reasoning, more tool calls and a longer score sparkline.

Every text from outside (the game's, the model's reasoning and action, a tool's name, arguments and
result) has its control characters written as escapes (``\\x1b``, :mod:`zorkmcp._controls`) before
it is measured, so a model cannot clear the screen or set the window title through the view, and the
lines keep their widths.

In a narrow terminal the header takes more lines rather than cutting its parts (``tur… score
35/350  m…`` in 20 columns): the bar goes when it has no room, the turn, the score and the moves go
on lines of their own as they need, and the action under the location.

On a terminal whose encoding is not UTF-8 (``PYTHONIOENCODING=ascii``, a Latin-1 locale) the view is
drawn in ASCII, each symbol as wide as it was, and a character of outside text the encoding lacks
is written as its escape (``\\u2026``) before it is measured: written as an escape after rich had
measured it as one cell, it widened its line past the terminal, the line wrapped, and every frame
was left on the screen under the one before.

The live display (:class:`TerminalLive`) draws where the terminal has it: not at all while the
command runs in the background (``bg``: it drew over the shell's prompt), afresh below what the
shell printed once the command is back from Ctrl-Z (``fg``: it drew over the shell's lines from
where the last frame had been), and, after the terminal was made narrower, from where the
terminal's reflow of the last frame put its first line (it left the top of that frame above the
new one). The terminal's echo and cursor meanwhile: :func:`zorkmcp._console.keys_not_echoed`.
"""

from __future__ import annotations

import codecs
import json
import sys
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, Final

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.control import Control
from rich.live import Live
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.segment import Segment, Segments
from rich.table import Table
from rich.text import Text

from ._console import encodable, in_background, keys_not_echoed, same_terminal, suspensions, terminal_fd
from ._controls import visible_controls

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    from rich.console import ConsoleRenderable

    from .engine import ToolCallRecord
    from .llm import ModelUse
    from .orchestrator import TurnRecord

__all__ = ["LiveView", "Progress", "TerminalLive", "progress_line", "redraws", "sparkline"]

BLOCKS = "▁▂▃▄▅▆▇█"
_OUTCOME_MARK = {
    "ok": ("✓", "green"),
    "error": ("✗", "red"),
    "invalid_arguments": ("✗", "red"),
    "timeout": ("⏱", "yellow"),
    "skipped": ("–", "dim"),
}
_ASCII: Final = str.maketrans(
    {"…": "~", "·": "-", "–": "-", "—": "-", "→": ">", "✓": "+", "✗": "x", "⏱": "!"}
    | dict(zip(BLOCKS, "_.:-=+*#", strict=True))
)
"""The view's own symbols in ASCII, each as wide as it was (a terminal whose encoding is not UTF-8)."""
_BAR_MIN: Final = 5
"""The narrowest progress bar drawn beside the turn and the score: below it, no bar."""


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


def _known(encoding: str) -> str:
    """``encoding``, or ASCII when Python does not know it."""
    try:
        codecs.lookup(encoding)
    except LookupError:
        return "ascii"
    return encoding


def _flat(text: str, encoding: str = "utf-8") -> str:
    """``text`` on one line, its control characters visible (and what ``encoding`` lacks escaped)."""
    return " ".join(encodable(visible_controls(text), encoding).split())


def _short(value: Any, width: int, encoding: str = "utf-8") -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = _flat(text, encoding)
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def _call_line(turn: int, call: ToolCallRecord, width: int, encoding: str, *, current: bool) -> Text:
    mark, style = _OUTCOME_MARK.get(call.outcome, ("?", "dim"))
    name = _flat(call.name, encoding)
    room = max(8, (width - len(name) - 24) // 2)
    line = Text(no_wrap=True, overflow="ellipsis", style="" if current else "dim")
    line.append(f"t{turn:<3} ")
    line.append(f"{mark} ", style=style)
    line.append(name, style="bold cyan")
    line.append(f" {_short(call.arguments, room, encoding)}")
    if call.result_preview:
        line.append(f" → {_short(call.result_preview, room, encoding)}")
    line.append(f"  {call.duration:.2f}s {call.outcome}", style=style)
    return _cut(line, width)


def _cut(line: Text, width: int) -> Text:
    """``line`` cut to ``width`` cells (``…`` marks a cut): a line of the tool calls' panel takes one
    line, as its budget counted (``no tool calls yet`` took two in 20 columns, and the frame one
    line more than the terminal had for it)."""
    line.truncate(width, overflow="ellipsis")
    return line


def _clip(console: Console, text: str, width: int, lines: int, style: str = "") -> Text:
    """``text`` (already flat) wrapped to ``width`` and cut to ``lines`` lines (``…`` marks a cut)."""
    wrapped = list(Text(text or "-", style=style).wrap(console, max(1, width)))
    if len(wrapped) > lines:
        wrapped = wrapped[:lines]
        last = wrapped[-1]
        last.truncate(max(1, width - 1))
        last.append("…")
    return Text("\n").join(wrapped)


def _model_use(use: ModelUse) -> str:
    """``requests 12 · tokens 24,510 / 210``: the model requests answered so far and their tokens."""
    tokens = (use.tokens(key) for key in ("prompt_tokens", "completion_tokens"))
    return f"requests {use.requests} · tokens " + " / ".join("–" if n is None else f"{n:,}" for n in tokens)


def _panel(body: Text, title: str) -> Panel:
    return Panel(body, title=title, title_align="left")


def _packed(parts: Sequence[str], width: int) -> list[str]:
    """``parts`` on as few lines of ``width`` as they fit on, two spaces apart, none split."""
    lines: list[str] = []
    for part in parts:
        if lines and cell_len(lines[-1]) + 2 + cell_len(part) <= width:
            lines[-1] += "  " + part
        else:
            lines.append(part)
    return lines


def _in_ascii(line: list[Segment], encoding: str) -> Iterator[Segment]:
    """A rendered line for a terminal whose encoding is not UTF-8: the view's symbols (and rich's
    ``…``) in ASCII, anything else the encoding lacks as ``?``, each as wide as it was."""
    for segment in line:
        if segment.control:
            yield segment
            continue
        text = segment.text.translate(_ASCII)
        try:
            text.encode(encoding)
        except UnicodeEncodeError:
            text = "".join(c if _has(c, encoding) else "?" * cell_len(c) for c in text)
        yield Segment(text, segment.style)


def _has(char: str, encoding: str) -> bool:
    try:
        char.encode(encoding)
    except UnicodeEncodeError:
        return False
    return True


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
        self.drawn: tuple[int, list[int]] | None = None
        """The width the last frame was laid out for, and the cells of each of its lines."""

    def add(self, record: TurnRecord) -> None:
        """Take the turn just played."""
        self.records.append(record)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        height = options.height or options.size.height
        encoding = _known(options.encoding)
        frame: RenderableType = (
            self._render(console, width, max(12, height - 1), encoding)
            if self.records
            else Text("waiting for the first turn…", style="dim")
        )
        lines = console.render_lines(frame, options, pad=False)
        self.drawn = (width, [Segment.get_line_length(line) for line in lines])
        for line in lines:
            yield from _in_ascii(line, encoding) if options.ascii_only else line
            yield Segment.line()

    def _header(self, width: int, encoding: str) -> list[RenderableType]:
        """The turn, the score and the moves (beside a bar when it fits), where the player is and what
        was played, and the score's sparkline: in a narrow terminal on more lines, no part cut."""
        last = self.records[-1]
        done = f"turn {last.turn}/{self.turn_limit}"
        score = f"score {last.score}" + (f"/{last.max_score}" if last.max_score is not None else "")
        moves = f"moves {last.moves}"
        header: list[RenderableType]
        if len(done) + len(score) + len(moves) + 4 + _BAR_MIN <= width:
            grid = Table.grid(padding=(0, 1), expand=True)
            grid.add_column(no_wrap=True)
            grid.add_column(ratio=1)
            grid.add_column(no_wrap=True, justify="right")
            grid.add_row(
                Text(done, style="bold"),
                ProgressBar(total=max(1, self.turn_limit), completed=last.turn),
                Text(f"{score}  {moves}", style="bold"),
            )
            header = [grid]
        else:  # no room for a bar: the figures whole, on as many lines as they need
            header = [
                Text(line, style="bold", no_wrap=True, overflow="ellipsis")
                for line in _packed([done, score, moves], width)
            ]
        state = " — victory" if last.victory else " — game over" if last.game_over else ""
        at = Text(no_wrap=True, overflow="ellipsis")
        at.append("at ", style="dim")
        at.append(_flat(last.location, encoding) or "?", style="bold yellow")
        played = Text(no_wrap=True, overflow="ellipsis")
        played.append("> ", style="dim")
        played.append(_flat(last.action, encoding), style="bold")
        played.append(state, style="bold red")
        where = Text(no_wrap=True, overflow="ellipsis").append_text(at).append("  ").append_text(played)
        use = _model_use(self.model_use) if self.model_use is not None else ""
        if use and where.cell_len + 2 + len(use) <= width:  # where the player is comes first
            placed = Table.grid(padding=(0, 2), expand=True)
            placed.add_column(ratio=1, no_wrap=True)
            placed.add_column(no_wrap=True, justify="right")
            placed.add_row(where, Text(use, style="dim"))
            header.append(placed)
        elif where.cell_len <= width:
            header.append(where)
        else:  # the location, then the action, each on its line
            header += [at, played]
        scores = [r.score for r in self.records]
        label = f"score 0–{max(scores)} "
        spark = sparkline(scores, width=width - len(label) - 2)
        header.append(
            Text(label, style="dim", no_wrap=True, overflow="ellipsis").append(spark, style="green")
        )
        return header

    def _render(self, console: Console, width: int, height: int, encoding: str) -> Group:
        last = self.records[-1]
        inner = width - 4
        header = self._header(width, encoding)
        body = height - len(header) - 6  # three panels with two border lines each
        calls = self._recent_calls()
        observation, reasoning = _flat(last.observation, encoding), _flat(last.reasoning, encoding)
        game_need = len(Text(observation).wrap(console, inner))
        reason_need = len(Text(reasoning).wrap(console, inner))
        call_lines = max(1, min(len(calls), body // 3))
        reason_lines = max(1, min(reason_need, max(2, body // 5)))
        game_lines = max(1, min(game_need, body - call_lines - reason_lines))
        spare = body - call_lines - reason_lines - game_lines
        extra = max(0, min(spare, len(calls) - call_lines))
        call_lines += extra
        reason_lines += max(0, min(spare - extra, reason_need - reason_lines))
        shown = [
            _call_line(turn, call, inner, encoding, current=turn == last.turn)
            for turn, call in calls[:call_lines]
        ] or [_cut(Text("no tool calls yet", style="dim"), inner)]
        titles = (
            f"tool calls — turn {last.turn}: {last.tool_calls}",
            f"tool calls: {last.tool_calls}",
            f"calls: {last.tool_calls}",
        )
        title = next((t for t in titles if len(t) + 6 <= width), titles[-1])
        return Group(
            *header,
            _panel(_clip(console, observation, inner, game_lines), "game"),
            _panel(_clip(console, reasoning, inner, reason_lines, "italic"), "reasoning"),
            _panel(Text("\n").join(shown), title),
        )

    def _recent_calls(self) -> list[tuple[int, ToolCallRecord]]:
        """Tool calls, this turn's first, then earlier turns' (newest first)."""
        found: list[tuple[int, ToolCallRecord]] = []
        for record in reversed(self.records[-50:]):
            found += [(record.turn, call) for call in record.calls]
        return found


class TerminalLive(Live):
    """rich's live display, drawn where the terminal has it (the module docstring).

    Args:
        renderable: what to draw; a :class:`LiveView` also says how wide the lines of its last frame
            were, for a terminal made narrower.
        console: the console to draw on.
        kwargs: rich's :class:`~rich.live.Live` arguments.
    """

    def __init__(self, renderable: RenderableType, *, console: Console, **kwargs: Any) -> None:
        super().__init__(renderable, console=console, **kwargs)
        self._fd = terminal_fd(console.file)
        self._suspensions = suspensions()
        self._away = False
        """Frames were not drawn (the command ran in the background): the next is drawn afresh."""

    def process_renderables(self, renderables: list[ConsoleRenderable]) -> list[ConsoleRenderable]:
        with self._lock:
            if self.console.is_interactive and self._fd is not None:
                where = self._where(self._fd)
                if where == "away" and self.is_started:
                    return renderables  # in the background: what is printed goes out, the frame waits
                if where != "here":  # the last frame stays above what the shell printed meanwhile
                    self._live_render._shape = None
                    renderables = [Control.show_cursor(False), *renderables]  # shown while stopped
                if where == "away":  # the last frame of a run in the background: after the shell's prompt
                    renderables = [Segments([Segment.line()]), *renderables]
            return super().process_renderables(renderables)

    def erase_on_stop(self) -> None:
        """Erase the last frame as the display stops, rather than leave it; not from the background,
        where the shell's lines, not the frame, are above the cursor."""
        if self._fd is None or not in_background(self._fd):
            self.transient = True

    def _where(self, fd: int) -> str:
        """Where the next frame goes: ``"away"`` (in the background: not drawn), ``"afresh"`` (below
        what the shell printed: the command stopped on Ctrl-Z or ran in the background), or ``"here"``
        over the last frame, which starts where the terminal has it now (after the terminal was
        made narrower, each of its lines reflowed onto as many rows as it now takes)."""
        if in_background(fd):
            self._away = True
            return "away"
        if self._away or suspensions() != self._suspensions:
            self._suspensions, self._away = suspensions(), False
            return "afresh"
        render = self._live_render
        drawn = getattr(self.get_renderable(), "drawn", None)
        if render._shape is not None and drawn is not None:
            width, cells = drawn
            now = self.console.width
            if now < width:
                render._shape = (now, sum(max(1, -(-n // now)) for n in cells[: render._shape[1]]))
        return "here"


class Progress:
    """Per-turn progress: the live view on a terminal, plain lines otherwise, nothing when quiet.

    A dumb terminal (``TERM=dumb`` or ``unknown``) gets the lines: rich's live display does not
    redraw there, and would show nothing until the episode ends. So does an output that is not a
    terminal although ``FORCE_COLOR`` (or ``TTY_COMPATIBLE=1``) says it takes colours: a CI log would
    get every frame, four times a second; ``TTY_INTERACTIVE=0`` asks for the lines on a terminal.

    The live view's last frame stays on the screen when the episode ends (above the summary); a view
    that never showed a turn (``waiting for the first turn…``) is erased instead.
    What is written to stderr meanwhile goes above it when stderr is that terminal, and to stderr
    otherwise (``2>debug.log``).

    Args:
        console: where to draw.
        quiet: show nothing.
    """

    def __init__(self, console: Console, *, quiet: bool) -> None:
        self.console = console
        self.mode = "off" if quiet else "live" if redraws(console) else "lines"
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
            self.live = TerminalLive(
                self.view,
                console=self.console,
                refresh_per_second=4,
                transient=False,
                redirect_stdout=False,
                redirect_stderr=same_terminal(self.console, sys.stderr),
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
        """Stop drawing; the last frame stays. A view that never showed a turn (the episode failed or
        was interrupted before its first) is erased: its ``waiting for the first turn…`` stayed on the
        screen between the error (or ``interrupted``) and the summary, as if the run still waited."""
        live, self.live = self.live, None
        if live is not None:
            if self.view is not None and not self.view.records and isinstance(live, TerminalLive):
                live.erase_on_stop()
            live.stop()
        self._terminal.close()


def redraws(console: Console) -> bool:
    """Whether ``console`` takes a live view: a terminal that redraws (not ``TERM=dumb``, not
    ``TTY_INTERACTIVE=0``), and a real one unless the program said so (``force_terminal=True``)."""
    if not console.is_interactive or console.is_dumb_terminal:
        return False
    return bool(getattr(console, "_force_terminal", None)) or terminal_fd(console.file) is not None
