"""What a player may type: validation of actions and the movement commands the map learns from."""

from __future__ import annotations

import re

from ..errors import GameError

__all__ = [
    "BLOCKED_COMMANDS",
    "MAX_ACTION_LENGTH",
    "MOVEMENT_COMMANDS",
    "ActionError",
    "movement_direction",
    "validate_action",
]

MAX_ACTION_LENGTH = 198
"""The longest action the interpreter takes: Jericho's input line holds 198 bytes."""

BLOCKED_COMMANDS = frozenset({"save", "restore", "restart", "quit", "q", "script", "unscript"})
"""Interpreter commands this adapter refuses: they write files into the working folder (``save``,
``script``), or end or silently restart the session (``quit``, ``restart``, ``restore``)."""

# seeds 003 §take_action: north, south, east, west, up, down, enter, exit and their abbreviations
# (plus the diagonals, in and out, which Zork I uses as much).
MOVEMENT_COMMANDS: dict[str, str] = {
    "north": "north",
    "n": "north",
    "south": "south",
    "s": "south",
    "east": "east",
    "e": "east",
    "west": "west",
    "w": "west",
    "northeast": "northeast",
    "ne": "northeast",
    "northwest": "northwest",
    "nw": "northwest",
    "southeast": "southeast",
    "se": "southeast",
    "southwest": "southwest",
    "sw": "southwest",
    "up": "up",
    "u": "up",
    "down": "down",
    "d": "down",
    "enter": "enter",
    "in": "in",
    "exit": "exit",
    "out": "out",
}
"""Movement commands (and their abbreviations) mapped to the direction the map records."""

_WORD = re.compile(r"[a-z]+")
_GO = re.compile(r"^(?:go|walk|run)\s+(?P<direction>[a-z]+)$")


class ActionError(GameError, ValueError):
    """An action the game cannot take as typed (empty, too long, control characters, …)."""


def validate_action(action: object) -> str:
    """Check an action before it reaches the interpreter and return it with spaces trimmed.

    Args:
        action: what the player typed.

    Returns:
        The action, stripped of surrounding spaces.

    Raises:
        ActionError: the action is not a string, is empty, is longer than
            :data:`MAX_ACTION_LENGTH`, contains a character other than printable ASCII (the
            version 3 parser reads nothing else; a new line would smuggle in a second command) or a
            backslash (an interpreter command: an unknown one hangs dumb-frotz), or uses one of
            :data:`BLOCKED_COMMANDS`.
    """
    if not isinstance(action, str):
        raise ActionError(f"action must be a string, got {type(action).__name__}")
    text = action.strip(" ")
    if not text:
        raise ActionError("action is empty: type a command such as 'look' or 'north'")
    if len(text) > MAX_ACTION_LENGTH:
        raise ActionError(
            f"action is {len(text)} characters long; the game reads at most {MAX_ACTION_LENGTH} per command"
        )
    for position, char in enumerate(text):
        if not " " <= char <= "~":
            raise ActionError(
                f"action contains {char!r} at position {position}: only printable ASCII characters "
                "(letters, digits, spaces and punctuation, no control characters) are allowed"
            )
    if "\\" in text:
        # dumb-frotz reads a line starting with a backslash as an interpreter command, and an unknown
        # one makes it print "unknown command" forever: the game would hang.
        raise ActionError(
            f"action contains a backslash at position {text.index(chr(92))}: backslashes are "
            "interpreter commands, not game input"
        )
    blocked = sorted(set(_WORD.findall(text.lower())) & BLOCKED_COMMANDS)
    if blocked:
        raise ActionError(
            f"{blocked[0]!r} is not available in this game session: saving, restoring, restarting, "
            "quitting and transcripts are disabled"
        )
    return text


def movement_direction(action: str) -> str | None:
    """The direction a movement command goes in, or ``None`` for any other action.

    ``"n"``, ``"north"``, ``"go north"`` and ``" North "`` all give ``"north"``.

    Args:
        action: an action as typed.

    Returns:
        The full direction name, or ``None`` when the action is not a plain movement command.
    """
    text = " ".join(action.lower().split())
    match = _GO.match(text)
    if match:
        text = match["direction"]
    return MOVEMENT_COMMANDS.get(text)
