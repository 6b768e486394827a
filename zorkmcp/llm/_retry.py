"""Backoff arithmetic for the chat-completions client: exponential delays and ``Retry-After``."""

from __future__ import annotations

import math
import random
import time
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..config import RetrySettings

__all__ = ["backoff_delay", "default_rng", "parse_retry_after"]

_RNG = random.Random()  # noqa: S311 -- jitter for backoff, not cryptography


def default_rng() -> random.Random:
    """The module's jitter source; tests pass their own seeded ``random.Random`` instead."""
    return _RNG


def backoff_delay(attempt: int, retry: RetrySettings, rng: random.Random) -> float:
    """The wait before retry number ``attempt + 1``.

    ``initial_delay * exponential_base ** attempt``, capped at ``max_delay``, then moved by a
    uniformly drawn factor in ``±jitter_factor``; the result stays within ``[0, max_delay]``.

    Args:
        attempt: how many retries were already made (0 before the first retry).
        retry: the ``[tool.zorkgpt.retry]`` settings.
        rng: the jitter source.

    Returns:
        Seconds to wait.
    """
    try:
        base = retry.initial_delay * retry.exponential_base**attempt
    except OverflowError:
        base = retry.max_delay
    delay = min(base, retry.max_delay)
    if retry.jitter_factor > 0:
        delay *= 1 + rng.uniform(-retry.jitter_factor, retry.jitter_factor)
    return min(max(delay, 0.0), retry.max_delay)


def parse_retry_after(
    value: str | None, *, date: str | None = None, now: float | None = None
) -> float | None:
    """Seconds to wait according to a ``Retry-After`` header (RFC 9110 §10.2.3).

    The header is either a number of seconds or an HTTP-date. A date is measured from the
    response's own ``Date`` header when there is one (so clock skew between us and the
    server does not matter), else from ``now`` (the wall clock by default).

    Args:
        value: the ``Retry-After`` header, if any.
        date: the response's ``Date`` header, if any.
        now: the current POSIX time, for tests.

    Returns:
        The wait in seconds (never negative), or ``None`` if the header is absent or unreadable.
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        pass
    else:
        return max(seconds, 0.0) if math.isfinite(seconds) else None
    try:
        target = parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError, IndexError):
        return None
    reference = None
    if date is not None:
        try:
            reference = parsedate_to_datetime(date).timestamp()
        except (TypeError, ValueError, IndexError):
            reference = None
    if reference is None:
        reference = time.time() if now is None else now
    return max(target - reference, 0.0)
