"""Teardown waits for every process a stdio server left behind, even one the token sweep cannot read.

Real server processes (small scripts run with this interpreter, spoken to over the stdio transport
itself: no MCP needed to start and end a process). Every test checks by PID that nothing is left.
"""

from __future__ import annotations

import os
import signal
import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING

import anyio
import pytest
import trio
import trio.testing
from servers.helpers import is_alive

from zorkmcp.mcp import _sweep
from zorkmcp.mcp._stdio import NotJsonRpc, ProcessInfo, open_stdio_transport

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not hasattr(os, "pidfd_open"), reason="needs /proc and pidfds"
)

GUARD = 20  # seconds: a hung test fails instead of hanging the suite

BIG_CHILD = """\
import ctypes, os, signal, sys
ready_r, ready_w = os.pipe()
child = os.fork()
if child == 0:
    ctypes.CDLL(None).prctl(41, 1, 0, 0, 0)  # PR_SET_THP_DISABLE: 4 KiB pages, a slow exit everywhere
    memory = b"\\1" * (256 << 20)
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)  # holds none of the server's pipes: teardown waits on nothing of it
    os.write(ready_w, b"x")
    while True:
        signal.pause()
os.read(ready_r, 1)
print(child, flush=True)
sys.stdin.buffer.read()  # exits on stdin EOF; the child is killed with the server's group
"""
"""A server whose child, in its process group, holds 256 MiB: killed with the group, it spends tens
of milliseconds exiting (the kernel frees its memory), and from the start of that its environment,
and so its ``ZORKMCP_SESSION`` token, can no longer be read."""

SETSID_CHILD = """\
import os, signal
child = os.fork()
if child == 0:
    os.setsid()
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)  # holds none of the server's pipes: teardown waits on nothing of it
    while True:
        signal.pause()
print(child, flush=True)
"""
"""A server that leaves a child in a session of its own (only its token finds it) and exits at once."""


async def child_of(read: anyio.abc.ObjectReceiveStream[object]) -> int:
    """The PID the server wrote on stdout (a line that is not JSON-RPC)."""
    item = await read.receive()
    assert isinstance(item, NotJsonRpc)
    return int(item.line)


async def test_a_child_of_the_group_still_exiting_is_waited_for() -> None:
    with anyio.fail_after(GUARD):
        async with open_stdio_transport(sys.executable, ["-c", BIG_CHILD]) as (read, _, info):
            child = await child_of(read)
            assert is_alive(child)
    assert info.escalation == "none"
    assert not is_alive(child)


HOLD = object()


@contextmanager
def killed_at_the_end(children: dict[str, int]) -> Iterator[None]:
    """Kill the children a failing test left running (the teardown under test did not)."""
    try:
        yield
    finally:
        for child in children.values():
            if is_alive(child):
                os.kill(child, signal.SIGKILL)


@contextmanager
def one_worker_thread() -> Iterator[trio.CapacityLimiter]:
    """Trio's worker threads limited to one, whose token the test holds as borrower :data:`HOLD`."""
    limiter = trio.to_thread.current_default_thread_limiter()
    total = limiter.total_tokens
    limiter.total_tokens = 1
    try:
        yield limiter
    finally:
        limiter.total_tokens = total


async def test_a_session_ending_while_another_walks_still_has_its_strays_killed(
    mock_clock: trio.testing.MockClock,
) -> None:
    """Two servers end together; the walk of the first is slow (its thread is held) past every grace.

    The second session waits for the next walk however long the first takes: it used to stop
    waiting after 0.2 s and be left out of every walk, its child (in a session of its own) running on.
    """
    children: dict[str, int] = {}
    infos: dict[str, ProcessInfo] = {}
    close = trio.Event()

    async def serve(name: str, up: trio.Event) -> None:
        async with open_stdio_transport(sys.executable, ["-c", SETSID_CHILD]) as (read, _, info):
            infos[name] = info
            children[name] = await child_of(read)
            await info.exited.wait()  # the server is gone: its teardown goes straight to the sweep
            up.set()
            await close.wait()

    with trio.fail_after(GUARD), one_worker_thread() as threads, killed_at_the_end(children):
        async with trio.open_nursery() as nursery:
            for name in ("a", "b"):
                up = trio.Event()
                nursery.start_soon(serve, name, up)
                await up.wait()
            threads.acquire_on_behalf_of_nowait(HOLD)
            close.set()
            await trio.testing.wait_all_tasks_blocked()
            sweeper = _sweep._sweeper()
            assert sweeper.walking  # one session's walk waits for the thread...
            assert len(sweeper.next.tokens) == 1  # ...the other's waits for the next walk
            mock_clock.jump(5)  # longer than any grace of the teardown
            await trio.testing.wait_all_tasks_blocked()
            threads.release_on_behalf_of(HOLD)
    assert [infos[name].strays_killed for name in ("a", "b")] == [1, 1]
    assert [is_alive(children[name]) for name in ("a", "b")] == [False, False]


async def test_session_members_pins_only_the_processes_of_the_sessions_given() -> None:
    """No signal: a process found by its session is only pinned (the caller waits for it)."""
    async with open_stdio_transport(sys.executable, ["-c", SETSID_CHILD]) as (read, _, info):
        child = await child_of(read)
        await info.exited.wait()  # the server has been reaped: nothing is left in its session
        assert info.pid is not None
        found = _sweep.session_members({child: "tok", info.pid: "server"})
        found_none = _sweep.session_members({})
        assert list(found) == ["tok"]
        assert len(found["tok"]) == 1
        for pidfd in found["tok"]:
            os.close(pidfd)
        assert is_alive(child)  # not signalled
    assert found_none == {}
    assert not is_alive(child)  # the teardown's sweep, by its token
    assert info.strays_killed == 1


async def test_a_sweep_by_session_returns_the_killed_and_the_exiting_apart() -> None:
    """The token's processes are killed; the session's are only waited for, and counted apart."""
    async with open_stdio_transport(sys.executable, ["-c", SETSID_CHILD]) as (read, _, info):
        child = await child_of(read)
        await info.exited.wait()
        swept = await _sweep.sweep(info.token, session=child)  # the child leads a session of its own
        try:
            assert (len(swept.killed), len(swept.exiting)) == (1, 1)  # the same process, twice
        finally:
            for pidfd in swept.killed + swept.exiting:
                await anyio.wait_readable(pidfd)
                os.close(pidfd)
        assert not is_alive(child)
