"""Section 9: CPU time per spawn of our own servers, zygote against Popen.

Two servers: the embedded ``think`` server (``python -m zorkmcp.servers.thinking``, a fresh one
every turn) and the game server (``python -m zorkmcp.game.server --game … --seed 12``, one per
episode, which opens its game before it answers; a zygote for it has imported Jericho). Each
sample is one session of the stdio transport (``open_stdio_transport``: spawn or fork, then leave
at once: stdin EOF, exit, group kill, reap). What is measured is CPU time, not wall time (on a
busy two-core machine CPU is what many concurrent episodes run out of), summed over everything
the spawn costs:

* our own process (``getrusage(RUSAGE_SELF)``: the event loop, ``fork``/``exec`` of ``Popen``,
  the zygote's socket and pipes);
* the reaped children (``getrusage(RUSAGE_CHILDREN)``: the ``Popen`` servers);
* for the zygote, its own CPU and that of the children it reaped (``/proc/<zygote>/stat`` fields
  ``utime stime cutime cstime``, in clock ticks).

The two variants alternate in blocks so that both see the same machine. The zygote's own start
(interpreter and imports; once per episode, or once per ``zorkmcp eval`` run) is measured
separately: idle zygotes opened and closed. Beside them, the game as ``zorkmcp eval`` plays it, in
its own process: CPU per in-process session (the game opened in a worker thread, the MCP handshake
over the memory transport). Nothing is asserted.

Run it alone: ``.venv/bin/python benchmarks/bench_zygote.py [SPAWNS]`` prints the figures;
``pytest benchmarks/bench_zygote.py`` adds them to the benchmark report.
"""

from __future__ import annotations

import os
import resource
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from _benchlib import quick, setting

from zorkmcp.game import PACKAGED_GAME
from zorkmcp.mcp._stdio import open_stdio_transport
from zorkmcp.mcp._zygote import Zygote, open_zygote

SPAWNS = setting("ZORKMCP_BENCH_ZYGOTE_SPAWNS")
GAME_SPAWNS = 10 if quick() else 40
"""Game server spawns of each variant (a Popen one costs about 110 ms of CPU); 10 in a quick run."""
BLOCK = 20
"""Spawns of one variant before switching to the other."""
ZYGOTE_STARTS = 5 if quick() else 20
"""Zygotes started and closed (idle) to measure what one costs; 5 in a quick run."""
THINK = ("zorkmcp.servers.thinking", ("-m", "zorkmcp.servers.thinking"))
GAME = ("zorkmcp.game.server", ("-m", "zorkmcp.game.server", "--game", str(PACKAGED_GAME), "--seed", "12"))
_TICK = os.sysconf("SC_CLK_TCK")


def _zygote_cpu(pid: int) -> float:
    """CPU seconds of the zygote and the children it reaped."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(value) for value in fields[11:15])
    return (utime + stime + cutime + cstime) / _TICK


def _self_cpu() -> float:
    """CPU seconds of this process (every thread)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    return me.ru_utime + me.ru_stime


def _children_cpu() -> float:
    """CPU seconds of this process's reaped children."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return children.ru_utime + children.ru_stime


def _own_cpu() -> float:
    return _self_cpu() + _children_cpu()


async def _session(zygote: Zygote | None, args: tuple[str, ...]) -> None:
    async with open_stdio_transport(sys.executable, args, zygote=zygote) as (_read, _write, info):
        pass
    assert info.returncode == 0, info.stderr_tail  # a failed spawn voids the benchmark
    assert (info.zygote_pid is not None) == (zygote is not None)


async def _measure(spawns: int, server: tuple[str, tuple[str, ...]]) -> dict[str, Any]:
    module, args = server
    cpu = {"popen": 0.0, "zygote": 0.0}
    ours = {"popen": 0.0, "zygote": 0.0}
    done = {"popen": 0, "zygote": 0}
    start_before = _own_cpu()
    for _ in range(ZYGOTE_STARTS):
        async with open_zygote([module]):
            pass
    zygote_start = (_own_cpu() - start_before) / ZYGOTE_STARTS
    async with open_zygote([module]) as zygote:
        for _warmup in range(3):
            await _session(None, args)
            await _session(zygote, args)
        while done["popen"] < spawns:
            for variant, use in (("popen", None), ("zygote", zygote)):
                count = min(BLOCK, spawns - done[variant])
                before, ours_before = _own_cpu() + _zygote_cpu(zygote.pid), _self_cpu()
                for _ in range(count):
                    await _session(use, args)
                cpu[variant] += _own_cpu() + _zygote_cpu(zygote.pid) - before
                ours[variant] += _self_cpu() - ours_before
                done[variant] += count
    return {
        "spawns": spawns,
        "popen_cpu_ms_per_spawn": round(cpu["popen"] / spawns * 1000, 2),
        "zygote_cpu_ms_per_spawn": round(cpu["zygote"] / spawns * 1000, 2),
        "popen_cpu_ms_in_our_process": round(ours["popen"] / spawns * 1000, 2),
        "zygote_cpu_ms_in_our_process": round(ours["zygote"] / spawns * 1000, 2),
        "zygote_start_cpu_ms": round(zygote_start * 1000, 1),
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
    }


class _Quiet:
    def emit(self, event_type: str, /, **fields: Any) -> None:
        pass

    def log(self, level: str, message: str, /) -> None:
        pass


async def _measure_inprocess(sessions: int) -> dict[str, Any]:
    """The game as ``zorkmcp eval`` plays it: opened in a worker thread, served in this process."""
    from zorkmcp.config import McpConfig, McpSettings
    from zorkmcp.episode import inprocess_game_server_config
    from zorkmcp.game.server import preload
    from zorkmcp.mcp import McpManager

    preload()

    async def session(seed: int) -> None:
        config = McpConfig(servers=(inprocess_game_server_config(PACKAGED_GAME, seed),))
        async with McpManager(config, McpSettings(), events=_Quiet()).open_episode(prewarm=False):
            pass

    for seed in range(3):
        await session(seed)
    before = _self_cpu()
    for seed in range(sessions):
        await session(seed)
    return {
        "sessions": sessions,
        "cpu_ms_per_session": round((_self_cpu() - before) / sessions * 1000, 2),
    }


def measure(spawns: int = SPAWNS, game_spawns: int = GAME_SPAWNS) -> dict[str, Any]:
    """Run both comparisons on trio (the project's runtime) and return the figures."""
    return {
        "think": anyio.run(_measure, spawns, THINK, backend="trio"),
        "game": anyio.run(_measure, game_spawns, GAME, backend="trio"),
        "game_inprocess": anyio.run(_measure_inprocess, game_spawns, backend="trio"),
    }


def test_zygote_cpu(report: Any) -> None:
    from _benchlib import Section

    began = time.perf_counter()
    figures = measure()
    section = Section(
        number=9,
        title="CPU per spawn of our own servers: zygote fork vs Popen (ms of CPU)",
        columns=["server", "spawn", "n", "CPU ms per spawn", "of which in our process"],
        rows=[
            [
                server,
                label,
                str(figures[server]["spawns"]),
                f"{figures[server][f'{key}_cpu_ms_per_spawn']:.2f}",
                f"{figures[server][f'{key}_cpu_ms_in_our_process']:.2f}",
            ]
            for server in ("think", "game")
            for key, label in (("popen", "Popen"), ("zygote", "forked by a zygote"))
        ]
        + [
            [
                "game",
                "in process (zorkmcp eval)",
                str(figures["game_inprocess"]["sessions"]),
                f"{figures['game_inprocess']['cpu_ms_per_session']:.2f}",
                f"{figures['game_inprocess']['cpu_ms_per_session']:.2f}",
            ]
        ],
        notes=[
            "think: python -m zorkmcp.servers.thinking (per_turn); game: python -m zorkmcp.game.server "
            "(per episode; it opens its game before it answers)",
            f"starting a zygote: think {figures['think']['zygote_start_cpu_ms']:.1f} ms of CPU (once per "
            f"episode or zorkmcp eval run), game {figures['game']['zygote_start_cpu_ms']:.1f} ms",
            "game in process: open the game in a worker thread, MCP handshake and tools/list over the "
            "memory transport, close (the process rows: spawn or fork, stdin EOF, exit, no handshake)",
        ],
        figures=figures,
    )
    section.seconds = time.perf_counter() - began
    report.add(section)


if __name__ == "__main__":
    result = measure(int(sys.argv[1]) if len(sys.argv) > 1 else SPAWNS)
    for server, figures in result.items():
        for key, value in figures.items():
            print(f"{server} {key}: {value}")
