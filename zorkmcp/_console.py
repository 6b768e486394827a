"""The consoles ``zorkmcp play`` writes to: no control character from outside reaches the terminal,
and a standard output whose reader goes away stops the command as Ctrl-C does.

:class:`TerminalConsole` writes every control character of the text it is given as its escape
(``\\x1b``, :func:`zorkmcp._controls.visible_controls`): a location, an error message or a
warning naming a model's or a server's text cannot clear the screen or set the window title. Only
the sequences rich makes itself (colours, the live view's cursor moves) reach the terminal.

``zorkmcp eval ... | head``: once ``head`` has its lines, the run's next line fails with ``EPIPE``.
rich's own answer is ``SystemExit(1)`` from inside the write; in the event loop of ``zorkmcp eval``
that became a traceback through the run's task group, and the run ended without its summary. Here
the write is dropped, and the command stops at its next checkpoint the way Ctrl-C stops it
(:func:`zorkmcp._signals.reader_gone`): the episodes in flight are cancelled, the summary and the
report are written, and the exit status is 141.

While a live display is drawn (:func:`keys_not_echoed`), a :class:`TerminalConsole` that writes to
the same terminal (the warnings on stderr, beside the live view on stdout) prints its lines above
the display, through the display's console: written where the cursor was, at the end of the
display's last line, a warning was drawn over by the next frame, and the display's cursor moves,
counted from the wrong line, left pieces of earlier frames on the screen.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import termios
import textwrap
import threading
from contextlib import ExitStack, contextmanager, suppress
from typing import TYPE_CHECKING, Any, Final

from rich.console import Console
from rich.segment import Segment, Segments
from rich.text import Text

from ._controls import visible_controls
from ._signals import on_sudden_end, reader_gone

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from rich.console import ConsoleOptions, RenderableType

__all__ = [
    "OutputConsole",
    "TerminalConsole",
    "Trimmed",
    "WrappingHelpFormatter",
    "encodable",
    "in_background",
    "in_front",
    "keys_not_echoed",
    "same_terminal",
    "say",
    "suspensions",
    "terminal_fd",
]

SHOW_CURSOR: Final = b"\x1b[?25h"
"""What a live display hid (the cursor), shown again while the command is stopped (Ctrl-Z)."""

_drawn: list[tuple[Console, os.stat_result]] = []
"""The consoles a live display draws on (:func:`keys_not_echoed`), each with its terminal."""
_suspended: list[int] = [0]
"""How many times the process stopped on Ctrl-Z (``SIGTSTP``) under :func:`keys_not_echoed`."""


class TerminalConsole(Console):
    """A :class:`rich.console.Console` that writes no control character it did not make itself.

    Strings (``print``, table cells) have theirs made visible before they are measured, so a table
    keeps its columns; any that comes in a ready-made :class:`rich.text.Text` is made visible as it
    is written. On a terminal whose encoding is not UTF-8, a string's characters the encoding lacks
    are written as escapes (``\\xb1``) before it is measured too: escaped as they were written, they
    widened their cells (``score \\xb1 se``) and pushed the table's borders out of line. While a live
    display is drawn on another console of the same terminal, what it prints goes above the display
    (the module docstring).
    """

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(encodable(visible_controls(text), self.encoding), **kwargs)

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(_visible(buffer))

    def _write_buffer(self) -> None:
        live = None if self._buffer_index else _live_beside(self)
        if live is None:
            super()._write_buffer()
            return
        with self._lock:
            segments = list(_visible(self._buffer))
            del self._buffer[:]
        if segments and not segments[-1].text.endswith("\n"):
            segments.append(Segment.line())  # the display's next frame starts on a line of its own
        live.print(Segments(segments), end="", crop=False)


def _visible(buffer: Iterable[Segment]) -> Iterator[Segment]:
    return (
        segment if segment.control else Segment(visible_controls(segment.text), segment.style)
        for segment in buffer
    )


class OutputConsole(TerminalConsole):
    """A :class:`rich.console.Console` whose reader going away stops the command (the module docstring)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True  # what is left to print goes nowhere
        if not reader_gone(self.file.fileno()):
            super().on_broken_pipe()

    def _check_buffer(self) -> None:
        """rich's writer, where an output that cannot take more (``> /dev/full``) stops the output, not
        the command: rich answers only ``EPIPE`` (:meth:`on_broken_pipe`), so another ``OSError``
        was a traceback that ended the run. It is said once on stderr; the files are still written.
        So is a standard output that was closed (``>&-``): rich writes to no file then, and the
        command printed nothing and said nothing."""
        if not self.quiet and self._file is None and not self.stderr and sys.stdout is None:
            self._stop_output(
                "zorkmcp: standard output is closed; nothing is printed there, the command goes on"
            )
            return
        try:
            super()._check_buffer()
        except OSError as exc:
            self._stop_output(
                f"zorkmcp: standard output cannot be written ({exc.strerror or exc}); "
                "nothing more is printed there, the command goes on"
            )

    def _stop_output(self, line: str) -> None:
        """Print nothing more, and say so on stderr (its descriptor: a write to it may be under way)."""
        self.quiet = True
        del self._buffer[:]
        with suppress(OSError):
            os.write(2, f"{line}\n".encode())


def encodable(text: str, encoding: str) -> str:
    """``text`` with each character ``encoding`` lacks written as its escape (``\\u2026``), as
    ``errors="backslashreplace"`` would write it; unchanged for UTF-8 (and an encoding Python does
    not know, which the stream's own error handler meets)."""
    if encoding.lower().replace("_", "-").startswith("utf"):
        return text
    try:
        return text.encode(encoding, "backslashreplace").decode(encoding)
    except LookupError:
        return text


def terminal_fd(file: object) -> int | None:
    """The descriptor of ``file`` (a stream or a console's file) when it is a terminal, else ``None``."""
    try:
        fd = file.fileno()  # type: ignore[attr-defined]
        return fd if isinstance(fd, int) and os.isatty(fd) else None
    except (OSError, ValueError, AttributeError):  # no descriptor, closed, not a file
        return None


def same_terminal(console: Console, file: object) -> bool:
    """Whether ``file`` (``sys.stderr``) writes to the terminal ``console`` draws on."""
    mine, other = terminal_fd(console.file), terminal_fd(file)
    if mine is None or other is None:
        return False
    try:
        return os.path.samestat(os.fstat(mine), os.fstat(other))
    except OSError:
        return False


def in_front(fd: int) -> bool:
    """Whether this process is in the foreground of ``fd``, its controlling terminal (``False`` when
    the terminal is not its own, or hung up): only then may it set the terminal."""
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:
        return False


def in_background(fd: int) -> bool:
    """Whether this process runs in the background of ``fd``, its controlling terminal (``bg``, ``&``):
    another process group has it. ``False`` for a terminal that is not its own."""
    try:
        return os.tcgetpgrp(fd) != os.getpgrp()
    except OSError:
        return False


def suspensions() -> int:
    """How many times the process stopped on Ctrl-Z while a live display was drawn: a display whose
    count changed draws its next frame afresh, below what the shell printed meanwhile
    (:func:`keys_not_echoed`). Counted before the process stops: once it is continued, the display's
    own thread may draw before the main thread runs a handler of ``SIGCONT``."""
    return _suspended[0]


def _live_beside(console: Console) -> Console | None:
    """The console of a live display drawn on ``console``'s terminal (not ``console`` itself), if any."""
    if not _drawn:
        return None
    fd = terminal_fd(console.file)
    if fd is None:
        return None
    try:
        mine = os.fstat(fd)
    except OSError:
        return None
    return next(
        (live for live, terminal in _drawn if live is not console and os.path.samestat(mine, terminal)), None
    )


@contextmanager
def keys_not_echoed(console: Console) -> Iterator[None]:
    """While a live display redraws ``console``'s terminal, keys typed there are not echoed, and
    Ctrl-Z gives the terminal back as it was.

    The terminal echoes Ctrl-C as ``^C`` where the cursor is, at the end of the display's last line.
    When that line fills the width, the echo wraps it, the cursor ends one line lower than rich
    knows, and the final redraw left the first line of the last frame on the screen twice. Typed
    keys would break the picture the same way. ``ECHO`` (and ``ECHOCTL``) are turned off on the
    terminal for the duration and its settings put back after; Ctrl-C and Ctrl-Z still act
    (``ISIG``). The terminal is only set while this process is in its foreground: a background job
    that set it would be stopped by ``SIGTTOU`` (a run put in the background with ``bg`` stopped
    again as it ended, and waited there for ``fg``).

    Ctrl-Z (``SIGTSTP``) puts the terminal's settings back and shows the cursor the display hid
    before the process stops, so the shell has its echo and its cursor (it had neither: the
    cursor stayed hidden at the shell's prompt); ``fg`` (``SIGCONT``) takes the terminal again, and
    :func:`suspensions` tells the display to draw its next frame below what the shell printed (it
    drew over the shell's lines, from where the last frame had been). Only in the main thread,
    with both signals at their defaults.

    Other consoles writing to this terminal print above the display meanwhile (the module docstring).
    Nothing changes when the console is not a terminal.

    Args:
        console: the console the live display draws on.
    """
    fd = terminal_fd(console.file)
    if fd is None:
        yield
        return
    with ExitStack() as stack:
        with suppress(OSError):
            drawn = (console, os.fstat(fd))
            _drawn.append(drawn)
            stack.callback(_drawn.remove, drawn)
        terminal = _Echo(fd)
        terminal.take()
        stack.callback(terminal.give_back)
        stack.enter_context(on_sudden_end(terminal.as_it_was))
        if threading.current_thread() is threading.main_thread():
            for signum, handler in ((signal.SIGTSTP, terminal.suspend), (signal.SIGCONT, terminal.resume)):
                if signal.getsignal(signum) is signal.SIG_DFL:
                    stack.callback(signal.signal, signum, signal.signal(signum, handler))
        yield


class _Echo:
    """The echo of the terminal ``fd``, off while this process holds it (:func:`keys_not_echoed`)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.saved: list[Any] | None = None
        """The terminal's settings before it was taken, while it is held."""

    def take(self) -> None:
        """Echo off, when this process is in the terminal's foreground (settings kept to put back)."""
        if not in_front(self.fd):
            return
        try:
            saved = self.saved if self.saved is not None else termios.tcgetattr(self.fd)
            quiet = list(saved)
            quiet[3] &= ~(termios.ECHO | termios.ECHOCTL)  # the local modes
            termios.tcsetattr(self.fd, termios.TCSANOW, quiet)
        except (OSError, termios.error):  # the terminal hung up
            return
        self.saved = saved

    def give_back(self) -> None:
        """The settings as they were, when this process is in the foreground (else the shell's apply)."""
        saved, self.saved = self.saved, None
        if saved is not None and in_front(self.fd):
            with suppress(OSError, termios.error):
                termios.tcsetattr(self.fd, termios.TCSANOW, saved)

    def as_it_was(self) -> None:
        """The settings as they were and the cursor shown: the shell gets its terminal back."""
        self.give_back()
        with suppress(OSError):
            os.write(self.fd, SHOW_CURSOR)

    def suspend(self, signum: int, frame: Any) -> None:
        """``SIGTSTP`` (Ctrl-Z): the terminal as it was (:meth:`as_it_was`), then stop (its default)."""
        del frame
        self.as_it_was()
        signal.signal(signum, signal.SIG_DFL)
        _suspended[0] += 1  # last: nothing between it and the stop lets the display's thread draw
        try:
            signal.raise_signal(signum)  # the process stops here, until SIGCONT
        finally:
            signal.signal(signum, self.suspend)

    def resume(self, signum: int, frame: Any) -> None:
        """``SIGCONT`` (``fg``, ``bg``): the terminal taken again when this process is in front."""
        del signum, frame
        self.take()


class WrappingHelpFormatter(argparse.RawDescriptionHelpFormatter):
    """``--help`` wrapped to the terminal between words.

    The description and the epilog are written as paragraphs (a blank line between two) whose lines
    are joined and wrapped again to the width; a line that starts with a space (an example) is kept
    as it is, on a line of its own; words joined by a no-break space stay on one line (``shown as
    escapes (\\x1b)``). Written out at 100 columns, the text was cut mid-word by an
    80-column terminal. The options' help is not broken at a hyphen either (``--no-`` / ``mcp``).
    """

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        paragraphs = []
        for paragraph in text.split("\n\n"):
            lines: list[str] = []
            words: list[str] = []
            for line in [*paragraph.splitlines(), None]:
                if line is not None and not line.startswith(" "):
                    words.append(line)
                    continue
                if words:
                    lines += self._wrapped(" ".join(words), width, indent)
                    words = []
                if line is not None:
                    lines.append(indent + line)
            paragraphs.append("\n".join(lines))
        return "\n\n".join(paragraphs)

    def _split_lines(self, text: str, width: int) -> list[str]:
        return self._wrapped(" ".join(text.split()), width, "")

    @staticmethod
    def _wrapped(text: str, width: int, indent: str) -> list[str]:
        """``text`` wrapped to ``width``; a no-break space (``\\xa0``) keeps its words on one line."""
        lines = textwrap.wrap(
            text, max(width, 11), initial_indent=indent, subsequent_indent=indent, break_on_hyphens=False
        )
        return [line.replace("\xa0", " ") for line in lines]


def say(console: Console, markup: str, *, style: str = "", wrapped: bool = False) -> None:
    """``markup`` printed as a line of words: a terminal breaks it between words, elsewhere it is one line.

    On a terminal the line is wrapped to its width between words, with no space left at the ends of
    the lines: written as one soft-wrapped line, a 40-column terminal cut it mid-word (``model s`` /
    ``cripted-walkthrough``). When the output is not a terminal (a pipe, a file) it stays one line
    however long, for ``grep``, unless ``wrapped`` (a paragraph, such as the offline model's notice):
    then it is wrapped to the console's width the same way (rich's own wrapping left the space that
    ended each line: ``playing with `` / ``the offline``). A word longer than the width is folded.
    """
    if not console.is_terminal and not wrapped:
        console.print(markup, style=style, highlight=False, soft_wrap=True)
        return
    lines = console.render_str(markup, style=style, highlight=False).wrap(
        console, console.width, overflow="fold"
    )
    for line in lines:
        line.rstrip()
    console.print(Text("\n").join(lines), soft_wrap=True)


class Trimmed:
    """A renderable's lines with no space at their ends: the summary table's title, centred, was
    padded with spaces to the table's width (in a file, ``Episode summary`` and 26 spaces)."""

    def __init__(self, renderable: RenderableType) -> None:
        self.renderable = renderable

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[Segment]:
        for line in console.render_lines(self.renderable, options, pad=False):
            while line and not line[-1].control and not line[-1].text.rstrip():
                line.pop()
            if line and not line[-1].control:
                last = line.pop()
                line.append(Segment(last.text.rstrip(), last.style))
            yield from line
            yield Segment.line()
