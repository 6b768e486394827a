"""Reading what a run left behind: JSON-lines event logs and an eval run's episode records.

Readers are forgiving where the data is old or partial (missing optional fields, unknown event
types, lines that are not JSON objects: skipped and counted) and strict where nothing can be drawn
(a missing file, no episode, an unknown ``--episode``): those raise :class:`ReportInputError` with
one line that names the file and says what to do.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import attrs

from ..errors import ZorkMCPError

if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "EpisodeEvents",
    "EventLog",
    "ReportInputError",
    "find_episode_events",
    "read_event_log",
    "read_run_episodes",
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
            if len(self.episodes) > 1:
                raise ReportInputError(
                    f"{self.path}: holds {len(self.episodes)} episodes; pick one with --episode ID ({ids})"
                )
            return next(iter(self.episodes.values()))
        if episode_id not in self.episodes:
            raise ReportInputError(f"{self.path}: no episode {episode_id!r}; the log holds: {ids}")
        return self.episodes[episode_id]


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


def read_run_episodes(run_dir: Path) -> tuple[list[dict[str, Any]], int]:
    """The episode records under ``run_dir/episodes/<arm>/seed-<N>.json`` and how many did not parse.

    Arms come in ``summary.json``'s order when the run wrote one, otherwise alphabetically; seeds
    in numeric order.

    Raises:
        ReportInputError: ``run_dir`` has no ``episodes`` folder or no episode record.
    """
    root = run_dir / "episodes"
    if not root.is_dir():
        raise ReportInputError(
            f"{run_dir}: not an eval run folder (no episodes/ inside); run zorkmcp eval first"
        )
    arms = sorted(p.name for p in root.iterdir() if p.is_dir())
    order = _summary_arm_order(run_dir)
    arms.sort(key=lambda name: (order.index(name) if name in order else len(order), name))
    records: list[dict[str, Any]] = []
    bad = 0
    for arm in arms:
        for path in sorted((root / arm).glob("seed-*.json"), key=_seed_number):
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                bad += 1
                continue
            if not isinstance(record, dict):
                bad += 1
                continue
            record.setdefault("arm", arm)
            records.append(record)
    if not records:
        raise ReportInputError(f"{root}: no readable episodes/<arm>/seed-<N>.json records")
    return records, bad


def _seed_number(path: Path) -> tuple[int, str]:
    digits = path.name.removeprefix("seed-").removesuffix(".json")
    return (int(digits), "") if digits.isdigit() else (1 << 62, path.name)


def _summary_arm_order(run_dir: Path) -> list[str]:
    try:
        summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
        return [str(name) for name in summary["arms"]]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def find_episode_events(run_dir: Path, episode_id: str) -> Path:
    """The events file of one episode of a run: ``<arm>/seed-<N>`` or an ``episode_id`` inside one.

    Raises:
        ReportInputError: no events file matches.
    """
    root = run_dir / "episodes"
    direct = root / f"{episode_id}.events.jsonl"
    if direct.is_file():
        return direct
    for path in sorted(root.glob("*/seed-*.events.jsonl")):
        if episode_id in read_event_log(path).episodes:
            return path
    raise ReportInputError(
        f"{run_dir}: no episode {episode_id!r}; give <arm>/seed-<N> (e.g. mcp/seed-1) or an episode_id "
        "from an episodes/<arm>/seed-<N>.events.jsonl file"
    )
