"""The engine in any async host: the same turn under ``trio.run`` and under ``asyncio.run``.

The loopback chat-completions server runs in a thread of its own (its own trio loop), so the turn
under test owns its event loop, whichever it is. Servers are real: the embedded think server as a
stdio subprocess that starts a child, so that cancellation from the host can be checked by PID.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest
import trio
from backends import BACKENDS, run
from llm_server import content_reply, tool_call, tool_call_reply
from play_support import HANG_SERVER
from test_bridge import gone, llm_in_thread

import zorkmcp
from zorkmcp import McpConfig, McpManager, McpSettings, ServerConfig, TurnOptions, ZorkAgent, run_turn
from zorkmcp.llm import ScriptedModel, open_llm_client

if TYPE_CHECKING:
    from llm_server import LLMServer

THINK = {"thought": "North first.", "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": False}
ANSWER = {"type": "json_schema", "json_schema": {"name": "A", "schema": {"type": "object"}}}


def thinking_manager() -> McpManager:
    server = ServerConfig(name="thinking", command=sys.executable, args=("-m", "zorkmcp.servers.thinking"))
    return McpManager(McpConfig(servers=(server,)), McpSettings(enabled=True, tool_call_timeout_seconds=10))


async def one_turn(llm: LLMServer) -> dict[str, Any]:
    manager = thinking_manager()
    async with open_llm_client(base_url=llm.base_url, model="gpt-4o") as model:
        result = await run_turn(
            model,
            [{"role": "user", "content": "West of House."}],
            open_toolbox=lambda: manager.open_turn(),
            options=TurnOptions(final_response_format=ANSWER, turn=1),
        )
    return {
        "content": result.content,
        "iterations": result.iterations,
        "calls": [(c.name, c.outcome) for c in result.tool_calls],
        "preview": json.loads(result.tool_calls[0].result_preview or "{}")["thoughtNumber"],
        "usage": result.usage,
        "requests": result.llm_requests,
    }


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_same_turn_on_both_event_loops(backend: str) -> None:
    with llm_in_thread(tool_call_reply(tool_call("thinking__think", THINK)), content_reply("north")) as llm:
        outcome = run(backend, one_turn, llm)
    assert outcome == {
        "content": "north",
        "iterations": 2,
        "calls": [("thinking.think", "ok")],
        "preview": 1,
        "usage": {"prompt_tokens": 22, "completion_tokens": 14, "total_tokens": 36},  # 2 replies of 11 + 7
        "requests": 2,
    }


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_zork_agent_on_both_event_loops(backend: str) -> None:
    async def act() -> tuple[str, str | None]:
        agent = ZorkAgent(model=ScriptedModel(["open mailbox"]), settings=McpSettings())
        action = await agent.generate_action("West of House.")
        return action.action, action.new_objective

    assert run(backend, act) == ("open mailbox", None)


async def cancelled_mid_call(llm: LLMServer, fifo: Path, host: str) -> list[int]:
    """A turn whose tool call hangs, cancelled by the host once the call is in flight.

    Returns the PIDs of the server and of the child it forked, read from the server's FIFO line.
    """
    args = (str(HANG_SERVER), str(fifo), "--child")
    server = ServerConfig(name="thinking", command=sys.executable, args=args)
    manager = McpManager(
        McpConfig(servers=(server,)), McpSettings(enabled=True, tool_call_timeout_seconds=600)
    )
    reader = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # read-write: readable only once data arrives

    async def turn() -> None:
        async with open_llm_client(base_url=llm.base_url, model="gpt-4o") as model:
            await run_turn(
                model, [{"role": "user", "content": "go"}], open_toolbox=lambda: manager.open_turn()
            )

    try:
        if host == "asyncio task.cancel()":
            task = asyncio.ensure_future(turn())
            await anyio.wait_readable(reader)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        else:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(turn)
                await trio.lowlevel.wait_readable(reader)
                nursery.cancel_scope.cancel()
        line = os.read(reader, 4096).decode()
    finally:
        os.close(reader)
    return [int(pid) for pid in line.split()[1:]]


@pytest.mark.parametrize(
    ("backend", "host"), [("asyncio", "asyncio task.cancel()"), ("trio", "cancel scope")]
)
def test_a_turn_cancelled_by_the_host_leaves_no_process(backend: str, host: str, tmp_path: Path) -> None:
    fifo = tmp_path / "called.fifo"
    os.mkfifo(fifo)
    with llm_in_thread(tool_call_reply(tool_call("thinking__think", THINK))) as llm:
        pids = run(backend, cancelled_mid_call, llm, fifo, host)
    assert len(pids) == 2  # the server and its child
    for pid in pids:  # gone the moment the cancellation finished propagating: no waiting, no polling
        assert gone(pid), f"process {pid} outlived the cancelled turn"


def test_trio_is_imported_only_where_the_project_chooses_it() -> None:
    """The engine is written on anyio; ``import trio`` belongs to the places that start a loop, and to
    the command that runs its episodes in one: ``zorkmcp eval`` holds Ctrl-C back from the moment its
    trio loop ends (``trio.lowlevel.add_instrument``, which anyio has no word for)."""
    package = Path(zorkmcp.__file__).parent
    importing = sorted(
        str(path.relative_to(package))
        for path in package.rglob("*.py")
        if re.search(r"^\s*(import trio|from trio)", path.read_text(encoding="utf-8"), re.MULTILINE)
    )
    assert importing == ["_bridge.py", "_cli_eval.py"]
