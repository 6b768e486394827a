"""Benchmarks are pytest files named ``bench_*.py``; ``pytest benchmarks/`` collects them, ``pytest`` and
``pytest tests/`` never do (``testpaths = ["tests"]``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pathlib import Path


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Module | None:
    if file_path.suffix != ".py" or not file_path.name.startswith("bench_"):
        return None
    if parent.session.isinitpath(file_path):
        return None  # named on the command line: pytest collects it itself, don't collect it twice
    module: pytest.Module = pytest.Module.from_parent(parent, path=file_path)
    return module
