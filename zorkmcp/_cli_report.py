"""``zorkmcp report``: draw an episode's event log, or an eval run folder, as one HTML page.

Exit status: 0 the page was written; 2 bad input (a missing or unreadable file, no episode, an
unknown or missing ``--episode``), said in one line on stderr; 130 interrupted (Ctrl-C; 143 by
SIGTERM), nothing written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["REPORT_HELP", "add_report_parser", "run_report"]

REPORT_HELP = """\
Draw one self-contained HTML page (figures inline, no external files).

PATH is either a JSON-lines event log (zorkmcp play's [tool.zorkgpt.files] json_log_file, or an eval
episode's seed-<N>.events.jsonl): the page shows the header (game, model, seed, result), score and
tool calls per turn, and the transcript (action, game text, reasoning, tool calls); or an eval run
folder (zorkmcp eval --out DIR): the page shows score over turns per arm, final scores, tool calls
per turn, each arm's model and MCP servers, mean ± standard error per arm, 95% intervals between
arms (Welch's, and seed by seed the paired one), and each tool the model called and how it went.

The page is written whole through a temporary file beside it; --output /dev/stdout (or another
device or named pipe) is written as it is."""


def add_report_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``report`` subcommand to the ``zorkmcp`` parser's subcommands."""
    p = sub.add_parser(
        "report",
        help="draw an event log or an eval run as an HTML page",
        description=REPORT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("path", metavar="PATH", help="an events .jsonl file or an eval run folder")
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE.html",
        help="the page to write (default: report.html inside the run folder, or next to the log; "
        "seed-<N>.html next to an eval episode's seed-<N>.events.jsonl; /dev/stdout writes it to "
        "standard output)",
    )
    p.add_argument(
        "--episode",
        metavar="ID",
        help="the episode to draw: an episode_id of the log (needed when it holds several); in a run "
        "folder, <arm>/seed-<N> or an episode_id",
    )


def _page_beside(events: Path) -> Path:
    """An eval episode's page goes beside its log (``seed-3.events.jsonl`` → ``seed-3.html``), where
    it replaces neither the run's ``report.html`` nor another episode's page; any other log's page is
    ``report.html`` beside it."""
    if events.name.endswith(_EPISODE_LOG):
        return events.with_name(events.name.removesuffix(_EPISODE_LOG) + ".html")
    return events.with_name("report.html")


_EPISODE_LOG = ".events.jsonl"


def _render(path: Path, output: Path | None, episode: str | None) -> Path:
    from .eval._report import find_episode_events, render_episode_report, render_eval_report

    if path.is_dir():
        if episode is None:
            return render_eval_report(path, output)
        events = find_episode_events(path, episode)
        picked = None if events.name == f"{Path(episode).name}{_EPISODE_LOG}" else episode
        return render_episode_report(events, output or _page_beside(events), picked)
    return render_episode_report(path, output or _page_beside(path), episode)


def run_report(args: argparse.Namespace) -> int:
    """Run ``zorkmcp report``; 0 when the page is written, 2 on bad input (one line on stderr)."""
    from ._outputs import write_remedy, written_in_place
    from .eval._results import ReportInputError

    output = Path(args.output) if args.output else None
    try:
        written = _render(Path(args.path), output, args.episode)
    except ReportInputError as exc:
        cause = exc.__cause__
        remedy = f"; {write_remedy(cause)}, or pass --output FILE.html" if isinstance(cause, OSError) else ""
        print(f"zorkmcp report: {exc}{remedy}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (zorkmcp.cli); the page is written whole or not at all
        print("zorkmcp report: interrupted; nothing written", file=sys.stderr)
        return 130
    # The page may have gone to stdout itself (--output /dev/stdout): then this line goes beside it.
    print(f"zorkmcp report: wrote {written}", file=sys.stderr if written_in_place(written) else sys.stdout)
    return 0
