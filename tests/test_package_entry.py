"""``python -m zorkmcp`` and ``zorkmcp --version`` as a user runs them, from a folder outside the tree.

``python -m zorkmcp`` is the command where the environment's scripts are not on ``PATH``; it was
"No module named zorkmcp.__main__". ``zorkmcp --version`` alone is answered without the command's
imports (rich, attrs, argparse's whole parser): about 20 ms instead of 100.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def _python(cwd: Path, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, text=True, timeout=60, check=False, **kwargs
    )


def test_python_m_zorkmcp_is_the_command(tmp_path: Path) -> None:
    done = _python(tmp_path, "-m", "zorkmcp", "--version", capture_output=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, "zorkmcp 0.1.0\n", "")
    done = _python(tmp_path, "-m", "zorkmcp", "tools", "--help", capture_output=True)
    assert done.returncode == 0
    assert done.stdout.startswith("usage: zorkmcp tools ")
    done = _python(tmp_path, "-m", "zorkmcp", capture_output=True)
    assert done.returncode == 2
    assert done.stderr.endswith(
        "zorkmcp: error: the following arguments are required: {play,tools,call,eval,report}\n"
    )


def test_version_alone_imports_nothing_of_the_command(tmp_path: Path) -> None:
    code = (
        "import sys; sys.argv = ['zorkmcp', '--version']; from zorkmcp._entry import main; status = main(); "
        "print(status, sorted(m for m in sys.modules if m.split('.')[0] in "
        "('zorkmcp', 'rich', 'attrs', 'attr', 'trio', 'argparse')))"
    )
    done = _python(tmp_path, "-c", code, capture_output=True)
    assert (done.stdout, done.stderr) == (
        "zorkmcp 0.1.0\n0 ['zorkmcp', 'zorkmcp._entry', 'zorkmcp._lazy']\n",
        "",
    )


def test_version_alone_prints_what_the_commands_own_version_prints(tmp_path: Path) -> None:
    # with another argument after it, argparse's version action answers (and ignores the rest)
    done = _python(tmp_path, "-m", "zorkmcp", "--version", "play", capture_output=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, "zorkmcp 0.1.0\n", "")


def test_version_to_a_reader_gone_or_a_full_disk_is_status_0_and_no_traceback(tmp_path: Path) -> None:
    read, write = os.pipe()
    os.close(read)
    try:
        done = _python(tmp_path, "-m", "zorkmcp", "--version", stdout=write, stderr=subprocess.PIPE)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (0, "")
    with open("/dev/full", "w") as full:  # every write: ENOSPC
        done = _python(tmp_path, "-m", "zorkmcp", "--version", stdout=full, stderr=subprocess.PIPE)
    assert (done.returncode, done.stderr) == (0, "")


def test_version_with_stdout_closed_goes_to_stderr_as_argparse_does(tmp_path: Path) -> None:
    code = (
        "import sys; sys.stdout = None; sys.argv = ['zorkmcp', '--version']; "
        "from zorkmcp._entry import main; main()"
    )
    done = _python(tmp_path, "-c", code, capture_output=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "zorkmcp 0.1.0\n")
