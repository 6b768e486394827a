"""Finding and killing what a stdio server left behind: every process that carries its session token.

Each stdio session puts ``ZORKMCP_SESSION=<token>`` in its server's environment; everything the
server starts inherits it, even a child that called ``setsid`` and left the server's process group.
At the end of every session, teardown (:mod:`zorkmcp.mcp._stdio`) kills such processes by walking
``/proc`` and reading each process's environment.

A walk reads every process on the machine, so its cost grows with what runs beside us; ``zorkmcp
eval`` runs many episodes in one process and ends many sessions at once. One walk serves every
session that is waiting for one (:func:`sweep_session`): in an eval of 64 episodes the walks took
about 15% of the eval process's CPU (py-spy, 64 episodes × 5 turns, 2 cores) when each teardown
walked on its own.

A process that is being killed is not found by its token once the kernel has taken its memory
away: from then until it is gone its environment cannot be read. A child killed with its server's
group spends that long freeing its memory (about 35 ms for 256 MiB, 160 ms for 2 GB), and the walk
runs a moment after that kill: it met a small child in that state in 1 to 6 runs in a hundred of a
test, and missed it. So the same walk also pins what is left of each ending session (:func:`sweep`,
``session=``: the server's session ID, which every process of its group shares; a ``getsid`` per
process, no file read: 0.07 ms beside a 0.45 ms walk of 75 processes, 0.9 ms beside 14 ms for
1075). Those are only waited for, never signalled: they were killed with the group, and once the
server has been reaped its session ID could in principle name a new session.

A second variable, ``ZORKMCP_EPISODE=<token>``, marks every process of one episode where something
other than the episode may have to end them: ``zorkmcp eval --ray`` sets it in a worker for the
episode it plays, so that the driver can find what a worker killed mid-episode left behind (the
worker's own teardown never ran). The same walk finds either variable (``variable=``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import anyio
import anyio.lowlevel
import anyio.to_thread
from attrs import define, field

from .._pidfds import SESSION_ENV_VAR, _processes, kill_session_processes

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = [
    "EPISODE_ENV_VAR",
    "SESSION_ENV_VAR",
    "Swept",
    "kill_session_processes",
    "session_members",
    "sweep",
    "sweep_session",
]

EPISODE_ENV_VAR = "ZORKMCP_EPISODE"
"""Environment variable marking every process one episode started on Ray (value: a random token)."""


def _close_all(pidfds: list[int]) -> None:
    for pidfd in pidfds:
        os.close(pidfd)


def session_members(sessions: Mapping[int, str]) -> dict[str, list[int]]:
    """Pin every process that is still in one of ``sessions`` (session ID → token); their pidfds.

    Blocking (lists ``/proc``); run it in a worker thread. No signal is sent: this finds what a
    token cannot, processes of a killed group that are still exiting (their environment is gone
    with their memory), for the caller to wait on. A session ID is not a token: once the session's
    leader has been reaped, the ID could name a new session, whose processes must not be hit.

    Args:
        sessions: each ending session's ID (its server's PID) and token.

    Returns:
        For each token with a process still in its session, their pidfds (the caller waits on them
        and closes them); empty where ``/proc`` or pidfds are not available.
    """
    found: dict[str, list[int]] = {}
    for pid in _processes() if sessions else ():
        try:
            sid = os.getsid(pid)
        except OSError:
            continue
        token = sessions.get(sid)
        if token is None:
            continue
        try:
            pidfd = os.pidfd_open(pid)
        except OSError:
            continue
        try:
            same = os.getsid(pid) == sid  # still the process we matched (pinned now)
        except OSError:
            same = False
        if not same:
            os.close(pidfd)
            continue
        found.setdefault(token, []).append(pidfd)
    return found


@define(frozen=True)
class Swept:
    """What one walk found for one session.

    Attributes:
        killed: pidfds of the processes found by the token and sent SIGKILL.
        exiting: pidfds of the processes found in the session (see :func:`session_members`).
    """

    killed: list[int]
    exiting: list[int]


def _walk(
    tokens: frozenset[str], sessions: Mapping[int, str]
) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
    """One walk in a worker thread: kill by token, then pin what is left of the sessions."""
    killed = kill_session_processes(tokens)
    try:
        return killed, session_members(sessions)
    except BaseException:  # pragma: no cover - an error after the kills: no pidfd may leak
        for pidfds in killed.values():
            _close_all(pidfds)
        raise


@define(eq=False)
class _Walk:
    """The tokens (and sessions) one walk of ``/proc`` looks for, and what it found."""

    tokens: set[str] = field(factory=set)
    sessions: dict[int, str] = field(factory=dict)
    found: dict[str, list[int]] = field(factory=dict)
    exiting: dict[str, list[int]] = field(factory=dict)
    abandoned: set[str] = field(factory=set)
    """Tokens whose session stopped waiting once the walk had begun (their pidfds are closed)."""
    done: anyio.Event = field(factory=anyio.Event)

    def take(self, token: str) -> Swept:
        """Hand over (and forget) what was found for ``token``."""
        return Swept(killed=self.found.pop(token, []), exiting=self.exiting.pop(token, []))


@define(eq=False)
class _Sweeper:
    """One per event loop: the walk being made, and the next one, which collects tokens meanwhile."""

    next: _Walk = field(factory=_Walk)
    walking: bool = False
    idle: anyio.Event = field(factory=anyio.Event)


_SWEEPER: anyio.lowlevel.RunVar[_Sweeper] = anyio.lowlevel.RunVar("zorkmcp_sweeper")


def _sweeper() -> _Sweeper:
    try:
        return _SWEEPER.get()
    except LookupError:
        sweeper = _Sweeper()
        _SWEEPER.set(sweeper)
        return sweeper


async def sweep(token: str, *, session: int | None = None) -> Swept:
    """Kill every process of session ``token`` (see :func:`kill_session_processes`); what was found.

    Sessions that end while a walk is under way share the next walk: at most one walk at a time,
    however many sessions end together. The walk itself is not cancelled (it is bounded, and it has
    signalled processes by the time it returns); a caller cancelled while it waits gets nothing,
    and the pidfds found for it are closed. A caller that must not miss its walk does not put a
    timeout around this call: one cancelled before its walk began is left out of it.

    Args:
        token: the session's token.
        session: the session's ID (its server's PID, the server having been started in a session
            of its own): the walk then also pins every process still in that session
            (:func:`session_members`: a process of the group that is exiting has no environment
            left to find the token in). ``None``: only the token.

    Returns:
        pidfds of the processes signalled, and of those still in the session; the caller waits on
        them and closes them.
    """
    sweeper = _sweeper()
    walk = sweeper.next
    walk.tokens.add(token)
    if session is not None:
        walk.sessions[session] = token
    try:
        while not walk.done.is_set():
            if sweeper.walking:
                await sweeper.idle.wait()
                continue
            sweeper.walking, sweeper.next = True, _Walk()
            try:
                with anyio.CancelScope(shield=True):
                    walk.found, walk.exiting = await anyio.to_thread.run_sync(
                        _walk, frozenset(walk.tokens), dict(walk.sessions)
                    )
            finally:
                for gone in walk.abandoned:
                    swept = walk.take(gone)
                    _close_all(swept.killed + swept.exiting)
                walk.done.set()
                sweeper.walking = False
                sweeper.idle.set()
                sweeper.idle = anyio.Event()
    except BaseException:
        if walk.done.is_set():
            swept = walk.take(token)
            _close_all(swept.killed + swept.exiting)
        elif walk is sweeper.next:  # not begun: leave it
            walk.tokens.discard(token)
            if session is not None:
                walk.sessions.pop(session, None)
        else:
            walk.abandoned.add(token)
        raise
    return walk.take(token)


async def sweep_session(token: str) -> list[int]:
    """Kill every process of session ``token``; their pidfds (:func:`sweep` by the token alone).

    Args:
        token: the session's token.

    Returns:
        pidfds of the processes signalled; the caller waits on them and closes them.
    """
    return (await sweep(token)).killed
