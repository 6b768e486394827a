"""The ``think`` tool: pure logic shared by the stdio server and the in-process server.

In the spirit of ``@modelcontextprotocol/server-sequential-thinking`` and thoughtbox
(seeds 000 §Example Usage: thoughtbox for puzzle solving): the model writes one thought per
call, numbers it, and says whether another is needed; the tool keeps the history and answers
with progress JSON.

This module must stay cheap to import (stdlib only, no attrs, no dataclasses): it is on the
start-up path of ``python -m zorkmcp.servers.thinking``, which is spawned once per turn.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from .._jsontypes import json_type_name

__all__ = [
    "TOOL_ANNOTATIONS",
    "TOOL_DESCRIPTION",
    "TOOL_INPUT_SCHEMA",
    "TOOL_NAME",
    "TOOL_TITLE",
    "ThinkingError",
    "ThinkingSession",
    "Thought",
]

TOOL_NAME: Final = "think"

TOOL_DESCRIPTION: Final = (
    "A scratchpad for step-by-step reasoning before you act. Call it once per thought: "
    "break a puzzle down (a locked door, a dark room, a troll), revise an earlier thought when "
    "you learn something new, or branch to explore an alternative plan. Number your thoughts "
    "from 1; totalThoughts is your current estimate and may grow. Set nextThoughtNeeded to "
    "false when you are ready to choose your game action. The tool records the thoughts and "
    "returns your progress; it does not act in the game."
)

TOOL_TITLE: Final = "Think"
"""The tool's display name (``title``, MCP 2025-06-18), as sequential-thinking has ``Sequential Thinking``."""

TOOL_ANNOTATIONS: Final[Mapping[str, bool]] = {
    "readOnlyHint": True,
    "destructiveHint": False,
    "idempotentHint": True,
    "openWorldHint": False,
}
"""What ``@modelcontextprotocol/server-sequential-thinking`` declares for the same tool: a thought is
kept in the server's own session, nothing outside it changes (no game move, no file, no network), so
a client need not ask the user before a call. (Under ``readOnlyHint`` the destructive and idempotent
hints carry no meaning; they are there as the reference has them.)"""

TOOL_INPUT_SCHEMA: Final[Mapping[str, Any]] = {
    "type": "object",
    "properties": {
        "thought": {"type": "string", "description": "Your current thinking step."},
        "nextThoughtNeeded": {
            "type": "boolean",
            "description": "Whether another thought step is needed.",
        },
        "thoughtNumber": {
            "type": "integer",
            "minimum": 1,
            "description": "The number of this thought (1, 2, 3, ...).",
        },
        "totalThoughts": {
            "type": "integer",
            "minimum": 1,
            "description": "Your current estimate of how many thoughts you need (may change).",
        },
        "isRevision": {"type": "boolean", "description": "Whether this thought revises an earlier one."},
        "revisesThought": {
            "type": "integer",
            "minimum": 1,
            "description": "Which thought number is being reconsidered.",
        },
        "branchFromThought": {
            "type": "integer",
            "minimum": 1,
            "description": "The thought number this branch starts from.",
        },
        "branchId": {"type": "string", "description": "A name for the branch."},
        "needsMoreThoughts": {
            "type": "boolean",
            "description": "Set when you reach the end but realise more thoughts are needed.",
        },
    },
    "required": ["thought", "nextThoughtNeeded", "thoughtNumber", "totalThoughts"],
}


class ThinkingError(ValueError):
    """The arguments of a ``think`` call are invalid; the message says which and why."""


class Thought:
    """One recorded thought (the validated arguments of one ``think`` call)."""

    __slots__ = (
        "branch_from_thought",
        "branch_id",
        "is_revision",
        "needs_more_thoughts",
        "next_thought_needed",
        "revises_thought",
        "thought",
        "thought_number",
        "total_thoughts",
    )

    def __init__(
        self,
        *,
        thought: str,
        thought_number: int,
        total_thoughts: int,
        next_thought_needed: bool,
        is_revision: bool | None = None,
        revises_thought: int | None = None,
        branch_from_thought: int | None = None,
        branch_id: str | None = None,
        needs_more_thoughts: bool | None = None,
    ) -> None:
        self.thought = thought
        self.thought_number = thought_number
        self.total_thoughts = total_thoughts
        self.next_thought_needed = next_thought_needed
        self.is_revision = is_revision
        self.revises_thought = revises_thought
        self.branch_from_thought = branch_from_thought
        self.branch_id = branch_id
        self.needs_more_thoughts = needs_more_thoughts

    @classmethod
    def from_arguments(cls, arguments: Mapping[str, Any]) -> Thought:
        """Validate the arguments of a ``think`` call.

        Unknown keys are ignored and ``null`` optional arguments count as absent, as in
        sequential-thinking.

        Raises:
            ThinkingError: a required argument is missing or an argument has the wrong
                type or range; every problem is listed.
        """
        if not isinstance(arguments, Mapping):
            raise ThinkingError(f"arguments must be an object, got {json_type_name(arguments)}")
        problems: list[str] = []
        thought = arguments.get("thought")
        if not isinstance(thought, str) or not thought.strip():
            problems.append(_describe("thought", "a non-empty string", arguments))
        number = _positive_int(arguments, "thoughtNumber", problems, required=True)
        total = _positive_int(arguments, "totalThoughts", problems, required=True)
        next_needed = _bool(arguments, "nextThoughtNeeded", problems, required=True)
        is_revision = _bool(arguments, "isRevision", problems)
        revises = _positive_int(arguments, "revisesThought", problems)
        branch_from = _positive_int(arguments, "branchFromThought", problems)
        branch_id = arguments.get("branchId")
        if branch_id is not None and (not isinstance(branch_id, str) or not branch_id.strip()):
            problems.append(_describe("branchId", "a non-empty string", arguments))
        needs_more = _bool(arguments, "needsMoreThoughts", problems)
        if problems:
            raise ThinkingError("invalid think arguments: " + "; ".join(problems))
        assert isinstance(thought, str)
        assert number is not None
        assert total is not None
        assert next_needed is not None
        return cls(
            thought=thought,
            thought_number=number,
            total_thoughts=total,
            next_thought_needed=next_needed,
            is_revision=is_revision,
            revises_thought=revises,
            branch_from_thought=branch_from,
            branch_id=branch_id,
            needs_more_thoughts=needs_more,
        )


class ThinkingSession:
    """The state of one server instance: the thought history and the branches."""

    def __init__(self) -> None:
        self.history: list[Thought] = []
        self.branches: dict[str, list[Thought]] = {}

    def think(self, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """Record one thought and return the progress.

        As in sequential-thinking, a ``thoughtNumber`` above ``totalThoughts`` raises the
        estimate, and a thought with both ``branchFromThought`` and ``branchId`` is filed
        under that branch.

        Args:
            arguments: the tool call's arguments (see :data:`TOOL_INPUT_SCHEMA`).

        Returns:
            ``{"thoughtNumber", "totalThoughts", "nextThoughtNeeded", "branches",
            "thoughtHistoryLength"}``; ``branches`` lists the branch ids in creation order.

        Raises:
            ThinkingError: the arguments are invalid; nothing is recorded.
        """
        thought = Thought.from_arguments(arguments)
        if thought.thought_number > thought.total_thoughts:
            thought.total_thoughts = thought.thought_number
        self.history.append(thought)
        if thought.branch_from_thought is not None and thought.branch_id is not None:
            self.branches.setdefault(thought.branch_id, []).append(thought)
        return {
            "thoughtNumber": thought.thought_number,
            "totalThoughts": thought.total_thoughts,
            "nextThoughtNeeded": thought.next_thought_needed,
            "branches": list(self.branches),
            "thoughtHistoryLength": len(self.history),
        }

    def call(self, arguments: Mapping[str, Any]) -> tuple[str, bool]:
        """Run ``think`` and render the MCP result text: ``(text, is_error)``.

        Both servers use this, so they answer byte for byte the same. Errors are the
        sequential-thinking shape ``{"error": ..., "status": "failed"}``.
        """
        try:
            progress = self.think(arguments)
        except ThinkingError as exc:
            return json.dumps({"error": str(exc), "status": "failed"}), True
        return json.dumps(progress), False


def _describe(key: str, expected: str, arguments: Mapping[str, Any]) -> str:
    if key not in arguments:
        return f"{key} is required ({expected})"
    value = arguments[key]
    shown = json.dumps(value) if isinstance(value, str | int | float | bool) or value is None else ""
    if len(shown) > 40:
        shown = shown[:37] + "..."
    got = f"{shown} ({json_type_name(value)})" if shown else json_type_name(value)
    return f"{key} must be {expected}, got {got}"


def _positive_int(
    arguments: Mapping[str, Any], key: str, problems: list[str], *, required: bool = False
) -> int | None:
    value = arguments.get(key)
    if value is None and not required:  # null means absent (OpenAI strict mode sends it)
        return None
    if isinstance(value, float) and value.is_integer():
        # JSON Schema's "integer" is any number whose fractional part is zero: 1.0 is one, and
        # models send it. Answered as 1, as sequential-thinking does. (1.5, true and "2" are not.)
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        problems.append(_describe(key, "an integer >= 1", arguments))
        return None
    return value


def _bool(
    arguments: Mapping[str, Any], key: str, problems: list[str], *, required: bool = False
) -> bool | None:
    value = arguments.get(key)
    if value is None and not required:  # null means absent (OpenAI strict mode sends it)
        return None
    if not isinstance(value, bool):
        problems.append(_describe(key, "true or false", arguments))
        return None
    return value
