"""The ``zorkmcp`` command's entry point: a Ctrl-C while the command is still loading is one line.

The console script imports this module, which imports nothing but :mod:`sys`, and only then the
command (:mod:`zorkmcp.cli`): its imports (rich, the argument parser, the console) take about 70 ms
(``python -X importtime -c "import zorkmcp.cli"``), and a Ctrl-C among them, or while the arguments
are read, was a ``KeyboardInterrupt`` traceback of 10 to 50 lines and the status of a process killed
by SIGINT. It is now ``zorkmcp: interrupted`` and 130, as once the command runs. Nothing has been
started or written by then. What is left is Python's own start (its ``site`` imports, about 15 ms),
before any of zorkmcp runs.
"""

from __future__ import annotations

import sys

EXIT_INTERRUPTED = 130


def main() -> int:
    """Run the ``zorkmcp`` command (:func:`zorkmcp.cli.main`); a Ctrl-C before it takes over is status 130."""
    try:
        from .cli import main as command

        return command()
    except KeyboardInterrupt:
        if sys.stderr is not None:
            print("zorkmcp: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
