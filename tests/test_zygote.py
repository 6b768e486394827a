"""The zygote: servers forked from one preloaded interpreter keep every guarantee of the stdio transport.

Real processes throughout. Whether a server really came from the zygote is checked by its parent
PID (``/proc/<pid>/stat``), so a silent fallback to ``Popen`` fails these tests. They run on the
real clock (a child process cannot follow trio's virtual time); nothing asserts a duration.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest
import trio
from backends import BACKENDS, run
from play_support import ZORK1_Z3
from servers.helpers import RecordingSink, content_json, is_alive, modules_loaded_by, thinking

from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.episode import game_server_config
from zorkmcp.mcp import McpManager, _sweep, open_server_session
from zorkmcp.mcp._zygote import Zygote, ZygoteChild, ZygoteGone, ZygoteGroup, open_zygote
from zorkmcp.observability import EventRecorder

if TYPE_CHECKING:
    from zorkmcp.mcp import EpisodeServers, ServerSession

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="zygotes and /proc are Linux")

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
SETTINGS = McpSettings(server_startup_timeout_seconds=10)
GUARD = 20  # seconds: a hung test fails instead of hanging the suite
PRELOADED = ("zorkmcp.servers.thinking", "servers.misbehaving")
"""The think server and the misbehaving test server (importable with ``tests/`` on the path)."""
TEST_ENV = {"PYTHONPATH": str(TESTS)}
THINK = {"thought": "Go north first.", "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": False}


def parent_of(pid: int) -> int:
    """The parent PID of a live (or zombie) process."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])


def state_of(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def preloaded(mode: str = "ok", *, name: str = "bad") -> ServerConfig:
    """The misbehaving server as a module a test zygote preloads (``python -m servers.misbehaving``)."""
    return ServerConfig(
        name=name, command=sys.executable, args=("-m", "servers.misbehaving", mode), env=TEST_ENV
    )


def open_test_zygote() -> Any:
    """A zygote that preloads the test server too (same ``PYTHONPATH`` as :func:`preloaded`)."""
    return open_zygote(PRELOADED, env={**os.environ, **TEST_ENV})


def server_pid(session: ServerSession) -> int:
    assert session.process is not None
    assert session.process.pid is not None
    return session.process.pid


async def wait_exited(pid: int) -> None:
    """Wait (on a pidfd, no polling) until ``pid`` has exited; it must be our child or held."""
    pidfd = os.pidfd_open(pid)
    try:
        await anyio.wait_readable(pidfd)
    finally:
        os.close(pidfd)


async def _a_session_through_the_zygote() -> None:
    events = RecordingSink()
    with anyio.fail_after(GUARD):
        async with open_zygote() as zygote:
            async with open_server_session(thinking(), SETTINGS, events=events, zygote=zygote) as session:
                pid = server_pid(session)
                assert parent_of(pid) == zygote.pid  # forked by the zygote, not spawned by us
                assert session.process is not None
                assert session.process.zygote_pid == zygote.pid
                assert [tool.name for tool in session.tools] == ["think"]
                result = await session.client.call_tool("think", THINK)
                assert not result.is_error
                assert session.alive
            assert not session.alive
            assert not Path(f"/proc/{pid}").exists()  # reaped by the zygote, not left a zombie
    [stopped] = [fields for event, fields in events.events if event == "mcp_server_stopped"]
    assert stopped["pid"] == pid
    assert stopped["exit_status"] == 0
    assert stopped["escalation"] == "none"
    assert not is_alive(zygote.pid)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_session_through_the_zygote(backend: str) -> None:
    run(backend, _a_session_through_the_zygote)


async def _a_stubborn_child_is_killed_and_reaped() -> None:
    with anyio.fail_after(GUARD):
        async with open_test_zygote() as zygote:
            async with open_server_session(preloaded("stubborn,child"), SETTINGS, zygote=zygote) as session:
                pid = server_pid(session)
                assert parent_of(pid) == zygote.pid
                [grandchild] = content_json((await session.client.call_tool("children", {})).content[0].text)[
                    "children"
                ]
                assert is_alive(grandchild)
            info = session.process
            assert info is not None
            assert info.escalation == "sigkill"  # it ignored stdin EOF and SIGTERM
            assert info.returncode == -signal.SIGKILL
            assert not Path(f"/proc/{pid}").exists()  # reaped by the zygote, not left a zombie
            assert not is_alive(grandchild)  # the group went with it
            assert zygote.alive


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_stubborn_child_is_killed_and_reaped(backend: str) -> None:
    run(backend, _a_stubborn_child_is_killed_and_reaped)


async def test_only_a_server_that_may_start_processes_has_proc_walked_for_strays(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Our think server starts no process: no walk. A server of another module is walked for."""
    walked: list[frozenset[str]] = []
    real_walk = _sweep.kill_session_processes

    def walk(tokens: frozenset[str]) -> dict[str, list[int]]:
        walked.append(tokens)
        return real_walk(tokens)

    monkeypatch.setattr(_sweep, "kill_session_processes", walk)
    with trio.fail_after(GUARD):
        async with open_zygote() as ours, open_test_zygote() as tests:
            async with open_server_session(thinking(), SETTINGS, zygote=ours) as think:
                assert parent_of(server_pid(think)) == ours.pid
            async with open_server_session(preloaded("ok"), SETTINGS, zygote=tests) as other:
                assert parent_of(server_pid(other)) == tests.pid
    assert think.process is not None
    assert other.process is not None
    assert (think.process.may_leave_strays, other.process.may_leave_strays) == (False, True)
    assert walked == [frozenset({other.process.token})]


async def exit_of(pid: int) -> None:
    """Wait until ``pid`` has exited: a SIGKILL is sent at once, but a loaded machine may run the exit later.

    A process that is never killed keeps the test waiting until its guard gives up.
    """
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        if is_alive(pid):
            await trio.lowlevel.wait_readable(pidfd)
    finally:
        os.close(pidfd)


async def spawn(zygote: Zygote, mode: str) -> ZygoteChild:
    env = {**os.environ, **TEST_ENV}
    return await zygote.spawn("servers.misbehaving", [mode], env, None)


def close_child(child: ZygoteChild) -> None:
    for pipe in (child.stdin, child.stdout, child.stderr):
        pipe.close()
    os.close(child.pidfd)


async def test_the_zygote_never_reaps_on_its_own() -> None:
    with trio.fail_after(GUARD):
        async with open_test_zygote() as zygote:
            child = await spawn(zygote, "crash-start")
            try:
                await trio.lowlevel.wait_readable(child.pidfd)  # it exited...
                assert state_of(child.pid) == "Z"  # ...and stays a zombie: its group ID is still ours
                assert await child.wait() == 3  # the owner asks; the zygote reaps and reports
                assert not Path(f"/proc/{child.pid}").exists()
            finally:
                close_child(child)


async def test_leaving_the_zygote_ends_it_and_every_child() -> None:
    with trio.fail_after(GUARD):
        async with open_test_zygote() as zygote:
            stubborn = await spawn(zygote, "stubborn")
            grouped = await spawn(zygote, "child")
            children = [stubborn, grouped]
            try:
                line = await trio.to_thread.run_sync(grouped.stderr.readline)
                assert line == f"PID {grouped.pid}\n".encode()
                line = await trio.to_thread.run_sync(grouped.stderr.readline)
                assert line.startswith(b"CHILD ")
                grandchild = int(line.split()[1])
                assert is_alive(grandchild)
            finally:
                for child in children:
                    close_child(child)  # stdin EOF: only the stubborn one keeps running
        assert not Path(f"/proc/{zygote.pid}").exists()  # exited and reaped
        assert not is_alive(stubborn.pid)
        assert not is_alive(grouped.pid)
        await exit_of(grandchild)  # killed with its group (not the zygote's child: not reaped by it)
    assert not is_alive(grandchild)


async def test_a_zygote_that_cannot_import_its_module_does_not_start() -> None:
    with (
        trio.fail_after(GUARD),
        pytest.raises(
            ZygoteGone,
            match=r"did not start: ModuleNotFoundError: No module named .zorkmcp.servers.no_such_server.$",
        ),
    ):
        async with open_zygote(("zorkmcp.servers.no_such_server",)):
            pytest.fail("should not start")  # pragma: no cover


async def test_a_preload_that_fails_stops_the_zygote_from_starting() -> None:
    env = {**os.environ, **TEST_ENV, "MISBEHAVING_PRELOAD": "fail"}
    with (
        trio.fail_after(GUARD),
        pytest.raises(ZygoteGone, match=r"did not start: RuntimeError: the preload failed on purpose$"),
    ):
        async with open_zygote(("servers.misbehaving",), env=env):
            pytest.fail("should not start")  # pragma: no cover


def mapped_files(pid: int) -> str:
    return Path(f"/proc/{pid}/maps").read_text()


def threads_of(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    [line] = [line for line in status if line.startswith("Threads:")]
    return int(line.split()[1])


async def test_the_game_servers_zygote_has_imported_jericho_and_runs_one_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "4")  # the user's value: not for a process that forks
    game = game_server_config(ZORK1_Z3, 12)
    with trio.fail_after(GUARD):
        async with open_zygote(("zorkmcp.game.server",)) as zygote:
            assert "_multiarray_umath" in mapped_files(zygote.pid)  # numpy, imported by Jericho
            assert threads_of(zygote.pid) == 1
            group = ZygoteGroup([zygote])
            async with open_server_session(game, SETTINGS, zygote=group) as session:
                pid = server_pid(session)
                assert parent_of(pid) == zygote.pid
                status = content_json((await session.client.call_tool("status", {})).content[0].text)
                assert (status["location"], status["score"], status["moves"]) == ("West of House", 0, 0)
                assert os.environ["OPENBLAS_NUM_THREADS"] == "4"  # ours is untouched


async def test_a_group_forks_each_server_from_the_zygote_that_preloaded_it() -> None:
    with trio.fail_after(GUARD):
        async with open_zygote() as think_zygote, open_test_zygote() as test_zygote:
            group = ZygoteGroup([think_zygote, test_zygote])
            game = game_server_config(ZORK1_Z3, 12)
            async with (
                open_server_session(thinking(), SETTINGS, zygote=group) as think,
                open_server_session(preloaded(), SETTINGS, zygote=group) as bad,
                open_server_session(game, SETTINGS, zygote=group) as spawned,
            ):
                assert parent_of(server_pid(think)) == think_zygote.pid  # the first zygote that has it
                assert parent_of(server_pid(bad)) == test_zygote.pid
                assert parent_of(server_pid(spawned)) == os.getpid()  # no zygote of the group has it
            with pytest.raises(ZygoteGone, match=r"no zygote preloaded 'zorkmcp.game.server'"):
                await group.spawn("zorkmcp.game.server", [], dict(os.environ), None)


async def test_a_server_with_other_python_variables_is_spawned_normally() -> None:
    server = thinking(env={"PYTHONPATH": str(TESTS)})  # the zygote started without it
    with trio.fail_after(GUARD):
        async with open_zygote() as zygote, open_server_session(server, SETTINGS, zygote=zygote) as session:
            assert parent_of(server_pid(session)) == os.getpid()
            assert session.process is not None
            assert session.process.zygote_pid is None


async def test_a_zygote_closed_by_cancellation_is_not_said_to_have_exited(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # Ctrl-C cancels the run while the zygote's messages are being read: it did not exit on its own.
    with trio.fail_after(GUARD), trio.CancelScope() as run:
        async with open_zygote() as zygote:
            run.cancel()
            await trio.sleep_forever()
    assert not is_alive(zygote.pid)
    assert [r.getMessage() for r in caplog.records if r.name == "zorkmcp.mcp"] == []


async def test_a_dead_zygote_falls_back_to_popen(caplog: pytest.LogCaptureFixture) -> None:
    with trio.fail_after(GUARD):
        async with open_zygote() as zygote:
            os.kill(zygote.pid, signal.SIGKILL)
            await wait_exited(zygote.pid)
            assert not zygote.alive
            with pytest.raises(ZygoteGone):
                await zygote.spawn("zorkmcp.servers.thinking", [], dict(os.environ), None)
            async with open_server_session(thinking(), SETTINGS, zygote=zygote) as session:
                pid = server_pid(session)
                assert parent_of(pid) == os.getpid()
                assert not (await session.client.call_tool("think", THINK)).is_error
        assert not is_alive(pid)
    assert [r.getMessage() for r in caplog.records if r.name == "zorkmcp.mcp"] == [
        f"zygote (pid {zygote.pid}) exited; servers are spawned with Popen from now on"
    ]


def default_manager(events: EventRecorder) -> McpManager:
    """The repository's own mcp_config.json: the embedded think server, per_turn."""
    config = McpConfig.from_file(REPO / "mcp_config.json")
    return McpManager(config, McpSettings(enabled=True), events=events)


async def think_in_turn(manager: McpManager, episode: EpisodeServers | None) -> tuple[int, int]:
    """One turn that calls think; the server's PID and its parent's."""
    async with manager.open_turn(episode) as toolbox:
        result = await toolbox.call_tool("thinking.think", THINK)
        assert not result.is_error, result.error_message
        session = toolbox.session("thinking")
        assert session is not None
        pid = server_pid(session)
        return pid, parent_of(pid)


@pytest.mark.parametrize("prewarm", [True, False])
async def test_an_episode_forks_its_think_servers_from_one_zygote(prewarm: bool) -> None:
    events = EventRecorder()
    manager = default_manager(events)
    with trio.fail_after(GUARD):
        async with manager.open_episode(prewarm=prewarm) as episode:
            assert episode.zygote is not None
            [zygote] = episode.zygote.zygotes
            turns = [await think_in_turn(manager, episode) for _ in range(4)]
    assert [parent for _, parent in turns] == [zygote.pid] * 4
    assert len({pid for pid, _ in turns}) == 4  # a fresh process every turn
    [started] = events.of_type("mcp_zygote_started")
    assert started["pid"] == zygote.pid
    assert started["modules"] == ["zorkmcp.servers.thinking"]
    servers = [e["pid"] for e in events.of_type("mcp_server_started")]
    assert {pid for pid, _ in turns} <= set(servers)
    assert not any(is_alive(pid) for pid in [*servers, zygote.pid])
    assert {e["exit_status"] for e in events.of_type("mcp_server_stopped")} == {0}


async def test_a_turn_without_an_episode_spawns_with_popen() -> None:
    manager = default_manager(EventRecorder())
    with trio.fail_after(GUARD):
        pid, parent = await think_in_turn(manager, None)
    assert parent == os.getpid()
    assert not is_alive(pid)


async def test_the_zygote_killed_mid_episode_does_not_fail_a_turn() -> None:
    events = EventRecorder()
    manager = default_manager(events)
    with trio.fail_after(GUARD):
        async with manager.open_episode() as episode:
            assert episode.zygote is not None
            [zygote] = episode.zygote.zygotes
            first = await think_in_turn(manager, episode)
            os.kill(zygote.pid, signal.SIGKILL)
            await wait_exited(zygote.pid)
            later = [await think_in_turn(manager, episode) for _ in range(3)]
    assert first[1] == zygote.pid
    # The spare forked before the kill still serves its turn (an orphan now); every later server
    # is spawned with Popen.
    assert [parent for _, parent in later[1:]] == [os.getpid()] * 2
    assert not manager.is_server_disabled("thinking")
    assert events.of_type("mcp_server_start_failed") == []
    servers = [e["pid"] for e in events.of_type("mcp_server_started")]
    assert not any(is_alive(pid) for pid in [*servers, zygote.pid])


async def test_a_request_too_large_for_the_socket_is_spawned_normally() -> None:
    big = {f"ZYGOTE_TEST_BIG_{n}": "x" * 60_000 for n in range(5)}  # 300 kB: more than the socket takes
    with trio.fail_after(GUARD):
        async with open_zygote() as zygote:
            async with open_server_session(thinking(env=big), SETTINGS, zygote=zygote) as session:
                assert parent_of(server_pid(session)) == os.getpid()
            assert zygote.alive  # still in service for the next one
            async with open_server_session(thinking(), SETTINGS, zygote=zygote) as session:
                assert parent_of(server_pid(session)) == zygote.pid


@pytest.mark.parametrize(
    "server",
    [
        thinking(env={"PYTHONPATH": str(TESTS)}),  # would run differently in a forked child
        thinking(lifecycle="per_episode"),  # one process per episode: nothing to save
        # interpreter options before -m: the zygote's interpreter was not started with them
        ServerConfig(
            name="thinking", command=sys.executable, args=("-X", "utf8", "-m", "zorkmcp.servers.thinking")
        ),
    ],
    ids=["python-variables", "per-episode", "interpreter-options"],
)
async def test_an_episode_without_an_eligible_server_has_no_zygote(server: ServerConfig) -> None:
    events = EventRecorder()
    manager = McpManager(McpConfig(servers=(server,)), McpSettings(enabled=True), events=events)
    with trio.fail_after(GUARD):
        async with manager.open_episode() as episode:
            assert episode.zygote is None
            pid, parent = await think_in_turn(manager, episode)
    assert parent == os.getpid()
    assert events.of_type("mcp_zygote_started") == []
    assert not is_alive(pid)


def test_the_zygote_server_needs_a_socket_and_modules() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "zorkmcp.servers._zygote", "zorkmcp.servers.thinking"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr == "usage: python -m zorkmcp.servers._zygote FD MODULE [MODULE...]\n"


def test_the_zygote_and_what_it_preloads_stay_on_the_standard_library() -> None:
    heavy = ("trio", "anyio", "attrs", "mcp", "httpx", "httpx2", "cattrs")
    assert modules_loaded_by("import zorkmcp.servers._zygote, zorkmcp.servers.thinking", heavy) == []


def marked_processes(mark: bytes) -> list[int]:
    """Live processes whose initial environment carries ``mark`` (a zygote's children show its own)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if mark in environ.split(b"\0") and is_alive(int(entry)):
            found.append(int(entry))
    return found


@pytest.mark.parametrize("turns", [0, 1])
async def test_a_cancelled_episode_leaves_no_zygote_and_no_child(
    turns: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    mark = f"ZORKMCP_ZYGOTE_TEST={os.getpid()}-{turns}"
    monkeypatch.setenv(*mark.split("=", 1))
    manager = default_manager(EventRecorder())
    with trio.fail_after(GUARD), trio.CancelScope() as scope:
        async with manager.open_episode() as episode:
            assert episode.zygote is not None
            [zygote] = episode.zygote.zygotes
            for _ in range(turns):
                await think_in_turn(manager, episode)
            async with manager.open_turn(episode) as toolbox:
                session = toolbox.session("thinking")
                assert session is not None
                # the mark finds the zygote and the children it forked
                assert {zygote.pid, server_pid(session)} <= set(marked_processes(mark.encode()))
                scope.cancel()  # while the next spare starts, inside a turn
                await trio.sleep_forever()
    assert scope.cancelled_caught
    assert marked_processes(mark.encode()) == []
