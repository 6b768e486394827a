"""Remote servers through the engine's own entry points: ``open_server_session``, ``zorkmcp tools/call``.

The server is real (tests/servers/remote.py, the MCP SDK's server under uvicorn on 127.0.0.1, in a
thread). Real clock, as in tests/test_remote.py: httpx's timeouts are deadlines too; every wait is
bounded by ``fail_after`` only as a hang guard.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import anyio
import pytest
from servers.helpers import RecordingSink
from servers.remote import SDK_HTTP_WARNINGS, TOKEN, RemoteTestServer, serve_remote

from zorkmcp._cli_mcp import cmd_call, cmd_tools
from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.errors import MCPServerStartupError
from zorkmcp.mcp import McpManager, open_server_session
from zorkmcp.mcp._remote import open_remote_pool

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = SDK_HTTP_WARNINGS

GUARD = 20
ENDPOINT = {"http": "/auth/mcp", "sse": "/auth/sse"}


@pytest.fixture(scope="module")
def remote() -> Iterator[RemoteTestServer]:
    with serve_remote() as server:
        yield server


@pytest.mark.parametrize("kind", ["http", "sse"])
async def test_open_server_session_starts_a_remote_server(remote: RemoteTestServer, kind: str) -> None:
    server = ServerConfig(
        name="web",
        type=kind,  # type: ignore[arg-type]
        url=remote.url(ENDPOINT[kind]),
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    sink = RecordingSink()
    with anyio.fail_after(GUARD):
        async with open_server_session(server, McpSettings(), events=sink) as session:
            assert [tool.name for tool in session.tools][:2] == ["echo", "stall"]
            assert session.process is None
            assert session.alive
            assert session.notes is not None
            result = await session.client.call_tool("progress", {"steps": 2})
            assert result.content[0].model_dump()["text"] == "done"
    kinds = [event for event, _ in sink.events]
    assert "mcp_server_started" in kinds
    assert "mcp_server_stopped" in kinds
    assert "mcp_server_log" in kinds  # the ClientSession has the notifications' callbacks
    assert TOKEN not in repr(sink.events) + repr(sink.lines)


async def test_a_refused_token_is_a_startup_error_naming_the_header(remote: RemoteTestServer) -> None:
    url = remote.url("/auth/mcp")
    server = ServerConfig(name="web", type="http", url=url, headers={"Authorization": "Bearer wrong-secret"})
    with anyio.fail_after(GUARD), pytest.raises(MCPServerStartupError) as caught:
        async with open_server_session(server, McpSettings()):
            raise AssertionError("the server started")
    message = str(caught.value)
    assert message == (
        "Failed to start MCP server 'web': the server refused the credentials (HTTP 401 Unauthorized); "
        f"headers sent: Authorization (check their values)\nURL: {url}"
    )
    assert caught.value.server == "web"


# --- zorkmcp tools / call -------------------------------------------------------------------------


def _config(tmp_path: Path, remote: RemoteTestServer, kind: str) -> Path:
    config = {
        "mcpServers": {
            "web": {
                "type": kind,
                "url": remote.url(ENDPOINT[kind]),
                "headers": {"Authorization": "Bearer ${WEB_TOKEN}"},
            }
        }
    }
    path = tmp_path / "mcp_config.json"
    path.write_text(json.dumps(config))
    return path


@pytest.fixture
def pyproject(tmp_path: Path) -> Path:
    path = tmp_path / "pyproject.toml"
    path.write_text("[tool.zorkgpt.mcp]\nenabled = false\nconfig_file = 'mcp_config.json'\n")
    return path


@pytest.mark.parametrize("kind", ["http", "sse"])
def test_tools_and_call_reach_a_remote_server(
    tmp_path: Path,
    pyproject: Path,
    remote: RemoteTestServer,
    kind: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WEB_TOKEN", TOKEN)
    config = _config(tmp_path, remote, kind)
    assert cmd_tools(config, pyproject, as_json=True) == 0
    tools = json.loads(capsys.readouterr().out)
    names = [tool["name"] for tool in tools]
    assert names[:4] == ["web.echo", "web.stall", "web.progress", "web.change_tools"]
    assert cmd_call("web.echo", '{"text": "west of house"}', config, pyproject, None) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)["content"] == "west of house"
    assert TOKEN not in out.out + out.err


def test_a_refused_token_exits_1_naming_server_url_and_header(
    tmp_path: Path,
    pyproject: Path,
    remote: RemoteTestServer,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WEB_TOKEN", "not-the-token-4711")
    config = _config(tmp_path, remote, "http")
    assert cmd_tools(config, pyproject, as_json=False) == 1
    out = capsys.readouterr()
    assert "'web'" in out.err
    assert remote.url("/auth/mcp") in out.err
    assert "(HTTP 401 Unauthorized); headers sent: Authorization" in out.err
    assert "not-the-token-4711" not in out.out + out.err


async def test_sessions_borrow_a_pool_and_leave_it_open(remote: RemoteTestServer) -> None:
    server = ServerConfig(name="web", type="http", url=remote.url("/mcp"))
    with anyio.fail_after(GUARD):
        async with open_remote_pool() as pool:
            for text in ("one", "two"):  # per_turn: a fresh MCP session each turn, one pool
                async with open_server_session(server, McpSettings(), pool=pool) as session:
                    result = await session.client.call_tool("echo", {"text": text})
                    assert result.content[0].model_dump()["text"] == text


async def test_a_refused_remote_server_follows_the_start_up_rule(remote: RemoteTestServer) -> None:
    server = ServerConfig(name="web", type="http", url=remote.url("/forbidden/mcp"))
    sink = RecordingSink()
    manager = McpManager(McpConfig(servers=(server,)), McpSettings(), events=sink)
    with anyio.fail_after(GUARD):
        with pytest.raises(MCPServerStartupError):  # the first turn fails fast
            async with manager.open_turn():
                raise AssertionError("the server started")
        async with manager.open_turn() as toolbox:  # a later turn: retried once, then disabled
            assert toolbox.tools == ()
    assert manager.is_server_disabled("web")
    disabled = [fields for event, fields in sink.events if event == "mcp_disabled_fallback"]
    assert [fields["server"] for fields in disabled] == ["web"]
    assert "HTTP 403 Forbidden" in disabled[0]["error"]


async def test_a_per_episode_remote_server_runs_on_the_episode(remote: RemoteTestServer) -> None:
    server = ServerConfig(name="web", type="http", url=remote.url("/mcp"), lifecycle="per_episode")
    manager = McpManager(McpConfig(servers=(server,)), McpSettings())
    with anyio.fail_after(GUARD):
        async with manager.open_episode() as episode:
            for text in ("one", "two"):
                async with manager.open_turn(episode) as toolbox:
                    result = await toolbox.call_tool("web.echo", {"text": text})
                    assert result.content == text


async def test_a_prewarmed_per_turn_remote_server_uses_the_episodes_pool(remote: RemoteTestServer) -> None:
    # One pool per remote server for the episode: a fresh MCP session every turn, yet a keep-alive
    # connection of the pool serves several of them (a pool per session would never share one).
    server = ServerConfig(name="web", type="http", url=remote.url("/json/mcp"))  # per_turn, prewarmed
    manager = McpManager(McpConfig(servers=(server,)), McpSettings())
    before = set(remote.connections)
    with anyio.fail_after(GUARD):
        async with manager.open_episode(prewarm=True) as episode:
            for text in ("one", "two", "three"):
                async with manager.open_turn(episode) as toolbox:
                    result = await toolbox.call_tool("web.echo", {"text": text})
                    assert result.content == text
    used = [ids for address, ids in remote.connections.items() if address not in before]
    assert len(set().union(*used)) in (3, 4)  # three turns, and the spare for a fourth if it got going
    assert max(len(ids) for ids in used) >= 2
