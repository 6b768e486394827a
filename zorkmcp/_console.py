"""A command's standard output, whose reader going away stops the command as Ctrl-C does.

``zorkmcp eval ... | head``: once ``head`` has its lines, the run's next line fails with ``EPIPE``.
rich's own answer is ``SystemExit(1)`` from inside the write; in the event loop of ``zorkmcp eval``
that became a traceback through the run's task group, and the run ended without its summary. Here
the write is dropped, and the command stops at its next checkpoint the way Ctrl-C stops it
(:func:`zorkmcp._signals.reader_gone`): the episodes in flight are cancelled, the summary and the
report are written, and the exit status is 141.
"""

from __future__ import annotations

import os
from contextlib import suppress

from rich.console import Console

from ._signals import reader_gone

__all__ = ["OutputConsole"]


class OutputConsole(Console):
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
