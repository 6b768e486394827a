"""The ``zorkmcp`` command: ``play``, ``tools``, ``call`` and ``report``."""

from __future__ import annotations

import argparse
import errno
import io
import json
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape
from rich.table import Table

from . import __version__
from ._argtypes import file_path, game_seed, http_url, turn_limit
from ._console import OutputConsole, TerminalConsole, Trimmed, WrappingHelpFormatter, say
from ._live import Progress as _Progress
from ._live import progress_line
from ._signals import interruption, stopped_status, stops_as_ctrl_c
from .errors import (
    CassetteError,
    ConfigError,
    GameError,
    LLMError,
    MCPError,
    MCPServerStartupError,
    RunWriteError,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from rich.console import Console

    from .config import Settings
    from .orchestrator import EpisodeSummary, Orchestrator

__all__ = ["DEFAULT_SEED", "build_parser", "main", "progress_line"]

DEFAULT_SEED = 12
"""The game's default RNG seed: Jericho's Zork I walkthrough reaches 350 points with it."""

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_CONFIG = 2
EXIT_INTERRUPTED = 130

PLAY_HELP = """\
Play Zork I with the agent. The game runs as an MCP server (per episode); the agent may use the
reasoning servers of mcp_config.json and the game's read-only tools (memory, get_map, inventory).
With no API key and no local base URL configured, the offline scripted model plays Jericho's
walkthrough (and says so)."""

PLAY_EPILOG = """\
progress: on a terminal a live view shows the turn against the turn limit (with a bar), score and
moves, location and last action, a score sparkline, the game's latest text, the agent's reasoning and
the recent tool calls (name, arguments, result, duration, outcome); it fits the terminal's size and
its last frame stays above the summary. When stdout is not a terminal, or is a dumb one (TERM=dumb),
one line per turn instead, e.g.
  turn=3 score=0/350 moves=3 tool_calls=0 location="North of House" action="n"
--quiet prints neither (only the banner and the summary). Control characters in the model's, the
tools' or the game's text are shown\xa0as\xa0escapes\xa0(\\x1b), never sent to the terminal.

logs: the JSON-lines event log and the episode log go to [tool.zorkgpt.files] json_log_file and
episode_log_file (default logs/zorkmcp_events.jsonl and logs/episode.log); they are appended to.
Relative log paths are relative to the CURRENT folder (as in ZorkGPT), not to the pyproject's folder
(~/ is the home folder).
Relative game_file_path and config_file ARE relative to the pyproject's folder.

exit status: 0 the episode ended (victory, game over, turn limit, or the end of a replayed cassette
whose recording was cut short); 1 a server or the model failed, or a log, the cassette (--record)
or --summary-json could not be written (a full disk); 2 a configuration, usage or game-file error,
a model that cannot call tools while MCP is on (ModelCompatibilityError), a cassette that is not
one, does not fit the run (--no-mcp for a recording with MCP on) or is being recorded by another
process, or a file play would write (a log, --summary-json, --record) that cannot be made there, or
that is another of them or a file play reads (checked before the episode starts); 130 interrupted
(Ctrl-C; the summary is still printed and every server is stopped); 143 the same, by SIGTERM; 129 by
SIGHUP (a terminal that closed); 141 when the reader of the output went away (| head)."""


def _play_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "play",
        help="play Zork I with the agent",
        description=PLAY_HELP,
        epilog=PLAY_EPILOG,
        formatter_class=WrappingHelpFormatter,
    )
    p.add_argument(
        "--game",
        metavar="PATH",
        help="story file (.z3/.z5), or a game's name such as zork1 (looked up in $ZORKMCP_GAMES_DIR, "
        "./games, then the package's games); default: $GAME (the same), then [tool.zorkgpt.files] "
        "game_file_path, then the copy of Zork I (MIT release 119) that ships with zorkmcp",
    )
    p.add_argument(
        "--turns",
        type=turn_limit,
        metavar="N",
        help="stop after N turns, at most 1000000 (default: with --replay, the recorded episode's; else "
        "[tool.zorkgpt.orchestrator] max_turns_per_episode, 500)",
    )
    p.add_argument(
        "--seed",
        type=game_seed,
        metavar="N",
        help=f"the game's random seed, for reproducible runs (default: {DEFAULT_SEED})",
    )
    p.add_argument("--model", metavar="NAME", help="model name (default: [tool.zorkgpt.llm] agent_model)")
    p.add_argument(
        "--base-url",
        metavar="URL",
        type=http_url,
        help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:11434/v1 for Ollama "
        "(default: [tool.zorkgpt.llm] agent_base_url or client_base_url, else OPENAI_BASE_URL, else "
        "https://openrouter.ai/api/v1)",
    )
    p.add_argument(
        "--no-mcp",
        action="store_true",
        help="no reasoning servers and no tools for the agent (like [tool.zorkgpt.mcp] enabled = false)",
    )
    p.add_argument(
        "--summary-json", type=file_path, metavar="PATH", help="write the episode summary as JSON to PATH"
    )
    cassette = p.add_mutually_exclusive_group()
    cassette.add_argument(
        "--record",
        type=file_path,
        metavar="FILE",
        help="write every request sent to the model and its reply to FILE (a cassette; no key or header); "
        "the run holds FILE until it ends: a second recording of it stops before anything starts",
    )
    cassette.add_argument(
        "--replay",
        type=file_path,
        metavar="FILE",
        help="play a recorded episode again with no model and no network (seed, turn limit and MCP on or "
        "off from the cassette unless --seed / --turns / --no-mcp is given; max_tool_iterations and the "
        "agent's sampling from the cassette); stops with a message naming the turn when the run differs",
    )
    p.add_argument(
        "--quiet", action="store_true", help="no per-turn progress; print the banner and the summary"
    )
    p.add_argument(
        "--pyproject",
        type=file_path,
        metavar="PATH",
        help="settings file (default: ./pyproject.toml); without a [tool.zorkgpt] table in it, the embedded "
        "defaults apply: MCP on with the embedded think server, per turn",
    )


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``zorkmcp`` command."""
    parser = argparse.ArgumentParser(
        prog="zorkmcp",
        description="A trio engine that lets an LLM agent use MCP tools while it plays Zork.",
    )
    parser.add_argument("--version", action="version", version=f"zorkmcp {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="{play,tools,call,eval,report}")
    _play_parser(sub)
    from ._cli_eval import add_eval_parser
    from ._cli_mcp import add_mcp_subcommands
    from ._cli_report import add_report_parser, run_report

    add_mcp_subcommands(sub)
    add_eval_parser(sub)
    add_report_parser(sub)
    sub.choices["report"].set_defaults(run=run_report)
    return parser


# -- display -----------------------------------------------------------------------------------------


def _summary_table(summary: EpisodeSummary, *, replay: str | None = None) -> Table:
    table = Table(title="Episode summary", show_header=False)
    # a narrow terminal folds a label or a value onto more lines, never cuts one ("locati…")
    table.add_column("what", style="bold", overflow="fold")
    table.add_column("value", overflow="fold")
    maximum = f" / {summary.max_score}" if summary.max_score is not None else ""
    table.add_row("score", f"{summary.score}{maximum}")
    table.add_row("moves", str(summary.moves))
    table.add_row("turns", str(summary.turns))
    table.add_row("location", escape(summary.location or "-"))
    table.add_row("victory", "yes" if summary.victory else "no")
    table.add_row("game over", "yes" if summary.game_over else "no")
    table.add_row("tool calls", str(summary.tool_calls))
    table.add_row("model requests", str(summary.llm_requests))
    table.add_row("tokens in / out", summary.tokens_in_out)
    kind = ["offline scripted model"] if summary.scripted else []
    kind += [f"replayed from the cassette {replay}"] if replay else []
    table.add_row("model", escape(summary.model + (f" ({', '.join(kind)})" if kind else "")))
    stopped = f"interrupted ({interruption()})" if summary.interrupted else summary.stopped
    table.add_row("stopped", escape(stopped + (f": {summary.error}" if summary.error else "")))
    return table


def _offline_banner(settings: Settings, base_url: str | None) -> str:
    from .llm._select import key_hint, key_variable, pick_base_url, shown_endpoint

    llm = settings.llm
    url, source = pick_base_url(llm, base_url)
    hint = key_hint(llm, url)
    return (
        f"[bold yellow]No LLM configured[/] (no API key for {escape(shown_endpoint(url, source))}): playing "
        "with the [bold]offline scripted model[/], which replays Jericho's walkthrough of the game — no LLM "
        f"is called. To play with a real model, set {key_variable(llm, url)}, or pass --base-url for a local "
        "server such as http://127.0.0.1:11434/v1 (Ollama)." + (f" {escape(hint)}." if hint else "")
    )


class _TerminalNotices:
    """A reader of the episode's event stream: warnings and errors also go to the terminal (stderr).

    Each message once: a ``per_turn`` server's tools are listed every turn, and a warning about them
    (an allow-list naming a tool it lacks) would otherwise come back every turn, 500 times in an
    episode. The logs keep every one.
    """

    def __init__(self, err: Console) -> None:
        self.err = err
        self._told: set[tuple[str, str]] = set()

    def emit(self, event_type: str, /, **fields: object) -> None:
        del event_type, fields

    def log(self, level: str, message: str, /) -> None:
        if level in ("WARNING", "ERROR") and (level, message) not in self._told:
            self._told.add((level, message))
            say(self.err, f"[yellow]{level.lower()}:[/] {escape(message)}")


# -- play --------------------------------------------------------------------------------------------


def _load_settings(args: argparse.Namespace) -> tuple[Settings, str]:
    """The settings ``play`` uses and where they came from, every file validated.

    ``--pyproject`` (else ``./pyproject.toml``) when it has ``[tool.zorkgpt]``, else the embedded
    defaults. The MCP config is read and checked here too, before the game, the servers or the
    model start, so a bad value is reported first (a replay's, once its cassette says whether MCP
    was on: :func:`_orchestrator`).
    """
    from .config import McpConfig, Settings, check_settings_file

    pyproject = Path(args.pyproject) if args.pyproject else Path("pyproject.toml")
    if args.pyproject:
        check_settings_file(pyproject)
    settings = Settings.load(pyproject)
    if settings.source is not None:
        origin = str(settings.source)
    else:
        shown = args.pyproject or "./pyproject.toml"
        origin = f"embedded defaults (no [tool.zorkgpt] in {shown})"
    if settings.mcp.enabled and not args.no_mcp and not args.replay:
        McpConfig.from_file(settings.mcp_config_path())
    return settings, origin


def _cmd_play(args: argparse.Namespace, console: Console, err: Console) -> int:
    orchestrator, origin = _orchestrator(args)
    orchestrator.recorder.add_listener(_TerminalNotices(err))
    replayed = orchestrator.replayed
    if replayed is not None and (args.model or args.base_url):  # harmless: said, not refused
        unused = [
            *([f"--model {args.model}"] if args.model else []),
            *(["--base-url"] if args.base_url else []),
        ]
        orchestrator.recorder.log(
            "WARNING",
            f"{' and '.join(unused)} {'are' if len(unused) > 1 else 'is'} not used with --replay: no "
            f"model is called, the cassette answers as the recorded model {replayed.model}",
        )
    progress = _Progress(console, quiet=args.quiet)

    def on_start(model: str, scripted: bool) -> None:
        _banner(console, args, orchestrator, model=model, scripted=scripted, origin=origin)
        episode = orchestrator.episode  # the live view shows its model use as it grows
        progress.start(orchestrator.turn_limit, episode.model_use if episode is not None else None)

    orchestrator.on_start = on_start
    orchestrator.on_turn = progress.turn
    try:
        summary = orchestrator.run()
    except (MCPError, LLMError, RunWriteError) as exc:
        if orchestrator.summary is None:  # before the episode started: main says what failed
            raise
        # It had started: the summary (table, --summary-json) says how it ended, as for any other end.
        progress.stop()
        ended, settings, unrecorded = orchestrator.summary, orchestrator.settings, _unrecorded(orchestrator)
        return _finish(args, console, err, ended, settings, stopped_by=exc, unrecorded=unrecorded)
    finally:
        progress.stop()
    return _finish(args, console, err, summary, orchestrator.settings, unrecorded=_unrecorded(orchestrator))


def _unrecorded(orchestrator: Orchestrator) -> bool:
    """Whether ``--record`` was asked for and nothing was written: the model answered no request."""
    cassette = orchestrator.recording
    return cassette is not None and not cassette.started


def _orchestrator(args: argparse.Namespace) -> tuple[Orchestrator, str]:
    """Settings (validated first), the story file, and the episode's orchestrator.

    A replay plays with what its cassette's header recorded (the seed, the turn limit, MCP on or
    off, ``max_tool_iterations`` and the agent's sampling), unless ``--seed``, ``--turns`` or
    ``--no-mcp`` is given (:class:`~zorkmcp.orchestrator.Orchestrator`).
    """
    from .config import McpConfig
    from .game import check_game_file, resolve_game_path
    from .llm import pick_base_url
    from .orchestrator import Orchestrator

    settings, origin = _load_settings(args)
    if not args.replay:  # an OPENAI_BASE_URL the client cannot use is refused as a bad setting is
        pick_base_url(settings.llm, args.base_url)
    game_path = resolve_game_path(
        args.game,
        settings.files.game_file_path,
        settings_base=settings.source.parent if settings.source is not None else None,
    )
    check_game_file(game_path)  # fail here, not as a game server that does not start
    orchestrator = Orchestrator(
        settings,
        game_path=game_path,
        seed=args.seed,
        max_turns=args.turns,
        mcp_enabled=False if args.no_mcp else None,
        model=args.model,
        base_url=args.base_url,
        record=Path(args.record) if args.record else None,
        replay=Path(args.replay) if args.replay else None,
    )
    if args.seed is None:
        orchestrator.seed = _cassette_seed(orchestrator)
    if args.replay and orchestrator.mcp_on:
        McpConfig.from_file(settings.mcp_config_path())
    _check_outputs(args, settings, game_path, mcp_on=orchestrator.mcp_on)
    return orchestrator, origin


def _check_outputs(args: argparse.Namespace, settings: Settings, game_path: Path, *, mcp_on: bool) -> None:
    """Every file the episode writes can be made where it goes, before the episode starts.

    And each is a file of its own: ``--summary-json logs/zorkmcp_events.jsonl`` would replace the
    event log of every earlier episode, ``--summary-json pyproject.toml`` the settings just read.
    Outputs written in place (``/dev/stdout``, a device, a named pipe) may be shared.
    """
    from ._outputs import check_apart, check_output

    files = settings.files
    where = (
        f"set another path in {settings.source}"
        if settings.source
        else (
            "run zorkmcp play from another folder, or set json_log_file and episode_log_file in "
            "[tool.zorkgpt.files] of a pyproject.toml (--pyproject PATH)"
        )
    )
    outputs = [  # (what, as the messages name it, the path, what to do)
        (f"[tool.zorkgpt.files] {key}", f"[tool.zorkgpt.files] {key} ({value})", Path(value), where)
        for key, value in (
            ("json_log_file", files.json_log_file),
            ("episode_log_file", files.episode_log_file),
        )
    ]
    outputs += [
        (flag, f"{flag} {value}", Path(value), f"pass another {flag}")
        for flag, value in (("--summary-json", args.summary_json), ("--record", args.record))
        if value
    ]
    inputs = [("the game", game_path)]
    if settings.source is not None:
        inputs.append(("the settings file", settings.source))
    if mcp_on:
        inputs.append(("the MCP config", settings.mcp_config_path()))
    if args.replay:
        inputs.append(("the cassette played", Path(args.replay)))
    for _, named, path, remedy in outputs:
        check_output(path, named, remedy)
    check_apart(outputs, [(f"{what}, which play reads", path) for what, path in inputs])


def _banner(
    console: Console,
    args: argparse.Namespace,
    orchestrator: Orchestrator,
    *,
    model: str,
    scripted: bool,
    origin: str,
) -> None:
    from .llm._select import BASE_URL_ENV, pick_base_url, shown_endpoint

    where = ""
    if args.replay:
        say(console, f"[bold]Replaying[/] {escape(args.replay)}: no model is called.")
    elif scripted:
        say(console, _offline_banner(orchestrator.settings, args.base_url), wrapped=True)
    else:  # an endpoint the command line and the settings do not name is said: OPENAI_BASE_URL's
        url, source = pick_base_url(orchestrator.settings.llm, args.base_url)
        where = f" at {shown_endpoint(url, source)}" if source == BASE_URL_ENV else ""
    mcp = "MCP on" if orchestrator.mcp_on else "MCP off (no tools)"
    replayed, limit = orchestrator.replayed, orchestrator.turn_limit
    held = (
        f" (the cassette holds {replayed.turns})"
        if replayed is not None and args.turns is None and replayed.turns < limit
        else ""
    )
    say(
        console,
        f"[bold]zorkmcp play[/]: {escape(orchestrator.game_path.name)}, seed {orchestrator.seed}, "
        f"model {escape(model)}{escape(where)}, {mcp}, up to {limit} turn{'' if limit == 1 else 's'}{held}",
    )
    say(console, f"settings: {escape(origin)}")


def _finish(
    args: argparse.Namespace,
    console: Console,
    err: Console,
    summary: EpisodeSummary,
    settings: Settings,
    *,
    stopped_by: MCPError | LLMError | RunWriteError | None = None,
    unrecorded: bool = False,
) -> int:
    """The summary table, the log files, ``--summary-json``, and the exit status.

    ``stopped_by``: the server's or the model's error, or the file that could not be written, that
    ended the episode; it names the kind of failure in the last line and decides the exit status
    (:func:`_failure`). ``unrecorded``: ``--record`` wrote nothing (the episode ended before the
    model answered a request), which a warning says, as the cassette is not there to say it.
    """
    from ._outputs import write_atomically

    console.print(Trimmed(_summary_table(summary, replay=args.replay)))
    files = settings.files
    say(
        console,
        f"Logs: {escape(files.json_log_file)} (events), {escape(files.episode_log_file)} (episode)",
        style="dim",
    )
    if unrecorded:
        kept = " (the file that was there is left as it was)" if os.path.isfile(args.record) else ""
        say(
            err,
            f"[yellow]warning:[/] --record {escape(args.record)}: nothing was recorded, as the episode "
            f"ended before the model answered a request; the cassette was not written{escape(kept)}",
        )
    if args.summary_json:
        path = Path(args.summary_json)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(path, json.dumps(summary.as_json(), indent=2) + "\n")
        except OSError as exc:  # a full disk: the summary above is what is left
            say(
                err,
                f"[bold red]zorkmcp play: --summary-json {escape(str(path))}: cannot be written[/] "
                f"({escape(exc.strerror or str(exc))})",
            )
            return EXIT_FAILED
    if summary.interrupted:
        return EXIT_INTERRUPTED
    if summary.error is not None:
        kind, code = (
            _failure(stopped_by) if stopped_by is not None else ("the episode stopped early", EXIT_FAILED)
        )
        said = str(stopped_by) if stopped_by is not None else summary.error
        said = said.splitlines()[0] if said else said
        if isinstance(stopped_by, RunWriteError):  # what to mend: the file and the reason are in `said`
            said += f"; what it held stays valid; {stopped_by.remedy}"
        # its first line: the whole of it is in the table above, and was told as it came
        say(err, f"[bold red]zorkmcp play: {kind}:[/] {escape(said)}")
        return code
    return EXIT_OK


def _cassette_seed(orchestrator: Orchestrator) -> int:
    """The seed a replayed cassette was recorded with (``--replay``), else :data:`DEFAULT_SEED`."""
    replayed = orchestrator.replayed
    seed = replayed.header.get("seed") if replayed is not None else None
    return seed if isinstance(seed, int) and not isinstance(seed, bool) else DEFAULT_SEED


def main(
    argv: Sequence[str] | None = None, *, console: Console | None = None, err: Console | None = None
) -> int:
    """Entry point of the ``zorkmcp`` command.

    Args:
        argv: the arguments (default ``sys.argv[1:]``).
        console: where ``play`` prints (default: stdout).
        err: where ``play`` prints errors and warnings (default: stderr).

    Returns:
        The exit status (see ``zorkmcp play --help``).
    """
    _tolerant_streams()
    _quiet_library_logs()
    parser = build_parser()
    args = parser.parse_args(argv)
    with stops_as_ctrl_c():  # SIGTERM, SIGHUP and a reader gone take the Ctrl-C path (exit 143, 129, 141)
        try:
            code = args.run(args) if args.command != "play" else _main_play(args, console, err)
        except OSError as exc:
            if exc.errno == errno.ENAMETOOLONG:
                # A path given to read (--pyproject, --game, GAME, a log to draw): the system refuses to
                # look at a name this long at all (even Path.exists raises), wherever it is first looked at.
                print(
                    f"zorkmcp {args.command}: {exc.filename}: {exc.strerror}; give a shorter path",
                    file=sys.stderr,
                )
            elif isinstance(exc, FileNotFoundError) and not _cwd_exists():
                # The shell's folder was removed: every relative path (./pyproject.toml, logs/, runs/)
                # fails, wherever it is first made absolute. Nothing was played or written.
                print(
                    f"zorkmcp {args.command}: the current folder no longer exists (it was removed); "
                    "cd to a folder that exists and run the command again",
                    file=sys.stderr,
                )
            else:
                raise
            code = EXIT_CONFIG
    return stopped_status(code, EXIT_INTERRUPTED)


def _cwd_exists() -> bool:
    try:
        os.getcwd()
    except FileNotFoundError:
        return False
    return True


def _quiet_library_logs() -> None:
    """The MCP SDK's and matplotlib's own log records do not reach the terminal.

    With no logging configured, Python prints a warning or an error of any logger on stderr: the
    SDK logs ``Error in sse_reader`` with a 60-line traceback when a remote server goes away, and
    ``Session termination failed: 400`` at the end of a session. zorkmcp says each of these once, in
    its own words (the error result of the call, the server's restart); the SDK's records add
    nothing a user can act on. matplotlib (``zorkmcp eval``'s report) warns that it made a temporary
    cache folder when the home folder cannot take one (a read-only home on a cluster node), and asks
    for ``MPLCONFIGDIR``: the report is drawn all the same. A program that configures logging itself
    still gets them.
    """
    for name in ("mcp", "matplotlib"):
        library = logging.getLogger(name)
        if not any(isinstance(handler, logging.NullHandler) for handler in library.handlers):
            library.addHandler(logging.NullHandler())


def _tolerant_streams() -> None:
    """A character the terminal's encoding lacks is written as its escape (``\\u2026``), not a traceback.

    ``PYTHONIOENCODING=ascii`` or a Latin-1 locale: the commands' own text has dashes and ellipses,
    and the game's or a tool's text anything. The files zorkmcp writes are UTF-8 whatever the locale.
    """
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors == "strict":
            stream.reconfigure(errors="backslashreplace")


def _main_play(args: argparse.Namespace, console: Console | None, err: Console | None) -> int:
    console = console if console is not None else OutputConsole(emoji=False)
    err = err if err is not None else TerminalConsole(stderr=True, emoji=False)

    try:
        return _cmd_play(args, console, err)
    except (GameError, CassetteError, MCPError, LLMError, RunWriteError) as exc:  # before the episode started
        kind, code = _failure(exc)
        say(err, f"[bold red]zorkmcp play: {kind}:[/] {escape(str(exc))}")
        return code
    except KeyboardInterrupt:  # before the episode started (reading settings, finding the game)
        err.print("zorkmcp play: interrupted")
        return EXIT_INTERRUPTED


def _failure(exc: BaseException) -> tuple[str, int]:
    """What failed, in words, and the exit status it gives."""
    if isinstance(exc, GameError):
        return "game error", EXIT_CONFIG
    if isinstance(exc, CassetteError):
        return "cassette error", EXIT_CONFIG
    if isinstance(exc, ConfigError):  # an MCPError (Requirement 9.3): bad settings or mcp_config.json
        return f"configuration error ({type(exc).__name__})", EXIT_CONFIG
    if isinstance(exc, RunWriteError):  # a full disk: the episode stopped, as when a server fails
        return f"a file could not be written ({type(exc).__name__})", EXIT_FAILED
    if isinstance(exc, MCPServerStartupError):
        return f"an MCP server did not start ({type(exc).__name__})", EXIT_FAILED
    if isinstance(exc, MCPError):
        return type(exc).__name__, EXIT_CONFIG
    return f"the model failed ({type(exc).__name__})", EXIT_FAILED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
