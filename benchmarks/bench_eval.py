"""``zorkmcp eval`` at scale: K concurrent episodes against a model that answers in 1 s.

For each run K × T (``ZORKMCP_BENCH_EVAL_RUNS``, default :data:`DEFAULT_RUNS`) one
``zorkmcp eval`` process plays K episodes of T turns with K at once, in the default configuration:
MCP on, the repository's ``mcp_config.json`` (a fresh ``think`` server per turn, Requirement 3),
and each episode's game in the eval process (as ``zorkmcp eval`` plays it); ``-nomcp`` runs with
``--no-mcp`` (the game the only server; not held to the targets). The model is ``latency_llm.py``
in its own process (1 s per request, one request per turn). Sampled from /proc every 0.2 s:

* achieved turns/s between the first and the last ``turn_complete``, over the ideal
  K ÷ (latency × requests per turn);
* CPU ms per turn by lifecycle: the eval process itself (with the games it plays), game server
  processes (their last sample; none unless an arm runs the game as a process), and the
  ``per_turn`` servers with the run's zygotes (what is left of all CPU the run's processes used,
  from ``getrusage(RUSAGE_CHILDREN)``);
* steady CPU ms per turn: all CPU the run's processes used between the first and the last
  ``turn_complete`` (live processes' own CPU plus the eval process's reaped children) ÷ the turns
  completed in that window. It leaves out the fixed costs that the per-lifecycle figures spread over
  only K × turns turns: the eval process's imports, the Ray-free start, the HTML report;
* RSS (and PSS, which counts shared pages once) per concurrent episode: the peak of the sum over
  every process of the run ÷ K;
* episode start: from the episode's task starting to the game's first status (``start_seconds``).

Targets (reported, never asserted): ≥ 0.9 × ideal at K = 64; ≤ 40 MB RSS per concurrent episode;
episode start ≤ 150 ms.

A second table takes the runs apart: the eval process's own CPU per episode, one episode at a time
(``eval_cost.py``, 1- and 5-turn episodes, with and without MCP), so what a start and a turn cost it.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from _benchlib import DEFAULT_EVAL_RUNS, REPO, Section, eval_runs, setting

from zorkmcp.game import PACKAGED_GAME

if TYPE_CHECKING:
    from collections.abc import Iterator

    from _benchlib import Report

DEFAULT_RUNS = DEFAULT_EVAL_RUNS
RUNS = eval_runs()
"""(K, turns, MCP on) of each run: short episodes show the cost of starting them, long ones the
steady state; ``-nomcp`` plays the same episodes with no MCP server but the game (``--no-mcp``):
the floor the engine's MCP work adds to. K = 256 shows what grows with K in the eval process (the
model's connection pool, for one)."""
LATENCY = 1.0
SAMPLE_EVERY = 0.2
_TICK = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")
GAME = PACKAGED_GAME


def _processes() -> dict[int, tuple[int, float, int, float]]:
    """Every process: PID → (parent PID, CPU seconds, RSS bytes, its reaped children's CPU seconds)."""
    table = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        table[int(entry.name)] = (
            int(fields[1]),
            (int(fields[11]) + int(fields[12])) / _TICK,
            int(fields[21]) * _PAGE,
            (int(fields[13]) + int(fields[14])) / _TICK,
        )
    return table


def _tree(root: int, table: dict[int, tuple[int, float, int, float]]) -> list[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, *_) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, ()))
    return found


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _kind(pid: int, root: int, table: dict[int, tuple[int, float, int, float]]) -> str:
    """``runner``, ``zygote``, ``game``, ``per_turn`` or ``other``.

    A server forked by a zygote shows the zygote's command line; its parent tells it apart.
    """
    if pid == root:
        return "runner"
    cmdline = _cmdline(pid)
    if b"zorkmcp.servers._zygote" in cmdline and table.get(pid, (0,))[0] == root:
        return "zygote"
    if b"zorkmcp.game.server" in cmdline:
        return "game"
    if b"zorkmcp.servers.thinking" in cmdline:
        return "per_turn"
    return "other"


def _pss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _sample_run(proc: subprocess.Popen[bytes]) -> dict[str, Any]:
    """Sample the run's processes until it exits: peak RSS/PSS sums and each process's last CPU."""
    peak_rss = peak_pss = peak_games = 0
    last_cpu: dict[int, tuple[str, float]] = {}
    timeline: list[tuple[float, float]] = []  # (time.time(), all CPU of the run so far)
    while proc.poll() is None:
        table = _processes()
        pids = [pid for pid in _tree(proc.pid, table) if pid in table]
        if proc.pid in table:
            reaped = table[proc.pid][3]
            timeline.append((time.time(), reaped + sum(table[pid][1] for pid in pids)))
        peak_rss = max(peak_rss, sum(table[pid][2] for pid in pids))
        peak_pss = max(peak_pss, sum(_pss(pid) for pid in pids))
        for pid in pids:
            kind = last_cpu[pid][0] if pid in last_cpu else _kind(pid, proc.pid, table)
            last_cpu[pid] = (kind, table[pid][1])
        peak_games = max(peak_games, sum(1 for pid in pids if last_cpu[pid][0] == "game"))
        time.sleep(SAMPLE_EVERY)
    by_kind: dict[str, float] = {}
    for kind, cpu in last_cpu.values():
        if kind in ("runner", "game"):
            by_kind[kind] = by_kind.get(kind, 0.0) + cpu
    return {
        "peak_rss": peak_rss,
        "peak_pss": peak_pss,
        "peak_games": peak_games,
        "cpu": by_kind,
        "timeline": timeline,
    }


def _project(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    pyproject = folder / "pyproject.toml"
    pyproject.write_text(
        f'[tool.zorkgpt.mcp]\nenabled = true\nconfig_file = "{REPO / "mcp_config.json"}"\n', encoding="utf-8"
    )
    return pyproject


def _turn_times(run: Path) -> list[float]:
    times = []
    for path in (run / "episodes").glob("*/seed-*.events.jsonl"):
        for line in path.read_text().splitlines():
            event = json.loads(line)
            if event["event_type"] == "turn_complete":
                times.append(event["timestamp"])
    return sorted(times)


def _steady_cpu_ms(times: list[float], timeline: list[tuple[float, float]]) -> float:
    """CPU ms per turn between the first and the last ``turn_complete`` (the samples nearest them)."""
    if len(times) < 2 or len(timeline) < 2:
        return float("nan")
    start = min(timeline, key=lambda sample: abs(sample[0] - times[0]))
    end = min(timeline, key=lambda sample: abs(sample[0] - times[-1]))
    turns = sum(1 for t in times if start[0] < t <= end[0])
    return (end[1] - start[1]) * 1000 / turns if turns else float("nan")


def _run_k(k: int, turns_each: int, port: int, folder: Path, *, mcp: bool = True) -> dict[str, Any]:
    run = folder / "run"
    command = [
        sys.executable, "-m", "zorkmcp.cli", "eval", "--game", str(GAME), "--episodes", str(k),
        "--concurrency", str(k), "--turns", str(turns_each), "--base-url", f"http://127.0.0.1:{port}/v1",
        "--model", "bench", "--out", str(run), "--quiet", "--pyproject", str(_project(folder)),
        *(() if mcp else ("--no-mcp",)),
    ]  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    with (folder / "stderr.txt").open("wb") as err:
        proc = subprocess.Popen(command, cwd=folder, stdout=subprocess.DEVNULL, stderr=err)
        sampled = _sample_run(proc)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    total_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    records = [json.loads(p.read_text()) for p in (run / "episodes").glob("*/seed-*.json")]
    turns = sum(r["turns"] for r in records)
    requests = sum(r["llm_requests"] for r in records)
    times = _turn_times(run)
    first, last = (times[0], times[-1]) if times else (0.0, 0.0)
    per_turn_requests = requests / max(turns, 1)
    ideal = k / (LATENCY * per_turn_requests)
    achieved = (turns - k) / (last - first) if last > first else float("nan")  # turns after the first wave
    starts = sorted(r["start_seconds"] * 1000 for r in records if r.get("start_seconds") is not None)
    runner, game = sampled["cpu"].get("runner", 0.0), sampled["cpu"].get("game", 0.0)
    return {
        "k": k,
        "turns_each": turns_each,
        "mcp": mcp,
        "episodes": len(records),
        "errors": sum(1 for r in records if r.get("error")),
        "turns": turns,
        "requests_per_turn": per_turn_requests,
        "ideal_turns_per_s": ideal,
        "achieved_turns_per_s": achieved,
        "ratio": achieved / ideal if turns else float("nan"),
        "cpu_ms_per_turn": {
            "runner": runner * 1000 / max(turns, 1),
            "game": game * 1000 / max(turns, 1),
            "per_turn": max(total_cpu - runner - game, 0.0) * 1000 / max(turns, 1),
            "total": total_cpu * 1000 / max(turns, 1),
            "steady": _steady_cpu_ms(times, sampled["timeline"]),
        },
        "rss_mb_per_episode": sampled["peak_rss"] / k / 2**20,
        "peak_live_episodes": sampled["peak_games"],
        "pss_mb_per_episode": sampled["peak_pss"] / k / 2**20,
        "start_ms_p50": statistics.median(starts) if starts else float("nan"),
        "start_ms_p95": starts[min(len(starts) - 1, int(0.95 * len(starts)))] if starts else float("nan"),
        "wall_s": wall,
        "exit": proc.returncode,
    }


def _row(f: dict[str, Any]) -> list[str]:
    cpu = f["cpu_ms_per_turn"]
    return [
        f"{f['k']} × {f['turns_each']}" + ("" if f["mcp"] else ", no MCP"),
        f"{f['achieved_turns_per_s']:.2f} / {f['ideal_turns_per_s']:.1f}",
        f"{f['ratio']:.2f}×",
        f"{cpu['runner']:.0f} / {cpu['game']:.0f} / {cpu['per_turn']:.0f} / {cpu['total']:.0f}",
        f"{cpu['steady']:.0f}",
        f"{f['rss_mb_per_episode']:.0f} ({f['pss_mb_per_episode']:.0f})",
        f"{f['start_ms_p50']:.0f} / {f['start_ms_p95']:.0f}",
        f"{f['wall_s']:.1f}",
        f"{f['episodes']} ({f['errors']} failed, peak {f['peak_live_episodes']} live)",
    ]


@contextmanager
def _loopback_model(latency: float) -> Iterator[int]:
    """``latency_llm.py`` in its own process (its CPU is not the run's); yields its port."""
    script = Path(__file__).with_name("latency_llm.py")
    server = subprocess.Popen([sys.executable, str(script), str(latency)], stdout=subprocess.PIPE)
    try:
        assert server.stdout is not None
        yield int(server.stdout.readline())
    finally:
        server.terminate()
        server.wait()
        if server.stdout is not None:
            server.stdout.close()


def test_eval_at_scale(report: Report, tmp_path: Path) -> None:
    began = time.perf_counter()
    section = Section(
        number=7,
        title=f"zorkmcp eval: K concurrent episodes × T turns, model latency {LATENCY:.0f} s, "
        "default configuration",
        columns=[
            "K × T", "turns/s achieved / ideal", "ratio", "CPU ms/turn runner/game/per_turn/all",
            "steady CPU ms/turn", "RSS MB/episode (PSS)", "start ms p50/p95", "wall s", "episodes",
        ],
    )  # fmt: skip
    with _loopback_model(LATENCY) as port:
        figures = [
            _run_k(k, t, port, tmp_path / f"k{k}x{t}{'' if mcp else '-nomcp'}", mcp=mcp) for k, t, mcp in RUNS
        ]
    section.rows = [_row(f) for f in figures]
    section.figures = {"runs": figures, "latency_s": LATENCY}
    section.notes = [
        "targets: ≥ 0.9 × ideal at K = 64; ≤ 40 MB RSS per concurrent episode; episode start ≤ 150 ms",
        "achieved turns/s: turns after the first wave, between the first and the last turn_complete",
        "no MCP: the same episodes with the game as their only server (--no-mcp): what the eval process "
        "costs before any MCP server of the configuration",
        "per_turn CPU: all CPU of the run's processes minus the eval process and the game servers (so it "
        "includes the run's zygotes)",
        "steady CPU: all CPU between the first and the last turn_complete ÷ the turns in between "
        "(no imports, no report)",
        "RSS per episode is the peak sum ÷ K (a forked server's RSS counts the pages it shares with its "
        "zygote again; PSS counts them once); 'peak live' counts game server processes alive at once "
        "(none: the games run in the eval process)",
    ]
    section.seconds = time.perf_counter() - began
    report.add(section)


COST_EPISODES = setting("ZORKMCP_BENCH_COST_EPISODES")
"""Episodes per configuration of :func:`test_eval_process_cpu_per_episode` (one at a time)."""


def test_eval_process_cpu_per_episode(report: Report) -> None:
    """What one episode's start and each of its turns cost the eval process, with and without MCP.

    Run by ``eval_cost.py`` in a fresh process per configuration, one episode at a time against
    ``latency_llm.py 0``: the CPU that K episodes starting at once share on one core.
    """
    began = time.perf_counter()
    section = Section(
        number=10,
        title="zorkmcp eval: the eval process's CPU per episode, one episode at a time (K = 1)",
        columns=[
            "configuration", "CPU ms / 1-turn episode", "CPU ms / 5-turn episode", "CPU ms / turn",
            "CPU ms start + end", "start ms p50",
        ],
    )  # fmt: skip
    script = Path(__file__).with_name("eval_cost.py")
    figures: dict[str, dict[int, dict[str, Any]]] = {}
    with _loopback_model(0.0) as port:
        for mode in ("nomcp", "mcp"):
            for turns in (1, 5):
                done = subprocess.run(
                    [sys.executable, str(script), str(port), str(turns), mode, str(COST_EPISODES)],
                    capture_output=True,
                    check=True,
                )
                figures.setdefault(mode, {})[turns] = json.loads(done.stdout)
    for mode, label in (("nomcp", "no MCP (the game only)"), ("mcp", "MCP (a fresh think server per turn)")):
        one, five = figures[mode][1]["cpu_ms_per_episode"], figures[mode][5]["cpu_ms_per_episode"]
        turn = (five - one) / 4
        section.rows.append(
            [label, f"{one:.1f}", f"{five:.1f}", f"{turn:.1f}", f"{one - turn:.1f}",
             f"{figures[mode][1]['start_ms_p50']:.0f}"]
        )  # fmt: skip
    section.figures = {"episodes": COST_EPISODES, "runs": figures}
    section.seconds = time.perf_counter() - began
    section.notes = [
        "CPU: the eval process's own (all its threads; not the think servers a zygote forks for it)",
        "per turn: (5-turn − 1-turn) ÷ 4; start + end: a 1-turn episode less one turn",
        "at K = 64 the first wave's 64 starts share one core (the GIL): a median start of 150 ms leaves "
        "each ≤ ~4.7 ms (150 ms ÷ 32) of the eval process's CPU, with the first turns that begin meanwhile",
    ]
    report.add(section)
