"""What a player may type: validation of actions and the movement commands the map learns from."""

from __future__ import annotations

import re

from ..errors import GameError

__all__ = [
    "BLOCKED_COMMANDS",
    "DEBUG_COMMAND_PREFIX",
    "MAX_ACTION_LENGTH",
    "MOVEMENT_COMMANDS",
    "ActionError",
    "movement_direction",
    "validate_action",
]

MAX_ACTION_LENGTH = 198
"""The longest action the interpreter takes: Jericho's input line holds 198 bytes."""

BLOCKED_COMMANDS = frozenset(
    {"save", "restore", "restart", "quit", "q", "script", "unscript", "recording", "replay"}
)
"""Interpreter commands this adapter refuses: they write files into the working folder (``save``,
``script``, the Inform library's ``recording``), read commands from one (``replay``), or end or
silently restart the session (``quit``, ``restart``, ``restore``).

A version 3 game (Zork I) reads only the first 6 letters of a word, so ``scripting``, ``restarted``
and ``restoration`` are its ``script``, ``restart`` and ``restore``: a word is refused when it is one
of these commands or starts with the first 6 letters of ``restart``, ``restore``, ``script`` or
``unscript``. (``recording`` and ``replay`` are the Inform library's, whose games read 9 letters:
``record``, the tape recorder's verb in Ballyhoo, stays playable.)"""

DEBUG_COMMAND_PREFIX = "#"
"""Zork I's debugging verbs start with it: ``#command`` plays the commands of a file in the working
folder, ``#record`` writes every command into one, ``#unrecord`` stops, ``#random`` fixes the random
numbers. A word that starts with it is refused."""

_Z3_WORD_LETTERS = 6
_BLOCKED_PREFIXES = frozenset(
    word[:_Z3_WORD_LETTERS] for word in ("restart", "restore", "script", "unscript")
)

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
_DEBUG_WORD = re.compile(r"(?<![^\s.,\"])#[a-z]+")
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
            backslash (an interpreter command: an unknown one hangs dumb-frotz), uses one of
            :data:`BLOCKED_COMMANDS` (or a longer word the game reads as one), or a debugging verb
            (:data:`DEBUG_COMMAND_PREFIX`).
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
    lowered = text.lower()
    debug = _DEBUG_WORD.search(lowered)
    if debug:
        raise ActionError(
            f"{debug[0]!r} is not available in this game session: the game's debugging commands "
            f"(words starting with {DEBUG_COMMAND_PREFIX!r}: #command, #record, #unrecord, #random) "
            "are disabled"
        )
    blocked = sorted(word for word in set(_WORD.findall(lowered)) if _is_blocked(word))
    if blocked:
        word = blocked[0]
        read_as = "" if word in BLOCKED_COMMANDS else f" (the game reads its first 6 letters, {word[:6]!r})"
        raise ActionError(
            f"{word!r}{read_as} is not available in this game session: saving, restoring, restarting, "
            "quitting, transcripts and command recordings are disabled"
        )
    return text


def _is_blocked(word: str) -> bool:
    return word in BLOCKED_COMMANDS or word[:_Z3_WORD_LETTERS] in _BLOCKED_PREFIXES


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
