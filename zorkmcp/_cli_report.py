"""``zorkmcp report``: draw an episode's event log, or an eval run folder, as one HTML page.

Exit status: 0 the page was written; 1 it was, but the line saying so could not be written to
standard output (a full disk: one line on stderr); 2 bad input (a missing or unreadable file, no
episode, an unknown or missing ``--episode``, one outside the run, a log of ``bridge``), a page that
cannot be written or that would replace what it is drawn from (the log, a file of the run), or a
``report.html`` (or ``seed-<N>.html``) in the default place that zorkmcp did not write, said in one
line on stderr; 130 interrupted (Ctrl-C; 143 by SIGTERM), nothing written; 141 the reader of the
output went away (``| head``, or ``-o /dev/stdout | true``), nothing more said.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ._console import WrappingHelpFormatter

if TYPE_CHECKING:
    import argparse

__all__ = ["REPORT_HELP", "add_report_parser", "run_report"]

REPORT_HELP = """\
Draw one self-contained HTML page (figures inline, no external files).

PATH is either a JSON-lines event log (zorkmcp play's [tool.zorkgpt.files] json_log_file, or an eval
episode's seed-<N>.events.jsonl): the page shows the header (game, model, seed, result, model
requests and tokens), score and tool calls per turn, and the transcript (action, game text,
reasoning, tool calls); or an eval run folder (zorkmcp eval --out DIR): the page shows score over
turns per arm, final scores, tool calls per turn, each arm's model and MCP servers, mean ± standard
error per arm, 95% intervals between arms (Welch's, and seed by seed the paired one), and each tool
the model called and how it went.

The page is written whole through a temporary file beside it; --output /dev/stdout (or another
device or named pipe) is written as it is. It never replaces what it is drawn from: the event log,
or a file of the eval run (summary.json, summary.csv, anything in episodes/ but the episodes' pages),
by name or through a link. Without --output, a page of the default name that zorkmcp did not write
(a pytest-html report.html) is not replaced: move it, or pass --output.

exit status: 0 the page was written; 1 standard output could not be written (the page was); 2 bad
input, or a page that cannot be written or is not zorkmcp's to replace (one line on stderr); 130
interrupted; 141 the reader of the output went away (| head)."""


def add_report_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``report`` subcommand to the ``zorkmcp`` parser's subcommands."""
    p = sub.add_parser(
        "report",
        help="draw an event log or an eval run as an HTML page",
        description=REPORT_HELP,
        formatter_class=WrappingHelpFormatter,
    )
    p.add_argument("path", metavar="PATH", help="an events .jsonl file or an eval run folder")
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE.html",
        help="the page to write (default: report.html inside the run folder, or next to the log, "
        "report-<ID>.html with --episode ID; seed-<N>.html next to an eval episode's "
        "seed-<N>.events.jsonl; /dev/stdout writes it to standard output)",
    )
    p.add_argument(
        "--episode",
        metavar="ID",
        help="the episode to draw: an episode_id of the log (needed when it holds several); in a run "
        "folder, <arm>/seed-<N> or an episode_id",
    )


def _page_beside(events: Path, episode: str | None = None) -> Path:
    """The page's default place, beside the log it is drawn from.

    An eval episode's log holds that episode alone: its page is ``seed-3.html`` for
    ``seed-3.events.jsonl``, where it replaces neither the run's ``report.html`` nor another
    episode's page. Any other log's page is ``report.html``; with ``--episode`` (a log that ``zorkmcp
    play`` appended several episodes to) ``report-<episode id>.html``, so that drawing one episode of
    it does not replace the page of another.
    """
    if events.name.endswith(_EPISODE_LOG):
        return events.with_name(events.name.removesuffix(_EPISODE_LOG) + ".html")
    if episode is not None:
        return events.with_name(f"report-{_UNSAFE.sub('_', episode)[:100]}.html")
    return events.with_name("report.html")


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
"""What an episode id may not bring into a file's name (``zorkmcp play`` names one episode-<hex>)."""


_EPISODE_LOG = ".events.jsonl"


_ARM_SEED = re.compile(r"(?P<arm>[^/]+)/seed-[0-9]+")
"""``--episode`` as a path in a run: ``<arm>/seed-<N>``."""


def _check_episode(run: Path, episode: str) -> None:
    """``--episode`` names an episode of ``run``: ``<arm>/seed-<N>`` or an episode_id.

    :func:`find_episode_events` takes it as a path under ``episodes/`` first; any other path that
    leads to a log (``../../r4/episodes/mcp/seed-1``, an absolute one) is another run's episode, whose
    page would be written into that run.

    Raises:
        ReportInputError: ``episode`` is a path to a log, but not ``<arm>/seed-<N>`` inside the run.
    """
    from .eval._results import ReportInputError

    match = _ARM_SEED.fullmatch(episode)
    if match and match["arm"] not in (".", ".."):
        return
    if (run / "episodes" / f"{episode}{_EPISODE_LOG}").is_file():
        raise ReportInputError(
            f"{run}: --episode {episode!r} is not an episode of this run; give <arm>/seed-<N> "
            "(e.g. mcp/seed-1) or an episode_id from an episodes/<arm>/seed-<N>.events.jsonl file"
        )


def _default_page(page: Path) -> Path:
    """``page``, the page written when no ``--output`` is given, unless it would replace a file that
    zorkmcp did not write (``pytest-html``'s ``report.html``): ``zorkmcp eval --out`` keeps those too.

    Raises:
        ReportInputError: ``page`` is a file whose title is not a zorkmcp page's.
    """
    from .eval._results import ReportInputError
    from .eval._spec import _RUN_FILES

    if page.is_file() and not _RUN_FILES["report.html"](page):
        raise ReportInputError(
            f"{page} is not a page zorkmcp wrote, and this report would replace it; move it, or pass "
            "--output FILE.html (nothing was written)"
        )
    return page


def _check_page(output: Path | None, default: Path, inputs: list[tuple[str, Path]]) -> None:
    """The page (``output``, else ``default``) replaces no file it is drawn from (:func:`page_inputs`).

    Raises:
        ReportInputError: it would, said with what to pass instead.
    """
    from .eval._report import check_page
    from .eval._results import ReportInputError

    nothing = "(nothing was written)"
    try:
        check_page(
            default,
            inputs,
            named=f"{default} (the page without --output)",
            remedy=f"pass --output FILE.html {nothing}",
        )
    except ReportInputError:
        if output is None:
            raise
        instead = ""
    else:
        instead = f", or leave it out to write {default}"
    if output is not None:
        remedy = f"pass another --output FILE.html{instead} {nothing}"
        check_page(output, inputs, named=f"--output {output}", remedy=remedy)


_RUN_PAGES = {
    "summary.json": "the summary",
    "summary.csv": "the episodes' table",
    "report.html": "the page",
}
"""The files of an eval run's folder that ``zorkmcp report`` is given in place of the folder."""

_SEED = re.compile(r"seed-(?P<seed>[0-9]+)(?P<kind>\.json|\.html)")


def _part_of_a_run(path: Path) -> str | None:
    """What to give instead of ``path`` when it is a part of an eval run's folder other than the
    folder (``None``: it is not one): a file of the run (``summary.json``), an episode's record or
    page, its ``episodes/`` folder or an arm's folder in it; or a page. A file is told so only when
    it holds no event (a log may have any name). Each of these was told "no episode records" or "not
    an eval run folder", with nothing to do."""
    if path.is_dir():
        if path.name == "episodes" and not (path / "episodes").is_dir():
            run = path.parent
            return (
                f"that is the episodes/ folder of the eval run {run}; give the run's folder: {_report(run)}"
            )
        if path.parent.name == "episodes" and not (path / "episodes").is_dir():
            run, arm = path.parent.parent, path.name
            return (
                f"that is the folder of the arm {arm} of the eval run {run}; give the run's folder: "
                f"{_report(run)}, or one episode of it: {_report(run)} --episode {arm}/seed-<N>"
            )
        return None
    if path.name in _RUN_PAGES and (path.parent / "episodes").is_dir():
        run = path.parent
        return (
            f"that is {_RUN_PAGES[path.name]} of the eval run {run}, not an event log; to draw the run, give "
            f"its folder: {_report(run)}"
        )
    seed = _SEED.fullmatch(path.name)
    if seed and path.parent.parent.name == "episodes":
        run, arm = path.parent.parent.parent, path.parent.name
        what = "record" if seed["kind"] == ".json" else "page"
        return (
            f"that is the {what} of the episode {arm}/seed-{seed['seed']} of the eval run {run}, not its "
            f"event log; to draw it, run {_report(run)} --episode {arm}/seed-{seed['seed']}"
        )
    if path.suffix == ".html" and path.is_file():
        return (
            "that is an HTML page, not an event log; give a JSON-lines event log (zorkmcp play's "
            "logs/zorkmcp_events.jsonl, an eval episode's seed-<N>.events.jsonl) or an eval run's folder"
        )
    return None


def _report(run: Path) -> str:
    """``zorkmcp report RUN``: the command that draws the run."""
    return f"zorkmcp report {run}"


_LISTED = 5
"""Runs or logs of a folder that is neither that the line naming them lists; past them, how many more."""


_PLACES = ("runs", "logs")
"""Where a project keeps what the report draws: ``zorkmcp eval``'s runs (``runs/<UTC timestamp>``) and
``zorkmcp play``'s event log (``logs/zorkmcp_events.jsonl``)."""


def _not_a_run(folder: Path, episode: str | None) -> str | None:
    """What to give instead of ``folder``, which has no ``episodes/``, when it holds eval runs (the
    ``runs/`` that ``zorkmcp eval`` fills) or event logs (``zorkmcp play``'s ``logs/``), or its
    ``runs/`` or ``logs/`` does (a project's folder): the most recent of them. ``None``: none. Each was
    "not an eval run folder; run zorkmcp eval first" (with ``--episode``: "no episode"), to a reader
    whose runs or logs were right there."""
    try:
        for place in (folder, *(folder / name for name in _PLACES)):
            if not place.is_dir():
                continue
            entries = sorted(place.iterdir(), key=lambda entry: entry.name)
            runs = [entry for entry in entries if (entry / "episodes").is_dir()]
            logs = [entry for entry in entries if entry.name.endswith(".jsonl") and entry.is_file()]
            found, what = (runs, "eval run(s)") if runs else (logs, "event log(s)")
            if found:
                break
        else:
            return None
        # a run's episodes/ changes when the run starts its arms (its folder, also when a page is drawn)
        latest = max(found, key=lambda entry: (entry / "episodes" if runs else entry).stat().st_mtime)
    except OSError:  # a folder that cannot be listed, an entry gone meanwhile: said as before
        return None
    names = ", ".join(entry.relative_to(folder).as_posix() for entry in found[:_LISTED])
    if len(found) > _LISTED:
        names += f" and {len(found) - _LISTED} more"
    picked = f" --episode {episode}" if episode is not None else ""
    recent = " (the latest)" if len(found) > 1 else ""
    return (
        f"not an eval run folder (no episodes/ inside), but it holds {len(found)} {what}: {names}; give "
        f"one: {_report(latest)}{picked}{recent}"
    )


def _check_output(output: Path) -> None:
    """``--output`` names a file in a folder that is there: checked before the page is drawn.

    Raises:
        ReportInputError: it is a folder, or its folder is missing or a file.
    """
    from .eval._results import ReportInputError

    nothing = "(nothing was written)"
    if output.is_dir():
        raise ReportInputError(
            f"--output {output}: that is a folder; name the page's file: --output {output / 'report.html'} "
            f"{nothing}"
        )
    folder = output.parent
    if folder.exists() and not folder.is_dir():
        raise ReportInputError(
            f"--output {output}: {folder} is not a folder; pass another --output FILE.html {nothing}"
        )
    if not folder.exists():
        raise ReportInputError(
            f"--output {output}: its folder {folder} does not exist; create it (mkdir -p {folder}), or pass "
            f"another --output FILE.html {nothing}"
        )


def _render(path: Path, output: Path | None, episode: str | None) -> Path:
    from .eval._report import (
        draw_episode,
        find_episode_events,
        page_inputs,
        pick_episode,
        render_eval_report,
    )
    from .eval._results import ReportInputError, read_event_log, read_run

    instead = _part_of_a_run(path) if episode is None else None
    if instead is not None and path.is_dir():
        raise ReportInputError(f"{path}: {instead}")
    if path.is_dir() and not (path / "episodes").is_dir():
        other = _not_a_run(path, episode)
        if other is not None and not (path / "summary.json").exists():  # else: a run stopped early
            raise ReportInputError(f"{path}: {other}")
        read_run(path)  # not a run folder, or a run stopped before any episode ended: said so
    if path.is_dir():
        if episode is None:
            _check_page(output, path / "report.html", page_inputs(run_dir=path))
            if output is None:
                output = _default_page(path / "report.html")
            else:
                _check_output(output)
            return render_eval_report(path, output)
        _check_episode(path, episode)
        events = find_episode_events(path, episode)
        picked = None if events.name == f"{Path(episode).name}{_EPISODE_LOG}" else episode
        page = _page_beside(events)
        inputs = page_inputs(events=events, run_dir=path)
    else:
        events, picked = path, episode
        page = _page_beside(events, episode)
        inputs = page_inputs(events=events)
    log = read_event_log(events)  # a missing file, no episode, an unknown one: said before any check
    if instead is not None and not log.episodes and not log.sessions:  # a log may have any name
        raise ReportInputError(f"{path}: {instead}")
    chosen = pick_episode(log, picked)
    _check_page(output, page, inputs)
    if output is not None:
        _check_output(output)
    return draw_episode(log, chosen, output or _default_page(page))


def run_report(args: argparse.Namespace) -> int:
    """Run ``zorkmcp report``; 0 when the page is written, 2 on bad input (one line on stderr), 141
    when the reader of the page or of the line saying it was written went away, 1 when that line
    cannot be written for another reason."""
    from ._outputs import write_remedy, written_in_place
    from ._stdout import EXIT_READER_GONE, OutputError, output_failed, print_line
    from .eval._results import ReportInputError

    output = Path(args.output) if args.output else None
    try:
        written = _render(Path(args.path), output, args.episode)
    except ReportInputError as exc:
        cause = exc.__cause__
        if isinstance(cause, BrokenPipeError):  # -o /dev/stdout (or a named pipe): its reader went away
            return EXIT_READER_GONE
        remedy = f"; {write_remedy(cause)}, or pass --output FILE.html" if isinstance(cause, OSError) else ""
        print(f"zorkmcp report: {exc}{remedy}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (zorkmcp.cli); the page is written whole or not at all
        print("zorkmcp report: interrupted; nothing written", file=sys.stderr)
        return 130
    line = f"zorkmcp report: wrote {written}"
    if written_in_place(written):  # the page may have gone to stdout itself: this line goes beside it
        print(line, file=sys.stderr)
        return 0
    try:
        print_line(line)
    except OutputError as exc:  # | head, > /dev/full: the page is written, the line cannot be
        return output_failed(exc.error, f"zorkmcp report: wrote {written}, but ")
    return 0
