"""An SSE server's message endpoint (the URL its stream names) failing: at once, saying which and why.

The MCP SDK's SSE client sends each message with a ``POST`` to the endpoint the server's stream
named; when that ``POST`` fails it logs the error and never answers the request, so ``initialize``
(or a tool call) used to wait for its timeout and say only "no answer … within 10s". The commonest
cause: a reverse proxy serving the server under a path prefix (``/myserver/sse``) that it strips,
while the server names its endpoint without it (``/messages/?session_id=…``), which the proxy
answers 404.

Real parts: the MCP SDK's own server (``tests/servers/remote.py``'s tools, its ``sse_app``) under
uvicorn on 127.0.0.1 in a thread, behind a small ASGI reverse proxy in the same app that strips the
prefix and, on command, answers every ``POST`` 502 as a failing gateway does. Real clock, as the
other remote tests (httpx's timeouts are deadlines too); ``fail_after`` bounds each test well below
the timeouts the old code waited for, so a test of the old code fails on its message or its guard.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from typing import TYPE_CHECKING, Any

import anyio
import pytest
from servers.helpers import RecordingSink
from servers.remote import SDK_HTTP_WARNINGS, build_mcp

from zorkmcp.config import McpSettings, ServerConfig
from zorkmcp.errors import MCPServerStartupError
from zorkmcp.mcp import open_toolbox

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = SDK_HTTP_WARNINGS

GUARD = 5  # seconds: under the 10 s start-up timeout and the 8 s call timeout the old code waited for
PREFIX = "/myserver"


class _Proxy:
    """A reverse proxy in front of the SDK's SSE app: strips ``/myserver``, 404 for any other path."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.passthrough = False
        """Forward every path as it is too (a proxy without a prefix: the server's endpoint works)."""
        self.failing_posts: int | None = None

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def app(self, inner: Any) -> Any:
        async def proxy(scope: dict[str, Any], receive: Any, send: Any) -> None:
            if scope["type"] != "http":
                await inner(scope, receive, send)
                return
            path: str = scope["path"]
            if scope["method"] == "POST" and self.failing_posts is not None:
                await _answer(send, self.failing_posts, b"<html><body>502 Bad Gateway</body></html>")
            elif path.startswith(f"{PREFIX}/"):
                rest = path.removeprefix(PREFIX)
                await inner({**scope, "path": rest, "raw_path": rest.encode()}, receive, send)
            elif self.passthrough:
                await inner(scope, receive, send)
            else:
                await _answer(send, 404, b"<html><body>404 Not Found</body></html>")

        return proxy


async def _answer(send: Any, status: int, body: bytes) -> None:
    headers = [(b"content-type", b"text/html"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


@pytest.fixture
def proxy() -> Iterator[_Proxy]:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    control = _Proxy(sock.getsockname()[1])
    app = control.app(build_mcp(lambda: None).sse_app())
    config = uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=asyncio.run, args=(server.serve(sockets=[sock]),), daemon=True)
    thread.start()
    try:
        yield control
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def _sse(proxy: _Proxy, **fields: Any) -> ServerConfig:
    return ServerConfig(name="web", type="sse", url=proxy.url(f"{PREFIX}/sse"), **fields)


async def test_an_endpoint_named_without_the_proxys_prefix_fails_the_start_at_once_saying_so(
    proxy: _Proxy,
) -> None:
    with anyio.fail_after(GUARD), pytest.raises(MCPServerStartupError) as caught:
        async with open_toolbox([_sse(proxy)], McpSettings(), events=RecordingSink()):
            pass
    assert str(caught.value) == (
        f"Failed to start MCP server 'web': the server's message endpoint {proxy.url('/messages/')}, "
        "which its SSE stream named, answered HTTP 404 Not Found: a server behind a reverse proxy that "
        "serves it under a path prefix names its endpoint without the prefix (set the server's root path "
        'or public URL), or use the server\'s Streamable HTTP endpoint, "type": "http"\n'
        f"URL: {proxy.url('/myserver/sse')}"
    )


async def test_a_call_whose_post_a_gateway_fails_ends_at_once_naming_the_status(proxy: _Proxy) -> None:
    proxy.passthrough = True  # the endpoint the server names is reached, until every POST gets 502
    with anyio.fail_after(GUARD):
        async with open_toolbox([_sse(proxy, timeout=8)], McpSettings(), events=RecordingSink()) as toolbox:
            proxy.failing_posts = 502
            result = await toolbox.call_tool("web.echo", {"text": "west of house"})
    assert result.to_dict() == {
        "error": f"Tool call failed: the server's message endpoint {proxy.url('/messages/')}, which its SSE "
        "stream named, answered HTTP 502 Bad Gateway",
        "content": None,
    }
