"""Text a model sent, made valid Unicode where it enters the engine.

Models split an emoji across tokens and emit half of its UTF-16 surrogate pair (``"\\ud83d"``),
raw in a string or as a JSON escape inside a tool call's ``arguments``. Python keeps such a *lone
surrogate* in a ``str``, and every UTF-8 encoder downstream refuses it: an MCP transport writing the
request, a JSON-lines log, a report. One rule applied once, when a response is built (the converters
of :class:`~zorkmcp.llm.LLMResponse`, :class:`~zorkmcp.llm.ToolCall` and
:class:`~zorkmcp.llm.FunctionCall`), keeps them out of the engine: a lone surrogate becomes U+FFFD
(the replacement character), and a complete pair, raw or escaped, stays the character it encodes.

Small models also write JSON as Python or JavaScript would (:func:`relaxed_json_object`): a tool
call's arguments in that notation are read as the object they write, as JSON, where the answer is
parsed.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from typing import Any

from .._surrogates import SURROGATE

__all__ = ["REPLACEMENT", "is_json", "relaxed_json_object", "valid_json_text", "valid_text"]

REPLACEMENT = "\ufffd"
"""What a lone surrogate becomes."""

_ESCAPE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}"  # a pair: kept
    r"|(?P<lone>\\u[dD][89a-fA-F][0-9a-fA-F]{2})"  # a lone half: replaced
    r"|\\.",  # any other escape, consumed whole: in "\\ud800" the backslash is escaped, "ud800" is text
    re.DOTALL,
)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def valid_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD; adjacent halves of a pair are joined.

    Text without surrogates is returned as it is (the common case costs one scan).
    """
    if SURROGATE.search(text) is None:
        return text
    # UTF-16 round trip: "surrogatepass" writes each half as its code unit, so a high half followed by
    # a low half decodes as the character of the pair, and any other half as U+FFFD.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _escape(match: re.Match[str]) -> str:
    return "\\ufffd" if match.group("lone") is not None else match.group(0)


def valid_json_text(text: str) -> str:
    """JSON text whose decoded strings hold no lone surrogate, changed only where one would.

    Raw surrogates are handled as in :func:`valid_text`; a ``\\uD800``-``\\uDFFF`` escape that is not
    the first half of an escaped pair followed by its second becomes ``\\ufffd``. Escapes are read
    left to right, so an escaped backslash followed by ``ud800`` stays text. Text that is not JSON
    is treated the same way (its parse error is the caller's to report).
    """
    text = valid_text(text)
    if _SURROGATE_ESCAPE.search(text) is None:
        return text
    return _ESCAPE.sub(_escape, text)


EXCERPT = 200
"""Characters of the model's text quoted in a message (:func:`quoted_excerpt`)."""


def quoted_excerpt(text: str) -> str:
    """The model's text as a message quotes it: its first :data:`EXCERPT` characters (and its length)."""
    text = text.strip()
    return repr(text[:EXCERPT]) + (f"… ({len(text)} characters)" if len(text) > EXCERPT else "")


def is_json(text: str) -> bool:
    """Whether ``text`` is JSON (a tool call's arguments as the model sent them, say)."""
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return False
    return True


_RELAXED_MAX_CHARS = 100_000
"""Longer text is not read leniently (a tool call's arguments are far shorter)."""

_NAMES: dict[str, Any] = {"true": True, "false": False, "null": None}
_NAMES.update({"True": True, "False": False, "None": None})


class _NotRelaxedJSON(Exception):
    pass


def _relaxed_value(node: ast.expr) -> Any:
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, (str, int, float))):
        return node.value  # bool is an int
    if isinstance(node, ast.Name) and node.id in _NAMES:
        return _NAMES[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = _relaxed_value(node.operand)
        if isinstance(operand, (int, float)) and not isinstance(operand, bool):
            return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_relaxed_value(item) for item in node.elts]
    if isinstance(node, ast.Dict):
        data: dict[str, Any] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                name = key.value
            elif isinstance(key, ast.Name) and key.id not in _NAMES:  # {tag: "map"}, as JavaScript writes it
                name = key.id
            else:  # "**spread", a number or a bool as a key
                raise _NotRelaxedJSON
            data[name] = _relaxed_value(value)
        return data
    raise _NotRelaxedJSON


def relaxed_json_object(text: str) -> str | None:
    """JSON text of the object that ``text`` writes in a looser notation, or ``None``.

    Small local models (and some tool-call parsers of vLLM and llama.cpp) write a call's arguments
    the way Python or JavaScript would: single quotes (``{'tag': 'map'}``), a trailing comma,
    ``True``/``False``/``None``, bare keys. Such text is read as literals only (no name but those
    six and no expression is evaluated) and written back as JSON; anything else, and an object cut
    short (``finish_reason: "length"``), gives ``None``: it stays what the model sent.
    """
    if len(text) > _RELAXED_MAX_CHARS or "{" not in text:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "\/" and other escapes Python does not know
            tree = ast.parse(text.strip(), mode="eval")
        value = _relaxed_value(tree.body)
        if not isinstance(value, dict):
            return None
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (SyntaxError, ValueError, RecursionError, MemoryError, _NotRelaxedJSON):
        return None
