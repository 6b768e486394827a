"""A real MCP SDK server over Streamable HTTP and SSE on 127.0.0.1, for the remote-transport tests.

uvicorn runs on asyncio, so the server runs in a thread with its own asyncio loop; the socket is
bound (port 0) and listening before the thread starts, so clients can connect at once. One server
answers many behaviours, chosen by a path prefix in front of ``/mcp`` (Streamable HTTP) or
``/sse`` (SSE)::

    /mcp, /sse                    plain
    /auth/mcp, /auth/sse          demand ``Authorization: Bearer <TOKEN>`` (401 otherwise)
    /forbidden/...                403 always
    /broken/...                   500 always
    /json/mcp                     Streamable HTTP answering ``application/json`` instead of SSE (the
                                  SDK client closes an SSE answer early, so only these keep alive)

and on command: :meth:`RemoteTestServer.expire_sessions` makes every Streamable HTTP session id
seen so far unknown (404 "Session not found", as the SDK's session manager answers; or 400 with
the body the TypeScript SDK's example servers send, ``@modelcontextprotocol/server-everything``
among them; or 400 with a body about something else);
:meth:`RemoteTestServer.refuse_new_sessions` answers every request that opens a session with 503 (or
the status given).

Tools: ``echo(text)``, ``stall()`` (logs "stalling", then waits until cancelled), ``progress(steps)``
(progress and log notifications, then "done"), ``change_tools()`` (adds ``extra`` and sends
``notifications/tools/list_changed``). :func:`build_mcp` gives the same tools for the SDK's in-memory
transport.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from contextlib import asynccontextmanager, contextmanager
from typing import TYPE_CHECKING, Any, Literal

import anyio
import pytest
from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ToolListChangedNotification

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Iterator, MutableMapping

__all__ = ["SDK_HTTP_WARNINGS", "TOKEN", "RemoteTestServer", "build_mcp", "serve_remote"]

TOKEN = "tok-9f3c2e71-secret-value"
"""The bearer token ``/auth/...`` demands (a test greps every message for it)."""

SDK_HTTP_WARNINGS = [
    # The test server logs through the 2025 logging capability, which the SDK marks deprecated.
    pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning"),
    # mcp 2.3's Streamable HTTP client leaves its GET event stream's async generators to the garbage
    # collector when the session closes (mcp/client/streamable_http.py, handle_get_stream); not ours.
    pytest.mark.filterwarnings("ignore:Async generator 'httpx2:ResourceWarning"),
    pytest.mark.filterwarnings("ignore:Async generator 'httpcore2:ResourceWarning"),
    pytest.mark.filterwarnings(
        "ignore:Exception ignored in. <async_generator object (EventSource|Response|PoolByteStream)"
        ":pytest.PytestUnraisableExceptionWarning"
    ),
]
"""``pytestmark`` for a module that talks to this server: what the SDK's HTTP clients warn about."""

_Scope = dict[str, Any]


def build_mcp(on_stall_cancelled: Callable[[], object]) -> MCPServer:
    """The test server's tools (any transport); ``on_stall_cancelled`` runs when a ``stall`` call ends."""
    server = MCPServer("remote-test")

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @server.tool()
    async def stall(ctx: Context) -> str:
        """Say "stalling", then never answer (until cancelled)."""
        await ctx.info("stalling", logger_name="remote-test")
        try:
            await anyio.sleep_forever()
        finally:
            on_stall_cancelled()
        return "unreachable"

    @server.tool()
    async def progress(steps: int, ctx: Context) -> str:
        """Report progress ``steps`` times, log once, then answer "done"."""
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps, f"step {step}")
        await ctx.warning({"note": "halfway"}, logger_name="remote-test")
        return "done"

    @server.tool()
    async def change_tools(ctx: Context) -> str:
        """Add the tool ``extra`` and tell the client its tool list changed."""
        if "extra" not in {tool.name for tool in await server.list_tools()}:
            server.add_tool(lambda: "extra!", name="extra", description="Added at run time.")
        # Related to this request: sent on its stream before the answer, so a client has it by then.
        await ctx.session.send_notification(ToolListChangedNotification(), related_request_id=ctx.request_id)
        return "changed"

    return server


async def _send_status(
    send: Any, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]]
) -> None:
    payload = json.dumps(body).encode()
    start_headers = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": start_headers + headers})
    await send({"type": "http.response.body", "body": payload})


_EXPIRED_ANSWERS: dict[str, tuple[int, dict[str, Any]]] = {
    "404": (
        404,
        {"jsonrpc": "2.0", "id": "server-error", "error": {"code": -32600, "message": "Session not found"}},
    ),
    # Byte for byte what server-everything (express) sends: no "id", so not a JSON-RPC error the
    # SDK client can use; it says "Server returned an error response".
    "400-typescript": (
        400,
        {"jsonrpc": "2.0", "error": {"code": -32000, "message": "Bad Request: No valid session ID provided"}},
    ),
    "400-other": (
        400,
        {"jsonrpc": "2.0", "error": {"code": -32000, "message": "Bad Request: Unsupported feature"}},
    ),
}


class RemoteTestServer:
    """The server's controls and addresses (see the module docstring)."""

    def __init__(self, port: int, stall_cancelled: threading.Event) -> None:
        self.port = port
        self.stall_cancelled = stall_cancelled
        self._expired: set[str] = set()
        self._expired_answer: tuple[int, dict[str, Any]] = (404, {})
        self._seen: set[str] = set()
        self._lock = threading.Lock()
        self._refusing = 0
        self.authorizations: list[str] = []
        self.connections: dict[tuple[str, int], set[str]] = {}
        """Per TCP connection (the client's address), the MCP session ids its requests carried."""

    def url(self, path: str) -> str:
        """The address of ``path`` (e.g. ``/auth/mcp``) on this server."""
        return f"http://127.0.0.1:{self.port}{path}"

    def expire_sessions(self, answer: Literal["404", "400-typescript", "400-other"] = "404") -> None:
        """Make every Streamable HTTP session id seen so far unknown, answered as ``answer`` says."""
        with self._lock:
            self._expired |= self._seen
            self._expired_answer = _EXPIRED_ANSWERS[answer]

    def refuse_new_sessions(self, status: int = 503) -> None:
        """Answer ``status`` to every request without a session id from now on (open sessions stay)."""
        self._refusing = status

    def wrap(self, inner: Any) -> Any:
        """The ASGI app: the path prefixes of the module docstring in front of ``inner``."""

        async def app(scope: _Scope, receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                await inner(scope, receive, send)
                return
            path: str = scope["path"]
            prefix, _, rest = path[1:].partition("/")
            if prefix in ("auth", "forbidden", "broken"):
                scope = {**scope, "path": "/" + rest, "raw_path": ("/" + rest).encode()}
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            if prefix == "forbidden":
                await _send_status(send, 403, {"error": "forbidden"}, [])
                return
            if prefix == "broken":
                await _send_status(send, 500, {"error": "internal"}, [])
                return
            if prefix == "auth":
                self.authorizations.append(headers.get("authorization", ""))
                if headers.get("authorization") != f"Bearer {TOKEN}":
                    await _send_status(
                        send, 401, {"error": "invalid_token"}, [(b"www-authenticate", b"Bearer")]
                    )
                    return
            session_id = headers.get("mcp-session-id")
            with self._lock:
                used = self.connections.setdefault(tuple(scope["client"]), set())
                used |= {session_id} if session_id is not None else set()
            if session_id is None and self._refusing:
                await _send_status(send, self._refusing, {"error": "unavailable"}, [])
                return
            if session_id is not None:
                with self._lock:
                    expired = session_id in self._expired
                if expired:
                    await _send_status(send, *self._expired_answer, [])
                    return
            await inner(scope, receive, self._noting_session_ids(send))

        return app

    def _noting_session_ids(self, send: Any) -> Any:
        """``send``, remembering every session id the server hands out (so expiry sees it at once)."""

        async def noting(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                for key, value in message.get("headers", ()):
                    if key.decode().lower() == "mcp-session-id":
                        with self._lock:
                            self._seen.add(value.decode())
            await send(message)

        return noting


def _starlette_app(mcp_server: Any, json_server: Any) -> Any:
    """One Starlette app: Streamable HTTP (``/mcp``), SSE (``/sse``) and JSON answers (``/json/mcp``)."""
    from starlette.applications import Starlette

    http_app = mcp_server.streamable_http_app()
    sse_app = mcp_server.sse_app()
    json_app = json_server.streamable_http_app(streamable_http_path="/json/mcp", json_response=True)

    @asynccontextmanager
    async def lifespan(app: Any) -> AsyncIterator[None]:
        async with http_app.router.lifespan_context(app), json_app.router.lifespan_context(app):
            yield

    return Starlette(routes=[*http_app.routes, *sse_app.routes, *json_app.routes], lifespan=lifespan)


@contextmanager
def serve_remote() -> Iterator[RemoteTestServer]:
    """Run the server in a thread for the ``with`` block; it is listening when the block starts."""
    import uvicorn

    stall_cancelled = threading.Event()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    control = RemoteTestServer(sock.getsockname()[1], stall_cancelled)
    app = control.wrap(_starlette_app(build_mcp(stall_cancelled.set), build_mcp(stall_cancelled.set)))
    config = uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=asyncio.run, args=(server.serve(sockets=[sock]),), daemon=True)
    thread.start()
    try:
        yield control
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
