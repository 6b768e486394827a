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

Proxies: the pool goes through ``HTTPS_PROXY``/``HTTP_PROXY``/``ALL_PROXY`` as the SDK's own client
does (it is given a transport, so httpx would not), except for ``NO_PROXY``'s hosts and this machine's.
A 401 or 403 is read with its ``WWW-Authenticate`` challenge (an OAuth-protected server's ``Bearer``:
zorkmcp sends only the configured headers and says so); a redirect the SDK does not follow (it follows
one only within the endpoint's origin) names where it leads.

Secrets: header values never leave this module — events, log lines, reprs and error messages name
the headers only, and :func:`remote_startup_error` scrubs every header value out of the text of an
exception it quotes. URLs are shown without user info, query or fragment.

What the SDK (mcp 2.3) does, which the error messages decode:

* Streamable HTTP, a non-2xx answer to a request whose body is not a JSON-RPC error (401, 403, 5xx):
  the request fails with ``MCPError(-32603, "Server returned an error response")`` — the status is
  lost, so the response hook keeps it. 404 on a request that carried a session id is
  ``MCPError(-32600, "Session terminated")`` (or the server's own JSON-RPC error, e.g. the SDK
  server's ``-32600 "Session not found"``); ``status.session_expired`` tells it apart.
* Streamable HTTP, an answer's event stream that ends (or fails) before the answer: the request fails
  with ``MCPError(-32000, "SSE stream ended without a response")`` (or ``"SSE stream failed: …"``,
  ``"SSE stream ended and reconnection attempts were exhausted"``): the SDK's stand-in, written into
  the session's read stream like a server's answer. -32000 is also the code servers send as their
  own error, so :func:`remote_stream_lost` reads the SDK's words.
* SSE: the opening GET raises ``httpx2.HTTPStatusError`` with the status. A message ``POST`` to the
  endpoint the stream named that fails is only logged and its request never answered (the SDK's
  client then sends nothing more): :class:`_SseAnswers` answers it as the Streamable HTTP client
  would, and :attr:`RemoteStatus.message_endpoint` names that endpoint in the message.
* Connection refused / unknown host: ``httpx2.ConnectError``, nested in exception groups.
* Streamable HTTP, an answer that is not JSON-RPC (a web server's page, some other API's JSON):
  ``MCPError(-32600, "Unexpected content type: text/html")`` or ``MCPError(-32700, "Failed to parse
  JSON response: <pydantic's report, many lines>")``; SSE, a GET answered with anything but an event
  stream: ``httpx2.SSEError("Expected response with content type 'text/event-stream', got …")``.
* An SSE event over 1 MiB (the SDK's default, ``DEFAULT_MAX_SSE_EVENT_SIZE``): ``httpx2.SSEError``
  "Server-sent event exceeded the 1048576 byte limit." The Streamable HTTP client takes a limit
  (:data:`MAX_EVENT_BYTES` here); the SSE client does not.
"""

from __future__ import annotations

import contextvars
import json
import re
import urllib.request
from contextlib import AsyncExitStack, asynccontextmanager
from http import HTTPStatus
from typing import TYPE_CHECKING, Final, Self

import anyio.to_thread
import httpx2
import mcp_types
from attrs import define
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError as SdkMCPError
from mcp.shared.message import SessionMessage

from zorkmcp._netfail import environment_proxy, explain_connect
from zorkmcp._urls import safe_url, split_url
from zorkmcp.config import REMOTE_TYPES, RemoteKind, remote_kind
from zorkmcp.errors import MCPServerStartupError, exception_leaves

from ._stdio import MAX_LINE_BYTES

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Iterable, Mapping

    from mcp.client._transport import ReadStream, WriteStream

    from zorkmcp.observability import EventSink

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_READ_TIMEOUT",
    "MAX_EVENT_BYTES",
    "REMOTE_TYPES",
    "RemoteKind",
    "RemoteStatus",
    "open_remote_pool",
    "open_remote_transport",
    "remote_call_error",
    "remote_kind",
    "remote_startup_error",
    "remote_stream_lost",
    "safe_url",
]

DEFAULT_CONNECT_TIMEOUT: Final = 30.0
"""Seconds to connect, write, or wait for a pooled connection (the SDK's default)."""
DEFAULT_READ_TIMEOUT: Final = 300.0
"""Seconds between bytes of an open event stream (the SDK's default: servers hold streams open)."""
MAX_EVENT_BYTES: Final = MAX_LINE_BYTES
"""The largest message a Streamable HTTP server may send in one server-sent event: what a stdio
server may send in one line. The SDK's default, 1 MiB, fails a call whose result is larger (an image
of 800 KB, a long file), as if the server had gone away."""


@define
class RemoteStatus:
    """What the HTTP layer saw during one MCP session (the SDK does not keep the status).

    Attributes:
        header_names: the names of the configured headers that were sent (never their values).
        url: the endpoint as messages show it (:func:`~zorkmcp._urls.safe_url`).
        kind: ``"http"`` or ``"sse"`` (for hints that the other kind was meant).
        last_error: the status of the most recent non-2xx answer, or ``None`` (a 405 to the
            Streamable HTTP client's optional ``GET`` stream is not a failure and is not kept).
        session_expired: a request that carried an ``Mcp-Session-Id`` was answered 404, or 400 with
            a body saying the session id is unknown (the TypeScript SDK's servers:
            ``"Bad Request: No valid session ID provided"``).
        url_credentials: the configured URL holds a user and password (sent as HTTP Basic).
        challenge: the ``WWW-Authenticate`` header of the most recent 401 or 403 (an OAuth-protected
            MCP server answers ``Bearer resource_metadata="…"``), or ``None``.
        message_endpoint: an SSE server's message endpoint (the URL its stream named, as messages
            show it) when a ``POST`` of a message there was answered with anything but 2xx, else
            ``None``: the failure is that endpoint's, not the configured URL's.
    """

    header_names: tuple[str, ...] = ()
    url: str = ""
    kind: RemoteKind | None = None
    last_error: int | None = None
    session_expired: bool = False
    url_credentials: bool = False
    challenge: str | None = None
    message_endpoint: str | None = None

    async def record(self, response: httpx2.Response) -> None:
        """The client's response hook: remember a failure's status."""
        code = response.status_code
        if code < 400 or (code == 405 and response.request.method == "GET"):
            return
        self.last_error = code
        if self.kind == "sse" and response.request.method == "POST":
            self.message_endpoint = safe_url(str(response.request.url))
        if code in (401, 403):
            self.challenge = response.headers.get("www-authenticate")
        if "mcp-session-id" not in response.request.headers:
            return
        if code == 404 or (code == 400 and await _says_session_unknown(response)):
            self.session_expired = True


_SESSION_UNKNOWN: Final = re.compile(
    r"\b(?:no valid|invalid|unknown|expired)\b[\w -]{0,20}\bsession\b"
    r"|\bsession\b[\w -]{0,20}\b(?:not found|unknown|invalid|expired|terminated|does not exist)\b",
    re.I,
)
"""A 400's error message saying the request's session id is unknown (not any other 400)."""
_MAX_ERROR_BODY: Final = 64 * 1024


async def _says_session_unknown(response: httpx2.Response) -> bool:
    """Whether a 400's JSON body says the session id is unknown (read here; the SDK reads it again)."""
    if not response.headers.get("content-type", "").lower().startswith("application/json"):
        return False
    if int(response.headers.get("content-length") or 0) > _MAX_ERROR_BODY:
        return False
    try:
        body = json.loads(await response.aread())
    except (httpx2.HTTPError, ValueError):
        return False
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else error
    return isinstance(message, str) and _SESSION_UNKNOWN.search(message) is not None


class _BorrowedPool(httpx2.AsyncBaseTransport):
    """A session's view of the server's pool: sends through it, never closes it."""

    def __init__(self, pool: httpx2.AsyncBaseTransport) -> None:
        self._pool = pool

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return await self._pool.handle_async_request(request)

    async def aclose(self) -> None:
        """The pool belongs to its owner; a session leaving does not close it."""


class _RemotePool(httpx2.AsyncBaseTransport):
    """A remote server's connections: direct, or through the environment's proxy for its URL.

    The SDK's own HTTP client honours ``HTTP(S)_PROXY`` and ``NO_PROXY``; a client given a transport
    does not, so the pool routes each request as that client would (the variables as they were when
    the pool opened).
    """

    def __init__(
        self,
        direct: httpx2.AsyncHTTPTransport,
        proxied: Mapping[str, httpx2.AsyncHTTPTransport],
        proxies: Mapping[str, str],
    ) -> None:
        self._direct = direct
        self._proxied = proxied
        self._proxies = proxies

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        transport = self._direct
        if self._proxied and (proxy := environment_proxy(str(request.url), self._proxies)) is not None:
            transport = self._proxied.get(proxy, self._direct)
        return await transport.handle_async_request(request)


def _build_pool() -> tuple[httpx2.AsyncHTTPTransport, dict[str, httpx2.AsyncHTTPTransport], dict[str, str]]:
    proxies = urllib.request.getproxies_environment()
    urls = {p if "://" in p else f"http://{p}" for key in ("http", "https", "all") if (p := proxies.get(key))}
    proxied = {url: httpx2.AsyncHTTPTransport(proxy=url) for url in sorted(urls)}
    return httpx2.AsyncHTTPTransport(), proxied, proxies


@asynccontextmanager
async def open_remote_pool() -> AsyncIterator[httpx2.AsyncBaseTransport]:
    """One HTTP connection pool for one remote server, for as long as the ``async with`` lasts.

    It goes through ``HTTPS_PROXY``/``HTTP_PROXY``/``ALL_PROXY`` when they are set, except for the
    hosts of ``NO_PROXY`` and this machine's (:func:`environment_proxy`), read when it opens.
    Built in a worker thread: the pool's TLS context reads the CA bundle from disk (~20 ms), which
    would otherwise stall every task of the loop (a prewarming session stalled the turn it served).
    """
    direct, proxied, proxies = await anyio.to_thread.run_sync(_build_pool)
    async with AsyncExitStack() as stack:
        await stack.enter_async_context(direct)
        for transport in proxied.values():
            await stack.enter_async_context(transport)
        yield _RemotePool(direct, proxied, proxies)


_Received = tuple[SessionMessage | Exception, contextvars.Context | None]


class _SseAnswers:
    """An SSE session's read stream: the SDK's, plus an error answer to each request whose ``POST`` failed.

    The SDK's SSE client (mcp 2.3) sends each message with a ``POST`` to the endpoint the stream
    named and, when that is answered with anything but 2xx, logs the error and stops sending: the
    request is never answered, so ``initialize`` or the tool call waits for its timeout ("no answer
    within 10s") while the real cause (a reverse proxy's 404 for an endpoint named without its path
    prefix, a 502, a 401) is known at once. :meth:`on_response`, a response hook of the session's
    HTTP client, answers that request here with the SDK's own words for a failed HTTP answer
    (``-32603 "Server returned an error response"``, or ``"Redirect to … not followed"``), which
    :func:`remote_call_error` and :func:`remote_startup_error` read with :class:`RemoteStatus`.
    """

    def __init__(self, inner: ReadStream[SessionMessage | Exception]) -> None:
        self._inner = inner
        self._send, self._receive = anyio.create_memory_object_stream[_Received](0)
        self.last_context: contextvars.Context | None = None

    async def relay(self) -> None:
        """Pass the SDK's messages on (with their sender's context) until its stream ends."""
        async with self._send:
            while True:
                try:
                    item = await self._inner.receive()
                except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return
                context: contextvars.Context | None = getattr(self._inner, "last_context", None)
                try:
                    await self._send.send((item, context))
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    return

    async def on_response(self, response: httpx2.Response) -> None:
        """A response hook: a request's ``POST`` answered with anything but 2xx gets its error answer."""
        if response.request.method != "POST" or response.is_success:
            return
        request_id = _request_id(response.request)
        if request_id is None:  # a notification or an answer: nothing waits for it
            return
        location = response.headers.get("location") if response.is_redirect else None
        if location:
            message = f"Redirect to {response.request.url.join(location)} not followed"
        else:
            message = _SDK_STATUS_LOST
        error = mcp_types.ErrorData(code=mcp_types.INTERNAL_ERROR, message=message)
        answer = SessionMessage(mcp_types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))
        try:
            await self._send.send((answer, None))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass  # the session is gone or closing: nobody waits for the answer

    async def receive(self) -> SessionMessage | Exception:
        item, self.last_context = await self._receive.receive()
        return item

    async def aclose(self) -> None:
        await self._receive.aclose()
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


def _request_id(request: httpx2.Request) -> mcp_types.RequestId | None:
    """The id of the JSON-RPC request a ``POST`` carried, or ``None`` (not a request, or unreadable)."""
    try:
        message = json.loads(request.content)
    except (httpx2.RequestNotRead, ValueError):
        return None
    if not isinstance(message, dict) or not isinstance(message.get("method"), str):
        return None
    request_id = message.get("id")
    return request_id if isinstance(request_id, str | int) and not isinstance(request_id, bool) else None


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
    status = RemoteStatus(
        header_names=tuple(sorted(headers)), url=safe_url(url), kind=kind, url_credentials=_has_userinfo(url)
    )
    names = ", ".join(status.header_names) or "none"
    events.log("DEBUG", f"MCP server '{name}': connecting to {safe_url(url)} over {kind} (headers: {names})")
    client = _session_client(pool, headers, status, connect_timeout)
    if kind == "http":
        transport = streamable_http_client(url, http_client=client, max_sse_event_size=MAX_EVENT_BYTES)
        async with client, transport as (read, write):
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
        answers = _SseAnswers(read)
        client.event_hooks["response"].append(answers.on_response)
        async with anyio.create_task_group() as relay:
            relay.start_soon(answers.relay)
            try:
                yield answers, write, status
            finally:
                relay.cancel_scope.cancel()


def _status_text(code: int) -> str:
    try:
        return f"HTTP {code} {HTTPStatus(code).phrase}"
    except ValueError:
        return f"HTTP {code}"


def _has_userinfo(url: str) -> bool:
    return "@" in (split_url(url)[1] or "")


_AUTH_SCHEME: Final = re.compile(r"\s*([!#$%&'*+.^_`|~0-9A-Za-z-]+)")
_AUTH_ERROR: Final = re.compile(r"""\berror\s*=\s*"?([A-Za-z_]{1,40})\b""")
_HEADERS_HINT: Final = 'put a token there: "headers": {"Authorization": "Bearer ${TOKEN}"}'


def _explain_auth(code: int, status: RemoteStatus) -> str:
    """A 401 or 403, read with its ``WWW-Authenticate`` challenge: what was sent, what the server wants."""
    sent = ", ".join(status.header_names)
    what = "refused the credentials" if code == 401 else "refused access"
    scheme_match = _AUTH_SCHEME.match(status.challenge or "")
    scheme = scheme_match.group(1).lower() if scheme_match else ""
    error_match = _AUTH_ERROR.search(status.challenge or "") if scheme == "bearer" else None
    shown = _status_text(code)
    if error_match is not None:  # RFC 6750's codes: invalid_token, insufficient_scope, invalid_request
        shown += f', WWW-Authenticate: Bearer error="{error_match.group(1)}"'
    authorization = any(name.lower() == "authorization" for name in status.header_names)
    if scheme == "bearer" and code == 401 and not authorization and not status.url_credentials:
        others = f"; headers sent: {sent}" if sent else ""
        return (
            f"the server wants an OAuth access token ({_status_text(code)}, WWW-Authenticate: Bearer"
            f"{others}); zorkmcp does not sign in with OAuth and sends only the entry's headers: "
            f"{_HEADERS_HINT}"
        )
    if scheme == "basic" and not authorization and not status.url_credentials:
        return (
            f"the server asks for a user and password ({_status_text(code)}, WWW-Authenticate: Basic): "
            "put them in the URL (https://user:password@host/…) or in the entry's headers"
        )
    if sent:
        return f"the server {what} ({shown}); headers sent: {sent} (check their values)"
    if status.url_credentials:
        return f"the server {what} ({shown}); the URL's user and password were sent (check them)"
    return f'the server {what} ({shown}); no headers were sent (add "headers" to the entry)'


def _explain_message_endpoint(code: int, endpoint: str) -> str:
    """An SSE server's message endpoint (named by its stream, not configured) failed a ``POST``."""
    shown = _status_text(code)
    failed = f"the server's message endpoint {endpoint}, which its SSE stream named, answered {shown}"
    if code in (404, 405):
        return (
            f"{failed}: a server behind a reverse proxy that serves it under a path prefix names its "
            "endpoint without the prefix (set the server's root path or public URL), or use the server's "
            'Streamable HTTP endpoint, "type": "http"'
        )
    return failed


def _explain_status(code: int, url: str, status: RemoteStatus) -> str:
    if code in (401, 403):
        return _explain_auth(code, status)
    if code == 407:
        proxy = environment_proxy(url)
        where = f"the proxy {safe_url(proxy)}" if proxy is not None else "a proxy on the way"
        return (
            f"{where} wants credentials ({_status_text(code)}): put them in the proxy's URL "
            "(HTTPS_PROXY=http://user:password@proxy:port)"
        )
    if status.message_endpoint is not None and code not in (401, 403, 407):
        return _explain_message_endpoint(code, status.message_endpoint)
    if code in (400, 404) and status.session_expired:
        return f"the server no longer knows the MCP session (HTTP {code} for its session id)"
    sse_path = split_url(url)[2].rstrip("/").endswith("/sse")
    if code in (404, 405) and status.kind == "http" and sse_path:
        return (
            f"no Streamable HTTP endpoint at {url} ({_status_text(code)}): "
            'the path ends in /sse; for an SSE endpoint use "type": "sse"'
        )
    if code == 404:
        return f"no MCP endpoint at {url} (HTTP 404): check the path (usually …/mcp, or …/sse for SSE)"
    if code in (405, 501) and status.kind == "http":
        # a web server without the method (python -m http.server answers a POST 501)
        return (
            f"no Streamable HTTP endpoint at {url} ({_status_text(code)}: the server does not take "
            'MCP\'s POST): check the URL (usually …/mcp; for an SSE endpoint use "type": "sse")'
        )
    if code >= 500:
        return f"the server failed ({_status_text(code)})"
    if code in (400, 405, 406) and status.kind == "sse":
        return (
            f"the server answered {_status_text(code)} to the SSE stream's GET: "
            'for a Streamable HTTP endpoint use "type": "http"'
        )
    return f"the server answered {_status_text(code)}"


_SSE_TOO_LARGE: Final = re.compile(r"exceeded the (\d+) byte limit")
_SSE_NOT_A_STREAM: Final = re.compile(r"content type 'text/event-stream', got '([^']*)'")
_SDK_CONTENT_TYPE: Final = "Unexpected content type: "


def _mib(size: int) -> str:
    return f"{size / (1024 * 1024):g} MiB"


def _explain_sse_error(leaf: httpx2.SSEError, url: str) -> str:
    if (too_large := _SSE_TOO_LARGE.search(str(leaf))) is not None:
        limit = _mib(int(too_large.group(1)))
        return (
            f"the server sent a message of more than {limit} on its SSE stream, the most the MCP "
            "SDK's SSE client reads in one event (a tool result that large: ask the tool for less, or "
            f'use the server\'s Streamable HTTP endpoint, "type": "http", which takes up to '
            f"{_mib(MAX_EVENT_BYTES)})"
        )
    if (not_a_stream := _SSE_NOT_A_STREAM.search(str(leaf))) is not None:
        got = not_a_stream.group(1).partition(";")[0].strip() or "no content type"
        return (
            f"no SSE endpoint at {url}: it answered {got}, not an event stream; check the path "
            '(usually …/sse; for a Streamable HTTP endpoint use "type": "http")'
        )
    return f"the SSE stream failed: {leaf}"


_SDK_REDIRECT: Final = re.compile(r"Redirect to (\S+) not followed")


def _explain_redirect(location: str, url: str) -> str:
    """A redirect the SDK did not follow (it follows one only within the endpoint's origin)."""
    shown = safe_url(location)
    if url.startswith("https:") and shown.startswith("http:"):
        return (
            f"the server redirects to {shown}, from HTTPS to plain HTTP, which is not followed: it is "
            "likely behind a TLS-terminating proxy that it does not trust; try "
            f"https:{shown.removeprefix('http:')} as the URL, or fix the proxy's forwarded headers"
        )
    return (
        f"the server redirects to {shown}, which is not followed (the MCP SDK follows a redirect only "
        'within the endpoint\'s scheme, host and port): use that URL as "url" if it is the intended server'
    )


def _explain_sdk_error(leaf: SdkMCPError, url: str) -> str:
    """The SDK's own words for an answer that is not JSON-RPC, as one line naming what to check."""
    if (redirect := _SDK_REDIRECT.match(leaf.message)) is not None:
        return _explain_redirect(redirect.group(1), url)
    if leaf.code == mcp_types.PARSE_ERROR:  # pydantic's report follows, many lines long
        return (
            f"{url} answered with something that is not a JSON-RPC message: "
            "it is not an MCP endpoint (check the URL)"
        )
    if leaf.code == mcp_types.INVALID_REQUEST and leaf.message.startswith(_SDK_CONTENT_TYPE):
        got = leaf.message.removeprefix(_SDK_CONTENT_TYPE).partition(";")[0].strip() or "no content type"
        return (
            f"{url} answered in {got}, not as an MCP endpoint does (application/json or "
            "text/event-stream): check the URL (usually …/mcp)"
        )
    first, _, more = leaf.message.partition("\n")
    return f"the server answered with an error: {first}{' …' if more else ''} (code {leaf.code})"


def _explain_leaf(leaf: BaseException, url: str, status: RemoteStatus) -> str:
    if isinstance(leaf, httpx2.ConnectError):
        return explain_connect(leaf, url)
    if isinstance(leaf, httpx2.TimeoutException):
        return f"no answer from {url} in time ({type(leaf).__name__})"
    if isinstance(leaf, (httpx2.RemoteProtocolError, httpx2.ReadError)) and url.startswith("http://"):
        return (
            f"{url} closed the connection without an HTTP answer ({type(leaf).__name__}): "
            "if the server speaks TLS, use an https:// URL"
        )
    if isinstance(leaf, httpx2.HTTPStatusError):
        code = leaf.response.status_code
        if 300 <= code < 400 and (location := leaf.response.headers.get("location")):
            return _explain_redirect(str(leaf.request.url.join(location)), url)
        if code in (401, 403):
            status.challenge = leaf.response.headers.get("www-authenticate")
        return _explain_status(code, url, status)
    if isinstance(leaf, SdkMCPError) and status.last_error is not None:
        return _explain_status(status.last_error, url, status)
    if isinstance(leaf, httpx2.SSEError):
        return _explain_sse_error(leaf, url)
    if isinstance(leaf, SdkMCPError):
        return _explain_sdk_error(leaf, url)
    return f"{type(leaf).__name__}: {leaf}"


_SDK_STATUS_LOST: Final = "Server returned an error response"
"""The SDK's message for a non-2xx answer whose body is not a JSON-RPC error (the status is lost)."""
_SDK_STREAM_LOST: Final = (
    "SSE stream ended without a response",
    "SSE stream failed: ",
    "SSE stream ended and reconnection attempts were exhausted",
)
"""How the SDK's Streamable HTTP client (mcp 2.3, ``_resolve_abandoned_request``) words the -32000 it
makes up for a request whose answer can no longer come: the answer's event stream ended first."""


def remote_stream_lost(exc: SdkMCPError) -> bool:
    """Whether the SDK's Streamable HTTP client made ``exc`` up because the answer's stream was lost.

    Not an error the server sent: the connection that was to carry the answer ended (the server died
    or was cut off mid-call). The SDK hands both to the session alike, with the same code (-32000,
    which servers also send as their own error, JSON-RPC 2.0's first "Server error" code) and no
    ``data``; only its words tell them apart.
    """
    return (
        exc.code == mcp_types.CONNECTION_CLOSED
        and exc.data is None
        and exc.message.startswith(_SDK_STREAM_LOST)
    )


def remote_call_error(exc: SdkMCPError, status: RemoteStatus | None) -> str:
    """The reason a tool call failed, naming the HTTP status where the SDK's message lost it.

    Args:
        exc: what ``call_tool`` raised.
        status: the session's :class:`RemoteStatus` (``None`` for a local server: the SDK's message).
    """
    if status is None or status.last_error is None or exc.message != _SDK_STATUS_LOST:
        return exc.message
    return _explain_status(status.last_error, status.url, status)


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
    kind: RemoteKind | None = None,
) -> MCPServerStartupError:
    """One clear startup error for a remote server, naming the server and the URL, never a secret.

    Args:
        exc: what connect, initialize or ``tools/list`` raised (exception groups are searched).
        name: the server's name.
        url: its URL (shown without user info or query).
        headers: the headers that were configured (their values are scrubbed from the message).
        status: what :func:`open_remote_transport` recorded, if it got that far.
        reason: a reason to use instead of the one derived from ``exc`` (e.g. a startup timeout).
        kind: ``"http"`` or ``"sse"``, for a hint that the other was meant (when ``status`` is
            ``None``: an SSE stream fails before :func:`open_remote_transport` yields one).
    """
    shown = safe_url(url)
    status = status or RemoteStatus(
        header_names=tuple(sorted(headers)), url=shown, kind=kind, url_credentials=_has_userinfo(url)
    )
    if reason is None:
        leaves: list[BaseException] = [leaf for leaf in exception_leaves(exc) if isinstance(leaf, Exception)]
        reason = _explain_leaf((leaves or [exc])[0], shown, status)
    _, authority, _, query, fragment = split_url(url)
    password = (authority or "").rpartition("@")[0].partition(":")[2]
    secrets = [*headers.values(), *(part for part in (password, query, fragment) if part)]
    message = _scrub(f"Failed to start MCP server '{name}': {reason}\nURL: {shown}", secrets)
    return MCPServerStartupError(message, server=name, command=shown)
