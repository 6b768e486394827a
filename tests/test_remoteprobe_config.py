"""mcp_config.json: a remote server's header that uses a variable which is set but empty."""

from __future__ import annotations

import pytest

from zorkmcp.config import McpConfig
from zorkmcp.errors import ConfigError


def _entry(headers: dict[str, str]) -> dict[str, object]:
    return {"mcpServers": {"search": {"url": "https://mcp.example.com/mcp", "headers": headers}}}


@pytest.mark.parametrize(
    ("value", "reference"),
    [
        ("Bearer ${MY_TOKEN}", "${MY_TOKEN}"),
        ("${env:MY_TOKEN}", "${env:MY_TOKEN}"),
        ("${MY_TOKEN}", "${MY_TOKEN}"),
    ],
)
def test_a_header_whose_variable_is_empty_names_the_variable(value: str, reference: str) -> None:
    with pytest.raises(ConfigError) as raised:
        McpConfig.from_dict(_entry({"Authorization": value}), environ={"MY_TOKEN": ""})
    assert str(raised.value) == (
        f"$.mcpServers.search.headers.Authorization uses {reference}, but the environment variable MY_TOKEN "
        "is empty (set it, or drop the header) (MCP config)"
    )


def test_an_empty_default_written_out_and_a_set_variable_are_taken() -> None:
    config = McpConfig.from_dict(
        _entry({"X-Team": "${TEAM:-}", "Authorization": "Bearer ${MY_TOKEN}"}),
        environ={"MY_TOKEN": "t-1", "TEAM": ""},
    )
    assert dict(config.servers[0].headers) == {"X-Team": "", "Authorization": "Bearer t-1"}


def test_a_disabled_server_with_an_empty_variable_is_no_problem() -> None:
    headers = {"Authorization": "Bearer ${MY_TOKEN}"}
    data = {
        "mcpServers": {
            "search": {"url": "https://mcp.example.com/mcp", "disabled": True, "headers": headers},
            "docs": {"url": "https://docs.example.com/mcp"},
        }
    }
    config = McpConfig.from_dict(data, environ={"MY_TOKEN": ""})
    assert [server.name for server in config.enabled_servers] == ["docs"]
