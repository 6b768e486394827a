"""Remote MCP servers that answer with an authentication challenge or a redirect: what the user reads.

The server is a real HTTP server on 127.0.0.1 (``http.server`` in a thread), answering every request
as an OAuth-protected MCP server, an HTTP Basic one, or a redirect would. These tests run on the real
clock, as ``test_remote.py`` does: httpx's own timeouts are deadlines too, and an autojumping mock
clock would fire them while the loop waits for the server thread; ``fail_after`` is a hang guard only.
"""

from __future__ import annotations

import http.server
import threading
from typing import TYPE_CHECKING, ClassVar

import anyio
import pytest
from mcp.client.session import ClientSession
from servers.helpers import RecordingSink
from servers.remote import SDK_HTTP_WARNINGS

from zorkmcp.mcp._remote import (
    RemoteKind,
    RemoteStatus,
    open_remote_pool,
    open_remote_transport,
    remote_startup_error,
)

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

pytestmark = SDK_HTTP_WARNINGS

GUARD = 20  # seconds: a hang guard only
ENDPOINT = {"http": "/mcp", "sse": "/sse"}


class _Handler(http.server.BaseHTTPRequestHandler):
    authorizations: ClassVar[list[str]] = []

    def log_message(self, format: str, *args: object) -> None:
        del format, args

    def _answer(self, code: int, headers: Mapping[str, str], body: bytes = b"") -> None:
        self.send_response(code)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _any(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.authorizations.append(self.headers.get("Authorization", ""))
        port = self.server.server_port  # type: ignore[attr-defined]  # an HTTPServer here
        prefix = self.path.split("/")[1]
        if prefix == "oauth":
            metadata = f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource"
            challenge = f'Bearer resource_metadata="{metadata}", scope="mcp"'
            json_type = {"Content-Type": "application/json", "WWW-Authenticate": challenge}
            self._answer(401, json_type, b'{"error": "invalid_token"}')
        elif prefix == "basic":
            self._answer(401, {"Content-Type": "text/plain", "WWW-Authenticate": 'Basic realm="mcp"'}, b"no")
        elif prefix == "redirect":
            where = f"https://mcp.example.com{self.path.partition('?')[0]}?session=s3cr3t-7"
            self._answer(307, {"Location": where})
        else:
            self._answer(404, {"Content-Type": "text/plain"}, b"not found")

    do_GET = do_POST = do_DELETE = _any


@pytest.fixture(scope="module")
def port() -> Iterator[int]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield int(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


async def startup_error(url: str, kind: RemoteKind, headers: Mapping[str, str] | None = None) -> str:
    """Connect, initialize and list as a server start does; return the one-line startup error."""
    status: RemoteStatus | None = None
    try:
        with anyio.fail_after(GUARD):
            async with open_remote_pool() as pool:
                async with open_remote_transport(
                    name="remote",
                    url=url,
                    kind=kind,
                    headers=headers or {},
                    pool=pool,
                    events=RecordingSink(),
                ) as (read, write, status):
                    async with ClientSession(read, write) as client:
                        await client.initialize()
                        await client.list_tools()
    except Exception as exc:  # the test turns whatever came out into the message
        return str(
            remote_startup_error(exc, name="remote", url=url, headers=headers or {}, status=status, kind=kind)
        )
    raise AssertionError("the server started")


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_an_oauth_server_says_it_wants_a_token_and_how_to_send_one(port: int, kind: RemoteKind) -> None:
    url = f"http://127.0.0.1:{port}/oauth{ENDPOINT[kind]}"
    assert await startup_error(url, kind) == (
        "Failed to start MCP server 'remote': the server wants an OAuth access token (HTTP 401 Unauthorized, "
        "WWW-Authenticate: Bearer); zorkmcp does not sign in with OAuth and sends only the entry's headers: "
        'put a token there: "headers": {"Authorization": "Bearer ${TOKEN}"}\n'
        f"URL: {url}"
    )


async def test_an_oauth_server_names_the_other_headers_that_were_sent(port: int) -> None:
    url = f"http://127.0.0.1:{port}/oauth/mcp"
    assert await startup_error(url, "http", {"X-Api-Key": "k-80211"}) == (
        "Failed to start MCP server 'remote': the server wants an OAuth access token (HTTP 401 Unauthorized, "
        "WWW-Authenticate: Bearer; headers sent: X-Api-Key); zorkmcp does not sign in with OAuth and sends "
        'only the entry\'s headers: put a token there: "headers": {"Authorization": "Bearer ${TOKEN}"}\n'
        f"URL: {url}"
    )


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_a_basic_auth_server_asks_for_a_user_and_password(port: int, kind: RemoteKind) -> None:
    url = f"http://127.0.0.1:{port}/basic{ENDPOINT[kind]}"
    assert await startup_error(url, kind) == (
        "Failed to start MCP server 'remote': the server asks for a user and password "
        "(HTTP 401 Unauthorized, WWW-Authenticate: Basic): put them in the URL "
        f"(https://user:password@host/…) or in the entry's headers\nURL: {url}"
    )


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_the_user_and_password_of_the_url_are_sent_and_the_message_says_so(
    port: int, kind: RemoteKind
) -> None:
    url = f"http://bob:pw-31337@127.0.0.1:{port}/basic{ENDPOINT[kind]}"
    message = await startup_error(url, kind)
    assert message == (
        "Failed to start MCP server 'remote': the server refused the credentials (HTTP 401 Unauthorized); "
        f"the URL's user and password were sent (check them)\nURL: http://127.0.0.1:{port}/basic{ENDPOINT[kind]}"
    )
    assert _Handler.authorizations[-1] == "Basic Ym9iOnB3LTMxMzM3"  # bob:pw-31337


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_a_redirect_elsewhere_names_where_it_leads_without_its_query(
    port: int, kind: RemoteKind
) -> None:
    url = f"http://127.0.0.1:{port}/redirect{ENDPOINT[kind]}"
    assert await startup_error(url, kind) == (
        f"Failed to start MCP server 'remote': the server redirects to https://mcp.example.com/redirect"
        f"{ENDPOINT[kind]}, which is not followed (the MCP SDK follows a redirect only within the endpoint's "
        'scheme, host and port): use that URL as "url" if it is the intended server\n'
        f"URL: {url}"
    )
