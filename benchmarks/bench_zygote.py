"""Section 9: CPU time per ``per_turn`` spawn of the embedded ``think`` server, zygote against Popen.

Each sample is one session of the stdio transport (``open_stdio_transport``: spawn or fork, then
leave at once: stdin EOF, exit, group kill, reap) of ``python -m zorkmcp.servers.thinking``. What
is measured is CPU time, not wall time (on a busy two-core machine CPU is what many concurrent
episodes run out of), summed over everything the spawn costs:

* our own process (``getrusage(RUSAGE_SELF)``: the event loop, ``fork``/``exec`` of ``Popen``,
  the zygote's socket and pipes);
* the reaped children (``getrusage(RUSAGE_CHILDREN)``: the ``Popen`` servers);
* for the zygote, its own CPU and that of the children it reaped (``/proc/<zygote>/stat`` fields
  ``utime stime cutime cstime``, in clock ticks).

The two variants alternate in blocks so that both see the same machine. The zygote's own start
(interpreter and imports, once per episode) is measured separately: idle zygotes opened and
closed. Nothing is asserted.

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

from zorkmcp.mcp._stdio import open_stdio_transport
from zorkmcp.mcp._zygote import Zygote, open_zygote

SPAWNS = int(os.environ.get("ZORKMCP_BENCH_ZYGOTE_SPAWNS", "200"))
BLOCK = 20
"""Spawns of one variant before switching to the other."""
ZYGOTE_STARTS = 20
"""Zygotes started and closed (idle) to measure what one costs."""
ARGS = ("-m", "zorkmcp.servers.thinking")
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


async def _session(zygote: Zygote | None) -> None:
    async with open_stdio_transport(sys.executable, ARGS, zygote=zygote) as (_read, _write, info):
        pass
    assert info.returncode == 0, info.stderr_tail  # a failed spawn voids the benchmark
    assert (info.zygote_pid is not None) == (zygote is not None)


async def _measure(spawns: int) -> dict[str, Any]:
    cpu = {"popen": 0.0, "zygote": 0.0}
    ours = {"popen": 0.0, "zygote": 0.0}
    done = {"popen": 0, "zygote": 0}
    start_before = _own_cpu()
    for _ in range(ZYGOTE_STARTS):
        async with open_zygote():
            pass
    zygote_start = (_own_cpu() - start_before) / ZYGOTE_STARTS
    async with open_zygote() as zygote:
        for _warmup in range(3):
            await _session(None)
            await _session(zygote)
        while done["popen"] < spawns:
            for variant, use in (("popen", None), ("zygote", zygote)):
                count = min(BLOCK, spawns - done[variant])
                before, ours_before = _own_cpu() + _zygote_cpu(zygote.pid), _self_cpu()
                for _ in range(count):
                    await _session(use)
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


def measure(spawns: int = SPAWNS) -> dict[str, Any]:
    """Run the comparison on trio (the project's runtime) and return the figures."""
    return anyio.run(_measure, spawns, backend="trio")


def test_zygote_cpu(report: Any) -> None:
    from _benchlib import Section

    began = time.perf_counter()
    figures = measure()
    section = Section(
        number=9,
        title="CPU per per_turn spawn of the think server: zygote fork vs Popen (ms of CPU)",
        columns=["spawn", "n", "CPU ms per spawn", "of which in our process"],
        rows=[
            [
                label,
                str(SPAWNS),
                f"{figures[f'{key}_cpu_ms_per_spawn']:.2f}",
                f"{figures[f'{key}_cpu_ms_in_our_process']:.2f}",
            ]
            for key, label in (
                ("popen", "Popen (python -m zorkmcp.servers.thinking)"),
                ("zygote", "forked by the episode's zygote"),
            )
        ],
        notes=[f"starting the zygote (once per episode): {figures['zygote_start_cpu_ms']:.1f} ms of CPU"],
        figures=figures,
    )
    section.seconds = time.perf_counter() - began
    report.add(section)


if __name__ == "__main__":
    result = measure(int(sys.argv[1]) if len(sys.argv) > 1 else SPAWNS)
    for key, value in result.items():
        print(f"{key}: {value}")
