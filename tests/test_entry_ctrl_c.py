"""A Ctrl-C while the ``zorkmcp`` command is still loading: one line and status 130, no traceback.

The installed console script is run as it is (its own file, through :mod:`runpy`), in a real
subprocess that gets a real SIGINT at a known moment: a finder put first on ``sys.meta_path`` sends
the signal to its own process as ``zorkmcp.cli`` (or, in the second test, ``rich.markup``, which
it imports) starts to be imported, so Python raises the ``KeyboardInterrupt`` among the command's
imports, where a user's Ctrl-C in the first ~70 ms lands.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

SCRIPT = shutil.which("zorkmcp")

_RUN = """
import os, runpy, signal, sys

class CtrlCOnImport:
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, CtrlCOnImport())
sys.argv = [{script!r}, *{args!r}]
runpy.run_path({script!r}, run_name="__main__")
"""


@pytest.mark.skipif(SCRIPT is None, reason="the zorkmcp console script is not installed (pip install -e .)")
@pytest.mark.parametrize(
    ("module", "args"),
    [("zorkmcp.cli", ["tools"]), ("rich.markup", ["play", "--turns", "1"]), ("zorkmcp.cli", ["--help"])],
)
def test_ctrl_c_while_the_command_imports_is_one_line_and_130(module: str, args: list[str]) -> None:
    assert SCRIPT is not None
    done = subprocess.run(
        [sys.executable, "-c", _RUN.format(module=module, script=SCRIPT, args=args)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr, done.stdout) == (130, "zorkmcp: interrupted\n", "")
