"""``zorkmcp eval``: play many seeded episodes per arm and report mean ± standard error.

Exit codes: 0 every episode played; 1 some episode failed (its file has ``error``; the others and
the summary are written), or a file of the run could not be written (a full disk: the run stopped,
the files written before stay valid); 2 a bad eval file, setting, flag or game file, a run folder
that cannot be made, that another ``zorkmcp eval`` is writing to (it holds the folder for its whole
run) or (without ``--resume``) holds another run's episodes, a ``summary.json``,
``summary.csv`` or ``report.html`` in it that zorkmcp did not write, an arm whose ``api_key_env``
names a variable that is not set, a blank model name, a model endpoint that gives no HTTP answer
(within a request's ``timeout_seconds``, once it has the request), or a ``--resume`` whose finished
episodes had other settings (nothing started); 130 interrupted (Ctrl-C: the finished episodes and
the summary of them are written; a second Ctrl-C while they are is held back, a third stops the
writing and the last line says what was not written); 143 the same, by SIGTERM; 129 by SIGHUP; 141
when the reader of the output went away.
"""

from __future__ import annotations

import argparse
import gc
import os
import re
import sys
import time
from collections import Counter
from contextlib import ExitStack, contextmanager, suppress
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs
from rich import box
from rich.console import Group
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Column, Table
from rich.text import Text

from ._argtypes import MAX_SEED, file_path, game_seed, http_url, positive_int
from ._console import (
    OutputConsole,
    TerminalConsole,
    Trimmed,
    WrappingHelpFormatter,
    keys_not_echoed,
    same_terminal,
    say,
)
from ._controls import visible_controls
from ._live import redraws
from ._signals import ctrl_c_again_later, ctrl_c_in_finalizers, held_ctrl_c
from ._urls import safe_url
from .errors import ConfigError, GameError, RunWriteError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from rich.console import Console

    from .config import Settings
    from .eval import ArmSpec, EpisodeSpec, EvalFile, EvalOutcome, EvalPlan
    from .eval._ray import RayPlacement

__all__ = [
    "EVAL_EPILOG",
    "EVAL_HELP",
    "add_eval_parser",
    "arm_lines",
    "build_plan",
    "cmd_eval",
    "episode_line",
    "failed_line",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_CONFIG = 2
EXIT_INTERRUPTED = 130

EVAL_HELP = """\
Play many seeded episodes per arm (a configuration of the agent), up to K at once, and report
mean score ± standard error per arm and the difference between arms with 95% intervals (Welch's,
and paired over the seeds both arms scored) and what they say: which arm scores higher, if either.
Every arm plays the seeds S … S+N-1 (the game's RNG seed). Without FILE there is one arm with the
settings zorkmcp play would use; --compare-mcp makes two, "mcp" and "no-mcp"."""

EVAL_EPILOG = """\
FILE.toml: an [eval] table (episodes, seed, max_turns, concurrency, game, out) and [[arms]] tables
(name, model, base_url, mcp, mcp_config, api_key_env, temperature, top_p, top_k, min_p, max_tokens).
Relative paths in it are relative to its folder. Flags override the file, but not so far that two
of its arms would play the same (--no-mcp on arms that differ only in mcp: exit 2).

written to --out (default runs/<UTC timestamp>): episodes/<arm>/seed-<N>.json (atomically, when
the episode ends) and seed-<N>.events.jsonl, then summary.json, summary.csv and (once an episode
has finished) report.html. Each arm's mcp_config.json is read once, when the run starts. A run
holds its folder until it ends (.zorkmcp-eval.lock, removed then): a second run into it is refused.
--resume plays only the episodes whose file is missing or is not that episode's record (it does
not parse, a field is not of the kind zorkmcp writes, its arm or seed differ), and stops (exit 2) if a
finished one was played with another model or endpoint, turn limit, game or story file, sampling,
tools or agent setting, or other servers (or a server set up otherwise); --retry-failed also plays
again the episodes that failed. A resume removes the temporary files (.NAME.PID.tmp) that a run
killed while writing a file left, and says so.

exit status: 0 every episode played; 1 some episode failed (recorded with its error, the run went
on), or a file of the run could not be written (a full disk: the run stopped, the files written
before stay); 2 a bad eval file, setting or flag, a run folder that cannot be made (or that another
zorkmcp eval is writing to, or that holds another run's episodes, without --resume, or a
summary.json, summary.csv or report.html that zorkmcp did not write), an arm whose api_key_env
names a variable that is not set, a blank model name, a model endpoint that gives no HTTP answer
(within a request's timeout_seconds, once it has the request) or answers its GET /models with a 401
that every request would get (no key sent, or invalid_api_key), or a resume with other settings
(nothing started); 130 interrupted (Ctrl-C: episodes in flight are stopped, finished files stay, the
summary covers them; Ctrl-C again while it is written is held back, a third time stops it there and
says what was not written); 143 the same, by SIGTERM; 129 by SIGHUP (a terminal that closed); 141
when the reader of the output went away (| head)."""


def add_eval_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``zorkmcp eval``."""
    p = sub.add_parser(
        "eval",
        help="evaluate the agent over many seeded episodes (arms side by side)",
        description=EVAL_HELP,
        epilog=EVAL_EPILOG,
        formatter_class=WrappingHelpFormatter,
    )
    p.add_argument(
        "file", nargs="?", type=file_path, metavar="FILE.toml", help="the eval file ([eval] and [[arms]])"
    )
    p.add_argument(
        "--episodes",
        type=positive_int,
        metavar="N",
        help="episodes (seeds) per arm (default 10, at most 1000000)",
    )
    p.add_argument("--seed", type=game_seed, metavar="S", help="the first seed (default 12)")
    p.add_argument(
        "--concurrency",
        type=positive_int,
        metavar="K",
        help="episodes at once (default 4; lowered, and said, past what this machine's memory holds)",
    )
    p.add_argument(
        "--turns",
        type=_turn_limit,
        metavar="T",
        help="turns per episode at most (default: max_turns_per_episode; at most 1000000)",
    )
    p.add_argument("--game", metavar="PATH", help="story file or game name (as for zorkmcp play)")
    p.add_argument("--model", metavar="NAME", help="model name for every arm")
    p.add_argument(
        "--base-url",
        metavar="URL",
        type=http_url,
        help="OpenAI-compatible endpoint for every arm (default: the arm's base_url, else [tool.zorkgpt.llm] "
        "agent_base_url or client_base_url, else OPENAI_BASE_URL, else https://openrouter.ai/api/v1)",
    )
    p.add_argument("--no-mcp", action="store_true", help="no tools for any arm")
    p.add_argument("--compare-mcp", action="store_true", help='two arms: "mcp" (tools) and "no-mcp"')
    p.add_argument(
        "--out",
        metavar="DIR",
        help="the run's folder (default runs/<UTC timestamp>, or with -2… if taken)",
    )
    p.add_argument("--resume", action="store_true", help="skip episodes already finished in --out")
    p.add_argument(
        "--retry-failed",
        action="store_true",
        help="--resume, and also play again the episodes that failed (their files are replaced)",
    )
    p.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help="run each episode as a Ray task: a local Ray runtime, or join ADDRESS (auto, ray://head:10001)",
    )
    p.add_argument(
        "--quiet", action="store_true", help="no live progress: the settings, then the summary only"
    )
    p.add_argument(
        "--pyproject", type=file_path, metavar="PATH", help="settings file (default ./pyproject.toml)"
    )
    p.set_defaults(run=cmd_eval)


def _turn_limit(text: str) -> int:
    """``text`` as a turn limit, 1 to :data:`~zorkmcp.eval._spec.MAX_TURNS` (argparse ``type=``)."""
    from .eval._spec import MAX_TURNS

    value = positive_int(text)
    if value > MAX_TURNS:  # past 2**53 its record would be no record: unread by summary, report, resume
        raise argparse.ArgumentTypeError(
            f"must be at most {MAX_TURNS}, as max_turns_per_episode, got {text!r}"
        )
    return value


# -- the plan ---------------------------------------------------------------------------------------


def _arms(args: argparse.Namespace, settings: Settings, file: EvalFile | None) -> tuple[ArmSpec, ...]:
    from .eval import ArmSpec

    if args.no_mcp and args.compare_mcp:
        raise ConfigError("--no-mcp and --compare-mcp contradict each other; pass one")
    arms = list(file.arms) if file is not None else []
    if not arms:
        arms = [ArmSpec(name="mcp" if settings.mcp.enabled and not args.no_mcp else "no-mcp")]
    if args.compare_mcp:
        if len(arms) > 1:
            names = ", ".join(arm.name for arm in arms)
            raise ConfigError(
                f"--compare-mcp makes two arms, mcp and no-mcp, from one, but {args.file} defines "
                f"{len(arms)} ({names}); leave --compare-mcp out (the arms' mcp keys decide), or keep one "
                "arm in the file"
            )
        arms = [attrs.evolve(arms[0], name="mcp", mcp=True), attrs.evolve(arms[0], name="no-mcp", mcp=False)]
    overrides: dict[str, Any] = {}
    if args.no_mcp:
        overrides["mcp"] = False
    if args.model is not None:
        if not args.model.strip():  # it would be sent as it is
            raise ConfigError("--model is blank: give the model's name, or leave --model out")
        overrides["model"] = args.model
    if args.base_url:
        overrides["base_url"] = args.base_url
    played = tuple(attrs.evolve(arm, **overrides) for arm in arms)
    if file is not None and not args.compare_mcp:
        _check_flags_keep_arms_apart(args, settings, file.arms, played)
    return played


_FLAG_OF_KEY = {"mcp": "--no-mcp", "mcp_config": "--no-mcp", "model": "--model", "base_url": "--base-url"}
"""The keys of an arm that a flag sets for every arm, and the flag."""


def _plays(arm: ArmSpec, settings: Settings) -> dict[str, Any]:
    """What sets an arm's play apart from another's: its keys, as they take effect.

    Tools off, the arm's ``mcp_config`` changes nothing; ``api_key_env`` only says where the key is.
    """
    enabled = arm.mcp if arm.mcp is not None else settings.mcp.enabled
    keys = ("model", "base_url", "temperature", "top_p", "top_k", "min_p", "max_tokens")
    return {
        "mcp": enabled,
        "mcp_config": arm.mcp_config if enabled else None,
        **{key: getattr(arm, key) for key in keys},
    }


def _check_flags_keep_arms_apart(
    args: argparse.Namespace, settings: Settings, given: list[ArmSpec], played: tuple[ArmSpec, ...]
) -> None:
    """The flags that set a key for every arm (``--no-mcp``, ``--model``, ``--base-url``) leave the
    file's arms apart: two arms that differ only in such keys would play the same, and their
    comparison (the point of two arms) would say nothing, with nothing said about it.

    Two arms that the file itself sets up alike (an A/A run, to see the spread) are the user's to play.

    Raises:
        ConfigError: the first two arms the flags made alike, naming the file, the arms, the keys that
            set them apart and the flags that erased the difference.
    """
    before = [_plays(arm, settings) for arm in given]
    after = [_plays(arm, settings) for arm in played]
    for j in range(len(given)):
        for i in range(j):
            if before[i] == before[j] or after[i] != after[j]:
                continue
            keys = [key for key in before[i] if before[i][key] != before[j][key]]
            flags = list(dict.fromkeys(_FLAG_OF_KEY[key] for key in keys if key in _FLAG_OF_KEY))
            apart = " and ".join(f"{given[k].name} ({_key_values(given[k], keys)})" for k in (i, j))
            what = {
                "--no-mcp": "--no-mcp turns the tools off",
                "--model": f"--model sets the model ({args.model})",
                "--base-url": f"--base-url sets the endpoint ({safe_url(args.base_url or '')})",
            }
            raise ConfigError(
                f"{args.file}: {' and '.join(what[flag] for flag in flags)} for every arm, and arms {apart} "
                f"differ only in {' and '.join(keys)}, so they would play the same and "
                f"comparing them would say nothing; leave {' and '.join(flags)} out to compare them, or "
                "keep one of the two in the file (nothing was played)"
            )


def _key_values(arm: ArmSpec, keys: list[str]) -> str:
    """``mcp = true``: an arm's keys as the file has them (``mcp not set``)."""
    import json

    shown = []
    for key in keys:
        value = getattr(arm, key)
        text = json.dumps(value, ensure_ascii=False)
        shown.append(f"{key} not set" if value is None else f"{key} = {text}")
    return ", ".join(shown)


def _check_key_variables(args: argparse.Namespace, arms: tuple[ArmSpec, ...]) -> None:
    """An arm's ``api_key_env`` names a variable that is set (and not empty) in this environment.

    Unset, an arm with a remote endpoint would play the offline scripted model (as with no key at
    all) and report the walkthrough's scores as the model's; the arm named the variable, so it meant
    a key to be there. Not on a Ray cluster, whose workers read their own environment.

    Raises:
        ConfigError: the first arm whose variable is unset or empty, naming the arm and the variable.
    """
    for arm in arms:
        name = arm.api_key_env
        if name is not None and not os.environ.get(name, "").strip():  # as the client reads it
            state = "is empty" if name in os.environ else "is not set"
            raise ConfigError(
                f"{args.file}: arm {arm.name} has api_key_env = {name!r}, but {name} {state} in this "
                "environment, so the arm would play without its key (for a remote endpoint, the offline "
                f"scripted model); export {name}, or remove api_key_env from the arm (then "
                "OPENROUTER_API_KEY is read for OpenRouter, OPENAI_API_KEY for any other endpoint)"
            )


def _reserve(folder: Path) -> Path:
    """The default run folder, made now: ``runs/<timestamp>``, or ``-2``, ``-3``… after it if taken.

    Two runs started in the same second would otherwise share one folder, one's episodes and
    summary over the other's. Making it is what claims it (``mkdir`` fails for the second), so it
    exists from the start; :func:`_run` removes it again if the run wrote nothing in it.
    """
    folder.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", *(f"-{n}" for n in range(2, 1000))):
        candidate = folder.with_name(folder.name + suffix)
        try:
            candidate.mkdir()
        except FileExistsError:
            continue
        return candidate
    raise ConfigError(f"{folder.parent}: every run folder named {folder.name}[-N] is taken; pass --out DIR")


_EPISODE_FILE = re.compile(r"seed-(0|[1-9][0-9]*)\.(?:json|events\.jsonl)")


def _check_episode_folders(out: Path, named: str, arms: tuple[ArmSpec, ...], seeds: range) -> None:
    """Before anything starts: can every episode's files be written where they go?

    A folder in the place of an episode's record (``seed-12.json/``) would otherwise be found when
    the episode ends: played (with a real model, paid) for nothing, and the run stopped (exit 1);
    an arm's folder that is not writable, when its first episode starts. (An arm's folder that is
    a file stops the run as its first episode starts, before the model is asked: that stays a file
    the run cannot write, exit 1.)

    Raises:
        ConfigError: the first such path, naming it, the arm and what to do.
    """
    nothing = "(nothing was played or replaced)"
    for arm in arms:
        folder = out / "episodes" / arm.name
        if not folder.is_dir():
            continue
        if not os.access(folder, os.W_OK | os.X_OK):
            raise ConfigError(
                f"{named}: {folder}, where the episodes of arm {arm.name} go, is not writable; make it "
                f"writable, or pass another --out {nothing}"
            )
        with os.scandir(folder) as entries:
            for entry in entries:
                found = _EPISODE_FILE.fullmatch(entry.name)
                if found is not None and int(found[1]) in seeds and entry.is_dir():
                    raise ConfigError(
                        f"{named}: {entry.path} is a folder where a file of episode {arm.name} seed "
                        f"{found[1]} goes; move it, or pass another --out {nothing}"
                    )


def build_plan(args: argparse.Namespace, settings: Settings, *, claims: ExitStack | None = None) -> EvalPlan:
    """The plan from the flags, the eval file and the settings; every file is checked here.

    Args:
        args: the parsed flags.
        settings: the ``[tool.zorkgpt]`` settings.
        claims: where the claim on the run's folder is kept until the run ends
            (:func:`~zorkmcp.eval._spec.claim_run_folder`: no other ``zorkmcp eval`` writes to it
            meanwhile); ``None``: the folder is not claimed (a plan that is only looked at).

    Raises:
        ConfigError: a bad eval file, flag combination or ``mcp_config.json`` of an arm, a run
            folder that cannot be made, or one another ``zorkmcp eval`` is writing to.
        GameError: the story file cannot be played.
    """
    from .cli import DEFAULT_SEED
    from .config import McpConfig
    from .eval import EvalPlan, load_eval_file
    from .eval._spec import DEFAULT_CONCURRENCY, DEFAULT_EPISODES, check_run_folder, claim_run_folder
    from .game import check_game_file, resolve_game_path

    file = load_eval_file(Path(args.file)) if args.file else None
    table = file.eval if file is not None else None

    def pick(flag: Any, key: str, default: Any) -> Any:
        from_file = getattr(table, key) if table is not None else None
        return flag if flag is not None else from_file if from_file is not None else default

    def in_file(flag: Any, key: str) -> str | None:
        """The value's key when the file gave it: ``eval.seed``."""
        return (
            f"eval.{key}" if flag is None and table is not None and getattr(table, key) is not None else None
        )

    episodes, seed = pick(args.episodes, "episodes", DEFAULT_EPISODES), pick(args.seed, "seed", DEFAULT_SEED)
    _check_seeds(seed, episodes, args.file, in_file(args.seed, "seed"), in_file(args.episodes, "episodes"))

    game_path = resolve_game_path(
        pick(args.game, "game", None),
        settings.files.game_file_path,
        settings_base=settings.source.parent if settings.source is not None else None,
        cli_source="--game" if args.game is not None else f"{args.file}: eval.game",
    )
    check_game_file(game_path)
    out = pick(args.out, "out", None)
    if out is not None and not str(out).strip():  # "" would be the current folder, unasked
        given = "--out" if args.out is not None else f"{args.file}: eval.out"
        raise ConfigError(f"{given} is empty: give the run's folder, or leave it out for runs/<timestamp>")
    if out is None:
        if args.resume or args.retry_failed:
            flag = "--retry-failed" if args.retry_failed else "--resume"
            raise ConfigError(f"{flag} needs the run's folder: pass --out DIR (or set out in [eval])")
        out = f"runs/{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"
    if args.out is not None:
        named = f"--out {args.out}"
    elif table is not None and table.out is not None:
        named = f"{args.file}: eval.out"
    else:
        named = f"the default --out ({out})"
    default = named.startswith("the default")  # claimed once reserved, below
    check_run_folder(
        Path(out).expanduser(),
        named,
        resuming=bool(args.resume or args.retry_failed),
        claims=None if default else claims,
    )
    arms = _arms(args, settings, file)
    if args.ray in (None, "local"):  # on a cluster each worker reads its own environment
        _check_key_variables(args, arms)
    # OPENAI_BASE_URL is read here, once: every episode (a Ray worker's too) plays against this one
    from .llm._select import BASE_URL_ENV, environ_base_url, pick_base_url  # here: the engine loads now

    openai_base_url = environ_base_url()
    for arm in arms:  # one the client cannot use, where it decides, stops the run before anything starts
        pick_base_url(
            arm.settings_for(settings).llm,
            arm.base_url,
            environ={BASE_URL_ENV: openai_base_url} if openai_base_url else {},
        )
    for index, arm in enumerate(arms):  # a bad mcp_config.json stops the run before anything starts
        arm_settings = arm.settings_for(settings)
        if arm_settings.mcp.enabled:
            path = arm_settings.mcp_config_path()
            try:
                McpConfig.from_file(path)
            except ConfigError as exc:
                # The seeds' text ("MCP is enabled but…; set mcp.enabled = false in pyproject.toml")
                # is play's; here the arm decides, so the message names the arm and where it came from.
                if arm.mcp_config is not None:
                    given = f"{args.file}: arms[{index}].mcp_config"
                    instead = "point the arm's mcp_config at another, or set mcp = false for the arm"
                else:
                    given = f"[tool.zorkgpt.mcp] config_file of {settings.source or 'the embedded settings'}"
                    instead = "set config_file to another, or pass --no-mcp"
                if not isinstance(exc.__cause__, FileNotFoundError):  # a bad file: whose is it?
                    if isinstance(exc.__cause__, IsADirectoryError):  # mcp_config = "." or "configs/"
                        raise ConfigError(
                            f"{path} (arm {arm.name}, from {given}) is a folder, not an mcp_config.json; "
                            f"name the file in it, {instead}"
                        ) from exc
                    raise ConfigError(f"arm {arm.name}: {exc}") from exc
                raise ConfigError(
                    f"{path} (arm {arm.name}, from {given}): no such file; create it (examples/ has "
                    f"templates), {instead}"
                ) from exc
    if not default:  # the default folder is new: nothing is in it
        _check_episode_folders(Path(out).expanduser(), named, arms, range(seed, seed + episodes))
    if default:  # last: every check above has passed
        args.reserved_parent = None if Path(out).parent.exists() else Path(out).parent
        out = args.reserved_out = _reserve(Path(out))
        if claims is not None:
            claims.enter_context(claim_run_folder(out, f"the default --out ({out})"))
    return EvalPlan(
        arms=arms,
        episodes=episodes,
        seed=seed,
        max_turns=pick(args.turns, "max_turns", settings.orchestrator.max_turns_per_episode),
        concurrency=pick(args.concurrency, "concurrency", DEFAULT_CONCURRENCY),
        game_path=game_path,
        out=Path(out).expanduser(),
        settings=settings,
        openai_base_url=openai_base_url,
    )


def _check_seeds(
    seed: int, episodes: int, file: str | None, seed_key: str | None, episodes_key: str | None
) -> None:
    """An arm's episodes fit in one run (:data:`~zorkmcp.eval._spec.MAX_EPISODES`) and their seeds in
    the interpreter's ``int``.

    Args:
        seed: the first seed.
        episodes: the episodes per arm.
        file: the eval file, for the message.
        seed_key: ``eval.seed`` when the file gave the seed; ``None``: ``--seed``, or the default.
        episodes_key: ``eval.episodes`` when the file gave the episodes, as for the seed.

    Raises:
        ConfigError: too many episodes, or a last seed past :data:`MAX_SEED`, naming the flag or key.
    """
    from .eval._spec import MAX_EPISODES

    if episodes > MAX_EPISODES:
        # the plan, the resume and the summary go over every episode: 10**8 took 5 GB in a minute
        named, how = (
            (f"{file}: {episodes_key}", "give") if episodes_key is not None else ("--episodes", "pass")
        )
        raise ConfigError(
            f"{named} is {episodes}, more than one run plays per arm (at most {MAX_EPISODES}: each "
            "episode is two files in episodes/<arm>/, and the summary reads every record back); "
            f"{how} fewer, or play the seeds in several runs (each with its --seed and --out)"
        )
    if seed + episodes - 1 > MAX_SEED:  # the interpreter's int: a larger seed wraps around
        seeds = f"seeds {seed}…{seed + episodes - 1}"
        if seed_key is None and episodes_key is None:
            how = "pass a lower --seed or fewer --episodes"
        else:
            seed_named, episodes_named = seed_key or "--seed", episodes_key or "--episodes"
            seeds = f"{file}: {seeds} ({seed_named} {seed}, {episodes_named} {episodes})"
            how = f"give a lower {seed_named} or fewer {episodes_named}"
        raise ConfigError(f"{seeds}: the last is past {MAX_SEED} (2**31 - 1), the largest game seed; {how}")


# -- progress ---------------------------------------------------------------------------------------


def episode_line(record: dict[str, Any]) -> str:
    """One line per finished episode (``key=value``), printed when stdout is not a terminal."""
    maximum = f"/{record['max_score']}" if record.get("max_score") is not None else ""
    line = (
        f"arm={record['arm']} seed={record['seed']} score={record['score']}{maximum} "
        f"turns={record['turns']} moves={record['moves']} tool_calls={record['tool_calls']} "
        f"deaths={record['deaths']} seconds={record['wall_seconds']:.1f}"
    )
    if record.get("victory"):
        line += " victory=true"
    for key in ("parse_errors", "deadlines", "context_trims"):  # turns not played as the model meant
        if record.get(key):
            line += f" {key}={record[key]}"
    if record.get("error"):
        line += f" error={json_quote(record['error'])}"
    return line


ERROR_CHARS: Final = 1000
"""The most of an error an episode's line shows: enough for the endpoint's words and what to do,
which come last (the record and the closing line hold it whole)."""


def json_quote(text: str) -> str:
    """``text`` on one line, as a JSON string, cut at a word past :data:`ERROR_CHARS` (with ``…``)."""
    import json

    from .eval._stats import one_line

    return json.dumps(one_line(text, ERROR_CHARS), ensure_ascii=False)


@attrs.define
class ArmTally:
    total: int
    done: int = 0
    running: int = 0
    failed: int = 0
    """Done episodes with an ``error``: counted as done, left out of the mean score (as in the summary)."""
    score: int = 0
    """The sum of the final scores of the done episodes that did not fail."""
    turns: int = 0
    """Turns played by this run (resumed episodes' are not), counted as they are played."""
    stopped: int = 0
    """Episodes still running when the run stopped (Ctrl-C, SIGTERM, a file it could not write)."""
    task: TaskID | None = None


_STATS_WIDTH = 48
"""An arm's figures, at their usual widest: ``2 running  1 failed  mean score 12.5  3.1 turns/s``."""
_PART_WIDTH = 16
"""The widest part of them: ``mean score 123.4``."""
_ELAPSED = 7
"""``0:01:23``, the time elapsed."""
_BAR_MIN = 5
"""The narrowest bar drawn: below it, the figures go one under the other instead."""
_INDENT = "  "
"""Before each line of an arm's figures when they go under its name."""


RETRY_LINE_SECONDS = 60.0
"""At most one line per model endpoint in this many seconds tells of its requests' retries."""


@attrs.define
class _Retries:
    """The retries of one endpoint's model requests, and what of them was told."""

    count: int = 0
    told: int = 0
    """Retries counted when the last line was printed."""
    told_at: float | None = None
    arms: dict[str, None] = attrs.Factory(dict)
    """The arms whose requests were retried, in order."""


class LiveProgress:
    """Per arm: episodes done and running, running mean score, turns per second (rich); or one line each.

    Turns count as they are played (on Ray, when their episode ends), so turns per second moves
    before the first episode ends; episodes found by ``--resume`` count as done, not in the rate.
    """

    def __init__(
        self,
        console: Console,
        plan: EvalPlan,
        *,
        quiet: bool,
        err: Console | None = None,
        clock: Callable[[], float] = time.monotonic,
        at_loop_end: Callable[[], None] | None = None,
    ) -> None:
        self.console = console
        self.err = err
        """Where a model request that is retried is told (:meth:`retried`); ``None``: not told."""
        self.at_loop_end = at_loop_end
        """Called as the trio loop that plays the episodes ends (once an episode started in it)."""
        self._in_loop = False
        self.clock = clock
        # a live bar needs a terminal that redraws (not TERM=dumb, nor FORCE_COLOR into a file)
        self.mode = "off" if quiet else "live" if redraws(console) else "lines"
        self.started_at = clock()
        self.retries: dict[str, _Retries] = {}
        """Per model endpoint, the retries of its requests (:meth:`retried`)."""
        self._endpoints: dict[str, str] = {}
        """Each arm's model endpoint, once one of its requests was retried."""
        self.arms = {arm.name: ArmTally(total=plan.episodes) for arm in plan.arms}
        self.counted: dict[tuple[str, int], int] = {}
        """Turns already counted of each episode in flight."""
        self.bar: Progress | None = None
        self.figures_width: int | None = None
        """The cells an arm's figures may take on a line: set when the terminal is too narrow for a bar."""
        self.stacked = False
        """Each arm's figures go on lines of their own under its name (no room beside it)."""
        self._terminal = ExitStack()

    def __enter__(self) -> LiveProgress:
        if self.mode == "live":
            # what others write to stderr goes above the bar only when stderr is that terminal
            self.bar = Progress(
                *self._columns(),
                console=self.console,
                transient=False,
                redirect_stderr=same_terminal(self.console, sys.stderr),
            )
            for name, tally in self.arms.items():
                tally.task = self.bar.add_task(name, total=tally.total, arm=name, stats="")
            self._terminal.enter_context(keys_not_echoed(self.console))
            self.bar.start()
        return self

    def _columns(self) -> list[ProgressColumn]:
        """The bars' columns for the terminal's width: an arm's name and figures always whole.

        Where an arm's figures fit on its line beside a bar of at least :data:`_BAR_MIN` cells (80
        columns, short arm names), one line per arm with the widest bar that fits (at most 40);
        else no bar, and the figures on as many lines as they need, a part never split (the time
        elapsed beside them once it fits too). Where not even one part of them fits beside the
        longest arm's name (a long name in a narrow terminal), each arm's figures go under its
        name, indented, as wide as the terminal (:attr:`stacked`).
        """
        arm = max(len(name) for name in self.arms)
        done = len(f"{max(t.total for t in self.arms.values())}") * 2 + 1  # 12/12
        room = self.console.width - (arm + 1 + done + 1)  # for the figures, the bar and the time
        if room < _PART_WIDTH:
            self.stacked = True
            self.figures_width = max(self.console.width - len(_INDENT), 1)
            line = "[bold]{task.fields[arm]}[/]  {task.completed}/{task.total}\n{task.fields[stats]}"
            return [TextColumn(line, table_column=Column(overflow="fold"))]
        columns: list[ProgressColumn] = [
            TextColumn("[bold]{task.fields[arm]}", table_column=Column(no_wrap=True, min_width=arm)),
        ]
        bar = room - (_STATS_WIDTH + 1 + _ELAPSED + 1)
        if bar >= _BAR_MIN:
            columns.append(BarColumn(bar_width=min(bar, 40)))
        else:
            self.figures_width = room - (_ELAPSED + 1 if room >= _PART_WIDTH + 1 + _ELAPSED else 0)
        columns.append(MofNCompleteColumn(table_column=Column(no_wrap=True)))
        # past its usual width, it wraps between words rather than being cut
        columns.append(TextColumn("{task.fields[stats]}", table_column=Column()))
        if self.figures_width is None or room >= _PART_WIDTH + 1 + _ELAPSED:
            columns.append(TimeElapsedColumn(table_column=Column(no_wrap=True)))
        return columns

    def __exit__(self, *exc: object) -> None:
        self._last_picture()
        self._terminal.close()

    def _last_picture(self) -> None:
        """Draw the bars a last time and stop drawing them (the terminal's keys stay unechoed)."""
        for tally in self.arms.values():  # the last picture says what was cut off, not "2 running"
            if tally.running:
                tally.stopped, tally.running = tally.running, 0
                self._show(tally)
        bar, self.bar = self.bar, None
        if bar is not None:
            bar.stop()

    def _loop_ended(self) -> None:
        """The run's trio loop ends: no episode plays any more, the summary is written next.

        :attr:`at_loop_end` is called, then the bars have their last picture, so that what is said
        while the summary is written (a Ctrl-C held back) has the terminal to itself: what the
        picture says (``2 stopped``) has happened once it is seen.
        """
        if self.at_loop_end is not None:
            self.at_loop_end()
        self._last_picture()

    def resumed(self, records: list[dict[str, Any]]) -> None:
        for record in records:
            tally = self.arms.get(record["arm"])
            if tally is not None:
                tally.done += 1
                self._count(tally, record)
                self._show(tally)

    def started(self, spec: EpisodeSpec, /) -> None:
        if not self._in_loop:  # in the run's loop, which ends before the summary is written
            self._in_loop = True
            call_at_loop_end(self._loop_ended)
        tally = self.arms.get(spec.arm)
        if tally is not None:
            tally.running += 1
            self.counted[spec.key] = 0
            self._show(tally)

    def turned(self, spec: EpisodeSpec, /) -> None:
        tally = self.arms.get(spec.arm)
        if tally is not None:
            tally.turns += 1
            self.counted[spec.key] = self.counted.get(spec.key, 0) + 1
            self._show(tally)

    def finished(self, record: dict[str, Any], /) -> None:
        tally = self.arms.get(record["arm"])
        if tally is not None:
            tally.running = max(tally.running - 1, 0)
            tally.done += 1
            self._count(tally, record)
            tally.turns += int(record["turns"]) - self.counted.pop((record["arm"], record["seed"]), 0)
            self._show(tally)
        if self.mode == "lines":
            self.console.out(episode_line(record), highlight=False)
            self.console.file.flush()
        elif self.mode == "live" and record.get("error"):  # above the bars, as it happens
            self.console.print(Text(episode_line(record), style="red"))

    def retried(self, spec: EpisodeSpec, event: dict[str, Any], /) -> None:
        """A model request of an episode failed and is retried (its ``llm_retry`` event's fields).

        A run whose endpoint does not answer (a port that holds connections open, a provider that
        answers 429 to everything) would otherwise look like a hang: with stdout not a terminal
        nothing is printed until an episode ends, 12 minutes later. So the first retry of an
        endpoint's requests is one line on stderr at once, with its reason, and then at most one
        line per :data:`RETRY_LINE_SECONDS` per endpoint, saying how many retries there were since
        and the latest reason. ``--quiet`` too: it is a warning, not progress.
        """
        if self.err is None:
            return
        url = self._endpoints.get(spec.arm)
        if url is None:
            url = self._endpoints[spec.arm] = safe_url(spec.model_choice().base_url)
        retries = self.retries.setdefault(url, _Retries())
        retries.count += 1
        retries.arms.setdefault(spec.arm, None)
        now = self.clock()
        if retries.told_at is not None and now - retries.told_at < RETRY_LINE_SECONDS:
            return
        since, first = retries.count - retries.told, retries.told_at is None
        retries.told_at, retries.told = now, retries.count
        reason = visible_controls(" ".join(str(event.get("error", "")).split()))  # a provider's text
        which = f"retry {event.get('retry')}/{event.get('max_retries')}, {spec.arm} seed {spec.seed}"
        arms = f"arm{'s' if len(retries.arms) > 1 else ''} {', '.join(retries.arms)}"
        if first:
            line = f"a model request to {url} ({arms}) failed and is retried ({which})"
        else:
            line = f"{since} more retries of model requests to {url} ({arms}); the latest ({which})"
        self.err.print(
            f"[yellow]zorkmcp eval: {escape(line)}[/]: {escape(reason)}", highlight=False, soft_wrap=True
        )

    @staticmethod
    def _count(tally: ArmTally, record: dict[str, Any]) -> None:
        if record.get("error"):
            tally.failed += 1
        else:
            tally.score += int(record["score"])

    def _show(self, tally: ArmTally) -> None:
        if self.bar is not None and tally.task is not None:
            stats = arm_stats(tally, time.monotonic() - self.started_at, width=self.figures_width)
            if self.stacked:
                stats = _INDENT + stats.replace("\n", "\n" + _INDENT)
            self.bar.update(tally.task, completed=tally.done, stats=stats)


def call_at_loop_end(call: Callable[[], None]) -> None:
    """Call ``call`` as the trio loop this runs in ends (its last step, before its ``trio.run`` returns).

    Nothing when not in a trio loop (Ray's driver plays none).
    """
    import trio

    class AtTheEnd(trio.abc.Instrument):
        def after_run(self) -> None:
            try:
                call()
            except KeyboardInterrupt:
                # trio catches what an instrument raises (and only logs it): a Ctrl-C that insisted
                # while the last picture was drawn would be lost, and the run would go on writing
                if not ctrl_c_again_later():
                    raise

    with suppress(RuntimeError):  # not in a trio loop
        trio.lowlevel.add_instrument(AtTheEnd())


def arm_stats(tally: ArmTally, elapsed: float, *, width: int | None = None) -> str:
    """``2 running  1 failed  mean score 12.5  3.1 turns/s``: each part once it means something.

    ``2 stopped`` instead of ``2 running`` once the run has stopped with episodes in flight.

    The mean is over the episodes that did not fail, as in ``summary.json``. Given a ``width`` (a
    narrow terminal), a part that would pass it starts a new line: a part is never split.
    """
    parts = [f"{tally.running} running"] if tally.running else []
    if tally.stopped:
        parts.append(f"{tally.stopped} stopped")
    if tally.failed:
        parts.append(f"[red]{tally.failed} failed[/]")
    if tally.done > tally.failed:
        parts.append(f"mean score {tally.score / (tally.done - tally.failed):.1f}")
    if tally.turns and elapsed > 0:
        parts.append(f"{tally.turns / elapsed:.1f} turns/s")
    text, line = "", 0  # what is on the last line, in cells
    for part in parts:
        cells = Text.from_markup(part).cell_len
        if not text:
            text, line = part, cells
        elif width is not None and line + 2 + cells > width:
            text, line = f"{text}\n{part}", cells
        else:
            text, line = f"{text}  {part}", line + 2 + cells
    return text


# -- the command ------------------------------------------------------------------------------------


def _fmt(value: Any, digits: int = 2) -> str:
    if value is None:  # unknown, or not enough data: as report.html shows it
        return "–"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


_SUMMARY_COLUMNS = ("episodes", "failed", "score ± se", "win rate", "moves", "tools/turn", "tokens in/out")
"""The figures of an arm in the closing table, by their short headers."""


def _summary_cells(arm: dict[str, Any]) -> list[str]:
    """An arm's figures, in the order of :data:`_SUMMARY_COLUMNS`."""
    from .eval._stats import percent

    return [
        _fmt(arm.get("episodes")),
        _fmt(arm.get("failed")),
        f"{_fmt(arm.get('mean_score'))} ± {_fmt(arm.get('se_score'))}",
        percent(arm.get("win_rate")),  # 1 win in 250 is 0.4%, which 0.00 hid
        _fmt(arm.get("mean_moves"), 1),
        _fmt(arm.get("tool_calls_per_turn")),
        f"{_count(arm.get('prompt_tokens'))} / {_count(arm.get('completion_tokens'))}",
    ]


def _count(value: Any) -> str:
    """``24,510``, as the live view, ``zorkmcp play``'s table and the report write a count of tokens."""
    return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else _fmt(value)


_ARM_MIN = 6
"""The least width of the ``arm`` column (``no-mcp``)."""


def summary_table(summary: dict[str, Any], *, width: int | None = None) -> Table | Group:
    """The per-arm table printed at the end (from ``summary.json``'s object), for ``width`` columns.

    One row per arm (one space between columns, short headers) when that fits ``width``, as it
    does in an 80-column terminal or log for short arm names and figures; otherwise, turned: the
    figures down the side and the arms across, as many arms side by side as fit (at least one, in
    28 columns), the next ones in a table below; narrower still, an arm's figures one under the other
    (:func:`_stacked`). Either way an arm's name and every figure stay
    whole: the figures never wrap nor are cut, and only a name wider than its column folds onto a
    second line.

    Args:
        summary: ``summary.json``'s object.
        width: the columns there are (``None``: one row per arm, whatever its width).
    """
    arms = {name: _summary_cells(arm) for name, arm in summary.get("arms", {}).items()}
    widths = [
        max(len(column), *(len(cells[i]) for cells in arms.values()))
        for i, column in enumerate(_SUMMARY_COLUMNS)
    ]
    names = max((len(name) for name in arms), default=0)
    if width is None or max(names, _ARM_MIN) + sum(widths) + len(widths) <= width:
        table = Table(title="Eval summary", box=box.SIMPLE_HEAD, padding=0, pad_edge=False, show_edge=False)
        table.add_column("arm", min_width=_ARM_MIN, overflow="fold")
        for column in _SUMMARY_COLUMNS:
            table.add_column(column, justify="right", no_wrap=True)
        for name, cells in arms.items():
            table.add_row(escape(name), *cells)
        return table
    label = max(len(column) for column in _SUMMARY_COLUMNS)
    if label + 1 + max((len(cell) for cells in arms.values() for cell in cells), default=0) > width:
        return _stacked(arms, width)
    groups: list[list[tuple[str, int]]] = [[]]
    used = label
    for name, cells in arms.items():
        figures = max(len(cell) for cell in cells)
        room = max(figures, min(len(name), width - label - 1))  # a longer name folds
        if groups[-1] and used + 1 + room > width:
            groups.append([])
            used = label
        groups[-1].append((name, room))
        used += 1 + room
    tables = []
    for index, group in enumerate(groups):
        table = Table(
            title="Eval summary" if index == 0 else None,
            box=box.SIMPLE_HEAD,
            padding=0,
            pad_edge=False,
            show_edge=False,
        )
        table.add_column("", no_wrap=True)
        for name, room in group:
            table.add_column(escape(name), justify="right", min_width=room, overflow="fold")
        for row, figure in enumerate(_SUMMARY_COLUMNS):
            table.add_row(figure, *(arms[name][row] for name, _ in group))
        tables.append(table)
    return Group(*tables)


def _stacked(arms: dict[str, list[str]], width: int) -> Group:
    """The summary for a terminal too narrow for one arm beside the figures' names (under 30 columns):
    each arm's name, then a line per figure, ``name value``, or the value on a line of its own below
    its name when both do not fit. Nothing is cut; a name wider than the terminal folds."""
    lines: list[Text] = [Text("Eval summary", style="italic", justify="center")]
    for name, cells in arms.items():
        lines.append(Text(name, style="bold", overflow="fold"))
        for figure, value in zip(_SUMMARY_COLUMNS, cells, strict=True):
            if len(figure) + 1 + len(value) <= width:
                lines.append(Text(f"{figure}{value.rjust(width - len(figure))}"))
            else:
                lines.extend((Text(figure), Text(value.rjust(width), overflow="fold")))
    return Group(*lines)


def fallback_lines(summary: dict[str, Any]) -> list[str]:
    """A line per arm some of whose turns played the agent's fallback action instead of the model's.

    ``mcp: 4 turn(s) (100%) played the fallback action: the model's final answer did not parse``;
    the same for turns whose deadline passed. Nothing for an arm whose records do not count them.
    """
    from .eval._stats import percent

    lines = []
    for name, arm in summary.get("arms", {}).items():
        for key, rate_key, why in (
            ("parse_errors", "parse_error_rate", "the model's final answer did not parse"),
            ("deadlines", "deadline_rate", "the turn deadline passed"),
        ):
            count, rate = arm.get(key), arm.get(rate_key)
            if isinstance(count, int) and count > 0:
                share = f" ({percent(rate)})" if isinstance(rate, float) else ""  # 1 in 400 is not 0%
                lines.append(f"{escape(name)}: {count} turn(s){share} played the fallback action: {why}")
    return lines


def context_lines(summary: dict[str, Any]) -> list[str]:
    """A line per arm some of whose turns did not fit the model's context window (rich markup).

    ``mcp: 3 turn(s) (2%) did not fit the model's context window: their final answer was asked for
    without the turn's tool calls and tools``. Nothing for an arm whose records do not count them.
    """
    from .eval._stats import percent

    lines = []
    for name, arm in summary.get("arms", {}).items():
        count, rate = arm.get("context_trims"), arm.get("context_trim_rate")
        if isinstance(count, int) and count > 0:
            share = f" ({percent(rate)})" if isinstance(rate, float) else ""
            lines.append(
                f"{escape(name)}: {count} turn(s){share} did not fit the model's context window: their final "
                "answer was asked for without the turn's tool calls and tools"
            )
    return lines


def disabled_lines(summary: dict[str, Any]) -> list[str]:
    """A line per arm some of whose episodes disabled an MCP server mid-episode (rich markup).

    ``mcp: MCP server thinking was disabled in 3 episode(s) after it failed to start twice: those
    episodes played on partly without its tools``. Nothing for an arm whose records do not count them.
    """
    lines = []
    for name, arm in summary.get("arms", {}).items():
        disabled = arm.get("servers_disabled")
        if not isinstance(disabled, dict) or not disabled:
            continue
        servers = ", ".join(f"{escape(str(server))} in {n} episode(s)" for server, n in disabled.items())
        lines.append(
            f"{escape(name)}: MCP server(s) disabled mid-episode after failing to start twice: {servers}; "
            "those episodes played on partly without their tools"
        )
    return lines


def outside_line(paths: list[Path], run_dir: Path) -> str:
    """The line a resume prints when the run's folder holds episode files no episode of the plan is.

    ``zorkmcp eval: 3 episode file(s) in runs/x are not of this run's seeds and arms, such as
    runs/x/episodes/other/seed-21.json: the run leaves them as they are and out of its summary and
    report``.
    """
    return (
        f"zorkmcp eval: {len(paths)} episode file(s) in {escape(str(run_dir))} are not of this run's seeds "
        f"and arms, such as {escape(str(paths[0]))}: the run leaves them as they are and out of its "
        "summary and report"
    )


def left_writes_line(paths: list[Path], run_dir: Path) -> str:
    """The line a resume prints when it removed the temporary files of a run killed while it wrote a file.

    ``zorkmcp eval: removed 2 temporary file(s) that a run killed while writing left in runs/x, such
    as runs/x/episodes/a/.seed-19.json.12345.tmp`` (:func:`~zorkmcp.eval._runner.remove_left_writes`).
    """
    return (
        f"zorkmcp eval: removed {len(paths)} temporary file(s) that a run killed while writing left in "
        f"{escape(str(run_dir))}, such as {escape(str(paths[0]))}"
    )


_OUTPUTS = ("episodes", "summary.json", "summary.csv", "report.html")


def comparison_line(c: dict[str, Any]) -> str:
    """``a − b: mean score difference 2.00 (95% CI …); seed by seed (4 pairs): 2.00 (95% CI …) → …``.

    The second part, the paired interval, only when the arms share a scored seed; then what the
    intervals say (:func:`~zorkmcp.eval.comparison_reading`).
    """
    from .eval import comparison_reading

    lo, hi = c.get("ci95") or (None, None)  # null below two scored episodes per arm
    line = (
        f"{escape(str(c.get('a')))} − {escape(str(c.get('b')))}: mean score difference "
        f"{_fmt(c.get('diff_mean_score'))} (95% CI {_fmt(lo)} … {_fmt(hi)})"
    )
    paired = c.get("paired") or {}
    if paired.get("pairs"):
        lo, hi = paired.get("ci95") or (None, None)  # null below two pairs
        line += (
            f"; seed by seed ({paired['pairs']} pair{'s' if paired['pairs'] > 1 else ''}): "
            f"{_fmt(paired.get('diff_mean_score'))} (95% CI {_fmt(lo)} … {_fmt(hi)})"
        )
    return f"{line} → {escape(comparison_reading(c))}"


SHOWN_PAIRS: Final = 10
"""The most comparisons the closing lines show: every pair of 5 arms. Of more arms (40 arms make 780
pairs, a screenful of long lines each), those with the first arm, the file's baseline; the rest are
in ``summary.json`` and ``report.html``."""


def shown_comparisons(comparisons: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The comparisons the closing lines show: all up to :data:`SHOWN_PAIRS`, else the first arm's."""
    if len(comparisons) <= SHOWN_PAIRS:
        return comparisons
    first = comparisons[0]["a"]
    return [c for c in comparisons if first in (c["a"], c["b"])]


def print_outcome(console: Console, outcome: EvalOutcome) -> None:
    """The summary table, the arms' turns that played the fallback action and MCP servers their
    episodes disabled, the comparisons, and the files the run left (only those it wrote)."""
    if outcome.summary.get("arms"):
        console.print(Trimmed(summary_table(outcome.summary, width=console.width)))
        for line in [
            *fallback_lines(outcome.summary),
            *context_lines(outcome.summary),
            *disabled_lines(outcome.summary),
        ]:
            console.print(f"[yellow]{line}[/]", highlight=False, soft_wrap=True)
    else:
        console.print("No episode has finished: nothing to summarize.", highlight=False)
    comparisons = outcome.summary.get("comparisons", [])
    shown = shown_comparisons(comparisons)
    for c in shown:
        console.print(comparison_line(c), highlight=False, soft_wrap=True)  # one line each, for grep
    if len(shown) < len(comparisons):
        console.print(
            f"… and {len(comparisons) - len(shown)} more comparisons (every pair of arms) in summary.json "
            "and report.html",
            highlight=False,
            soft_wrap=True,
        )
    written = [
        f"{name}/" if name == "episodes" else name for name in _OUTPUTS if (outcome.run_dir / name).exists()
    ]
    console.print(
        f"{outcome.played} episode(s) played, {outcome.resumed} resumed; files in {outcome.run_dir} "
        f"({', '.join(written)})",
        style="dim",
        highlight=False,
        soft_wrap=True,
    )


_OUT_OF_FILES = re.compile(r"Too many open files|\[Errno (?:23|24)\]")
"""How an episode's error says it ran out of file descriptors (EMFILE, ENFILE): ``OSError: [Errno 24]
Too many open files``, inside a server's start-up error or a model's connection error."""


def failed_line(failed: list[dict[str, Any]], run_dir: Path) -> str:
    """The run's last line when episodes failed (rich markup): how many, the first error, what to do.

    ``zorkmcp eval: 3 episode(s) failed, e.g. mcp seed 12: …; to play them again, run the same command
    with --retry-failed --out runs/x``. When some ran out of open files, which playing them again
    at once would repeat, it says so first and what to change: more open files, or fewer at once.
    """
    short = [r for r in failed if _OUT_OF_FILES.search(str(r["error"]))]
    first = short[0] if short else failed[0]
    line = (
        f"[bold red]zorkmcp eval: {len(failed)} episode(s) failed[/], e.g. {escape(first['arm'])} seed "
        f"{first['seed']}: {escape(' '.join(str(first['error']).split()))}; "
    )
    if short:
        line += (
            f"{len(short)} of them ran out of open files: allow more open files (ulimit -n) or pass a "
            "lower --concurrency, then"
        )
    else:
        line += "to play them again,"
    return f"{line} run the same command with --retry-failed --out {escape(str(run_dir))}"


def arm_lines(plan: EvalPlan, *, cluster: bool = False) -> list[str]:
    """What each arm plays with, one line each (rich markup): its model and endpoint, its MCP servers.

    An arm that would play the offline scripted model says so, and a notice follows saying why and
    what to set, as ``zorkmcp play`` does: a run that forgot its API key would otherwise report the
    walkthrough's scores as the model's. On a Ray cluster (``cluster``) the workers read their own
    environment, and the notice says so.
    """
    from .config import McpConfig
    from .llm._select import key_hint, key_variable

    # an arm's episodes share all but the seed: the first seed's, one per arm
    firsts = {spec.arm: spec for spec in plan.specs()[: len(plan.arms)]}
    width = max(len(arm.name) for arm in plan.arms)
    lines: list[str] = []
    # the arms without a key, by what the notice says: the endpoint, the variable, the other one set
    offline: dict[tuple[str, str, str | None], list[str]] = {}
    for arm in plan.arms:
        spec = firsts[arm.name]
        choice = spec.model_choice()
        if choice.scripted is not None:
            model = "[yellow]offline scripted model[/]"
            llm = spec.settings.llm
            variable, hint = key_variable(llm, choice.base_url), key_hint(llm, choice.base_url, arm=True)
            offline.setdefault((choice.endpoint, variable, hint), []).append(arm.name)
        else:
            model = f"{escape(choice.model)} at {escape(choice.endpoint)}"
        tools = "no tools"
        if spec.settings.mcp.enabled:
            path = spec.settings.mcp_config_path()
            names = ", ".join(s.name for s in McpConfig.from_file(path).enabled_servers) or "none"
            tools = f"tools: {escape(names)} ({escape(path.name)})"
        lines.append(f"  [bold]{escape(arm.name.ljust(width))}[/]  {model}; {tools}")
    for (url, variable, hint), unkeyed in offline.items():
        lines.append(
            f"[bold yellow]No API key for {escape(url)}[/]: {escape(', '.join(unkeyed))} "
            f"{'plays' if len(unkeyed) == 1 else 'play'} the offline scripted model, which replays "
            "Jericho's walkthrough of the game (no LLM is called). To evaluate a real model, set "
            f"{escape(variable)} (or api_key_env in \\[\\[arms]]), or pass --base-url for a local "
            "server such as http://127.0.0.1:11434/v1 (Ollama)."
            + (f" {escape(hint)}." if hint else "")
            + (" On the Ray cluster each worker decides from its own environment." if cluster else "")
        )
    return lines


@contextmanager
def _collecting_less() -> Iterator[None]:
    """Tune this process's garbage collector for many episodes at once, for the run (then restored).

    CPython collects its young objects every 700 allocations net of frees, and every object it has
    (the imports' too: the MCP SDK, pydantic, Jericho) at every 100th of those. At K = 64 a run
    allocates fast and keeps much alive, and ``gc.freeze()`` after the imports plus a young
    threshold of 7000 took the eval process from 59 to 53-55 ms of CPU per 5-turn episode, of which
    the collector's own went from 9 to 3.5 ms (128 episodes at K = 64, two runs each). Not done for
    a library caller of :func:`zorkmcp.eval.play_episodes`: its host owns its collector.
    """
    before = gc.get_threshold()
    gc.freeze()  # what the imports made stays: a full collection no longer walks it
    gc.set_threshold(7000, 10, 10)
    try:
        yield
    finally:
        gc.set_threshold(*before)
        gc.unfreeze()


OPEN_FILES_CAP = 1 << 20
"""The most open files the run asks for, whatever the hard limit (some containers set it to 2**30:
a program that sizes a table by the soft limit would then allocate gigabytes)."""


@contextmanager
def _more_open_files() -> Iterator[None]:
    """Raise this process's soft limit of open files to its hard limit (at most :data:`OPEN_FILES_CAP`),
    for the run, then restore it.

    An episode holds about 5 file descriptors in the eval process at its peak (its ``think``
    server's pipes and pidfd, the model's connection; without MCP, 1): K = 128 peaked at 654 open
    files with MCP, 138 without. Many systems start a shell with a soft limit of 1024 under a far
    higher hard one: there ``--concurrency 300`` failed episodes with "Too many open files" (then,
    writing a file, stopped the run). The servers the run starts inherit the limit; they open few
    files.
    """
    import resource

    before = resource.getrlimit(resource.RLIMIT_NOFILE)
    soft, hard = before
    wanted = OPEN_FILES_CAP if hard == resource.RLIM_INFINITY else min(hard, OPEN_FILES_CAP)
    raised = soft != resource.RLIM_INFINITY and soft < wanted
    if raised:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        except (ValueError, OSError):  # a platform that refuses it: the run goes on with what it has
            raised = False
    try:
        yield
    finally:
        if raised:
            resource.setrlimit(resource.RLIMIT_NOFILE, before)


def _on_ray(ray: str | None) -> str:
    """Where the header says the episodes play, when not in this process."""
    if ray is None:
        return ""
    if ray == "local":
        return "; on a Ray runtime of its own"
    return f"; on the Ray cluster at {escape(ray)}"


def _file_taken_by_ray(args: argparse.Namespace) -> None:
    """``zorkmcp eval --ray eval.toml``: argparse gives ``--ray`` (whose address may be left out) the
    eval file as its address; no Ray address ends in ``.toml``, so it is the file, on a runtime of the
    run's own, as ``zorkmcp eval eval.toml --ray`` says. (It played the default arm instead, the file
    unread, then stopped at the cluster's "address" r.toml.)"""
    if args.file is None and isinstance(args.ray, str) and args.ray.lower().endswith(".toml"):
        args.file, args.ray = args.ray, "local"


def _run(args: argparse.Namespace, console: Console, err: Console) -> int:
    from .config import Settings, check_settings_file

    _file_taken_by_ray(args)
    pyproject = Path(args.pyproject) if args.pyproject else None
    if pyproject is not None:
        check_settings_file(pyproject)
    settings = Settings.load(pyproject)  # what zorkmcp play uses: the file's, or the embedded defaults
    try:
        with ExitStack() as claims:  # the run's folder is this run's until it ends
            plan = build_plan(args, settings, claims=claims)
            return _play_plan(args, settings, plan, console, err)
    finally:
        if (reserved := getattr(args, "reserved_out", None)) is not None:
            # the default folder (and runs/, if made for it), if the run wrote nothing there
            for made in (reserved, args.reserved_parent):
                if made is not None:
                    with suppress(OSError):  # not empty: it stays
                        made.rmdir()


def _play_plan(
    args: argparse.Namespace, settings: Settings, plan: EvalPlan, console: Console, err: Console
) -> int:
    # the engine (the MCP SDK, trio, httpx2) only once the file and flags hold: a bad one is told at once
    from .eval import check_endpoints, resumable_episodes
    from .eval._ray import check_ray_address, check_ray_installed
    from .eval._runner import files_outside, remove_left_writes

    if args.ray is not None:
        check_ray_installed()
    arms = ", ".join(arm.name for arm in plan.arms)
    at_once = min(plan.concurrency, plan.episodes * len(plan.arms))  # "16 at once" of 2 episodes would not be
    lowered = None  # this machine holds so many episodes at once (on a cluster, the cluster decides)
    available = memory_available() if args.ray in (None, "local") else None
    each = MEMORY_PER_EPISODE if args.ray is None else RAY_MEMORY_PER_EPISODE
    if (most := at_once_bound(available, each)) is not None and at_once > most:
        lowered = lowered_line(args, plan.concurrency, most, available or 0)
        plan = attrs.evolve(plan, concurrency=most)
        at_once = most
    console.print(
        f"[bold]zorkmcp eval[/]: arms {escape(arms)}; seeds {plan.seed}…{plan.seed + plan.episodes - 1}; "
        f"up to {plan.max_turns} turn{'' if plan.max_turns == 1 else 's'}; {at_once} at once"
        f"{_on_ray(args.ray)}; writing {escape(str(plan.out))}",
        highlight=False,
        soft_wrap=True,
    )
    origin = (
        settings.source or f"embedded defaults (no [tool.zorkgpt] in {args.pyproject or './pyproject.toml'})"
    )
    console.print(f"settings: {escape(str(origin))}", highlight=False, soft_wrap=True)
    if lowered is not None:
        err.print(f"[yellow]{escape(lowered)}[/]", highlight=False, soft_wrap=True)
    cluster = args.ray not in (None, "local")  # the workers' environment and network decide there
    for line in arm_lines(plan, cluster=cluster):
        if line.startswith("[bold yellow]"):  # the notice: a paragraph, wrapped between words
            say(console, line, wrapped=True)
        else:
            console.print(line, highlight=False, soft_wrap=True)
    resume = args.resume or args.retry_failed
    # a resume that would mix settings stops here, before anything starts
    kept = resumable_episodes(plan, retry_failed=args.retry_failed, cluster=cluster) if resume else []
    flag = "--retry-failed" if args.retry_failed else "--resume"
    if (versions := other_versions_line(kept, plan.out, flag)) is not None:
        err.print(f"[yellow]{escape(versions)}[/]", highlight=False, soft_wrap=True)
    # the run holds its folder (claimed in build_plan): no run of it writes there now
    if resume and (removed := remove_left_writes(plan.out)):
        err.print(left_writes_line(removed, plan.out), highlight=False, soft_wrap=True)
    outside = files_outside(plan) if resume else []
    if outside:
        err.print(outside_line(outside, plan.out), highlight=False, soft_wrap=True)
    elif resume and not kept and not any(plan.out.glob("episodes/*/seed-*.json")):
        err.print(nothing_to_resume_line(args, plan.out), highlight=False, soft_wrap=True)
    # and so does a model endpoint that cannot be reached (not on a cluster), or a cluster address
    if not cluster:
        done = {(r["arm"], r["seed"]) for r in kept}

        def tell(line: str) -> None:  # an endpoint that has taken the probe and not answered yet
            err.print(f"[yellow]zorkmcp eval: {escape(line)}[/]", highlight=False, soft_wrap=True)

        finished = Counter(arm for arm, _ in done)
        left = {arm.name for arm in plan.arms if finished[arm.name] < plan.episodes}
        # an arm's episodes share their model: the first seed's, of each arm with an episode to play
        check_endpoints((s for s in plan.specs()[: len(plan.arms)] if s.arm in left), tell=tell)
    else:
        check_ray_address(args.ray)

    def placed(placement: RayPlacement) -> None:
        console.print(placement.describe(), highlight=False, soft_wrap=True)

    return _play_and_finish(args, plan, kept, console, err, placed)


MEMORY_PER_EPISODE: Final = 8 << 20
"""The memory an episode is taken to hold, its servers included, with a margin: ``benchmarks/bench_eval.py``
measured 5 MB (PSS) per episode at 64 at once with a fresh ``think`` server per turn, 3 MB without
tools, and 2.5 MB for 400 turns without tools (200 at once: 640 MB at the peak, 130 MB of it the
process's own); twice the larger leaves room for longer histories and the memory others take meanwhile."""

RAY_MEMORY_PER_EPISODE: Final = 128 << 20
"""The same on a Ray runtime of the run's own (``--ray``): a worker process per episode, about 110 MB
(PSS, with its ``think`` servers; 40 at once on 2 cores took 3.7 GB)."""


def memory_available() -> int | None:
    """The bytes of memory this process may still take: the system's available memory (Linux's
    ``MemAvailable``), or less where its cgroup (a container's limit) leaves less; ``None``: not known
    (no ``/proc``, as on macOS)."""
    try:
        meminfo = Path("/proc/meminfo").read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError):
        return None
    found = re.search(r"^MemAvailable:\s+(\d+) kB$", meminfo, re.MULTILINE)
    if found is None:
        return None
    available = int(found[1]) * 1024
    try:  # cgroup v2, as a container sees its own: "max", or its limit in bytes
        limit = Path("/sys/fs/cgroup/memory.max").read_text(encoding="ascii").strip()
        used = Path("/sys/fs/cgroup/memory.current").read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return available
    if limit.isdecimal() and used.isdecimal():
        available = min(available, max(int(limit) - int(used), 0))
    return available


def at_once_bound(available: int | None, each: int = MEMORY_PER_EPISODE) -> int | None:
    """The most episodes this machine plays at once in ``available`` bytes of memory, ``each`` taking
    so many (at least one); ``None``: no bound is known.

    K beyond it is not a run that goes faster but one the system's OOM killer ends, the run with
    its episodes in flight (``--concurrency 100000`` of 100000 episodes wanted some 20 GB before its
    first turn): the run plays this many at once instead, and says so (:func:`lowered_line`). The
    concurrency changes no episode's result, and a resume does not compare it.
    """
    if available is None:
        return None
    return max(available // each, 1)


def lowered_line(args: argparse.Namespace, concurrency: int, most: int, available: int) -> str:
    """The warning of a run whose K this machine's memory does not hold (:func:`at_once_bound`)."""
    from .eval._spec import DEFAULT_CONCURRENCY

    if args.concurrency is not None:
        named = f"--concurrency {concurrency}"
    elif args.file is not None and concurrency != DEFAULT_CONCURRENCY:
        named = f"{args.file}: eval.concurrency = {concurrency}"
    else:
        named = f"the default concurrency, {concurrency},"
    each, instead = (
        (f"{MEMORY_PER_EPISODE >> 20} MiB each", "play on a Ray cluster of several machines (--ray ADDRESS)")
        if args.ray is None
        else (f"{RAY_MEMORY_PER_EPISODE >> 20} MiB each, a Ray worker", "join a Ray cluster (--ray ADDRESS)")
    )
    return (
        f"zorkmcp eval: {named} is more episodes at once than this machine's memory holds: "
        f"{_size(available)} is available, room for {most} at about {each}; the run plays {most} at once "
        f"(the concurrency changes no episode's result); for more at once, free memory or {instead}"
    )


def _size(count: int) -> str:
    """``22.4 GiB``, ``512 MiB``: memory as the lowered line says it."""
    return f"{count / 2**30:.1f} GiB" if count >= 2**30 else f"{count >> 20} MiB"


def other_versions_line(kept: list[dict[str, Any]], run_dir: Path, flag: str = "--resume") -> str | None:
    """Said when a resume keeps episodes another version of zorkmcp played (``None``: none did).

    A version's agent may play otherwise (its prompt, how it reads the model's answers), and a
    resume compares what a record says of its settings, not the code that played them: an arm's
    mean would mix two agents without a word. A record names its version in ``zorkmcp``; one
    without it says nothing of it. The run goes on: a release may change nothing in play, and the
    user decides.

    Args:
        kept: the records the resume keeps.
        run_dir: the run's folder.
        flag: ``--resume`` or ``--retry-failed``, as the user gave it.
    """
    from . import __version__

    others: Counter[str] = Counter()
    first: dict[str, Any] | None = None
    for record in kept:
        version = record.get("zorkmcp")
        if isinstance(version, str) and version != __version__:
            others[version] += 1
            first = first or record
    if first is None:
        return None
    versions = ", ".join(f"{version} ({n})" for version, n in others.most_common())
    path = run_dir / "episodes" / str(first["arm"]) / f"seed-{first['seed']}.json"
    return (
        f"zorkmcp eval: {flag}: {others.total()} of the finished episodes the run keeps were played by "
        f"another zorkmcp than this one ({__version__}): {versions}, such as {path}; another version's "
        "agent may play otherwise, and an arm's mean would mix both: to compare like with like, stop "
        "(Ctrl-C) and pass a new --out"
    )


def nothing_to_resume_line(args: argparse.Namespace, run_dir: Path) -> str:
    """Said when ``--resume`` (``--retry-failed``) finds no episode file in the run's folder.

    A resume plays only what is missing; in a folder with no run (a typo in ``--out``, another
    machine's path) that is every episode, with a real model paid again. The run goes on (a script
    may resume on every start, the first too), and the user who meant another folder is told.
    """
    flag = "--retry-failed" if args.retry_failed else "--resume"
    return (
        f"[yellow]zorkmcp eval: {flag}: {escape(str(run_dir))} holds no episode file, so there is nothing "
        "to go on from and every episode is played; if you meant to go on with a run, stop (Ctrl-C) and "
        "check --out[/]"
    )


FINISHING = (
    "zorkmcp eval: stopping; the summary and report.html are being written first (press Ctrl-C again to "
    "stop without them)"
)
"""Said when Ctrl-C is pressed again while a stopped run writes what it still must (it is held back)."""


def _play_and_finish(
    args: argparse.Namespace,
    plan: EvalPlan,
    kept: list[dict[str, Any]],
    console: Console,
    err: Console,
    placed: Callable[[RayPlacement], None],
) -> int:
    """Play the plan, then write its summary and tell it: a Ctrl-C meanwhile is held back, once.

    The first Ctrl-C stops the episodes (the run's own loop takes it); the run then writes
    ``summary.json``, ``summary.csv`` and ``report.html`` and prints the table and how to go on. A
    user who finds that slow presses again: that press is held back (:data:`FINISHING` says so);
    where it came before the hold could be made (the run's loop has ended, its summary is being
    written), it ends that writing, which is then done again here, or, raised in a finalizer
    (Jericho's, as the games are freed), is dropped by Python (counted, not printed). Only the
    press after it stops the run there, and the last line says what was not written and how to
    get it (:func:`unwritten_line`). A press held back takes effect once the run has told its
    outcome: the exit status is 130 (143 for SIGTERM, 141 for a reader of the output gone), also
    when every episode had been played.
    """
    from .eval import run_eval

    before = _outputs_now(plan.out)
    dropped = ctrl_c_in_finalizers()
    progress: LiveProgress | None = None
    outcome: EvalOutcome | None = None
    with held_ctrl_c(FINISHING) as held:  # outlives the live view: it restores the terminal first
        try:
            with (
                _collecting_less(),
                _more_open_files(),
                LiveProgress(
                    console, plan, quiet=args.quiet, err=err, at_loop_end=partial(held.hold, loop_ending=True)
                ) as progress,  # from the loop's end, Ctrl-C is held back
            ):
                progress.resumed(kept)
                try:
                    outcome = run_eval(plan, kept=kept, ray=args.ray, progress=progress, on_ray_placed=placed)
                except KeyboardInterrupt:
                    if held.pressed > 1:  # pressed twice while held: the user insists
                        raise
                    # pressed before the hold (no episode had started, or on Ray) while the summary was
                    # being written: that writing stopped; it is done again below, Ctrl-C held
                    held.hold(pressed=1)
                else:  # a press Python dropped in a finalizer (freeing the games) was one too
                    held.hold(pressed=min(ctrl_c_in_finalizers() - dropped, 1))
            if outcome is None:
                err.print(FINISHING, highlight=False, soft_wrap=True)
                try:
                    outcome = _summarize_again(plan, kept, progress)
                except RunWriteError:
                    raise
                except Exception as exc:  # noqa: BLE001  the writing the Ctrl-C ended may have left a module
                    # half imported (matplotlib's, for the report): what was not written, in one line
                    line = _unwritten(plan, before, progress)
                    why = f"{type(exc).__name__}: {exc}"
                    err.print(
                        f"{line} (writing them again failed: {escape(why)})", highlight=False, soft_wrap=True
                    )
                    return EXIT_INTERRUPTED
            code = _tell_outcome(console, err, outcome)
            return EXIT_INTERRUPTED if held.pressed else code  # a press held back takes effect now
        except RunWriteError as exc:  # the summary, once every episode was written
            err.print(
                f"[bold red]zorkmcp eval:[/] {escape(str(exc))}; every episode is written: {exc.remedy}, "
                f"then run the same command with --resume --out {escape(str(plan.out))} to write the summary",
                highlight=False,
                soft_wrap=True,
            )
            return EXIT_FAILED
        except KeyboardInterrupt:
            if progress is None or (outcome is None and not held.holding):  # before the run started
                raise
            held.end()  # pressed once more while held: the user insists
            err.print(_unwritten(plan, before, progress), highlight=False, soft_wrap=True)
            return EXIT_INTERRUPTED


def _unwritten(plan: EvalPlan, before: dict[str, tuple[int, int] | None], progress: LiveProgress) -> str:
    finished = sum(tally.done for tally in progress.arms.values())
    complete = finished == len(plan.arms) * plan.episodes
    return unwritten_line(plan.out, before, drawn=finished > 0, complete=complete)


def _outputs_now(run_dir: Path) -> dict[str, tuple[int, int] | None]:
    """Each of the run's summary files as it is now: ``(inode, mtime)``, ``None`` if there is none.

    Written through a temporary file and renamed, a file this run wrote has another inode after.
    """
    now: dict[str, tuple[int, int] | None] = {}
    for name in ("summary.json", "summary.csv", "report.html"):
        try:
            stat = (run_dir / name).stat()
        except OSError:
            now[name] = None
        else:
            now[name] = (stat.st_ino, stat.st_mtime_ns)
    return now


def unwritten_line(
    run_dir: Path, before: dict[str, tuple[int, int] | None], *, drawn: bool, complete: bool
) -> str:
    """The last line of a run that a further Ctrl-C stopped while it wrote its summary.

    It names the files the run did not write (those it did write cover the finished episodes) and
    how to get them: ``zorkmcp report`` draws ``report.html`` from the episode files, and a resume
    writes all three, after playing what is left (``complete``: nothing is). Without a finished
    episode (``drawn`` false) there is no ``report.html`` to miss.

    Args:
        run_dir: the run's folder.
        before: :func:`_outputs_now` when the run started: a file that is still so was not written.
        drawn: some episode finished (its report would draw it).
        complete: every episode of the plan finished.
    """
    now = _outputs_now(run_dir)
    missing = [
        name
        for name in ("summary.json", "summary.csv", "report.html")
        if (now[name] is None or now[name] == before[name]) and (drawn or name != "report.html")
    ]
    folder = escape(str(run_dir))
    rest = "" if complete else f"; to play the rest, run the same command with --resume --out {folder}"
    if not missing:
        return f"zorkmcp eval: interrupted; summary.json, summary.csv and report.html are written{rest}"
    listed = " and ".join([", ".join(missing[:-1]), missing[-1]] if len(missing) > 1 else missing)
    line = (
        f"zorkmcp eval: stopped by Ctrl-C before {listed} {'was' if len(missing) == 1 else 'were'} written; "
        "the finished episodes' files are kept; "
    )
    if missing == ["report.html"]:
        return line + f"to draw it, run zorkmcp report {folder}{rest}"
    played = "" if complete else "plays the episodes not played yet, then "
    report = f", or zorkmcp report {folder} for report.html alone" if "report.html" in missing else ""
    return line + (
        f"to write them, run the same command with --resume --out {folder} (it {played}writes summary.json, "
        f"summary.csv and report.html){report}"
    )


def _summarize_again(plan: EvalPlan, kept: list[dict[str, Any]], progress: LiveProgress) -> EvalOutcome:
    """The run's summary, written (again) after a Ctrl-C ended the writing of it: what finished.

    Every episode that finished has its file (written before it counted as done), so the outcome
    is what :func:`~zorkmcp.eval.run_eval` would have said: played, resumed, interrupted when some
    episode of the plan did not finish.

    Raises:
        RunWriteError: the summary cannot be written.
    """
    from .eval import EvalOutcome, collect_episodes
    from .eval._runner import write_run_summary

    episodes = collect_episodes(plan)
    summary = write_run_summary(plan.out, episodes, plan=plan)
    played = sum(tally.done for tally in progress.arms.values()) - len(kept)
    return EvalOutcome(
        run_dir=plan.out,
        episodes=episodes,
        played=played,
        resumed=len(kept),
        interrupted=len(kept) + played < len(plan.arms) * plan.episodes,
        summary=summary,
    )


def _all_played(outcome: EvalOutcome) -> bool:
    """Whether every episode of the run's plan (``summary.json``'s ``plan``) has its record."""
    plan = outcome.summary.get("plan")
    if not isinstance(plan, dict):
        return False
    try:
        total = int(len(plan["arms"]) * (plan["last_seed"] - plan["first_seed"] + 1))
    except (KeyError, TypeError, ValueError):
        return False
    return len(outcome.episodes) >= total


def _tell_outcome(console: Console, err: Console, outcome: EvalOutcome) -> int:
    """Print the outcome (the table, the comparisons, the last line); the exit status."""
    print_outcome(console, outcome)
    failed = [r for r in outcome.episodes if r.get("error")]
    if outcome.write_error is not None:
        err.print(
            f"[bold red]zorkmcp eval: stopped[/], {escape(outcome.write_error)}; the files written before "
            f"are kept; {outcome.write_remedy or 'mend the folder'}, then run the same command with --resume "
            f"--out {escape(str(outcome.run_dir))}",
            highlight=False,
            soft_wrap=True,
        )
        return EXIT_FAILED
    if outcome.interrupted:
        said = (
            "zorkmcp eval: interrupted; the summary covers the finished episodes; to play the rest, run "
            f"the same command with --resume --out {escape(str(outcome.run_dir))}"
        )
        if _all_played(outcome):  # stopped as the last one ended: no rest to play
            said = "zorkmcp eval: interrupted after every episode was played; the summary covers them all"
        err.print(said, highlight=False, soft_wrap=True)  # one line, however long: the terminal wraps it
        return EXIT_INTERRUPTED
    if failed:
        err.print(failed_line(failed, outcome.run_dir), highlight=False, soft_wrap=True)
        return EXIT_FAILED
    return EXIT_OK


def cmd_eval(args: argparse.Namespace, console: Console | None = None, err: Console | None = None) -> int:
    """Run ``zorkmcp eval`` (see the module docstring for the exit codes)."""
    console = console if console is not None else OutputConsole(emoji=False)
    err = err if err is not None else TerminalConsole(stderr=True, emoji=False)
    try:
        return _run(args, console, err)
    except (ConfigError, GameError) as exc:
        err.print(
            f"[bold red]zorkmcp eval: {type(exc).__name__}:[/] {escape(str(exc))}",
            highlight=False,
            soft_wrap=True,
        )
        return EXIT_CONFIG
    except KeyboardInterrupt:  # before the run started
        err.print("zorkmcp eval: interrupted", highlight=False)
        return EXIT_INTERRUPTED
