"""A real third-party remote MCP server: ``@modelcontextprotocol/server-everything`` over HTTP and SSE.

``.ci/run`` installs it with npm into ``tests/node``; without Node.js or the package these tests are
skipped with the reason. The server runs as a subprocess on a free port (``PORT``); the test waits
for its "listening" line on stderr, then connects with :func:`open_remote_transport`.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import pytest
from mcp.client.session import ClientSession
from servers.helpers import RecordingSink
from servers.remote import SDK_HTTP_WARNINGS

from zorkmcp.config import McpSettings, ServerConfig
from zorkmcp.mcp import open_toolbox
from zorkmcp.mcp._remote import RemoteKind, open_remote_pool, open_remote_transport

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

PACKAGE = Path(__file__).with_name("node") / "node_modules/@modelcontextprotocol/server-everything"
ENTRY = PACKAGE / "dist/index.js"
NODE = shutil.which("node")
GUARD = 20  # seconds: a hang guard only

pytestmark = [
    pytest.mark.node,
    pytest.mark.skipif(NODE is None, reason="Node.js is not installed"),
    pytest.mark.skipif(
        not ENTRY.is_file(),
        reason="the package is not installed: "
        "`npm install --prefix tests/node @modelcontextprotocol/server-everything` (.ci/run does)",
    ),
    *SDK_HTTP_WARNINGS,
]

MODE = {"http": "streamableHttp", "sse": "sse"}
ENDPOINT = {"http": "/mcp", "sse": "/sse"}
READY = {"http": b"listening on port", "sse": b"running on port"}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@asynccontextmanager
async def everything(kind: RemoteKind, port: int | None = None) -> AsyncIterator[str]:
    """Run server-everything in ``kind``'s mode; yield its endpoint once it listens."""
    assert NODE is not None
    port = port or _free_port()
    env = {"PATH": "/usr/bin:/bin", "PORT": str(port)}
    command = [NODE, str(ENTRY), MODE[kind]]
    async with await anyio.open_process(command, env=env, stdout=subprocess.DEVNULL) as process:
        try:
            assert process.stderr is not None
            seen = b""
            async for chunk in process.stderr:
                seen += chunk
                if READY[kind] in seen:
                    break
            assert READY[kind] in seen, seen.decode(errors="replace")
            yield f"http://127.0.0.1:{port}{ENDPOINT[kind]}"
        finally:
            process.terminate()


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_server_everything_lists_and_echoes(kind: RemoteKind) -> None:
    sink = RecordingSink()
    with anyio.fail_after(GUARD):
        async with everything(kind) as url, open_remote_pool() as pool:
            transport = open_remote_transport(
                name="everything", url=url, kind=kind, headers={}, pool=pool, events=sink
            )
            async with transport as (read, write, _), ClientSession(read, write) as client:
                await client.initialize()
                tools = await client.list_tools()
                result = await client.call_tool("echo", {"message": "hello sailor"})
    assert "echo" in [tool.name for tool in tools.tools]
    assert result.content[0].model_dump()["text"] == "Echo: hello sailor"


async def test_a_restarted_server_everything_gets_a_new_session() -> None:
    # It answers the old session id with 400 "Bad Request: No valid session ID provided", not 404.
    port = _free_port()
    sink = RecordingSink()
    server = ServerConfig(name="ev", type="http", url=f"http://127.0.0.1:{port}/mcp", lifecycle="per_episode")
    with anyio.fail_after(GUARD):
        async with AsyncExitStack() as first_run:
            await first_run.enter_async_context(everything("http", port))
            async with open_toolbox([server], McpSettings(), events=sink) as toolbox:
                first = await toolbox.call_tool("ev.echo", {"message": "one"})
                await first_run.aclose()  # stopped; then the restart
                async with everything("http", port):
                    second = await toolbox.call_tool("ev.echo", {"message": "two"})
    assert [first.content, second.content] == ["Echo: one", "Echo: two"]
    assert ("mcp_session_renewed", {"server": "ev"}) in sink.events
