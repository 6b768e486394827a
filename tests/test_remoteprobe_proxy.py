"""Remote MCP servers behind an HTTP proxy: ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY`` and ``NO_PROXY``.

The MCP server is the SDK's own (tests/servers/remote.py, its ``/json/mcp`` endpoint); the proxy is
a real forward proxy on 127.0.0.1 (``http.server`` in a thread) that takes requests in absolute form
for a host that does not exist (``mcp.zork.invalid``) and passes them to that server, or answers 407
when told to. Real clock, as in ``test_remote.py``; ``fail_after`` is a hang guard only.
"""

from __future__ import annotations

import http.client
import http.server
import socket
import threading
from typing import TYPE_CHECKING, ClassVar

import anyio
import pytest
from mcp.client.session import ClientSession
from servers.helpers import RecordingSink
from servers.remote import SDK_HTTP_WARNINGS, RemoteTestServer, serve_remote

from zorkmcp.mcp._remote import RemoteStatus, open_remote_pool, open_remote_transport, remote_startup_error

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = SDK_HTTP_WARNINGS

GUARD = 20  # seconds: a hang guard only
NOWHERE = "http://mcp.zork.invalid/json/mcp"
PROXY_VARIABLES = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


class _Proxy(http.server.BaseHTTPRequestHandler):
    target: ClassVar[int] = 0
    seen: ClassVar[list[str]] = []
    demand_credentials: ClassVar[bool] = False

    def log_message(self, format: str, *args: object) -> None:
        del format, args

    def _answer(self, code: int, headers: dict[str, str], body: bytes) -> None:
        self.send_response(code)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _forward(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.seen.append(f"{self.command} {self.path}")
        if self.demand_credentials:
            self._answer(407, {"Proxy-Authenticate": 'Basic realm="proxy"'}, b"")
            return
        if self.command == "GET":  # the optional server-to-client stream: none through this proxy
            self._answer(405, {}, b"")
            return
        path = "/" + self.path.split("/", 3)[3]
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "proxy-connection")}
        upstream = http.client.HTTPConnection("127.0.0.1", self.target, timeout=GUARD)
        try:
            upstream.request(self.command, path, body=body, headers=headers)
            answer = upstream.getresponse()
            payload = answer.read()
            kept = {
                k: v
                for k, v in answer.getheaders()
                if k.lower() not in ("content-length", "transfer-encoding")
            }
            self._answer(answer.status, kept, payload)
        finally:
            upstream.close()

    do_GET = do_POST = do_DELETE = _forward


@pytest.fixture(scope="module")
def remote() -> Iterator[RemoteTestServer]:
    with serve_remote() as server:
        yield server


@pytest.fixture
def proxy(remote: RemoteTestServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    _Proxy.target = int(remote.url("/").split(":")[2].split("/")[0])
    _Proxy.seen = []
    _Proxy.demand_credentials = False
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Proxy)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


async def echo(url: str) -> str:
    with anyio.fail_after(GUARD):
        async with (
            open_remote_pool() as pool,
            open_remote_transport(
                name="remote", url=url, kind="http", headers={}, pool=pool, events=RecordingSink()
            ) as (read, write, _),
            ClientSession(read, write) as client,
        ):
            await client.initialize()
            result = await client.call_tool("echo", {"text": "through the proxy"})
    return str(result.content[0].model_dump()["text"])


async def startup_error(url: str) -> str:
    status: RemoteStatus | None = None
    try:
        with anyio.fail_after(GUARD):
            async with open_remote_pool() as pool:
                async with open_remote_transport(
                    name="remote", url=url, kind="http", headers={}, pool=pool, events=RecordingSink()
                ) as (read, write, status):
                    async with ClientSession(read, write) as client:
                        await client.initialize()
                        await client.list_tools()
    except Exception as exc:  # the test turns whatever came out into the message
        return str(remote_startup_error(exc, name="remote", url=url, headers={}, status=status, kind="http"))
    raise AssertionError("the server started")


async def test_a_remote_server_is_reached_through_http_proxy(
    proxy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy)
    assert await echo(NOWHERE) == "through the proxy"
    # every request of the session went to the proxy: the initialize POST first, then the SDK's
    # notification and listing POSTs, its GET for the server's stream and its DELETE at the end, in
    # the order its tasks send them
    assert _Proxy.seen[0] == f"POST {NOWHERE}"
    assert set(_Proxy.seen) <= {f"POST {NOWHERE}", f"GET {NOWHERE}", f"DELETE {NOWHERE}"}
    assert _Proxy.seen.count(f"POST {NOWHERE}") >= 3  # initialize, initialized, tools/call


async def test_no_proxy_and_this_machine_are_reached_directly(
    proxy: str, remote: RemoteTestServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy)
    assert await echo(remote.url("/json/mcp")) == "through the proxy"  # 127.0.0.1: never proxied
    monkeypatch.setenv("NO_PROXY", "localhost,.zork.invalid")
    assert await startup_error(NOWHERE) == (
        "Failed to start MCP server 'remote': unknown host 'mcp.zork.invalid' (check the URL)\n"
        f"URL: {NOWHERE}"
    )
    assert _Proxy.seen == []


async def test_a_proxy_that_wants_credentials_says_where_they_go(
    proxy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", proxy)
    monkeypatch.setenv("HTTP_PROXY", proxy)
    _Proxy.demand_credentials = True
    assert await startup_error(NOWHERE) == (
        f"Failed to start MCP server 'remote': the proxy {proxy} wants credentials (HTTP 407 Proxy "
        "Authentication Required): put them in the proxy's URL (HTTPS_PROXY=http://user:password@proxy:port)\n"
        f"URL: {NOWHERE}"
    )


async def test_a_proxy_that_is_not_running_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connections are refused
        monkeypatch.setenv("ALL_PROXY", f"http://user:pw-4711@127.0.0.1:{port}")
        message = await startup_error(NOWHERE)
    assert message == (
        f"Failed to start MCP server 'remote': cannot connect to the proxy http://127.0.0.1:{port} for "
        f"{NOWHERE} (HTTPS_PROXY, HTTP_PROXY or ALL_PROXY: is it running? a host in NO_PROXY is reached "
        f"directly)\nURL: {NOWHERE}"
    )
