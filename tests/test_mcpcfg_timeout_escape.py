"""A server's ``timeout`` copied from Gemini CLI (milliseconds) and ``$${...}``, the literal ``${...}``.

Gemini CLI's ``settings.json`` writes ``"timeout": 600000`` (ten minutes in milliseconds); zorkmcp
reads seconds (as Cline does), so a value of 1000 or more is refused in one line that says what to
write. ``$${x}`` is docker-compose's escape: the server gets ``${x}`` as it is, where ``${x}``
alone would be expanded (or refused). The escape is proved on a real server process: its tool
answers with text from its own command line.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from zorkmcp._cli_mcp import cmd_call
from zorkmcp.config import McpConfig, ServerConfig
from zorkmcp.errors import ConfigError

QUIRKY = Path(__file__).parent / "servers" / "quirky.py"


def _config(tmp_path: Path, server: dict[str, object]) -> Path:
    path = tmp_path / "mcp_config.json"
    path.write_text(json.dumps({"mcpServers": {"gem": server}}))
    return path


def _pyproject(tmp_path: Path) -> Path:
    path = tmp_path / "pyproject.toml"
    path.write_text("[tool.zorkgpt.mcp]\nenabled = false\n")
    return path


THINK = {"command": "python3", "args": ["-m", "zorkmcp.servers.thinking"]}


def test_gemini_clis_milliseconds_are_refused_with_the_seconds_to_write(tmp_path: Path) -> None:
    path = _config(tmp_path, {**THINK, "timeout": 600000})
    with pytest.raises(ConfigError) as caught:
        McpConfig.from_file(path, check_commands=False)
    assert str(caught.value) == (
        "$.mcpServers.gem.timeout is 600000: zorkmcp reads it as seconds per tool call (as Cline does) and "
        "takes less than 1000; as Gemini CLI's milliseconds it is 600 s: write 600 (for calls of 1000 s or "
        f"more, leave timeout out and raise tool_call_timeout_seconds in pyproject.toml) ({path})"
    )
    # Seconds under the limit are kept; built in Python (nothing copied from another client) a
    # timeout takes seconds up to one week, as before.
    path = _config(tmp_path, {**THINK, "timeout": 999.5})
    assert McpConfig.from_file(path, check_commands=False).servers[0].timeout == 999.5
    assert ServerConfig(name="long", command="x", timeout=3600).timeout == 3600


def test_milliseconds_of_an_hour_say_where_a_longer_limit_goes(tmp_path: Path) -> None:
    path = _config(tmp_path, {**THINK, "timeout": 3600000})
    with pytest.raises(ConfigError) as caught:
        McpConfig.from_file(path, check_commands=False)
    assert str(caught.value) == (
        "$.mcpServers.gem.timeout is 3600000: zorkmcp reads it as seconds per tool call (as Cline does) and "
        "takes less than 1000; as Gemini CLI's milliseconds it is 3600 s: leave timeout out and raise "
        f"tool_call_timeout_seconds in pyproject.toml, the only way to calls of 1000 s or more ({path})"
    )


@pytest.mark.parametrize(("written", "seconds"), [(1000, "1"), (1500, "1.5"), (30000.0, "30")])
def test_the_limit_is_1000_and_the_advice_is_the_value_in_seconds(
    tmp_path: Path, written: float, seconds: str
) -> None:
    path = _config(tmp_path, {**THINK, "timeout": written})
    with pytest.raises(
        ConfigError, match=rf"as Gemini CLI's milliseconds it is {seconds} s: write {seconds} "
    ):
        McpConfig.from_file(path, check_commands=False)


def test_zorkmcp_call_says_it_in_one_line_and_starts_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _config(tmp_path, {**THINK, "timeout": 30000})
    assert cmd_call("gem.think", "{}", path, _pyproject(tmp_path), None) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "configuration error: $.mcpServers.gem.timeout is 30000: zorkmcp reads it as seconds per tool call "
        "(as Cline does) and takes less than 1000; as Gemini CLI's milliseconds it is 30 s: write 30 (for "
        f"calls of 1000 s or more, leave timeout out and raise tool_call_timeout_seconds in pyproject.toml) "
        f"({path})\n"
    )


# --- $${...} -------------------------------------------------------------------------------------


def _echo_server(text: str) -> dict[str, object]:
    """quirky.py whose tool ``echo`` answers ``text`` (written in its command line, as the config has it)."""
    spec = {
        "tools": [{"name": "echo", "inputSchema": {"type": "object"}}],
        "answers": {"echo": {"result": {"content": [{"type": "text", "text": text}]}}},
    }
    return {"command": sys.executable, "args": ["-S", str(QUIRKY), json.dumps(spec)]}


def test_a_server_gets_a_literal_reference_written_with_two_dollars(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("x", raising=False)
    monkeypatch.setenv("ZORKMCP_CFG_SET", "expanded")
    path = _config(tmp_path, _echo_server("$${x} $${ZORKMCP_CFG_SET} ${ZORKMCP_CFG_SET} $${config:a} $$ a$b"))
    assert cmd_call("gem.echo", "{}", path, _pyproject(tmp_path), None) == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == {"content": "${x} ${ZORKMCP_CFG_SET} expanded ${config:a} $$ a$b"}
    assert err == ""


def test_two_dollars_in_env_and_headers_are_text_not_references() -> None:
    data = {
        "mcpServers": {
            "local": {**THINK, "env": {"TEMPLATE": "$${HOME}/x", "HOME_TOO": "${HOME}"}},
            "remote": {"url": "https://example.com/mcp", "headers": {"X-Template": "Bearer $${TOKEN}"}},
        }
    }
    # TOKEN set but empty: "${TOKEN}" in a header would be refused; "$${TOKEN}" is no reference to it
    config = McpConfig.from_dict(data, environ={"HOME": "/home/me", "TOKEN": ""}, check_commands=False)
    local, remote = config.servers
    assert dict(local.env) == {"TEMPLATE": "${HOME}/x", "HOME_TOO": "/home/me"}
    assert dict(remote.headers) == {"X-Template": "Bearer ${TOKEN}"}


def test_an_unset_variable_names_the_escape() -> None:
    data = {"mcpServers": {"t": {**THINK, "args": ["${PORT}"]}}}
    with pytest.raises(ConfigError) as caught:
        McpConfig.from_dict(data, source="/cfg/mcp_config.json", environ={}, check_commands=False)
    assert str(caught.value) == (
        "$.mcpServers.t.args[0] uses ${PORT}, but the environment variable PORT is not set (set it, or write "
        "${PORT:-default}); $${PORT} passes ${PORT} to the server as written (/cfg/mcp_config.json)"
    )


# --- the rest of a Gemini CLI entry -------------------------------------------------------------


def test_a_gemini_cli_settings_file_loads_once_its_timeout_is_seconds(tmp_path: Path) -> None:
    think = {**THINK, "timeout": 600000, "trust": True, "includeTools": ["think"], "description": "notes"}
    servers = {"think": think, "web": {"httpUrl": "https://example.com/mcp", "timeout": 30000}}
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    with pytest.raises(ConfigError) as caught:
        McpConfig.from_file(path, check_commands=False)
    assert [line.split(":")[0] for line in str(caught.value).splitlines()] == [
        f"2 problems in {path}",
        "  $.mcpServers.think.timeout is 600000",
        "  $.mcpServers.web.timeout is 30000",
    ]
    think["timeout"], servers["web"]["timeout"] = 600, 30
    path.write_text(json.dumps({"mcpServers": servers}))
    local, web = McpConfig.from_file(path, check_commands=False).servers
    assert (local.tools, local.timeout) == (("think",), 600)
    assert (web.type, web.url, web.timeout) == ("http", "https://example.com/mcp", 30)


def test_gemini_clis_exclude_tools_is_refused_rather_than_ignored() -> None:
    data = {"mcpServers": {"t": {**THINK, "excludeTools": ["delete_everything"]}}}
    with pytest.raises(ConfigError) as caught:
        McpConfig.from_dict(data, source="/cfg/settings.json", environ={}, check_commands=False)
    assert str(caught.value) == (
        "$.mcpServers.t.excludeTools (Gemini CLI's) is not supported: zorkmcp has no list of tools to leave "
        'out, so they would be offered; name the tools to offer in "tools" instead (/cfg/settings.json)'
    )
