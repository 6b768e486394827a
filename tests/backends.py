"""Run one async test body on trio and on asyncio (the engine is written on anyio).

The suite runs in pytest-trio's ``trio_mode``: every ``async def`` test is a trio test. A test that
must hold on both event loops is a plain function parametrized with :data:`BACKENDS` that calls
:func:`run`::

    @pytest.mark.parametrize("backend", BACKENDS)
    def test_turn_ends_every_process(backend: str) -> None:
        run(backend, check_turn)

On trio the body runs under ``MockClock(autojump_threshold=0)`` when ``virtual_time`` is set
(timeouts take no real time); asyncio has no virtual clock, so a body that uses ``virtual_time``
must be event-driven there (waits that end on an event, never on a sleep).
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import trio
import trio.testing

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

__all__ = ["AUTOJUMP_THRESHOLD", "BACKENDS", "run"]

T = TypeVar("T")

AUTOJUMP_THRESHOLD = 0.01
"""Seconds of real time every task must have been blocked before the mock clock jumps.

Not zero: in-process MCP servers are built in a worker thread (a factory may read files), and a
zero threshold jumps the clock while that thread runs, so a start-up timeout would expire in virtual
time before the server could answer. No test asserts on real time; every duration a test checks is
still exact on this clock.
"""

BACKENDS = ("trio", "asyncio")
"""The event loops the engine supports: trio (the project's runtime) and asyncio (other hosts)."""


def run(backend: str, fn: Callable[..., Awaitable[T]], *args: Any, virtual_time: bool = False) -> T:
    """Run ``fn(*args)`` to completion on ``backend`` and return its result.

    Args:
        backend: ``"trio"`` or ``"asyncio"``.
        fn: the async test body.
        args: positional arguments for ``fn``.
        virtual_time: on trio, run under ``MockClock(autojump_threshold=0)``.
    """
    if backend == "trio":
        clock = trio.testing.MockClock(autojump_threshold=AUTOJUMP_THRESHOLD) if virtual_time else None
        return trio.run(functools.partial(fn, *args), clock=clock)
    if backend == "asyncio":
        return anyio.run(functools.partial(fn, *args), backend="asyncio")
    raise ValueError(f"unknown backend {backend!r}; expected one of {BACKENDS}")
