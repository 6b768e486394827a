"""``mcp_config.json`` as other tools write theirs: ``${...}`` forms zorkmcp does not expand, a whole command
line in ``command``, Continue's and VS Code's settings shapes, YAML or UTF-16 where JSON goes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from play_support import offline_env

from zorkmcp.config import McpConfig
from zorkmcp.errors import ConfigError

THINK = ["-m", "zorkmcp.servers.thinking"]


def load(data: object, *, environ: dict[str, str] | None = None, check_commands: bool = False) -> McpConfig:
    return McpConfig.from_dict(
        data, source=Path("/cfg/mcp_config.json"), environ={} if environ is None else environ,
        check_commands=check_commands,
    )  # fmt: skip


def refused(data: object, **kwargs: Any) -> str:
    with pytest.raises(ConfigError) as caught:
        load(data, **kwargs)
    return str(caught.value)


def with_env(value: str) -> dict[str, Any]:
    return {"mcpServers": {"t": {"command": "python3", "args": THINK, "env": {"A": value}}}}


# --- ${...} --------------------------------------------------------------------------------------


def test_env_with_a_default_is_expanded() -> None:
    # Before, "${env:NOPE:-d}" reached the server as those 14 characters.
    assert load(with_env("${env:NOPE:-fallback}")).servers[0].env == {"A": "fallback"}
    assert load(with_env("${env:NOPE:-}x")).servers[0].env == {"A": "x"}
    assert load(with_env("${env:HOME:-x}"), environ={"HOME": "/h"}).servers[0].env == {"A": "/h"}
    assert load(with_env("${env:HOME:-x}"), environ={"HOME": ""}).servers[0].env == {"A": "x"}


def test_workspace_root_is_vs_code_s_older_name_of_the_workspace_folder() -> None:
    # Before: "uses ${workspaceRoot}, but the environment variable workspaceRoot is not set".
    config = McpConfig.from_dict(
        with_env("${workspaceRoot}/data"), source=Path("/proj/.vscode/mcp.json"), environ={},
        check_commands=False,
    )  # fmt: skip
    assert config.servers[0].env == {"A": "/proj/data"}


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (
            "${NOPE-d}",
            "a shell form zorkmcp does not expand (only ${NOPE:-default} has a default there): write ${NOPE} "
            "or ${NOPE:-default}",
        ),
        (
            "${NOPE:=d}",
            "a shell form zorkmcp does not expand (only ${NOPE:-default} has a default there): write ${NOPE} "
            "or ${NOPE:-default}",
        ),
        ("${ HOME }", "with spaces inside the braces, which no tool allows: write ${HOME}"),
        ("${HOME", "which has no closing }: write ${HOME}"),
        (
            "${config:python.defaultInterpreterPath}",
            "VS Code's ${config:...}, which zorkmcp (no editor) cannot read: write the value itself",
        ),
        (
            "${command:pickProcess}",
            "VS Code's ${command:...}, which zorkmcp (no editor) cannot read: write the value itself",
        ),
        (
            "${workspaceFolder:api}",
            "VS Code's multi-root form; zorkmcp has one workspace folder: write ${workspaceFolder}",
        ),
        (
            "${fileDirname}",
            "VS Code's variable for the file open in its editor, which zorkmcp (no editor) does not have: "
            "write the value itself",
        ),
        (
            "${1}",
            "which zorkmcp does not expand (it expands ${VAR}, ${VAR:-default}, ${env:VAR}, ${input:ID} and "
            "${workspaceFolder}, ${userHome} and the like): write the value itself",
        ),
    ],
)
def test_a_reference_zorkmcp_does_not_expand_is_an_error(value: str, problem: str) -> None:
    # Before, each reached the server as written (a literal "${config:...}" as its variable's value).
    assert refused(with_env(value), environ={"HOME": "/h"}) == (
        f"$.mcpServers.t.env.A uses {value}, {problem} (/cfg/mcp_config.json)"
    )


def test_in_args_too_and_a_disabled_server_keeps_them_as_written() -> None:
    data = {
        "mcpServers": {
            "t": {"command": "python3", "args": [*THINK, "--x=${NOPE-d}"]},
            "off": {"command": "python3", "args": ["${config:x}"], "disabled": True},
        }
    }
    assert refused(data) == (
        "$.mcpServers.t.args[2] uses ${NOPE-d}, a shell form zorkmcp does not expand (only ${NOPE:-default} "
        "has a default there): write ${NOPE} or ${NOPE:-default} (/cfg/mcp_config.json)"
    )
    data["mcpServers"]["t"]["args"] = THINK
    assert load(data).servers[1].args == ("${config:x}",)


# --- a whole command line in "command" ------------------------------------------------------------


def test_a_command_line_in_command_says_how_to_split_it() -> None:
    # Before: "... is not an executable file" (the line holds a "/"), or "was not found on PATH".
    data = {"mcpServers": {"t": {"command": f"{sys.executable} -m zorkmcp.servers.thinking", "args": ["-v"]}}}
    assert refused(data, check_commands=True) == (
        f"$.mcpServers.t.command '{sys.executable} -m zorkmcp.servers.thinking' holds the program's "
        "arguments; the server is started without a shell, so the program goes in command and each "
        f'argument in args: "command": {json.dumps(sys.executable)}, "args": ["-m", '
        '"zorkmcp.servers.thinking", "-v"] (/cfg/mcp_config.json)'
    )


def test_a_command_line_whose_program_is_missing_says_that_too() -> None:
    data = {"mcpServers": {"t": {"command": "no-such-zorkmcp-program --port 8080"}}}
    assert refused(data, check_commands=True) == (
        "$.mcpServers.t.command 'no-such-zorkmcp-program --port 8080' holds the program's arguments; the "
        "server is started without a shell, so the program goes in command and each argument in args: "
        '"command": "no-such-zorkmcp-program", "args": ["--port", "8080"] (\'no-such-zorkmcp-program\' is '
        "not on PATH either) (/cfg/mcp_config.json)"
    )


def test_a_program_whose_name_holds_a_space_is_run(tmp_path: Path) -> None:
    program = tmp_path / "my server"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    config = load({"mcpServers": {"t": {"command": str(program)}}}, check_commands=True)
    assert config.servers[0].command == str(program)


# --- other tools' shapes --------------------------------------------------------------------------

EXAMPLE = '{"mcpServers": {"<name>": {"command": "...", "args": ["..."]}}}'


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (
            {"mcpServers": [{"name": "memory", "command": "npx", "args": ["-y", "x"]}]},
            "$.mcpServers is a list of servers (Continue's form, each with a name); an mcp_config.json maps "
            f"each server's name to its settings: {EXAMPLE}",
        ),
        (
            {"mcp": {"servers": {"memory": {"command": "npx"}}}},
            "$.mcp holds the servers as VS Code's settings.json does; an mcp_config.json has them at its top "
            'level: move the "servers" object there (or point config_file at a .vscode/mcp.json)',
        ),
        (
            {
                "experimental": {
                    "modelContextProtocolServers": [{"transport": {"type": "stdio", "command": "uvx"}}]
                }
            },
            "$.experimental.modelContextProtocolServers is Continue's list of servers; an mcp_config.json "
            f'maps each server\'s name to its settings (what its "transport" holds): {EXAMPLE}',
        ),
    ],
)
def test_another_tool_s_shape_says_how_to_write_it(data: object, expected: str) -> None:
    assert refused(data) == f"{expected} (/cfg/mcp_config.json)"


def test_a_yaml_file_named_as_the_config_says_zorkmcp_reads_json(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("mcpServers:\n  - name: memory\n    command: npx\n")
    with pytest.raises(ConfigError) as caught:
        McpConfig.from_file(path)
    assert str(caught.value) == (
        f"invalid JSON in {path} at line 1, column 1: Expecting value (its name says YAML (Continue's "
        f"config.yaml); zorkmcp reads JSON: write the servers as {EXAMPLE})"
    )


def test_a_utf16_config_says_it_is_utf16(tmp_path: Path) -> None:
    path = tmp_path / "mcp_config.json"
    path.write_bytes(json.dumps({"mcpServers": {"t": {"command": "python3"}}}).encode("utf-16"))
    with pytest.raises(ConfigError) as caught:
        McpConfig.from_file(path)
    assert str(caught.value) == (
        f"MCP config {path} is UTF-16 (Windows PowerShell's > and Out-File write it), not UTF-8: save it "
        "as UTF-8 (Out-File -Encoding utf8, or your editor's encoding menu)"
    )


def test_play_refuses_an_unexpanded_reference_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.zorkgpt.mcp]\nenabled = true\n")
    server = {"command": "python3", "args": THINK, "env": {"LOG": "${env:ZORKMCP_PROBE_UNSET-info}"}}
    (tmp_path / "mcp_config.json").write_text(json.dumps({"mcpServers": {"thinking": server}}))
    result = subprocess.run(
        [sys.executable, "-m", "zorkmcp.cli", "play", "--quiet", "--turns", "1"],
        cwd=tmp_path, env=offline_env(COLUMNS="400"), capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        "zorkmcp play: configuration error (ConfigError): $.mcpServers.thinking.env.LOG uses "
        "${env:ZORKMCP_PROBE_UNSET-info}, a shell form zorkmcp does not expand (only "
        "${ZORKMCP_PROBE_UNSET:-default} has a default there): write ${ZORKMCP_PROBE_UNSET} or "
        f"${{ZORKMCP_PROBE_UNSET:-default}} ({tmp_path}/mcp_config.json)\n"
    )
    assert not (tmp_path / "logs").exists()
