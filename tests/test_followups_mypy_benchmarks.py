"""``mypy`` (bare, as CI runs it) checks the benchmarks too, and finds what they import.

The benchmarks import ``_benchlib`` beside them, and ``bench_remote.py`` the tests' ``servers``
package (through ``sys.path`` at run time): the configuration gives mypy that folder.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_bare_mypy_checks_the_packages_and_the_benchmarks() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]
    assert (config.get("packages"), config["files"], config["mypy_path"]) == (
        None,
        ["zorkmcp", "bridge", "benchmarks"],
        "tests",
    )
    assert (REPO / "tests" / "servers" / "remote.py").is_file()  # what bench_remote.py imports
