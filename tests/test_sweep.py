"""Killing what servers left behind by their session token (``zorkmcp.mcp._sweep``), with real processes.

Each process here is a real ``python`` that waits to be killed, started in its own session with a
``ZORKMCP_SESSION`` mark in its environment, as a server's escaped child would be.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
from contextlib import contextmanager
from typing import TYPE_CHECKING, Protocol

import anyio
import pytest
import trio
import trio.testing
from backends import BACKENDS, run
from servers.helpers import is_alive

from zorkmcp.mcp._sweep import SESSION_ENV_VAR, kill_session_processes, sweep_session

if TYPE_CHECKING:
    from collections.abc import Iterator


class Spawn(Protocol):
    def __call__(self, **env: str) -> int: ...


GUARD = 20  # seconds: a hung test fails instead of hanging the suite
WAITER = (
    "import sys, time; sys.stdout.write('up\\n'); sys.stdout.flush(); "
    "time.sleep(600)"  # real-time: a process that waits to be killed (each test or the fixture kills it)
)

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux") or not hasattr(os, "pidfd_open"), reason="needs /proc and pidfds"
)


@pytest.fixture
def spawn() -> Iterator[Spawn]:
    """Start a waiting process with extra environment variables; every one is killed at the end."""
    started: list[subprocess.Popen[bytes]] = []

    def start(**env: str) -> int:
        proc = subprocess.Popen(
            [sys.executable, "-c", WAITER],
            env={"PATH": os.environ.get("PATH", ""), **env},
            stdout=subprocess.PIPE,
            start_new_session=True,
        )
        started.append(proc)
        assert proc.stdout is not None
        assert proc.stdout.readline() == b"up\n"  # its environment is in place
        return proc.pid

    yield start
    for proc in started:
        proc.kill()
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()


def reap(pidfds: list[int]) -> None:
    """Wait until each killed process has exited (its pidfd turns readable), then close the pidfds.

    The processes are our children: the fixture reaps them.
    """
    for pidfd in pidfds:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        assert poller.poll(GUARD * 1000), "a killed process did not exit"
        os.close(pidfd)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_one_walk_kills_the_marked_processes_of_every_token_given(spawn: Spawn) -> None:
    a1, a2 = spawn(**{SESSION_ENV_VAR: "aaaa"}), spawn(**{SESSION_ENV_VAR: "aaaa"})
    b = spawn(**{SESSION_ENV_VAR: "bbbb"})
    other = spawn(**{SESSION_ENV_VAR: "cccc"})
    found = kill_session_processes({"aaaa", "bbbb"})
    assert sorted(found) == ["aaaa", "bbbb"]
    assert [len(found["aaaa"]), len(found["bbbb"])] == [2, 1]
    for pidfds in found.values():
        reap(pidfds)
    assert [is_alive(a1), is_alive(a2), is_alive(b)] == [False, False, False]
    assert is_alive(other)


def test_only_the_variable_itself_marks_a_process(spawn: Spawn) -> None:
    inside_a_value = spawn(NOTE=f"{SESSION_ENV_VAR}=aaaa")
    longer_token = spawn(**{SESSION_ENV_VAR: "aaaab"})
    suffix_name = spawn(**{f"X{SESSION_ENV_VAR}": "aaaa"})
    marked = spawn(NOTE=f"{SESSION_ENV_VAR}=bbbb", **{SESSION_ENV_VAR: "aaaa"})
    found = kill_session_processes({"aaaa"})
    assert list(found) == ["aaaa"]
    assert len(found["aaaa"]) == 1
    reap(found["aaaa"])
    assert [is_alive(inside_a_value), is_alive(longer_token), is_alive(suffix_name)] == [True, True, True]
    assert not is_alive(marked)


def test_no_tokens_walks_nothing() -> None:
    assert kill_session_processes(set()) == {}


async def _sessions_ending_together(tokens: list[str]) -> dict[str, int]:
    got: dict[str, int] = {}

    async def end(token: str) -> None:
        pidfds = await sweep_session(token)
        got[token] = len(pidfds)
        reap(pidfds)

    with anyio.fail_after(GUARD):
        async with anyio.create_task_group() as tg:
            for token in tokens:
                tg.start_soon(end, token)
    return got


@pytest.mark.parametrize("backend", BACKENDS)
def test_sessions_ending_together_each_get_their_own_processes(backend: str, spawn: Spawn) -> None:
    tokens = [f"tok{i}" for i in range(8)]
    pids = {token: spawn(**{SESSION_ENV_VAR: token}) for token in tokens}
    bystander = spawn(**{SESSION_ENV_VAR: "bystander"})
    before = open_fds()
    got = run(backend, lambda: _sessions_ending_together(tokens))
    assert got == dict.fromkeys(tokens, 1)
    assert [is_alive(pid) for pid in pids.values()] == [False] * 8
    assert is_alive(bystander)
    assert open_fds() == before


@contextmanager
def one_worker_thread() -> Iterator[trio.CapacityLimiter]:
    """Trio's worker threads limited to one, whose token the test can hold (as borrower ``HOLD``).

    While the test holds it, a walk that starts waits for its thread: it stays "under way" (its
    walker inside the shielded call, the sweep busy) until the test lets go.
    """
    limiter = trio.to_thread.current_default_thread_limiter()
    total = limiter.total_tokens
    limiter.total_tokens = 1
    try:
        yield limiter
    finally:
        limiter.total_tokens = total


HOLD = object()


def wait_gone(pid: int) -> None:
    """Wait until our child ``pid`` has exited (killed by a sweep that closed its own pidfd)."""
    pidfd = os.pidfd_open(pid)
    reap([pidfd])


async def _join_a_walk_then_quit(spawn: Spawn) -> bool:
    """ "first" walks; "walker" and "quitter" wait for the next walk; "quitter" is cancelled once it began.

    Which of the two runs the shared walk is up to trio's scheduler. Returns whether "quitter" was
    waiting on the other's walk when it was cancelled (else it ran the walk itself).
    """
    pids = {token: spawn(**{SESSION_ENV_VAR: token}) for token in ("first", "walker", "quitter")}
    before = open_fds()
    results: dict[str, list[int]] = {}
    quitting = trio.CancelScope()

    async def end(token: str) -> None:
        results[token] = await sweep_session(token)

    async def quit_() -> None:
        with quitting:
            results["quitter"] = await sweep_session("quitter")

    with trio.fail_after(GUARD), one_worker_thread() as threads:
        async with trio.open_nursery() as nursery:
            threads.acquire_on_behalf_of_nowait(HOLD)
            nursery.start_soon(end, "first")
            await trio.testing.wait_all_tasks_blocked()  # "first" is walking (waiting for the thread)
            nursery.start_soon(end, "walker")
            nursery.start_soon(quit_)
            await trio.testing.wait_all_tasks_blocked()  # both wait for the next walk
            threads.release_on_behalf_of(HOLD)  # "first" walks...
            await threads.acquire_on_behalf_of(HOLD)  # ...and hands the thread back to us
            await trio.testing.wait_all_tasks_blocked()  # one of the two is walking for both
            assert "first" in results
            quitting.cancel()
            await trio.testing.wait_all_tasks_blocked()
            threads.release_on_behalf_of(HOLD)
    abandoned = "quitter" not in results
    reap([pidfd for pidfds in results.values() for pidfd in pidfds])
    wait_gone(pids["quitter"])  # the shared walk killed it in either case
    assert [len(results["first"]), len(results["walker"])] == [1, 1]
    assert [is_alive(pid) for pid in pids.values()] == [False] * 3
    assert open_fds() == before  # when "quitter" was waiting, the walker closed the pidfd found for it
    return abandoned


async def test_a_session_that_stops_waiting_during_its_walk_leaks_no_pidfd(spawn: Spawn) -> None:
    paths = [await _join_a_walk_then_quit(spawn) for _ in range(20)]
    assert True in paths  # at least once (each time one in two), "quitter" was the one waiting


async def test_a_session_that_stops_waiting_before_its_walk_is_left_out(spawn: Spawn) -> None:
    first, quitter = spawn(**{SESSION_ENV_VAR: "first"}), spawn(**{SESSION_ENV_VAR: "quitter"})
    later = spawn(**{SESSION_ENV_VAR: "later"})
    before = open_fds()
    results: dict[str, list[int]] = {}

    async def end(token: str) -> None:
        results[token] = await sweep_session(token)

    with trio.fail_after(GUARD), one_worker_thread() as threads:
        async with trio.open_nursery() as nursery:
            threads.acquire_on_behalf_of_nowait(HOLD)
            nursery.start_soon(end, "first")
            await trio.testing.wait_all_tasks_blocked()  # "first" is walking (waiting for the thread)
            with trio.CancelScope() as scope:
                scope.cancel()
                await sweep_session("quitter")  # joins the next walk, cancelled at its first wait
            threads.release_on_behalf_of(HOLD)
        results["later"] = await sweep_session("later")  # the next walk, without "quitter"
    reap(results["first"] + results["later"])
    assert scope.cancelled_caught
    assert [is_alive(first), is_alive(later)] == [False, False]
    assert is_alive(quitter)  # no walk looked for it
    assert open_fds() == before
    found = kill_session_processes({"quitter"})
    assert [len(pidfds) for pidfds in found.values()] == [1]
    reap(found["quitter"])
