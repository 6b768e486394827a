"""Per-turn MCP lifecycle: spawn + initialize + list_tools + one call + close (issue 2 §6).

The embedded thinking server (``python -m zorkmcp.servers.thinking``) is driven, interleaved in one
run, by:

* ``raw SDK, asyncio.run`` — the seeds' design (``stdio_client`` + ``ClientSession`` inside one
  ``asyncio.run`` per turn, ``env={**os.environ, **server.env}``): the baseline;
* ``raw SDK, trio.run`` — the same code on trio;
* ``zorkmcp open_turn, trio.run`` — ``McpManager.open_turn()`` (our stdio transport, process
  hygiene, name table, result conversion);
* ``zorkmcp inprocess, trio.run`` — the same server object over the SDK's memory transport (no
  subprocess), for reference.

Each figure is one whole sync call (``asyncio.run``/``trio.run``), as a turn of the plain
``get_action()`` path pays it. Prints p50/p95 per variant and ratios against the baseline; asserts
nothing about time. Run with ``pytest benchmarks/``.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import time
from typing import TYPE_CHECKING, Any

import trio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.mcp import McpManager

if TYPE_CHECKING:
    from collections.abc import Callable

    import pytest

ROUNDS = int(os.environ.get("ZORKMCP_BENCH_ROUNDS", "30"))
WARMUP = 2
COMMAND = sys.executable
ARGS = ["-m", "zorkmcp.servers.thinking"]
THINK = {
    "thought": "Open the mailbox first.",
    "thoughtNumber": 1,
    "totalThoughts": 1,
    "nextThoughtNeeded": False,
}
BASELINE = "raw SDK, asyncio.run"


async def _raw_sdk_turn(errlog: Any) -> None:
    params = StdioServerParameters(command=COMMAND, args=ARGS, env={**os.environ})
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        result = await session.call_tool("think", THINK)
        assert not result.is_error


def _variants(errlog: Any) -> dict[str, Callable[[], None]]:
    settings = McpSettings()
    subprocess = ServerConfig(name="thinking", command=COMMAND, args=tuple(ARGS))
    embedded = ServerConfig(
        name="thinking", type="inprocess", module="zorkmcp.servers.thinking:create_server"
    )
    stdio = McpManager(McpConfig(servers=(subprocess,)), settings)
    inprocess = McpManager(McpConfig(servers=(embedded,)), settings)

    async def zorkmcp_turn(manager: McpManager) -> None:
        async with manager.open_turn() as toolbox:
            result = await toolbox.call_tool("thinking.think", THINK)
        assert not result.is_error, result

    return {
        BASELINE: lambda: asyncio.run(_raw_sdk_turn(errlog)),
        "raw SDK, trio.run": lambda: trio.run(_raw_sdk_turn, errlog),
        "zorkmcp open_turn, trio.run": lambda: trio.run(zorkmcp_turn, stdio),
        "zorkmcp inprocess, trio.run": lambda: trio.run(zorkmcp_turn, inprocess),
    }


def _percentile(values: list[float], q: int) -> float:
    if len(values) < 2:
        return values[0]
    return statistics.quantiles(sorted(values), n=100, method="inclusive")[q - 1]


def test_per_turn_lifecycle(capsys: pytest.CaptureFixture[str]) -> None:
    with open(os.devnull, "w") as errlog:
        variants = _variants(errlog)
        names = list(variants)
        samples: dict[str, list[float]] = {name: [] for name in names}
        for round_number in range(WARMUP + ROUNDS):
            # Interleaved, with the order rotated every round so no variant always goes first.
            shift = round_number % len(names)
            for name in names[shift:] + names[:shift]:
                start = time.perf_counter()
                variants[name]()
                elapsed = time.perf_counter() - start
                if round_number >= WARMUP:
                    samples[name].append(elapsed * 1000)

    base50 = _percentile(samples[BASELINE], 50)
    base95 = _percentile(samples[BASELINE], 95)
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"Per-turn lifecycle of the thinking server, {ROUNDS} rounds each, interleaved (ms)")
    for column in ("variant", "p50", "p95", "p50 / baseline", "p95 / baseline"):
        table.add_column(column, justify="left" if column == "variant" else "right")
    for name in names:
        p50, p95 = _percentile(samples[name], 50), _percentile(samples[name], 95)
        table.add_row(name, f"{p50:.1f}", f"{p95:.1f}", f"{p50 / base50:.2f}", f"{p95 / base95:.2f}")
    with capsys.disabled():
        Console(width=110).print(table)
    assert all(len(values) == ROUNDS for values in samples.values())
