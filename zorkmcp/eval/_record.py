"""What an eval episode record holds, field by field, as ``zorkmcp eval`` writes it.

One rule for every reader of records: :func:`~zorkmcp.eval._results.read_episode_file` (the report,
``--resume``) and :func:`~zorkmcp.eval.summarize` / :func:`~zorkmcp.eval.write_summary_csv` (records a
library caller hands in) check the same kinds.
"""

from __future__ import annotations

import json
import math
import re
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

__all__ = ["RECORD_FIELDS", "checked_records", "field_problem", "is_count", "is_int", "is_strings"]


def is_int(value: Any) -> bool:
    """An exact integer (not a bool): one past 2**53 is not exact as a float, and a 400-digit one
    would overflow the statistics."""
    return isinstance(value, int) and not isinstance(value, bool) and -(2**53) <= value <= 2**53


def is_count(value: Any) -> bool:
    """An exact integer >= 0 (:func:`is_int`)."""
    return is_int(value) and value >= 0


def is_strings(value: Any) -> bool:
    """A list of strings."""
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _is_seconds(value: Any) -> bool:
    return (is_int(value) or isinstance(value, float)) and 0 <= value < math.inf


def _is_ints(value: Any) -> bool:
    return isinstance(value, list) and all(is_int(item) for item in value)


_MD5: Final = re.compile(r"[0-9a-f]{32}")


def _is_setup(value: Any) -> bool:
    """``setup`` as ``zorkmcp eval`` writes it: an object whose ``agent`` is an object and whose
    ``servers`` is an object of objects (a resume compares them key by key)."""
    if not isinstance(value, dict):
        return False
    agent, servers = value.get("agent", {}), value.get("servers", {})
    return (
        isinstance(agent, dict)
        and isinstance(servers, dict)
        and all(isinstance(server, dict) for server in servers.values())
        and isinstance(value.get("fingerprint", ""), str | None)
    )


_TOOL_FIELDS: Final[dict[str, Callable[[Any], bool]]] = {
    "calls": is_count,
    "errors": is_count,
    "timeouts": is_count,
    "skipped": is_count,
    "seconds": _is_seconds,
}


def _is_tools(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(use, dict) and all(check(use[key]) for key, check in _TOOL_FIELDS.items() if key in use)
        for use in value.values()
    )


_INTEGER = (is_int, "an integer")
_COUNT = (is_count, "a count (an integer >= 0)")
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
    "context_trims": (*_COUNT, False),
    "llm_requests": (*_COUNT, False),
    "prompt_tokens": (*_COUNT, True),
    "completion_tokens": (*_COUNT, True),
    "requests_without_usage": (*_COUNT, False),
    "llm_retries": (*_COUNT, False),
    "wall_seconds": (*_SECONDS, False),
    "start_seconds": (*_SECONDS, True),
    "scores": (_is_ints, "a list of integers", False),
    "runner": (*_TEXT, False),
    "pid": (*_INTEGER, True),
    "host": (*_TEXT, True),
    "model": (*_TEXT, False),
    "scripted": (*_BOOL, False),
    "base_url": (*_TEXT, True),
    "mcp": (*_BOOL, False),
    "servers": (is_strings, "a list of strings", False),
    "servers_disabled": (is_strings, "a list of strings", False),
    "max_turns": (*_COUNT, False),
    "game": (*_TEXT, False),
    "game_md5": (lambda value: isinstance(value, str) and bool(_MD5.fullmatch(value)), "an md5", True),
    "sampling": (lambda value: isinstance(value, dict), "an object", False),
    "setup": (_is_setup, "an object of agent settings and servers", False),
    "stopped": (*_TEXT, False),
    "zorkmcp": (*_TEXT, False),
    "error": (*_TEXT, True),
}
"""What each field of an episode record must hold, as ``zorkmcp eval`` writes it: (check, what it
must be, whether ``null`` is allowed). Fields a record lacks (an older zorkmcp's) are not checked,
but for ``arm``, ``seed`` and ``score``, which every record has."""

_REQUIRED: Final = ("arm", "seed", "score")


def _shown(value: Any) -> str:
    text = json.dumps(value, allow_nan=True, default=str)
    return text if len(text) <= 40 else text[:39] + "…"


def shown(value: Any) -> str:
    """A field's value as JSON, cut to 40 characters."""
    text = json.dumps(value, allow_nan=True, default=str)
    return text if len(text) <= 40 else text[:39] + "…"


def field_problem(data: Any) -> str | None:
    """Why ``data`` is not an episode record by its fields (``None``: it is one): a JSON object with
    ``arm``, ``seed`` and ``score``, and every field of :data:`RECORD_FIELDS` it has of its kind."""
    if not isinstance(data, dict):
        return f"is {type(data).__name__}, not an episode record (a JSON object)"
    for key in _REQUIRED:
        if key not in data:
            return f"has no {key}"
    for key, (check, kind, nullable) in RECORD_FIELDS.items():
        if key not in data or (nullable and data[key] is None) or check(data[key]):
            continue
        return f"{key} is {shown(data[key])}, not {kind}{' or null' if nullable else ''}"
    return None


def checked_records(episodes: Iterable[Any]) -> list[dict[str, Any]]:
    """``episodes`` as a list, once each is an episode record by :func:`field_problem`.

    Raises:
        ValueError: one is not, in one line: which (its place in ``episodes``), why, and what to pass.
    """
    records = list(episodes)
    for index, record in enumerate(records):
        if (problem := field_problem(record)) is not None:
            raise ValueError(
                f"episodes[{index}] {problem}: pass the records zorkmcp eval writes "
                "(episodes/<arm>/seed-<N>.json; zorkmcp.eval.read_run_episodes reads a run's)"
            )
    return records
