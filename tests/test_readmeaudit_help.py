"""The ``--help`` texts say what the README and the code do (an audit of README.md against the code).

``zorkmcp eval``'s exit statuses name the start-up probe's 401 stop, ``zorkmcp call``'s synopsis
is the README's (``NAME``) and a call without one names only it as missing, and the README's table
of ``ZORKMCP_BENCH_*`` settings is the benchmarks' own.
"""

from __future__ import annotations

import argparse
import importlib
import os
from pathlib import Path
from typing import Any

import pytest

from zorkmcp.cli import build_parser

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def subparser(command: str) -> argparse.ArgumentParser:
    (subparsers,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    parser: argparse.ArgumentParser = subparsers.choices[command]
    return parser


def flat(text: str) -> str:
    return " ".join(text.split())


def test_eval_help_names_the_probes_401_among_the_exit_2_cases() -> None:
    # the start-up probe stops the run on a 401 every request would get (zorkmcp/eval/_reach.py)
    assert (
        "a model endpoint that gives no HTTP answer (within a request's timeout_seconds, once it has "
        "the request) or answers its GET /models with a 401 that every request would get (no key sent, "
        "or invalid_api_key), or a resume with other settings (nothing started)"
    ) in flat(subparser("eval").format_help())


def test_call_synopsis_says_name_as_the_readme_does() -> None:
    assert "zorkmcp call [--config PATH] [--timeout S] NAME [JSON-ARGS]" in README
    assert flat(subparser("call").format_usage()) == (
        "usage: zorkmcp call [-h] [--config PATH] [--pyproject PATH] [--timeout S] NAME [JSON-ARGS]"
    )


def test_call_without_a_name_names_only_the_name_as_missing(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["call"])
    assert exited.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last == "zorkmcp call: error: the following arguments are required: NAME"


@pytest.fixture
def benchlib(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(REPO / "benchmarks"))
    for name in [name for name in os.environ if name.startswith("ZORKMCP_BENCH_")]:
        monkeypatch.delenv(name)
    return importlib.import_module("_benchlib")


def test_readme_bench_table_is_the_benchmarks_settings(benchlib: Any) -> None:
    start = README.index("| `ZORKMCP_BENCH_QUICK` |")
    rows = {}
    for line in README[start:].splitlines():
        if not line.startswith("| `ZORKMCP_BENCH_"):
            break
        name, default, _ = (cell.strip() for cell in line.strip("|").split(" | "))
        rows[name.strip("`")] = default
    assert rows == {
        "ZORKMCP_BENCH_QUICK": "0",
        "ZORKMCP_BENCH_ROUNDS": "30 (5)",
        "ZORKMCP_BENCH_CALLS": "300 (100)",
        "ZORKMCP_BENCH_STUBBORN_ROUNDS": "5 (1)",
        "ZORKMCP_BENCH_SOAK_TURNS": "2000 (500), at least 100",
        "ZORKMCP_BENCH_ZYGOTE_SPAWNS": "200 (40)",
        "ZORKMCP_BENCH_COST_EPISODES": "40 (10)",
        "ZORKMCP_BENCH_EVAL_RUNS": "`8x5,32x5,64x5,64x5-nomcp,64x20,256x2-nomcp` (`8x5,64x5`)",
        "ZORKMCP_BENCH_NPX": "0",
    }
    for name, (full, quick, least, _) in benchlib.SETTINGS.items():
        expected = f"{full} ({quick})" + (f", at least {least}" if least > 1 else "")
        assert rows[name] == expected, name
    assert rows["ZORKMCP_BENCH_EVAL_RUNS"] == f"`{benchlib.DEFAULT_EVAL_RUNS}` (`{benchlib.QUICK_EVAL_RUNS}`)"
    assert set(rows) == {
        *benchlib.SETTINGS,
        "ZORKMCP_BENCH_EVAL_RUNS",
        "ZORKMCP_BENCH_NPX",
        "ZORKMCP_BENCH_QUICK",
    }
    assert "\nZORKMCP_BENCH_QUICK=1 pytest benchmarks/ " in README
