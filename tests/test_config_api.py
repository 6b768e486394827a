"""The configuration classes built in Python, not read from a file: what they refuse, and the paths they take.

A program that builds ``McpConfig``/``ServerConfig``/``McpSettings`` in code gets the same guarantee as
a file's reader: a bad value is one :class:`~zorkmcp.errors.ConfigError` line naming the attribute, at
construction, not a hang or a ``TypeError`` when the servers start.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from zorkmcp.config import (
    FilesSettings,
    LLMSettings,
    McpConfig,
    McpSettings,
    OrchestratorSettings,
    RetrySettings,
    SamplingSettings,
    ServerConfig,
    Settings,
    check_settings_file,
)
from zorkmcp.errors import ConfigError, ZorkMCPError
from zorkmcp.mcp import open_toolbox

GUARD = 30  # seconds: a hung test fails instead of hanging the suite (never an assertion on time)
THINKING_ARGS = ("-m", "zorkmcp.servers.thinking")


def thinking(name: str) -> ServerConfig:
    return ServerConfig(name=name, command=sys.executable, args=THINKING_ARGS)


def inprocess_thinking(name: str) -> ServerConfig:
    return ServerConfig(name=name, type="inprocess", module="zorkmcp.servers.thinking:create_server")


# --- McpConfig: one server per name --------------------------------------------------------------


def test_two_servers_with_one_name_are_refused() -> None:
    # Servers are started, called and closed by name: the second "a" was never closed, the turn hung.
    with pytest.raises(
        ConfigError, match=r"^servers has more than one server named 'a': give each server its own name$"
    ):
        McpConfig(servers=(thinking("a"), thinking("b"), thinking("a")))


def test_a_server_name_given_twice_is_refused_even_when_one_is_disabled() -> None:
    second = ServerConfig(name="a", command="npx", disabled=True)
    with pytest.raises(ConfigError, match=r"^servers has more than one server named 'a'"):
        McpConfig(servers=(thinking("a"), second))


async def test_open_toolbox_refuses_two_servers_with_one_name_before_starting_any() -> None:
    with (
        trio.fail_after(GUARD),
        pytest.raises(ConfigError, match=r"^servers has more than one server named 'a'"),
    ):
        async with open_toolbox([inprocess_thinking("a"), inprocess_thinking("a")], McpSettings()):
            pytest.fail("two servers named 'a' started")  # pragma: no cover


def test_servers_must_be_a_sequence_of_server_configs() -> None:
    with pytest.raises(ConfigError, match=r"^servers must be a list of ServerConfig, got ServerConfig\("):
        McpConfig(servers=thinking("a"))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"^servers\[1\] must be a ServerConfig, got 'b' \(string\)$"):
        McpConfig(servers=(thinking("a"), "b"))  # type: ignore[arg-type]
    assert McpConfig(servers=[thinking("a")]).servers == (thinking("a"),)


async def test_names_that_differ_in_case_or_make_one_wire_name_are_distinct_servers() -> None:
    # As in a file (test_names_that_differ_in_case_or_make_one_wire_name_load_from_a_file), they
    # are different names: each server gets its own tools, and wire names stay unique.
    config = McpConfig(servers=tuple(inprocess_thinking(name) for name in ("a", "A", "a.b", "a_b")))
    with trio.fail_after(GUARD):
        async with open_toolbox(config.enabled_servers, McpSettings()) as toolbox:
            assert [(info.name, info.wire_name) for info in toolbox.tools] == [
                ("a.think", "a__think"),
                ("A.think", "A__think"),
                ("a.b.think", "a_b__think_fff508fc"),
                ("a_b.think", "a_b__think_290a0ca3"),
            ]
            thought = {"thought": "upper", "nextThoughtNeeded": False, "thoughtNumber": 1, "totalThoughts": 1}
            for name in ("a.think", "A.think", "a_b__think_fff508fc", "a_b__think_290a0ca3"):
                assert not (await toolbox.call_tool(name, thought)).is_error


def test_names_that_differ_in_case_or_make_one_wire_name_load_from_a_file() -> None:
    entry = {"command": "npx"}
    config = McpConfig.from_dict(
        {"mcpServers": {"a": entry, "A": entry, "a.b": entry, "a_b": entry}}, check_commands=False
    )
    assert [server.name for server in config.servers] == ["a", "A", "a.b", "a_b"]


# --- ServerConfig ------------------------------------------------------------------------------


def test_args_given_as_one_string_are_refused() -> None:
    # It was spawned as `python - m ' ' z o r k ...`, which then ran out the start-up timeout.
    with pytest.raises(
        ConfigError,
        match=r"^args must be a list of strings, got the single string '-m zorkmcp\.servers\.thinking' "
        r"\(string\): give one string per item, e\.g\. args=\('-m', 'zorkmcp\.servers\.thinking'\)$",
    ):
        ServerConfig(name="a", command=sys.executable, args="-m zorkmcp.servers.thinking")


def test_a_long_args_string_gets_a_short_example() -> None:
    line = "--option " * 10
    with pytest.raises(ConfigError, match=r"give one string per item, e\.g\. args=shlex\.split\(line\)$"):
        ServerConfig(name="a", command="npx", args=line)


def test_tools_given_as_one_string_are_refused() -> None:
    with pytest.raises(
        ConfigError,
        match=r"^tools must be a list of strings, got the single string 'think' \(string\): "
        r"give one string per item, e\.g\. tools=\('think',\)$",
    ):
        ServerConfig(name="a", command="npx", tools="think")


def test_args_and_tools_lists_are_kept_as_tuples() -> None:
    server = ServerConfig(name="a", command="npx", args=["-y", "pkg"], tools=["think"])
    assert server.args == ("-y", "pkg")
    assert server.tools == ("think",)
    assert server == ServerConfig(name="a", command="npx", args=("-y", "pkg"), tools=("think",))


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"args": ("-m", 1)}, r"^args\[1\] must be a string, got 1 \(integer\)$"),
        ({"args": 3}, r"^args must be a list of strings, got 3 \(integer\)$"),
        ({"args": {"-m": "x"}}, r"^args must be a list of strings, got \{'-m': 'x'\} \(object\)$"),
        ({"tools": [None]}, r"^tools\[0\] must be a string, got None \(null\)$"),
        ({"env": {"A": 1}}, r"^env\['A'\] must be a string, got 1 \(integer\)$"),
        ({"env": ["A=1"]}, r"^env must be a mapping of strings to strings, got \['A=1'\] \(array\)$"),
        ({"cwd": Path("/tmp")}, r"^cwd must be a string, got PosixPath\('/tmp'\) \(PosixPath\)$"),
        ({"disabled": "no"}, r"^disabled must be True or False, got 'no' \(string\)$"),
        ({"timeout": "5"}, r"^timeout must be a number, got '5' \(string\)$"),
        ({"factory": "x"}, r"^factory must be a callable that returns the MCP server, got 'x' \(string\)$"),
    ],
)
@pytest.mark.skipif(os.name == "nt", reason="the message shows a PosixPath")
def test_server_values_of_the_wrong_type_are_refused(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ServerConfig(name="a", command="npx", **options)


@pytest.mark.parametrize("command", ["", "   "])
def test_an_empty_stdio_command_is_refused(command: str) -> None:
    with pytest.raises(
        ConfigError,
        match=r"^command must not be empty for a stdio server: give the program that starts it "
        r'\(e\.g\. "npx", or sys\.executable for a Python server\)$',
    ):
        ServerConfig(name="a", command=command)


def test_an_empty_server_name_is_refused() -> None:
    with pytest.raises(
        ConfigError, match=r"^name must not be empty: it names the server in tool names and messages$"
    ):
        ServerConfig(name="", command="npx")
    with pytest.raises(ConfigError, match=r"^name must be a string, got 1 \(integer\)$"):
        ServerConfig(name=1, command="npx")  # type: ignore[arg-type]


# --- the settings classes -------------------------------------------------------------------------


def test_a_settings_value_out_of_range_is_a_config_error() -> None:
    # It was a ValueError subclass only: `except ZorkMCPError` missed it.
    with pytest.raises(ZorkMCPError, match=r"^tool_call_timeout_seconds must be > 0, got -1$") as excinfo:
        McpSettings(tool_call_timeout_seconds=-1)
    assert isinstance(excinfo.value, ConfigError)
    assert isinstance(excinfo.value, ValueError)  # as before, for callers that caught that


@pytest.mark.parametrize(
    ("model", "key"),
    [
        (McpSettings, "enabled"),
        (McpSettings, "force_tool_support"),
        (LLMSettings, "cache_control"),
        (RetrySettings, "retry_on_timeout"),
        (RetrySettings, "retry_on_rate_limit"),
        (RetrySettings, "retry_on_server_error"),
    ],
)
@pytest.mark.parametrize(
    ("value", "shown"), [("yes", "'yes' (string)"), (1, "1 (integer)"), (None, "None (null)")]
)
def test_booleans_given_directly_must_be_bools(model: type[Any], key: str, value: object, shown: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        model(**{key: value})
    assert str(excinfo.value) == f"{key} must be True or False, got {shown}"


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: McpSettings(tool_call_timeout_seconds="30"),
            "tool_call_timeout_seconds must be a number, got '30' (string)",
        ),
        (
            lambda: McpSettings(turn_timeout_seconds=True),
            "turn_timeout_seconds must be a number, got True (boolean)",
        ),
        (
            lambda: McpSettings(max_tool_iterations=2.5),
            "max_tool_iterations must be an integer, got 2.5 (number)",
        ),
        (
            lambda: McpSettings(max_result_bytes="1"),
            "max_result_bytes must be an integer, got '1' (string)",
        ),
        (
            lambda: McpSettings(config_file=5),
            "config_file must be a string, got 5 (integer)",
        ),
        (
            lambda: McpSettings(config_file="a\0b"),
            "config_file must not contain a NUL byte, got 'a\\x00b' (string)",
        ),
        (
            lambda: RetrySettings(max_retries=None),
            "max_retries must be an integer, got None (null)",
        ),
        (
            lambda: RetrySettings(initial_delay="1"),
            "initial_delay must be a number, got '1' (string)",
        ),
        (
            lambda: SamplingSettings(temperature="hot"),
            "temperature must be a number, got 'hot' (string)",
        ),
        (
            lambda: SamplingSettings(top_k=1.5),
            "top_k must be an integer, got 1.5 (number)",
        ),
        (
            lambda: LLMSettings(agent_model=7),
            "agent_model must be a string, got 7 (integer)",
        ),
        (
            lambda: LLMSettings(client_base_url=7),
            "client_base_url must be a string, got 7 (integer)",
        ),
        (
            lambda: FilesSettings(game_file_path=Path("z.z3")),
            "game_file_path must be a string, got PosixPath('z.z3') (PosixPath)",
        ),
        (
            lambda: FilesSettings(json_log_file="~x\0"),
            "json_log_file must not contain a NUL byte, got '~x\\x00' (string)",
        ),
        (
            lambda: OrchestratorSettings(max_turns_per_episode="9"),
            "max_turns_per_episode must be an integer, got '9' (string)",
        ),
        (
            lambda: Settings(mcp={"enabled": True}),
            "mcp must be a McpSettings, got {'enabled': True} (object)",
        ),
        (
            lambda: Settings(source=3),
            "source must be a path (a str or an os.PathLike), got 3 (integer)",
        ),
    ],
)
@pytest.mark.skipif(os.name == "nt", reason="a message shows a PosixPath")
def test_settings_values_of_the_wrong_type_are_config_errors(build: Any, message: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        build()
    assert str(excinfo.value) == message


# --- paths: a str or any os.PathLike ----------------------------------------------------------------


class _PathLike:
    """An ``os.PathLike`` that is not a ``pathlib.Path``."""

    def __init__(self, path: Path) -> None:
        self._path = path

    def __fspath__(self) -> str:
        return str(self._path)


MCP_CONFIG_JSON = '{"mcpServers": {"t": {"command": "npx", "args": ["-y", "t"]}}}'
PYPROJECT_TOML = '[tool.zorkgpt.mcp]\nenabled = true\nconfig_file = "servers.json"\n'


@pytest.mark.parametrize("kind", [str, _PathLike])
def test_mcp_config_from_file_takes_a_str_or_a_path_like(tmp_path: Path, kind: Any) -> None:
    path = tmp_path / "mcp_config.json"
    path.write_text(MCP_CONFIG_JSON)
    config = McpConfig.from_file(kind(path), check_commands=False)
    assert config.source == path
    assert config.servers == (ServerConfig(name="t", command="npx", args=("-y", "t")),)


def test_mcp_config_from_file_with_a_missing_str_path_gives_the_two_options(tmp_path: Path) -> None:
    path = tmp_path / "nowhere.json"
    with pytest.raises(ConfigError, match=r"^MCP is enabled but config file not found: "):
        McpConfig.from_file(str(path))


def test_mcp_config_from_dict_and_the_constructor_take_a_str_source(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    source = str(tmp_path / "mcp_config.json")
    config = McpConfig.from_dict({"mcpServers": {"t": {"command": "npx", "cwd": "work"}}}, source=source)
    assert config.source == tmp_path / "mcp_config.json"
    assert config.servers[0].cwd == str(tmp_path / "work")
    assert McpConfig(servers=(thinking("a"),), source=source).source == tmp_path / "mcp_config.json"


@pytest.mark.parametrize("kind", [str, _PathLike])
def test_settings_from_pyproject_and_load_take_a_str_or_a_path_like(tmp_path: Path, kind: Any) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text(PYPROJECT_TOML)
    for settings in (Settings.from_pyproject(kind(path)), Settings.load(kind(path))):
        assert settings.source == path
        assert settings.mcp == McpSettings(enabled=True, config_file="servers.json")
        assert settings.mcp_config_path() == tmp_path / "servers.json"


def test_settings_take_a_str_source(tmp_path: Path) -> None:
    settings = Settings(source=str(tmp_path / "pyproject.toml"))
    assert settings.source == tmp_path / "pyproject.toml"
    assert settings.mcp_config_path() == tmp_path / "mcp_config.json"


def test_check_settings_file_takes_a_str(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text(PYPROJECT_TOML)
    check_settings_file(str(path))
    with pytest.raises(
        ConfigError, match=rf"^--pyproject {re.escape(str(tmp_path))}: is a folder, not a settings file$"
    ):
        check_settings_file(str(tmp_path))
