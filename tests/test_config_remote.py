"""Remote servers in ``mcp_config.json``: the forms Claude Code, VS Code and Cursor users paste."""

from __future__ import annotations

import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zorkmcp.config import McpConfig, ServerConfig, remote_kind
from zorkmcp.errors import ConfigError

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


# --- URLs a remote server cannot be reached at ---------------------------------------------------

PORT_RULE = (
    "a port must be a number from 1 to 65535 (correct it, or leave it out for the default: 80 for "
    "http://, 443 for https://)"
)


@pytest.mark.parametrize(
    ("port", "message"),
    [
        (
            "99999",
            f"$.mcpServers.r.url has port 99999: {PORT_RULE} (MCP config)",
        ),
        (
            "abc",
            f"$.mcpServers.r.url has a port that is not a number: {PORT_RULE} (MCP config)",
        ),
    ],
)
def test_a_url_is_checked_after_expansion_and_shows_no_secret(port: str, message: str) -> None:
    entry = {
        "url": "https://bot:${PASSWORD}@mcp.example.com:${PORT}/mcp?key=${KEY}",
        "headers": {"Authorization": "Bearer ${MY_TOKEN}"},
    }
    environ = {"PASSWORD": "pw-hidden", "PORT": "8443", "KEY": "key-hidden", "MY_TOKEN": TOKEN}
    (server,) = McpConfig.from_dict({"mcpServers": {"r": entry}}, environ=environ).servers
    assert server.url == "https://bot:pw-hidden@mcp.example.com:8443/mcp?key=key-hidden"
    with pytest.raises(ConfigError) as excinfo:
        McpConfig.from_dict({"mcpServers": {"r": entry}}, environ={**environ, "PORT": port})
    assert str(excinfo.value) == message


PASSWORD, QUERY = "pw-Zq7", "q-Zq7"

_urls = st.builds(
    lambda scheme, user, host, port, path, query: f"{scheme}{user}{host}{port}{path}{query}",
    st.sampled_from(["http://", "https://", "HTTP://", "ftp://", "http:", "", "http//"]),
    st.sampled_from(["", f"bot:{PASSWORD}@", "bot@"]),
    st.sampled_from(
        ["example.com", "127.0.0.1", "[::1]", "", "[::1", "10.0.0.256", "exa mple.com", "[::1]x"]
    ),
    st.one_of(
        st.just(""),
        st.integers(min_value=-5, max_value=200_000).map(lambda n: f":{n}"),
        st.text(alphabet="0123456789+-abc:٣ ", max_size=8).map(lambda t: f":{t}"),
    ),
    st.sampled_from(["", "/", "/mcp", "/sse", "/m\tcp", "/a b"]),
    st.sampled_from(["", f"?key={QUERY}", f"#{QUERY}"]),
)


@settings(max_examples=300)
@given(url=st.one_of(_urls, st.text(alphabet=st.characters(exclude_characters="$"), max_size=40)))
def test_every_url_is_refused_in_one_line_or_usable(url: str) -> None:
    """Property: a remote URL either loads and the HTTP client can send to it (http/https, a host, a
    port from 1 to 65535), or is a one-line ConfigError that quotes neither user info nor query."""
    try:
        (server,) = McpConfig.from_dict({"servers": {"r": {"url": url}}}, environ={}).servers
    except ConfigError as exc:
        text = str(exc)
        assert "\n" not in text
        assert text.startswith("$.servers.r.url ")
        assert PASSWORD not in text
        assert QUERY not in text
        return
    parsed = httpx2.URL(server.url or "")
    assert parsed.scheme in ("http", "https")
    assert parsed.host
    assert parsed.port is None or 1 <= parsed.port <= 65535
