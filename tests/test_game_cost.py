"""What makes a game cheap must not change what it does (real Zork I, no mocks).

``ZorkGame`` reads the machine once per change (a step, a reset) and keeps what it read; the
interpreter of a closed or collected game is loaded again for the next game opened. These tests
fail if a value read before a change leaks after it, or if a reused interpreter plays differently
from a fresh one or is shared by two games.
"""

from __future__ import annotations

import gc
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import pytest

from zorkmcp.errors import GameError
from zorkmcp.game import PACKAGED_GAME, ActionError, GameState, ZorkGame, walkthrough
from zorkmcp.game._jericho import _IDLE, IDLE_INTERPRETERS

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

# After each action from the start with seed 12: score, moves, location, inventory.
OPENING = [
    ("open mailbox", 0, 1, "West of House", []),
    ("take leaflet", 0, 2, "West of House", ["leaflet"]),
    ("n", 0, 3, "North of House", ["leaflet"]),
    ("e", 0, 4, "Behind House", ["leaflet"]),
    ("open window", 0, 5, "Behind House", ["leaflet"]),
    ("w", 10, 6, "Kitchen", ["leaflet"]),
    ("take sack", 10, 7, "Kitchen", ["brown sack", "leaflet"]),
    ("w", 10, 8, "Living Room", ["brown sack", "leaflet"]),
    ("take lamp", 10, 9, "Living Room", ["brass lantern", "brown sack", "leaflet"]),
    ("move rug", 10, 10, "Living Room", ["brass lantern", "brown sack", "leaflet"]),
    ("open trap door", 10, 11, "Living Room", ["brass lantern", "brown sack", "leaflet"]),
    ("turn on lamp", 10, 12, "Living Room", ["brass lantern", "brown sack", "leaflet"]),
    ("d", 35, 13, "Cellar", ["brass lantern", "brown sack", "leaflet"]),
]
START = (0, 0, "West of House", [])


@pytest.fixture(autouse=True)
def no_collection_midway() -> Iterator[None]:
    """The garbage of earlier tests is collected first, and none while a test runs: a game collected
    midway would put its interpreter before the one a test expects to be reused."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def read(game: ZorkGame) -> tuple[int, int, str, list[str]]:
    return game.score, game.moves, game.location, game.inventory


def test_what_is_read_of_the_machine_follows_every_step_and_reset() -> None:
    with ZorkGame.open(PACKAGED_GAME, seed=12) as game:
        assert read(game) == START
        for action, *after in OPENING:
            assert read(game) != tuple(after)  # read (and kept) before the step
            result = game.step(action)
            assert (result.score, result.moves, result.location) == tuple(after[:3])
            assert read(game) == tuple(after), action
            assert read(game) == tuple(after), action  # read again: the same
        with pytest.raises(ActionError):
            game.step("save")  # refused before the interpreter: nothing changed
        assert read(game) == (35, 13, "Cellar", ["brass lantern", "brown sack", "leaflet"])
        game.reset()
        assert read(game) == START
        assert game.step("open mailbox").moves == 1
        assert read(game) == (0, 1, "West of House", [])


def test_the_status_tool_after_a_step_shows_that_step() -> None:
    state = GameState.open(PACKAGED_GAME, seed=12)
    try:
        for action, score, moves, location, _ in OPENING[:6]:
            before = state.get_status()
            state.play_action(action)
            assert state.get_status() == {**before, "score": score, "moves": moves, "location": location}
        assert state.get_memory().startswith(
            "Current State:\n- Location: Kitchen\n- Score: 10 points\n- Moves: 6\n- Game: zork1\n"
        )
        assert state.get_inventory() == "Inventory: leaflet"
        state.reset()
        assert state.get_status() == {
            "game": "zork1",
            "location": "West of House",
            "score": 0,
            "max_score": 350,
            "moves": 0,
            "game_over": False,
            "victory": False,
            "died": False,
        }
    finally:
        state.close()


def test_a_closed_game_reads_nothing_it_read_before() -> None:
    game = ZorkGame.open(PACKAGED_GAME, seed=12)
    game.step("open mailbox")
    assert read(game) == (0, 1, "West of House", [])
    game.close()
    for name in ("score", "moves", "location", "inventory"):
        with pytest.raises(GameError, match="was closed"):
            getattr(game, name)
    game.close()  # twice: nothing more happens


def test_a_game_opened_on_a_closed_games_interpreter_plays_as_on_a_fresh_one() -> None:
    actions = walkthrough()[:120]
    for seed in (7, 0):  # 0: Jericho's "no seed", set after loading (a second setup)
        first = ZorkGame.open(PACKAGED_GAME, seed=seed)
        played = [first.step(a) for a in actions]
        inventory = first.inventory
        env = first._env
        first.close()
        assert _IDLE[-1] is env
        with ZorkGame.open(PACKAGED_GAME, seed=seed) as second:
            assert second._env is env  # the interpreter was reused
            assert read(second) == START
            assert second.intro == first.intro
            assert [second.step(a) for a in actions] == played
            assert second.inventory == inventory


def test_a_collected_game_leaves_its_interpreter_to_the_next() -> None:
    game = ZorkGame.open(PACKAGED_GAME, seed=12)
    game.step("n")
    env = game._env
    del game  # the last reference: collected at once
    assert _IDLE[-1] is env
    with ZorkGame.open(PACKAGED_GAME, seed=12) as again:
        assert again._env is env
        assert read(again) == START
        assert again.step("open mailbox").observation == "Opening the small mailbox reveals a leaflet."


def test_a_closed_game_never_plays_on_the_interpreter_it_left() -> None:
    left = ZorkGame.open(PACKAGED_GAME, seed=12)
    for action, *_ in OPENING[:6]:
        left.step(action)
    env = left._env
    left.close()
    with ZorkGame.open(PACKAGED_GAME, seed=12) as taker:
        assert taker._env is env
        with pytest.raises(GameError, match="was closed"):
            left.step("w")
        with pytest.raises(GameError, match="was closed"):
            left.reset()
        assert read(taker) == START
        assert taker.step("n").location == "North of House"
    with ZorkGame.open(PACKAGED_GAME, seed=12) as one, ZorkGame.open(PACKAGED_GAME, seed=12) as two:
        assert one._env is not two._env
        one.step("n")
        assert (one.location, two.location) == ("North of House", "West of House")


def test_an_edited_story_file_is_read_again_by_a_reused_interpreter(tmp_path: Path) -> None:
    # The serial number sits in the header, outside the checksum, and the game prints it at the start.
    story = tmp_path / "zork1.z3"
    data = PACKAGED_GAME.read_bytes()
    story.write_bytes(data)
    first = ZorkGame.open(story, seed=12)
    assert "Release 119 / Serial number 880429" in first.intro
    env = first._env
    first.close()
    story.write_bytes(data[:0x12] + b"991231" + data[0x18:])
    with ZorkGame.open(story, seed=12) as edited:
        assert edited._env is env
        assert "Release 119 / Serial number 991231" in edited.intro
        assert edited.step("n").location == "North of House"


def test_idle_interpreters_are_bounded() -> None:
    _IDLE.clear()
    games = [ZorkGame.open(PACKAGED_GAME, seed=12) for _ in range(IDLE_INTERPRETERS + 6)]
    assert len({id(game._env) for game in games}) == len(games)
    for game in games:
        game.close()
    assert len(_IDLE) == IDLE_INTERPRETERS == 64


def test_games_opened_in_several_threads_each_play_their_own() -> None:
    actions = walkthrough()[:60]

    def play(seed: int) -> list[str]:
        with ZorkGame.open(PACKAGED_GAME, seed=seed) as game:
            return [game.step(a).observation for a in actions]

    expected = {seed: play(seed) for seed in (7, 12)}
    seeds = [7, 12] * 12
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(play, seeds))
    assert results == [expected[seed] for seed in seeds]
