"""Benchmarks are pytest files named ``bench_*.py``; ``pytest benchmarks/`` collects them, ``pytest`` and
``pytest tests/`` never do (``testpaths = ["tests"]``).

Each benchmark adds a section to the session's :class:`_benchlib.Report` (the ``report`` fixture).
At the end of the run the sections and the target table are printed in pytest's terminal summary
(visible without ``-s``), and every figure, with the machine's description, is written to
``benchmarks/results/latest.json`` plus a timestamped copy. Nothing here asserts a time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from _benchlib import BenchSettingError, Report, check_settings

if TYPE_CHECKING:
    from pathlib import Path

    from _pytest.terminal import TerminalReporter

_REPORT = pytest.StashKey[Report]()
_WRITTEN = pytest.StashKey["Path"]()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    if file_path.suffix != ".py" or not file_path.name.startswith("bench_"):
        return None
    if parent.session.isinitpath(file_path):
        return None  # named on the command line: pytest collects it itself, don't collect it twice
    module: pytest.Module = pytest.Module.from_parent(parent, path=file_path)
    return module


def pytest_configure(config: pytest.Config) -> None:
    try:
        check_settings()  # before the modules read them at import: one line instead of a collection error
    except BenchSettingError as error:
        raise pytest.UsageError(str(error)) from None
    config.stash[_REPORT] = Report()


@pytest.fixture(scope="session")
def report(pytestconfig: pytest.Config) -> Report:
    """The run's report: each benchmark adds its section."""
    return pytestconfig.stash[_REPORT]


def pytest_sessionfinish(session: pytest.Session) -> None:
    report = session.config.stash.get(_REPORT, None)
    if report is not None and report.sections:
        session.config.stash[_WRITTEN] = report.write()


def pytest_terminal_summary(terminalreporter: TerminalReporter, config: pytest.Config) -> None:
    report = config.stash.get(_REPORT, None)
    if report is None or not report.sections:
        return
    terminalreporter.section("zorkmcp benchmarks")
    terminalreporter.write(report.render())
    written = config.stash.get(_WRITTEN, None)
    if written is not None:
        terminalreporter.write_line(f"figures and machine information: {written} (and latest.json)")
