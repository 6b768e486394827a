"""Section 12: a long ``bridge.Bridge`` episode holds flat memory.

One Bridge episode plays ``$ZORKMCP_BENCH_SOAK_TURNS`` turns (default 2000; 10 000 for the full soak)
with the offline scripted model, a tool call every 5 turns on an in-process think server, and the
event log written as the episode goes. The process's RSS and Python's traced heap are sampled every
``turns / 10`` turns; the figures are the growth from the first sample (after warm-up) to the last.
Nothing is asserted: a flat line is what to look for. The recorder keeps the newest 5000 events for
inspection (it plateaus after about 2000 turns); what grows after that is the think server's own
thought history (a per_episode sequential-thinking server remembers its thoughts by design).
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from _benchlib import Report, Section, setting

from bridge import Bridge
from zorkmcp.config import McpConfig, McpSettings, ServerConfig, Settings
from zorkmcp.llm import ScriptedModel
from zorkmcp.observability import LogFiles

if TYPE_CHECKING:
    from pathlib import Path

TURNS = setting("ZORKMCP_BENCH_SOAK_TURNS")
STATE = "West of House\nYou are standing in an open field west of a white house, with a boarded front door."


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")  # pragma: no cover - not Linux


def test_long_bridge_episode_memory(report: Report, tmp_path: Path) -> None:
    began = time.perf_counter()
    thinking = ServerConfig(
        name="thinking",
        type="inprocess",
        module="zorkmcp.servers.thinking:create_server",
        lifecycle="per_episode",
    )
    settings = Settings(mcp=McpSettings(enabled=True))
    model = ScriptedModel(["look"] * (TURNS + 10), tool_every=5)

    @asynccontextmanager
    async def scripted() -> Any:
        yield model

    samples: list[tuple[int, float, float, int]] = []
    every = TURNS // 10
    tracemalloc.start()
    logs = LogFiles(json_log=tmp_path / "events.jsonl", episode_log=tmp_path / "episode.log")
    with Bridge(
        settings, servers=McpConfig(servers=(thinking,)), chat_model=scripted, log_files=logs
    ) as bridge:
        for turn in range(1, TURNS + 1):
            bridge.get_action(STATE)
            if turn % every == 0:
                gc.collect()
                heap = tracemalloc.get_traced_memory()[0] / 2**20
                samples.append((turn, _rss_mb(), heap, len(bridge.recorder.recent)))
    tracemalloc.stop()
    first, last = samples[0], samples[-1]
    section = Section(
        number=8,
        title=f"Soak: one Bridge episode of {TURNS} turns (scripted model, in-process think tool)",
        columns=["after turn", "RSS MB", "traced heap MB", "recent events held"],
    )
    for turn, rss, heap, held in samples:
        section.rows.append([str(turn), f"{rss:.1f}", f"{heap:.2f}", str(held)])
    section.notes.append(
        f"growth from turn {first[0]} to {last[0]}: RSS {last[1] - first[1]:+.1f} MB, "
        f"heap {last[2] - first[2]:+.2f} MB; events written to the log as the episode goes "
        f"({(tmp_path / 'events.jsonl').stat().st_size / 2**20:.1f} MB of JSON lines)"
    )
    section.figures = {
        "turns": TURNS,
        "samples": [{"turn": t, "rss_mb": r, "heap_mb": h, "recent_events": n} for t, r, h, n in samples],
        "rss_growth_mb": round(last[1] - first[1], 2),
        "heap_growth_mb": round(last[2] - first[2], 3),
    }
    section.seconds = time.perf_counter() - began
    report.add(section)
