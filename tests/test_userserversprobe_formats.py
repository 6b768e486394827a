"""The MCP configuration files users already have, pointed at as they are.

Claude Desktop's ``claude_desktop_config.json`` keeps its ``preferences`` beside ``mcpServers``, Gemini
CLI's ``settings.json`` its ``theme``, ``model`` and ``tools``: those files are read, their
application's keys left alone, while a slip for ``mcpServers`` or ``inputs`` is still named. Gemini
CLI's ``mcp.allowed`` / ``mcp.excluded`` choose which servers start, and Zed keeps its servers under
``context_servers``: each is one line saying what to write. A command written for Windows (``cmd /c
npx``, ``npx.cmd``, ``C:\\...``) is named as such on another system, with the line to write instead.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING, Any

import pytest

from zorkmcp.cli import main
from zorkmcp.config import McpConfig
from zorkmcp.errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path

THINK = {"command": "python3", "args": ["-m", "zorkmcp.servers.thinking"]}


def write(tmp_path: Path, data: object, name: str = "mcp.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def refused(data: object, path: Path) -> str:
    with pytest.raises(ConfigError) as caught:
        McpConfig.from_dict(data, source=path, environ={})
    return str(caught.value)


# --- other applications' settings beside the servers ----------------------------------------------


def test_claude_desktop_s_file_with_its_preferences_is_read(tmp_path: Path) -> None:
    # Before: "the top level has unknown keys 'globalShortcut', 'preferences' (allowed: mcpServers,
    # servers, inputs)".
    path = write(
        tmp_path,
        {
            "globalShortcut": "Ctrl+Space",
            "mcpServers": {"think": THINK},
            "preferences": {"menuBarEnabled": False, "quickEntryShortcut": "off"},
        },
        "claude_desktop_config.json",
    )
    config = McpConfig.from_file(path, environ={})
    assert [server.name for server in config.servers] == ["think"]
    assert config.servers[0].command == sys.executable


def test_gemini_cli_s_settings_file_is_read(tmp_path: Path) -> None:
    # Gemini CLI's own top-level "tools" (its sandbox and core tools) is not a server's "tools".
    path = write(
        tmp_path,
        {
            "theme": "Default",
            "selectedAuthType": "gemini-api-key",
            "model": {"name": "gemini-2.5-pro"},
            "tools": {"sandbox": False, "core": ["ReadFileTool"]},
            "mcp": {},
            "mcpServers": {"think": {**THINK, "includeTools": ["think"], "trust": True, "timeout": 30}},
        },
        "settings.json",
    )
    config = McpConfig.from_file(path, environ={})
    assert [(s.name, s.tools, s.timeout) for s in config.servers] == [("think", ("think",), 30)]


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("input", "the top level has unknown key 'input' (allowed: mcpServers, servers, inputs)"),
        ("server", "the top level has unknown key 'server' (allowed: mcpServers, servers, inputs)"),
        ("mcp_servers", "the top level has unknown key 'mcp_servers' (allowed: mcpServers, servers, inputs)"),
        ("Inputs", "the top level has unknown key 'Inputs' (allowed: mcpServers, servers, inputs)"),
    ],
)
def test_a_slip_for_a_key_of_the_file_is_still_named(tmp_path: Path, key: str, expected: str) -> None:
    path = tmp_path / "mcp.json"
    assert refused({"mcpServers": {"think": THINK}, key: {}}, path) == f"{expected} ({path})"


def test_a_file_without_servers_names_its_keys(tmp_path: Path) -> None:
    path = tmp_path / "mcp.json"
    assert refused({"preferences": {}}, path) == (
        f"the top level has unknown key 'preferences' (allowed: mcpServers, servers, inputs) ({path})"
    )


@pytest.mark.parametrize(
    ("mcp", "expected"),
    [
        (
            {"excluded": ["think"]},
            "$.mcp.excluded is Gemini CLI's: the servers it does not start, which zorkmcp does not read (it "
            'would start them): set "disabled": true on them in mcpServers, and remove $.mcp.excluded',
        ),
        (
            {"allowed": ["think"]},
            "$.mcp.allowed is Gemini CLI's: the only servers it starts, which zorkmcp does not read (it "
            'would start the others too): set "disabled": true on the others in mcpServers, and remove '
            "$.mcp.allowed",
        ),
        (
            {"serverCommand": "python3 server.py"},
            "$.mcp.serverCommand is Gemini CLI's: the command of one more server, which zorkmcp does not "
            "read: give that server an entry in mcpServers, and remove $.mcp.serverCommand",
        ),
    ],
)
def test_gemini_cli_s_choice_of_servers_is_refused_with_what_to_write(
    tmp_path: Path, mcp: dict[str, Any], expected: str
) -> None:
    # Left out with the file's other settings, "excluded" would start the server its user turned off.
    path = tmp_path / "settings.json"
    assert refused({"mcp": mcp, "mcpServers": {"think": THINK}}, path) == f"{expected} ({path})"


def test_zed_s_context_servers_say_where_the_servers_go(tmp_path: Path) -> None:
    # Before: "the top level has unknown keys 'context_servers', 'theme' (allowed: ...)".
    path = tmp_path / "settings.json"
    data = {
        "theme": "One Dark",
        "context_servers": {"think": {"source": "custom", "enabled": True, **THINK, "env": {}}},
    }
    assert refused(data, path) == (
        "$.context_servers holds the servers as Zed's settings.json does; an mcp_config.json has them "
        'under "mcpServers" (the same command, args and env; for Zed\'s older "command": {"path": ..., '
        '"args": [...]}, the path is the command): move them there, without Zed\'s "source" and '
        f'"settings", and "enabled": false as "disabled": true ({path})'
    )


# --- commands written for Windows ---------------------------------------------------------------

windows_only = pytest.mark.skipif(sys.platform == "win32", reason="these are this system's own commands")


@windows_only
@pytest.mark.parametrize(
    ("server", "expected"),
    [
        (
            {"command": "cmd", "args": ["/c", "npx", "-y", "@modelcontextprotocol/server-everything"]},
            "$.mcpServers.s.command 'cmd' is Windows' command interpreter (cmd /c runs the server there), "
            'which {system} does not have: start the program itself, "command": "npx", "args": ["-y", '
            '"@modelcontextprotocol/server-everything"]',
        ),
        (
            {"command": "C:\\Windows\\System32\\cmd.exe", "args": ["/C", "npx -y pkg"]},
            "$.mcpServers.s.command 'C:\\\\Windows\\\\System32\\\\cmd.exe' is Windows' command interpreter "
            "(cmd /c runs the server there), which {system} does not have: start the program itself, "
            '"command": "npx", "args": ["-y", "pkg"]',
        ),
        (
            {"command": "cmd", "args": ["/c"]},
            "$.mcpServers.s.command 'cmd' is Windows' command interpreter, which {system} does not have: "
            "give the program that starts the server as command, and its arguments as args",
        ),
        (
            {"command": "npx.cmd", "args": ["-y", "pkg"]},
            "$.mcpServers.s.command 'npx.cmd' is the program's Windows name: on {system} write "
            '"command": "npx"',
        ),
        (
            # Before: its spaces made it "a whole command line", split into "C:Program" and
            # "Filesnodejsnpx.cmd".
            {"command": "C:\\Program Files\\nodejs\\npx.cmd", "args": ["-y", "pkg"]},
            "$.mcpServers.s.command 'C:\\\\Program Files\\\\nodejs\\\\npx.cmd' is a Windows path, which "
            '{system} does not have: give the program\'s name ("npx" if it is on PATH here) or its path '
            "on this system",
        ),
        (
            {**THINK, "args": [*THINK["args"], "C:\\Users\\me\\Desktop"]},
            "$.mcpServers.s.args[2] 'C:\\\\Users\\\\me\\\\Desktop' is a Windows path, which {system} "
            "does not have: give its path on this system",
        ),
    ],
)
def test_a_windows_command_is_named_with_what_to_write(
    tmp_path: Path, server: dict[str, Any], expected: str
) -> None:
    # Before: "'cmd' was not found on PATH", which says nothing of why.
    path = tmp_path / "claude_desktop_config.json"
    server = {**server, "env": {"PATH": str(tmp_path)}} if server["command"] != "python3" else server
    system = {"darwin": "macOS", "linux": "Linux"}.get(sys.platform, sys.platform)
    assert refused({"mcpServers": {"s": server}}, path) == f"{expected.format(system=system)} ({path})"


@windows_only
def test_a_cmd_program_this_system_has_is_started_as_any_other(tmp_path: Path) -> None:
    program = tmp_path / "cmd"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    server = {"command": "cmd", "args": ["/c", "x"], "env": {"PATH": str(tmp_path)}}
    config = McpConfig.from_dict({"mcpServers": {"s": server}}, source=tmp_path / "m.json", environ={})
    assert config.servers[0].command == "cmd"


# --- end to end ---------------------------------------------------------------------------------


def test_zorkmcp_tools_lists_the_tools_of_a_claude_desktop_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write(
        tmp_path,
        {"globalShortcut": "", "preferences": {"sidebarMode": "chat"}, "mcpServers": {"think": THINK}},
        "claude_desktop_config.json",
    )
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.zorkgpt.mcp]\nenabled = false\n")
    code = main(["tools", "--json", "--config", str(config), "--pyproject", str(pyproject)])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    assert [tool["name"] for tool in json.loads(out)] == ["think.think"]
