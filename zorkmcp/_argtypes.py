"""Argument types shared by the ``zorkmcp`` subcommands: one message for the same mistake."""

from __future__ import annotations

import argparse

__all__ = ["http_url", "non_negative_int", "positive_int"]


def positive_int(text: str) -> int:
    """``text`` as an integer ≥ 1 (argparse ``type=``)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
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
    from ._urls import url_problem

    problem = url_problem(text, example="http://127.0.0.1:11434/v1")
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return text
