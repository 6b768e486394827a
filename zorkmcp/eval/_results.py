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
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import attrs

from ..errors import ZorkMCPError

if TYPE_CHECKING:
    from collections.abc import Callable

__all__ = [
    "RECORD_FIELDS",
    "EpisodeEvents",
    "EventLog",
    "ReportInputError",
    "RunEpisodes",
    "find_episode_events",
    "read_episode_file",
    "read_event_log",
    "read_run",
    "read_run_episodes",
    "record_problem",
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
    """An event log's episodes (in order of first appearance) and how many lines were skipped."""

    path: Path
    episodes: dict[str, EpisodeEvents]
    bad_lines: int

    def pick(self, episode_id: str | None) -> EpisodeEvents:
        """The named episode, or the only one.

        Raises:
            ReportInputError: no episodes, an unknown id, or several episodes and no id.
        """
        if not self.episodes:
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
        if episode_id not in self.episodes:
            raise ReportInputError(f"{self.path}: no episode {episode_id!r}; the log holds: {ids}")
        return self.episodes[episode_id]


def _described(episode: EpisodeEvents) -> str:
    """``episode-1a2b (seed 12, started 2026-11-24 03:01 UTC, 396 turns)``: one play told from another."""
    start = episode.start or {}
    parts = [f"seed {start['seed']}"] if _is_int(start.get("seed")) else []
    when = start.get("timestamp")
    if isinstance(when, int | float) and not isinstance(when, bool) and math.isfinite(when):
        parts.append(f"started {datetime.fromtimestamp(when, UTC):%Y-%m-%d %H:%M} UTC")
    elif isinstance(when, str) and when:
        parts.append(f"started {when}")
    parts.append(f"{len(episode.turns)} turns" + ("" if episode.complete is not None else ", unfinished"))
    return f"{episode.episode_id} ({', '.join(parts)})"


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
        if kind not in ("episode_start", "turn_complete", "episode_complete"):
            continue
        key = str(record.get("episode_id", ""))
        episode = episodes.setdefault(key, EpisodeEvents(key))
        if kind == "episode_start":
            episode.start = record
        elif kind == "turn_complete":
            episode.turns.append(record)
        else:
            episode.complete = record
    return EventLog(path, episodes, bad)


# -- an eval run's episode records ------------------------------------------------------------------


def _is_int(value: Any) -> bool:
    # an integer past 2**53 is not exact as a float, and a 400-digit one would overflow the statistics
    return isinstance(value, int) and not isinstance(value, bool) and -(2**53) <= value <= 2**53


def _is_count(value: Any) -> bool:
    return _is_int(value) and value >= 0


def _is_seconds(value: Any) -> bool:
    return (_is_int(value) or isinstance(value, float)) and 0 <= value < math.inf


def _is_ints(value: Any) -> bool:
    return isinstance(value, list) and all(_is_int(item) for item in value)


def _is_strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


_TOOL_FIELDS: Final[dict[str, Callable[[Any], bool]]] = {
    "calls": _is_count,
    "errors": _is_count,
    "timeouts": _is_count,
    "skipped": _is_count,
    "seconds": _is_seconds,
}


def _is_tools(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(use, dict) and all(check(use[key]) for key, check in _TOOL_FIELDS.items() if key in use)
        for use in value.values()
    )


_INTEGER = (_is_int, "an integer")
_COUNT = (_is_count, "a count (an integer >= 0)")
_SECONDS = (_is_seconds, "a number of seconds (finite, >= 0)")
_BOOL = (lambda value: isinstance(value, bool), "true or false")
_TEXT = (lambda value: isinstance(value, str), "a string")

RECORD_FIELDS: Final[dict[str, tuple[Callable[[Any], bool], str, bool]]] = {
    "arm": (*_TEXT, False),
    "seed": (*_COUNT, False),
    "score": (*_INTEGER, False),
    "max_score": (*_INTEGER, True),
    "moves": (*_COUNT, False),
    "turns": (*_COUNT, False),
    "victory": (*_BOOL, False),
    "game_over": (*_BOOL, False),
    "deaths": (*_COUNT, False),
    "tool_calls": (*_COUNT, False),
    "tool_errors": (*_COUNT, False),
    "tool_timeouts": (*_COUNT, False),
    "tools": (_is_tools, "an object of tools, each with counts and seconds", False),
    "parse_errors": (*_COUNT, False),
    "deadlines": (*_COUNT, False),
    "llm_requests": (*_COUNT, False),
    "prompt_tokens": (*_COUNT, False),
    "completion_tokens": (*_COUNT, False),
    "wall_seconds": (*_SECONDS, False),
    "start_seconds": (*_SECONDS, True),
    "scores": (_is_ints, "a list of integers", False),
    "runner": (*_TEXT, False),
    "pid": (*_INTEGER, True),
    "host": (*_TEXT, True),
    "model": (*_TEXT, False),
    "scripted": (*_BOOL, False),
    "mcp": (*_BOOL, False),
    "servers": (_is_strings, "a list of strings", False),
    "max_turns": (*_COUNT, False),
    "game": (*_TEXT, False),
    "sampling": (lambda value: isinstance(value, dict), "an object", False),
    "stopped": (*_TEXT, False),
    "error": (*_TEXT, True),
}
"""What each field of an episode record must hold, as ``zorkmcp eval`` writes it: (check, what it
must be, whether ``null`` is allowed). Fields a record lacks (an older zorkmcp's) are not checked,
but for ``arm``, ``seed`` and ``score``, which every record has."""

_REQUIRED: Final = ("arm", "seed", "score")


def _shown(value: Any) -> str:
    text = json.dumps(value, allow_nan=True, default=str)
    return text if len(text) <= 40 else text[:39] + "…"


def record_problem(data: Any, path: Path) -> str | None:
    """Why ``data``, read from ``path`` (``episodes/<arm>/seed-<N>.json``), is not that episode's record.

    ``None`` when it is one: a JSON object with ``arm``, ``seed`` and ``score``, the arm and seed of
    its path, and every field of :data:`RECORD_FIELDS` it has of the kind ``zorkmcp eval`` writes
    (finite numbers, counts not negative, ``scores`` a list of integers, booleans true or false).
    """
    if not isinstance(data, dict):
        return "not a JSON object"
    for key in _REQUIRED:
        if key not in data:
            return f"has no {key}"
    for key, (check, kind, nullable) in RECORD_FIELDS.items():
        if key not in data or (nullable and data[key] is None) or check(data[key]):
            continue
        return f"{key} is {_shown(data[key])}, not {kind}{' or null' if nullable else ''}"
    if data["arm"] != path.parent.name:
        return f"arm is {_shown(data['arm'])}, but the file is in {path.parent.name}/"
    if path.name != f"seed-{data['seed']}.json":
        return f"seed is {data['seed']}, but the file is {path.name}"
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


@attrs.frozen
class RunEpisodes:
    """The episodes a run folder's report draws, and the episode files it leaves out.

    Attributes:
        records: the records to draw, arm by arm (the summary's arm order), seed by seed.
        skipped: the files left out because they are not their episode's record:
            ``(<arm>/seed-<N>.json, why)`` (a file ``summary.json`` names that is missing, too).
        others: readable episode files left out because the summary does not cover them (seeds or
            arms of an earlier run in the folder).
    """

    records: list[dict[str, Any]]
    skipped: list[tuple[str, str]]
    others: int


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
    if episodes is None and not root.is_dir():
        raise ReportInputError(
            f"{run_dir}: not an eval run folder (no episodes/ inside); run zorkmcp eval first"
        )
    order, covered = _summary_coverage(run_dir)
    files = _episode_files(root, order)
    records: list[dict[str, Any]] = []
    skipped: list[tuple[str, str]] = []
    if episodes is not None:
        records = list(episodes)
        drawn = {(str(r.get("arm")), f"seed-{r.get('seed')}.json") for r in records}
    else:
        wanted = files if covered is None else list(dict.fromkeys((a, f"seed-{n}.json") for a, n in covered))
        drawn = set(wanted)
        for arm, name in wanted:
            record, why = read_episode_file(root / arm / name)
            if record is None:
                skipped.append((f"{arm}/{name}", why))
            else:
                records.append(record)
    others = 0
    for arm, name in files:
        if (arm, name) in drawn:
            continue
        record, why = read_episode_file(root / arm / name)
        if record is None:
            skipped.append((f"{arm}/{name}", why))
        else:
            others += 1
    if not records:
        text = f"{root}: no readable episodes/<arm>/seed-<N>.json records"
        if skipped:
            more = f" (and {len(skipped) - 1} more)" if len(skipped) > 1 else ""
            text += f" ({skipped[0][0]}: {skipped[0][1]}{more}); play them again with zorkmcp eval --resume"
        raise ReportInputError(text)
    return RunEpisodes(records, skipped, others)


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
    return run.records, len(run.skipped)


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


def _summary_coverage(run_dir: Path) -> tuple[list[str], list[tuple[str, int]] | None]:
    """``summary.json``'s arms in order, and the ``(arm, seed)`` episodes it covers (``None``: not said).

    A summary written before summaries listed each arm's ``seeds`` (or none, or one that covers no
    arm, or one that does not parse) says nothing of its episodes: the report then draws every file.
    """
    try:
        summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
        arms = summary["arms"]
        order = [str(name) for name in arms]
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return [], None
    covered: list[tuple[str, int]] = []
    for name in order:
        arm = arms[name] if isinstance(arms, dict) else None
        seeds = arm.get("seeds") if isinstance(arm, dict) else None
        if Path(name).name != name or name in ("", ".", "..") or not isinstance(seeds, list):
            return order, None
        if not all(_is_count(seed) for seed in seeds):
            return order, None
        covered += [(name, seed) for seed in seeds]
    return order, covered or None


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
