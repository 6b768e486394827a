"""Remote MCP servers over Streamable HTTP and SSE: the transport, its failures, server notifications.

The server is real (tests/servers/remote.py: the MCP SDK's server under uvicorn, in a thread with its
own asyncio loop, on 127.0.0.1). These tests run on the real clock: httpx's own timeouts are deadlines
too, and an autojumping mock clock would fire them while the loop waits for the server thread. So
every wait ends on an event (a notification, the server's "cancelled" flag), bounded by
``fail_after`` only as a guard against hangs.
"""

from __future__ import annotations

import json
import logging
import re
import socket
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types
import pytest
from backends import BACKENDS, run
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.client._memory import InMemoryTransport
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError as SdkMCPError
from servers.helpers import RecordingSink
from servers.remote import SDK_HTTP_WARNINGS, TOKEN, RemoteTestServer, build_mcp, serve_remote
from tls_server import serve_tls

from zorkmcp.errors import MCPServerStartupError
from zorkmcp.mcp._notifications import ServerNotifications
from zorkmcp.mcp._remote import (
    RemoteKind,
    RemoteStatus,
    open_remote_pool,
    open_remote_transport,
    remote_kind,
    remote_startup_error,
    safe_url,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterator, Mapping

pytestmark = SDK_HTTP_WARNINGS

GUARD = 20  # seconds: a hang guard only, never the thing a test measures
ENDPOINT = {"http": "/mcp", "sse": "/sse"}
TOOLS = ["echo", "stall", "progress", "change_tools"]


@pytest.fixture(scope="module")
def remote() -> Iterator[RemoteTestServer]:
    with serve_remote() as server:
        yield server


class Sink(RecordingSink):
    """Records everything and lets a test wait for an event type."""

    def __init__(self) -> None:
        super().__init__()
        self.arrived: dict[str, anyio.Event] = {}

    def emit(self, event_type: str, /, **fields: Any) -> None:
        super().emit(event_type, **fields)
        self.waiter(event_type).set()

    def waiter(self, event_type: str) -> anyio.Event:
        return self.arrived.setdefault(event_type, anyio.Event())


@asynccontextmanager
async def connected(
    url: str, kind: RemoteKind, sink: Sink, headers: Mapping[str, str] | None = None
) -> AsyncIterator[tuple[ClientSession, ServerNotifications, RemoteStatus]]:
    notes = ServerNotifications("remote", sink)
    async with (
        open_remote_pool() as pool,
        open_remote_transport(
            name="remote", url=url, kind=kind, headers=headers or {}, pool=pool, events=sink
        ) as (read, write, status),
        ClientSession(read, write, logging_callback=notes.on_log, message_handler=notes.on_message) as client,
    ):
        await client.initialize()
        yield client, notes, status


async def startup_error(url: str, kind: RemoteKind, headers: Mapping[str, str] | None = None) -> str:
    """Connect, initialize and list as a server start does; return the one-line startup error."""
    status: RemoteStatus | None = None
    sink = Sink()
    try:
        with anyio.fail_after(GUARD):
            async with open_remote_pool() as pool:
                async with open_remote_transport(
                    name="remote", url=url, kind=kind, headers=headers or {}, pool=pool, events=sink
                ) as (read, write, status):
                    async with ClientSession(read, write) as client:
                        await client.initialize()
                        await client.list_tools()
    except Exception as exc:  # the test turns whatever came out into the message
        error = remote_startup_error(
            exc, name="remote", url=url, headers=headers or {}, status=status, kind=kind
        )
        return str(error)
    raise AssertionError("the server started")


# --- the transports -------------------------------------------------------------------------------


async def lists_and_calls(remote: RemoteTestServer, kind: RemoteKind) -> None:
    with anyio.fail_after(GUARD):
        async with connected(remote.url(ENDPOINT[kind]), kind, Sink()) as (client, _, _):
            tools = await client.list_tools()
            result = await client.call_tool("echo", {"text": "west of house"})
    assert [tool.name for tool in tools.tools][:4] == TOOLS
    assert result.content[0].model_dump()["text"] == "west of house"


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ["http", "sse"])
def test_lists_and_calls_over_both_transports(
    remote: RemoteTestServer, backend: str, kind: RemoteKind
) -> None:
    run(backend, lists_and_calls, remote, kind)


async def test_one_pool_serves_a_fresh_session_per_turn(remote: RemoteTestServer) -> None:
    texts = []
    with anyio.fail_after(GUARD):
        async with open_remote_pool() as pool:
            for turn in range(3):
                async with (
                    open_remote_transport(
                        name="remote",
                        url=remote.url("/mcp"),
                        kind="http",
                        headers={},
                        pool=pool,
                        events=Sink(),
                    ) as (read, write, _),
                    ClientSession(read, write) as client,
                ):
                    await client.initialize()
                    result = await client.call_tool("echo", {"text": f"turn {turn}"})
                    texts.append(result.content[0].model_dump()["text"])
    assert texts == ["turn 0", "turn 1", "turn 2"]


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_a_bearer_token_opens_the_door(remote: RemoteTestServer, kind: RemoteKind) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with anyio.fail_after(GUARD):
        async with connected(remote.url("/auth" + ENDPOINT[kind]), kind, Sink(), headers) as (client, _, _):
            result = await client.call_tool("echo", {"text": "open sesame"})
    assert result.content[0].model_dump()["text"] == "open sesame"
    assert remote.authorizations[-1] == f"Bearer {TOKEN}"


# --- failures: one message naming the server and the URL ------------------------------------------


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_401_names_the_headers_sent_never_their_values(
    remote: RemoteTestServer, kind: RemoteKind
) -> None:
    url = remote.url("/auth" + ENDPOINT[kind])
    message = await startup_error(url, kind, {"Authorization": "Bearer wrong-4711", "X-Team": "zork-team-9"})
    assert message == (
        "Failed to start MCP server 'remote': the server refused the credentials (HTTP 401 Unauthorized); "
        f"headers sent: Authorization, X-Team (check their values)\nURL: {url}"
    )


async def test_401_with_a_bearer_challenge_and_no_headers_says_oauth_is_not_done(
    remote: RemoteTestServer,
) -> None:
    url = remote.url("/auth/mcp")  # answers WWW-Authenticate: Bearer
    assert await startup_error(url, "http") == (
        "Failed to start MCP server 'remote': the server wants an OAuth access token (HTTP 401 Unauthorized, "
        "WWW-Authenticate: Bearer); zorkmcp does not sign in with OAuth and sends only the entry's headers: "
        'put a token there: "headers": {"Authorization": "Bearer ${TOKEN}"}\n'
        f"URL: {url}"
    )


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_403_and_5xx(remote: RemoteTestServer, kind: RemoteKind) -> None:
    forbidden = remote.url("/forbidden" + ENDPOINT[kind])
    broken = remote.url("/broken" + ENDPOINT[kind])
    assert await startup_error(forbidden, kind, {"Authorization": "Bearer x-1"}) == (
        "Failed to start MCP server 'remote': the server refused access (HTTP 403 Forbidden); "
        f"headers sent: Authorization (check their values)\nURL: {forbidden}"
    )
    assert await startup_error(broken, kind) == (
        "Failed to start MCP server 'remote': the server failed (HTTP 500 Internal Server Error)\n"
        f"URL: {broken}"
    )


async def test_a_missing_endpoint_is_a_404_naming_the_path(remote: RemoteTestServer) -> None:
    url = remote.url("/nothing-here")
    assert await startup_error(url, "http") == (
        f"Failed to start MCP server 'remote': no MCP endpoint at {url} (HTTP 404): check the path "
        f"(usually …/mcp, or …/sse for SSE)\nURL: {url}"
    )


def _refusing_port() -> int:
    with socket.socket() as sock:  # bound, never listening: connections are refused
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_connection_refused_and_unknown_host(kind: RemoteKind) -> None:
    refused = f"http://127.0.0.1:{_refusing_port()}/mcp"
    assert await startup_error(refused, kind) == (
        f"Failed to start MCP server 'remote': cannot connect to {refused} (connection refused, or the "
        f"server is not running)\nURL: {refused}"
    )
    nowhere = "http://no-such-host.invalid/mcp"
    assert await startup_error(nowhere, kind) == (
        "Failed to start MCP server 'remote': unknown host 'no-such-host.invalid' (check the URL)\n"
        f"URL: {nowhere}"
    )


@pytest.fixture(scope="module")
def tls_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A TLS server with a self-signed certificate for 127.0.0.1 (it answers nothing after the handshake)."""
    with serve_tls(tmp_path_factory.mktemp("tls")) as port:
        yield port


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_tls_failures_say_what_went_wrong(
    remote: RemoteTestServer, tls_port: int, kind: RemoteKind
) -> None:
    plain = remote.url(ENDPOINT[kind]).replace("http://", "https://")
    assert await startup_error(plain, kind) == (
        f"Failed to start MCP server 'remote': TLS handshake with {plain} failed (it does not speak TLS): "
        f"use an http:// URL\nURL: {plain}"
    )
    self_signed = f"https://127.0.0.1:{tls_port}{ENDPOINT[kind]}"
    with pytest.MonkeyPatch.context() as env:
        env.delenv("SSL_CERT_FILE", raising=False)
        message = await startup_error(self_signed, kind)
    assert re.fullmatch(
        re.escape(
            f"Failed to start MCP server 'remote': the TLS certificate of {self_signed} could not be "
            "verified (self-signed certificate): set SSL_CERT_FILE to a PEM file holding its CA (or the "
            "self-signed certificate itself) and the CAs of the other hosts: it replaces the system's CAs, "
            "so start from "
        )
        + r"(a copy of /\S+|the system's CA certificates)"
        + re.escape(f"\nURL: {self_signed}"),
        message,
    ), message
    to_tls = f"http://127.0.0.1:{tls_port}{ENDPOINT[kind]}"
    message = await startup_error(to_tls, kind)
    assert message.startswith(f"Failed to start MCP server 'remote': {to_tls} closed the connection without")
    assert message.endswith(f": if the server speaks TLS, use an https:// URL\nURL: {to_tls}")


async def test_the_other_transport_kind_is_suggested(remote: RemoteTestServer) -> None:
    sse = remote.url("/sse")
    assert await startup_error(sse, "http") == (
        f"Failed to start MCP server 'remote': no Streamable HTTP endpoint at {sse} (HTTP 405 Method Not "
        f'Allowed): the path ends in /sse; for an SSE endpoint use "type": "sse"\nURL: {sse}'
    )
    http = remote.url("/mcp")
    assert await startup_error(http, "sse") == (
        "Failed to start MCP server 'remote': the server answered HTTP 400 Bad Request to the SSE "
        f'stream\'s GET: for a Streamable HTTP endpoint use "type": "http"\nURL: {http}'
    )


async def test_an_expired_session_is_recognised_and_a_new_one_works(remote: RemoteTestServer) -> None:
    url = remote.url("/mcp")
    with anyio.fail_after(GUARD):
        async with connected(url, "http", Sink()) as (client, _, status):
            remote.expire_sessions()
            with pytest.raises(SdkMCPError, match="Session not found") as raised:
                await client.call_tool("echo", {"text": "hello?"})
            assert status.session_expired
            assert status.last_error == 404
            error = remote_startup_error(raised.value, name="remote", url=url, headers={}, status=status)
            assert str(error) == (
                "Failed to start MCP server 'remote': the server no longer knows the MCP session "
                f"(HTTP 404 for its session id)\nURL: {url}"
            )
        async with connected(url, "http", Sink()) as (client, _, status):  # re-initialize
            result = await client.call_tool("echo", {"text": "again"})
    assert result.content[0].model_dump()["text"] == "again"
    assert not status.session_expired


def test_remote_kind_follows_type_then_url() -> None:
    assert remote_kind("https://x/mcp", "http") == "http"
    assert remote_kind("https://x/mcp", "streamable-http") == "http"
    assert remote_kind("https://x/mcp", "streamableHttp") == "http"
    assert remote_kind("https://x/mcp", "sse") == "sse"
    assert remote_kind("https://x/mcp") == "http"
    assert remote_kind("https://x/sse") == "sse"
    assert remote_kind("https://x/v1/sse/") == "sse"
    assert remote_kind("https://x/sse-tools/mcp") == "http"
    with pytest.raises(ValueError, match=r"remote server type must be one of .*, got 'websocket'"):
        remote_kind("https://x/ws", "websocket")


def test_safe_url_drops_user_info_query_and_fragment() -> None:
    assert safe_url("https://user:pw@example.com:8443/mcp?key=abc#frag") == "https://example.com:8443/mcp"
    assert safe_url("http://127.0.0.1/sse") == "http://127.0.0.1/sse"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://127.0.0.1:99999/mcp", "http://127.0.0.1:99999/mcp"),
        ("http://bot:pw@127.0.0.1:abc/mcp?key=k", "http://127.0.0.1:abc/mcp"),
        ("http://[::1/mcp", "http://[::1/mcp"),
        ("https://[::1]:8443/mcp", "https://[::1]:8443/mcp"),
        ("http://h/a b\nc", "http://h/a%20b%0Ac"),
        ("http://\uff03/mcp", "http://\uff03/mcp"),
    ],
)
def test_safe_url_never_raises(url: str, shown: str) -> None:
    assert safe_url(url) == shown


@settings(max_examples=300)
@given(
    user=st.sampled_from(["", "bot:pw-Zq7@", "pw-Zq7@"]),
    rest=st.text(alphabet=st.characters(exclude_characters="@?#"), max_size=30),
    tail=st.sampled_from(["", "?key=q-Zq7", "#q-Zq7", "?a=1#q-Zq7"]),
)
def test_safe_url_of_any_text_is_one_line_without_user_info_or_query(user: str, rest: str, tail: str) -> None:
    """Property: whatever the text after ``scheme://``, the shown URL is one line without the secrets."""
    shown = safe_url(f"http://{user}{rest}{tail}")
    assert "pw-Zq7" not in shown
    assert "q-Zq7" not in shown
    assert shown.isprintable()


def test_startup_error_of_a_url_with_a_bad_port_names_it_without_secrets() -> None:
    error = remote_startup_error(
        ValueError("cannot connect"),
        name="r",
        url="http://bot:pw-Zq7@127.0.0.1:99999/mcp?key=q-Zq7",
        headers={},
    )
    assert (error.server, error.command) == ("r", "http://127.0.0.1:99999/mcp")
    assert str(error) == (
        "Failed to start MCP server 'r': ValueError: cannot connect\nURL: http://127.0.0.1:99999/mcp"
    )


# --- secrets ---------------------------------------------------------------------------------------

SECRET = "sk-live-7d1e5bc3a9f04e2c"


async def test_no_header_value_appears_anywhere(
    remote: RemoteTestServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    headers = {"Authorization": f"Bearer {SECRET}", "X-Api-Key": SECRET}
    seen: list[str] = []
    with anyio.fail_after(GUARD):
        for kind in ("http", "sse"):
            for path in ("/auth", "/forbidden", "/broken"):
                url = remote.url(path + ENDPOINT[kind])
                seen.append(await startup_error(url, kind, headers))
        ok_headers = {"Authorization": f"Bearer {TOKEN}", "X-Api-Key": SECRET}
        sink = Sink()
        async with connected(remote.url("/auth/mcp"), "http", sink, ok_headers) as (client, notes, status):
            await client.call_tool("progress", {"steps": 1}, progress_callback=notes.progress_for("progress"))
            seen += [repr(status), repr(notes), repr(client)]
    seen += [json.dumps(sink.events, default=str), json.dumps(sink.lines), caplog.text]
    assert len(seen) == 12
    assert all("refused" in text or "failed" in text for text in seen[:6])
    assert [text for text in seen if SECRET in text or TOKEN in text] == []
    assert (
        "DEBUG",
        f"MCP server 'remote': connecting to {remote.url('/auth/mcp')} over http "
        "(headers: Authorization, X-Api-Key)",
    ) in sink.lines


# --- notifications ---------------------------------------------------------------------------------


async def progress_and_log(remote: RemoteTestServer, kind: RemoteKind) -> None:
    sink = Sink()
    with anyio.fail_after(GUARD):
        async with connected(remote.url(ENDPOINT[kind]), kind, sink) as (client, notes, _):
            result = await client.call_tool(
                "progress", {"steps": 2}, progress_callback=notes.progress_for("progress")
            )
            await sink.waiter("mcp_server_log").wait()
    assert result.content[0].model_dump()["text"] == "done"
    progress = [fields for event, fields in sink.events if event == "mcp_tool_progress"]
    assert progress == [
        {"server": "remote", "tool": "progress", "progress": 1.0, "total": 2.0, "message": "step 1"},
        {"server": "remote", "tool": "progress", "progress": 2.0, "total": 2.0, "message": "step 2"},
    ]
    logs = [fields for event, fields in sink.events if event == "mcp_server_log"]
    assert logs == [
        {"server": "remote", "level": "warning", "logger": "remote-test", "data": {"note": "halfway"}}
    ]
    assert ("WARNING", """MCP server 'remote/remote-test' [warning]: {"note": "halfway"}""") in sink.lines


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ["http", "sse"])
def test_progress_and_log_notifications_become_events(
    remote: RemoteTestServer, backend: str, kind: RemoteKind
) -> None:
    run(backend, progress_and_log, remote, kind)


async def tools_change(remote: RemoteTestServer, kind: RemoteKind) -> None:
    sink = Sink()
    with anyio.fail_after(GUARD):
        async with connected(remote.url(ENDPOINT[kind]), kind, sink) as (client, notes, _):
            assert not notes.take_tools_changed()
            await client.call_tool("change_tools", {})
            await sink.waiter("mcp_tools_changed").wait()
            assert notes.take_tools_changed()
            assert not notes.take_tools_changed()
            tools = await client.list_tools()
    assert "extra" in [tool.name for tool in tools.tools]
    assert ("mcp_tools_changed", {"server": "remote"}) in sink.events


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ["http", "sse"])
def test_a_changed_tool_list_is_flagged(remote: RemoteTestServer, backend: str, kind: RemoteKind) -> None:
    run(backend, tools_change, remote, kind)


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_a_stalled_call_is_cancelled_on_the_server(remote: RemoteTestServer, kind: RemoteKind) -> None:
    remote.stall_cancelled.clear()
    sink = Sink()
    with anyio.fail_after(GUARD):
        async with connected(remote.url(ENDPOINT[kind]), kind, sink) as (client, _, _):
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(client.call_tool, "stall", {})
                    await sink.waiter("mcp_server_log").wait()  # the server is inside the call
                    scope.cancel()
            assert scope.cancelled_caught
            cancelled = await anyio.to_thread.run_sync(remote.stall_cancelled.wait, GUARD)
            result = await client.call_tool("echo", {"text": "still here"})  # the session stays usable
    assert cancelled
    assert result.content[0].model_dump()["text"] == "still here"
    assert [f["data"] for e, f in sink.events if e == "mcp_server_log"] == ["stalling"]


def test_startup_error_is_an_mcp_server_startup_error() -> None:
    error = remote_startup_error(
        RuntimeError("boom Bearer abc123"),
        name="r",
        url="https://h/mcp",
        headers={"Authorization": "Bearer abc123"},
    )
    assert isinstance(error, MCPServerStartupError)
    assert (error.server, error.command) == ("r", "https://h/mcp")
    assert str(error) == "Failed to start MCP server 'r': RuntimeError: boom ***\nURL: https://h/mcp"


# --- notifications over the SDK's in-memory transport (any session, not only remote; virtual time) --


@asynccontextmanager
async def in_memory(
    sink: Sink, on_stall_cancelled: Callable[[], object] = lambda: None
) -> AsyncIterator[tuple[ClientSession, ServerNotifications]]:
    notes = ServerNotifications("memory", sink)
    async with (
        InMemoryTransport(build_mcp(on_stall_cancelled)) as (read, write),
        ClientSession(read, write, logging_callback=notes.on_log, message_handler=notes.on_message) as client,
    ):
        await client.initialize()
        yield client, notes


async def notifications_in_memory() -> None:
    sink = Sink()
    async with in_memory(sink) as (client, notes):
        await client.call_tool("progress", {"steps": 1}, progress_callback=notes.progress_for("progress"))
        await client.call_tool("change_tools", {})
        await sink.waiter("mcp_tools_changed").wait()
        assert notes.take_tools_changed()
    assert [event for event, _ in sink.events] == ["mcp_tool_progress", "mcp_server_log", "mcp_tools_changed"]
    assert sink.events[0][1] == {
        "server": "memory",
        "tool": "progress",
        "progress": 1.0,
        "total": 1.0,
        "message": "step 1",
    }
    assert ("INFO", "MCP server 'memory' changed its tool list") in sink.lines


@pytest.mark.parametrize("backend", BACKENDS)
def test_notifications_of_an_in_memory_session(backend: str) -> None:
    run(backend, notifications_in_memory, virtual_time=True)


async def test_a_stalled_call_ends_at_its_timeout_and_the_server_hears_of_it(autojump_clock: object) -> None:
    ended = anyio.Event()
    async with in_memory(Sink(), ended.set) as (client, _):
        start = anyio.current_time()
        with anyio.move_on_after(30) as scope:
            await client.call_tool("stall", {})
        assert scope.cancelled_caught
        assert anyio.current_time() - start == 30
        await ended.wait()  # the SDK sent notifications/cancelled and the server's handler ended
        result = await client.call_tool("echo", {"text": "awake"})
    assert result.content[0].model_dump()["text"] == "awake"


def test_long_log_data_is_cut_short() -> None:
    sink = Sink()
    notes = ServerNotifications("chatty", sink)
    params = mcp_types.LoggingMessageNotificationParams(level="error", data="x" * 2500)
    anyio.run(notes.on_log, params)
    fields = sink.events[0][1]
    assert fields["data"] == "x" * 2000 + "… (500 more characters)"
    assert sink.lines == [("ERROR", "MCP server 'chatty' [error]: " + "x" * 2000 + "… (500 more characters)")]
