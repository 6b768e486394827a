"""Text from outside (the model, a tool, a server, the game) made safe to show: control characters visible.

A model's reasoning, a tool's name, arguments or result and the game's text may hold control
characters: ``ESC [2J`` clears the screen, ``ESC ]0;…BEL`` sets the window title, ``ESC ]52;…``
writes the clipboard, and the single-byte C1 ``CSI`` (``\\x9b``) starts the same sequences on some
terminals; rich strips only BEL, BS, VT, FF and CR. The bidirectional controls (U+202E…) reorder
the text around them, so one tool name can look like another. Each is written instead as its
Python escape (``\\x1b``, ``\\u202e``): the text that follows stays (``[2J`` is shown, and does
nothing without its ESC), and a reader sees that the text held something odd, where removing it
would hide that. The terminal views (the live view, the ``tools`` table and ``--lint``), stderr and
the HTML reports all use :func:`visible_controls`.
"""

from __future__ import annotations

import re

__all__ = ["visible_controls"]

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Unicode's ``Cc`` characters (C0, DEL, C1) and the bidirectional controls."""


def visible_controls(text: str, *, keep: str = "\n\t") -> str:
    """``text`` with every control character not in ``keep`` written as ``\\xNN`` (or ``\\uNNNN``).

    Args:
        text: text from outside (model output, a tool's name, arguments or result, game text).
        keep: control characters to leave as they are: newline and tab by default; ``""`` for one
            line of a table (a newline would start a row of its own).
    """

    def escaped(match: re.Match[str]) -> str:
        char = match.group()
        if char in keep:
            return char
        return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"

    return _CONTROL.sub(escaped, text)
