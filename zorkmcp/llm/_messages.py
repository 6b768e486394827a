"""Building the request: prompt-caching metadata and tool-schema checks."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["CACHE_CONTROL", "check_tools", "with_cache_control"]

CACHE_CONTROL: Mapping[str, str] = {"type": "ephemeral"}
"""The prompt-caching marker put on system and user messages (seeds 000 §3.2)."""

_CACHED_ROLES = frozenset({"system", "user"})
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def with_cache_control(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Mark system and user messages for prompt caching (Requirement 4.7, property 15).

    Every message whose role is ``system`` or ``user`` gets ``cache_control:
    {"type": "ephemeral"}`` unless it already carries a ``cache_control``; other messages
    are copied unchanged. The input is not modified, and applying the function twice gives
    the same result as applying it once.

    Args:
        messages: the conversation in OpenAI chat format.

    Returns:
        A new list of new message dicts.
    """
    marked: list[dict[str, Any]] = []
    for message in messages:
        copy = dict(message)
        if copy.get("role") in _CACHED_ROLES and "cache_control" not in copy:
            copy["cache_control"] = dict(CACHE_CONTROL)
        marked.append(copy)
    return marked


def check_tools(tools: Sequence[Mapping[str, Any]]) -> None:
    """Check that tool schemas are in OpenAI format before they are sent (property 10).

    Each tool must be ``{"type": "function", "function": {"name": <wire name>,
    "parameters": <JSON Schema object>, ...}}`` with a name matching
    ``^[a-zA-Z0-9_-]{1,64}$``.

    Args:
        tools: the tool schemas.

    Raises:
        ValueError: a schema is not in OpenAI format; the message names the tool and the rule.
    """
    for index, tool in enumerate(tools):
        where = f"tools[{index}]"
        if not isinstance(tool, Mapping) or tool.get("type") != "function":
            raise ValueError(f'{where} must be an object with "type": "function", got {tool!r:.120}')
        function = tool.get("function")
        if not isinstance(function, Mapping):
            raise ValueError(f'{where}.function must be an object with a "name", got {function!r:.120}')
        name = function.get("name")
        if not isinstance(name, str) or not _TOOL_NAME.match(name):
            raise ValueError(f"{where}.function.name must match ^[a-zA-Z0-9_-]{{1,64}}$, got {name!r:.80}")
        parameters = function.get("parameters")
        if parameters is not None and not (
            isinstance(parameters, Mapping) and parameters.get("type", "object") == "object"
        ):
            raise ValueError(
                f"{where}.function.parameters of {name!r} must be a JSON Schema object, "
                f"got {parameters!r:.120}"
            )
