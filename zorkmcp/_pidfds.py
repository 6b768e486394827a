"""Waiting for processes pinned by pidfds, without an event loop (stdlib only: the CLI imports it early)."""

from __future__ import annotations

import select
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Collection

__all__ = ["wait_for_pidfds"]


def wait_for_pidfds(pidfds: Collection[int], seconds: float) -> set[int]:
    """Block until the processes behind ``pidfds`` have ended, or ``seconds`` passed; those still running.

    For code with no event loop to wait in: a signal handler of a command that is ending, Ray's
    driver. A pidfd is readable once its process has ended (``poll`` takes any fd number). The
    caller closes the pidfds.
    """
    waiting = select.poll()
    for pidfd in pidfds:
        waiting.register(pidfd, select.POLLIN)
    left, deadline = set(pidfds), time.monotonic() + seconds
    while left and (wait := deadline - time.monotonic()) > 0:
        for pidfd, _ in waiting.poll(wait * 1000):
            waiting.unregister(pidfd)
            left.discard(pidfd)
    return left
