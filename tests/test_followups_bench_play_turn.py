"""The whole-turn benchmark opens its episodes with ``bridge.Bridge``'s own code, not a copy of it.

A copy of ``Bridge._episode`` in ``benchmarks/bench_play_turn.py`` fell behind an engine change and
crashed the benchmark; now it only chooses ``prewarm`` (``Bridge._prewarm``) and reads the episode
the Bridge opened. Real Bridges, a real in-process ``think`` server, the offline scripted model.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

import pytest

from bridge import Bridge
from zorkmcp.config import McpConfig, ServerConfig, Settings

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    for name in ("_benchlib", "bench_play_turn"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    return importlib.import_module("bench_play_turn")


def test_the_benchmark_bridge_has_no_episode_code_of_its_own(bench: Any) -> None:
    assert bench._BenchBridge._episode is Bridge._episode
    assert Bridge._prewarm is True  # a Bridge as users open it starts the next sessions ahead


@pytest.mark.parametrize(("prewarm", "spares"), [(True, ["thinking"]), (False, [])])
def test_the_benchmark_bridge_opens_its_episode_prewarmed_or_cold_as_asked(
    bench: Any, prewarm: bool, spares: list[str]
) -> None:
    thinking = ServerConfig(
        name="thinking", type="inprocess", module="zorkmcp.servers.thinking:create_server"
    )
    with bench._BenchBridge(
        Settings(), prewarm=prewarm, walkthrough=["open mailbox"], servers=McpConfig(servers=(thinking,))
    ) as bridge:
        assert bridge.prewarm is prewarm
        assert sorted(bridge.episode.spares) == spares
        assert bridge.get_action("West of House\nYou are standing in an open field.")["action"] == (
            "open mailbox"
        )
        bridge.settle(bridge.spares())
