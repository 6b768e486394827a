"""Reading what a run left behind: JSON-lines event logs and an eval run's episode records.

Readers are forgiving where the data is old or partial (missing optional fields, unknown event
types, lines that are not JSON objects: skipped and counted) and strict where nothing can be drawn
(a missing file, no episode, an unknown ``--episode``): those raise :class:`ReportInputError` with
one line that names the file and says what to do.

An episode record is read by one rule (:func:`read_episode_file`), for the report and for
``zorkmcp eval --resume`` alike: a file that does not parse, holds a field of another kind than the
writer's (a score that is not an integer, ``NaN``, ``scores`` that is not a list of integers) or
names another arm or seed than its path is not that episode's record: the report leaves it out and
says why, and a resume plays the episode again.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import attrs

from .._controls import visible_controls
from ..errors import ZorkMCPError
from ._record import RECORD_FIELDS, field_problem, is_count, is_int, is_strings, shown

__all__ = [
    "RECORD_FIELDS",
    "EpisodeEvents",
    "EventLog",
    "ReportInputError",
    "RunEpisodes",
    "error_kind",
    "find_episode_events",
    "read_episode_file",
    "read_event_log",
    "read_run",
    "read_run_episodes",
    "record_problem",
    "replayed_from",
]


class ReportInputError(ZorkMCPError):
    """A report cannot be drawn from the given input; the message names the file and the fix."""


@attrs.define
class EpisodeEvents:
    """One episode's records from an event log.

    Attributes:
        episode_id: the ``episode_id`` the records share.
        start: the ``episode_start`` record, if the log has it.
        turns: ``turn_complete`` records in file order.
        complete: the ``episode_complete`` record, if the episode finished.
    """

    episode_id: str
    start: dict[str, Any] | None = None
    turns: list[dict[str, Any]] = attrs.field(factory=list)
    complete: dict[str, Any] | None = None


@attrs.frozen
class EventLog:
    """An event log's episodes (in order of first appearance) and how many lines were skipped.

    Attributes:
        path: the log.
        episodes: the episodes, by ``episode_id``.
        bad_lines: lines that were not JSON objects.
        sessions: how many turns of the agent (``mcp_session_complete``) each ``episode_id`` has,
            also one that is not an episode: ``bridge.get_action()`` and ``bridge.Bridge`` log the
            agent's turns, but not the game's, whose loop is the caller's.
    """

    path: Path
    episodes: dict[str, EpisodeEvents]
    bad_lines: int
    sessions: dict[str, int] = attrs.field(factory=dict)

    def pick(self, episode_id: str | None) -> EpisodeEvents:
        """The named episode, or the only one.

        Raises:
            ReportInputError: no episodes, an unknown id, or several episodes and no id; a log (or an
                id) of ``bridge.get_action()``/``bridge.Bridge`` is said to be one.
        """
        bridged = {key: n for key, n in self.sessions.items() if key not in self.episodes}
        if not self.episodes:
            if bridged:
                raise ReportInputError(
                    f"{self.path}: {_BRIDGE_LOG} ({sum(bridged.values())} agent turn(s), no "
                    f"episode_start/turn_complete): {_NOT_DRAWN}; draw a log of zorkmcp play or zorkmcp "
                    "eval, or read this one's events as JSON lines (README, Events)"
                )
            raise ReportInputError(f"{self.path}: no episode records (episode_start/turn_complete) found")
        ids = ", ".join(self.episodes)
        if episode_id is None:
            if len(self.episodes) > 1:  # several plays in one folder append to one log
                listed = "; ".join(_described(episode) for episode in self.episodes.values())
                raise ReportInputError(
                    f"{self.path}: holds {len(self.episodes)} episodes; pick one with --episode ID "
                    f"({listed}); the last is the most recent"
                )
            return next(iter(self.episodes.values()))
        if episode_id in bridged:
            raise ReportInputError(
                f"{self.path}: episode {episode_id!r} is {bridged[episode_id]} agent turn(s) of "
                f"bridge.get_action()/bridge.Bridge: {_NOT_DRAWN}; the log's episodes: {ids}"
            )
        if episode_id not in self.episodes:
            raise ReportInputError(f"{self.path}: no episode {episode_id!r}; the log holds: {ids}")
        return self.episodes[episode_id]


_BRIDGE_LOG = "looks like a log of bridge.get_action()/bridge.Bridge"
_NOT_DRAWN = (
    "the report does not draw those, as the game loop is the calling code's and the log holds no game "
    "text or score"
)


def _described(episode: EpisodeEvents) -> str:
    """``episode-1a2b (seed 12, started 2026-11-24 03:01 UTC, 396 turns)``: one play told from another.

    An episode that ended in an error, or by an interruption, says so; one replayed from a cassette
    (``replayed_from``, which a live run's records lack) names the cassette.
    """
    start, end = episode.start or {}, episode.complete or {}
    parts = [f"seed {start['seed']}"] if is_int(start.get("seed")) else []
    when = start.get("timestamp")
    if isinstance(when, int | float) and not isinstance(when, bool) and math.isfinite(when):
        parts.append(f"started {datetime.fromtimestamp(when, UTC):%Y-%m-%d %H:%M} UTC")
    elif isinstance(when, str) and when:
        parts.append(f"started {when}")
    parts.append(f"{len(episode.turns)} turns" + ("" if episode.complete is not None else ", unfinished"))
    if end.get("error"):
        parts.append(f"ended in an error: {error_kind(end['error'])}")
    elif end.get("stopped") == "interrupted":
        parts.append("interrupted")
    cassette = replayed_from(episode)
    if cassette is not None:
        parts.append(f"replayed from the cassette {visible_controls(cassette, keep='')}")
    return f"{episode.episode_id} ({', '.join(parts)})"


def replayed_from(episode: EpisodeEvents) -> str | None:
    """The cassette ``episode`` was replayed from (``replayed_from`` of its start or end), or ``None``
    for a live run (a log of an older zorkmcp has none either)."""
    for record in (episode.start, episode.complete):
        cassette = (record or {}).get("replayed_from")
        if isinstance(cassette, str) and cassette:
            return cassette
    return None


_ERROR_KIND: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,79}")


def error_kind(error: Any) -> str:
    """``CassetteMismatchError`` of ``"CassetteMismatchError: cassette …"``: the list stays one line;
    an error that does not start with its kind, whitespace collapsed and cut to 60 characters."""
    text = " ".join(str(error).split())
    kind = text.split(":", 1)[0]
    if ":" in text and _ERROR_KIND.fullmatch(kind):
        return kind
    return visible_controls(text if len(text) <= 60 else text[:59] + "…", keep="")


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        raise ReportInputError(
            f"{path}: no such file; give an events .jsonl file or an eval run folder"
        ) from None
    except OSError as exc:
        raise ReportInputError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def read_event_log(path: Path) -> EventLog:
    """Parse a JSON-lines event log; lines that are not JSON objects are skipped and counted.

    Raises:
        ReportInputError: the file is missing or unreadable.
    """
    episodes: dict[str, EpisodeEvents] = {}
    sessions: dict[str, int] = {}
    bad = 0
    for line in _read_text(path).splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if not isinstance(record, dict):
            bad += 1
            continue
        kind = record.get("event_type")
        key = str(record.get("episode_id", ""))
        if kind == "mcp_session_complete":
            sessions[key] = sessions.get(key, 0) + 1
        if kind not in ("episode_start", "turn_complete", "episode_complete"):
            continue
        episode = episodes.setdefault(key, EpisodeEvents(key))
        if kind == "episode_start":
            episode.start = record
        elif kind == "turn_complete":
            episode.turns.append(record)
        else:
            episode.complete = record
    return EventLog(path, episodes, bad, sessions)


def record_problem(data: Any, path: Path) -> str | None:
    """Why ``data``, read from ``path`` (``episodes/<arm>/seed-<N>.json``), is not that episode's record.

    ``None`` when it is one: a JSON object with ``arm``, ``seed`` and ``score``, the arm and seed of
    its path, and every field of :data:`RECORD_FIELDS` it has of the kind ``zorkmcp eval`` writes
    (finite numbers, counts not negative, ``scores`` a list of integers, booleans true or false).
    """
    if not isinstance(data, dict):
        return "not a JSON object"
    if (problem := field_problem(data)) is not None:
        return problem
    if data["arm"] != path.parent.name:
        return f"arm is {shown(data['arm'])}, but the file is in {path.parent.name}/"
    if path.name != f"seed-{data['seed']}.json":
        return f"seed is {data['seed']}, but the file is {path.name}"
    return _implausible(data)


def _implausible(data: dict[str, Any]) -> str | None:
    """A score no episode can end with: past the game's maximum, not the last of ``scores``, or
    below 0 without a death (in Zork only dying takes points: 10 each). ``None``: none of these."""
    score, scores, top = data["score"], data.get("scores"), data.get("max_score")
    if isinstance(top, int) and top > 0:  # 0: a game that does not say
        if score > top:
            return f"score is {score}, above max_score {top}"
        if isinstance(scores, list) and (above := [s for s in scores if s > top]):
            return f"scores holds {above[0]}, above max_score {top}"
    if isinstance(scores, list) and scores and scores[-1] != score:
        return f"score is {score}, but the last of scores is {scores[-1]}"
    if score < 0 and data.get("deaths", 1) == 0:
        return f"score is {score}, below 0 with no death (deaths is 0): only a death takes points"
    return None


def read_episode_file(path: Path) -> tuple[dict[str, Any] | None, str]:
    """An episode's record and ``""``, or ``None`` and why the file is not the record of its path.

    The one rule for both readers of episode records: ``zorkmcp eval --resume`` plays such an
    episode again, and the run's report leaves it out and says why. A file is that episode's record
    when it is UTF-8 JSON and :func:`record_problem` finds nothing wrong.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, "missing"
    except OSError as exc:
        return None, f"cannot be read ({exc.strerror or exc})"
    except UnicodeDecodeError:
        return None, "not UTF-8 text"
    except (ValueError, RecursionError):  # cut short, empty, a number too long to parse, nested too deep
        return None, "not JSON"
    problem = record_problem(data, path)
    return (None, problem) if problem is not None else (data, "")


# -- the episodes a report draws ----------------------------------------------------------------------


@attrs.frozen
class RunEpisodes:
    """The episodes a run folder's report draws, and the episode files it leaves out.

    Attributes:
        records: the records to draw, arm by arm (the summary's arm order), seed by seed.
        skipped: the files left out because they are not their episode's record:
            ``(<arm>/seed-<N>.json, why)`` (a file ``summary.json`` names that is missing, too), of
            episodes ``--resume`` plays again: the run's (or, when its ``summary.json`` does not say
            which arms and seeds it plays, any well-named file).
        outside: the files left out because they are not their episode's record and no resume of
            the run plays them: ``(<arm>/<name>, why)`` of a seed or an arm outside the run's
            ``plan``, or a name that is no seed's (``seed-abc.json``).
        others: readable episode files left out because the summary does not cover them (seeds or
            arms of an earlier run in the folder).
        unsure: of ``skipped``, the files ``--resume`` may not play: ``summary.json`` neither covers
            them nor says which arms and seeds the run plays (one of an older zorkmcp, or none).
        plan: ``summary.json``'s ``plan``, the arms and seeds the run plays (its ``arms``,
            ``first_seed`` and ``last_seed``); ``None`` when it does not say.
    """

    records: list[dict[str, Any]]
    skipped: list[tuple[str, str]]
    others: int
    outside: list[tuple[str, str]] = attrs.field(factory=list)
    unsure: int = 0
    plan: dict[str, Any] | None = None


_SEED_FILE: Final = re.compile(r"seed-(0|[1-9][0-9]*)\.json")


def _outside_why(arm: str, name: str, plan: dict[str, Any] | None) -> str | None:
    """Why no resume of the run plays ``<arm>/<name>`` (``None``: one does, or may)."""
    match = _SEED_FILE.fullmatch(name)
    if match is None:
        return "not a seed-<N>.json name"
    if plan is None:
        return None
    if arm not in plan["arms"]:
        return f"{arm} is not an arm of the run"
    if not plan["first_seed"] <= int(match[1]) <= plan["last_seed"]:
        return f"seed {match[1]} is not one of the run's ({plan['first_seed']}…{plan['last_seed']})"
    return None


def read_run(run_dir: Path, episodes: list[dict[str, Any]] | None = None) -> RunEpisodes:
    """The episodes to draw for ``run_dir``, and the episode files left out (see :class:`RunEpisodes`).

    Args:
        run_dir: the run's folder.
        episodes: the records to draw (``zorkmcp eval``'s, which its ``summary.json`` covers);
            ``None``: the episodes ``summary.json`` covers (its arms' ``seeds``), read from
            ``episodes/<arm>/seed-<N>.json``, or every such file when there is no summary that says
            (none, or one written before summaries listed their seeds).

    Raises:
        ReportInputError: ``run_dir`` has no ``episodes`` folder (and no ``episodes`` were given),
            or there is no record to draw.
    """
    root = run_dir / "episodes"
    order, covered, plan = _summary_coverage(run_dir)
    if episodes is None and not root.is_dir():
        if plan is not None:  # zorkmcp eval's summary.json: a run stopped before an episode ended
            raise ReportInputError(_NOTHING_FINISHED.format(run_dir=run_dir))
        raise ReportInputError(
            f"{run_dir}: not an eval run folder (no episodes/ inside); run zorkmcp eval first"
        )
    files = _episode_files(root, order)
    records: list[dict[str, Any]] = []
    unread: list[tuple[str, str, str]] = []
    if episodes is not None:
        records = list(episodes)
        drawn = {(str(r.get("arm")), f"seed-{r.get('seed')}.json") for r in records}
    else:
        wanted = files if covered is None else list(dict.fromkeys((a, f"seed-{n}.json") for a, n in covered))
        drawn = set(wanted)
        for arm, name in wanted:
            record, why = read_episode_file(root / arm / name)
            if record is None:
                unread.append((arm, name, why))
            else:
                records.append(record)
    others = 0
    for arm, name in files:
        if (arm, name) in drawn:
            continue
        record, why = read_episode_file(root / arm / name)
        if record is None:
            unread.append((arm, name, why))
        else:
            others += 1
    skipped: list[tuple[str, str]] = []
    outside: list[tuple[str, str]] = []
    summarized = {(arm, f"seed-{seed}.json") for arm, seed in covered or ()}
    unsure = 0
    for arm, name, why in unread:
        never = _outside_why(arm, name, plan)
        if never is None:
            skipped.append((f"{arm}/{name}", why))
            unsure += plan is None and (arm, name) not in summarized
        else:
            outside.append((f"{arm}/{name}", f"{never}; {why}"))
    if not records and not unread and plan is not None:
        raise ReportInputError(_NOTHING_FINISHED.format(run_dir=run_dir))
    if not records:
        text = f"{root}: no readable episodes/<arm>/seed-<N>.json records"
        if skipped:
            more = f" (and {len(skipped) - 1} more)" if len(skipped) > 1 else ""
            text += f" ({skipped[0][0]}: {skipped[0][1]}{more}); play them again with zorkmcp eval --resume"
        else:  # a run still starting, or one stopped before its first episode ended and its summary
            text += (
                f"; no episode of this run has finished yet: wait for one, or play them with the same "
                f"zorkmcp eval command and --resume --out {run_dir}"
            )
        raise ReportInputError(text)
    return RunEpisodes(records, skipped, others, outside, unsure, plan)


_NOTHING_FINISHED: Final = (
    "{run_dir}: this eval run finished no episode (its summary.json covers none: the run was stopped "
    "before the first one ended), so there is nothing to draw; to play them, run the same zorkmcp "
    "eval command with --resume --out {run_dir}"
)


def read_run_episodes(run_dir: Path) -> tuple[list[dict[str, Any]], int]:
    """The episode records the report of ``run_dir`` draws, and how many files it leaves out as unreadable.

    The records ``summary.json`` covers when it lists its arms' seeds, otherwise every
    ``episodes/<arm>/seed-<N>.json``; a file that is not its path's record (see
    :func:`read_episode_file`) is left out and counted. Arms come in ``summary.json``'s order when
    the run wrote one, otherwise alphabetically; seeds in numeric order.

    Raises:
        ReportInputError: ``run_dir`` has no ``episodes`` folder or no episode record.
    """
    run = read_run(run_dir)
    return run.records, len(run.skipped) + len(run.outside)


def _episode_files(root: Path, order: list[str]) -> list[tuple[str, str]]:
    """``(arm, seed-<N>.json)`` of each episode file: arms in ``order``, then by name; seeds by number."""
    try:
        arms = sorted(p.name for p in root.iterdir() if p.is_dir())
        arms.sort(key=lambda name: (order.index(name) if name in order else len(order), name))
        return [
            (arm, path.name)
            for arm in arms
            for path in sorted((root / arm).glob("seed-*.json"), key=_seed_number)
        ]
    except OSError:  # no episodes/ (a run given its records), or one that cannot be listed
        return []


def _seed_number(path: Path) -> tuple[int, str]:
    digits = path.name.removeprefix("seed-").removesuffix(".json")
    return (int(digits), "") if digits.isdigit() else (1 << 62, path.name)


def _summary_coverage(
    run_dir: Path,
) -> tuple[list[str], list[tuple[str, int]] | None, dict[str, Any] | None]:
    """``summary.json``'s arms in order, the ``(arm, seed)`` episodes it covers (``None``: not said),
    and the run's ``plan`` (its arms, ``first_seed`` and ``last_seed``; ``None``: not said).

    A summary written before summaries listed each arm's ``seeds`` (or none, or one that covers no
    arm, or one that does not parse) says nothing of its episodes: the report then draws every file.
    One written before summaries kept the run's ``plan`` does not say which files a resume plays.
    """
    try:
        summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
        arms = summary["arms"]
        order = [str(name) for name in arms]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return [], None, None
    plan = _plan(summary.get("plan"))
    covered: list[tuple[str, int]] = []
    for name in order:
        arm = arms[name] if isinstance(arms, dict) else None
        seeds = arm.get("seeds") if isinstance(arm, dict) else None
        if Path(name).name != name or name in ("", ".", "..") or not isinstance(seeds, list):
            return order, None, plan
        if not all(is_count(seed) for seed in seeds):
            return order, None, plan
        covered += [(name, seed) for seed in seeds]
    return order, covered or None, plan


def _plan(value: Any) -> dict[str, Any] | None:
    """``summary.json``'s ``plan`` when it is one ``zorkmcp eval`` writes, else ``None``."""
    if not isinstance(value, dict) or not is_strings(value.get("arms")):
        return None
    if not (is_count(value.get("first_seed")) and is_count(value.get("last_seed"))):
        return None
    return value


def find_episode_events(run_dir: Path, episode_id: str) -> Path:
    """The events file of one episode of a run: ``<arm>/seed-<N>`` or an ``episode_id`` inside one.

    Raises:
        ReportInputError: no events file matches; when the episode's record is there but its events
            file is not, the message says so and how to play it again.
    """
    root = run_dir / "episodes"
    direct = root / f"{episode_id}.events.jsonl"
    if direct.is_file():
        return direct
    for path in sorted(root.glob("*/seed-*.events.jsonl")):
        if episode_id in read_event_log(path).episodes:
            return path
    record = _record_without_log(root, episode_id)
    if record is not None:
        events = record.with_name(record.name.removesuffix(".json") + ".events.jsonl")
        raise ReportInputError(
            f"{events}: missing: episode {episode_id!r} has its record ({record.name}) but no event log to "
            f"draw; to play it again, remove {record} and run the run's zorkmcp eval command with --resume "
            f"--out {run_dir}"
        )
    raise ReportInputError(
        f"{run_dir}: no episode {episode_id!r}; give <arm>/seed-<N> (e.g. mcp/seed-1) or an episode_id "
        "from an episodes/<arm>/seed-<N>.events.jsonl file"
    )


def _record_without_log(root: Path, episode_id: str) -> Path | None:
    """The ``seed-<N>.json`` of ``<arm>/seed-<N>`` (or its episode_id ``<arm>-seed-<N>``), if it is there."""
    parts = Path(episode_id).parts
    if len(parts) == 2 and ".." not in parts and "/" not in parts and (root / f"{episode_id}.json").is_file():
        return root / f"{episode_id}.json"
    for path in sorted(root.glob("*/seed-*.json")):  # zorkmcp eval names an episode <arm>-seed-<N>
        if f"{path.parent.name}-{path.name.removesuffix('.json')}" == episode_id:
            return path
    return None
