"""Text a model sent, made valid Unicode where it enters the engine.

Models split an emoji across tokens and emit half of its UTF-16 surrogate pair (``"\\ud83d"``),
raw in a string or as a JSON escape inside a tool call's ``arguments``. Python keeps such a *lone
surrogate* in a ``str``, and every UTF-8 encoder downstream refuses it: an MCP transport writing the
request, a JSON-lines log, a report. One rule applied once, when a response is built (the converters
of :class:`~zorkmcp.llm.LLMResponse`, :class:`~zorkmcp.llm.ToolCall` and
:class:`~zorkmcp.llm.FunctionCall`), keeps them out of the engine: a lone surrogate becomes U+FFFD
(the replacement character), and a complete pair, raw or escaped, stays the character it encodes.
"""

from __future__ import annotations

import re

from .._surrogates import SURROGATE

__all__ = ["REPLACEMENT", "valid_json_text", "valid_text"]

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
