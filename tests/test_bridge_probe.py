"""What a demanding host does to ``bridge.Bridge`` (Requirement 9; Requirement 10.5, properties 39–40).

Calls made where they cannot be answered (a running event loop in the caller's thread, the Bridge's
own loop thread, a forked child), a ``with`` block left while another thread's turn runs, a Bridge
entered and never closed, and an episode callback that raises. The servers are the real
``misbehaving.py`` (``child`` forks a process of its own group that ignores stdin EOF: left alone, it
outlives its server); processes are checked by PID the moment their owner is done.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import trio
from play_support import events_of, read_events, write_project, zork1_path
from servers.helpers import MISBEHAVING
from test_bridge import GUARD, gone

import bridge
from zorkmcp.config import Settings
from zorkmcp.orchestrator import Orchestrator

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from zorkmcp.orchestrator import TurnRecord

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc")

REPO = Path(__file__).resolve().parents[1]
WALK = ["north", "south", "east"]


def scripted_bridge(**options: Any) -> bridge.Bridge:
    """A Bridge on the offline scripted model (no model server, no log files)."""
    return bridge.Bridge(Settings(), log_files=None, walkthrough=WALK, **options)


def guarded(body: Callable[[], None]) -> None:
    """Run ``body`` in a daemon thread: a deadlock fails the test instead of hanging the suite."""
    failures: list[BaseException] = []

    def run() -> None:
        try:
            body()
        except BaseException as exc:  # reported in the test's thread
            failures.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(GUARD)
    assert not thread.is_alive(), "deadlock: the Bridge waited for itself"
    if failures:
        raise failures[0]


def script(body: str) -> subprocess.CompletedProcess[str]:
    """Run ``body`` in a fresh interpreter (``tests/`` and the checkout importable) to its end."""
    paths = [
        *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep)),
        str(REPO),
        str(REPO / "tests"),
    ]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(body)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO / "tests",  # not the checkout: `-c` puts the current folder first on sys.path
        timeout=GUARD,
        check=False,
    )


# A Bridge with one per_episode server that forks a child; the script prints its PIDs as JSON.
EPISODE_WITH_CHILD = f"""\
    import json, os, sys
    import bridge
    from zorkmcp.config import McpConfig, ServerConfig, Settings

    args = ("-S", {str(MISBEHAVING)!r}, "child")
    server = ServerConfig(name="bad", command=sys.executable, args=args, lifecycle="per_episode")
    episode = bridge.Bridge(
        Settings(), servers=McpConfig(servers=(server,)), log_files=None, walkthrough=["north"]
    )
    episode.__enter__()
    pids = [episode.call_tool("bad.pid").content["pid"]]
    pids += episode.call_tool("bad.children").content["children"]
    print(json.dumps(pids), flush=True)
"""


def kill_left(pids: list[int]) -> None:
    """SIGKILL what a failed test left behind (the test has already failed on it)."""
    for pid in pids:
        if not gone(pid):
            os.kill(pid, signal.SIGKILL)


# --- calls that cannot be answered where they are made ------------------------------------------


def loop_refusal(loop: str) -> str:
    return (
        "Bridge.get_action() blocks until the Bridge's loop thread has done it, but it was called while "
        f"{loop} is running in this thread, which it would stall. Call it from a worker thread "
        "(asyncio.to_thread, trio.to_thread.run_sync), or await zorkmcp.ZorkAgent.generate_action "
        "directly from async code"
    )


@pytest.mark.parametrize(
    ("runner", "loop"),
    [(lambda fn: asyncio.run(fn()), "an asyncio event loop"), (trio.run, "a trio event loop")],
    ids=["asyncio", "trio"],
)
def test_an_open_bridge_called_from_a_running_loop_refuses_and_counts_no_turn(
    runner: Callable[[Callable[[], Any]], Any], loop: str
) -> None:
    """Properties 39–40: asyncio's loop used to stall for the whole turn; trio's failed inside anyio
    ("this is a blocking function") after the turn had been counted."""
    with scripted_bridge() as episode:

        async def inside() -> None:
            episode.get_action("West of House.")

        with pytest.raises(RuntimeError) as raised:
            runner(inside)
        assert str(raised.value) == loop_refusal(loop)
        assert episode.setup.turn == 0
        assert episode.get_action("West of House.")["action"] == "north"  # the walkthrough's step 1


class _CallingBack:
    """An event listener that calls the Bridge back from its loop thread, once."""

    def __init__(self, episode: bridge.Bridge, call: Callable[[bridge.Bridge], object]) -> None:
        self.episode, self.call = episode, call
        self.errors: list[str] = []

    def emit(self, event_type: str, /, **fields: Any) -> None:
        del fields
        if event_type == "mcp_session_complete" and not self.errors:
            try:
                self.call(self.episode)
            except RuntimeError as exc:
                self.errors.append(str(exc))

    def log(self, level: str, message: str, /) -> None:
        del level, message


OWN_THREAD = (
    " was called from the Bridge's own loop thread (an event listener, a chat model or another callback "
    "of a turn): it would wait for itself forever. Call it from the thread that drives the episode"
)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda episode: episode.get_action("again"), f"Bridge.get_action(){OWN_THREAD}"),
        (lambda episode: episode.call_tool("bad.pid"), f"Bridge.call_tool(){OWN_THREAD}"),
        (
            lambda episode: episode.close(),
            "a Bridge cannot be closed from its own loop thread (an event listener, a chat model or "
            "another callback of a turn): it would wait for itself forever. Close it from the thread "
            "that drives the episode",
        ),
    ],
    ids=["get_action", "call_tool", "close"],
)
def test_a_listener_that_calls_the_bridge_back_gets_an_error_not_a_deadlock(
    call: Callable[[bridge.Bridge], object], message: str
) -> None:
    def body() -> None:
        with scripted_bridge() as episode:
            listener = _CallingBack(episode, call)
            episode.recorder.add_listener(listener)
            assert episode.get_action("West of House.")["action"] == "north"
            assert episode.get_action("North of House.")["action"] == "south"
        assert listener.errors == [message]
        assert episode.setup.turn == 2

    guarded(body)


def test_a_forked_child_is_told_and_leaves_the_parent_s_servers_alone() -> None:
    """The child has no loop thread: its calls used to wait forever, and so did leaving the block."""
    result = script(
        EPISODE_WITH_CHILD
        + """\
    import signal
    child = os.fork()
    if child == 0:
        signal.alarm(30)  # the hang being tested for ends the child, and the test fails on it
        try:
            episode.get_action("West of House.")
        except RuntimeError as exc:
            print(str(exc).replace(str(os.getppid()), "PARENT").replace(str(os.getpid()), "CHILD"))
        episode.close()  # the child leaves the episode: nothing of the parent's is touched
        sys.exit(0)
    _, status = os.waitpid(child, 0)
    print(os.waitstatus_to_exitcode(status))
    print(json.dumps(episode.call_tool("bad.pid").content))
    episode.close()
    """
    )
    pids = json.loads(result.stdout.splitlines()[0])
    try:
        assert result.stdout.splitlines()[1:] == [
            "Bridge.get_action(): this Bridge was opened in process PARENT, and this is a forked child "
            "(process CHILD), where its loop thread and servers do not run: open a new Bridge in the child",
            "0",
            json.dumps({"pid": pids[0], "calls": 3}),  # the same server, which the child left running
        ], result.stderr
        assert result.returncode == 0, result.stderr
        assert [pid for pid in pids if not gone(pid)] == []
    finally:
        kill_left(pids)


# --- closing ----------------------------------------------------------------------------------------


def test_a_bridge_left_open_is_closed_at_exit_with_its_servers_and_a_warning() -> None:
    """A Bridge entered without ``with`` and never closed: its loop thread (a daemon) used to die with
    the interpreter, and the server's child was left running under PID 1."""
    result = script(EPISODE_WITH_CHILD)
    pids = json.loads(result.stdout)
    try:
        assert len(pids) == 2  # the server and its child
        assert [pid for pid in pids if not gone(pid)] == []
        assert result.returncode == 0
        (warning,) = result.stderr.splitlines()
        assert warning.startswith("bridge.Bridge (episode-")
        assert warning.endswith(
            ") was still open at exit: zorkmcp closed it and stopped its servers (use `with Bridge() as "
            "bridge:`, or call bridge.close())"
        )
    finally:
        kill_left(pids)


def test_close_ends_the_episode_and_may_be_called_again() -> None:
    episode = scripted_bridge()
    episode.close()  # never opened: nothing to do
    episode.__enter__()
    assert episode.get_action("West of House.")["action"] == "north"
    episode.close()
    episode.close()
    closed = (
        r"^this Bridge is closed: its episode ended when its with block was left \(or close\(\) was "
        r"called\); create a new Bridge for a new episode$"
    )
    with pytest.raises(RuntimeError, match=closed):
        episode.get_action("West of House.")
    with pytest.raises(RuntimeError, match=closed):
        episode.call_tool("memory")
    assert episode.setup.turn == 1


class _Stalled:
    """A chat model (the documented protocol) that never answers: its request waits until cancelled."""

    model = "stalled"
    scripted = True

    def __init__(self) -> None:
        self.asked = threading.Event()

    async def complete(self, request: Any) -> Any:
        del request
        self.asked.set()
        await trio.sleep_forever()


def test_leaving_the_block_while_another_thread_s_turn_runs_cancels_that_turn() -> None:
    """The turn used to be left running: leaving the block waited for it forever (or, with servers,
    closed them under it and let it go on without them)."""
    stalled = _Stalled()

    @asynccontextmanager
    async def chat_model() -> AsyncIterator[Any]:
        yield stalled

    outcome: list[str] = []

    def turn(episode: bridge.Bridge) -> None:
        try:
            episode.get_action("West of House.")
        except RuntimeError as exc:
            outcome.append(str(exc))

    def body() -> None:
        with bridge.Bridge(Settings(), chat_model=chat_model, log_files=None) as episode:
            worker = threading.Thread(target=turn, args=(episode,))
            worker.start()
            assert stalled.asked.wait(GUARD)
        worker.join(GUARD)
        assert not worker.is_alive()

    guarded(body)
    assert outcome == [
        "the Bridge was closed (its with block left in another thread) while this call ran: the call was "
        "cancelled"
    ]


# --- the orchestrator's callbacks ---------------------------------------------------------------------


@pytest.mark.parametrize("callback", ["on_start", "on_turn"])
def test_a_callback_that_raises_still_ends_the_episode_with_a_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, callback: str
) -> None:
    """``run()``: "every way out ends with episode_complete"; a live view that fails was no way out."""
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)
    files = {
        "json_log_file": str(tmp_path / "logs" / "events.jsonl"),
        "episode_log_file": str(tmp_path / "logs" / "episode.log"),
    }
    settings = Settings.from_pyproject(write_project(tmp_path, files=files, enabled=False))

    def broken(*args: object) -> None:
        del args
        raise ValueError("the display broke")

    def on_turn(record: TurnRecord) -> None:
        broken(record)

    orchestrator = Orchestrator(
        settings,
        game_path=zork1_path(),
        seed=12,
        max_turns=3,
        walkthrough=WALK,
        on_start=broken if callback == "on_start" else None,
        on_turn=on_turn if callback == "on_turn" else None,
    )
    with pytest.raises(ValueError, match=r"^the display broke$"):
        orchestrator.run()
    assert orchestrator.summary is not None
    turns = 0 if callback == "on_start" else 1
    assert (orchestrator.summary.stopped, orchestrator.summary.error, orchestrator.summary.turns) == (
        "error",
        "ValueError: the display broke",
        turns,
    )
    (complete,) = events_of(read_events(tmp_path / "logs" / "events.jsonl"), "episode_complete")
    assert (complete["stopped"], complete["turns"]) == ("error", turns)
    assert "[ERROR] Episode stopped: ValueError: the display broke" in (
        (tmp_path / "logs" / "episode.log").read_text()
    )
