"""Lone UTF-16 surrogates in JSON-like data: a Python ``str`` can hold one (``"\\ud800"``, half an
emoji), UTF-8 cannot encode it, and so no MCP transport can send it.

The engine's model never hands one on (:mod:`zorkmcp.llm._text` replaces them where the model's text
comes in); a caller's own arguments (``zorkmcp call``, ``Bridge.call_tool``) can hold one, and the
toolbox and the stdio writer refuse those with where the character is (:func:`lone_surrogate`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["SURROGATE", "lone_surrogate"]

SURROGATE: Final = re.compile("[\ud800-\udfff]")
"""A UTF-16 surrogate code point: in a Python ``str``, always a lone one (a pair would be decoded)."""


def lone_surrogate(value: Any, path: str = "arguments") -> tuple[str, str] | None:
    """Where the first lone surrogate in ``value`` is and which it is, or ``None`` when it holds none.

    Args:
        value: a string, or lists and objects of them (keys too), as a JSON message holds.
        path: how the message names ``value`` (``arguments``): a key is ``a key of arguments``, an
            item ``arguments['thought']`` or ``arguments[0]``.
    """
    if isinstance(value, str):
        found = SURROGATE.search(value)
        return None if found is None else (path, found.group())
    if isinstance(value, Mapping):
        for key, item in value.items():
            found_in = lone_surrogate(key, f"a key of {path}") or lone_surrogate(item, f"{path}[{key!r}]")
            if found_in is not None:
                return found_in
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found_in = lone_surrogate(item, f"{path}[{index}]")
            if found_in is not None:
                return found_in
    return None
