"""Self-contained HTML reports: one for an eval run, one for a single episode's event log.

Each page is one file: figures are PNGs inline as base64 ``data:`` URIs, the style sheet is inline,
nothing is fetched. Every piece of text from a log (game text, model output, tool arguments and
results) is HTML-escaped, its control characters written as visible escapes (``\\x1b``; a browser
shows them as boxes, or not at all). matplotlib (Agg backend) is imported inside the drawing functions, so
importing this module stays cheap; every figure is closed after use.
"""

from __future__ import annotations

import base64
import html
import io
import math
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._controls import visible_controls
from .._outputs import check_apart, write_atomically
from ..errors import ConfigError
from ._record import is_int
from ._results import (
    EpisodeEvents,
    EventLog,
    ReportInputError,
    RunEpisodes,
    error_kind,
    find_episode_events,
    read_event_log,
    read_run,
    replayed_from,
)
from ._spec import _RUN_FILES, RUN_LOCK
from ._stats import comparison_reading, group_by_arm, one_line, percent, summarize, write_summary_csv

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "ReportInputError",
    "check_page",
    "draw_episode",
    "find_episode_events",
    "page_inputs",
    "pick_episode",
    "render_episode_report",
    "render_eval_report",
    "summarize",
    "write_summary_csv",
]

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2330;margin:0;
 background:#f6f7f9}
main{max-width:1180px;margin:0 auto;padding:24px 28px 48px;
 overflow-wrap:break-word}  /* a long name in a line of text */
h1{font-size:22px;margin:0 0 4px}
h2{font-size:17px;margin:28px 0 10px;border-bottom:1px solid #dde1e8;padding-bottom:4px}
.sub{color:#5b6474;margin:0 0 12px}.note{color:#5b6474;font-size:13px}.warn{color:#9a3412;font-weight:600}
.cards{display:flex;flex-wrap:wrap;gap:10px;margin:14px 0}
.card{background:#fff;border:1px solid #dde1e8;border-radius:8px;padding:8px 14px;min-width:110px}
.card b{display:block;font-size:18px}.card span{color:#5b6474;font-size:12px}
figure{margin:0;background:#fff;border:1px solid #dde1e8;border-radius:8px;padding:8px}
figure img{max-width:100%;height:auto;display:block;margin:0 auto}  /* shrunk on a phone, never blown up */
.grid{display:grid;grid-template-columns:1fr 1fr;gap:12px}
@media (max-width:700px){.grid{grid-template-columns:1fr}}
.stack figure+figure{margin-top:12px}
.wide{overflow-x:auto}.wide+.wide{margin-top:12px}  /* a table wider than a phone scrolls in its box */
table{border-collapse:collapse;width:100%;background:#fff;font-size:13px}
th,td{border:1px solid #dde1e8;padding:5px 8px;text-align:left;vertical-align:top}
th{background:#eef1f5}td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td pre{margin:0;white-space:pre-wrap;overflow-wrap:break-word;
 font:12px/1.4 ui-monospace,Menlo,Consolas,monospace}
.tool{font:12px ui-monospace,Menlo,Consolas,monospace;margin:2px 0}
.tool span,td.nw{white-space:nowrap}
.ok{color:#166534}.error,.timeout,.invalid_arguments{color:#b91c1c}.skipped{color:#6b7280}
.obj{color:#1d4ed8;font-size:12px}
td.long{min-width:12em;overflow-wrap:anywhere}
table.errors td:last-child,.card b,p.err{overflow-wrap:anywhere}p.err{white-space:pre-wrap;font-weight:400}
.card{max-width:100%;box-sizing:border-box}details>summary{cursor:pointer;margin:10px 0 6px}
td.why{color:#5b6474;text-align:right}table.pairs td:last-child{min-width:16em}
"""


def escape(text: str) -> str:
    """``text`` HTML-escaped, its control characters (ESC, C1, …) visible as ``\\x1b``."""
    return html.escape(visible_controls(text))


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.{digits}f}" if math.isfinite(value) else "–"
    return escape(str(value))


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{_CSS}</style></head>"
        f"<body><main>{body}</main></body></html>\n"
    )


def _img(fig: Figure, alt: str) -> str:
    import warnings

    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    try:
        with warnings.catch_warnings():
            # an arm's name in a script the font lacks (a folder named by hand, a library caller's
            # records) is drawn as boxes; the tables show it, and the terminal gets no warning per glyph
            warnings.filterwarnings("ignore", message="Glyph .* missing from font", category=UserWarning)
            fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    finally:
        plt.close(fig)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<figure><img alt="{escape(alt)}" src="data:image/png;base64,{data}"></figure>'


def _figure(width: float = 5.6, height: float = 3.2, *, fitted: bool = False) -> tuple[Figure, Axes]:
    """A figure of ``width`` × ``height`` inches with one plain axes; ``fitted``: its labels (long arm
    names) are kept inside that size, the axes made smaller, so the page shows it at its own size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(width, height), layout="constrained" if fitted else None)
    ax.grid(True, alpha=0.3)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return fig, ax


def _whole_numbers(axis: Any) -> None:
    """Ticks only at whole numbers on ``axis`` (turns, scores): a 2-turn episode has no turn 1.5, and
    a one-turn episode, or scores all equal, one tick at that number rather than 14.2, 14.4, …"""
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))


def _plain(text: str) -> str:
    """``text`` as matplotlib draws it literally: a ``$`` would start its math mode (``a $\\frac$``
    raised a ValueError, two ``$`` set what is between them in italics)."""
    return text.replace("$", r"\$")


def _write(path: Path, text: str) -> Path:
    try:
        write_atomically(path, text)
    except OSError as exc:
        raise ReportInputError(f"{path}: cannot be written ({exc.strerror or exc})") from exc
    return path


_EPISODE_PAGE = re.compile(r"[^/]+/seed-[0-9]+\.html")
"""A page the report writes in a run's ``episodes/``: ``<arm>/seed-<N>.html``, beside that episode's log."""


def page_inputs(*, events: Path | None = None, run_dir: Path | None = None) -> list[tuple[str, Path]]:
    """The files a page drawn from ``events`` (an event log) or ``run_dir`` (an eval run) must not replace.

    The event log itself; and of the run (``run_dir``, or the run whose ``episodes/<arm>/`` holds
    ``events``), every file but the pages the report writes there (``report.html``,
    ``episodes/<arm>/seed-<N>.html``): ``summary.json``, ``summary.csv`` and the run's lock, there
    or not yet, and each file under ``episodes/`` (records, event logs). Each as ``(what, path)``
    for :func:`~zorkmcp._outputs.check_apart`.
    """
    if run_dir is None and events is not None and events.parent.parent.name == "episodes":
        run_dir = events.parent.parent.parent
    inputs: list[tuple[str, Path]] = []
    if run_dir is not None:
        inputs += [
            (f"the run's {name}", run_dir / name) for name in ("summary.json", "summary.csv", RUN_LOCK)
        ]
        root = run_dir / "episodes"
        for folder, _, names in os.walk(root):  # links to folders are not followed
            for name in names:
                path = Path(folder, name)
                inside = path.relative_to(root).as_posix()
                if not _EPISODE_PAGE.fullmatch(inside):
                    inputs.append((f"the run's episodes/{inside}", path))
    if events is not None:
        inputs.append(("the event log drawn", events))
    return inputs


def check_page(page: Path, inputs: list[tuple[str, Path]], *, named: str, remedy: str) -> None:
    """``page`` replaces none of ``inputs`` (:func:`page_inputs`): checked before anything is written.

    Raises:
        ReportInputError: ``{named}: that is {what}, which the page would replace; {remedy}``.
    """
    which = [(f"{what}, which the page would replace", path) for what, path in inputs]
    try:
        check_apart([("the page", named, page, remedy)], which)
    except ConfigError as exc:
        raise ReportInputError(str(exc)) from None


def _cards(items: list[tuple[str, str]]) -> str:
    return (
        '<div class="cards">'
        + "".join(f"<div class='card'><b>{v}</b><span>{k}</span></div>" for k, v in items)
        + "</div>"
    )


# --- eval run -----------------------------------------------------------------------------------


_LONG_NAME = 24
"""An arm's name up to this long stays on one line in a table; a longer one (they run to 64
characters) may wrap, after a ``_`` or ``.``, at a ``-``, else anywhere: on one line, twenty such
names made each comparison's reading a column of three words and the page 59,000 pixels long."""


def _breakable(name: str) -> str:
    """``name`` escaped, with a chance to wrap after each ``_`` and ``.``."""
    return re.sub(r"([_.])", r"\1<wbr>", escape(name))


def _arm_cell(name: str, short: str = " class=nw") -> str:
    """A table cell of an arm's ``name``: ``<td{short}>`` when it is short, else one that may wrap."""
    if len(name) <= _LONG_NAME:
        return f"<td{short}>{escape(name)}</td>"
    return f"<td class=long>{_breakable(name)}</td>"


def _pair_cell(a: str, b: str) -> str:
    """The cell of a comparison's arms, ``a − b``: on one line when short, else it may wrap."""
    if len(a) + len(b) + 3 <= _LONG_NAME:
        return f"<td class=nw>{escape(a)} − {escape(b)}</td>"
    return f"<td class=long>{_breakable(a)} − {_breakable(b)}</td>"


def _padded_scores(records: list[dict[str, Any]]) -> list[list[float]]:
    """Per-turn score lists, each held at its final value up to the longest episode."""
    curves = [[float(s) for s in r.get("scores") or []] for r in records if not r.get("error")]
    curves = [c for c in curves if c]
    length = max((len(c) for c in curves), default=0)
    return [c + [c[-1]] * (length - len(c)) for c in curves]


def _score_curves_img(arms: dict[str, list[dict[str, Any]]]) -> str:
    return _img(_score_curves(arms), "score over turns per arm")


_LINESTYLES = ("-", "--", ":", "-.")

_CHAR_PX = 7.5
"""At most how wide a character of a figure's labels is, in pixels (DejaVu Sans, 10 points, 100 dpi)."""


def _arm_style(index: int, arms: int) -> tuple[Any, str]:
    """The colour and line style of the ``index``-th of ``arms`` arms, the same in every figure.

    Ten colours up to ten arms, twenty beyond (matplotlib's ``C0``…``C9`` start again at the
    eleventh arm: the first and the eleventh looked the same); the line styles take turns, the first
    arm's solid and the second's dashed, so a curve that coincides with another (an arm whose tools
    change no move) shows both, and no two of 80 arms look the same.
    """
    from matplotlib import colormaps

    palette = colormaps["tab10" if arms <= 10 else "tab20"]
    colors = [palette(k) for k in range(palette.N)]
    return colors[index % len(colors)], _LINESTYLES[(index + index // len(colors)) % len(_LINESTYLES)]


def _score_curves(arms: dict[str, list[dict[str, Any]]]) -> Figure:
    fig, ax = _figure(11.2, 3.4)
    _whole_numbers(ax.xaxis)
    _whole_numbers(ax.yaxis)
    for i, (name, records) in enumerate(arms.items()):
        curves = _padded_scores(records)
        if not curves:
            continue
        turns = range(1, len(curves[0]) + 1)
        columns = list(zip(*curves, strict=True))
        color, style = _arm_style(i, len(arms))
        ax.fill_between(turns, [min(c) for c in columns], [max(c) for c in columns], color=color, alpha=0.18)
        ax.plot(
            turns,
            [sum(c) / len(c) for c in columns],
            color=color,
            ls=style,
            lw=2,
            label=_plain(f"{name} (n={len(curves)})"),
        )
    ax.set(xlabel="turn", ylabel="score", title="Score over turns: mean, band = min–max")
    labels = ax.get_legend_handles_labels()[1]
    if not labels:  # a legend of nothing makes matplotlib warn on the terminal
        return fig
    longest = max(len(label) for label in labels)
    if len(labels) <= 4 and longest <= 30:
        ax.legend(loc="upper left", frameon=False)
    else:  # below the axes, in as many columns as fit: inside, twenty arms' names hid the curves
        ncol = max(1, min(len(labels), int(1000 // (longest * _CHAR_PX + 50))))
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=ncol, frameon=False)
    return fig


def _across(arms: dict[str, list[dict[str, Any]]]) -> bool:
    """Whether the per-episode figures put the arms across, side by side: up to four arms whose names
    fit under their box; else each figure takes the page's width with the arms down its side, one
    name a line (twenty arms' names, or a long one, overlapped when set side by side)."""
    return len(arms) <= 4 and max((len(name) for name in arms), default=0) <= 16


def _strip_img(
    arms: dict[str, list[dict[str, Any]]],
    value: Any,
    label: str,
    title: str,
    *,
    whole: bool = False,
    from_zero: bool = False,
) -> str:
    return _img(_strip(arms, value, label, title, whole=whole, from_zero=from_zero), title)


def _strip(
    arms: dict[str, list[dict[str, Any]]],
    value: Any,
    label: str,
    title: str,
    *,
    whole: bool = False,
    from_zero: bool = False,
) -> Figure:
    """Each episode's ``value`` per arm, a box and its points: the arms across (:func:`_across`), or
    down the side, the first on top; ``whole``: whole-number ticks; ``from_zero``: the axis from 0."""
    import random

    across = _across(arms)
    if across:
        fig, ax = _figure()
    else:
        fig, ax = _figure(11.2, 1.1 + 0.3 * len(arms), fitted=True)
    axis = ax.yaxis if across else ax.xaxis
    if whole:
        _whole_numbers(axis)
    data = [[v for r in rs if not r.get("error") and (v := value(r)) is not None] for rs in arms.values()]
    positions = range(1, len(data) + 1)
    ax.boxplot(
        data,
        positions=positions,
        widths=0.5,
        showfliers=False,
        medianprops={"color": "#1d2330"},
        orientation="vertical" if across else "horizontal",
    )
    jitter = random.Random(0)  # noqa: S311 - plot jitter, not security
    for i, values in enumerate(data):
        spread = [i + 1 + jitter.uniform(-0.12, 0.12) for _ in values]
        xs, ys = (spread, values) if across else (values, spread)
        ax.scatter(xs, ys, color=_arm_style(i, len(arms))[0], s=28, alpha=0.85, zorder=3)
    names = [_plain(str(name)) for name in arms]
    if across:
        ax.set_xticks(list(positions), names)
        ax.set(ylabel=label, title=title)
    else:
        ax.set_yticks(list(positions), names)
        ax.invert_yaxis()  # the first arm on top, as in the tables
        ax.set(xlabel=label, title=title)
    if from_zero:  # a count per turn: an axis that goes below 0 shows what cannot be
        (ax.set_ylim if across else ax.set_xlim)(0, None)
    return fig


def _tool_rate(record: dict[str, Any]) -> float | None:
    calls, turns = record.get("tool_calls"), record.get("turns")
    if isinstance(calls, int | float) and isinstance(turns, int | float) and turns > 0:
        return float(calls) / float(turns)
    return None


def _arm_table(summary: dict[str, Any]) -> str:
    head = (
        "<tr><th>arm</th><th>episodes</th><th>failed</th><th>mean score ± se</th><th>min–max</th>"
        "<th>win rate</th><th>mean moves</th><th>tool calls / turn</th><th>tool errors / timeouts</th>"
        "<th>answers not parsed / deadlines</th><th>tokens in / out</th><th>mean wall s</th></tr>"
    )
    rows = []
    for name, arm in summary["arms"].items():
        win = arm.get("win_rate")
        rows.append(
            f"<tr>{_arm_cell(name)}<td class=n>{_fmt(arm['episodes'])}</td>"
            f"<td class=n>{_fmt(arm['failed'])}</td>"
            f"<td class=n>{_mean_se(arm['mean_score'], arm['se_score'])}</td>"
            f"<td class=n>{_low_high(arm['min_score'], arm['max_score'])}</td>"
            f"<td class=n>{_percent(win)}</td>"
            f"<td class=n>{_fmt(arm['mean_moves'], 1)}</td>"
            f"<td class=n>{_fmt(arm['tool_calls_per_turn'])}</td>"
            f"<td class=n>{_fmt(arm['tool_errors'])} / {_fmt(arm['tool_timeouts'])}</td>"
            f"<td class=n>{_per_turn(arm.get('parse_errors'), arm.get('parse_error_rate'))} / "
            f"{_per_turn(arm.get('deadlines'), arm.get('deadline_rate'))}</td>"
            f"<td class=n>{_tokens(arm.get('prompt_tokens'))} / {_tokens(arm.get('completion_tokens'))}</td>"
            f"<td class=n>{_fmt(arm['mean_wall_seconds'], 1)}</td></tr>"
        )
    return f"<div class=wide><table>{head}{''.join(rows)}</table></div>"


def _mean_se(mean: Any, se: Any) -> str:
    """``44.50 ± 8.37``; ``59.00 ± –`` of one episode; ``–`` when no episode scored (it read ``– ± –``)."""
    return "–" if mean is None else f"{_fmt(mean)} ± {_fmt(se)}"


def _low_high(low: Any, high: Any) -> str:
    """``30–59``; ``–`` when no episode scored (it read ``–––``)."""
    return "–" if low is None or high is None else f"{_fmt(low, 0)}–{_fmt(high, 0)}"


def _percent(share: Any) -> str:
    """:func:`~zorkmcp.eval._stats.percent`, for HTML."""
    return escape(percent(share))


def _tokens(count: Any) -> str:
    """``12,345``; ``–`` when unknown (the endpoint reported no token counts)."""
    return f"{count:,}" if isinstance(count, int) else "–"


def _per_turn(count: Any, rate: Any) -> str:
    """``4 (100%)``: a count of turns and its share of the turns played; ``–`` when the records lack it."""
    if not isinstance(count, int):
        return "–"
    return f"{count:,}" + (f" ({_percent(rate)})" if isinstance(rate, float) else "")


def _fallback_note(summary: dict[str, Any]) -> str:
    """A warning per arm some of whose turns played the agent's fallback action ("": none)."""
    lines = []
    for name, arm in summary["arms"].items():
        parts = []
        if arm.get("parse_errors"):
            share = _per_turn(arm["parse_errors"], arm.get("parse_error_rate"))
            parts.append(f"on {share} of its turns the model's final answer did not parse")
        if arm.get("deadlines"):
            share = _per_turn(arm["deadlines"], arm.get("deadline_rate"))
            parts.append(f"on {share} the turn deadline passed")
        if parts:
            lines.append(f"{escape(name)}: {'; '.join(parts)}.")
    if not lines:
        return ""
    return (
        "<p class=warn>"
        + " ".join(lines)
        + " On those turns the agent played its fallback action, not the model's: the arm's scores "
        "say less about its model (see agent_parse_error and turn_deadline_exceeded in the episodes' "
        "events).</p>"
    )


def _context_note(summary: dict[str, Any]) -> str:
    """A warning per arm some of whose turns did not fit the model's context window ("": none)."""
    lines = []
    for name, arm in summary["arms"].items():
        if arm.get("context_trims"):
            share = _per_turn(arm["context_trims"], arm.get("context_trim_rate"))
            lines.append(f"{escape(name)}: on {share} of its turns.")
    if not lines:
        return ""
    return (
        "<p class=warn>A request did not fit the model's context window, and the turn's final answer was "
        "asked for without its tool calls and tools: "
        + " ".join(lines)
        + " On those turns the tools' work did not reach the answer: the arm's scores partly measure "
        "playing without it (see llm_context_exceeded in the episodes' events).</p>"
    )


def _disabled_note(summary: dict[str, Any]) -> str:
    """A warning per arm whose episodes disabled an MCP server mid-episode ("": none did)."""
    lines = []
    for name, arm in summary["arms"].items():
        disabled = arm.get("servers_disabled")
        if isinstance(disabled, dict) and disabled:
            servers = ", ".join(f"{escape(server)} in {n} episode(s)" for server, n in disabled.items())
            lines.append(f"{escape(name)}: {servers}.")
    if not lines:
        return ""
    return (
        "<p class=warn>MCP servers were disabled mid-episode (a server that failed to start, and again "
        "when retried, is off for the rest of its episode): "
        + " ".join(lines)
        + " Those episodes played on partly without its tools: the arm's scores partly measure playing "
        "without them (see mcp_disabled_fallback in the episodes' events).</p>"
    )


def _tool_section(summary: dict[str, Any]) -> str:
    """Each tool the model called, per arm: how often, in how many episodes, how it went ("": no data)."""
    arms = {name: arm.get("tools") for name, arm in summary["arms"].items()}
    if all(tools is None for tools in arms.values()):
        return ""  # records of older versions: nothing to show
    rows = []
    for name, tools in arms.items():
        scored = summary["arms"][name].get("episodes", 0) - summary["arms"][name].get("failed", 0)
        for tool, use in (tools or {}).items():
            rows.append(
                f"<tr>{_arm_cell(name, '')}<td>{escape(tool)}</td><td class=n>{_fmt(use['calls'])}</td>"
                f"<td class=n>{_fmt(use['calls_per_turn'])}</td>"
                f"<td class=n>{_fmt(use['episodes'])} of {_fmt(scored)}</td>"
                f"<td class=n>{_fmt(use['errors'])} / {_fmt(use['timeouts'])} / {_fmt(use['skipped'])}</td>"
                f"<td class=n>{_fmt(use['mean_ms'], 1)}</td></tr>"
            )
    if not rows:
        return "<h2>Tool use</h2><p class=note>The model called no tool.</p>"
    return (
        "<h2>Tool use</h2><div class=wide><table><tr><th>arm</th><th>tool</th><th>calls</th>"
        "<th>calls / turn</th>"
        "<th>episodes that called it</th><th>errors / timeouts / skipped</th><th>mean ms</th></tr>"
        + "".join(rows)
        + "</table></div><p class=note>Over the episodes that did not fail, most called first. "
        "Skipped: calls left unrun when an earlier call of the same batch timed out.</p>"
    )


def _arm_setup_table(summary: dict[str, Any]) -> str:
    """What each arm played with: its model(s) and the MCP servers its tools came from."""
    rows = []
    for name, arm in summary["arms"].items():
        servers = arm.get("servers")
        shown = "–" if servers is None else ", ".join(servers) if servers else "none (no MCP)"
        rows.append(
            f"<tr>{_arm_cell(name, '')}<td>{escape(', '.join(arm.get('models') or []) or '–')}</td>"
            f"<td>{escape(shown)}</td></tr>"
        )
    head = "<tr><th>arm</th><th>model</th><th>MCP servers</th></tr>"
    return f"<div class=wide><table>{head}{''.join(rows)}</table></div>"


_TABLED_PAIRS = 10
"""Comparisons the table shows at first: every pair of up to five arms; of more arms, the first
arm's pairs (as ``zorkmcp eval``'s closing lines), the others one click away. Twenty arms make 190
pairs: shown at once, they buried the figures under 190 rows."""

_INTERVALS_NOTE = (
    "<p class=note>Welch's t interval takes the arms as two samples (Welch–Satterthwaite degrees of "
    "freedom, Student t quantile). The paired t interval takes the score differences seed by seed, "
    "over the seeds both arms scored: every arm plays the same seeds, so what the seed does to a "
    "score cancels, and the paired interval is the narrower answer when the seed matters. The "
    "reading reads the paired interval when there is one, else Welch's: above 0, the first arm "
    "scores higher; below 0, the second; holding 0, no difference is shown at 95%.</p>"
)


def _comparison_table(summary: dict[str, Any]) -> str:
    """Each pair of arms: both intervals and their reading; with more than five arms, the pairs of
    the first arm (the baseline) in the table and every other pair in a second one, folded."""
    comparisons = summary["comparisons"]
    if not comparisons:
        return "<p class=note>One arm: nothing to compare.</p>"
    if len(comparisons) <= _TABLED_PAIRS:
        return _comparison_rows(comparisons) + _INTERVALS_NOTE
    first = comparisons[0]["a"]
    shown = [c for c in comparisons if first in (c["a"], c["b"])]
    others = [c for c in comparisons if first not in (c["a"], c["b"])]
    return (
        f"<p class=note>{len(comparisons)} pairs of arms: the table shows the {len(shown)} of the first "
        f"arm, {escape(str(first))}; the other {len(others)} follow, folded.</p>"
        + _comparison_rows(shown)
        + f"<details><summary>The other {len(others)} comparisons (every pair of the other arms)</summary>"
        + _comparison_rows(others)
        + "</details>"
        + _INTERVALS_NOTE
    )


def _comparison_rows(comparisons: list[dict[str, Any]]) -> str:
    rows = []
    for c in comparisons:
        ci = c.get("ci95")
        # null: too few to estimate the spread, or no spread seen (se 0): no 95% interval either way
        flat = "– (no spread in either arm's scores)" if c.get("se") == 0 else None
        interval = f"{_fmt(ci[0])} … {_fmt(ci[1])}" if ci else flat or "– (needs ≥ 2 scored episodes per arm)"
        paired = c.get("paired") or {}
        pci = paired.get("ci95")
        flat = "– (no spread in the differences)" if paired.get("se") == 0 else None
        paired_interval = (
            f"{_fmt(pci[0])} … {_fmt(pci[1])}" if pci else flat or "– (needs ≥ 2 seeds both arms scored)"
        )
        rows.append(
            f"<tr>{_pair_cell(str(c['a']), str(c['b']))}"
            f"<td class=n>{_fmt(c['diff_mean_score'])}</td>{_interval_cell(ci, interval)}"
            f"<td class=n>{_fmt(paired.get('pairs'))}</td>"
            f"<td class=n>{_fmt(paired.get('diff_mean_score'))}</td>{_interval_cell(pci, paired_interval)}"
            f"<td>{escape(comparison_reading(c))}</td></tr>"
        )
    return (
        "<div class=wide><table class=pairs><tr><th>comparison</th><th>difference of mean scores</th>"
        "<th>95% CI (Welch)</th>"
        "<th>seeds both arms scored</th><th>mean difference seed by seed</th><th>95% CI (paired)</th>"
        "<th>reading</th></tr>" + "".join(rows) + "</table></div>"
    )


def _interval_cell(ci: Any, text: str) -> str:
    """An interval's cell: its numbers on one line; why there is none (``– (no spread …)``) as words,
    which may wrap (on one line, they left the reading beside them three words a line)."""
    return f"<td class=n>{text}</td>" if ci else f"<td class=why>{text}</td>"


def _figures(arms: dict[str, list[dict[str, Any]]], final_title: str) -> str:
    """The figures, or one sentence when no episode finished: empty axes would only look like a bug."""
    if all(r.get("error") for records in arms.values() for r in records):
        return (
            "<p class=note>Nothing to draw: no episode finished without an error "
            "(see Failed episodes below).</p>"
        )
    finals = _strip_img(arms, lambda r: r.get("score"), "score", final_title, whole=True)
    called = any(_tool_rate(r) for records in arms.values() for r in records if not r.get("error"))
    tools = (  # no episode called a tool (arms without MCP): a figure of zeros says nothing
        _strip_img(arms, _tool_rate, "tool calls / turn", "Tool calls per turn, per episode", from_zero=True)
        if called
        else ""
    )
    return (
        _score_curves_img(arms)
        + "<p class=note>An episode that ended early holds its final score for the remaining turns.</p>"
        + f'<div class="{"grid" if _across(arms) else "stack"}">{finals}{tools}</div>'
    )


_FAILED_ROWS = 50
"""Failed episodes listed on the page; a run against a dead endpoint can fail hundreds alike."""

_ERROR_CHARS = 1000
"""Longest error text shown (cut at a word: its end says what to do); a traceback's tail can run to
pages, and the record keeps it whole."""


def _error_text(error: Any) -> str:
    """An error as one escaped line: whitespace collapsed so a table row stays one readable block."""
    return escape(one_line(str(error), _ERROR_CHARS))


def _failed_section(arms: dict[str, list[dict[str, Any]]]) -> str:
    """Which episodes failed and why, in arm then seed order; the arm table only counts them."""
    failed = [(name, r) for name, records in arms.items() for r in records if r.get("error")]
    if not failed:
        return ""
    rows = "".join(
        f"<tr>{_arm_cell(name, '')}<td class=n>{_fmt(r.get('seed'))}</td>"
        f"<td class=n>{_fmt(r.get('turns'))}</td><td>{_error_text(r['error'])}</td></tr>"
        for name, r in failed[:_FAILED_ROWS]
    )
    text = (
        "<h2>Failed episodes</h2><div class=wide><table class=errors><tr><th>arm</th><th>seed</th>"
        f"<th>turns played</th><th>error</th></tr>{rows}</table></div>"
    )
    if len(failed) > _FAILED_ROWS:
        text += (
            f"<p class=note>{len(failed) - _FAILED_ROWS} more failed episode(s) are not listed; every "
            "record is in episodes/&lt;arm&gt;/seed-&lt;N&gt;.json.</p>"
        )
    return text


_SKIPPED_NAMED = 10
"""Episode files left out that the page names, with why; a damaged folder can hold hundreds."""


def _named(files: list[tuple[str, str]]) -> str:
    """``mcp/seed-9.json (not JSON), …`` and ``and 3 more`` past :data:`_SKIPPED_NAMED`, escaped."""
    named = ", ".join(f"{escape(name)} ({escape(why)})" for name, why in files[:_SKIPPED_NAMED])
    more = len(files) - _SKIPPED_NAMED
    return named + (f" and {more} more" if more > 0 else "")


_UNPLAYED_ARMS = 10
"""Arms the note of episodes not played names, each with how many; past them, how many more arms."""


def _unplayed(run: RunEpisodes) -> str:
    """A warning of the episodes the run's ``plan`` holds that it did not play ("": none).

    A run stopped early (Ctrl-C, SIGTERM, a full disk) summarizes what finished: its page would
    otherwise show two episodes of six as if they were the run, and leave out without a word an arm
    none of whose episodes ended. Episode files the page names as unreadable are not counted again.
    """
    plan = run.plan
    if plan is None:
        return ""
    seeds = range(plan["first_seed"], plan["last_seed"] + 1)
    played: dict[str, set[Any]] = {}
    for record in run.records:
        played.setdefault(str(record.get("arm")), set()).add(record.get("seed"))
    for name, _ in run.skipped:
        arm, _, file = name.rpartition("/")
        played.setdefault(arm, set()).add(_seed_of(file))
    missing = [
        (arm, len(seeds) - sum(1 for seed in played.get(arm, ()) if is_int(seed) and seed in seeds))
        for arm in plan["arms"]
    ]
    missing = [(arm, n) for arm, n in missing if n > 0]
    if not missing:
        return ""
    none = ", so it is in no table or figure"
    each = [
        f"{escape(arm)}: {n} of {len(seeds)}{none if n == len(seeds) else ''}"
        for arm, n in missing[:_UNPLAYED_ARMS]
    ]
    if len(missing) > _UNPLAYED_ARMS:
        each.append(f"and {len(missing) - _UNPLAYED_ARMS} more arms")
    total = sum(n for _, n in missing)
    return (
        f"<p class=warn>{total:,} of the run's {len(seeds) * len(plan['arms']):,} episodes were not played "
        f"({'; '.join(each)}): the run was stopped before them. zorkmcp eval --resume with this folder "
        "as --out plays them.</p>"
    )


def _seed_of(file: str) -> int | None:
    """The seed of ``seed-<N>.json``, else ``None``."""
    digits = file.removeprefix("seed-").removesuffix(".json")
    return int(digits) if digits.isdigit() else None


def _eval_header(run_dir: Path, run: RunEpisodes, *, summarized: bool = True, foreign: bool = False) -> str:
    episodes = run.records
    models = sorted({str(r.get("model")) for r in episodes if r.get("model")})
    seeds = sorted({r["seed"] for r in episodes if isinstance(r.get("seed"), int)})
    seed_text = f"seeds {seeds[0]}–{seeds[-1]}" if seeds else "seeds –"
    if len(seeds) == 1:  # a run stopped after its first seed: not "seeds 12–12"
        seed_text = f"seed {seeds[0]}"
    text = (
        f"<h1>zorkmcp eval: {escape(run_dir.name)}</h1><p class=sub>{len(episodes)} episodes · "
        f"model {escape(', '.join(models) or '–')} · {seed_text}</p>"
    )
    text += _unplayed(run)
    if run.skipped:
        when = " when its arm and seed are among the run's" if run.unsure else ""
        text += (
            f"<p class=warn>{len(run.skipped)} episode file(s) could not be read and are left out: "
            f"{_named(run.skipped)}. zorkmcp eval --resume with this folder as --out plays such an "
            f"episode again{when}.</p>"
        )
    if run.outside:
        text += (
            f"<p class=warn>{len(run.outside)} file(s) in episodes/ could not be read and are no episode "
            f"of this run: {_named(run.outside)}. They are left out, and no zorkmcp eval --resume of this "
            "run plays them: move them out of the folder, or remove them.</p>"
        )
    if run.others:
        text += (
            f"<p class=note>{run.others} other episode file(s) in episodes/ are left out: summary.json "
            "does not cover them (seeds or arms of an earlier run in this folder).</p>"
        )
    if foreign:  # cut short, edited by hand, another program's: it says nothing of the run's episodes
        text += (
            "<p class=warn>summary.json in this folder is not one zorkmcp eval wrote (it does not parse, or "
            "lacks the arms and comparisons), so it cannot say which episodes are the run's: the page draws "
            "every episode file in episodes/. zorkmcp eval --resume does not replace such a file: move it "
            "away, then resume with this folder as --out to write the run's summary again.</p>"
        )
    if not summarized:  # zorkmcp eval writes it when the run ends, also by Ctrl-C: going, or killed
        text += (
            "<p class=warn>No summary.json in this folder: the run is still going, or it was stopped "
            f"before it could write one. The page shows the {len(episodes)} episode(s) finished so far; "
            "zorkmcp eval --resume with this folder as --out plays the rest.</p>"
        )
    return text


def render_eval_report(
    run_dir: Path, out_path: Path | None = None, *, episodes: list[dict[str, Any]] | None = None
) -> Path:
    """Write ``run_dir/report.html`` (or ``out_path``) for an eval run folder and return its path.

    The page draws the episodes ``summary.json`` covers (each arm's ``seeds``), as ``zorkmcp eval``
    wrote them, or every ``episodes/<arm>/seed-<N>.json`` when there is no summary that says (none,
    or one of an older zorkmcp). It says how many episode files it left out and why: files that are
    not their episode's record (they do not parse, a field of the wrong kind, another arm or seed
    than their path), and others the summary does not cover.

    Args:
        run_dir: the run's folder.
        out_path: the page to write (``None``: ``run_dir/report.html``).
        episodes: the records to draw (``zorkmcp eval`` gives those of its summary); ``None``:
            read them from the folder.

    Raises:
        ReportInputError: the folder holds no readable episode record, or the page cannot be written.
    """
    run_dir = Path(run_dir)
    target = run_dir / "report.html" if out_path is None else Path(out_path)
    check_page(target, page_inputs(run_dir=run_dir), named=str(target), remedy=_ELSEWHERE)
    summarized = episodes is not None or (run_dir / "summary.json").exists()  # given: by the run itself
    summary_file = run_dir / "summary.json"
    foreign = episodes is None and summary_file.is_file() and not _RUN_FILES["summary.json"](summary_file)
    run = read_run(run_dir, episodes)
    episodes = run.records
    summary = summarize(episodes)
    arms = group_by_arm(episodes)
    score_ceiling = summary["arms"][next(iter(arms))].get("game_max_score")
    final_title = "Final score per episode" + (f" (of {score_ceiling:.0f})" if score_ceiling else "")
    body = (
        _eval_header(run_dir, run, summarized=summarized, foreign=foreign)
        + "<h2>Arms</h2>"
        + _arm_setup_table(summary)
        + _arm_table(summary)
        + _fallback_note(summary)
        + _context_note(summary)
        + _disabled_note(summary)
        + "<p class=note>Failed episodes (with an error) are counted but excluded from score statistics. "
        "se = sample standard deviation / √n. Answers not parsed / deadlines: the turns on which the "
        "agent played its fallback action because the model's final answer did not parse, or the "
        "turn's deadline passed, and their share of the turns played (– : the records, of an older "
        "zorkmcp, do not count them). Tokens: as the model's answers reported them (– : the endpoint "
        "reported none).</p><h2>Comparisons</h2>"
        + _comparison_table(summary)
        + _tool_section(summary)
        + "<h2>Figures</h2>"
        + _figures(arms, final_title)
        + _failed_section(arms)
    )
    return _write(target, _page(f"zorkmcp eval {run_dir.name}", body))


# --- one episode ---------------------------------------------------------------------------------


def _num(record: dict[str, Any], key: str) -> float | None:
    value = record.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _turn_number(record: dict[str, Any], index: int) -> int:
    value = record.get("turn")
    return value if isinstance(value, int) else index + 1


def _episode_img(episode: EpisodeEvents) -> str:
    return _img(_episode_figure(episode), "score and tool calls per turn")


def _episode_figure(episode: EpisodeEvents) -> Figure:
    turns = [_turn_number(t, i) for i, t in enumerate(episode.turns)]
    fig, ax = _figure(11.2, 3.0)
    scored = [
        (n, s) for n, t in zip(turns, episode.turns, strict=True) if (s := _num(t, "score")) is not None
    ]
    if scored:
        ax.step([n for n, _ in scored], [s for _, s in scored], where="post", color="C0", lw=2, label="score")
        if len(scored) == 1:  # one turn: a step of one point draws nothing
            ax.plot(*scored[0], "o", color="C0")
    low = min((s for _, s in scored), default=0)  # below 0: a death at 0 points (Zork takes 10)
    high = max((s for _, s in scored), default=0)
    ax.set_ylim(bottom=low * 1.15 - 1 if low < 0 else 0, top=high * 1.15 + 1)
    ax.set(xlabel="turn", ylabel="score")
    _whole_numbers(ax.xaxis)
    _whole_numbers(ax.yaxis)
    ax.yaxis.label.set_color("C0")
    tools = ax.twinx()
    calls = [_num(t, "tool_calls") or 0.0 for t in episode.turns]
    tools.bar(turns, calls, color="C1", alpha=0.3, width=0.7, label="tool calls")
    _whole_numbers(tools.yaxis)
    tools.set_ylim(bottom=0, top=max(max(calls, default=0), 1) * 1.15)  # no turn makes fewer than 0
    tools.set_ylabel("tool calls in the turn")
    tools.yaxis.label.set_color("C1")
    tools.spines["top"].set_visible(False)
    ax.set_zorder(tools.get_zorder() + 1)
    ax.patch.set_visible(False)
    ax.set_title("Score (line) and tool calls (bars) per turn")
    return fig


def _tool_line(call: Any) -> str:
    if not isinstance(call, dict):
        return ""
    outcome = str(call.get("outcome", ""))
    duration = _num(call, "duration_ms")
    name, server = str(call.get("name", "?")), call.get("server")
    if server and not name.startswith(f"{server}."):  # turn_complete names tools canonically: server.tool
        name = f"{server}.{name}"
    return (
        f"<div class=tool><b>{escape(name)}</b>"
        f"({escape(str(call.get('arguments', '')))})"
        f" → {escape(str(call.get('result', '')))} <span class='{escape(outcome)}'>[{escape(outcome or '?')}"
        f"{f', {duration:.0f} ms' if duration is not None else ''}]</span></div>"
    )


def _transcript(episode: EpisodeEvents) -> str:
    rows = []
    for i, t in enumerate(episode.turns):
        reasoning = escape(str(t.get("reasoning") or ""))
        if t.get("new_objective"):
            reasoning += f"<div class=obj>new objective: {escape(str(t['new_objective']))}</div>"
        tools = t.get("tools")
        if isinstance(tools, list) and tools:
            tool_html = "".join(_tool_line(c) for c in tools)
        else:
            count = t.get("tool_calls")
            tool_html = f"<span class=note>{_fmt(count) + ' call(s)' if count else 'none'}</span>"
        flags = " ".join(k.replace("_", " ") for k in ("game_over", "victory") if t.get(k))
        if t.get("game_error"):
            flags += f" error: {escape(str(t['game_error']))}"
        rows.append(
            f"<tr><td class=n>{_turn_number(t, i)}</td><td><b>{escape(str(t.get('action', '')))}</b>"
            f"<div class=note>{escape(str(t.get('location') or ''))}</div></td>"
            f"<td class=n>{_fmt(t.get('score'))}</td><td><pre>{escape(str(t.get('observation') or ''))}</pre>"
            f"{f'<div class=warn>{flags}</div>' if flags else ''}</td>"
            f"<td>{reasoning}</td><td>{tool_html}</td></tr>"
        )
    head = (
        "<tr><th>turn</th><th>action</th><th>score</th><th>game text</th>"
        "<th>reasoning</th><th>tool calls</th></tr>"
    )
    return f"<div class=wide><table>{head}{''.join(rows)}</table></div>"


def _result_text(end: dict[str, Any] | None, last: dict[str, Any]) -> str:
    if end is None:
        return "unfinished (no episode_complete)"
    if end.get("error"):  # its kind: the whole error, which can run to pages, follows the cards
        return f"failed: {error_kind(end['error'])}"
    if end.get("victory"):
        return "victory"
    if end.get("game_over"):
        return "game over"
    return f"stopped: {end.get('stopped') or 'turn limit'}"


def _limits(start: dict[str, Any]) -> str:
    parts = [str(start["game_file"])] if start.get("game_file") else []
    if isinstance(start.get("max_turns"), int):
        parts.append(f"at most {start['max_turns']} turns")
    return " · ".join(parts) or "no episode_start record"


def _episode_header(episode: EpisodeEvents, bad: int, events_path: Path) -> str:
    start, end = episode.start or {}, episode.complete
    last = episode.turns[-1] if episode.turns else {}
    info = end or last  # the score and moves after the last turn the log has
    total_calls = sum(_num(t, "tool_calls") or 0 for t in episode.turns)
    tool_calls = (end or {}).get("tool_calls", int(total_calls))  # a turn's own count is not the total
    turns = (end or {}).get("turns", len(episode.turns))
    max_score = (end or {}).get("max_score", start.get("max_score"))
    model = start.get("model") or (end or {}).get("model")
    if start.get("scripted") or (end or {}).get("scripted"):
        model = f"{model or ''} (scripted)".strip()
    cassette = replayed_from(episode)
    if cassette is not None:
        model = f"{model or ''} (replayed)".strip()
    mcp = start.get("mcp_enabled")
    replay = f" · replayed from the cassette {escape(cassette)}" if cassette is not None else ""
    text = (
        f"<h1>{escape(str(start.get('game') or 'zorkmcp episode'))}: "
        f"episode {escape(episode.episode_id)}</h1>"
        f"<p class=sub>{escape(str(events_path))} · seed {_fmt(start.get('seed'))} · "
        f"MCP {_fmt(mcp) if isinstance(mcp, bool) else '–'} · {escape(_limits(start))}{replay}</p>"
        + _cards(
            [
                ("result", escape(_result_text(end, last))),
                ("score", f"{_fmt(info.get('score'))} / {_fmt(max_score)}"),
                (
                    "turns / moves",
                    f"{_fmt(turns)} / {_fmt(info.get('moves'))}",
                ),
                ("tool calls", _fmt(tool_calls)),
                *_model_use(end),
                ("model", _fmt(model)),
            ]
        )
    )
    if end is not None and end.get("error"):
        text += f"<p class='warn err'>{escape(str(end['error']))}</p>"
    if bad:
        text += f"<p class=warn>{bad} line(s) of the log were not JSON objects and were skipped.</p>"
    return text


def _model_use(end: dict[str, Any] | None) -> list[tuple[str, str]]:
    """The episode's model requests and tokens, as ``episode_complete`` counts them (a log written
    before it did, or an unfinished episode: none)."""
    if end is None or "llm_requests" not in end:
        return []
    return [
        ("model requests", _fmt(end.get("llm_requests"))),
        ("tokens in / out", f"{_tokens(end.get('prompt_tokens'))} / {_tokens(end.get('completion_tokens'))}"),
    ]


def render_episode_report(events_path: Path, out_path: Path, episode_id: str | None = None) -> Path:
    """Write one episode of a JSON-lines event log as a self-contained HTML page; return ``out_path``.

    Args:
        events_path: the event log.
        out_path: the page to write.
        episode_id: which episode; ``None`` takes the only one.

    Raises:
        ReportInputError: the log is missing or unreadable, holds no episode, holds several and
            ``episode_id`` is ``None``, does not hold ``episode_id``, ``out_path`` is the log (or a
            file of the eval run it belongs to), or the page cannot be written.
    """
    events_path, out_path = Path(events_path), Path(out_path)
    log = read_event_log(events_path)
    episode = pick_episode(log, episode_id)
    check_page(out_path, page_inputs(events=events_path), named=str(out_path), remedy=_ELSEWHERE)
    return draw_episode(log, episode, out_path)


_ELSEWHERE = "give another out_path (nothing was written)"

_AN_EVENT_LOG = (
    "give a JSON-lines event log (zorkmcp play's logs/zorkmcp_events.jsonl, an eval episode's "
    "seed-<N>.events.jsonl) or an eval run's folder"
)


def pick_episode(log: EventLog, episode_id: str | None) -> EpisodeEvents:
    """:meth:`EventLog.pick`, and for a log that holds no event of an episode or of ``bridge`` at all,
    what it holds instead: nothing (an empty file), lines that are not JSON objects (a file of
    another kind, or cut short), or other events; each with what to give.

    Raises:
        ReportInputError: as :meth:`EventLog.pick`.
    """
    if log.episodes or log.sessions:
        return log.pick(episode_id)
    try:
        empty = log.path.is_file() and log.path.stat().st_size == 0
    except OSError:
        empty = False
    if empty:
        what = "the file is empty"
    elif log.bad_lines:
        bad = (
            f"{log.bad_lines} lines are not JSON objects"
            if log.bad_lines > 1
            else "1 line is not a JSON object"
        )
        what = f"no line is an episode's event, and {bad} (a file of another kind, or one cut short)"
    else:
        what = "no line is an episode's event (episode_start, turn_complete)"
    raise ReportInputError(f"{log.path}: no episode records: {what}; {_AN_EVENT_LOG}")


def draw_episode(log: EventLog, episode: EpisodeEvents, out_path: Path) -> Path:
    """Write ``episode`` of ``log`` (read by :func:`read_event_log`) as a page at ``out_path``; return it.

    Raises:
        ReportInputError: the page cannot be written.
    """
    body = _episode_header(episode, log.bad_lines, log.path)
    if episode.turns:
        body += _episode_img(episode) + "<h2>Transcript</h2>" + _transcript(episode)
    else:
        body += "<p class=note>No turn_complete records: nothing to draw.</p>"
    return _write(out_path, _page(f"zorkmcp episode {episode.episode_id}", body))
