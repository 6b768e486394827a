"""The game MCP server (seeds 003) through the SDK: in-memory transport, and one real stdio subprocess."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import trio
import trio.testing
from backends import AUTOJUMP_THRESHOLD
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.server.lowlevel import Server
from mcp.types import CallToolResult, TextContent

from zorkmcp.errors import GameError
from zorkmcp.game import PACKAGED_GAME, GameState, ZorkGame, walkthrough
from zorkmcp.game.server import SERVER_NAME, TOOL_LISTINGS, build_server, create_server, main

if TYPE_CHECKING:
    from collections.abc import Iterator

    from mcp.server.mcpserver import MCPServer

REPO = Path(__file__).resolve().parents[1]
ZORK1_Z3 = PACKAGED_GAME

SCORE_LINE = re.compile(r"\[Score: -?\d+ \| Moves: \d+\]")
TOOLS = ["play_action", "memory", "get_map", "inventory", "status"]


def zork1_path() -> Path:
    """The real Zork I (MIT release 119), packaged with zorkmcp."""
    return ZORK1_Z3


def text_of(result: CallToolResult) -> str:
    assert len(result.content) == 1
    content = result.content[0]
    assert isinstance(content, TextContent)
    return content.text


@pytest.fixture
def server() -> MCPServer:
    return build_server(GameState.open(zork1_path(), seed=12))


# -- in memory -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_all_tools_in_memory(
    server: MCPServer, mode: Any, autojump_clock: trio.testing.MockClock
) -> None:
    async with Client(server, mode=mode) as client:
        if mode == "legacy":  # the initialize handshake ran over JSON-RPC on memory streams
            assert client.server_info is not None
            assert client.server_info.name == SERVER_NAME
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert list(tools) == TOOLS
        assert tools["play_action"].input_schema["required"] == ["action"]
        assert tools["play_action"].input_schema["properties"]["action"]["type"] == "string"
        for name in ["memory", "get_map", "inventory", "status"]:
            annotations = tools[name].annotations
            assert annotations is not None
            assert annotations.read_only_hint is True
            assert tools[name].input_schema.get("properties", {}) == {}

        assert text_of(await client.call_tool("get_map", {})).startswith("Map: no locations explored yet")
        assert text_of(await client.call_tool("inventory", {})) == "Inventory: You are empty-handed."

        result = await client.call_tool("play_action", {"action": "open mailbox"})
        assert not result.is_error
        assert text_of(result) == "Opening the small mailbox reveals a leaflet.\n\n[Score: 0 | Moves: 1]"
        await client.call_tool("play_action", {"action": "take leaflet"})
        assert text_of(await client.call_tool("inventory", {})) == "Inventory: leaflet"
        await client.call_tool("play_action", {"action": "n"})

        memory = text_of(await client.call_tool("memory", {}))
        assert memory.startswith(
            "Current State:\n- Location: North of House\n- Score: 0 points\n- Moves: 3\n- Game: zork1\n\n"
            "Recent Actions:\n  > open mailbox -> Opening the small mailbox reveals a leaflet....\n"
            "  > take leaflet -> Taken....\n  > n -> North of House You are facing"
        )
        assert "\n\nCurrent Observation:\nNorth of House\nYou are facing the north side" in memory
        assert text_of(await client.call_tool("get_map", {})) == (
            "Explored Locations and Exits:\n\n* West of House\n    -> north -> North of House\n\n"
            "[Current] North of House"
        )
        assert json.loads(text_of(await client.call_tool("status", {}))) == {
            "game": "zork1",
            "location": "North of House",
            "score": 0,
            "max_score": 350,
            "moves": 3,
            "game_over": False,
            "victory": False,
            "died": False,
        }


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"action": ""}, "action is empty"),
        ({"action": "x" * 10240}, "action is 10240 characters long"),
        ({"action": "look\x07"}, r"action contains '\\x07' at position 4"),
        ({"action": "look\nquit"}, r"action contains '\\n'"),
        ({"action": "save"}, "'save' is not available"),
        ({"action": 5}, "Input should be a valid string"),
        ({"action": None}, "Input should be a valid string"),
        ({"action": ["n"]}, "Input should be a valid string"),
        ({}, "Field required"),
    ],
)
async def test_bad_input_is_a_tool_error_and_the_server_carries_on(
    server: MCPServer, arguments: dict[str, Any], message: str, autojump_clock: trio.testing.MockClock
) -> None:
    async with Client(server, mode="legacy") as client:
        result = await client.call_tool("play_action", arguments)
        assert result.is_error
        assert re.search(message, text_of(result)), text_of(result)
        after = await client.call_tool("play_action", {"action": "look"})
        assert not after.is_error
        assert text_of(after).endswith("[Score: 0 | Moves: 1]")


async def test_play_after_game_over_is_a_tool_error(autojump_clock: trio.testing.MockClock) -> None:
    state = GameState.open(zork1_path(), seed=12)
    for action in ["n", "e", "open window", "w", "w", "move rug", "open trap door", "d"]:
        state.take_action(action)
    back = ["e", "s", "e", "w", "w", "open trap door", "d"]
    async with Client(build_server(state), mode="legacy") as client:
        texts = []
        for round_ in range(3):
            texts.append(text_of(await client.call_tool("play_action", {"action": "n"})))
            if round_ < 2:
                for action in back:
                    await client.call_tool("play_action", {"action": action})
        assert [t.endswith("\n\nGAME OVER") for t in texts] == [False, False, True]
        assert all("You have died" in t for t in texts)
        status = json.loads(text_of(await client.call_tool("status", {})))
        assert status["game_over"] is True
        assert status["victory"] is False
        assert status["died"] is True
        result = await client.call_tool("play_action", {"action": "look"})
        assert result.is_error
        assert "the game is over (score 5, 24 moves)" in text_of(result)
        assert not (await client.call_tool("memory", {})).is_error


# -- property: the tool layer never crashes --------------------------------------------------------

json_values = st.one_of(
    st.text(max_size=30),
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=40),
    st.text(
        alphabet=st.characters(codec="utf-8", categories=["Cc", "Cf", "Cs", "Zl"]), min_size=1, max_size=8
    ),
    st.builds(lambda unit, n: unit * n, st.text(min_size=1, max_size=3), st.integers(100, 12000)),
    st.sampled_from(["look", "n", "s", "take leaflet", "open mailbox", "inventory", "jump"]),
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.lists(st.text(max_size=5), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@pytest.fixture(scope="module")
def shared_server() -> Iterator[tuple[MCPServer, GameState]]:
    state = GameState.open(zork1_path(), seed=5)
    yield build_server(state), state
    state.close()


@settings(max_examples=100, deadline=None)
@given(value=json_values)
def test_any_argument_gives_the_score_line_or_a_clear_tool_error(
    shared_server: tuple[MCPServer, GameState], value: object
) -> None:
    server, state = shared_server
    if state.game.done:
        state.reset()

    async def check() -> None:
        async with Client(server, mode="legacy") as client:
            result = await client.call_tool("play_action", {"action": value})
            text = text_of(result)
            if result.is_error:
                assert text.startswith("Error executing tool play_action: "), text
                assert len(text) > len("Error executing tool play_action: ") + 10
            else:
                assert isinstance(value, str)
                assert SCORE_LINE.search(text), text
            assert not (await client.call_tool("memory", {})).is_error  # still serving

    trio.run(check, clock=trio.testing.MockClock(autojump_threshold=AUTOJUMP_THRESHOLD))


# -- choosing the game -----------------------------------------------------------------------------


async def test_create_server_follows_game_and_seed_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, autojump_clock: trio.testing.MockClock
) -> None:
    monkeypatch.chdir(tmp_path)  # no pyproject.toml here
    monkeypatch.setenv("GAME", str(zork1_path()))
    monkeypatch.setenv("ZORKMCP_GAME_SEED", "1")
    actions = walkthrough()[:150]  # far enough for the thief and the troll to roll their dice

    def transcript(seed: int) -> list[str]:
        with ZorkGame.open(zork1_path(), seed=seed) as reference:
            return [reference.step(action).observation for action in actions]

    async with Client(create_server(), mode="legacy") as client:
        played = []
        for action in actions:
            text = text_of(await client.call_tool("play_action", {"action": action}))
            played.append(re.split(r"\n\n(?:\+\d+ points!|\[Score:)", text)[0])
    assert played == transcript(1)
    assert played != transcript(12)


def test_create_server_reads_game_file_path_from_pyproject(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "games").mkdir()
    (tmp_path / "games" / "mine.z3").write_bytes(zork1_path().read_bytes())
    (tmp_path / "pyproject.toml").write_text('[tool.zorkgpt.files]\ngame_file_path = "games/missing.z3"\n')
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GAME", raising=False)
    with pytest.raises(GameError, match=r"missing\.z3 \(from game_file_path in \[tool\.zorkgpt\.files\]\)"):
        create_server()
    (tmp_path / "pyproject.toml").write_text('[tool.zorkgpt.files]\ngame_file_path = "games/mine.z3"\n')
    assert isinstance(create_server(), Server)


def test_a_bad_seed_variable_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ZORKMCP_GAME_SEED", "twelve")
    with pytest.raises(
        GameError, match="ZORKMCP_GAME_SEED: a seed must be a non-negative integer, got 'twelve'"
    ):
        create_server(str(zork1_path()))


def test_main_reports_a_missing_game_and_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--game", str(tmp_path / "nope.z3")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""  # stdout is the MCP channel
    assert re.match(r"zorkmcp game server: game file not found: .*nope\.z3 \(from --game\)", captured.err)


# -- a real subprocess over stdio ------------------------------------------------------------------


async def test_stdio_subprocess_plays_real_zork() -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "zorkmcp.game.server", "--game", str(zork1_path()), "--seed", "12"],
        cwd=str(REPO),
    )
    with tempfile.TemporaryFile("w+") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
            assert client.server_info is not None
            assert client.server_info.name == SERVER_NAME
            assert [tool.name for tool in (await client.list_tools()).tools] == TOOLS
            result = await client.call_tool("play_action", {"action": "open mailbox"})
            assert not result.is_error
            assert text_of(result) == "Opening the small mailbox reveals a leaflet.\n\n[Score: 0 | Moves: 1]"
            bad = await client.call_tool("play_action", {"action": "\x00"})
            assert bad.is_error
            assert "action contains '\\x00'" in text_of(bad)
            assert text_of(await client.call_tool("inventory", {})) == "Inventory: You are empty-handed."
        errlog.seek(0)
        assert "Traceback" not in errlog.read()


async def test_the_stdlib_server_lists_what_the_sdk_server_lists(server: MCPServer) -> None:
    """The default stdio server (standard library) and build_server (the SDK) offer the same tools."""
    async with Client(server) as client:
        listed = [
            tool.model_dump(by_alias=True, exclude_none=True) for tool in (await client.list_tools()).tools
        ]
    assert listed == [dict(listing) for listing in TOOL_LISTINGS]
    assert listed[0]["inputSchema"] == {
        "type": "object",
        "properties": {
            "action": {
                "description": (
                    "The command to play, e.g. 'north' or 'take lamp': at most 198 characters of "
                    "printable ASCII (no control characters, no backslash)."
                ),
                "maxLength": 198,
                "title": "Action",
                "type": "string",
            }
        },
        "required": ["action"],
        "title": "play_actionArguments",
    }


async def test_the_inprocess_server_lists_and_answers_as_the_stdio_one() -> None:
    """create_server (the SDK's lowlevel server, what zorkmcp eval plays) next to the stdio loop's answers."""
    async with Client(create_server(str(zork1_path()), 12), mode="legacy") as client:
        listed = [
            tool.model_dump(by_alias=True, exclude_none=True) for tool in (await client.list_tools()).tools
        ]
        info = client.server_info
        empty = await client.call_tool("play_action", {"action": ""})
        not_text = await client.call_tool("play_action", {"action": 3})
        north = await client.call_tool("play_action", {"action": "north"})
        status = await client.call_tool("status", {})
        with pytest.raises(Exception, match=r"Unknown tool: fly \(available: play_action, memory, get_map, "):
            await client.call_tool("fly", {})
    assert listed == [dict(listing) for listing in TOOL_LISTINGS]
    assert info is not None
    assert info.name == "Text Adventure Server"
    assert (empty.is_error, text_of(empty)) == (
        True,
        "Error executing tool play_action: action is empty: type a command such as 'look' or 'north'",
    )
    assert (not_text.is_error, text_of(not_text)) == (
        True,
        "Error executing tool play_action: action must be a string, e.g. 'north'",
    )
    assert not north.is_error
    assert text_of(north).startswith("North of House\nYou are facing the north side of a white house.")
    assert json.loads(text_of(status))["location"] == "North of House"


def test_games_opened_in_many_threads_at_once_are_independent_and_leave_warnings_alone() -> None:
    """zorkmcp eval opens each episode's game in a worker thread: at once, in any order."""
    actions = ["north", "east", "open window", "enter", "take all", "west", "take lamp", "move rug"]
    seeds = [1, 12] * 8

    def transcript(game: ZorkGame) -> list[str]:
        return [game.step(action).observation for action in actions]

    with ZorkGame.open(zork1_path(), seed=1) as one, ZorkGame.open(zork1_path(), seed=12) as twelve:
        expected = {1: transcript(one), 12: transcript(twelve)}
    # Games that shared an interpreter would play each other's moves: this is one game's walk.
    assert [text.split("\n")[0] for text in expected[1][::3]] == ["North of House", "Kitchen", "Taken."]
    assert expected[1][-1] == (
        "With a great effort, the rug is moved to one side of the room, revealing the dusty cover of a "
        "closed trap door."
    )
    filters = list(warnings.filters)
    barrier = threading.Barrier(len(seeds))
    played: dict[int, list[str]] = {}

    def play(index: int) -> None:
        barrier.wait()
        with ZorkGame.open(zork1_path(), seed=seeds[index]) as game:
            played[index] = transcript(game)

    threads = [threading.Thread(target=play, args=(index,)) for index in range(len(seeds))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert played == {index: expected[seed] for index, seed in enumerate(seeds)}
    assert warnings.filters == filters  # catch_warnings from two threads at once would leave one behind


@pytest.mark.parametrize("variant", [[], ["--sdk"]])
async def test_both_stdio_variants_answer_alike(variant: list[str]) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "zorkmcp.game.server", "--game", str(zork1_path()), "--seed", "12", *variant],
        cwd=str(REPO),
    )
    with tempfile.TemporaryFile("w+") as errlog:
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as client:
            empty = await client.call_tool("play_action", {"action": ""})
            status = await client.call_tool("status", {})
    assert empty.is_error
    assert text_of(empty) == (
        "Error executing tool play_action: action is empty: type a command such as 'look' or 'north'"
    )
    assert json.loads(text_of(status)) == {
        "game": "zork1",
        "location": "West of House",
        "score": 0,
        "max_score": 350,
        "moves": 0,
        "game_over": False,
        "victory": False,
        "died": False,
    }


@pytest.mark.skipif(
    (os.cpu_count() or 1) < 2, reason="OpenBLAS starts one thread per core: one core shows nothing"
)
def test_the_game_server_runs_on_one_thread() -> None:
    # Jericho imports numpy; its OpenBLAS would start a thread per core that the game never uses.
    env = {key: value for key, value in os.environ.items() if not key.startswith(("OPENBLAS_", "OMP_"))}
    server = subprocess.Popen(
        [sys.executable, "-m", "zorkmcp.game.server", "--game", str(zork1_path())],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=str(REPO),
    )
    try:
        assert server.stdin is not None
        assert server.stdout is not None
        server.stdin.write(b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n')
        server.stdin.flush()
        assert json.loads(server.stdout.readline()) == {"jsonrpc": "2.0", "id": 1, "result": {}}
        status = Path(f"/proc/{server.pid}/status").read_text()
        assert re.search(r"^Threads:\s+(\d+)$", status, re.MULTILINE)[1] == "1"  # type: ignore[index]
    finally:
        server.kill()
        server.wait()
        for pipe in (server.stdin, server.stdout):
            if pipe is not None:
                pipe.close()
