"""Writing to standard output when it may not be written: its reader went away (``| head``), or the
file it goes to cannot take it (``> /dev/full``).

A command prints with :func:`print_line`, which raises :class:`OutputError` at once (not at the
interpreter's exit), and turns that into its exit status with :func:`output_failed`: 141 (128 +
SIGPIPE, what a shell reports for a writer whose reader went away, as ``zorkmcp play`` ends) with
nothing said, else 1 with one line on stderr. Standard library only.
"""

from __future__ import annotations

import codecs
import errno
import os
import sys

__all__ = ["CLOSED", "EXIT_READER_GONE", "OutputError", "encoded", "output_failed", "print_line"]

EXIT_FAILED = 1
EXIT_READER_GONE = 141
"""128 + SIGPIPE: what a shell reports for a writer whose reader went away (``zorkmcp play`` too)."""
CLOSED = "it is closed (send it to /dev/null to drop it)"
"""Why standard output cannot be written when it was closed (``>&-``): ``sys.stdout`` is ``None``."""


class OutputError(Exception):
    """Standard output could not be written; ``error`` says why (``EPIPE``: its reader went away)."""

    def __init__(self, error: OSError) -> None:
        super().__init__(str(error))
        self.error = error


def print_line(text: str) -> None:
    """``text`` and a newline on stdout, all of it, flushed: a failure is raised here, not at exit.

    Through the binary buffer, to the last byte: when the reader goes away in the middle of a large
    write, ``BufferedWriter.write`` can return a short count with no error (and ``print`` ignores
    the count, so the output would end short with status 0); writing the rest raises ``EPIPE``.

    Raises:
        OutputError: standard output could not be written, or is closed (``>&-``: an ``EBADF`` that
            says so, where writing to ``sys.stdout``, ``None``, was an ``AttributeError`` traceback).
    """
    stream = sys.stdout
    if stream is None:  # closed (>&-): Python has no stream for it
        raise OutputError(OSError(errno.EBADF, CLOSED))
    buffer = getattr(stream, "buffer", None)
    try:
        if buffer is None:
            stream.write(text + "\n")
        else:
            stream.flush()
            data = memoryview(encoded(text + "\n", stream.encoding, stream.errors or "strict"))
            while data:
                data = data[buffer.write(data) :]
        stream.flush()
    except OSError as exc:
        raise OutputError(exc) from exc


_BYTES_OR_ESCAPE = "zorkmcp.bytes_or_escape"
"""The error handler :func:`encoded` gives a ``surrogateescape`` stream's text that it cannot encode."""


def _bytes_or_escape(error: UnicodeError) -> tuple[str | bytes, int]:
    """A byte of a name that was not valid (``"\\udcff"``) as that byte; any other character as its escape."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    char = error.object[error.start]
    if "\udc80" <= char <= "\udcff":  # surrogateescape's: the byte the name held
        return bytes([ord(char) - 0xDC00]), error.start + 1
    return char.encode("ascii", "backslashreplace").decode("ascii"), error.start + 1


codecs.register_error(_BYTES_OR_ESCAPE, _bytes_or_escape)


def encoded(text: str, encoding: str, errors: str) -> bytes:
    """``text`` as a stream of ``encoding`` and ``errors`` writes it, a character it lacks as its escape.

    A stream's handler may fail on text it cannot encode: ``surrogateescape``, what Python gives
    stdout in the C or POSIX locale (``LC_ALL=C`` with ``PYTHONCOERCECLOCALE=0``, or where no UTF-8
    locale is installed), restores only the bytes of a name that was not valid (``"\\udcff"``); an
    ellipsis or a tool's description in Japanese was a ``UnicodeEncodeError`` traceback. Such a
    character is written as its escape (``\\u2026``), as ``errors="backslashreplace"`` writes it,
    and a name's byte still as that byte.
    """
    try:
        return text.encode(encoding, errors)
    except UnicodeEncodeError:
        return text.encode(encoding, _BYTES_OR_ESCAPE if errors == "surrogateescape" else "backslashreplace")


def output_failed(error: OSError, prefix: str = "") -> int:
    """The exit status when stdout could not be written: 141 (silent) when its reader went away, else 1.

    Standard output is then pointed at ``/dev/null``, so what it still buffers goes nowhere when
    the interpreter exits (instead of an "Exception ignored" line). The line on stderr is ``prefix``
    (``zorkmcp report: wrote report.html, but ``) and ``cannot write to standard output: <why>``.
    """
    try:
        fd = sys.stdout.fileno() if sys.stdout is not None else -1  # None: closed, nothing to flush
    except (OSError, ValueError):  # not a file (a test's capture): nothing is flushed at exit
        fd = -1
    if fd >= 0:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, fd)
        finally:
            os.close(null)
    if isinstance(error, BrokenPipeError):
        return EXIT_READER_GONE
    print(f"{prefix}cannot write to standard output: {error.strerror or error}", file=sys.stderr)
    return EXIT_FAILED
