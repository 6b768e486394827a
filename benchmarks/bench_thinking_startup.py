"""Spawn + initialize + list_tools + close of the embedded ``think`` server, two ways, side by side.

* ``stdlib``: ``python -m zorkmcp.servers.thinking`` (the stdlib JSON-RPC loop, the default);
* ``sdk``: the same tool from :func:`zorkmcp.servers.thinking.create_server` served over the
  SDK's ``stdio_server`` (what an SDK-based server costs per spawn).

Run: ``python benchmarks/bench_thinking_startup.py [N]``. Prints p50/p95 in ms and the ratio;
asserts nothing (benchmarks are not tests).
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from typing import TextIO

import trio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

__all__ = ["main"]

_SDK_SERVER = """
import anyio
from mcp.server.stdio import stdio_server
from zorkmcp.servers.thinking import create_server

async def main():
    server = create_server()
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())

anyio.run(main)
"""

VARIANTS = {
    "stdlib": StdioServerParameters(command=sys.executable, args=["-m", "zorkmcp.servers.thinking"]),
    "sdk": StdioServerParameters(command=sys.executable, args=["-c", _SDK_SERVER]),
}


async def lifecycle(params: StdioServerParameters, errlog: TextIO) -> float:
    start = time.perf_counter()
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        assert [t.name for t in tools.tools] == ["think"]
    return (time.perf_counter() - start) * 1000


def percentile(samples: list[float], q: float) -> float:
    return statistics.quantiles(samples, n=100, method="inclusive")[int(q) - 1]


async def run(n: int) -> None:
    results: dict[str, list[float]] = {name: [] for name in VARIANTS}
    with tempfile.TemporaryFile("w") as errlog:
        for _ in range(n):  # interleaved, so both variants see the same machine load
            for name, params in VARIANTS.items():
                results[name].append(await lifecycle(params, errlog))
    p50 = {name: statistics.median(samples) for name, samples in results.items()}
    for name, samples in results.items():
        print(f"{name:>6}: p50 {p50[name]:7.1f} ms   p95 {percentile(samples, 95):7.1f} ms   (n={n})")
    print(f" ratio: sdk / stdlib = {p50['sdk'] / p50['stdlib']:.1f}x")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    trio.run(run, n)


if __name__ == "__main__":
    main()
