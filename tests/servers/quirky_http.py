"""A real MCP SDK server over Streamable HTTP on 127.0.0.1 whose tools fail in the two ways that look
alike to a client: the server's own JSON-RPC error -32000, and an answer's stream cut mid-call.

uvicorn runs in a thread with its own asyncio loop (as in ``servers.remote``); the socket is bound
and listening before the thread starts. Tools:

    echo(text)   the text back
    flaky()      the JSON-RPC error -32000 "rate limited, try later" (the server's own)
    vanish()     never answered: the server starts the answer's event stream, then drops the
                 connection without ending the stream (what a client sees when a server dies mid-call)
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError

if TYPE_CHECKING:
    from collections.abc import Iterator

__all__ = ["RATE_LIMITED", "serve_quirky_http"]

RATE_LIMITED = "rate limited, try later"


def _build() -> MCPServer:
    server = MCPServer("quirky-http")

    @server.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    @server.tool()
    def flaky() -> str:
        """Fail with the server's own JSON-RPC error -32000."""
        raise MCPError(code=-32000, message=RATE_LIMITED)

    @server.tool()
    def vanish() -> str:
        """Never reached: the connection is dropped first (see the module docstring)."""
        return "unreachable"

    return server


def _cutting(inner: Any) -> Any:
    """The ASGI app: ``inner``, except that a ``tools/call`` of ``vanish`` gets a cut event stream."""

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await inner(scope, receive, send)
            return
        messages = []
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request" or not message.get("more_body"):
                break
        body = b"".join(message.get("body", b"") for message in messages)
        try:
            request = json.loads(body)
        except ValueError:
            request = None
        vanish = (
            isinstance(request, dict)
            and request.get("method") == "tools/call"
            and (request.get("params") or {}).get("name") == "vanish"
        )
        if vanish:
            headers = [(b"content-type", b"text/event-stream")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": b": working\n\n", "more_body": True})
            return  # the stream never ends: uvicorn drops the connection

        replay = iter(messages)

        async def replayed() -> Any:
            return next(replay, None) or await receive()

        await inner(scope, replayed, send)

    return app


@contextmanager
def serve_quirky_http() -> Iterator[str]:
    """Run the server for the ``with`` block; yields its Streamable HTTP URL (``…/mcp``)."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    app = _cutting(_build().streamable_http_app())
    config = uvicorn.Config(app, log_level="critical", lifespan="on", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=asyncio.run, args=(server.serve(sockets=[sock]),), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
