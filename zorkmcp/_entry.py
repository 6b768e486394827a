"""The ``zorkmcp`` command's entry point: a Ctrl-C while the command is still loading is one line.

The console script imports this module, which imports nothing but :mod:`sys`, and only then the
command (:mod:`zorkmcp.cli`): its imports (rich, the argument parser, the console) take about 70 ms
(``python -X importtime -c "import zorkmcp.cli"``), and a Ctrl-C among them, or while the arguments
are read, was a ``KeyboardInterrupt`` traceback of 10 to 50 lines and the status of a process killed
by SIGINT. It is now ``zorkmcp: interrupted`` and 130, as once the command runs. Nothing has been
started or written by then. What is left is Python's own start (its ``site`` imports, about 15 ms),
before any of zorkmcp runs.

``zorkmcp --version`` alone is answered here, from :data:`zorkmcp.__version__`, without the command's
imports: about 20 ms instead of 100 (a script that checks the version may run it often). It prints
what the command's own ``--version`` prints when other arguments come with it: ``zorkmcp 0.1.0``.
"""

from __future__ import annotations

import os
import sys

EXIT_INTERRUPTED = 130


def main() -> int:
    """Run the ``zorkmcp`` command (:func:`zorkmcp.cli.main`); a Ctrl-C before it takes over is status 130."""
    try:
        if sys.argv[1:] == ["--version"]:
            return _print_version()
        from .cli import main as command

        return command()
    except KeyboardInterrupt:
        if sys.stderr is not None:
            print("zorkmcp: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _print_version() -> int:
    """``zorkmcp --version``: as argparse's ``version`` action does it, and as fast as Python starts."""
    from . import __version__

    stream = sys.stdout or sys.stderr  # no stdout (closed): argparse writes to stderr
    try:
        stream.write(f"zorkmcp {__version__}\n")
        stream.flush()
    except (AttributeError, OSError):  # neither stream, a reader gone, a full disk: argparse says nothing
        _drop_stdout()
    return 0


def _drop_stdout() -> None:
    """Point file descriptor 1 at ``/dev/null``: the interpreter's flush at exit has nowhere to fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass
