"""Shared pieces of the benchmarks: the interleaved runner, statistics, the report and its JSON file.

Every ``bench_*.py`` test measures its variants side by side in one run (round-robin, the order
rotated every round so no variant always runs first), adds one :class:`Section` to the session's
:class:`Report`, and asserts nothing about time. ``conftest.py`` prints every section and the
target table at the end of the run (also without ``-s``) and writes ``benchmarks/results/``.
"""

from __future__ import annotations

import datetime as _dt
import io
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attrs import define, field, frozen

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

__all__ = [
    "DEFAULT_EVAL_RUNS",
    "MIN_ROUNDS",
    "QUICK_EVAL_RUNS",
    "REPO",
    "RESULTS_DIR",
    "SETTINGS",
    "THINK_ARGS",
    "BenchSettingError",
    "Report",
    "Section",
    "Stats",
    "check_settings",
    "eval_runs",
    "evaluate_targets",
    "machine_info",
    "node_server",
    "quick",
    "run_interleaved",
    "setting",
    "settings_used",
]

REPO = Path(__file__).resolve().parents[1]
RESULTS_DIR = REPO / "benchmarks" / "results"
MIN_ROUNDS = 30
"""Rounds per variant for the per-turn and whole-turn sections (fewer make p95 meaningless)."""
THINK_ARGS: dict[str, Any] = {
    "thought": "Open the mailbox first.",
    "thoughtNumber": 1,
    "totalThoughts": 1,
    "nextThoughtNeeded": False,
}
NODE_PACKAGE = "@modelcontextprotocol/server-sequential-thinking"
_NODE_PREFIXES = (REPO / "benchmarks" / "node", REPO / "tests" / "node")


SETTINGS: dict[str, tuple[int, int, int, str]] = {
    "ZORKMCP_BENCH_ROUNDS": (MIN_ROUNDS, 5, 1, "turns per variant: per-turn, whole-turn, remote, teardown"),
    "ZORKMCP_BENCH_CALLS": (300, 100, 1, "calls per variant: tool call, sync boundary, remote"),
    "ZORKMCP_BENCH_STUBBORN_ROUNDS": (5, 1, 1, "rounds of the stubborn teardown, 4-6 s each"),
    "ZORKMCP_BENCH_SOAK_TURNS": (2000, 500, 100, "turns of the soak episode"),
    "ZORKMCP_BENCH_ZYGOTE_SPAWNS": (200, 40, 1, "think server spawns per variant of the zygote section"),
    "ZORKMCP_BENCH_COST_EPISODES": (40, 10, 1, "episodes per configuration of the eval-cost section"),
}
"""The numeric ``ZORKMCP_BENCH_*`` variables: name → (default, quick default, least value, what it counts)."""
DEFAULT_EVAL_RUNS = "8x5,32x5,64x5,64x5-nomcp,64x20,256x2-nomcp"
"""``bench_eval.py``'s runs unless ``ZORKMCP_BENCH_EVAL_RUNS`` names others."""
QUICK_EVAL_RUNS = "8x5,64x5"
"""``bench_eval.py``'s runs with ``ZORKMCP_BENCH_QUICK=1``."""
_FLAGS = ("ZORKMCP_BENCH_NPX", "ZORKMCP_BENCH_QUICK")
"""Variables that are ``1`` (on) or ``0`` / unset (off)."""


def quick() -> bool:
    """``ZORKMCP_BENCH_QUICK=1``: every count's quick default (about 1½ minutes in all; rough figures)."""
    return os.environ.get("ZORKMCP_BENCH_QUICK", "").strip() == "1"


class BenchSettingError(ValueError):
    """A ``ZORKMCP_BENCH_*`` variable the benchmarks cannot use; the message is one line saying why."""


def setting(variable: str) -> int:
    """The value of a numeric ``ZORKMCP_BENCH_*`` variable (:data:`SETTINGS`), or its default when unset.

    Raises:
        BenchSettingError: the value is not a whole number, or is below the variable's least value.
    """
    full, fast, least, what = SETTINGS[variable]
    default = fast if quick() else full
    value = os.environ.get(variable, "").strip()
    if not value:
        return default
    try:
        number = int(value)
    except ValueError:
        number = None
    if number is None or number < least:
        raise BenchSettingError(
            f"{variable}={value!r}: expected a whole number ≥ {least} ({what}; default {default}); "
            f"set it to one, or unset it"
        )
    return number


def eval_runs() -> list[tuple[int, int, bool]]:
    """``bench_eval.py``'s runs: (K, turns, MCP on) from ``ZORKMCP_BENCH_EVAL_RUNS`` or the default.

    The variable holds runs separated by commas, each ``KxT`` (K episodes at once, T turns each) or
    ``KxT-nomcp`` (the same with ``--no-mcp``), K and T ≥ 1; ``X`` and ``×`` also separate K and T.

    Raises:
        BenchSettingError: a run is not of that form, or the variable names no run.
    """
    variable = "ZORKMCP_BENCH_EVAL_RUNS"
    raw = os.environ.get(variable, "")
    default = QUICK_EVAL_RUNS if quick() else DEFAULT_EVAL_RUNS
    text = raw.strip() or default
    expected = (
        "expected runs KxT separated by commas, such as 8x5,64x20 (K episodes at once, T turns each, "
        f"both ≥ 1; KxT-nomcp for --no-mcp); unset it for the default {default}"
    )
    runs: list[tuple[int, int, bool]] = []
    for part in text.split(","):
        run = part.strip()
        if not run:
            continue
        body = run.lower().replace("×", "x")
        mcp = not body.endswith("-nomcp")
        k, cross, t = body.removesuffix("-nomcp").partition("x")
        try:
            episodes, turns = (int(n) if n.strip().isdecimal() else 0 for n in (k, t))
        except ValueError:  # more digits than int() reads
            episodes = turns = 0
        if not cross or episodes < 1 or turns < 1:
            raise BenchSettingError(f"{variable}={raw!r}: {run!r} is not a run; {expected}")
        runs.append((episodes, turns, mcp))
    if not runs:
        raise BenchSettingError(f"{variable}={raw!r} names no run; {expected}")
    return runs


def check_settings() -> None:
    """Check every ``ZORKMCP_BENCH_*`` variable before anything runs.

    Raises:
        BenchSettingError: the first variable that is unknown (a misspelt name would be ignored) or
            whose value cannot be used.
    """
    known = {*SETTINGS, *_FLAGS, "ZORKMCP_BENCH_EVAL_RUNS"}
    for name in sorted(os.environ):
        if name.startswith("ZORKMCP_BENCH_") and name not in known:
            raise BenchSettingError(
                f"{name} is not a benchmark setting; the settings are {', '.join(sorted(known))} "
                "(README, Benchmarks)"
            )
    for name in _FLAGS:
        value = os.environ.get(name, "").strip()
        if value not in ("", "0", "1"):
            raise BenchSettingError(f"{name}={value!r}: expected 1 (on) or 0 (off)")
    for name in SETTINGS:
        setting(name)
    eval_runs()


def settings_used() -> dict[str, Any]:
    """What this run counted: every setting's value (for the report and ``latest.json``)."""
    return {
        "quick": quick(),
        **{name.removeprefix("ZORKMCP_BENCH_").lower(): setting(name) for name in SETTINGS},
        "eval_runs": os.environ.get("ZORKMCP_BENCH_EVAL_RUNS", "").strip()
        or (QUICK_EVAL_RUNS if quick() else DEFAULT_EVAL_RUNS),
        "npx": os.environ.get("ZORKMCP_BENCH_NPX", "").strip() == "1",
    }


@frozen
class Stats:
    """Summary of one series, in milliseconds."""

    n: int
    p50: float
    p95: float
    mean: float
    min: float
    max: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Stats:
        """Summarise ``values`` (ms); p95 is the inclusive 95th percentile."""
        if not values:
            nan = float("nan")
            return cls(0, nan, nan, nan, nan, nan)
        ordered = sorted(values)
        p95 = statistics.quantiles(ordered, n=20, method="inclusive")[18] if len(ordered) > 1 else ordered[0]
        return cls(
            len(ordered), statistics.median(ordered), p95, statistics.fmean(ordered), ordered[0], ordered[-1]
        )

    def as_json(self, samples: Sequence[float] | None = None) -> dict[str, Any]:
        data: dict[str, Any] = {
            "n": self.n,
            "p50_ms": round(self.p50, 4),
            "p95_ms": round(self.p95, 4),
            "mean_ms": round(self.mean, 4),
            "min_ms": round(self.min, 4),
            "max_ms": round(self.max, 4),
        }
        if samples is not None:
            data["samples_ms"] = [round(v, 4) for v in samples]
        return data


def run_interleaved(
    variants: Mapping[str, Callable[[], float]],
    rounds: int,
    *,
    warmup: int | Mapping[str, int] = 1,
    limit: Mapping[str, int] | None = None,
) -> dict[str, list[float]]:
    """Run every variant once per round, round-robin, rotating the order each round.

    Args:
        variants: name → a callable that runs one sample and returns its measured interval in ms
            (it may do unmeasured work, such as waiting for background start-ups, after measuring).
        rounds: measured rounds.
        warmup: unmeasured samples first (for every variant, or per variant; default 1).
        limit: name → at most this many measured samples (the variant sits out later rounds).

    Returns:
        name → the measured samples (ms), in round order.
    """
    names = list(variants)
    samples: dict[str, list[float]] = {name: [] for name in names}
    warm = {name: warmup if isinstance(warmup, int) else warmup.get(name, 1) for name in names}
    wanted = {name: min(rounds, (limit or {}).get(name, rounds)) for name in names}
    runs = {name: 0 for name in names}
    number = 0
    while any(runs[name] < warm[name] + wanted[name] for name in names):
        shift = number % len(names)
        number += 1
        for name in names[shift:] + names[:shift]:
            if runs[name] >= warm[name] + wanted[name]:
                continue
            value = variants[name]()
            if runs[name] >= warm[name]:
                samples[name].append(value)
            runs[name] += 1
    return samples


@define
class Section:
    """One table of the report, with its figures for the JSON file.

    Attributes:
        number: position in the report.
        title: the table's title.
        columns: column headers; the first one is left-aligned, the rest right-aligned.
        rows: table rows (already formatted).
        notes: lines printed under the table (skips and their reasons, how to read it).
        figures: everything measured, for ``latest.json``.
    """

    number: int
    title: str
    columns: list[str]
    rows: list[list[str]] = field(factory=list)
    notes: list[str] = field(factory=list)
    figures: dict[str, Any] = field(factory=dict)
    seconds: float = 0.0


@define
class Report:
    """Everything one ``pytest benchmarks/`` run measured."""

    started: _dt.datetime = field(factory=lambda: _dt.datetime.now(_dt.UTC))
    load_at_start: tuple[float, float, float] = field(factory=os.getloadavg)
    sections: dict[int, Section] = field(factory=dict)

    def add(self, section: Section) -> None:
        if section.number in self.sections:  # a benchmark's mistake: one section would hide the other
            raise ValueError(f"two report sections numbered {section.number}: {section.title!r}")
        self.sections[section.number] = section

    def figures(self, number: int) -> dict[str, Any] | None:
        section = self.sections.get(number)
        return section.figures if section is not None else None

    def targets(self) -> list[dict[str, Any]]:
        """The targets against what this run measured (never asserted)."""
        return evaluate_targets(self)

    def headline(self) -> str | None:
        """The figure a reader looks for first: the per-turn overhead a caller sees (section 1)."""
        per_turn = self.figures(1)
        server = per_turn["servers"].get("embedded") if per_turn is not None else None
        if server is None:
            return None
        variants = server["variants"]
        labels = {
            "prewarmed": "Bridge prewarmed",
            "cold": "get_action() cold",
            "raw_asyncio": "raw SDK under asyncio.run",
        }
        return "Per-turn overhead a caller sees (section 1, embedded think server, p50): " + "; ".join(
            f"{label} {variants[name]['p50_ms']:.2f} ms" for name, label in labels.items() if name in variants
        )

    def render(self, width: int = 132) -> str:
        """Every section and the target table as plain text."""
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        buffer = io.StringIO()
        console = Console(file=buffer, width=width, color_system=None, force_terminal=False)
        for number in sorted(self.sections):
            section = self.sections[number]
            title = f"{number}. {section.title}"
            table = Table(title=Text(title), title_justify="left", min_width=min(len(title) + 2, width))
            for index, column in enumerate(section.columns):
                table.add_column(Text(column), justify="left" if index == 0 else "right", overflow="fold")
            for row in section.rows:
                table.add_row(*(Text(cell) for cell in row))
            console.print(table)
            for note in section.notes:
                console.print(Text(f"  {note}"), soft_wrap=True)
            console.print(Text(f"  (section took {section.seconds:.0f} s)"))
            console.print()
        targets = self.targets()
        if targets:
            table = Table(title=Text("Targets: reported, never asserted"), title_justify="left")
            for column in ("target", "goal", "measured", "met"):
                table.add_column(column, justify="left" if column in ("target", "goal") else "right")
            for target in targets:
                met = {True: "yes", False: "NO", None: "n/a"}[target["met"]]
                table.add_row(
                    *(Text(cell) for cell in (target["target"], target["goal"], target["measured"], met))
                )
            console.print(table)
        headline = self.headline()
        if headline is not None:
            console.print()
            console.print(Text(headline), soft_wrap=True)
        if quick():
            console.print(
                Text(
                    "Quick run (ZORKMCP_BENCH_QUICK=1): fewer rounds and runs than the figures want; "
                    "unset it for the full run"
                ),
                soft_wrap=True,
            )
        return buffer.getvalue()

    def as_json(self) -> dict[str, Any]:
        finished = _dt.datetime.now(_dt.UTC)
        return {
            "machine": machine_info(self.load_at_start),
            "started": self.started.isoformat(timespec="seconds"),
            "finished": finished.isoformat(timespec="seconds"),
            "duration_s": round((finished - self.started).total_seconds(), 1),
            "sections": {
                str(number): {
                    "title": section.title,
                    "notes": section.notes,
                    "seconds": round(section.seconds, 1),
                    "figures": section.figures,
                }
                for number, section in sorted(self.sections.items())
            },
            "settings": settings_used(),
            "targets": self.targets(),
            "headline": self.headline(),
        }

    def write(self, directory: Path = RESULTS_DIR) -> Path:
        """Write ``latest.json`` and a timestamped copy; return the path of the copy."""
        directory.mkdir(parents=True, exist_ok=True)
        text = json.dumps(self.as_json(), indent=1, default=str) + "\n"
        stamp = self.started.strftime("%Y%m%dT%H%M%SZ")
        copy = directory / f"bench-{stamp}.json"
        copy.write_text(text)
        (directory / "latest.json").write_text(text)
        return copy


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


def _node_version() -> str | None:
    node = shutil.which("node")
    if node is None:
        return None
    try:
        done = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=10, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip()


def machine_info(load_at_start: tuple[float, float, float] | None = None) -> dict[str, Any]:
    """CPU, cores, Python, library versions, kernel, load, time and git commit of this run."""
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "python_executable": sys.executable,
        "versions": {
            package: _version(package)
            for package in ("trio", "anyio", "mcp", "pydantic", "httpx2", "zorkmcp")
        },
        "node": _node_version(),
        "kernel": platform.release(),
        "platform": platform.platform(),
        "load_average_start": list(load_at_start) if load_at_start else None,
        "load_average_end": list(os.getloadavg()),
        "timestamp": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": bool(status) if status is not None else None,
    }


def node_server() -> tuple[list[str] | None, str | None, str]:
    """How to run the node sequential-thinking server here.

    Returns:
        ``(argv, prefix, why_not)``: the command line and the npm prefix it was installed into, or
        ``None`` and the reason it cannot run.
    """
    node = shutil.which("node")
    if node is None:
        return None, None, "Node.js is not installed (node not on PATH)"
    for prefix in _NODE_PREFIXES:
        entry = prefix / "node_modules" / NODE_PACKAGE / "dist" / "index.js"
        if entry.is_file():
            return [node, str(entry)], str(prefix), ""
    places = " or ".join(str(p.relative_to(REPO)) for p in _NODE_PREFIXES)
    return (
        None,
        None,
        f"{NODE_PACKAGE} is not installed in {places} (npm install --prefix benchmarks/node {NODE_PACKAGE})",
    )


def _ms(value: float) -> str:
    return f"{value:.2f} ms" if value < 100 else f"{value:.0f} ms"


def evaluate_targets(report: Report) -> list[dict[str, Any]]:
    """The targets against this run's figures (``met`` is ``None`` when not measured)."""
    rows: list[dict[str, Any]] = []

    def add(target: str, goal: str, measured: str, met: bool | None) -> None:
        rows.append({"target": target, "goal": goal, "measured": measured, "met": met})

    per_turn = report.figures(1)
    if per_turn is not None:
        for key, server in per_turn["servers"].items():
            variants = server["variants"]
            if "prewarmed" in variants:
                p50 = variants["prewarmed"]["p50_ms"]
                add(f"visible per-turn overhead, Bridge prewarmed, p50 [{key}]", "≤ 5 ms", _ms(p50), p50 <= 5)
        for key, server in per_turn["servers"].items():
            variants = server["variants"]
            if "cold" in variants and "raw_trio" in variants:
                cold, raw = variants["cold"]["p50_ms"], variants["raw_trio"]["p50_ms"]
                ratio = cold / raw
                add(
                    f"cold get_action() / raw SDK under trio, p50 [{key}]",
                    "≤ 1.02×",
                    f"{ratio:.3f}× ({_ms(cold)} vs {_ms(raw)}; paired "
                    f"{server.get('paired_cold_over_raw_trio', float('nan')):.3f}×)",
                    ratio <= 1.02,
                )
    calls = report.figures(2)
    if calls is not None:
        for key, transport in calls["transports"].items():
            delta = transport["delta_p50_ms"]
            add(
                f"tool-call overhead over ClientSession.call_tool, p50 [{key}]",
                "≤ 0.1 ms",
                f"{delta:+.3f} ms (paired {transport['paired_delta_p50_ms']:+.3f} ms)",
                delta <= 0.1,
            )
    teardown = report.figures(4)
    if teardown is not None and "zorkmcp_stubborn" in teardown["variants"]:
        stubborn = teardown["variants"]["zorkmcp_stubborn"]
        worst = stubborn["max_ms"]
        add(
            "stubborn server teardown, zorkmcp, worst of the rounds",
            "≤ 2.5 s",
            f"{worst / 1000:.2f} s (p50 {stubborn['p50_ms'] / 1000:.2f} s, n={stubborn['n']})",
            worst <= 2500,
        )
    _remote_targets(report.figures(6), add)
    _eval_targets(report.figures(7), add)
    return rows


def _remote_targets(remote: dict[str, Any] | None, add: Callable[[str, str, str, bool | None], None]) -> None:
    if remote is None:
        return
    prewarmed = remote["per_turn_prewarmed"]["p50_ms"]
    add("remote per_turn server, prewarmed, p50", "≤ 5 ms", _ms(prewarmed), prewarmed <= 5)
    delta = remote["call_toolbox"]["p50_ms"] - remote["call_raw"]["p50_ms"]
    paired = remote["call_paired_delta_p50_ms"]
    add(
        "remote tool-call overhead over ClientSession.call_tool, p50",
        "≤ 0.1 ms",
        f"{delta:+.3f} ms (paired {paired:+.3f} ms)",
        delta <= 0.1,
    )


def _eval_targets(runs: dict[str, Any] | None, add: Callable[[str, str, str, bool | None], None]) -> None:
    if runs is None:
        return
    for run in runs["runs"]:
        if not run.get("mcp", True):  # the --no-mcp floor: the targets are the default configuration's
            continue
        k = f"{run['k']} × {run.get('turns_each', '?')}"
        add(f"eval turns/s over ideal [K={k}]", "≥ 0.9×", f"{run['ratio']:.2f}×", run["ratio"] >= 0.9)
        rss = run["rss_mb_per_episode"]
        add(f"eval RSS per concurrent episode [K={k}]", "≤ 40 MB", f"{rss:.0f} MB", rss <= 40)
        start = run["start_ms_p50"]
        add(f"eval episode start, p50 [K={k}]", "≤ 150 ms", f"{start:.0f} ms", start <= 150)
