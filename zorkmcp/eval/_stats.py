"""Statistics of an eval run: per-arm means with standard errors, and intervals between arms.

Two 95% intervals for the difference of two arms' mean scores:

- Welch's t interval (every scored episode of each arm, as two independent samples): the
  Welch–Satterthwaite degrees of freedom and the Student t quantile;
- the paired t interval over the seeds both arms scored. Every arm plays the same seeds, and the
  seed decides much of a score (the thief, the troll's fight): the differences seed by seed leave
  that out, so the paired interval is the narrower, truer answer to "did the tools help" whenever
  the seed matters; Welch's stays for arms that do not share seeds.

The t quantile is found by bisection on the t distribution's CDF (the regularized incomplete beta
function, evaluated by its continued fraction). No scipy.

An interval needs an estimate of the spread: at least two values per arm (two pairs), and a spread
that is not 0. Samples with no spread (Zork's scores are coarse: two seeds whose differences are
both 10 are common) give no interval at all (``None``, ``null`` in ``summary.json``), never the
point ``[10, 10]``: a t interval of zero width is no 95% interval, and reading it as one would
declare a winner from two seeds.

Failed episodes (records with ``error``) are counted per arm but left out of every score figure.
"""

from __future__ import annotations

import csv
import io
import math
import statistics
from collections import Counter
from typing import TYPE_CHECKING, Any

from .._controls import visible_controls
from .._outputs import write_atomically
from ._record import checked_records, is_count, is_int, is_strings

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence
    from pathlib import Path

__all__ = [
    "CSV_COLUMNS",
    "comparison_reading",
    "csv_cell",
    "group_by_arm",
    "is_count",
    "is_int",
    "is_strings",
    "mean",
    "one_line",
    "paired_interval",
    "percent",
    "standard_error",
    "summarize",
    "t_quantile",
    "welch_interval",
    "write_summary_csv",
]

CSV_COLUMNS = (
    "arm",
    "seed",
    "score",
    "max_score",
    "moves",
    "turns",
    "victory",
    "game_over",
    "deaths",
    "tool_calls",
    "tool_errors",
    "tool_timeouts",
    "llm_requests",
    "prompt_tokens",
    "completion_tokens",
    "wall_seconds",
    "runner",
    "pid",
    "host",
    "model",
    "scripted",
    "error",
    "parse_errors",
    "deadlines",
    "servers_disabled",
    "llm_retries",
    "context_trims",
)
"""The columns of ``summary.csv``, one row per episode, in this order (blank: the record lacks it,
or does not know it: ``null`` tokens). ``servers_disabled`` is how many of the arm's MCP servers
the episode disabled; ``llm_retries`` how many model requests failed and were tried again;
``context_trims`` on how many turns a request did not fit the model's context window, so that the
final answer was asked for without the turn's tool calls (``llm_context_exceeded``). Columns
added later go last, so that a column keeps its place from one zorkmcp to the next."""


def mean(values: Sequence[float]) -> float | None:
    """The arithmetic mean, or ``None`` for no values.

    Whole numbers (scores, moves) are summed as integers and divided once, so the mean of equal
    scores is that score, whatever its size (eleven of 10**15 + 7 averaged 10**15 + 6.9 through
    floating point); other values are summed exactly (``math.fsum``).
    """
    if not values:
        return None
    if _whole(values):
        return sum(int(v) for v in values) / len(values)
    return math.fsum(values) / len(values)


def one_line(text: str, limit: int) -> str:
    """``text`` on one line (whitespace collapsed), cut at a word past ``limit`` characters, with ``…``.

    For an episode's error where a run shows it (the per-episode line, the report): its end says what
    to do, so it is not cut mid-word, and the record keeps it whole.
    """
    flat = " ".join(str(text).split())
    if len(flat) <= limit:
        return flat
    cut = flat[:limit].rsplit(" ", 1)[0] if " " in flat[:limit] else flat[: limit - 1]
    return cut + "…"


def percent(share: Any) -> str:
    """A share as people read it: ``40%``, with as many decimals as it takes for a share above 0 not
    to read 0% nor one below 1 100% (one win in 250 episodes is ``0.4%``, not ``0%``); ``–`` for none."""
    if not isinstance(share, int | float) or isinstance(share, bool) or not math.isfinite(share):
        return "–"
    for digits in range(4):
        text = f"{share:.{digits}%}"
        if (float(text[:-1]) != 0 or share == 0) and (float(text[:-1]) != 100 or share >= 1):
            return text
    return "<0.001%" if share < 0.5 else ">99.999%"


def _whole(values: Sequence[float]) -> bool:
    return all(isinstance(v, int) or (isinstance(v, float) and v.is_integer()) for v in values)


def standard_error(values: Sequence[float]) -> float | None:
    """Sample standard deviation over ``sqrt(n)``; ``None`` below two values.

    Computed exactly and rounded once (whole numbers, as scores and their differences are, in
    integers; others as fractions): equal values have a standard error of exactly 0, whatever their
    size. Through floating point, eleven scores of 10**15 + 7 had one of 0.04, which gave their
    comparisons a 95% interval where there is no spread to estimate one from.
    """
    n = len(values)
    if n < 2:
        return None
    if _whole(values):
        whole = [int(v) for v in values]
        total = sum(whole)
        spread = n * sum(v * v for v in whole) - total * total  # n × the sum of squared deviations
        return math.sqrt(spread / (n * n * (n - 1)))
    return math.sqrt(statistics.variance(values) / n)


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    # Lentz's method for the continued fraction of the incomplete beta function.
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 500):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return result


def _regularized_beta(a: float, b: float, x: float) -> float:
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_continued_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_continued_fraction(b, a, 1.0 - x) / b


def _t_cdf(t: float, df: float) -> float:
    tail = 0.5 * _regularized_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t distribution with ``df`` degrees of freedom (> 0, may be fractional).

    Raises:
        ValueError: ``p`` outside (0, 1) or ``df`` not positive.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if not df > 0.0:
        raise ValueError(f"degrees of freedom must be > 0, got {df}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while _t_cdf(hi, df) < p:
        lo, hi = hi, hi * 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if _t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return (lo + hi) / 2.0


def welch_interval(
    a: Sequence[float], b: Sequence[float], level: float = 0.95
) -> tuple[float, float, float] | None:
    """``(mean(a) - mean(b), low, high)``: Welch's t interval for the difference of two means.

    ``None`` when either sample has fewer than two values, or when neither has any spread (every
    score of each arm the same): the spread cannot be estimated, so there is no 95% interval.
    """
    if len(a) < 2 or len(b) < 2:
        return None
    se_a, se_b = standard_error(a), standard_error(b)
    assert se_a is not None
    assert se_b is not None
    mean_a, mean_b = mean(a), mean(b)
    assert mean_a is not None
    assert mean_b is not None
    diff = mean_a - mean_b
    va, vb = se_a**2, se_b**2
    if va + vb == 0.0:
        return None
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = t_quantile(0.5 + level / 2.0, df) * math.sqrt(va + vb)
    return diff, diff - half, diff + half


def paired_interval(differences: Sequence[float], level: float = 0.95) -> tuple[float, float, float] | None:
    """``(mean, low, high)``: the paired t interval for the mean of per-seed differences ``a - b``.

    ``None`` below two pairs, and when the differences have no spread (all equal): the spread
    cannot be estimated, so there is no 95% interval.
    """
    n = len(differences)
    se = standard_error(differences)
    if se is None or se == 0.0:
        return None
    diff = mean(differences)
    assert diff is not None
    half = t_quantile(0.5 + level / 2.0, n - 1) * se
    return diff, diff - half, diff + half


def _scored_by_seed(records: Iterable[dict[str, Any]]) -> dict[Any, float]:
    return {
        r["seed"]: float(r["score"])
        for r in records
        if not r.get("error") and isinstance(r.get("score"), int | float) and r.get("seed") is not None
    }


def _paired(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> dict[str, Any]:
    scores_a, scores_b = _scored_by_seed(a), _scored_by_seed(b)
    differences = [scores_a[seed] - scores_b[seed] for seed in scores_a if seed in scores_b]
    interval = paired_interval(differences)
    return {
        "pairs": len(differences),
        "diff_mean_score": mean(differences),
        "se": standard_error(differences),
        "ci95": [interval[1], interval[2]] if interval is not None else None,
        "method": "paired t interval over the seeds both arms scored",
    }


def _numbers(records: Iterable[dict[str, Any]], key: str) -> list[float]:
    return [float(r[key]) for r in records if isinstance(r.get(key), int | float)]


def _known_total(records: list[dict[str, Any]], key: str) -> int | None:
    """The sum of a count over the records that know it; ``None`` when none does (not 0)."""
    known = [r[key] for r in records if is_count(r.get(key))]
    return sum(known) if known else None


def _servers_disabled(records: list[dict[str, Any]]) -> dict[str, int] | None:
    """Per MCP server, the episodes that disabled it, most first; ``None`` when no record counts them."""
    known = [r["servers_disabled"] for r in records if is_strings(r.get("servers_disabled"))]
    if not known:
        return None
    counts = Counter(name for names in known for name in set(names))
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def _counted(records: Iterable[dict[str, Any]], key: str) -> tuple[int | None, float | None]:
    """The total of a per-turn count over the records that have it, and per turn played in them.

    Records of an older zorkmcp lack the count: they are left out of both, as unknown, not as 0;
    ``(None, None)`` when no record has it. Failed episodes count: their turns were played.
    """
    known = [r for r in records if isinstance(r.get(key), int) and not isinstance(r.get(key), bool)]
    if not known:
        return None, None
    total = sum(int(r[key]) for r in known)
    turns = sum(_numbers(known, "turns"))
    return total, total / turns if turns else None


def _arm_summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    ok = [r for r in records if not r.get("error")]
    scores = _numbers(ok, "score")
    turns = sum(_numbers(ok, "turns"))
    known = [r["servers"] for r in records if isinstance(r.get("servers"), list)]  # older records lack it
    parse_errors, parse_error_rate = _counted(records, "parse_errors")
    deadlines, deadline_rate = _counted(records, "deadlines")
    context_trims, context_trim_rate = _counted(records, "context_trims")
    return {
        "models": sorted({str(r["model"]) for r in records if r.get("model")}),
        "servers": sorted({str(name) for names in known for name in names}) if known else None,
        "episodes": len(records),
        "seeds": [r.get("seed") for r in records],
        "failed": len(records) - len(ok),
        "scored": len(scores),
        "mean_score": mean(scores),
        "se_score": standard_error(scores),
        "min_score": min(scores) if scores else None,
        "max_score": max(scores) if scores else None,
        "game_max_score": max(_numbers(ok, "max_score"), default=None),
        "win_rate": mean([1.0 if r.get("victory") else 0.0 for r in ok]),
        "mean_moves": mean(_numbers(ok, "moves")),
        "mean_turns": mean(_numbers(ok, "turns")),
        "mean_deaths": mean(_numbers(ok, "deaths")),
        "tool_calls_per_turn": sum(_numbers(ok, "tool_calls")) / turns if turns else None,
        "tool_errors": int(sum(_numbers(records, "tool_errors"))),
        "tool_timeouts": int(sum(_numbers(records, "tool_timeouts"))),
        "tools": _tool_summary(ok),
        "parse_errors": parse_errors,
        "parse_error_rate": parse_error_rate,
        "deadlines": deadlines,
        "deadline_rate": deadline_rate,
        "context_trims": context_trims,
        "context_trim_rate": context_trim_rate,
        "llm_requests": int(sum(_numbers(records, "llm_requests"))),
        "llm_retries": _known_total(records, "llm_retries"),
        "prompt_tokens": _known_total(records, "prompt_tokens"),
        "completion_tokens": _known_total(records, "completion_tokens"),
        "mean_wall_seconds": mean(_numbers(ok, "wall_seconds")),
        "servers_disabled": _servers_disabled(records),
    }


def _tool_summary(ok: list[dict[str, Any]]) -> dict[str, dict[str, Any]] | None:
    """Per tool, over the episodes that did not fail: how much the model called it and how it went.

    Most called first. ``calls_per_turn`` divides by every turn of those episodes, ``episodes``
    counts those that called it at all, ``mean_ms`` is a call's mean duration. Records of older
    versions, without ``tools``, are left out (``None`` when every record is one).
    """
    with_tools = [r for r in ok if isinstance(r.get("tools"), dict)]
    if not with_tools:
        return None
    known = [r["tools"] for r in with_tools]
    turns = sum(_numbers(with_tools, "turns"))
    totals: dict[str, dict[str, Any]] = {}
    for use in known:
        for name, tool in use.items():
            if not isinstance(tool, dict):
                continue
            total = totals.setdefault(
                name, {"calls": 0, "episodes": 0, "errors": 0, "timeouts": 0, "skipped": 0, "seconds": 0.0}
            )
            total["episodes"] += 1
            for key in ("calls", "errors", "timeouts", "skipped", "seconds"):
                value = tool.get(key)
                if isinstance(value, int | float) and not isinstance(value, bool):
                    total[key] += value
    ordered = sorted(totals.items(), key=lambda item: (-item[1]["calls"], item[0]))
    return {
        name: {
            "calls": int(total["calls"]),
            "calls_per_turn": total["calls"] / turns if turns else None,
            "episodes": total["episodes"],
            "errors": int(total["errors"]),
            "timeouts": int(total["timeouts"]),
            "skipped": int(total["skipped"]),
            "mean_ms": total["seconds"] * 1000 / total["calls"] if total["calls"] else None,
        }
        for name, total in ordered
    }


def group_by_arm(episodes: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Episode records by arm, arms in the order they first appear."""
    arms: dict[str, list[dict[str, Any]]] = {}
    for record in episodes:
        arms.setdefault(str(record.get("arm", "")), []).append(record)
    return arms


def summarize(episodes: Iterable[dict[str, Any]], *, plan: dict[str, Any] | None = None) -> dict[str, Any]:
    """``summary.json``'s object: per-arm figures and one comparison per pair of arms.

    Arms come in the order they first appear in ``episodes``; each comparison's ``a`` is the earlier
    arm. Each arm's ``seeds`` lists the seeds of its episodes, in order: the episodes the summary
    covers, which a report of its run folder draws. Failed episodes (with ``error``) count in
    ``episodes``, ``seeds`` and ``failed``, in the token and tool-error totals and in the parse errors,
    deadlines and context trims (and their rates per turn played), never in score, win-rate, moves or
    tool-calls-per-turn figures. ``parse_errors``/``deadlines``/``context_trims`` and their rates are
    ``null`` when no record of the arm counts them (an older zorkmcp's), and leave such records out
    otherwise. ``se_score`` is ``null`` below two scored episodes. Each comparison has the standard
    error of the difference (``se``, ``null`` below two scored episodes per arm) and Welch's ``ci95``,
    and ``paired`` the paired interval over the seeds both arms scored (its ``se`` ``null`` below two
    pairs). A ``ci95`` is ``null`` where its ``se`` is ``null`` or ``0``: no spread was seen, so no 95%
    interval can be estimated (see the module docstring).

    ``prompt_tokens``/``completion_tokens`` are the sums over the records that know them, ``null``
    when none does (an endpoint that sends no ``usage``), not 0. ``servers_disabled``: per MCP
    server, the episodes that disabled it after it failed to start twice (start, retry once, else
    disable); ``{}`` when none did, ``null`` when no record of the arm counts them (an older
    zorkmcp's). ``plan`` (a run's arms, ``first_seed`` and ``last_seed``), when given, is kept as
    ``plan``: which episode files a resume of the run plays.
    """
    arms = group_by_arm(checked_records(episodes))
    scores = {name: _numbers([r for r in rs if not r.get("error")], "score") for name, rs in arms.items()}
    names = list(arms)
    comparisons = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            interval = welch_interval(scores[a], scores[b])
            ma, mb = mean(scores[a]), mean(scores[b])
            se_a, se_b = standard_error(scores[a]), standard_error(scores[b])
            comparisons.append(
                {
                    "a": a,
                    "b": b,
                    "diff_mean_score": ma - mb if ma is not None and mb is not None else None,
                    "se": math.hypot(se_a, se_b) if se_a is not None and se_b is not None else None,
                    "ci95": [interval[1], interval[2]] if interval is not None else None,
                    "method": "Welch t interval (Welch–Satterthwaite df)",
                    "paired": _paired(arms[a], arms[b]),
                }
            )
    summary = {
        "arms": {name: _arm_summary(records) for name, records in arms.items()},
        "comparisons": comparisons,
        "note": "failed episodes (with an error) are counted but excluded from score statistics",
    }
    if plan is not None:
        summary["plan"] = plan
    return summary


def comparison_reading(comparison: dict[str, Any]) -> str:
    """What a comparison of ``summary.json`` says, in words: which arm scores higher, if either.

    It reads the paired interval when there is one (the arms share at least two scored seeds whose
    differences vary), else Welch's: an interval above 0 says ``a`` scores higher, below 0 that
    ``b`` does, and one that holds 0 shows no difference at 95%. Where no spread was seen (the
    differences seed by seed all equal, or every score of each arm the same) there is no 95%
    interval, and the reading says so rather than declare a winner: ``no spread in the differences
    (+10.00 on each of 2 seeds): cannot estimate a 95% interval, so the data cannot tell``, or, when
    Welch's interval stands, its reading followed by ``; no spread in the differences (…): no paired
    interval``. A zero-width interval (a ``summary.json`` of an older zorkmcp) is read as none.
    """
    a, b = comparison.get("a"), comparison.get("b")
    paired = comparison.get("paired") or {}
    pairs: int = paired["pairs"] if isinstance(paired.get("pairs"), int) else 0
    flat_pairs = pairs >= 2 and (paired.get("se") == 0 or _zero_width(paired.get("ci95")))
    welch = comparison.get("ci95")
    flat_arms = comparison.get("se") == 0 or _zero_width(welch)
    paired_ci, welch_ci = _interval(paired.get("ci95")), _interval(welch)
    if paired_ci is not None:
        return _verdict(a, b, paired_ci, "paired")
    if welch_ci is not None:
        reading = _verdict(a, b, welch_ci, "Welch's")
        if flat_pairs:
            reading += f"; {_no_spread(paired.get('diff_mean_score'), pairs)}: no paired interval"
        return reading
    if flat_pairs:
        spread = _no_spread(paired.get("diff_mean_score"), pairs)
        return f"{spread}: cannot estimate a 95% interval, so the data cannot tell"
    if flat_arms:
        return "no spread in either arm's scores: cannot estimate a 95% interval, so the data cannot tell"
    return "too few scored episodes to tell (an interval needs two per arm)"


def _interval(value: Any) -> tuple[float, float] | None:
    """A ``ci95`` that is a 95% interval: two numbers, low below high; else ``None``."""
    if not isinstance(value, list | tuple) or len(value) != 2:
        return None
    lo, hi = value
    if not all(isinstance(x, int | float) and not isinstance(x, bool) for x in (lo, hi)) or not lo < hi:
        return None
    return float(lo), float(hi)


def _zero_width(value: Any) -> bool:
    return isinstance(value, list | tuple) and len(value) == 2 and value[0] == value[1]


def _no_spread(difference: Any, pairs: int) -> str:
    """``no spread in the differences (+10.00 on each of 2 seeds)``."""
    if isinstance(difference, int | float) and not isinstance(difference, bool):
        shown = f"{difference:+.2f}" if difference else "0.00"
    else:
        shown = "the same"
    return f"no spread in the differences ({shown} on each of {pairs} seeds)"


def _verdict(a: Any, b: Any, interval: tuple[float, float], which: str) -> str:
    lo, hi = interval
    if lo > 0:
        return f"{a} scores higher ({which} 95% interval above 0)"
    if hi < 0:
        return f"{b} scores higher ({which} 95% interval below 0)"
    return f"no difference shown ({which} 95% interval holds 0)"


def csv_cell(value: Any) -> Any:
    """A value as ``summary.csv`` holds it: text with its control characters visible, else as it is.

    Text from outside (a provider's error message, a model's name) may hold control characters:
    ``cat summary.csv`` would send an ``ESC [31m`` to the terminal. Each control character but
    newline and tab is written as its Python escape (``\\x1b``, as ``report.html`` shows it,
    :func:`~zorkmcp._controls.visible_controls`); the csv module quotes the rest (commas, quotes,
    newlines), so a printable text reads back as it was.
    """
    return visible_controls(value) if isinstance(value, str) else value


def write_summary_csv(episodes: Iterable[dict[str, Any]], path: Path) -> None:
    """``summary.csv``: one row per episode, the columns of :data:`CSV_COLUMNS` (blank: unknown).

    A count the record does not know (``null`` tokens, an older record's missing fields) is blank;
    ``servers_disabled`` is the number of servers the episode disabled. Text is written as
    :func:`csv_cell` says: its control characters visible (``\\x1b``), so ``cat summary.csv`` shows
    a provider's ``ESC [31m`` and does not obey it.
    """
    text = io.StringIO(newline="")
    writer = csv.DictWriter(text, fieldnames=CSV_COLUMNS, extrasaction="ignore")
    writer.writeheader()
    for record in checked_records(episodes):
        row = {key: csv_cell(record.get(key, "")) for key in CSV_COLUMNS}
        disabled = record.get("servers_disabled")
        row["servers_disabled"] = len(disabled) if isinstance(disabled, list) and is_strings(disabled) else ""
        writer.writerow(row)
    write_atomically(path, text.getvalue())
