"""The synchronous boundary (properties 39–40; Requirements 6.1, 10.1, 10.5).

``bridge.get_action()`` and ``bridge.Bridge`` are called from plain synchronous test functions, as the
orchestrator calls them, against real MCP servers (the stdlib ``misbehaving.py`` as a subprocess, a
lowlevel SDK server in-process) and the loopback chat-completions server running in a
background thread with its own ``trio.run`` (``get_action`` blocks, so the LLM cannot share its loop).
Processes are checked by PID the moment ``get_action()`` returns (or raises, or is interrupted), and
the moment a ``Bridge``'s ``with`` block is left: nothing may be left, with no waiting or polling.
"""

from __future__ import annotations

import asyncio
import json
import os
import queue
import select
import signal
import subprocess
import sys
import textwrap
import threading
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import mcp_types as types
import pytest
import trio
from hypothesis import given
from hypothesis import strategies as st
from llm_server import LLMServer, Step, agent_reply, serve_llm, tool_call, tool_call_reply
from mcp.server.lowlevel import Server
from play_support import default_sigint
from servers.helpers import MISBEHAVING, is_alive, pids_from_stderr

import bridge
from zorkmcp.config import Settings
from zorkmcp.errors import ConfigError, LLMTransportError, MCPServerStartupError, RunWriteError
from zorkmcp.llm import ScriptedModel
from zorkmcp.observability import LogFiles

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process checks read /proc")

GUARD = 60.0
"""Seconds before a blocking wait in a test gives up (a hang guard, never an assertion on time)."""
REPO = Path(__file__).resolve().parents[1]
PF_EXITING = 0x4
"""The kernel's per-task flag (``/proc/<pid>/stat`` field 9) for a task that is already in ``do_exit``."""


def gone(pid: int) -> bool:
    """Whether ``pid`` can run no more code: absent, a zombie, or already inside the kernel's exit path.

    The last case is a process that was SIGKILLed (a server's child, through its process group) and
    has released its memory but not yet become a zombie; it is never a process left behind.
    """
    if not is_alive(pid):
        return True
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return True
    return bool(int(fields[6]) & PF_EXITING)


def refusal(what: str, loop: str) -> str:
    """The pinned message of a blocking call made while ``loop`` runs in this thread."""
    return (
        rf"^{what} blocks and starts its own trio loop, but it was called while {loop} is running in "
        r"this thread\. Call it from a worker thread \(asyncio\.to_thread, trio\.to_thread\.run_sync\): "
        r"bridge\.Bridge runs one trio loop in a background thread for a whole episode, so enter it and "
        r"call its get_action there"
    )


# --- the loopback LLM server in a thread of its own ---------------------------------------------


@contextmanager
def llm_in_thread(*steps: Step, default: Step | None = None) -> Iterator[LLMServer]:
    """Run :func:`serve_llm` in a background thread (its own ``trio.run``) for the block.

    The thread hands back the server, its loop's token and a stop event; leaving the block sets the
    event through the token and joins the thread, so nothing outlives the test.
    """
    handover: queue.Queue[tuple[LLMServer, trio.lowlevel.TrioToken, trio.Event] | BaseException]
    handover = queue.Queue()
    failures: list[BaseException] = []

    async def serve() -> None:
        stop = trio.Event()
        async with serve_llm(*steps, default=default) as server:
            handover.put((server, trio.lowlevel.current_trio_token(), stop))
            await stop.wait()

    def run() -> None:
        try:
            trio.run(serve)
        except BaseException as exc:  # reported in the test's thread
            failures.append(exc)
            handover.put(exc)

    thread = threading.Thread(target=run, name="llm-server")
    thread.start()
    item = handover.get(timeout=GUARD)
    if isinstance(item, BaseException):
        thread.join(GUARD)
        raise item
    server, token, stop = item
    try:
        yield server
    finally:
        token.run_sync_soon(stop.set)
        thread.join(GUARD)
        assert not thread.is_alive(), "the LLM server thread did not stop"
    if failures:
        raise failures[0]


@pytest.fixture(autouse=True)
def _fresh_episode() -> Iterator[None]:
    """``get_action()`` keeps the episode's plain state per pyproject: every test starts a new one."""
    bridge.reset()
    yield
    bridge.reset()


# --- configuration files ------------------------------------------------------------------------


def write_config(
    folder: Path, base_url: str, servers: dict[str, dict[str, Any]], *, tool_timeout: float = 30
) -> Path:
    """A real ``pyproject.toml`` plus ``mcp_config.json`` in ``folder``; returns the pyproject's path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "mcp_config.json").write_text(json.dumps({"mcpServers": servers}))
    pyproject = folder / "pyproject.toml"
    pyproject.write_text(
        textwrap.dedent(f"""\
            [tool.zorkgpt.llm]
            client_base_url = "{base_url}"
            agent_model = "gpt-4o"

            [tool.zorkgpt.retry]
            max_retries = 0

            [tool.zorkgpt.mcp]
            enabled = true
            tool_call_timeout_seconds = {tool_timeout}

            [tool.zorkgpt.files]
            json_log_file = "{folder / "logs" / "events.jsonl"}"
            episode_log_file = "{folder / "logs" / "episode.log"}"
            """)
    )
    return pyproject


def misbehaving_server(mode: str = "ok", **options: Any) -> dict[str, Any]:
    """An ``mcp_config.json`` entry for the stdlib test server (``-S``: starts in a few ms)."""
    return {"command": sys.executable, "args": ["-S", str(MISBEHAVING), mode], **options}


def tool_results(server: LLMServer, *, since: int = 0) -> list[Any]:
    """The ``role: "tool"`` messages that went over the wire, each once, parsed, in order."""
    seen: dict[str, Any] = {}
    for request in server.requests[since:]:
        for message in request.messages:
            if message.get("role") == "tool" and message["tool_call_id"] not in seen:
                seen[message["tool_call_id"]] = json.loads(message["content"])
    return list(seen.values())


def pid_result(result: Any) -> dict[str, int]:
    """The ``{"pid", "calls"}`` content of the misbehaving server's ``pid`` tool."""
    content = result["content"]
    data = json.loads(content) if isinstance(content, str) else content
    assert set(data) == {"pid", "calls"}, result
    return {"pid": int(data["pid"]), "calls": int(data["calls"])}


def pid_turn(action: str) -> list[Step]:
    """One turn's LLM script: call ``bad.pid`` and ``bad.children``, then answer the agent JSON."""
    return [
        tool_call_reply(tool_call("bad__pid"), tool_call("bad__children")),
        agent_reply(action, thinking=f"thinking about {action}", new_objective=f"after {action}"),
    ]


# --- 1. get_action() from plain synchronous code ------------------------------------------------


@pytest.mark.parametrize("lifecycle", ["per_turn", "per_episode"])
def test_get_action_from_sync_code_leaves_no_process(tmp_path: Path, lifecycle: str) -> None:
    """Each call starts its own server (per_episode too: without a Bridge nothing survives a call)."""
    with llm_in_thread(*pid_turn("open mailbox"), *pid_turn("go north")) as llm:
        pyproject = write_config(
            tmp_path, llm.base_url, {"bad": misbehaving_server("child", lifecycle=lifecycle)}
        )
        first = bridge.get_action("West of House. There is a small mailbox here.", pyproject=pyproject)
        first_results = tool_results(llm)
        # The server and the child it forked are gone the moment get_action returns.
        first_pid = pid_result(first_results[0])
        first_children = first_results[1]["content"]["children"]
        assert len(first_children) == 1
        for pid in (first_pid["pid"], *first_children):
            assert gone(pid), f"process {pid} outlived get_action()"

        second = bridge.get_action("North of House.", "You opened the mailbox.", pyproject=pyproject)
        second_results = tool_results(llm)[2:]

    assert first == {
        "action": "open mailbox",
        "reasoning": "thinking about open mailbox",
        "new_objective": "after open mailbox",
    }
    assert second == {
        "action": "go north",
        "reasoning": "thinking about go north",
        "new_objective": "after go north",
    }
    # get_action() appended each turn's events and episode-log lines to [tool.zorkgpt.files].
    events = [json.loads(line) for line in (tmp_path / "logs" / "events.jsonl").read_text().splitlines()]
    calls = [e for e in events if e["event_type"] == "mcp_tool_call"]
    assert [(e["turn"], e["tool_name"]) for e in calls] == [
        (1, "bad.pid"), (1, "bad.children"), (2, "bad.pid"), (2, "bad.children"),
    ]  # fmt: skip
    episode_log = (tmp_path / "logs" / "episode.log").read_text()
    assert "[INFO] Turn 2 Iteration 1: Agent calling tool bad.children" in episode_log
    assert "[INFO] Turn 2: Agent action: go north" in episode_log

    second_pid = pid_result(second_results[0])
    second_children = second_results[1]["content"]["children"]
    assert second_pid["pid"] != first_pid["pid"]
    assert first_pid["calls"] == second_pid["calls"] == 1  # a fresh process per call
    for pid in (second_pid["pid"], *second_children):
        assert gone(pid)

    # What went over the wire: the tools on the first request of each turn, the results on the next.
    assert len(llm.requests) == 4
    first_request, with_results = llm.requests[0].json, llm.requests[1].json
    assert {tool["function"]["name"] for tool in first_request["tools"]} >= {"bad__pid", "bad__children"}
    assert first_request["model"] == "gpt-4o"
    assert with_results["messages"][1]["content"] == "West of House. There is a small mailbox here."
    assert [m["role"] for m in with_results["messages"]] == ["system", "user", "assistant", "tool", "tool"]
    assert llm.requests[3].json["messages"][1]["content"] == "North of House.\n\nYou opened the mailbox."
    # Keep-alive does not survive get_action(): each call opens (and closes) its own HTTP client,
    # so the two requests of one turn share a connection and the next turn opens a new one.
    assert [r.connection for r in llm.requests] == [1, 1, 2, 2]


# --- 2. properties 39–40: one trio.run per call, no nested loops ---------------------------------


@attrs.define
class RunLog:
    """What :func:`counting_trio_run` saw.

    Attributes:
        here: ``"enter"`` / ``"exit"`` for every ``trio.run`` made by the test's thread.
        elsewhere: the names of the other threads that called ``trio.run`` (a Bridge's portal).
    """

    here: list[str] = attrs.Factory(list)
    elsewhere: list[str] = attrs.Factory(list)


def no_loop_running() -> bool:
    """Whether neither a trio nor an asyncio loop is running in this thread."""
    try:
        trio.lowlevel.current_trio_token()
    except RuntimeError:
        pass
    else:
        return False
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return True
    return False


@contextmanager
def counting_trio_run() -> Iterator[RunLog]:
    """Count the ``trio.run`` calls, and check the test's thread never nests one in a running loop
    (checked at every entry) and has none left running after every return (property 40)."""
    log = RunLog()
    me = threading.get_ident()
    real_run: Callable[..., Any] = trio.run

    def run(*args: Any, **kwargs: Any) -> Any:
        if threading.get_ident() != me:
            log.elsewhere.append(threading.current_thread().name)
            return real_run(*args, **kwargs)
        assert no_loop_running(), "trio.run called inside a running event loop (property 40)"
        log.here.append("enter")
        try:
            return real_run(*args, **kwargs)
        finally:
            log.here.append("exit")
            assert no_loop_running(), "a loop is still running after trio.run returned (property 40)"

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(trio, "run", run)
        yield log


def test_exactly_one_trio_run_per_get_action(tmp_path: Path) -> None:
    with llm_in_thread(*pid_turn("open mailbox"), *pid_turn("take leaflet")) as llm:
        pyproject = write_config(tmp_path, llm.base_url, {"bad": misbehaving_server()})
        with counting_trio_run() as log:
            first = bridge.get_action("West of House.", pyproject=pyproject)
            assert log.here == ["enter", "exit"]  # property 39: once per call, and it has returned
            second = bridge.get_action("West of House.", pyproject=pyproject)
            assert log.here == ["enter", "exit"] * 2
        assert log.elsewhere == []
    assert [first["action"], second["action"]] == ["open mailbox", "take leaflet"]
    assert len(tool_results(llm)) == 4  # the tools really ran inside those two loops


INSTANCES: list[int] = []
"""One entry per :func:`counting_server` created (a fresh one per session)."""


def counting_server() -> Server[Any]:
    """A light in-process SDK server (the lowlevel API builds in microseconds, ``MCPServer`` in ~25 ms).

    Its one tool, ``count``, answers ``{"instance": k, "count": n}``: which server object this is and
    how many calls it has had.
    """
    INSTANCES.append(len(INSTANCES) + 1)
    instance, calls = INSTANCES[-1], 0

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="count", input_schema={"type": "object"})])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        nonlocal calls
        calls += 1
        text = json.dumps({"instance": instance, "count": calls})
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

    return Server("counting", on_list_tools=list_tools, on_call_tool=call_tool)


@pytest.fixture(scope="module")
def inprocess_llm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LLMServer, Path]]:
    """One LLM server thread and an in-process server config for every Hypothesis example."""
    servers = {"counting": {"type": "inprocess", "module": f"{__name__}:counting_server"}}
    with llm_in_thread() as llm:
        yield llm, write_config(tmp_path_factory.mktemp("inprocess"), llm.base_url, servers)


@given(turns=st.lists(st.lists(st.integers(1, 3), max_size=2), min_size=1, max_size=2))
def test_property_39_40_one_loop_per_call_for_any_turn_shape(
    inprocess_llm: tuple[LLMServer, Path], turns: list[list[int]]
) -> None:
    """Property 39: ``trio.run`` exactly once per ``get_action``; property 40: never nested, and no
    loop is left running once control is back in sync code — whatever the turn does with tools.

    ``turns[i]`` is turn ``i``'s batches of tool calls: the number of ``count`` calls in each.
    """
    llm, pyproject = inprocess_llm
    bridge.reset()
    INSTANCES.clear()
    llm.script()  # nothing left over from a failed example
    for index, batches in enumerate(turns):
        for size in batches:
            llm.push(tool_call_reply(*(tool_call("counting__count") for _ in range(size))))
        llm.push(agent_reply(f"action {index}"))
    before = len(llm.requests)
    with counting_trio_run() as log:
        actions = [bridge.get_action(f"state {i}", pyproject=pyproject)["action"] for i in range(len(turns))]
    assert actions == [f"action {i}" for i in range(len(turns))]
    assert log.here == ["enter", "exit"] * len(turns)
    assert log.elsewhere == []
    assert llm.remaining == 0
    assert len(llm.requests) - before == sum(len(batches) + 1 for batches in turns)
    # Every call ran its tools inside its own loop, on a server of its own (counts restart at 1).
    results = [result["content"] for result in tool_results(llm, since=before)]
    assert results == [
        {"instance": index + 1, "count": count}
        for index, batches in enumerate(turns)
        for count in range(1, sum(batches) + 1)
    ]
    assert INSTANCES == list(range(1, len(turns) + 1))


# --- 3. called inside a running loop --------------------------------------------------------------


async def test_get_action_inside_trio_run_names_bridge(tmp_path: Path) -> None:
    """pytest-trio runs this test inside ``trio.run``: the call must refuse, before any I/O."""
    missing = tmp_path / "nowhere" / "pyproject.toml"
    with pytest.raises(RuntimeError, match=refusal(r"bridge\.get_action\(\)", "a trio event loop")):
        bridge.get_action("West of House.", pyproject=missing)
    with pytest.raises(RuntimeError, match=refusal(r"bridge\.Bridge", "a trio event loop")):
        with bridge.Bridge(Settings()):
            pytest.fail("entered a Bridge inside trio.run")  # pragma: no cover


def test_get_action_inside_asyncio_run_names_bridge(tmp_path: Path) -> None:
    async def main() -> None:
        bridge.get_action("West of House.", pyproject=tmp_path / "pyproject.toml")

    async def enter() -> None:
        with bridge.Bridge(Settings()):
            pytest.fail("entered a Bridge inside asyncio.run")  # pragma: no cover

    with pytest.raises(RuntimeError, match=refusal(r"bridge\.get_action\(\)", "an asyncio event loop")):
        asyncio.run(main())
    with pytest.raises(RuntimeError, match=refusal(r"bridge\.Bridge", "an asyncio event loop")):
        asyncio.run(enter())


async def test_the_way_out_bridge_from_a_worker_thread(tmp_path: Path) -> None:
    """What the error message advises: async code runs a Bridge from a worker thread."""
    with llm_in_thread(*pid_turn("open mailbox")) as llm:
        pyproject = write_config(tmp_path, llm.base_url, {"bad": misbehaving_server()})

        def episode() -> dict[str, str | None]:
            with bridge.Bridge(pyproject=pyproject) as episode_bridge:
                return episode_bridge.get_action("West of House.")

        with trio.fail_after(GUARD):
            result = await trio.to_thread.run_sync(episode)
    assert result["action"] == "open mailbox"
    assert gone(pid_result(tool_results(llm)[0])["pid"])


# --- 4. Bridge keeps per_episode servers and the HTTP connection ---------------------------------


def test_bridge_keeps_per_episode_server_and_connection(tmp_path: Path) -> None:
    with llm_in_thread(*pid_turn("open mailbox"), *pid_turn("read leaflet")) as llm:
        pyproject = write_config(
            tmp_path, llm.base_url, {"bad": misbehaving_server("child", lifecycle="per_episode")}
        )
        with counting_trio_run() as log, bridge.Bridge(pyproject=pyproject) as episode:
            first = episode.get_action("West of House.")
            second = episode.get_action("West of House.", "You opened the mailbox.")
            direct = episode.call_tool("bad.pid")
            results = tool_results(llm)
            pid = pid_result(results[0])["pid"]
            children = results[1]["content"]["children"]
            assert is_alive(pid)  # still running between turns
        # One loop for the whole episode, in the portal's thread; none in the caller's (property 40).
        assert log.here == []
        assert log.elsewhere == ["zorkmcp-bridge"]
        assert no_loop_running()
        # Leaving the block ends the server and its child, with no waiting afterwards.
        for process in (pid, *children):
            assert gone(process)
    assert [first["action"], second["action"]] == ["open mailbox", "read leaflet"]
    assert [pid_result(results[0]), pid_result(results[2])] == [
        {"pid": pid, "calls": 1},
        {"pid": pid, "calls": 3},  # the second turn's `children` call was the server's call 2
    ]
    assert results[3]["content"]["children"] == children
    # Bridge.call_tool from the sync side reaches the same process (its 5th tools/call).
    assert not direct.is_error
    assert direct.content == {"pid": pid, "calls": 5}
    # HTTP keep-alive: one client for the episode, both turns on the same connection.
    assert [r.connection for r in llm.requests] == [1, 1, 1, 1]


def test_bridge_pid_counter_one_then_two(tmp_path: Path) -> None:
    """The brief's exact shape: each turn calls only ``pid``; the counter goes 1, 2 in one process."""

    def one_pid() -> list[Step]:
        return [tool_call_reply(tool_call("bad__pid")), agent_reply("wait")]

    with llm_in_thread(*one_pid(), *one_pid()) as llm:
        pyproject = write_config(tmp_path, llm.base_url, {"bad": misbehaving_server(lifecycle="per_episode")})
        with bridge.Bridge(pyproject=pyproject) as episode:
            episode.get_action("West of House.")
            episode.get_action("West of House.")
        seen = [pid_result(result) for result in tool_results(llm)]
    assert [s["calls"] for s in seen] == [1, 2]
    assert seen[0]["pid"] == seen[1]["pid"]
    assert gone(seen[0]["pid"])


# --- 5. Ctrl-C ------------------------------------------------------------------------------------

ANNOUNCING_SERVER = """\
import json, os, sys
sys.path.insert(0, {servers!r})
import misbehaving


def announce(path):
    with open(path, "a") as f:  # a FIFO or a plain file
        f.write(json.dumps({{"pid": os.getpid(), "children": SERVER.children}}) + "\\n")


class Announcing(misbehaving.Server):
    def serve(self):
        global SERVER
        SERVER = self
        if {starts!r}:
            announce({starts!r})
        super().serve()

    def call(self, request_id, name, arguments):
        if name == "hang":  # tell the test the call has reached the server, then hang
            announce({fifo!r})
        super().call(request_id, name, arguments)


misbehaving.Server = Announcing
misbehaving.main()
"""


def announcing_server(folder: Path, *, fifo: Path | None = None, starts: Path | None = None) -> Path:
    """A ``misbehaving.py`` that writes ``{"pid", "children"}`` lines: to ``starts`` when it is ready
    to serve, to ``fifo`` when a ``hang`` call reaches it."""
    script = folder / "announcing.py"
    script.write_text(
        ANNOUNCING_SERVER.format(
            servers=str(MISBEHAVING.parent), fifo=str(fifo or ""), starts=str(starts or "")
        )
    )
    return script


PLAYER = """\
import sys
from pathlib import Path

import bridge

pyproject = Path(sys.argv[1])
if sys.argv[2] == "get_action":
    bridge.get_action("West of House.", pyproject=pyproject)
else:
    with bridge.Bridge(pyproject=pyproject) as episode:
        episode.get_action("West of House.")
print("the turn ended without an interrupt")
"""


def wait_for_line(fd: int, process: subprocess.Popen[str]) -> str:
    """Read one line from the FIFO ``fd``; fail at once if ``process`` exits first (pidfd, no polling)."""
    pidfd = os.pidfd_open(process.pid)
    data = b""
    try:
        while not data.endswith(b"\n"):
            readable, _, _ = select.select([fd, pidfd], [], [], GUARD)
            if fd in readable:
                chunk = os.read(fd, 4096)
                if chunk:
                    data += chunk
                    continue
            if pidfd in readable or not readable:
                process.kill()
                out, err = process.communicate(timeout=GUARD)
                pytest.fail(f"the tool call never reached the server; player said:\n{out}\n{err}")
    finally:
        os.close(pidfd)
    return data.decode()


@pytest.mark.parametrize(("entry", "lifecycle"), [("get_action", "per_turn"), ("Bridge", "per_episode")])
def test_ctrl_c_during_a_turn_leaves_no_process(tmp_path: Path, entry: str, lifecycle: str) -> None:
    fifo = tmp_path / "hang-started"
    os.mkfifo(fifo)
    server_script = announcing_server(tmp_path, fifo=fifo)
    player = tmp_path / "player.py"
    player.write_text(PLAYER)
    # The read end is open before anyone writes: the server's open() never blocks.
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with llm_in_thread(tool_call_reply(tool_call("bad__hang"))) as llm:
            server = {
                "command": sys.executable,
                "args": ["-S", str(server_script), "child"],
                "lifecycle": lifecycle,
                "timeout": 600,
            }
            pyproject = write_config(tmp_path, llm.base_url, {"bad": server}, tool_timeout=600)
            env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
            with subprocess.Popen(
                [sys.executable, str(player), str(pyproject), entry],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
                preexec_fn=default_sigint,  # a CI runner may start the suite with SIGINT ignored
            ) as process:
                started = json.loads(wait_for_line(fd, process))
                assert is_alive(started["pid"])
                process.send_signal(signal.SIGINT)
                try:
                    out, err = process.communicate(timeout=GUARD)
                except subprocess.TimeoutExpired:  # pragma: no cover - the failure being tested for
                    process.kill()
                    out, err = process.communicate()
                    pytest.fail(f"the player did not stop after SIGINT:\n{out}\n{err}")
    finally:
        os.close(fd)
    # A bare KeyboardInterrupt reached the top: Python exits "killed by SIGINT" after the traceback.
    assert err.rstrip().splitlines()[-1] == "KeyboardInterrupt", err
    assert "Traceback (most recent call last)" in err
    assert process.returncode == -signal.SIGINT, err
    assert out == ""
    # The server and its child (which ignores SIGTERM and stdin EOF) were ended by the cleanup.
    assert len(started["children"]) == 1
    for pid in (started["pid"], *started["children"]):
        assert gone(pid), f"process {pid} outlived the interrupted turn"
    assert len(llm.requests) == 1  # the turn ended in the tool call: no further LLM request


# --- 6. first-turn startup failure --------------------------------------------------------------


def announced(starts: Path) -> list[int]:
    """Every PID (servers and their children) the announcing servers wrote to ``starts``."""
    lines = starts.read_text().splitlines() if starts.exists() else []
    return [
        pid
        for line in lines
        for started in [json.loads(line)]
        for pid in (started["pid"], *started["children"])
    ]


@pytest.mark.parametrize("entry", ["get_action", "Bridge"])
def test_first_turn_startup_failure_raises_and_leaves_nothing(tmp_path: Path, entry: str) -> None:
    """Requirement 6.1: turn 1 fails with the plain startup error, and the healthy per_turn server
    started (or being started) next to the broken one is gone too, with its child."""
    starts = tmp_path / "starts.jsonl"
    healthy = {
        "command": sys.executable,
        "args": ["-S", str(announcing_server(tmp_path, starts=starts)), "child"],
    }
    broken = misbehaving_server("crash-start")
    with llm_in_thread() as llm:
        pyproject = write_config(tmp_path, llm.base_url, {"good": healthy, "bad": broken})
        expected = pytest.raises(MCPServerStartupError, match=r"^Failed to start MCP server 'bad': ")
        if entry == "get_action":
            with expected as caught:
                bridge.get_action("West of House.", pyproject=pyproject)
        else:
            with bridge.Bridge(pyproject=pyproject) as episode, expected as caught:
                episode.get_action("West of House.")
        assert llm.requests == []  # the toolbox opens before the first LLM call
    assert caught.value.server == "bad"
    assert caught.value.exit_status == 3
    pids = pids_from_stderr(caught.value.stderr_tail) + announced(starts)
    assert pids
    for pid in pids:
        assert gone(pid), f"process {pid} outlived the failed turn"


# --- 5. what a program embedding the engine gets wrong --------------------------------------------


def test_a_settings_file_named_but_missing_is_an_error_not_the_defaults(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere" / "pyproject.toml"
    message = f"pyproject='{missing}': no such file (leave pyproject out for ./pyproject.toml)"
    with pytest.raises(ConfigError) as raised:
        bridge.get_action("West of House.", pyproject=missing)
    assert str(raised.value) == message
    with pytest.raises(ConfigError) as raised:
        bridge.Bridge(pyproject=str(missing))
    assert str(raised.value) == message
    with pytest.raises(ConfigError, match=r"': is a folder, not a settings file"):
        bridge.Bridge(pyproject=tmp_path)


def test_a_settings_file_may_be_named_by_a_str(tmp_path: Path) -> None:
    with llm_in_thread(agent_reply("open mailbox")) as llm:
        pyproject = write_config(tmp_path, llm.base_url, {"bad": misbehaving_server()})
        with bridge.Bridge(pyproject=str(pyproject), log_files=None) as episode:
            step = episode.get_action("West of House.")
    assert step == {
        "action": "open mailbox",
        "reasoning": "scripted thinking",
        "new_objective": None,
    }
    assert [body["model"] for body in llm.bodies] == ["gpt-4o"]  # the file's model, not the defaults


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: bridge.get_action(None), "game_state_text must be a str, got NoneType"),  # type: ignore[arg-type]
        (lambda: bridge.get_action("x", 3), "relevant_memories must be a str or None, got int"),  # type: ignore[arg-type]
        (
            lambda: bridge.get_action("x", pyproject=3),  # type: ignore[arg-type]
            "pyproject must be a path (str or pathlib.Path), got int",
        ),
        (
            lambda: bridge.Bridge("pyproject.toml"),  # type: ignore[arg-type]
            "settings must be a zorkmcp.config.Settings, got str (pass a settings file as pyproject=...)",
        ),
    ],
)
def test_arguments_of_the_wrong_kind_are_refused_before_anything_runs(
    call: Callable[[], object], message: str
) -> None:
    with pytest.raises(TypeError) as raised:
        call()
    assert str(raised.value) == message


def test_a_bridge_refuses_a_second_enter_and_a_turn_before_the_first(tmp_path: Path) -> None:
    episode = bridge.Bridge(Settings(), log_files=None)
    with pytest.raises(RuntimeError, match=r"^Bridge is not open: use it as `with Bridge\(\) as bridge:`$"):
        episode.get_action("West of House.")
    assert episode.setup.turn == 0  # the refused call was no turn
    with episode:
        with pytest.raises(RuntimeError, match=r"^this Bridge is already open: enter it once"):
            with episode:
                pytest.fail("entered an open Bridge again")  # pragma: no cover
        assert episode.get_action("West of House.")["action"] == "open mailbox"
    assert episode.setup.turn == 1


class _HeldModel:
    """A chat model (the documented protocol) whose answer to a request holding ``hold`` waits for
    ``release``: the offline scripted model's answers otherwise."""

    model = "held"
    scripted = True

    def __init__(self) -> None:
        self.inner = ScriptedModel(["first", "second"])
        self.entered, self.release = threading.Event(), threading.Event()
        self.seen: list[str] = []

    async def complete(self, request: Any) -> Any:
        text = request.messages[-1]["content"]
        self.seen.append(text)
        if "hold" in text:
            self.entered.set()
            await trio.to_thread.run_sync(self.release.wait, GUARD)
        return await self.inner.complete(request)


class _WatchedLock:
    """A lock that says when a thread waits for it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.waiting = threading.Event()

    def __enter__(self) -> None:
        if not self._lock.acquire(blocking=False):
            self.waiting.set()
            self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


def test_turns_asked_for_from_two_threads_run_one_after_the_other() -> None:
    """A second thread's turn waits for the first: each turn's events carry its own number."""
    held = _HeldModel()

    @asynccontextmanager
    async def chat_model() -> Any:
        yield held

    episode = bridge.Bridge(Settings(), chat_model=chat_model, log_files=None)
    lock = _WatchedLock()
    episode.setup.lock = lock  # type: ignore[assignment]
    results: dict[str, Any] = {}
    with episode:
        first = threading.Thread(target=lambda: results.update(a=episode.get_action("hold this")))
        first.start()
        assert held.entered.wait(GUARD)
        second = threading.Thread(target=lambda: results.update(b=episode.get_action("then this")))
        second.start()
        assert lock.waiting.wait(GUARD)  # the second turn waits for the first ...
        assert episode.setup.turn == 1  # ... before it is counted
        held.release.set()
        first.join(GUARD)
        second.join(GUARD)
        events, _ = episode.recorder.drain()
    assert [results["a"]["action"], results["b"]["action"]] == ["first", "second"]
    turns = [(e["event_type"], e.get("turn")) for e in events if e["event_type"] == "mcp_session_complete"]
    assert turns == [("mcp_session_complete", 1), ("mcp_session_complete", 2)]


def test_call_tool_of_a_per_turn_server_says_which_servers_it_reaches(tmp_path: Path) -> None:
    with llm_in_thread() as llm:
        pyproject = write_config(tmp_path, llm.base_url, {"bad": misbehaving_server()})
        with bridge.Bridge(pyproject=pyproject, log_files=None) as episode:
            result = episode.call_tool("bad.pid")
    assert (result.is_error, result.error_message) == (
        True,
        "Tool 'bad.pid' belongs to MCP server 'bad', which is per_turn: its tools are offered to the "
        "agent in each turn; Bridge.call_tool reaches the per_episode servers only",
    )


def test_the_offline_scripted_model_is_said_where_a_program_sees_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with caplog.at_level("WARNING", logger="zorkmcp.bridge"):
        bridge.Bridge(Settings(), log_files=None)
        bridge.Bridge(Settings(), log_files=None, walkthrough=["north"])  # asked for: not said
    assert [(r.name, r.levelname) for r in caplog.records] == [("zorkmcp.bridge", "WARNING")]
    assert (
        caplog.records[0]
        .getMessage()
        .startswith(
            "No API key for https://openrouter.ai/api/v1 (set OPENROUTER_API_KEY, name another variable"
        )
    )


class _FailingModel:
    """A chat model whose endpoint is gone (the documented protocol)."""

    model = "gone"
    scripted = False

    async def complete(self, request: Any) -> Any:
        del request
        raise LLMTransportError("POST http://127.0.0.1:9/v1/chat/completions failed: ConnectError")


def test_a_full_disk_does_not_hide_why_the_turn_failed(tmp_path: Path) -> None:
    """The log cannot take the turn's lines: the turn's own error still comes out, then the disk's."""
    full = tmp_path / "events.jsonl"
    full.symlink_to("/dev/full")

    @asynccontextmanager
    async def chat_model() -> Any:
        yield _FailingModel()

    episode = bridge.Bridge(
        Settings(), chat_model=chat_model, log_files=LogFiles(json_log=full, episode_log=None)
    )
    episode.recorder.emit("before_the_turn", note="a line for the log")
    with pytest.raises(LLMTransportError, match="ConnectError"), episode:
        episode.get_action("West of House.")
    with pytest.raises(RunWriteError, match=r"events\.jsonl: cannot be written \(No space left on device\)"):
        episode.setup.flush()  # the lines the log could not take are still there
