"""Remote servers in ``mcp_config.json``: the forms Claude Code, VS Code and Cursor users paste."""

from __future__ import annotations

import pytest

from zorkmcp.config import McpConfig, ServerConfig, remote_kind

TOKEN = "tok-SECRET-1234"


def parse(data: object) -> tuple[ServerConfig, ...]:
    return McpConfig.from_dict(data, environ={"MY_TOKEN": TOKEN}).servers


def test_claude_code_form_with_a_bearer_token_from_the_environment() -> None:
    (server,) = parse(
        {
            "mcpServers": {
                "docs": {
                    "type": "http",
                    "url": "https://mcp.example.com/mcp",
                    "headers": {"Authorization": "Bearer ${MY_TOKEN}", "X-Team": "${TEAM:-zork}"},
                    "timeout": 12,
                    "lifecycle": "per_episode",
                    "tools": ["search"],
                }
            }
        }
    )
    assert (server.type, server.url, server.remote) == ("http", "https://mcp.example.com/mcp", True)
    assert dict(server.headers) == {"Authorization": f"Bearer {TOKEN}", "X-Team": "zork"}
    assert (server.timeout, server.lifecycle, server.tools, server.command) == (
        12,
        "per_episode",
        ("search",),
        None,
    )
    assert TOKEN not in repr(server)  # header values never appear in a repr


@pytest.mark.parametrize(
    ("entry", "kind"),
    [
        ({"type": "sse", "url": "http://127.0.0.1:3001/sse"}, "sse"),  # VS Code
        ({"type": "streamableHttp", "url": "http://127.0.0.1:3001/mcp"}, "http"),
        ({"type": "streamable-http", "url": "http://127.0.0.1:3001/mcp"}, "http"),
        ({"url": "http://127.0.0.1:3001/mcp"}, "http"),  # Cursor: a bare url
        ({"url": "http://127.0.0.1:3001/sse/"}, "sse"),  # ... SSE when the path ends in /sse
    ],
)
def test_every_pasted_form_names_its_transport(entry: dict[str, object], kind: str) -> None:
    (server,) = parse({"servers": {"remote": entry}})
    assert server.type == kind
    assert server.remote


def test_a_stdio_server_is_not_remote() -> None:
    (server,) = parse(
        {"mcpServers": {"t": {"command": "python3", "args": ["-m", "zorkmcp.servers.thinking"]}}}
    )
    assert (server.type, server.remote, server.url, dict(server.headers)) == ("stdio", False, None, {})


def test_remote_kind() -> None:
    assert remote_kind("https://h/mcp") == "http"
    assert remote_kind("https://h/v1/sse") == "sse"
    assert remote_kind("https://h/sse", "http") == "http"  # the type wins
    with pytest.raises(ValueError, match="remote server type must be one of"):
        remote_kind("https://h/mcp", "websocket")
