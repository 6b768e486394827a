"""Remote MCP servers: Streamable HTTP and SSE through the SDK's own clients, and their failures.

The pieces, from low to high:

* :func:`open_remote_pool` — one HTTP connection pool per remote server, owned by the episode (or
  by the turn when there is no episode). Sessions borrow it; leaving it closes the connections.
* :func:`open_remote_transport` — an async context manager yielding ``(read, write, status)`` for
  ``mcp.client.session.ClientSession``, built on ``mcp.client.streamable_http`` or
  ``mcp.client.sse``. Each MCP session gets its own small ``httpx2.AsyncClient`` (the server's
  headers, a response hook that records HTTP failures in ``status``) on the borrowed pool, so a
  ``per_turn`` server opens a fresh MCP session every turn on the episode's keep-alive connections.
  Only answers in ``application/json`` leave a connection reusable: the SDK's client closes an SSE
  answer as soon as its result arrives, which drops that connection (measured against the SDK's
  own server: 4 new connections per session when it answers in SSE).
* :func:`remote_startup_error` — any failure of connect, initialize or ``tools/list`` as one
  :class:`~zorkmcp.errors.MCPServerStartupError` naming the server and the URL.

Secrets: header values never leave this module — events, log lines, reprs and error messages name
the headers only, and :func:`remote_startup_error` scrubs every header value out of the text of an
exception it quotes. URLs are shown without user info, query or fragment.

What the SDK (mcp 2.3) does, which the error messages decode:

* Streamable HTTP, a non-2xx answer to a request whose body is not a JSON-RPC error (401, 403, 5xx):
  the request fails with ``MCPError(-32603, "Server returned an error response")`` — the status is
  lost, so the response hook keeps it. 404 on a request that carried a session id is
  ``MCPError(-32600, "Session terminated")`` (or the server's own JSON-RPC error, e.g. the SDK
  server's ``-32600 "Session not found"``); ``status.session_expired`` tells it apart.
* SSE: the opening GET raises ``httpx2.HTTPStatusError`` with the status.
* Connection refused / unknown host: ``httpx2.ConnectError``, nested in exception groups.
"""

from __future__ import annotations

import re
from contextlib import asynccontextmanager
from http import HTTPStatus
from typing import TYPE_CHECKING, Final

import anyio.to_thread
import httpx2
from attrs import define
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError as SdkMCPError

from zorkmcp._urls import host_of, safe_url, split_url
from zorkmcp.config import REMOTE_TYPES, RemoteKind, remote_kind
from zorkmcp.errors import MCPServerStartupError, exception_leaves

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable, Mapping

    from mcp.client._transport import ReadStream, WriteStream
    from mcp.shared.message import SessionMessage

    from zorkmcp.observability import EventSink

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_READ_TIMEOUT",
    "REMOTE_TYPES",
    "RemoteKind",
    "RemoteStatus",
    "open_remote_pool",
    "open_remote_transport",
    "remote_kind",
    "remote_startup_error",
    "safe_url",
]

DEFAULT_CONNECT_TIMEOUT: Final = 30.0
"""Seconds to connect, write, or wait for a pooled connection (the SDK's default)."""
DEFAULT_READ_TIMEOUT: Final = 300.0
"""Seconds between bytes of an open event stream (the SDK's default: servers hold streams open)."""

_UNKNOWN_HOST = re.compile(
    r"name or service not known|nodename nor servname|name resolution|getaddrinfo", re.I
)


@define
class RemoteStatus:
    """What the HTTP layer saw during one MCP session (the SDK does not keep the status).

    Attributes:
        last_error: the status of the most recent non-2xx answer, or ``None``.
        session_expired: a request that carried an ``Mcp-Session-Id`` was answered 404.
        header_names: the names of the configured headers that were sent (never their values).
    """

    header_names: tuple[str, ...] = ()
    last_error: int | None = None
    session_expired: bool = False

    async def record(self, response: httpx2.Response) -> None:
        """The client's response hook: remember a failure's status."""
        if response.status_code < 400:
            return
        self.last_error = response.status_code
        if response.status_code == 404 and "mcp-session-id" in response.request.headers:
            self.session_expired = True


class _BorrowedPool(httpx2.AsyncBaseTransport):
    """A session's view of the server's pool: sends through it, never closes it."""

    def __init__(self, pool: httpx2.AsyncBaseTransport) -> None:
        self._pool = pool

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return await self._pool.handle_async_request(request)

    async def aclose(self) -> None:
        """The pool belongs to its owner; a session leaving does not close it."""


@asynccontextmanager
async def open_remote_pool() -> AsyncIterator[httpx2.AsyncBaseTransport]:
    """One HTTP connection pool for one remote server, for as long as the ``async with`` lasts.

    Built in a worker thread: the pool's TLS context reads the CA bundle from disk (~20 ms), which
    would otherwise stall every task of the loop (a prewarming session stalled the turn it served).
    """
    async with await anyio.to_thread.run_sync(httpx2.AsyncHTTPTransport) as pool:
        yield pool


def _session_client(
    pool: httpx2.AsyncBaseTransport, headers: Mapping[str, str], status: RemoteStatus, timeout: float
) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(
        transport=_BorrowedPool(pool),
        headers=dict(headers),
        timeout=httpx2.Timeout(timeout, read=DEFAULT_READ_TIMEOUT),
        event_hooks={"response": [status.record]},
    )


@asynccontextmanager
async def open_remote_transport(
    *,
    name: str,
    url: str,
    kind: RemoteKind,
    headers: Mapping[str, str],
    pool: httpx2.AsyncBaseTransport,
    events: EventSink,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
) -> AsyncIterator[tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage], RemoteStatus]]:
    """Connect to a remote MCP server; yield the streams for ``ClientSession`` and the HTTP status.

    Leaving ends the MCP session (Streamable HTTP sends ``DELETE``); the pool stays open.

    Args:
        name: the server's name in ``mcp_config.json`` (for messages).
        url: the endpoint (``…/mcp`` for Streamable HTTP, ``…/sse`` for SSE).
        kind: ``"http"`` (Streamable HTTP) or ``"sse"``.
        headers: sent with every request (already expanded; values are never shown).
        pool: the server's connection pool from :func:`open_remote_pool`.
        events: where the DEBUG line naming the URL and the header names goes.
        connect_timeout: seconds to connect or send (an open stream may stay quiet for
            :data:`DEFAULT_READ_TIMEOUT`).

    Raises:
        httpx2.HTTPError: nested in exception groups, as the SDK raises them; turn them into a message
            with :func:`remote_startup_error`.
    """
    status = RemoteStatus(header_names=tuple(sorted(headers)))
    names = ", ".join(status.header_names) or "none"
    events.log("DEBUG", f"MCP server '{name}': connecting to {safe_url(url)} over {kind} (headers: {names})")
    client = _session_client(pool, headers, status, connect_timeout)
    if kind == "http":
        async with client, streamable_http_client(url, http_client=client) as (read, write):
            yield read, write, status
        return

    def borrowed_client(
        headers: dict[str, str] | None = None,
        timeout: httpx2.Timeout | None = None,
        auth: httpx2.Auth | None = None,
    ) -> httpx2.AsyncClient:
        # sse_client enters and leaves the client it asks for; the pool survives (_BorrowedPool).
        # Its headers and timeouts are ours already; sse_client passes no headers of its own.
        del headers, timeout, auth
        return client

    async with sse_client(url, httpx_client_factory=borrowed_client) as (read, write):
        yield read, write, status


def _status_text(code: int) -> str:
    try:
        return f"HTTP {code} {HTTPStatus(code).phrase}"
    except ValueError:
        return f"HTTP {code}"


def _explain_status(code: int, url: str, status: RemoteStatus) -> str:
    sent = ", ".join(status.header_names)
    if code in (401, 403):
        what = "refused the credentials" if code == 401 else "refused access"
        if sent:
            return f"the server {what} ({_status_text(code)}); headers sent: {sent} (check their values)"
        return f'the server {what} ({_status_text(code)}); no headers were sent (add "headers" to the entry)'
    if code == 404 and status.session_expired:
        return "the server no longer knows the MCP session (HTTP 404 for its session id)"
    if code == 404:
        return f"no MCP endpoint at {url} (HTTP 404): check the path (usually …/mcp, or …/sse for SSE)"
    if code >= 500:
        return f"the server failed ({_status_text(code)})"
    return f"the server answered {_status_text(code)}"


def _explain_leaf(leaf: BaseException, url: str, status: RemoteStatus) -> str:
    host = host_of(url) or url
    if isinstance(leaf, httpx2.ConnectError):
        if _UNKNOWN_HOST.search(str(leaf)):
            return f"unknown host {host!r} (check the URL)"
        return f"cannot connect to {url} (connection refused, or the server is not running)"
    if isinstance(leaf, httpx2.TimeoutException):
        return f"no answer from {url} in time ({type(leaf).__name__})"
    if isinstance(leaf, httpx2.HTTPStatusError):
        return _explain_status(leaf.response.status_code, url, status)
    if isinstance(leaf, SdkMCPError) and status.last_error is not None:
        return _explain_status(status.last_error, url, status)
    if isinstance(leaf, SdkMCPError):
        return f"the server answered with an error: {leaf.message} (code {leaf.code})"
    return f"{type(leaf).__name__}: {leaf}"


def _scrub(text: str, secrets: Iterable[str]) -> str:
    for secret in sorted(secrets, key=len, reverse=True):
        if secret:
            text = text.replace(secret, "***")
    return text


def remote_startup_error(
    exc: BaseException,
    *,
    name: str,
    url: str,
    headers: Mapping[str, str],
    status: RemoteStatus | None = None,
    reason: str | None = None,
) -> MCPServerStartupError:
    """One clear startup error for a remote server, naming the server and the URL, never a secret.

    Args:
        exc: what connect, initialize or ``tools/list`` raised (exception groups are searched).
        name: the server's name.
        url: its URL (shown without user info or query).
        headers: the headers that were configured (their values are scrubbed from the message).
        status: what :func:`open_remote_transport` recorded, if it got that far.
        reason: a reason to use instead of the one derived from ``exc`` (e.g. a startup timeout).
    """
    shown = safe_url(url)
    status = status or RemoteStatus(header_names=tuple(sorted(headers)))
    if reason is None:
        leaves: list[BaseException] = [leaf for leaf in exception_leaves(exc) if isinstance(leaf, Exception)]
        reason = _explain_leaf((leaves or [exc])[0], shown, status)
    _, authority, _, query, fragment = split_url(url)
    password = (authority or "").rpartition("@")[0].partition(":")[2]
    secrets = [*headers.values(), *(part for part in (password, query, fragment) if part)]
    message = _scrub(f"Failed to start MCP server '{name}': {reason}\nURL: {shown}", secrets)
    return MCPServerStartupError(message, server=name, command=shown)
