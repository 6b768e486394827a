"""Bad input to the library API: one line naming the argument or attribute, when it is built.

``Bridge`` / ``EpisodeSetup.create`` refuse an unusable ``base_url`` (with or without an API key: with
none, the offline scripted model used to play without a word about it), a blank or non-string
``model`` and ``servers`` that are not an ``McpConfig`` before any turn; ``ServerConfig`` refuses an
entry its ``type`` cannot start; ``Bridge.call_tool`` names its argument of the wrong kind.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

import bridge
from zorkmcp import McpConfig, ServerConfig
from zorkmcp.config import Settings
from zorkmcp.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Callable

KEY_VARIABLES = ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL")
BUILDERS: dict[str, Callable[..., object]] = {
    "Bridge": lambda **kw: bridge.Bridge(Settings(), log_files=None, **kw),
    "EpisodeSetup.create": lambda **kw: bridge.EpisodeSetup.create(Settings(), log_files=None, **kw),
}
NO_SCHEME = (
    "base_url must be an http:// or https:// URL with a host, got no http:// or https:// at its start "
    '(write e.g. "http://127.0.0.1:11434/v1")'
)
BAD_PORT = (
    "base_url has port 99999: a port must be a number from 1 to 65535 (correct it, or leave it out for "
    "the default: 80 for http://, 443 for https://)"
)


@pytest.fixture(params=["no key", "key set"])
def api_key(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in KEY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    if request.param == "key set":
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


@pytest.mark.usefixtures("api_key")
@pytest.mark.parametrize("build", BUILDERS.values(), ids=BUILDERS.keys())
@pytest.mark.parametrize(
    ("base_url", "message"),
    [
        ("127.0.0.1:8080/v1", NO_SCHEME),
        ("localhost:8080/v1", NO_SCHEME),
        ("", NO_SCHEME),  # not "the settings' URL": that would be a second way to leave it out
        ("http://127.0.0.1:99999/v1", BAD_PORT),
    ],
)
def test_an_unusable_base_url_is_one_line_when_built_with_or_without_a_key(
    build: Callable[..., object], base_url: str, message: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("WARNING", logger="zorkmcp.bridge"), pytest.raises(ConfigError) as raised:
        build(base_url=base_url)
    assert str(raised.value) == message
    assert caplog.records == []  # no "OFFLINE SCRIPTED MODEL" notice on the way


@pytest.mark.parametrize("build", BUILDERS.values(), ids=BUILDERS.keys())
@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"model": ""}, ConfigError, "model is blank: give the model's name, or leave model out"),
        ({"model": "  "}, ConfigError, "model is blank: give the model's name, or leave model out"),
        ({"model": 123}, TypeError, "model must be a str or None, got int"),
        ({"base_url": 8080}, TypeError, "base_url must be a str or None, got int"),
        (
            {"servers": {"mcpServers": {}}},
            TypeError,
            "servers must be a zorkmcp.McpConfig or None, got dict (build one with McpConfig.from_dict(...), "
            "McpConfig.from_file(path) or McpConfig(servers=[ServerConfig(...)]))",
        ),
    ],
)
def test_arguments_that_would_fail_at_the_first_turn_are_refused_when_built(
    build: Callable[..., object], arguments: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as raised:
        build(**arguments)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {},
            'command is required for a stdio server: give the program that starts it (e.g. "npx", or '
            "sys.executable for a Python server)",
        ),
        (
            {"type": "inprocess"},
            'module is required for an inprocess server: give "package.module:factory", or pass factory= '
            "(a callable that returns the server)",
        ),
        (
            {"type": "http"},
            'url is required for a remote (http) server: give its endpoint (e.g. "https://example.com/mcp")',
        ),
        (
            {"type": "sse", "url": "localhost:8000/sse"},
            "url must be an http:// or https:// URL with a host, got no http:// or https:// at its start "
            '(write e.g. "https://example.com/mcp")',
        ),
    ],
)
def test_a_server_config_its_type_cannot_start_is_refused_when_built(
    fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError) as raised:
        ServerConfig(name="a", **fields)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda episode: episode.call_tool("tools.echo", ["x"]),
            "arguments must be a dict of the tool's arguments by name (JSON values) or None, got list",
        ),
        (
            lambda episode: episode.call_tool("tools.echo", {1: "x"}),
            "arguments must have str keys (the arguments' names), got 1",
        ),
        (
            lambda episode: episode.call_tool(123),
            'name must be a tool name, a str such as "game.play_action", got int',
        ),
    ],
)
def test_call_tool_names_an_argument_of_the_wrong_kind_and_the_episode_goes_on(
    call: Callable[[bridge.Bridge], object], message: str
) -> None:
    tools = ServerConfig(
        name="tools", type="inprocess", module="engine_servers:create_tools_server", lifecycle="per_episode"
    )
    servers = McpConfig(servers=(tools,))
    with bridge.Bridge(Settings(), servers=servers, walkthrough=["look"], log_files=None) as episode:
        with pytest.raises(TypeError) as raised:
            call(episode)
        assert str(raised.value) == message
        result = episode.call_tool("tools.echo", {"text": "still here"})
    assert (result.is_error, result.content) == (False, "still here")


@pytest.mark.usefixtures("api_key")
def test_the_orchestrator_refuses_an_unusable_base_url_before_any_turn(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # with no key, Orchestrator(base_url="127.0.0.1:8080/v1") let the offline scripted model play
    # its turns without a word about the URL
    from zorkmcp.game import PACKAGED_GAME
    from zorkmcp.orchestrator import Orchestrator

    monkeypatch.chdir(tmp_path)
    orchestrator = Orchestrator(Settings(), PACKAGED_GAME, base_url="127.0.0.1:8080/v1", max_turns=1)
    with pytest.raises(ConfigError) as raised:
        orchestrator.run()
    assert str(raised.value) == NO_SCHEME
    assert [e for e in orchestrator.recorder.events if e["event_type"] == "turn_complete"] == []
