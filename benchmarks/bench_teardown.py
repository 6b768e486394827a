"""Section 4: teardown of a well-behaved and of a stubborn server, our transport against the SDK's.

The server is ``tests/servers/misbehaving.py``: mode ``ok`` exits on stdin EOF; mode ``stubborn``
ignores both stdin EOF and SIGTERM (only SIGKILL ends it). Each sample starts the server,
initializes and lists tools, then measures only the time to leave the context:

* ``zorkmcp`` — :func:`zorkmcp.mcp.open_toolbox` (our stdio transport: EOF → 1.5 s → SIGTERM to the
  group → 0.5 s → SIGKILL, pidfd exit watch, group and session-token sweep);
* ``SDK`` — ``mcp.client.stdio.stdio_client`` + ``ClientSession`` (EOF → 2 s → SIGTERM → 2 s →
  SIGKILL, 10 ms exit polling).

Both under ``trio.run``. Well-behaved: 30 rounds; stubborn: 5 rounds (4–6 s each with the SDK).
Interleaved, order rotated every round.
"""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING, Any, TextIO

import trio
from _benchlib import REPO, Report, Section, Stats, run_interleaved, setting
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from zorkmcp.config import McpSettings, ServerConfig
from zorkmcp.mcp import open_toolbox

if TYPE_CHECKING:
    from collections.abc import Callable

ROUNDS = setting("ZORKMCP_BENCH_ROUNDS")
STUBBORN_ROUNDS = setting("ZORKMCP_BENCH_STUBBORN_ROUNDS")
SERVER = REPO / "tests" / "servers" / "misbehaving.py"
LABELS = {
    "zorkmcp_ok": "zorkmcp transport, well-behaved",
    "sdk_ok": "SDK stdio_client, well-behaved",
    "zorkmcp_stubborn": "zorkmcp transport, stubborn",
    "sdk_stubborn": "SDK stdio_client, stubborn",
}


async def _zorkmcp(mode: str, escalations: list[str]) -> float:
    server = ServerConfig(name="misbehaving", command=sys.executable, args=(str(SERVER), mode))
    async with open_toolbox([server], McpSettings()) as toolbox:
        session = toolbox.session("misbehaving")
        assert session is not None
        assert session.process is not None
        start = time.perf_counter()
    escalations.append(session.process.escalation)
    return (time.perf_counter() - start) * 1000


async def _sdk(mode: str, errlog: TextIO) -> float:
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER), mode], env={**os.environ})
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        start = time.perf_counter()
    return (time.perf_counter() - start) * 1000


def test_teardown(report: Report) -> None:
    began = time.perf_counter()
    escalations: dict[str, list[str]] = {"ok": [], "stubborn": []}
    with open(os.devnull, "w") as errlog:
        variants: dict[str, Callable[[], float]] = {
            "zorkmcp_ok": lambda: trio.run(_zorkmcp, "ok", escalations["ok"]),
            "sdk_ok": lambda: trio.run(_sdk, "ok", errlog),
            "zorkmcp_stubborn": lambda: trio.run(_zorkmcp, "stubborn", escalations["stubborn"]),
            "sdk_stubborn": lambda: trio.run(_sdk, "stubborn", errlog),
        }
        samples = run_interleaved(
            variants,
            ROUNDS,
            warmup={"zorkmcp_ok": 1, "sdk_ok": 1, "zorkmcp_stubborn": 0, "sdk_stubborn": 0},
            limit={"zorkmcp_stubborn": STUBBORN_ROUNDS, "sdk_stubborn": STUBBORN_ROUNDS},
        )
    section = Section(
        number=4,
        title="Teardown: leaving the session's context after initialize + list_tools (ms)",
        columns=["transport, server", "n", "p50", "p95", "mean", "max"],
    )
    figures: dict[str, Any] = {"variants": {}, "zorkmcp_escalation": {}}
    for name, label in LABELS.items():
        stats = Stats.of(samples[name])
        figures["variants"][name] = {"label": label, **stats.as_json(samples[name])}
        section.rows.append(
            [
                label,
                str(stats.n),
                f"{stats.p50:.1f}",
                f"{stats.p95:.1f}",
                f"{stats.mean:.1f}",
                f"{stats.max:.1f}",
            ]
        )
    for mode, seen in escalations.items():
        figures["zorkmcp_escalation"][mode] = {kind: seen.count(kind) for kind in sorted(set(seen))}
    section.notes = [
        "zorkmcp escalation seen: "
        + "; ".join(
            f"{mode}: " + ", ".join(f"{kind} ×{n}" for kind, n in counts.items())
            for mode, counts in figures["zorkmcp_escalation"].items()
        ),
    ]
    section.figures = figures
    section.seconds = time.perf_counter() - began
    report.add(section)
