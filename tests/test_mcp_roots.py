"""MCP roots: a server's ``"roots"`` in ``mcp_config.json`` is the client's ``roots`` capability and its
``roots/list`` answer; a server without it is told of no capability, as before.

Real servers only: the SDK's own server (``tests/servers/sampling.py``) in process and as a stdio
process, and ``@modelcontextprotocol/server-everything`` on Node.js (skipped without it).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from node_support import EVERYTHING, NODE, needs_node_package
from servers.helpers import RecordingSink

from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.errors import ConfigError
from zorkmcp.mcp import McpManager, open_toolbox

SAMPLER = Path(__file__).with_name("servers") / "sampling.py"


def inprocess(name: str = "sampler", **keys: Any) -> dict[str, Any]:
    """An ``mcp_config.json`` entry of the SDK server of ``tests/servers/sampling.py``, in process."""
    return {"type": "inprocess", "module": "servers.sampling:create_server", **keys}


def write_config(folder: Path, servers: dict[str, Any]) -> Path:
    path = folder / "mcp_config.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


async def test_a_server_lists_the_roots_of_its_entry_as_file_uris(tmp_path: Path) -> None:
    config = write_config(
        tmp_path,
        {
            "sampler": inprocess(
                roots=["notes", "my notes/", str(tmp_path / "abs"), "file:///srv/game%20data"]
            )
        },
    )
    manager = McpManager(McpConfig.from_file(config), McpSettings(enabled=True))
    async with manager.open_turn() as toolbox:
        listed = await toolbox.call_tool("sampler.roots", {})
        declared = await toolbox.call_tool("sampler.capabilities", {})
    assert listed.content == [
        {"uri": f"file://{tmp_path}/notes", "name": "notes"},
        {"uri": f"file://{tmp_path}/my%20notes", "name": "my notes"},
        {"uri": f"file://{tmp_path}/abs", "name": "abs"},
        {"uri": "file:///srv/game%20data", "name": "game data"},
    ]
    assert declared.content == {"roots": {"listChanged": True}}


async def test_roots_expand_variables_and_the_home_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    config = write_config(
        tmp_path, {"sampler": inprocess(roots=["~/zork", "${workspaceFolder}", "${DATA:-/data}"])}
    )
    manager = McpManager(McpConfig.from_file(config, environ={}), McpSettings(enabled=True))
    async with manager.open_turn() as toolbox:
        listed = await toolbox.call_tool("sampler.roots", {})
    assert listed.content == [
        {"uri": f"file://{tmp_path}/home/zork", "name": "zork"},
        {"uri": f"file://{tmp_path}", "name": tmp_path.name},
        {"uri": "file:///data", "name": "data"},
    ]


async def test_an_empty_list_declares_roots_and_lists_none_over_stdio() -> None:
    server = ServerConfig(name="sampler", command=sys.executable, args=(str(SAMPLER),), roots=())
    async with open_toolbox([server], McpSettings()) as toolbox:
        listed = await toolbox.call_tool("sampler.roots", {})
        declared = await toolbox.call_tool("sampler.capabilities", {})
    assert (listed.content, declared.content) == ([], {"roots": {"listChanged": True}})


async def test_only_the_servers_given_the_keys_are_told_of_capabilities(tmp_path: Path) -> None:
    events = RecordingSink()
    config = write_config(
        tmp_path,
        {
            "plain": inprocess(),
            "rooted": inprocess(roots=["/srv"]),
            "sampled": inprocess(sampling=True, roots=[]),
        },
    )
    # No model is given: the server that asks for sampling is not told the client can sample.
    manager = McpManager(McpConfig.from_file(config), McpSettings(enabled=True), events=events)
    async with manager.open_turn() as toolbox:
        plain = await toolbox.call_tool("plain.capabilities", {})
        refused = await toolbox.call_tool("plain.roots", {})
        rooted = await toolbox.call_tool("rooted.capabilities", {})
        sampled = await toolbox.call_tool("sampled.capabilities", {})
    assert plain.content == {}
    assert refused.content == {"error": "List roots not supported", "code": -32600}
    assert rooted.content == {"roots": {"listChanged": True}}
    assert sampled.content == {"roots": {"listChanged": True}}
    assert [line for line in events.lines if line[0] == "WARNING"] == [
        (
            "WARNING",
            "MCP server(s) 'sampled' ask for sampling (\"sampling\": true), but the MCP layer was given no "
            "model: sampling is off (the capability is not declared, so such a server may offer fewer tools)",
        )
    ]


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"roots": "/srv"}, "$.mcpServers.s.roots must be an array, got '/srv' (string)"),
        ({"roots": ["/srv", 7]}, "$.mcpServers.s.roots[1] must be a string, got 7 (integer)"),
        (
            {"roots": [""]},
            "$.mcpServers.s.roots[0] must not be empty: give a directory path or a file:// URI",
        ),
        (
            {"roots": ["https://example.com/repo"]},
            "$.mcpServers.s.roots[0] must be a directory path or a file:// URI, got "
            "'https://example.com/repo' (string)",
        ),
        (
            {"roots": ["file://srv/data"]},
            "$.mcpServers.s.roots[0] must be the file:// URI of an absolute path (file:///home/me/notes), "
            "got 'file://srv/data' (string)",
        ),
        ({"sampling": "yes"}, "$.mcpServers.s.sampling must be true or false, got 'yes' (string)"),
        ({"sampling": 1}, "$.mcpServers.s.sampling must be true or false, got 1 (integer)"),
    ],
)
def test_a_bad_roots_or_sampling_is_one_line_naming_file_server_and_key(
    tmp_path: Path, entry: dict[str, Any], message: str
) -> None:
    config = write_config(tmp_path, {"s": {"command": "python3", **entry}})
    with pytest.raises(ConfigError) as caught:
        McpConfig.from_file(config)
    assert str(caught.value) == f"{message} ({config})"


def test_server_config_built_in_python_checks_and_keeps_roots_as_uris(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    server = ServerConfig(name="s", command="x", roots=["maps", "file:///srv/a b"], sampling=True)
    assert server.roots == (f"file://{tmp_path}/maps", "file:///srv/a%20b")
    assert server == ServerConfig(name="s", command="x", roots=list(server.roots), sampling=True)
    assert server != ServerConfig(name="s", command="x", roots=server.roots)
    with pytest.raises(
        ConfigError, match=r"^roots\[0\] must be a directory path or a file:// URI, got 's3://b/k'"
    ):
        ServerConfig(name="s", command="x", roots=["s3://b/k"])
    with pytest.raises(ConfigError, match=r"^sampling must be True or False, got 'yes' \(string\)$"):
        ServerConfig(name="s", command="x", sampling="yes")  # type: ignore[arg-type]


@needs_node_package(EVERYTHING)
async def test_server_everything_offers_get_roots_list_and_lists_the_roots(tmp_path: Path) -> None:
    assert NODE is not None
    plain = ServerConfig(name="plain", command=NODE, args=(str(EVERYTHING), "stdio"))
    rooted = ServerConfig(
        name="everything", command=NODE, args=(str(EVERYTHING), "stdio"), roots=(str(tmp_path / "notes"),)
    )
    async with open_toolbox([plain, rooted], McpSettings()) as toolbox:
        await toolbox.refresh_if_changed()  # it adds the tools once it knows the client's capabilities
        offered = {info.name for info in toolbox.tools}
        listed = await toolbox.call_tool("everything.get-roots-list", {})
    assert "plain.get-roots-list" not in offered
    assert "everything.get-roots-list" in offered
    assert listed.content == (
        f"Current MCP Roots (1 total):\n\n1. notes\n   URI: file://{tmp_path}/notes\n\n"
        "Note: This server demonstrates the roots protocol capability but doesn't actually access files. "
        "The roots are provided by the MCP client and can be used by servers that need file system access."
    )
