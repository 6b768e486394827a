"""Section 13: remote (Streamable HTTP) servers — per-turn overhead cold and prewarmed, tool-call overhead.

The server is the MCP SDK's own server under uvicorn on 127.0.0.1 (tests/servers/remote.py, in a
thread with its own asyncio loop), reached through the SDK's ``streamable_http_client``. Measured in
one ``trio.run``:

* ``per_turn cold`` — ``open_toolbox`` enter → tools ready → exit: a fresh connection pool, connect,
  ``initialize``, ``tools/list`` and the closing ``DELETE``, as a turn without an episode pays;
* ``per_turn prewarmed`` — ``McpManager.open_turn(episode)`` enter → ready → exit under
  ``open_episode(prewarm=True)``; outside the measured time the benchmark waits until the next spare
  is ready (a real turn waits for its LLM far longer);
* tool call — ``Toolbox.call_tool`` against the session's own ``ClientSession.call_tool`` on the same
  open session, interleaved; "paired" is the median of per-round differences.

Targets (reported, never asserted): prewarmed ≤ 5 ms p50; tool call ≤ +0.1 ms p50 over the raw SDK.
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any

import trio
from _benchlib import REPO, Report, Section, Stats, setting

from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.mcp import McpManager, open_toolbox

sys.path.insert(0, str(REPO / "tests"))
from servers.remote import SDK_HTTP_WARNINGS, serve_remote

pytestmark = SDK_HTTP_WARNINGS

TURNS = setting("ZORKMCP_BENCH_ROUNDS")
CALLS = setting("ZORKMCP_BENCH_CALLS")
WARMUP = 3
ARGS = {"text": "west of house"}


async def _cold(server: ServerConfig, settings: McpSettings) -> list[float]:
    samples: list[float] = []
    for number in range(WARMUP + TURNS):
        start = time.perf_counter()
        async with open_toolbox([server], settings) as toolbox:
            assert toolbox.tools
        if number >= WARMUP:
            samples.append((time.perf_counter() - start) * 1000)
    return samples


async def _prewarmed(server: ServerConfig, settings: McpSettings) -> list[float]:
    manager = McpManager(McpConfig(servers=(server,)), settings)
    samples: list[float] = []
    async with manager.open_episode(prewarm=True) as episode:
        for number in range(WARMUP + TURNS):
            spare = episode.spares.get(server.name)
            if spare is not None:
                await spare.wait_ready()  # outside the measured time: the LLM's share of a turn
            start = time.perf_counter()
            async with manager.open_turn(episode) as toolbox:
                assert toolbox.tools
            if number >= WARMUP:
                samples.append((time.perf_counter() - start) * 1000)
    return samples


async def _calls(server: ServerConfig, settings: McpSettings) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"raw": [], "toolbox": []}
    async with open_toolbox([server], settings) as toolbox:
        session = toolbox.session(server.name)
        assert session is not None
        for number in range(WARMUP + CALLS):
            order = ("raw", "toolbox") if number % 2 == 0 else ("toolbox", "raw")
            for name in order:
                start = time.perf_counter()
                if name == "raw":
                    raw = await session.client.call_tool("echo", ARGS)
                    assert not raw.is_error
                else:
                    result = await toolbox.call_tool("web.echo", ARGS)
                    assert not result.is_error
                if number >= WARMUP:
                    samples[name].append((time.perf_counter() - start) * 1000)
    return samples


async def _measure(url: str) -> dict[str, Any]:
    settings = McpSettings()
    server = ServerConfig(name="web", type="http", url=url)
    return {
        "cold": await _cold(server, settings),
        "prewarmed": await _prewarmed(server, settings),
        "calls": await _calls(server, settings),
    }


def _row(name: str, stats: Stats) -> list[str]:
    return [name, f"{stats.p50:.3f}", f"{stats.p95:.3f}", f"{stats.mean:.3f}"]


def test_remote_overhead(report: Report) -> None:
    began = time.perf_counter()
    with serve_remote() as remote:
        measured = trio.run(_measure, remote.url("/mcp"))
    raw, wrapped = measured["calls"]["raw"], measured["calls"]["toolbox"]
    stats = {
        "per_turn cold": Stats.of(measured["cold"]),
        "per_turn prewarmed": Stats.of(measured["prewarmed"]),
        "call: raw ClientSession": Stats.of(raw),
        "call: Toolbox.call_tool": Stats.of(wrapped),
    }
    paired = statistics.median(w - r for w, r in zip(wrapped, raw, strict=True))
    section = Section(
        number=6,
        title=f"Remote server over Streamable HTTP on 127.0.0.1 ({TURNS} turns, {CALLS} calls each; ms)",
        columns=["what", "p50", "p95", "mean"],
        rows=[_row(name, value) for name, value in stats.items()],
    )
    delta = stats["call: Toolbox.call_tool"].p50 - stats["call: raw ClientSession"].p50
    section.notes = [
        f"Tool call Δ p50 = {delta:+.3f} ms, paired Δ p50 = {paired:+.3f} ms (target ≤ +0.1 ms); "
        "prewarmed target ≤ 5 ms p50.",
    ]
    section.figures = {
        "turns": TURNS,
        "calls": CALLS,
        "per_turn_cold": stats["per_turn cold"].as_json(measured["cold"]),
        "per_turn_prewarmed": stats["per_turn prewarmed"].as_json(measured["prewarmed"]),
        "call_raw": stats["call: raw ClientSession"].as_json(raw),
        "call_toolbox": stats["call: Toolbox.call_tool"].as_json(wrapped),
        "call_paired_delta_p50_ms": round(paired, 4),
    }
    section.seconds = time.perf_counter() - began
    report.add(section)
