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
"""

from __future__ import annotations

import os
import termios
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.segment import Segment

from ._controls import visible_controls
from ._signals import reader_gone

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from rich.text import Text

__all__ = ["OutputConsole", "TerminalConsole", "keys_not_echoed"]


class TerminalConsole(Console):
    """A :class:`rich.console.Console` that writes no control character it did not make itself.

    Strings (``print``, table cells) have theirs made visible before they are measured, so a table
    keeps its columns; any that comes in a ready-made :class:`rich.text.Text` is made visible as it
    is written.
    """

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(visible_controls(text), **kwargs)

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        return super()._render_buffer(
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
        was a traceback that ended the run. It is said once on stderr; the files are still written."""
        try:
            super()._check_buffer()
        except OSError as exc:
            self.quiet = True
            with suppress(OSError):
                os.write(
                    2,
                    f"zorkmcp: standard output cannot be written ({exc.strerror or exc}); "
                    "nothing more is printed there, the command goes on\n".encode(),
                )


@contextmanager
def keys_not_echoed(console: Console) -> Iterator[None]:
    """While a live display redraws ``console``'s terminal, keys typed there are not echoed.

    The terminal echoes Ctrl-C as ``^C`` where the cursor is, at the end of the display's last line.
    When that line fills the width, the echo wraps it, the cursor ends one line lower than rich
    knows, and the final redraw left the first line of the last frame on the screen twice. Typed
    keys would break the picture the same way. ``ECHO`` (and ``ECHOCTL``) are turned off on the
    terminal for the duration and its settings put back after; Ctrl-C and Ctrl-Z still act
    (``ISIG``). Nothing changes when the console is not a terminal, or when this process is not in
    the terminal's foreground (a background job that set the terminal would be stopped by
    ``SIGTTOU``).

    Args:
        console: the console the live display draws on.
    """
    try:
        fd = console.file.fileno()
        in_front = os.isatty(fd) and os.tcgetpgrp(fd) == os.getpgrp()
        saved = termios.tcgetattr(fd) if in_front else None
    except (OSError, ValueError, AttributeError, termios.error):  # no descriptor, closed, not a tty
        saved = None
    if saved is None:
        yield
        return
    quiet = list(saved)
    quiet[3] &= ~(termios.ECHO | termios.ECHOCTL)  # the local modes
    with suppress(termios.error):
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
    try:
        yield
    finally:
        with suppress(termios.error):
            termios.tcsetattr(fd, termios.TCSANOW, saved)
