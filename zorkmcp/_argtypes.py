"""Argument types shared by the ``zorkmcp`` subcommands: one message for the same mistake."""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = [
    "MAX_SEED",
    "file_path",
    "file_path_object",
    "game_seed",
    "http_url",
    "non_negative_int",
    "positive_int",
    "turn_limit",
]


MAX_SEED = 2**31 - 1
"""The largest game seed: Jericho passes it to the interpreter as a C ``int``, so a larger one would
wrap around (seeds 12 and 12 + 2**32 played the same game, and 2**32 - 1 became -1, a random one)."""


def game_seed(text: str) -> int:
    """``text`` as a game seed, 0 to :data:`MAX_SEED` (argparse ``type=``)."""
    value = non_negative_int(text)
    if value > MAX_SEED:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_SEED} (2**31 - 1), got {text!r}")
    return value


def file_path(text: str) -> str:
    """``text`` as the path of a file, not empty (argparse ``type=``).

    An empty path was the flag left out: ``zorkmcp play --summary-json "$OUT"`` with ``OUT`` unset
    wrote no summary, ``--replay ""`` played a new episode with the model of the settings, and
    ``--pyproject ""`` read ``./pyproject.toml``, each saying nothing and exiting 0.
    """
    if not text:
        raise argparse.ArgumentTypeError("must be the path of a file, got an empty one ('')")
    return text


def file_path_object(text: str) -> Path:
    """:func:`file_path`, as a :class:`~pathlib.Path` (``Path("")`` is ``.``, the current folder)."""
    return Path(file_path(text))


def positive_int(text: str) -> int:
    """``text`` as an integer ≥ 1 (argparse ``type=``)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def turn_limit(text: str) -> int:
    """``text`` as a turn limit, 1 to :data:`~zorkmcp.orchestrator.MAX_TURNS` (argparse ``type=``), as
    ``zorkmcp eval --turns`` takes it: ``play --turns 10000000`` was a ``ValueError`` traceback."""
    from .orchestrator import MAX_TURNS

    value = positive_int(text)
    if value > MAX_TURNS:
        raise argparse.ArgumentTypeError(
            f"must be at most {MAX_TURNS}, as max_turns_per_episode, got {text!r}"
        )
    return value


def non_negative_int(text: str) -> int:
    """``text`` as an integer ≥ 0 (argparse ``type=``)."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text!r}")
    return value


def http_url(text: str) -> str:
    """``text`` as a model endpoint the HTTP client can use (argparse ``type=``): ``--base-url``."""
    from ._urls import MODEL_URL_EXAMPLE, url_problem

    problem = url_problem(text, example=MODEL_URL_EXAMPLE)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return text
