"""Section 2: what ``Toolbox.call_tool`` adds over a raw ``ClientSession.call_tool`` on the same session.

On each event loop (``trio.run``, the project's runtime, and ``asyncio.run``, an asyncio host: the
engine is written on anyio) one run opens the embedded ``think`` server twice, as a stdio subprocess
and in process, through :func:`zorkmcp.mcp.open_toolbox`; then, interleaved (order rotated every
round), the same ``think`` call goes through ``Toolbox.call_tool`` (name resolution, liveness
check, timeout scope, result conversion) and straight through the session's
``ClientSession.call_tool``. The "paired" delta is the median of per-round differences, which
cancels slow stretches of the machine.
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import TYPE_CHECKING, Any

import anyio
import trio
from _benchlib import THINK_ARGS, Report, Section, Stats, setting

from zorkmcp.config import McpSettings, ServerConfig
from zorkmcp.mcp import Toolbox, open_toolbox

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

CALLS = setting("ZORKMCP_BENCH_CALLS")
WARMUP = 20
SERVERS = {
    "stdio": ServerConfig(name="thinking", command=sys.executable, args=("-m", "zorkmcp.servers.thinking")),
    "inprocess": ServerConfig(
        name="thinking", type="inprocess", module="zorkmcp.servers.thinking:create_server"
    ),
}


def _callers(toolbox: Toolbox) -> dict[str, Callable[[], Awaitable[Any]]]:
    session = toolbox.session("thinking")
    assert session is not None

    async def through_toolbox() -> Any:
        result = await toolbox.call_tool("thinking.think", THINK_ARGS)
        assert not result.is_error, result

    async def raw() -> Any:
        result = await session.client.call_tool("think", THINK_ARGS)
        assert not result.is_error, result

    return {"raw": raw, "toolbox": through_toolbox}


async def _measure() -> dict[str, list[float]]:
    settings = McpSettings()
    samples: dict[str, list[float]] = {}
    async with (
        open_toolbox([SERVERS["stdio"]], settings) as stdio,
        open_toolbox([SERVERS["inprocess"]], settings) as inprocess,
    ):
        callers = {
            f"{transport}/{name}": call
            for transport, toolbox in (("stdio", stdio), ("inprocess", inprocess))
            for name, call in _callers(toolbox).items()
        }
        names = list(callers)
        samples = {name: [] for name in names}
        for number in range(WARMUP + CALLS):
            shift = number % len(names)
            for name in names[shift:] + names[:shift]:
                start = time.perf_counter()
                await callers[name]()
                elapsed = (time.perf_counter() - start) * 1000
                if number >= WARMUP:
                    samples[name].append(elapsed)
    return samples


BACKENDS = ("trio", "asyncio")


def test_tool_call_overhead(report: Report) -> None:
    began = time.perf_counter()
    by_backend = {"trio": trio.run(_measure), "asyncio": anyio.run(_measure, backend="asyncio")}
    section = Section(
        number=2,
        title=f"Tool-call overhead: Toolbox.call_tool vs ClientSession.call_tool, same open session "
        f"({CALLS} calls each, interleaved; ms)",
        columns=[
            "loop / transport",
            "raw p50",
            "raw p95",
            "Toolbox p50",
            "Toolbox p95",
            "Δ p50",
            "Δ mean",
            "Δ paired p50",
        ],
    )
    figures: dict[str, Any] = {"calls": CALLS, "warmup": WARMUP, "transports": {}}
    for backend, transport in ((b, t) for b in BACKENDS for t in SERVERS):
        samples = by_backend[backend]
        raw, wrapped = samples[f"{transport}/raw"], samples[f"{transport}/toolbox"]
        raw_stats, wrapped_stats = Stats.of(raw), Stats.of(wrapped)
        paired = statistics.median(w - r for w, r in zip(wrapped, raw, strict=True))
        delta, delta_mean = wrapped_stats.p50 - raw_stats.p50, wrapped_stats.mean - raw_stats.mean
        figures["transports"][f"{backend}/{transport}"] = {
            "raw": raw_stats.as_json(raw),
            "toolbox": wrapped_stats.as_json(wrapped),
            "delta_p50_ms": round(delta, 4),
            "delta_mean_ms": round(delta_mean, 4),
            "paired_delta_p50_ms": round(paired, 4),
        }
        section.rows.append(
            [
                f"{backend} / {transport}",
                f"{raw_stats.p50:.3f}",
                f"{raw_stats.p95:.3f}",
                f"{wrapped_stats.p50:.3f}",
                f"{wrapped_stats.p95:.3f}",
                f"{delta:+.3f}",
                f"{delta_mean:+.3f}",
                f"{paired:+.3f}",
            ]
        )
    section.notes = ["Δ = Toolbox − raw; paired = median of the per-round differences."]
    section.figures = figures
    section.seconds = time.perf_counter() - began
    report.add(section)
