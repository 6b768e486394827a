"""The game state behind the game MCP server (seeds 003 §GameState Class).

:class:`GameState` wraps one :class:`ZorkGame` and keeps what the server's tools report: the
history of (action, result) pairs (the last 50), the exploration map learned from movement
commands, and the texts of ``play_action``, ``memory``, ``get_map`` and ``inventory`` in the
seed's formats.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from ._actions import movement_direction
from ._jericho import StepResult, ZorkGame

if TYPE_CHECKING:
    import os
    from collections.abc import Sequence

__all__ = [
    "EMPTY_INVENTORY",
    "HISTORY_LIMIT",
    "MEMORY_ACTIONS",
    "MEMORY_RESULT_CHARS",
    "NO_MAP_HINT",
    "GameState",
]

HISTORY_LIMIT = 50
"""History entries kept (seeds 003 §take_action step 4)."""

MEMORY_ACTIONS = 5
"""Recent actions shown by :meth:`GameState.get_memory` (seeds 003 §get_memory)."""

MEMORY_RESULT_CHARS = 60
"""Characters of each recent result shown by :meth:`GameState.get_memory`."""

NO_MAP_HINT = "Map: no locations explored yet. Try moving around (north, south, east, west, up, down, ...)!"
"""What ``get_map`` says before any move (seeds 003: "a hint message")."""

EMPTY_INVENTORY = "Inventory: You are empty-handed."
"""What ``inventory`` says when the player carries nothing."""


class GameState:
    """History, exploration map and formatted views of one running game (seeds 003).

    Args:
        game: the game to play; the state takes it over (``close()`` closes it).
    """

    def __init__(self, game: ZorkGame) -> None:
        self.game = game
        self._history: deque[tuple[str, str]] = deque(maxlen=HISTORY_LIMIT)
        self.explored_locations: dict[str, set[str]] = {}
        """Location → exits learned so far, each ``"north -> Kitchen"`` (seeds 003 §Map Update Logic)."""
        self.current_location = game.location
        self.last_result: StepResult | None = None
        """What the last action did (``None`` before the first)."""

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, seed: int | None = None) -> GameState:
        """Open a story file with :meth:`ZorkGame.open` and wrap it.

        Args:
            path: the story file.
            seed: the interpreter's RNG seed.

        Returns:
            The state of a fresh game.

        Raises:
            GameError: the file cannot be played (see :meth:`ZorkGame.open`).
        """
        return cls(ZorkGame.open(path, seed=seed))

    def close(self) -> None:
        """Close the game."""
        self.game.close()

    def reset(self) -> str:
        """Start the game again and forget the history and the map.

        Returns:
            The game's opening text.
        """
        intro = self.game.reset()
        self._history.clear()
        self.explored_locations.clear()
        self.current_location = self.game.location
        self.last_result = None
        return intro

    @property
    def history(self) -> Sequence[tuple[str, str]]:
        """The last :data:`HISTORY_LIMIT` (action, result) pairs, oldest first."""
        return tuple(self._history)

    @property
    def observation(self) -> str:
        """The current observation: the last action's text, or the opening text."""
        return self.game.observation

    def take_action(self, action: str) -> StepResult:
        """Play an action and update the history and the map (seeds 003 §take_action).

        A movement command (``north``, ``n``, ``go north``, …) that changed the location records
        the exit, e.g. ``"north -> Kitchen"`` under ``"West of House"``; abbreviations are recorded
        under the full direction name. A move that killed the player records nothing (Zork puts
        the reincarnated player in a forest, which is not where the exit leads).

        Args:
            action: the command.

        Returns:
            What the action did.

        Raises:
            ActionError: the action is not one the game can take (see :func:`validate_action`).
            GameError: the game is over.
        """
        before = self.current_location
        result = self.game.step(action)
        self._history.append((action.strip(), result.observation))
        direction = movement_direction(action)
        if direction is not None and result.location != before and not result.died:
            self.explored_locations.setdefault(before, set()).add(f"{direction} -> {result.location}")
        self.current_location = result.location
        self.last_result = result
        return result

    def play_action(self, action: str) -> str:
        """Play an action and format the answer of the ``play_action`` tool (seeds 003 §1).

        The game's text; ``+N points! (Total: T)`` when points were gained;
        ``[Score: S | Moves: M]``; ``GAME OVER`` when the game ended; blank lines between.

        Args:
            action: the command.

        Returns:
            The text for the tool's result.

        Raises:
            ActionError: the action is not one the game can take.
            GameError: the game is over.
        """
        result = self.take_action(action)
        text = result.observation
        if result.reward > 0:
            text += f"\n\n+{result.reward} points! (Total: {result.score})"
        text += f"\n\n[Score: {result.score} | Moves: {result.moves}]"
        if result.done:
            text += "\n\nGAME OVER"
        return text

    def get_memory(self) -> str:
        """The ``memory`` tool's summary (seeds 003 §get_memory): state, recent actions, observation."""
        recent = list(self._history)[-MEMORY_ACTIONS:]
        if recent:
            lines = [f"  > {act} -> {_one_line(result)[:MEMORY_RESULT_CHARS]}..." for act, result in recent]
        else:
            lines = ["  (none yet)"]
        return (
            "Current State:\n"
            f"- Location: {self.current_location}\n"
            f"- Score: {self.game.score} points\n"
            f"- Moves: {self.game.moves}\n"
            f"- Game: {self.game.name}\n"
            "\n"
            "Recent Actions:\n" + "\n".join(lines) + "\n\n"
            "Current Observation:\n"
            f"{self.observation}"
        )

    def get_status(self) -> dict[str, Any]:
        """The ``status`` tool's data: the game's own view of where the episode stands.

        Not in seed 003 (its ``play_action`` only says ``GAME OVER``): a program driving the game
        needs to know *how* it ended without guessing from the score.

        Returns:
            ``{"game", "location", "score", "max_score", "moves", "game_over", "victory", "died"}``:
            ``max_score`` is ``None`` for a game whose maximum is unknown; ``game_over`` is the
            ``GAME OVER`` of ``play_action``; ``victory`` the game's winning ending; ``died`` whether
            the last action killed the player (Zork I may reincarnate them).
        """
        game = self.game
        return {
            "game": game.name,
            "location": self.current_location,
            "score": game.score,
            "max_score": game.max_score,
            "moves": game.moves,
            "game_over": game.done,
            "victory": game.victory,
            "died": game.died,
        }

    def get_map(self) -> str:
        """The ``get_map`` tool's text (seeds 003 §get_map): locations and exits, ``[Current]`` last."""
        if not self.explored_locations:
            return NO_MAP_HINT
        lines = ["Explored Locations and Exits:"]
        for location, exits in sorted(self.explored_locations.items()):
            lines.append(f"\n* {location}")
            lines.extend(f"    -> {exit_}" for exit_ in sorted(exits))
        lines.append(f"\n[Current] {self.current_location}")
        return "\n".join(lines)

    def get_inventory(self) -> str:
        """The ``inventory`` tool's text: ``Inventory: a, b, c`` or an empty-handed message."""
        items = self.game.inventory
        if not items:
            return EMPTY_INVENTORY
        return "Inventory: " + ", ".join(items)


def _one_line(text: str) -> str:
    return " ".join(text.split())
