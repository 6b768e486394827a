"""GameState (seeds 003): history, map, memory and inventory texts, against real Zork I."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zorkmcp.errors import GameError
from zorkmcp.game import HISTORY_LIMIT, PACKAGED_GAME, ActionError, GameState, walkthrough
from zorkmcp.game._state import EMPTY_INVENTORY, NO_MAP_HINT

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

ZORK1_Z3 = PACKAGED_GAME

STATUS_LINE = re.compile(r"\s*>?\s*[^\n]*\s{2,}Score:\s*-?\d+\s+Moves:\s*\d+")
SCORE_LINE = re.compile(r"\n\n\[Score: (-?\d+) \| Moves: (\d+)\](\n\nGAME OVER)?\Z")

NORTH_OF_HOUSE = (
    "North of House\nYou are facing the north side of a white house. There is no door here, and all the "
    "windows are boarded up. To the north a narrow path winds through the trees."
)


def zork1_path() -> Path:
    """The real Zork I (MIT release 119), packaged with zorkmcp."""
    return ZORK1_Z3


@pytest.fixture
def state() -> Iterator[GameState]:
    game_state = GameState.open(zork1_path(), seed=12)
    yield game_state
    game_state.close()


def test_play_action_layout(state: GameState) -> None:
    assert (
        state.play_action("open mailbox")
        == "Opening the small mailbox reveals a leaflet.\n\n[Score: 0 | Moves: 1]"
    )
    for action in ["n", "e", "open window"]:
        state.play_action(action)
    kitchen = state.play_action("w")
    assert kitchen.startswith("Kitchen\nYou are in the kitchen of the white house.")
    assert kitchen.endswith("\n\n+10 points! (Total: 10)\n\n[Score: 10 | Moves: 5]")


def test_game_over_is_announced_at_the_end_of_the_walkthrough(state: GameState) -> None:
    *actions, last = walkthrough()
    for action in actions:
        state.take_action(action)
    text = state.play_action(last)
    assert text.startswith("Inside the Barrow\n")
    assert text.endswith("(Type RESTART, RESTORE, or QUIT):\n\n[Score: 350 | Moves: 394]\n\nGAME OVER")
    assert state.last_result is not None
    assert state.last_result.victory
    assert state.get_status() == {
        "game": "zork1",
        "location": "Stone Barrow",
        "score": 350,
        "max_score": 350,
        "moves": 394,
        "game_over": True,
        "victory": True,
        "died": False,
    }
    with pytest.raises(GameError, match="the game is over"):
        state.play_action("look")


def test_history_is_capped_at_50(state: GameState) -> None:
    assert HISTORY_LIMIT == 50
    actions = [f"examine {thing}" for thing in ["mailbox", "door", "house"]] * 20  # 60 actions
    for action in actions:
        state.take_action(action)
    assert len(state.history) == 50
    assert [a for a, _ in state.history] == actions[10:]
    assert state.history[-1] == ("examine house", state.observation)


def test_bad_input_leaves_history_and_map_alone(state: GameState) -> None:
    state.take_action("n")
    for bad in ["", "x" * 10240, "look\x1b[2J", "save"]:
        with pytest.raises(ActionError):
            state.play_action(bad)
    assert [a for a, _ in state.history] == ["n"]
    assert state.game.moves == 1


def test_map_learns_exits_from_movement_commands_only(state: GameState) -> None:
    assert state.get_map() == NO_MAP_HINT
    state.take_action("look")  # not a movement
    state.take_action("open mailbox")
    state.take_action("u")  # a movement that goes nowhere: "You can't go that way."
    assert state.get_map() == NO_MAP_HINT
    state.take_action("north")
    state.take_action("e")  # abbreviations are recorded as the full direction
    state.take_action("open window")
    state.take_action("go west")
    state.take_action("w")
    assert state.current_location == "Living Room"
    assert state.get_map() == (
        "Explored Locations and Exits:\n"
        "\n"
        "* Behind House\n"
        "    -> west -> Kitchen\n"
        "\n"
        "* Kitchen\n"
        "    -> west -> Living Room\n"
        "\n"
        "* North of House\n"
        "    -> east -> Behind House\n"
        "\n"
        "* West of House\n"
        "    -> north -> North of House\n"
        "\n"
        "[Current] Living Room"
    )
    state.take_action("e")
    state.take_action("e")  # the kitchen's east is the window back to Behind House
    exits = state.explored_locations
    assert exits["Kitchen"] == {"west -> Living Room", "east -> Behind House"}
    assert exits["Living Room"] == {"east -> Kitchen"}
    assert state.get_map().endswith("\n\n[Current] Behind House")


def test_a_deadly_move_records_no_exit(state: GameState) -> None:
    for action in ["n", "e", "open window", "w", "w", "move rug", "open trap door", "d"]:
        state.take_action(action)
    result = state.take_action("n")  # a grue, and Zork reincarnates you in a forest
    assert result.died
    assert result.location == "Forest"
    assert all("Forest" not in exit_ for exits in state.explored_locations.values() for exit_ in exits)
    assert state.current_location == "Forest"


def test_memory_format(state: GameState) -> None:
    assert state.get_memory() == (
        "Current State:\n"
        "- Location: West of House\n"
        "- Score: 0 points\n"
        "- Moves: 0\n"
        "- Game: zork1\n"
        "\n"
        "Recent Actions:\n"
        "  (none yet)\n"
        "\n"
        "Current Observation:\n" + state.game.intro
    )
    for action in ["look", "open mailbox", "take leaflet", "  n  "]:
        state.take_action(action)
    assert state.get_memory() == (
        "Current State:\n"
        "- Location: North of House\n"
        "- Score: 0 points\n"
        "- Moves: 4\n"
        "- Game: zork1\n"
        "\n"
        "Recent Actions:\n"
        "  > look -> West of House You are standing in an open field west of a wh...\n"
        "  > open mailbox -> Opening the small mailbox reveals a leaflet....\n"
        "  > take leaflet -> Taken....\n"
        "  > n -> North of House You are facing the north side of a white hous...\n"
        "\n"
        "Current Observation:\n" + NORTH_OF_HOUSE
    )


def test_memory_shows_the_last_five_actions(state: GameState) -> None:
    actions = ["look", "open mailbox", "take leaflet", "read leaflet", "drop leaflet", "n", "s"]
    for action in actions:
        state.take_action(action)
    recent = state.get_memory().split("Recent Actions:\n")[1].split("\n\nCurrent Observation:")[0]
    assert [line.split(" -> ")[0] for line in recent.splitlines()] == [f"  > {a}" for a in actions[-5:]]
    assert all(len(line.split(" -> ", 1)[1]) <= 63 for line in recent.splitlines())


def test_inventory_text(state: GameState) -> None:
    assert state.get_inventory() == EMPTY_INVENTORY == "Inventory: You are empty-handed."
    state.take_action("open mailbox")
    state.take_action("take leaflet")
    assert state.get_inventory() == "Inventory: leaflet"
    for action in ["n", "e", "open window", "w", "take sack"]:
        state.take_action(action)
    assert state.get_inventory() == "Inventory: brown sack, leaflet"


def test_reset_forgets_history_and_map(state: GameState) -> None:
    state.take_action("n")
    assert state.reset() == state.game.intro
    assert (state.history, state.explored_locations, state.current_location) == ((), {}, "West of House")
    assert state.get_map() == NO_MAP_HINT


# -- property: no action string crashes the game state ---------------------------------------------

_COMMANDS = [
    "look",
    "n",
    "s",
    "e",
    "w",
    "u",
    "d",
    "open mailbox",
    "take leaflet",
    "inventory",
    "jump",
    "x me",
]

actions = st.one_of(
    st.sampled_from(_COMMANDS),
    st.text(max_size=40),
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=60),
    st.text(
        alphabet=st.characters(codec="utf-8", categories=["Cc", "Cf", "Zl", "Zp"]), min_size=1, max_size=10
    ),
    st.builds(lambda unit, n: unit * n, st.text(min_size=1, max_size=4), st.integers(50, 5000)),
    st.lists(st.sampled_from(_COMMANDS), min_size=2, max_size=4).map(". ".join),
)


@pytest.fixture(scope="module")
def shared_state() -> Iterator[GameState]:
    game_state = GameState.open(zork1_path(), seed=3)
    yield game_state
    game_state.close()


@settings(max_examples=100, deadline=None)
@given(action=actions)
def test_any_action_gives_the_score_line_or_a_clear_error(shared_state: GameState, action: str) -> None:
    if shared_state.game.done:
        shared_state.reset()
    history = shared_state.history
    try:
        text = shared_state.play_action(action)
    except ActionError as exc:
        refused: ActionError | None = exc
    else:
        refused = None
    if refused is not None:
        assert str(refused).startswith(("action ", "'")), refused
        assert shared_state.history == history
        return
    match = SCORE_LINE.search(text)
    assert match is not None, text
    assert int(match[1]) == shared_state.game.score
    assert int(match[2]) == shared_state.game.moves
    assert bool(match[3]) == shared_state.game.done
    assert shared_state.history[-1] == (action.strip(" "), shared_state.observation)
    assert not STATUS_LINE.match(shared_state.observation)
