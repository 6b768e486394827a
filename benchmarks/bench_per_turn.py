"""Section 1: the per-turn overhead a caller sees, per server and per way of running a turn.

Measured: turn start → tools ready, plus whatever teardown the caller waits for — the time a turn
with MCP tools costs beyond the turn's own work. Every variant runs once per round, round-robin with
the order rotated, so all see the same machine. Variants (the raw SDK ones as the seeds design them:
``stdio_client`` + ``ClientSession`` + ``initialize`` + ``list_tools`` + close, with
``env={**os.environ}``):

* ``raw SDK, asyncio.run`` — the baseline, one ``asyncio.run`` per turn;
* ``raw SDK, trio.run`` — the same code on trio;
* ``get_action() cold`` — what ``bridge.get_action()`` pays: a fresh ``trio.run`` around
  ``McpManager.open_turn()`` (our transport, process hygiene, tool table), teardown included;
* ``Bridge prewarmed`` — ``open_episode(prewarm=True)`` once in an anyio blocking portal (as
  ``bridge.Bridge`` runs it), then per turn ``open_turn(episode)`` enter → ready → exit through the
  portal. After each turn, outside the measured time, the benchmark waits until the next spare is
  ready and the used session closed (a real turn waits for its LLM far longer); the time from turn
  start until then is the "spare cycle" column: turns shorter than that find no ready spare.
* ``… on asyncio`` — the same engine code (it is written on anyio) under ``asyncio.run`` and in an
  asyncio blocking portal, for hosts that run asyncio (not for the slow servers);
* ``per_episode`` — the server runs for the whole episode; a turn borrows the session;
* ``inprocess`` — the embedded server object over the SDK's memory transport, cold ``trio.run``.

Servers: the embedded stdlib ``think`` server (``python -m zorkmcp.servers.thinking``), the same tool
on the MCP SDK's server (``--sdk``), the stdlib floor (``benchmarks/floor_server.py``), the node
sequential-thinking server (when Node.js and the package are installed), its ``npx -y`` form (only
with ``ZORKMCP_BENCH_NPX=1``: ~1 s per start), and the embedded server through whatever ``python3``
is on PATH (what the default ``mcp_config.json`` runs) when that is not ``sys.executable``.
``per_episode`` and ``inprocess`` run for the embedded server only: their cost does not depend on
the server's start-up. For servers that take about a second to start (the SDK server, npx) the
``raw SDK, trio.run`` variant is left out to keep the run under six minutes on two cores: the
transport's cost against the raw SDK under trio is measured on the fast servers, where it is a
visible fraction of the turn; on a 1–1.5 s start-up it drowns in the server's own variance.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import sys
import time
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any, TextIO

import trio
from _benchlib import MIN_ROUNDS, REPO, Report, Section, Stats, node_server, run_interleaved, setting
from anyio.from_thread import BlockingPortal, start_blocking_portal
from attrs import frozen
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.mcp import EpisodeServers, McpManager

if TYPE_CHECKING:
    from collections.abc import Callable

    from zorkmcp.mcp._prewarm import Spare

ROUNDS = setting("ZORKMCP_BENCH_ROUNDS")
WARMUP = 1
BASELINE = "raw_asyncio"
LABELS = {
    "raw_asyncio": "raw SDK, asyncio.run (baseline)",
    "raw_trio": "raw SDK, trio.run",
    "cold": "get_action() cold: trio.run + open_turn",
    "cold_asyncio": "cold on asyncio: asyncio.run + open_turn",
    "prewarmed": "Bridge prewarmed: open_turn(episode)",
    "prewarmed_asyncio": "prewarmed on asyncio: open_turn(episode)",
    "per_episode": "per_episode: borrowed session",
    "inprocess": "inprocess: trio.run + open_turn",
}
STDIO_VARIANTS = ("raw_asyncio", "raw_trio", "cold", "prewarmed")


@frozen
class Server:
    key: str
    label: str
    argv: tuple[str, ...]
    cwd: str | None = None
    embedded: bool = False
    slow: bool = False
    """Starts in about a second: ``raw SDK, trio.run`` is left out (see the module docstring)."""


def _servers() -> tuple[list[Server], list[str]]:
    py = sys.executable
    servers = [
        Server(
            "embedded", "embedded stdlib think server", (py, "-m", "zorkmcp.servers.thinking"), embedded=True
        ),
        Server(
            "sdk",
            "same tool on the MCP SDK server (--sdk)",
            (py, "-m", "zorkmcp.servers.thinking", "--sdk"),
            slow=True,
        ),
        Server(
            "floor",
            "stdlib floor (benchmarks/floor_server.py)",
            (py, str(REPO / "benchmarks" / "floor_server.py")),
        ),
    ]
    skipped: list[str] = []
    argv, prefix, why_not = node_server()
    if argv is not None:
        servers.append(Server("node", "node sequential-thinking (node dist/index.js)", tuple(argv)))
    else:
        skipped.append(f"node server skipped: {why_not}")
    npx = shutil.which("npx")
    if os.environ.get("ZORKMCP_BENCH_NPX") != "1":
        skipped.append("npx -y variant skipped: set ZORKMCP_BENCH_NPX=1 to add it (about 1 s per start)")
    elif npx is None or prefix is None:
        skipped.append(f"npx -y variant skipped: {why_not or 'npx not on PATH'}")
    else:
        package = "@modelcontextprotocol/server-sequential-thinking"
        servers.append(
            Server("npx", "node sequential-thinking via npx -y", (npx, "-y", package), cwd=prefix, slow=True)
        )
    python3 = shutil.which("python3")
    if python3 is not None and os.path.realpath(python3) != os.path.realpath(py):
        servers.append(
            Server(
                "python3",
                f"embedded server via python3 on PATH ({python3})",
                (python3, "-m", "zorkmcp.servers.thinking"),
            )
        )
    return servers, skipped


def _ms(seconds: float) -> float:
    return seconds * 1000


async def _raw_lifecycle(params: StdioServerParameters, errlog: TextIO) -> None:
    async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()


async def _cold_turn(manager: McpManager) -> None:
    async with manager.open_turn():
        pass


def _config(server: Server, **options: Any) -> McpConfig:
    return McpConfig(
        servers=(
            ServerConfig(
                name=server.key, command=server.argv[0], args=server.argv[1:], cwd=server.cwd, **options
            ),
        )
    )


class _Episode:
    """A ``bridge.Bridge``-style owner: a trio loop in a thread (anyio portal) with one open episode."""

    def __init__(
        self, stack: ExitStack, manager: McpManager, *, prewarm: bool, backend: str = "trio"
    ) -> None:
        self.manager = manager
        self.portal: BlockingPortal = stack.enter_context(start_blocking_portal(backend=backend))
        self.episode: EpisodeServers = stack.enter_context(
            self.portal.wrap_async_context_manager(manager.open_episode(prewarm=prewarm))
        )
        self.spare_cycle: list[float] = []

    async def _turn(self) -> list[Spare]:
        taken = list(self.episode.spares.values())
        async with self.manager.open_turn(self.episode):
            pass
        return taken

    async def _settle(self, taken: list[Spare]) -> None:
        for spare in taken:
            await spare.wait_closed()
        for spare in self.episode.spares.values():
            await spare.wait_ready()

    def __call__(self) -> float:
        start = time.perf_counter()
        taken = self.portal.call(self._turn)
        elapsed = time.perf_counter() - start
        if self.episode.prewarm:
            self.portal.call(self._settle, taken)
            self.spare_cycle.append(_ms(time.perf_counter() - start))
        return _ms(elapsed)


def _timed(run: Callable[[], object]) -> Callable[[], float]:
    def sample() -> float:
        start = time.perf_counter()
        run()
        return _ms(time.perf_counter() - start)

    return sample


def _variants(
    server: Server, stack: ExitStack, errlog: TextIO, settings: McpSettings
) -> tuple[dict[str, Callable[[], float]], dict[str, _Episode]]:
    params = StdioServerParameters(
        command=server.argv[0], args=list(server.argv[1:]), env={**os.environ}, cwd=server.cwd
    )
    cold = McpManager(_config(server), settings)
    variants: dict[str, Callable[[], float]] = {
        "raw_asyncio": _timed(lambda: asyncio.run(_raw_lifecycle(params, errlog))),
        "raw_trio": _timed(lambda: trio.run(_raw_lifecycle, params, errlog)),
        "cold": _timed(lambda: trio.run(_cold_turn, cold, restrict_keyboard_interrupt_to_checkpoints=True)),
    }
    episodes = {"prewarmed": _Episode(stack, McpManager(_config(server), settings), prewarm=True)}
    if server.slow:
        del variants["raw_trio"]
    else:
        on_asyncio = McpManager(_config(server), settings)
        variants["cold_asyncio"] = _timed(lambda: asyncio.run(_cold_turn(on_asyncio)))
        episodes["prewarmed_asyncio"] = _Episode(
            stack, McpManager(_config(server), settings), prewarm=True, backend="asyncio"
        )
    if server.embedded:
        shared = McpManager(_config(server, lifecycle="per_episode"), settings)
        episodes["per_episode"] = _Episode(stack, shared, prewarm=True)
        embedded = ServerConfig(
            name=server.key, type="inprocess", module="zorkmcp.servers.thinking:create_server"
        )
        inprocess = McpManager(McpConfig(servers=(embedded,)), settings)
        variants["inprocess"] = _timed(
            lambda: trio.run(_cold_turn, inprocess, restrict_keyboard_interrupt_to_checkpoints=True)
        )
    variants.update(episodes)
    return variants, episodes


def test_per_turn_overhead(report: Report) -> None:
    began = time.perf_counter()
    servers, skipped = _servers()
    settings = McpSettings()
    with ExitStack() as stack, open(os.devnull, "w") as errlog:
        every: dict[str, Callable[[], float]] = {}
        episodes: dict[str, _Episode] = {}
        for server in servers:
            variants, owned = _variants(server, stack, errlog, settings)
            every.update({f"{server.key}/{name}": run for name, run in variants.items()})
            episodes.update({f"{server.key}/{name}": episode for name, episode in owned.items()})
        samples = run_interleaved(every, ROUNDS, warmup=WARMUP)

    section = Section(
        number=1,
        title=(
            f"Per-turn visible overhead: turn start → tools ready + teardown the caller waits for "
            f"({ROUNDS} turns each, interleaved; ms)"
        ),
        columns=["server / variant", "p50", "p95", "mean", "p50 ×base", "p95 ×base", "spare cycle p50"],
    )
    figures: dict[str, Any] = {"rounds": ROUNDS, "warmup": WARMUP, "skipped": skipped, "servers": {}}
    for server in servers:
        base = Stats.of(samples[f"{server.key}/{BASELINE}"])
        section.rows.append([f"[{server.key}] {server.label}", "", "", "", "", "", ""])
        entry: dict[str, Any] = {"label": server.label, "argv": list(server.argv), "variants": {}}
        for name in LABELS:
            key = f"{server.key}/{name}"
            if key not in samples:
                continue
            stats = Stats.of(samples[key])
            data = stats.as_json(samples[key])
            cycle = ""
            if key in episodes and episodes[key].spare_cycle:
                background = Stats.of(episodes[key].spare_cycle[WARMUP:])
                data["spare_cycle"] = background.as_json()
                cycle = f"{background.p50:.0f}"
            entry["variants"][name] = data
            section.rows.append(
                [
                    f"  {LABELS[name]}",
                    f"{stats.p50:.2f}",
                    f"{stats.p95:.2f}",
                    f"{stats.mean:.2f}",
                    f"{stats.p50 / base.p50:.3f}",
                    f"{stats.p95 / base.p95:.3f}",
                    cycle,
                ]
            )
        cold, raw = samples.get(f"{server.key}/cold"), samples.get(f"{server.key}/raw_trio")
        if cold and raw:
            # Adjacent in every round (the rotation keeps the cyclic order), so the per-round ratio
            # cancels most of the machine's load swings.
            entry["paired_cold_over_raw_trio"] = round(
                statistics.median(c / r for c, r in zip(cold, raw, strict=True)), 4
            )
        figures["servers"][server.key] = entry
    section.notes = [
        *skipped,
        *(
            [f"only {ROUNDS} rounds ($ZORKMCP_BENCH_ROUNDS); the figures want {MIN_ROUNDS}"]
            if ROUNDS < MIN_ROUNDS
            else []
        ),
        "×base: against the raw SDK under asyncio.run for the same server.",
        "spare cycle: turn start → next spare ready and the used session closed (background, not "
        "visible); a turn shorter than this waits for the rest of the spare's start-up.",
    ]
    section.figures = figures
    section.seconds = time.perf_counter() - began
    report.add(section)
    assert all(len(values) == ROUNDS for values in samples.values())
