"""``pytest benchmarks/`` as a user runs it: its ``ZORKMCP_BENCH_*`` variables and a benchmark that
subclasses the Bridge.

A bad value is one line from pytest before anything runs (not a collection error with a
traceback), a misspelt variable is not silently ignored, and the whole-turn benchmark still opens
its episodes the way ``bridge.Bridge`` does.
"""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCHMARKS = REPO / "benchmarks"
GUARD = 60  # seconds: a hang guard for the subprocess, never an assertion
EXPECTED_RUNS = (
    "expected runs KxT separated by commas, such as 8x5,64x20 (K episodes at once, T turns each, both ≥ 1; "
    "KxT-nomcp for --no-mcp); unset it for the default 8x5,32x5,64x5,64x5-nomcp,64x20,256x2-nomcp"
)


@pytest.fixture
def benchlib(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    for name in [name for name in os.environ if name.startswith("ZORKMCP_BENCH_")]:
        monkeypatch.delenv(name)
    return importlib.import_module("_benchlib")


def _collect(**variables: str) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items() if not name.startswith("ZORKMCP_BENCH_")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "benchmarks/", "--collect-only", "-q", "-p", "no:cacheprovider"],
        cwd=REPO,
        env={**env, **variables},
        capture_output=True,
        text=True,
        timeout=GUARD,
        check=False,
    )


def test_bad_eval_runs_is_one_line_before_anything_runs() -> None:
    done = _collect(ZORKMCP_BENCH_EVAL_RUNS="8x")
    assert done.returncode == 4  # pytest's usage error: nothing was collected or run
    assert done.stderr.strip() == f"ERROR: ZORKMCP_BENCH_EVAL_RUNS='8x': '8x' is not a run; {EXPECTED_RUNS}"
    assert "Traceback" not in done.stdout + done.stderr


def test_bad_rounds_is_one_line_before_anything_runs() -> None:
    done = _collect(ZORKMCP_BENCH_ROUNDS="ten")
    assert done.returncode == 4
    assert done.stderr.strip() == (
        "ERROR: ZORKMCP_BENCH_ROUNDS='ten': expected a whole number ≥ 1 (turns per variant: per-turn, "
        "whole-turn, remote, teardown; default 30); set it to one, or unset it"
    )


def test_good_settings_collect_every_benchmark() -> None:
    done = _collect(ZORKMCP_BENCH_EVAL_RUNS="8x5", ZORKMCP_BENCH_ROUNDS="5", ZORKMCP_BENCH_NPX="0")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "10 tests collected" in done.stdout


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", [(8, 5, True), (32, 5, True), (64, 5, True), (64, 5, False), (64, 20, True), (256, 2, False)]),
        ("8x5", [(8, 5, True)]),
        (" 8x5 , 64X20-nomcp,2×3,", [(8, 5, True), (64, 20, False), (2, 3, True)]),
    ],
)
def test_eval_runs(
    benchlib: Any, monkeypatch: pytest.MonkeyPatch, value: str, expected: list[tuple[int, int, bool]]
) -> None:
    monkeypatch.setenv("ZORKMCP_BENCH_EVAL_RUNS", value)
    assert benchlib.eval_runs() == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("abc", f"ZORKMCP_BENCH_EVAL_RUNS='abc': 'abc' is not a run; {EXPECTED_RUNS}"),
        ("0x5", f"ZORKMCP_BENCH_EVAL_RUNS='0x5': '0x5' is not a run; {EXPECTED_RUNS}"),
        ("8x0", f"ZORKMCP_BENCH_EVAL_RUNS='8x0': '8x0' is not a run; {EXPECTED_RUNS}"),
        ("8x5,8x5-mcp", f"ZORKMCP_BENCH_EVAL_RUNS='8x5,8x5-mcp': '8x5-mcp' is not a run; {EXPECTED_RUNS}"),
        ("8x5x2", f"ZORKMCP_BENCH_EVAL_RUNS='8x5x2': '8x5x2' is not a run; {EXPECTED_RUNS}"),
        ("9" * 5000 + "x5", f"ZORKMCP_BENCH_EVAL_RUNS='{'9' * 5000}x5': '{'9' * 5000}x5' is not a run; "
         f"{EXPECTED_RUNS}"),
        (" , ", f"ZORKMCP_BENCH_EVAL_RUNS=' , ' names no run; {EXPECTED_RUNS}"),
    ],
)  # fmt: skip
def test_bad_eval_runs(benchlib: Any, monkeypatch: pytest.MonkeyPatch, value: str, message: str) -> None:
    monkeypatch.setenv("ZORKMCP_BENCH_EVAL_RUNS", value)
    with pytest.raises(benchlib.BenchSettingError) as raised:
        benchlib.check_settings()
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (
            "ZORKMCP_BENCH_ROUNDS",
            "0",
            "ZORKMCP_BENCH_ROUNDS='0': expected a whole number ≥ 1 (turns per variant: per-turn, whole-turn, "
            "remote, teardown; default 30); set it to one, or unset it",
        ),
        (
            "ZORKMCP_BENCH_SOAK_TURNS",
            "50",
            "ZORKMCP_BENCH_SOAK_TURNS='50': expected a whole number ≥ 100 (turns of the soak episode; "
            "default 2000); set it to one, or unset it",
        ),
        (
            "ZORKMCP_BENCH_ZYGOTE_SPAWNS",
            "1e3",
            "ZORKMCP_BENCH_ZYGOTE_SPAWNS='1e3': expected a whole number ≥ 1 (think server spawns per "
            "variant of the zygote section; default 200); set it to one, or unset it",
        ),
        ("ZORKMCP_BENCH_NPX", "yes", "ZORKMCP_BENCH_NPX='yes': expected 1 (on) or 0 (off)"),
        ("ZORKMCP_BENCH_QUICK", "true", "ZORKMCP_BENCH_QUICK='true': expected 1 (on) or 0 (off)"),
        (
            "ZORKMCP_BENCH_EVAL_RUN",
            "8x5",
            "ZORKMCP_BENCH_EVAL_RUN is not a benchmark setting; the settings are ZORKMCP_BENCH_CALLS, "
            "ZORKMCP_BENCH_COST_EPISODES, ZORKMCP_BENCH_EVAL_RUNS, ZORKMCP_BENCH_NPX, "
            "ZORKMCP_BENCH_QUICK, ZORKMCP_BENCH_ROUNDS, ZORKMCP_BENCH_SOAK_TURNS, "
            "ZORKMCP_BENCH_STUBBORN_ROUNDS, ZORKMCP_BENCH_ZYGOTE_SPAWNS (README, Benchmarks)",
        ),
    ],
)
def test_bad_settings(
    benchlib: Any, monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(benchlib.BenchSettingError) as raised:
        benchlib.check_settings()
    assert str(raised.value) == message


def test_settings_read_their_values_and_defaults(benchlib: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZORKMCP_BENCH_ROUNDS", " 5 ")
    monkeypatch.setenv("ZORKMCP_BENCH_NPX", "1")
    benchlib.check_settings()
    assert benchlib.setting("ZORKMCP_BENCH_ROUNDS") == 5
    assert benchlib.setting("ZORKMCP_BENCH_CALLS") == 300
    assert benchlib.setting("ZORKMCP_BENCH_SOAK_TURNS") == 2000


def test_quick_mode_lowers_the_defaults_not_what_is_set(
    benchlib: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZORKMCP_BENCH_QUICK", "1")
    monkeypatch.setenv("ZORKMCP_BENCH_CALLS", "300")
    benchlib.check_settings()
    assert benchlib.settings_used() == {
        "quick": True,
        "rounds": 5,
        "calls": 300,
        "stubborn_rounds": 1,
        "soak_turns": 500,
        "zygote_spawns": 40,
        "cost_episodes": 10,
        "eval_runs": "8x5,64x5",
        "npx": False,
    }
    assert benchlib.eval_runs() == [(8, 5, True), (64, 5, True)]


def test_whole_turn_benchmark_opens_its_episode_like_bridge(benchlib: Any) -> None:
    """``bench_play_turn._BenchBridge`` opens its episode through ``Bridge._episode`` (``_prewarm``
    set): one turn through it still works."""
    from zorkmcp.config import McpConfig, ServerConfig, Settings

    bench = importlib.import_module("bench_play_turn")
    thinking = ServerConfig(
        name="thinking", type="inprocess", module="zorkmcp.servers.thinking:create_server"
    )
    with bench._BenchBridge(
        Settings(), prewarm=True, walkthrough=["open mailbox"], servers=McpConfig(servers=(thinking,))
    ) as bridge:
        decision = bridge.get_action("West of House\nYou are standing in an open field.")
        assert decision["action"] == "open mailbox"
        assert bridge.episode is not None
