"""Settings from pyproject.toml and mcp_config.json: loading, defaults and every error message."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from play_support import offline_env, read_events

from zorkmcp.config import McpConfig, McpSettings, ServerConfig, Settings
from zorkmcp.config._servers import input_variable
from zorkmcp.errors import ConfigError, MCPError

REPO = Path(__file__).resolve().parent.parent


def write_pyproject(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pyproject.toml"
    path.write_text(text)
    return path


def write_config(tmp_path: Path, data: object, name: str = "mcp_config.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data, indent=2))
    return path


def load(data: object, **kwargs: Any) -> McpConfig:
    return McpConfig.from_dict(data, source=Path("/cfg/mcp_config.json"), **kwargs)


# --- pyproject.toml ----------------------------------------------------------------------------


def test_missing_pyproject_gives_the_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert Settings.from_pyproject() == Settings()
    assert Settings.from_pyproject().source is None
    assert Settings.from_pyproject(tmp_path / "nope" / "pyproject.toml") == Settings()


def test_missing_sections_give_the_defaults(tmp_path: Path) -> None:
    path = write_pyproject(tmp_path, '[project]\nname = "x"\n')
    settings = Settings.from_pyproject(path)
    assert settings.source == path
    assert settings.mcp == McpSettings()
    # Requirement 13 / property 45
    assert (settings.mcp.enabled, settings.mcp.config_file, settings.mcp.max_tool_iterations) == (
        False,
        "mcp_config.json",
        20,
    )
    assert settings.mcp.tool_call_timeout_seconds == 30
    assert settings.mcp.server_startup_timeout_seconds == 10
    assert settings.mcp.force_tool_support is False


def test_cwd_pyproject_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_pyproject(tmp_path, "[tool.zorkgpt.mcp]\nenabled = true\n")
    monkeypatch.chdir(tmp_path)
    settings = Settings.from_pyproject()
    assert settings.mcp.enabled is True
    assert settings.source == tmp_path / "pyproject.toml"


def test_all_sections_load(tmp_path: Path) -> None:
    path = write_pyproject(
        tmp_path,
        """
[tool.zorkgpt.mcp]
enabled = true
config_file = "conf/servers.json"
max_tool_iterations = 5
tool_call_timeout_seconds = 2.5
server_startup_timeout_seconds = 3
force_tool_support = true
max_result_bytes = 1000
turn_timeout_seconds = 60

[tool.zorkgpt.llm]
client_base_url = "http://127.0.0.1:8000/v1"
agent_model = "gpt-4o"
critic_model = "ignored"      # ZorkGPT keys we don't use are ignored
info_ext_model = "ignored"

[tool.zorkgpt.retry]
max_retries = 2
max_delay = 10                # an int where a float is expected is fine
retry_on_timeout = false

[tool.zorkgpt.agent_sampling]
temperature = 0.5
top_k = 40

[tool.zorkgpt.files]
game_file_path = "zork1.z3"

[tool.zorkgpt.orchestrator]
max_turns_per_episode = 12
turn_delay_seconds = 0
""",
    )
    s = Settings.from_pyproject(path)
    assert s.mcp == McpSettings(
        enabled=True,
        config_file="conf/servers.json",
        max_tool_iterations=5,
        tool_call_timeout_seconds=2.5,
        server_startup_timeout_seconds=3,
        force_tool_support=True,
        max_result_bytes=1000,
        turn_timeout_seconds=60,
    )
    assert s.llm.client_base_url == "http://127.0.0.1:8000/v1"
    assert s.llm.agent_model == "gpt-4o"
    assert (s.retry.max_retries, s.retry.max_delay, s.retry.retry_on_timeout) == (2, 10, False)
    assert s.retry.initial_delay == 1.0
    assert (s.agent_sampling.temperature, s.agent_sampling.top_k, s.agent_sampling.top_p) == (0.5, 40, None)
    assert s.files.game_file_path == "zork1.z3"
    assert s.orchestrator.max_turns_per_episode == 12
    assert s.mcp_config_path() == tmp_path / "conf" / "servers.json"


def test_the_repository_pyproject_and_config_load() -> None:
    settings = Settings.from_pyproject(REPO / "pyproject.toml")
    assert settings.mcp_config_path() == REPO / "mcp_config.json"
    config = McpConfig.from_file(settings.mcp_config_path())
    assert [s.name for s in config.servers] == ["thinking"]
    # "python3" means the interpreter running zorkmcp
    assert config.servers[0].command == sys.executable
    assert config.servers[0].args == ("-m", "zorkmcp.servers.thinking")


def test_mcp_config_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert Settings().mcp_config_path() == tmp_path / "mcp_config.json"
    absolute = tmp_path / "elsewhere" / "c.json"
    path = write_pyproject(tmp_path, f'[tool.zorkgpt.mcp]\nconfig_file = "{absolute}"\n')
    assert Settings.from_pyproject(path).mcp_config_path() == absolute


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            "tool_call_timeout_seconds = -1",
            "tool_call_timeout_seconds must be > 0, got -1 ({path} [tool.zorkgpt.mcp])",
        ),
        ("max_tool_iterations = 0", "max_tool_iterations must be > 0, got 0 ({path} [tool.zorkgpt.mcp])"),
        (
            "server_startup_timeout_seconds = nan",
            "server_startup_timeout_seconds must be > 0, got nan ({path} [tool.zorkgpt.mcp])",
        ),
        ("turn_timeout_seconds = -0.5", "turn_timeout_seconds must be > 0, got -0.5"),
        ("max_result_bytes = -4", "max_result_bytes must be > 0, got -4"),
        ("enabled = 1", "enabled must be true or false, got 1 (integer) ({path} [tool.zorkgpt.mcp])"),
        ('enabled = "true"', "enabled must be true or false, got 'true' (string)"),
        ("max_tool_iterations = 2.5", "max_tool_iterations must be an integer, got 2.5 (number)"),
        ("max_tool_iterations = true", "max_tool_iterations must be an integer, got True (boolean)"),
        ('tool_call_timeout_seconds = "30"', "tool_call_timeout_seconds must be a number, got '30' (string)"),
        ("config_file = 3", "config_file must be a string, got 3 (integer)"),
        ('config_file = ""', "config_file must not be empty ({path} [tool.zorkgpt.mcp])"),
        ("force_tool_support = []", "force_tool_support must be true or false, got [] (array)"),
        (
            "tool_timeout = 5",
            "unknown key 'tool_timeout' (allowed: enabled, config_file, max_tool_iterations, "
            "tool_call_timeout_seconds, server_startup_timeout_seconds, force_tool_support, "
            "max_result_bytes, turn_timeout_seconds) ({path} [tool.zorkgpt.mcp])",
        ),
    ],
)
def test_mcp_table_errors(tmp_path: Path, table: str, message: str) -> None:
    path = write_pyproject(tmp_path, f"[tool.zorkgpt.mcp]\n{table}\n")
    with pytest.raises(ConfigError, match=re.escape(message.format(path=path))):
        Settings.from_pyproject(path)


def test_several_mcp_problems_are_listed(tmp_path: Path) -> None:
    path = write_pyproject(tmp_path, "[tool.zorkgpt.mcp]\nenabled = 1\nfoo = 2\nmax_tool_iterations = 2.5\n")
    with pytest.raises(ConfigError) as excinfo:
        Settings.from_pyproject(path)
    lines = str(excinfo.value).splitlines()
    assert lines[0] == f"3 problems in {path} [tool.zorkgpt.mcp]:"
    assert lines[1] == "  enabled must be true or false, got 1 (integer)"
    assert lines[2] == "  max_tool_iterations must be an integer, got 2.5 (number)"
    assert lines[3].startswith("  unknown key 'foo' (allowed: enabled, ")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[tool.zorkgpt.llm]\nagent_model = 3\n",
            "agent_model must be a string, got 3 (integer) ({path} [tool.zorkgpt.llm])",
        ),
        (
            "[tool.zorkgpt.retry]\nmax_retries = 1.5\n",
            "max_retries must be an integer, got 1.5 (number) ({path} [tool.zorkgpt.retry])",
        ),
        (
            "[tool.zorkgpt.retry]\nretry_on_timeout = 0\n",
            "retry_on_timeout must be true or false, got 0 (integer)",
        ),
        (
            '[tool.zorkgpt.agent_sampling]\ntemperature = "hot"\n',
            "temperature must be a number, got 'hot' (string) ({path} [tool.zorkgpt.agent_sampling])",
        ),
        (
            "[tool.zorkgpt.files]\ngame_file_path = false\n",
            "game_file_path must be a string, got False (boolean) ({path} [tool.zorkgpt.files])",
        ),
        (
            "[tool.zorkgpt.orchestrator]\nmax_turns_per_episode = 1e3\n",
            "max_turns_per_episode must be an integer, got 1000.0 (number) "
            "({path} [tool.zorkgpt.orchestrator])",
        ),
    ],
)
def test_shared_table_type_errors(tmp_path: Path, text: str, message: str) -> None:
    path = write_pyproject(tmp_path, text)
    with pytest.raises(ConfigError, match=re.escape(message.format(path=path))):
        Settings.from_pyproject(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[tool.zorkgpt.mcp\n", r"^invalid TOML in {path}: .*\(at line 1, column 18\)$"),
        ("[tool]\nzorkgpt = 1\n", r"^\[tool\.zorkgpt\] must be a table, got 1 \(integer\) \({path}\)$"),
        (
            '[tool.zorkgpt]\nmcp = "on"\n',
            r"^\[tool\.zorkgpt\.mcp\] must be a table, got 'on' \(string\) \({path}\)$",
        ),
    ],
)
def test_toml_structure_errors(tmp_path: Path, text: str, message: str) -> None:
    path = write_pyproject(tmp_path, text)
    with pytest.raises(ConfigError, match=message.format(path=re.escape(str(path)))):
        Settings.from_pyproject(path)


def test_pyproject_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_bytes(b"[tool]\nx = '\xff'\n")
    with pytest.raises(ConfigError, match=r"pyproject\.toml is not valid UTF-8 \(byte 12\)"):
        Settings.from_pyproject(path)


def test_config_error_is_an_mcp_error() -> None:
    # seeds 000 §Error Handling: configuration problems raise MCPError
    assert issubclass(ConfigError, MCPError)


# --- mcp_config.json: the happy paths --------------------------------------------------------------


def test_claude_desktop_format(tmp_path: Path) -> None:
    path = write_config(
        tmp_path,
        {
            "mcpServers": {
                "thoughtbox": {
                    "command": "python3",
                    "args": ["-m", "x"],
                    "env": {"DISABLE_THOUGHT_LOGGING": "true"},
                },
                "other": {"command": "python", "args": []},
            }
        },
    )
    config = McpConfig.from_file(path)
    assert config.source == path
    assert config.servers == (
        ServerConfig(
            name="thoughtbox",
            command=sys.executable,
            args=("-m", "x"),
            env={"DISABLE_THOUGHT_LOGGING": "true"},
        ),
        ServerConfig(name="other", command=sys.executable),
    )
    assert config.enabled_servers == config.servers


def test_servers_alias_and_pasted_keys(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    path = write_config(
        tmp_path,
        {
            "servers": {
                "b": {
                    "type": "stdio",
                    "command": "python3",
                    "cwd": "work",
                    "autoApprove": ["x"],
                    "alwaysAllow": [],
                },
                "a": {"command": "definitely-not-installed-zork", "disabled": True},
                "c": {
                    "command": "python3",
                    "lifecycle": "per_episode",
                    "timeout": 5,
                    "tools": ["think", "other"],
                },
                "d": {"type": "inprocess", "module": "zorkmcp.servers.thinking:create_server"},
            }
        },
    )
    config = McpConfig.from_file(path)
    assert [s.name for s in config.servers] == ["b", "a", "c", "d"]  # file order
    b, a, c, d = config.servers
    assert b.cwd == str(tmp_path / "work")  # relative to the config file's folder
    assert a.disabled is True
    assert a.command == "definitely-not-installed-zork"  # disabled servers are not checked
    assert (c.lifecycle, c.timeout, c.tools) == ("per_episode", 5, ("think", "other"))
    assert (d.type, d.module, d.command) == ("inprocess", "zorkmcp.servers.thinking:create_server", None)
    assert [s.name for s in config.enabled_servers] == ["b", "c", "d"]


def test_python_means_the_running_interpreter() -> None:
    config = load({"mcpServers": {"p": {"command": "python"}, "p3": {"command": "python3"}}})
    assert [s.command for s in config.servers] == [sys.executable, sys.executable]


def test_variable_expansion() -> None:
    environ = {"HOME_DIR": "/home/z", "EMPTY": "", "TOKEN": "s3cret"}
    config = load(
        {
            "mcpServers": {
                "x": {
                    "command": "${PY:-python3}",
                    "args": [
                        "--root=${HOME_DIR}/zork",
                        "${EMPTY:-fallback}",
                        "${EMPTY}",
                        "$HOME_DIR",
                        "${UNSET:-}",
                    ],
                    "env": {"API_TOKEN": "${TOKEN}", "PLAIN": "no vars", "MIXED": "${HOME_DIR}:${TOKEN}"},
                }
            }
        },
        environ=environ,
    )
    (server,) = config.servers
    assert server.command == sys.executable  # ${PY:-python3} → python3 → the interpreter
    assert server.args == ("--root=/home/z/zork", "fallback", "", "$HOME_DIR", "")
    assert server.env == {"API_TOKEN": "s3cret", "PLAIN": "no vars", "MIXED": "/home/z:s3cret"}


def test_expansion_uses_os_environ_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZORKMCP_TEST_ARG", "from-env")
    config = load({"mcpServers": {"x": {"command": "python3", "args": ["${ZORKMCP_TEST_ARG}"]}}})
    assert config.servers[0].args == ("from-env",)


def test_disabled_servers_keep_unset_variables() -> None:
    config = load(
        {
            "mcpServers": {
                "on": {"command": "python3"},
                "off": {"command": "npx", "args": ["${NOT_SET_ANYWHERE}"], "disabled": True},
            }
        },
        environ={},
    )
    assert config.servers[1].args == ("${NOT_SET_ANYWHERE}",)


@pytest.mark.parametrize("name", ["mcp_config.sequential-thinking.json", "mcp_config.thoughtbox.json",
                                  "mcp_config.inprocess.json"])  # fmt: skip
def test_example_files_load(name: str) -> None:
    path = REPO / "examples" / name
    config = McpConfig.from_file(path, check_commands=shutil.which("npx") is not None)
    assert len(config.servers) == 1
    (server,) = config.servers
    if server.type == "stdio":
        assert server.command == "npx"
        assert server.args[0] == "-y"
        assert server.env == {"DISABLE_THOUGHT_LOGGING": "true"}
    else:
        assert server.module == "zorkmcp.servers.thinking:create_server"


def test_every_example_file_is_tested() -> None:
    assert sorted(p.name for p in (REPO / "examples").glob("mcp_config*.json")) == sorted(
        ["mcp_config.sequential-thinking.json", "mcp_config.thoughtbox.json", "mcp_config.inprocess.json"]
    )


# --- mcp_config.json: every error message ---------------------------------------------------------


def test_missing_file_gives_the_two_options(tmp_path: Path) -> None:
    path = tmp_path / "mcp_config.json"
    expected = (
        f"MCP is enabled but config file not found: {path}\n"
        f"Please either:\n"
        f"  1. Create mcp_config.json in {tmp_path} (examples/ has templates), or\n"
        f"  2. Set mcp.enabled = false in pyproject.toml"
    )
    with pytest.raises(ConfigError, match=f"^{re.escape(expected)}$"):
        McpConfig.from_file(path)


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=rf"^cannot read MCP config {re.escape(str(tmp_path))}: "):
        McpConfig.from_file(tmp_path)  # a directory


def test_invalid_json_has_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "mcp_config.json"
    path.write_text('{\n  "mcpServers": {\n    "a": {"command": "x",}\n  }\n}\n')
    where = (  # Python 3.13 stops at the comma itself and words it apart
        "line 3, column 25: Illegal trailing comma before end of object"
        if sys.version_info >= (3, 13)
        else "line 3, column 26: Expecting property name enclosed in double quotes"
    )
    expected = (
        f"invalid JSON in {path} at {where} "
        "(a comma before the end of an object or an array: JSON allows none; remove it)"
    )
    with pytest.raises(ConfigError, match=f"^{re.escape(expected)}$"):
        McpConfig.from_file(path)


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "mcp_config.json"
    path.write_bytes(b'{"mcpServers": {"\xff": {}}}')
    with pytest.raises(ConfigError, match=r"mcp_config\.json is not valid UTF-8 \(byte 17\)$"):
        McpConfig.from_file(path)


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "mcp_config.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"mcpServers": {"a": {"command": "python3"}}}).encode())
    assert McpConfig.from_file(path).servers[0].name == "a"


def test_duplicate_server_names(tmp_path: Path) -> None:
    path = tmp_path / "mcp_config.json"
    path.write_text('{"mcpServers": {"a": {"command": "python3"}, "a": {"command": "npx"}}}')
    with pytest.raises(ConfigError, match=rf'^invalid MCP config {re.escape(str(path))}: duplicate key "a"'):
        McpConfig.from_file(path)


def test_error_messages_name_the_file(tmp_path: Path) -> None:
    path = write_config(tmp_path, {"mcpServers": {"thoughtbox": {"command": "npx", "args": "-y"}}})
    expected = f"$.mcpServers.thoughtbox.args must be an array, got '-y' (string) ({path})"
    with pytest.raises(ConfigError, match=f"^{re.escape(expected)}$"):
        McpConfig.from_file(path)


WHERE = " (/cfg/mcp_config.json)"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "the top level must be an object, got [] (array)"),
        (
            {"mcpServers": {"a": {"command": "python3"}}, "input": []},
            "the top level has unknown key 'input' (allowed: mcpServers, servers, inputs)",
        ),
        (
            {"servers": {"a": {"command": "python3"}}, "inputs": [{"type": "promptString"}]},
            "$.inputs[0].id is required",
        ),
        (
            {},
            'no MCP servers configured: add an "mcpServers" object mapping a server name to '
            '{"command": ..., "args": [...]}',
        ),
        ({"mcpServers": {}}, 'no MCP servers configured: "mcpServers" is empty'),
        ({"servers": {}}, 'no MCP servers configured: "servers" is empty'),
        (
            {"mcpServers": {"a": {"command": "python3"}}, "servers": {}},
            'use either "mcpServers" or "servers", not both',
        ),
        (
            {
                "mcpServers": {
                    "a": {"command": "python3", "disabled": True},
                    "b": {"command": "x", "disabled": True},
                }
            },
            'every MCP server is disabled (a, b): set "disabled": false on one (to play without MCP: '
            "--no-mcp, or enabled = false in [tool.zorkgpt.mcp])",
        ),
        ({"mcpServers": []}, "$.mcpServers must be an object, got [] (array)"),
        ({"mcpServers": {"a": "npx"}}, "$.mcpServers.a must be an object, got 'npx' (string)"),
        (
            {"mcpServers": {"thoughtbox": {"command": "npx", "args": "-y @kastalien-research/thoughtbox"}}},
            "$.mcpServers.thoughtbox.args must be an array, got '-y @kastalien-research/thoughtbox' (string)",
        ),
        (
            {"mcpServers": {"thinking": {"command": "python3", "args": ["-m", 1]}}},
            "$.mcpServers.thinking.args[1] must be a string, got 1 (integer)",
        ),
        (
            {"mcpServers": {"a b.c": {"command": 7}}},
            '$.mcpServers["a b.c"].command must be a string, got 7 (integer)',
        ),
        (
            {"mcpServers": {"a": {"command": "python3", "env": {"PORT": 8080}}}},
            "$.mcpServers.a.env.PORT must be a string, got 8080 (integer)",
        ),
        (
            {"mcpServers": {"a": {"command": "python3", "env": ["A=1"]}}},
            "$.mcpServers.a.env must be an object, got ['A=1'] (array)",
        ),
        (
            {"mcpServers": {"a": {"command": "python3", "disabled": "yes"}}},
            "$.mcpServers.a.disabled must be true or false, got 'yes' (string)",
        ),
        (
            {"mcpServers": {"a": {"command": "python3", "timeout": 0}}},
            "$.mcpServers.a.timeout must be > 0, got 0",
        ),
        (
            {"mcpServers": {"a": {"command": "python3", "timeout": "5"}}},
            "$.mcpServers.a.timeout must be a number, got '5' (string)",
        ),
        (
            {"mcpServers": {"a": {"command": "python3", "timeout": True}}},
            "$.mcpServers.a.timeout must be a number, got True (boolean)",
        ),
        (
            {"mcpServers": {"a": {"command": "python3", "lifecycle": "per_game"}}},
            '$.mcpServers.a.lifecycle must be one of "per_turn", "per_episode", got \'per_game\' (string)',
        ),
        (
            {"mcpServers": {"a": {"type": "http", "url": "ftp://x/mcp"}}},
            "$.mcpServers.a.url must be an http:// or https:// URL with a host, got ftp://… "
            '(write e.g. "https://example.com/mcp")',
        ),
        (
            {"mcpServers": {"r": {"url": "http://127.0.0.1:99999/mcp"}}},
            "$.mcpServers.r.url has port 99999: a port must be a number from 1 to 65535 (correct it, or "
            "leave it out for the default: 80 for http://, 443 for https://)",
        ),
        (
            {"mcpServers": {"r": {"url": "http://127.0.0.1:65536/mcp"}}},
            "$.mcpServers.r.url has port 65536: a port must be a number from 1 to 65535 (correct it, or "
            "leave it out for the default: 80 for http://, 443 for https://)",
        ),
        (
            {"mcpServers": {"r": {"url": "http://127.0.0.1:0/mcp"}}},
            "$.mcpServers.r.url has port 0: a port must be a number from 1 to 65535 (correct it, or "
            "leave it out for the default: 80 for http://, 443 for https://)",
        ),
        (
            {"mcpServers": {"r": {"url": "http://127.0.0.1:abc/mcp"}}},
            "$.mcpServers.r.url has a port that is not a number: a port must be a number from 1 to 65535 "
            "(correct it, or leave it out for the default: 80 for http://, 443 for https://)",
        ),
        (
            {"mcpServers": {"r": {"url": "http://127.0.0.1:+80/mcp"}}},
            "$.mcpServers.r.url has a port that is not a number: a port must be a number from 1 to 65535 "
            "(correct it, or leave it out for the default: 80 for http://, 443 for https://)",
        ),
        (
            {"mcpServers": {"r": {"url": "https://[::1]:70000/mcp"}}},
            "$.mcpServers.r.url has port 70000: a port must be a number from 1 to 65535 (correct it, or "
            "leave it out for the default: 80 for http://, 443 for https://)",
        ),
        (
            {"mcpServers": {"r": {"url": "notaurl"}}},
            "$.mcpServers.r.url must be an http:// or https:// URL with a host, got no http:// or https:// "
            'at its start (write e.g. "https://example.com/mcp")',
        ),
        (
            {"mcpServers": {"r": {"url": "user:s3cret@example.com/mcp"}}},  # the password is not shown
            "$.mcpServers.r.url must be an http:// or https:// URL with a host, got no http:// or https:// "
            'at its start (write e.g. "https://example.com/mcp")',
        ),
        (
            {"mcpServers": {"r": {"url": "http:///mcp"}}},
            '$.mcpServers.r.url must be an http:// or https:// URL with a host, got no host after "http://" '
            '(write e.g. "https://example.com/mcp")',
        ),
        (
            {"mcpServers": {"r": {"url": "http://[::1/mcp"}}},
            '$.mcpServers.r.url has "[" but no "]" around its IPv6 host (write e.g. "http://[::1]:8000/mcp")',
        ),
        (
            {"mcpServers": {"r": {"url": "http://10.0.0.256/mcp"}}},
            "$.mcpServers.r.url is not a URL the HTTP client accepts (Invalid IPv4 address: '10.0.0.256'): "
            "correct it",
        ),
        (
            {"mcpServers": {"r": {"url": "http://example.com/m\tcp"}}},
            "$.mcpServers.r.url is not a URL the HTTP client accepts (Invalid non-printable ASCII character "
            "in URL, '\\t' at position 20): correct it",
        ),
        (
            {"mcpServers": {"r": {"url": " https://example.com/mcp"}}},
            "$.mcpServers.r.url has spaces or line breaks at its start or end (remove them)",
        ),
        (
            {"servers": {"b": {"type": "sse"}}},
            '$.servers.b.url is required for a remote server (e.g. "https://example.com/mcp")',
        ),
        (
            {"servers": {"b": {"url": "http://h/mcp", "command": "npx"}}},
            "$.servers.b.command is not used by remote (HTTP/SSE) servers (remove it)",
        ),
        (
            {"servers": {"b": {"command": "python3", "headers": {"A": "b"}}}},
            '$.servers.b.headers is only used by remote servers ("type": "http" or "sse")',
        ),
        (
            {"servers": {"b": {"url": "http://h/mcp", "headers": {"X-Key": "a\r\nEvil: 1"}}}},
            "$.servers.b.headers.X-Key must not contain line breaks (value not shown)",
        ),
        (
            {
                "servers": {
                    "b": {"url": "http://h/mcp", "headers": {"Authorization": "Bearer ${UNSET_TOKEN:-}"}}
                }
            },
            "$.servers.b.headers.Authorization must not start or end with a space (value not shown; "
            '"Bearer ${TOKEN:-}" with TOKEN unset leaves one: set the variable or drop the header)',
        ),
        (
            {"servers": {"b": {"url": "http://h/mcp", "headers": {"X-A": "caf\u00e9"}}}},
            "$.servers.b.headers.X-A must be printable ASCII, as HTTP carries it (value not shown)",
        ),
        (
            {"mcpServers": {"a": {"type": "websocket"}}},
            '$.mcpServers.a.type must be one of "stdio", "inprocess", "http", "sse", "streamable-http", '
            '"streamableHttp", "streamable_http", got \'websocket\' (string)',
        ),
        (
            {"mcpServers": {"a": {"command": "python3", "envfile": ".env"}}},
            "$.mcpServers.a has unknown key 'envfile' (allowed: type, command, args, env, cwd, module, "
            "disabled, lifecycle, timeout, tools, roots, sampling, url, headers, envFile, serverUrl, "
            "httpUrl, includeTools, excludeTools, trust, description, autoApprove, alwaysAllow, dev, "
            "gallery, version)",
        ),
        (
            {"servers": {"a": {"url": "http://h/mcp", "envFile": ".env"}}},
            "$.servers.a.envFile is only used by stdio servers (remove it)",
        ),
        (
            {"servers": {"a": {"url": "http://h/mcp", "serverUrl": "http://h/mcp"}}},
            '$.servers.a has both "url" and "serverUrl" (Windsurf\'s name for it): keep one',
        ),
        (
            {"servers": {"a": {"serverUrl": "ws://h/mcp"}}},
            "$.servers.a.serverUrl must be an http:// or https:// URL with a host, got ws://… "
            '(write e.g. "https://example.com/mcp")',
        ),
        (
            {"servers": {"a": {"serverUrl": "https://h:8443x/mcp"}}},  # Windsurf's key is named
            "$.servers.a.serverUrl has a port that is not a number: a port must be a number from 1 to 65535 "
            "(correct it, or leave it out for the default: 80 for http://, 443 for https://)",
        ),
        (
            {"servers": {"a": {"command": "python3", "serverUrl": "http://h/mcp", "type": "stdio"}}},
            '$.servers.a.serverUrl is only used by remote servers ("type": "http" or "sse")',
        ),
        (
            {"servers": {"a": {"url": "${ZORK_UNSET_VAR}/mcp"}}},  # one problem: the variable, not the URL
            "$.servers.a.url uses ${ZORK_UNSET_VAR}, but the environment variable ZORK_UNSET_VAR is not set "
            "(set it, or write ${ZORK_UNSET_VAR:-default})",
        ),
        (
            {"servers": {"a": {"command": "python3", "args": ["${env:ZORK_UNSET_VAR}"]}}},
            "$.servers.a.args[0] uses ${env:ZORK_UNSET_VAR}, but the environment variable ZORK_UNSET_VAR "
            "is not set (set it)",
        ),
        (
            {
                "inputs": [{"type": "promptString", "id": "zork-unset.key", "description": "The key"}],
                "servers": {"a": {"command": "python3", "env": {"K": "${input:zork-unset.key}"}}},
            },
            "$.servers.a.env.K uses ${input:zork-unset.key}, a value VS Code asks for (The key); zorkmcp "
            "reads it from the environment variable ZORK_UNSET_KEY, which is not set (set it)",
        ),
        (
            {"servers": {"a": {"command": "python3", "env": {"K": "${input:--}"}}}},
            "$.servers.a.env.K uses ${input:--}, a value VS Code asks for; zorkmcp reads it from the "
            "environment variable (none: the ID has no letter or digit), which is not set (set it)",
        ),
        (
            {"mcpServers": {"a": {"args": ["x"]}}},
            '$.mcpServers.a.command is required (the program that starts the server, e.g. "npx")',
        ),
        ({"mcpServers": {"a": {"command": "  "}}}, "$.mcpServers.a.command must not be empty"),
        (
            {"mcpServers": {"": {"command": "python3"}}},
            '$.mcpServers[""] is not a usable server name (it is empty)',
        ),
        (
            {"mcpServers": {"a": {"command": "python3", "module": "m:f"}}},
            '$.mcpServers.a.module is only used with "type": "inprocess"',
        ),
        (
            {"mcpServers": {"a": {"type": "inprocess"}}},
            '$.mcpServers.a.module is required for "type": "inprocess" ("package.module:factory")',
        ),
        (
            {"mcpServers": {"a": {"type": "inprocess", "module": "pkg.mod.factory"}}},
            "$.mcpServers.a.module must look like \"package.module:factory\", got 'pkg.mod.factory'",
        ),
        (
            {"mcpServers": {"a": {"type": "inprocess", "module": "pkg/mod:f"}}},
            "$.mcpServers.a.module must look like \"package.module:factory\", got 'pkg/mod:f'",
        ),
        (
            {"mcpServers": {"a": {"type": "inprocess", "module": "m:f", "args": []}}},
            '$.mcpServers.a.args is not used by "type": "inprocess" servers (remove it)',
        ),
        (
            {"mcpServers": {"a": {"command": "python3", "tools": []}}},
            "$.mcpServers.a.tools must name at least one tool (remove it to offer every tool)",
        ),
        (
            {"mcpServers": {"a": {"command": "python3", "tools": "think"}}},
            "$.mcpServers.a.tools must be an array, got 'think' (string)",
        ),
        (
            {"mcpServers": {"thinking": {"command": "python3", "args": ["--x=${ZORK_UNSET_VAR}"]}}},
            "$.mcpServers.thinking.args[0] uses ${ZORK_UNSET_VAR}, but the environment variable "
            "ZORK_UNSET_VAR "
            "is not set (set it, or write ${ZORK_UNSET_VAR:-default})",
        ),
        (
            {"mcpServers": {"t": {"command": "python3", "env": {"KEY": "${ZORK_UNSET_VAR}"}}}},
            "$.mcpServers.t.env.KEY uses ${ZORK_UNSET_VAR}, but the environment variable ZORK_UNSET_VAR "
            "is not set",
        ),
        (
            {"mcpServers": {"t": {"command": "${ZORK_UNSET_VAR}"}}},
            "$.mcpServers.t.command uses ${ZORK_UNSET_VAR}",
        ),
    ],
)
def test_config_errors(data: object, message: str) -> None:
    with pytest.raises(ConfigError, match=f"^{re.escape(message)}.*{re.escape(WHERE)}$"):
        load(data, environ={})


def test_several_problems_are_listed() -> None:
    data = {"mcpServers": {"a": {"command": "python3", "args": [1, True], "timeout": "x"}}}
    with pytest.raises(ConfigError) as excinfo:
        load(data)
    assert str(excinfo.value).splitlines() == [
        "3 problems in /cfg/mcp_config.json:",
        "  $.mcpServers.a.args[0] must be a string, got 1 (integer)",
        "  $.mcpServers.a.args[1] must be a string, got True (boolean)",
        "  $.mcpServers.a.timeout must be a number, got 'x' (string)",
    ]


# --- commands that are not installed --------------------------------------------------------------


@pytest.fixture
def empty_path(tmp_path: Path) -> str:
    """A PATH on which nothing is installed (the server's own env PATH is searched)."""
    (tmp_path / "bin").mkdir()
    return str(tmp_path / "bin")


@pytest.mark.parametrize(
    ("command", "needs"),
    [
        ("npx", "; this server needs Node.js >= 20 (npx comes with it): install it from https://nodejs.org"),
        ("node", "; this server needs Node.js >= 20: install it from https://nodejs.org"),
        ("npm", "; this server needs Node.js >= 20 (npm comes with it)"),
        ("uvx", "; this server needs uv (uvx comes with it): install it from https://docs.astral.sh/uv/"),
        ("uv", "; this server needs uv: install it from https://docs.astral.sh/uv/"),
        ("zork-server", ""),
    ],
)
def test_command_not_on_path(empty_path: str, command: str, needs: str) -> None:
    data = {"mcpServers": {"tb": {"command": command, "args": ["-y", "pkg"], "env": {"PATH": empty_path}}}}
    expected = f"$.mcpServers.tb.command {command!r} was not found on PATH{needs}"
    with pytest.raises(ConfigError, match=f"^{re.escape(expected)}"):
        load(data)
    with pytest.raises(
        ConfigError, match=r"""\(or set "disabled": true on server 'tb'\) \(/cfg/mcp_config\.json\)$"""
    ):
        load(data)
    assert load(data, check_commands=False).servers[0].command == command


def test_command_found_on_the_servers_path(tmp_path: Path, empty_path: str) -> None:
    tool = Path(empty_path) / "my-server"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    config = load({"mcpServers": {"s": {"command": "my-server", "env": {"PATH": empty_path}}}})
    assert config.servers[0].command == "my-server"  # left for the OS to resolve


def test_command_paths(tmp_path: Path) -> None:
    script = tmp_path / "server.sh"
    script.write_text("#!/bin/sh\n")
    with pytest.raises(
        ConfigError,
        match=rf"^\$\.mcpServers\.s\.command '{re.escape(str(script))}' is not an executable file",
    ):
        load({"mcpServers": {"s": {"command": str(script)}}})
    script.chmod(0o755)
    assert load({"mcpServers": {"s": {"command": str(script)}}}).servers[0].command == str(script)
    # relative to the server's cwd
    assert load({"mcpServers": {"s": {"command": "./server.sh", "cwd": str(tmp_path)}}}).servers[
        0
    ].cwd == str(tmp_path)
    with pytest.raises(
        ConfigError, match=r"^\$\.mcpServers\.s\.command './nope\.sh' is not an executable file"
    ):
        load({"mcpServers": {"s": {"command": "./nope.sh", "cwd": str(tmp_path)}}})


def test_cwd_must_exist(tmp_path: Path) -> None:
    path = write_config(tmp_path, {"mcpServers": {"s": {"command": "python3", "cwd": "missing"}}})
    with pytest.raises(
        ConfigError,
        match=rf"^\$\.mcpServers\.s\.cwd is not a directory: {re.escape(str(tmp_path / 'missing'))} ",
    ):
        McpConfig.from_file(path)
    assert McpConfig.from_file(path, check_commands=False).servers[0].cwd == str(tmp_path / "missing")


def test_a_cwd_or_command_the_system_will_not_look_at_is_a_problem_not_a_traceback(tmp_path: Path) -> None:
    # Path.is_dir raises instead of answering False for a path it cannot look at: a folder this user
    # may not enter (EACCES; not to be had as root, which enters anything) or a name too long (here)
    long = "x" * 300  # a name longer than any file system takes (255 bytes)
    path = write_config(tmp_path, {"mcpServers": {"s": {"command": "python3", "cwd": long}}})
    with pytest.raises(
        ConfigError,
        match=rf"^\$\.mcpServers\.s\.cwd cannot be looked at \(File name too long\): {tmp_path / long} ",
    ):
        McpConfig.from_file(path)
    path = write_config(tmp_path, {"mcpServers": {"s": {"command": f"./{long}", "cwd": str(tmp_path)}}})
    with pytest.raises(
        ConfigError,
        match=rf"^\$\.mcpServers\.s\.command '\./{long}' cannot be looked at \(File name too long\) ",
    ):
        McpConfig.from_file(path)


def test_node_is_found_when_installed() -> None:
    if shutil.which("npx") is None:
        pytest.skip("Node.js is not installed here")
    config = load({"mcpServers": {"s": {"command": "npx", "env": {"PATH": os.environ["PATH"]}}}})
    assert config.servers[0].command == "npx"


# --- the models ---------------------------------------------------------------------------------


def test_model_validators() -> None:
    with pytest.raises(ValueError, match=r"^tool_call_timeout_seconds must be > 0, got 0$"):
        McpSettings(tool_call_timeout_seconds=0)
    with pytest.raises(ValueError, match=r"^timeout must be > 0, got -1$"):
        ServerConfig(name="x", timeout=-1)
    with pytest.raises(ValueError, match=r"^lifecycle must be one of 'per_turn', 'per_episode', got 'x'$"):
        ServerConfig(name="x", lifecycle="x")  # type: ignore[arg-type]
    assert McpSettings(turn_timeout_seconds=None).turn_timeout_seconds is None


# --- hostile values: one error naming the key and the file ----------------------------------------


@pytest.mark.parametrize(
    ("toml", "expected"),
    [
        (
            "[tool.zorkgpt.mcp]\ntimeout_x = 1",
            "unknown key 'timeout_x' (allowed: enabled, config_file, max_tool_iterations, "
            "tool_call_timeout_seconds, server_startup_timeout_seconds, force_tool_support, "
            "max_result_bytes, turn_timeout_seconds)",
        ),
        (
            "[tool.zorkgpt.mcp]\nturn_timeout_seconds = inf",
            "turn_timeout_seconds must be <= 604800 (one week), got inf",
        ),
        ("[tool.zorkgpt.mcp]\nturn_timeout_seconds = nan", "turn_timeout_seconds must be > 0, got nan"),
        (
            "[tool.zorkgpt.mcp]\ntool_call_timeout_seconds = -1",
            "tool_call_timeout_seconds must be > 0, got -1",
        ),
        (
            "[tool.zorkgpt.mcp]\nmax_tool_iterations = 9223372036854775807",
            "max_tool_iterations must be <= 1000, got 9223372036854775807",
        ),
        (
            "[tool.zorkgpt.mcp]\nmax_result_bytes = 1073741825",
            "max_result_bytes must be <= 1073741824 (1 GiB), got 1073741825",
        ),
        ("[tool.zorkgpt.agent_sampling]\ntemperature = -5", "temperature must be >= 0, got -5"),
        ("[tool.zorkgpt.agent_sampling]\ntemperature = 2.5", "temperature must be <= 2, got 2.5"),
        ("[tool.zorkgpt.agent_sampling]\ntop_p = 1.5", "top_p must be <= 1, got 1.5"),
        ("[tool.zorkgpt.agent_sampling]\nmin_p = -0.1", "min_p must be >= 0, got -0.1"),
        ("[tool.zorkgpt.agent_sampling]\ntop_k = -1", "top_k must be >= 0, got -1"),
        ("[tool.zorkgpt.agent_sampling]\nmax_tokens = 0", "max_tokens must be > 0, got 0"),
        (
            "[tool.zorkgpt.orchestrator]\nmax_turns_per_episode = -3",
            "max_turns_per_episode must be > 0, got -3",
        ),
        (
            "[tool.zorkgpt.orchestrator]\nmax_turns_per_episode = 1000001",
            "max_turns_per_episode must be <= 1000000, got 1000001",
        ),
        ("[tool.zorkgpt.retry]\njitter_factor = 2.0", "jitter_factor must be <= 1, got 2.0"),
        ("[tool.zorkgpt.retry]\nmax_retries = -1", "max_retries must be >= 0, got -1"),
        (
            "[tool.zorkgpt.retry]\ninitial_delay = 1e400",
            "initial_delay must be <= 604800 (one week), got inf",
        ),
        ("[tool.zorkgpt.retry]\nexponential_base = 0.5", "exponential_base must be >= 1, got 0.5"),
        (
            '[tool.zorkgpt.mcp]\nconfig_file = "a\\u0000b"',
            "config_file must not contain a NUL byte, got 'a\\x00b' (string)",
        ),
        (
            '[tool.zorkgpt.files]\ngame_file_path = "z\\u0000.z3"',
            "game_file_path must not contain a NUL byte, got 'z\\x00.z3' (string)",
        ),
        ('[tool.zorkgpt.files]\njson_log_file = ""', "json_log_file must not be empty"),
    ],
)
def test_hostile_pyproject_values_name_the_key_and_the_section(
    tmp_path: Path, toml: str, expected: str
) -> None:
    path = write_pyproject(tmp_path, toml + "\n")
    section = toml.split("]")[0] + "]"
    with pytest.raises(ConfigError) as caught:
        Settings.from_pyproject(path)
    assert str(caught.value) == f"{expected} ({path} {section})"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("x = " + "[" * 5000 + "]" * 5000, "invalid TOML in {path}: tables or arrays nested too deeply"),
        (
            "x = " + "{a=" * 400 + "1" + "}" * 400,
            "invalid TOML in {path}: tables or arrays nested too deeply",
        ),
        ("x = " + "1" * 5000, "invalid TOML in {path}: a number has more than 4300 digits"),
    ],
)
def test_hostile_toml_documents_are_one_config_error(tmp_path: Path, text: str, expected: str) -> None:
    path = write_pyproject(tmp_path, text + "\n")
    with pytest.raises(ConfigError) as caught:
        Settings.from_pyproject(path)
    assert str(caught.value) == expected.format(path=path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[" * 100_000 + "]" * 100_000, "invalid JSON in {path}: objects or arrays nested too deeply"),
        (
            '{"a": ' * 1000 + "1" + "}" * 1000,
            # Python 3.13's parser takes 1000 levels: the file is JSON, and not a config
            "the top level has unknown key 'a' (allowed: mcpServers, servers, inputs) ({path})"
            if sys.version_info >= (3, 13)
            else "invalid JSON in {path}: objects or arrays nested too deeply",
        ),
        ('{"mcpServers": ' + "7" * 4301 + "}", "invalid JSON in {path}: a number has more than 4300 digits"),
    ],
)
def test_hostile_json_documents_are_one_config_error(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "mcp_config.json"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        McpConfig.from_file(path)
    assert str(caught.value) == expected.format(path=path)


@pytest.mark.parametrize(
    ("server", "expected"),
    [
        (
            {"command": "py\u0000thon"},
            "$.mcpServers.s.command must not contain a NUL byte, got 'py\\x00thon' (string)",
        ),
        (
            {"command": "python3", "args": ["-c", "\u0000"]},
            "$.mcpServers.s.args[1] must not contain a NUL byte, got '\\x00' (string)",
        ),
        (
            {"command": "python3", "env": {"A": "b\u0000"}},
            "$.mcpServers.s.env.A must not contain a NUL byte, got 'b\\x00' (string)",
        ),
        (
            {"command": "python3", "env": {"A=B": "c"}},
            "$.mcpServers.s.env[\"A=B\"] is not a variable name: it contains '='",
        ),
        (
            {"command": "python3", "env": {"": "c"}},
            "$.mcpServers.s.env has an empty variable name (remove it)",
        ),
        (
            {"command": "python3", "timeout": float("inf")},
            "$.mcpServers.s.timeout must be <= 604800 (one week), got inf",
        ),
        (
            {"command": "python3", "timeout": 604801},
            "$.mcpServers.s.timeout is 604801: zorkmcp reads it as seconds per tool call (as Cline does) and "
            "takes less than 1000; as Gemini CLI's milliseconds it is 604.801 s: write 604.801 (for calls of "
            "1000 s or more, leave timeout out and raise tool_call_timeout_seconds in pyproject.toml)",
        ),
        (
            {"command": "python3", "cwd": "a\u0000"},
            "$.mcpServers.s.cwd must not contain a NUL byte, got 'a\\x00' (string)",
        ),
    ],
)
def test_hostile_server_values_name_the_key_and_the_file(server: dict[str, Any], expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load({"mcpServers": {"s": server}}, check_commands=False)
    assert str(caught.value) == f"{expected} (/cfg/mcp_config.json)"


def test_a_nul_byte_in_a_server_name_is_an_error() -> None:
    with pytest.raises(ConfigError, match=r"must not contain a NUL byte.*\(/cfg/mcp_config\.json\)$"):
        load({"mcpServers": {"a\u0000b": {"command": "python3"}}}, check_commands=False)


def test_json_infinity_and_huge_exponents_are_out_of_range(tmp_path: Path) -> None:
    for literal in ("Infinity", "1e400", "NaN"):
        path = tmp_path / "mcp_config.json"
        path.write_text(f'{{"mcpServers": {{"s": {{"command": "python3", "timeout": {literal}}}}}}}')
        with pytest.raises(ConfigError, match=r"^\$\.mcpServers\.s\.timeout must be "):
            McpConfig.from_file(path, check_commands=False)


# --- embedded defaults ------------------------------------------------------------------------------


def test_load_without_a_zorkgpt_table_gives_the_embedded_defaults(tmp_path: Path) -> None:
    assert Settings.load(tmp_path / "missing.toml") == Settings.embedded()
    other = write_pyproject(tmp_path, '[project]\nname = "x"\n')
    embedded = Settings.load(other)
    assert embedded.source is None
    assert embedded.mcp.enabled is True
    assert embedded.mcp_config_path() == REPO / "zorkmcp" / "config" / "default_mcp_config.json"
    (server,) = McpConfig.from_file(embedded.mcp_config_path()).servers
    assert (server.name, server.command) == ("thinking", sys.executable)
    assert server.args == ("-m", "zorkmcp.servers.thinking")
    assert server.lifecycle == "per_turn"


def test_load_with_a_zorkgpt_table_keeps_the_requirement_13_defaults(tmp_path: Path) -> None:
    path = write_pyproject(tmp_path, "[tool.zorkgpt.mcp]\nmax_tool_iterations = 3\n")
    settings = Settings.load(path)
    assert settings.source == path.absolute()
    assert settings.mcp.enabled is False  # Requirement 13: a section without `enabled` means false
    assert settings.mcp.max_tool_iterations == 3


# --- zorkmcp play, a real subprocess: embedded defaults and hostile files -------------------------


def play(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zorkmcp.cli", "play", "--quiet", *args],
        cwd=folder, env=offline_env(COLUMNS="400"), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def test_play_s_one_line_records_stay_whole_in_a_narrow_pipe(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "zorkmcp.cli", "play", "--quiet", "--turns", "2"],
        cwd=tmp_path, env=offline_env(COLUMNS="40"), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "zorkmcp play: zork1.z3, seed 12, model scripted-walkthrough, MCP on, up to 2 turns" in lines
    assert "settings: embedded defaults (no [tool.zorkgpt] in ./pyproject.toml)" in lines
    assert "Logs: logs/zorkmcp_events.jsonl (events), logs/episode.log (episode)" in lines


def test_play_in_an_empty_folder_uses_the_embedded_defaults(tmp_path: Path) -> None:
    result = play(tmp_path, "--turns", "3")
    assert result.returncode == 0, result.stderr
    assert "settings: embedded defaults (no [tool.zorkgpt] in ./pyproject.toml)" in result.stdout
    assert "zork1.z3, seed 12, model scripted-walkthrough, MCP on, up to 3 turns" in result.stdout
    events = read_events(tmp_path / "logs" / "zorkmcp_events.jsonl")
    started = [(e["server"], e["tools"]) for e in events if e["event_type"] == "mcp_server_started"]
    assert ("thinking", ["think"]) in started
    assert ("zork", ["play_action", "memory", "get_map", "inventory", "status"]) in started
    episode = next(e for e in events if e["event_type"] == "episode_start")
    assert episode["game_file"] == str(REPO / "zorkmcp" / "game" / "data" / "zork1.z3")
    turns = [e["action"] for e in events if e["event_type"] == "turn_complete"]
    assert len(turns) == 3


def test_play_names_the_settings_file_it_read(tmp_path: Path) -> None:
    write_pyproject(tmp_path, "[tool.zorkgpt.mcp]\nenabled = false\n")
    result = play(tmp_path, "--turns", "1")
    assert result.returncode == 0, result.stderr
    assert f"settings: {tmp_path / 'pyproject.toml'}" in result.stdout
    assert "MCP off (no tools)" in result.stdout


@pytest.mark.parametrize(
    ("pyproject", "mcp_config", "expected"),
    [
        (
            "[tool.zorkgpt.orchestrator]\nmax_turns_per_episode = -3\n",
            None,
            "max_turns_per_episode must be > 0, got -3 (pyproject.toml [tool.zorkgpt.orchestrator])",
        ),
        (
            "[tool.zorkgpt.mcp]\nenabled = true\n",
            '{"mcpServers": {"t": {"command": "py\\u0000thon"}}}',
            "$.mcpServers.t.command must not contain a NUL byte, got 'py\\x00thon' (string) "
            "({folder}/mcp_config.json)",
        ),
        (
            "[tool.zorkgpt.mcp]\nenabled = true\n",
            "[" * 5000 + "]" * 5000,
            # Python 3.13's parser takes 5000 levels: the file is JSON, and not a config
            "the top level must be an object, got " + "[" * 57 + "... (array) ({folder}/mcp_config.json)"
            if sys.version_info >= (3, 13)
            else "invalid JSON in {folder}/mcp_config.json: objects or arrays nested too deeply",
        ),
    ],
)
def test_play_with_a_hostile_file_exits_2_with_one_line_before_anything_starts(
    tmp_path: Path, pyproject: str, mcp_config: str | None, expected: str
) -> None:
    write_pyproject(tmp_path, pyproject)
    if mcp_config is not None:
        (tmp_path / "mcp_config.json").write_text(mcp_config)
    # The game file is missing too: the configuration is reported first, nothing is started.
    result = play(tmp_path, "--game", "missing.z3")
    assert result.returncode == 2
    assert result.stdout == ""
    expected = expected.format(folder=tmp_path)
    assert result.stderr == f"zorkmcp play: configuration error (ConfigError): {expected}\n"
    assert not (tmp_path / "logs").exists()


PORT_RULE = (
    "a port must be a number from 1 to 65535 (correct it, or leave it out for the default: 80 for "
    "http://, 443 for https://)"
)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://127.0.0.1:99999/mcp", f"has port 99999: {PORT_RULE}"),
        ("http://127.0.0.1:abc/mcp", f"has a port that is not a number: {PORT_RULE}"),
        (
            "notaurl",
            "must be an http:// or https:// URL with a host, got no http:// or https:// at its start "
            '(write e.g. "https://example.com/mcp")',
        ),
    ],
)
def test_tools_call_and_play_refuse_an_unusable_url_with_exit_2(
    tmp_path: Path, url: str, problem: str
) -> None:
    write_config(tmp_path, {"mcpServers": {"r": {"url": url}}}, name="c.json")
    write_pyproject(tmp_path, '[tool.zorkgpt.mcp]\nenabled = true\nconfig_file = "c.json"\n')
    line = f"$.mcpServers.r.url {problem}"
    for command, expected in [
        (["tools", "--config", "c.json"], f"configuration error: {line} (c.json)\n"),
        (["call", "--config", "c.json", "r.x", "{}"], f"configuration error: {line} (c.json)\n"),
        (
            ["play", "--quiet"],
            f"zorkmcp play: configuration error (ConfigError): {line} ({tmp_path}/c.json)\n",
        ),
    ]:
        result = subprocess.run(
            [sys.executable, "-m", "zorkmcp.cli", *command],
            cwd=tmp_path, env=offline_env(COLUMNS="400"), capture_output=True, text=True, timeout=120,
            check=False,
        )  # fmt: skip
        assert (result.returncode, result.stdout, result.stderr) == (2, "", expected), command


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"command": "python3", "args": ["\ud800"]}, "$.mcpServers.a.args[0] must be valid Unicode"),
        ({"command": "python3", "env": {"A": "\udfff"}}, "$.mcpServers.a.env.A must be valid Unicode"),
        ({"url": "http://h/\ud800"}, "$.mcpServers.a.url must be valid Unicode"),
    ],
)
def test_a_lone_surrogate_from_a_json_escape_is_a_config_error(entry: dict[str, Any], message: str) -> None:
    """JSON may escape a lone surrogate ("\\ud800"); no operating system can take one in a command line."""
    with pytest.raises(ConfigError, match=re.escape(message) + r" \(it holds a lone surrogate\)"):
        McpConfig.from_dict({"mcpServers": {"a": entry}})


# --- VS Code, Cursor and Windsurf files as their users have them ----------------------------------

VSCODE_MCP_JSON = """\
{
  "inputs": [
    {"type": "promptString", "id": "think-key", "description": "Think API key", "password": true},
    {"type": "promptString", "id": "region", "description": "Region", "default": "eu"},
    {"type": "pickString", "id": "mode", "options": ["fast", {"label": "Slow", "value": "slow"}]}
  ],
  "servers": {
    "thinking": {
      "type": "stdio",
      "command": "python3",
      "args": ["${workspaceFolder}${/}server.py", "--name=${workspaceFolderBasename}"],
      "envFile": "${workspaceFolder}/.env",
      "env": {
        "THINK_KEY": "${input:think-key}",
        "REGION": "${input:region}",
        "SHELL_HOME": "${env:HOME}",
        "FROM_BOTH": "env wins"
      },
      "dev": {"watch": "src/**/*.py", "debug": {"type": "debugpy"}},
      "gallery": true,
      "version": "1.0.0"
    },
    "remote": {
      "type": "http",
      "url": "${env:BASE}/mcp",
      "headers": {"Authorization": "Bearer ${input:think-key}"}
    }
  }
}
"""
"""What VS Code's "MCP: Add Server" writes (``inputs``, ``servers``), and what its users add to it."""


DOTENV = """\
# the server's variables
export FROM_FILE="two words"
FROM_BOTH=the file
QUOTED='a # not a comment'
BARE
"""


def test_a_vscode_mcp_json_works_as_written(tmp_path: Path) -> None:
    (tmp_path / ".vscode").mkdir()
    (tmp_path / ".vscode" / "mcp.json").write_text(VSCODE_MCP_JSON)
    (tmp_path / ".env").write_text(DOTENV)
    environ = {"THINK_KEY": "k-123", "HOME": "/home/player", "BASE": "https://mcp.example.com"}
    config = McpConfig.from_file(tmp_path / ".vscode" / "mcp.json", environ=environ)
    thinking, remote = config.servers
    assert thinking.command == sys.executable
    assert thinking.args == (f"{tmp_path}{os.sep}server.py", f"--name={tmp_path.name}")
    assert dict(thinking.env) == {
        "FROM_FILE": "two words",
        "FROM_BOTH": "env wins",
        "QUOTED": "a # not a comment",
        "THINK_KEY": "k-123",
        "REGION": "eu",  # the input's default: THINK_KEY is set, REGION is not
        "SHELL_HOME": "/home/player",
    }
    assert (remote.type, remote.url) == ("http", "https://mcp.example.com/mcp")
    assert dict(remote.headers) == {"Authorization": "Bearer k-123"}


def test_a_cursor_file_names_the_project_folder_and_a_plain_file_its_own(tmp_path: Path) -> None:
    data = {"mcpServers": {"a": {"command": "python3", "args": ["${workspaceFolder}", "${userHome}"]}}}
    (tmp_path / "project" / ".cursor").mkdir(parents=True)
    cursor = write_config(tmp_path / "project" / ".cursor", data, name="mcp.json")
    assert McpConfig.from_file(cursor, environ={}).servers[0].args == (
        str(tmp_path / "project"),
        os.path.expanduser("~"),
    )
    plain = write_config(tmp_path / "project", data)
    assert McpConfig.from_file(plain, environ={}).servers[0].args[0] == str(tmp_path / "project")


def test_windsurf_server_url_is_the_url(tmp_path: Path) -> None:
    config = load({"mcpServers": {"w": {"serverUrl": "https://h.example/sse"}}})
    assert (config.servers[0].type, config.servers[0].url) == ("sse", "https://h.example/sse")


@pytest.mark.parametrize(
    ("input_id", "variable"),
    [("api-key", "API_KEY"), ("github_token", "GITHUB_TOKEN"), ("perplexity.key", "PERPLEXITY_KEY"),
     ("a--b", "A_B"), ("-x-", "X"), ("Key2", "KEY2")],
)  # fmt: skip
def test_an_input_is_read_from_the_variable_its_id_names(input_id: str, variable: str) -> None:
    assert input_variable(input_id) == variable
    config = load({"servers": {"a": {"command": "python3", "args": [f"${{input:{input_id}}}"]}}},
                  environ={variable: "the value"})  # fmt: skip
    assert config.servers[0].args == ("the value",)


def test_env_file_problems_name_the_file_and_the_line(tmp_path: Path) -> None:
    data = {"servers": {"a": {"command": "python3", "envFile": "missing.env"}}}
    with pytest.raises(ConfigError) as caught:
        McpConfig.from_file(write_config(tmp_path, data), environ={})
    assert str(caught.value) == (
        f"$.servers.a.envFile: there is no file {tmp_path / 'missing.env'} (write the server's variables "
        f"there, or remove it) ({tmp_path / 'mcp_config.json'})"
    )
    (tmp_path / "bad.env").write_text("A=1\nthis is not a variable\n")
    data = {"servers": {"a": {"command": "python3", "envFile": "bad.env"}}}
    with pytest.raises(ConfigError) as caught:
        McpConfig.from_file(write_config(tmp_path, data), environ={})
    assert str(caught.value) == (
        f"$.servers.a.envFile: line 2 of {tmp_path / 'bad.env'} is not NAME=value: 'this is not a variable' "
        f"({tmp_path / 'mcp_config.json'})"
    )
    data = {
        "servers": {
            "a": {"command": "python3", "envFile": "missing.env", "disabled": True},
            "b": {"command": "python3"},
        }
    }
    assert [
        s.name for s in McpConfig.from_file(write_config(tmp_path, data), environ={}).enabled_servers
    ] == ["b"]


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        (
            '{\n  // VS Code allows this\n  "servers": {}\n}\n',
            "line 2, column 3",
            "Expecting property name enclosed in double quotes (a comment: JSON has none, though VS Code's "
            "mcp.json allows them; remove it)",
        ),
        (
            '{"servers": {"a": {"command": "python3"}} /* here */}',
            "line 1, column 43",
            "Expecting ',' delimiter (a comment: JSON has none, though VS Code's mcp.json allows them; "
            "remove it)",
        ),
        (
            '{"servers": {"a": {"args": ["x",\n  ]}}}',
            "line 1, column 32" if sys.version_info >= (3, 13) else "line 2, column 3",
            (
                "Illegal trailing comma before end of array"
                if sys.version_info >= (3, 13)
                else "Expecting value"
            )
            + " (a comma before the end of an object or an array: JSON allows none; remove it)",
        ),
        ('{"servers": {"a" {}}}', "line 1, column 18", "Expecting ':' delimiter"),  # no hint: neither
    ],
)
def test_what_vscode_allows_and_json_does_not_is_named(
    tmp_path: Path, text: str, where: str, message: str
) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        McpConfig.from_file(path)
    assert str(caught.value) == f"invalid JSON in {path} at {where}: {message}"


def test_a_vscode_config_reaches_the_server_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # a real server process: the values of envFile, env and ${input:...} are in its environment
    from servers.helpers import MISBEHAVING

    from zorkmcp._cli_mcp import cmd_call

    (tmp_path / ".vscode").mkdir()
    (tmp_path / ".vscode" / "mcp.json").write_text(
        '{\n  "inputs": [{"type": "promptString", "id": "zork-e2e-key", "password": true}],\n'
        '  "servers": {\n    "srv": {\n      "type": "stdio",\n      "command": "python3",\n'
        f'      "args": ["-S", "{MISBEHAVING}"],\n      "envFile": "${{workspaceFolder}}/.env",\n'
        '      "env": {"KEY": "${input:zork-e2e-key}"}\n    }\n  }\n}\n'
    )
    (tmp_path / ".env").write_text("FROM_FILE=from the .env file\n")
    pyproject = write_pyproject(tmp_path, "[tool.zorkgpt.mcp]\nenabled = false\n")
    os.environ["ZORK_E2E_KEY"] = "from the environment"
    try:
        names = json.dumps({"names": ["FROM_FILE", "KEY"]})
        assert cmd_call("srv.env", names, tmp_path / ".vscode" / "mcp.json", pyproject, timeout=30) == 0
    finally:
        del os.environ["ZORK_E2E_KEY"]
    assert json.loads(capsys.readouterr().out) == {
        "content": {"FROM_FILE": "from the .env file", "KEY": "from the environment"}
    }
