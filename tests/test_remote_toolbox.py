"""Remote servers inside a turn: progress events during a call, a changed tool list refreshed before
the next LLM request, a stalled call ended by its timeout with the server told.

Real parts: tests/servers/remote.py (the MCP SDK's server under uvicorn on 127.0.0.1, in a thread)
and the loopback LLM server. Real clock (httpx's timeouts are deadlines too); waits are bounded by
``fail_after`` only as hang guards.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import anyio
import pytest
from llm_server import LLMServer, content_reply, tool_call, tool_call_reply
from servers.helpers import RecordingSink
from servers.remote import SDK_HTTP_WARNINGS, RemoteTestServer, serve_remote

from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.engine import run_tool_loop
from zorkmcp.llm import open_llm_client
from zorkmcp.mcp import McpManager, open_toolbox

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = SDK_HTTP_WARNINGS

GUARD = 20
OPENING = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "state"}]


@pytest.fixture
def remote() -> Iterator[RemoteTestServer]:
    # Per test: change_tools adds a tool to the server for good.
    with serve_remote() as server:
        yield server


def _server(remote: RemoteTestServer, kind: str, **fields: object) -> ServerConfig:
    path = "/mcp" if kind == "http" else "/sse"
    return ServerConfig(name="web", type=kind, url=remote.url(path), lifecycle="per_episode", **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_progress_during_a_call_becomes_events(remote: RemoteTestServer, kind: str) -> None:
    sink = RecordingSink()
    with anyio.fail_after(GUARD):
        async with open_toolbox([_server(remote, kind)], McpSettings(), events=sink) as toolbox:
            result = await toolbox.call_tool("web.progress", {"steps": 2})
    assert result.content == "done"
    progress = [fields for event, fields in sink.events if event == "mcp_tool_progress"]
    assert progress == [
        {"server": "web", "tool": "progress", "progress": 1.0, "total": 2.0, "message": "step 1"},
        {"server": "web", "tool": "progress", "progress": 2.0, "total": 2.0, "message": "step 2"},
    ]


async def test_a_changed_tool_list_is_offered_at_the_next_request(
    remote: RemoteTestServer, llm_server: LLMServer
) -> None:
    llm_server.script(tool_call_reply(tool_call("web__change_tools")), content_reply("north"))
    sink = RecordingSink()
    with anyio.fail_after(GUARD):
        async with (
            open_toolbox([_server(remote, "http")], McpSettings(), events=sink) as toolbox,
            open_llm_client(base_url=llm_server.base_url, model="gpt-4o") as model,
        ):
            before = [info.wire_name for info in toolbox.tools]
            await run_tool_loop(model, OPENING, toolbox, events=sink)
    first, second = ([tool["function"]["name"] for tool in body["tools"]] for body in llm_server.bodies)
    assert before == ["web__echo", "web__stall", "web__progress", "web__change_tools"]
    assert first == before
    assert second == [*before, "web__extra"]
    assert ("mcp_tools_changed", {"server": "web"}) in sink.events


async def test_a_stalled_remote_call_times_out_and_the_server_hears_of_it(remote: RemoteTestServer) -> None:
    sink = RecordingSink()
    with anyio.fail_after(GUARD):
        async with open_toolbox(
            [_server(remote, "http", timeout=0.5)], McpSettings(), events=sink
        ) as toolbox:
            result = await toolbox.call_tool("web.stall", {})
            await anyio.to_thread.run_sync(remote.stall_cancelled.wait, GUARD)
    assert result.timed_out
    assert result.error_message == "Tool call timed out after 0.5s"


@pytest.mark.parametrize("answer", ["404", "400-typescript"])
async def test_an_expired_session_is_renewed_once_and_the_call_retried(
    remote: RemoteTestServer, answer: Literal["404", "400-typescript"]
) -> None:
    # 400-typescript: the TypeScript SDK's servers answer an unknown session id with 400 and
    # "Bad Request: No valid session ID provided" (server-everything after a restart).
    sink = RecordingSink()
    with anyio.fail_after(GUARD):
        async with open_toolbox([_server(remote, "http")], McpSettings(), events=sink) as toolbox:
            first = await toolbox.call_tool("web.echo", {"text": "one"})
            remote.expire_sessions(answer)
            second = await toolbox.call_tool("web.echo", {"text": "two"})
            third = await toolbox.call_tool("web.echo", {"text": "three"})
    assert [first.content, second.content, third.content] == ["one", "two", "three"]
    assert [fields for event, fields in sink.events if event == "mcp_session_renewed"] == [{"server": "web"}]
    assert ("INFO", "MCP server 'web': the session expired; a new one is open") in sink.lines


async def test_a_session_that_cannot_be_renewed_fails_the_call_and_the_server(
    remote: RemoteTestServer,
) -> None:
    sink = RecordingSink()
    url = remote.url("/mcp")
    with anyio.fail_after(GUARD):
        async with open_toolbox([_server(remote, "http")], McpSettings(), events=sink) as toolbox:
            first = await toolbox.call_tool("web.echo", {"text": "one"})
            remote.expire_sessions()
            remote.refuse_new_sessions()
            second = await toolbox.call_tool("web.echo", {"text": "two"})  # renewed once: 503
            third = await toolbox.call_tool("web.echo", {"text": "three"})  # no second renewal
    failed = (
        "Tool call failed: MCP server 'web' is not running; the server forgot the MCP session, and a "
        f"new one failed: the server failed (HTTP 503 Service Unavailable) at {url}"
    )
    assert first.content == "one"
    assert (second.is_error, second.error_message) == (True, failed)
    assert (third.is_error, third.error_message) == (True, failed)
    assert [event for event, _ in sink.events] == ["mcp_server_started", "mcp_server_stopped"]
    assert (
        "ERROR",
        f"MCP server 'web': the server failed (HTTP 503 Service Unavailable) at {url}",
    ) in sink.lines


async def test_another_400_is_not_a_lost_session_and_the_error_names_the_status(
    remote: RemoteTestServer,
) -> None:
    sink = RecordingSink()
    with anyio.fail_after(GUARD):
        async with open_toolbox([_server(remote, "http")], McpSettings(), events=sink) as toolbox:
            assert (await toolbox.call_tool("web.echo", {"text": "one"})).content == "one"
            remote.expire_sessions("400-other")
            second = await toolbox.call_tool("web.echo", {"text": "two"})
    assert (second.is_error, second.error_message) == (
        True,
        "Tool call failed: the server answered HTTP 400 Bad Request",
    )
    assert "mcp_session_renewed" not in [event for event, _ in sink.events]


async def test_a_failed_renewal_names_the_url_once(remote: RemoteTestServer) -> None:
    sink = RecordingSink()
    url = remote.url("/mcp")
    with anyio.fail_after(GUARD):
        async with open_toolbox([_server(remote, "http")], McpSettings(), events=sink) as toolbox:
            assert (await toolbox.call_tool("web.echo", {"text": "one"})).content == "one"
            remote.expire_sessions()
            remote.refuse_new_sessions(404)  # a reason that names the URL itself
            second = await toolbox.call_tool("web.echo", {"text": "two"})
    assert second.error_message == (
        "Tool call failed: MCP server 'web' is not running; the server forgot the MCP session, and a "
        f"new one failed: no MCP endpoint at {url} (HTTP 404): check the path (usually …/mcp, or …/sse "
        "for SSE)"
    )


async def test_a_failed_renewal_follows_the_start_up_rule_at_the_next_turn(remote: RemoteTestServer) -> None:
    manager = McpManager(
        McpConfig(servers=(_server(remote, "http"),)), McpSettings(), events=(sink := RecordingSink())
    )
    with anyio.fail_after(GUARD):
        async with manager.open_episode() as episode:
            async with manager.open_turn(episode) as toolbox:
                assert (await toolbox.call_tool("web.echo", {"text": "one"})).content == "one"
                remote.expire_sessions()
                remote.refuse_new_sessions()
                assert (await toolbox.call_tool("web.echo", {"text": "two"})).is_error
            async with manager.open_turn(episode) as toolbox:  # restarted, retried once, disabled
                assert toolbox.tools == ()
    assert manager.is_server_disabled("web")
    events = [event for event, _ in sink.events]
    assert events.count("mcp_server_stopped") == 1  # the dead session, closed in the background
    assert [event for event in events if event != "mcp_server_stopped"] == [
        "mcp_server_started",
        "mcp_turn_teardown",
        "mcp_server_restart",  # the next turn finds the session dead
        "mcp_server_start_failed",  # 503
        "mcp_server_start_failed",  # the one retry: 503 again
        "mcp_disabled_fallback",
        "mcp_turn_teardown",
    ]


async def test_the_programs_own_calls_follow_a_changed_tool_list(remote: RemoteTestServer) -> None:
    """The episode's own calls (``zork.play_action``, ``status``) use the tool list a turn listed again."""
    manager = McpManager(McpConfig(servers=(_server(remote, "http"),)), McpSettings(), events=RecordingSink())
    with anyio.fail_after(GUARD):
        async with manager.open_episode() as episode:
            before = await episode.call_tool("web.extra", {})
            changed = await episode.call_tool("web.change_tools", {})
            async with manager.open_turn(episode) as toolbox:
                assert await toolbox.refresh_if_changed()
            after = await episode.call_tool("web.extra", {})
    assert before.error_message == (
        "Unknown tool 'web.extra'. Available tools: web.echo, web.stall, web.progress, web.change_tools"
    )
    assert not changed.is_error
    assert (after.is_error, after.content) == (False, "extra!")
