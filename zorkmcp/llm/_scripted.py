"""The offline scripted model: plays a fixed list of commands, calls a tool every N turns.

It answers like a model that follows a walkthrough, so the whole tool-calling loop (tool
call → tool result → final JSON answer) runs without any network or paid service: the main
job, the benchmarks and the end-to-end tests use it when no LLM is configured.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import anyio.lowlevel

from ._models import CompletionRequest, FunctionCall, LLMResponse, ToolCall

__all__ = ["DEFAULT_WALKTHROUGH", "SCRIPTED_MODEL_NAME", "ScriptedModel"]

SCRIPTED_MODEL_NAME = "scripted-walkthrough"

DEFAULT_WALKTHROUGH: tuple[str, ...] = (
    "open mailbox",
    "take leaflet",
    "read leaflet",
    "drop leaflet",
    "south",
    "east",
    "open window",
    "enter",
    "west",
    "take lamp",
    "move rug",
    "open trap door",
    "turn on lamp",
    "down",
)
"""The opening of Zork I, used when no walkthrough is given."""

_FALLBACK_ACTION = "look"


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _text_of(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "" if content is None else json.dumps(content, default=str)


class ScriptedModel:
    """A :class:`ChatModel` that needs no network: it follows a list of game commands.

    Each game turn is one fresh conversation that starts with ``[system, user]``. On a
    request whose last message is ``user`` and that has no ``response_format`` (the start
    of a turn), turn number ``k`` (from 0) answers with one tool call when
    ``k % tool_every == 0`` and a tool named ``tool_name`` (or ``<server>__<tool_name>``) is
    offered; every other request — after a tool result, the forced final call with
    ``response_format``, or a turn without tools — answers with the final JSON
    ``{"thinking": ..., "action": <next command>, "new_objective": null}``. The next command
    is consumed only when an action is answered; after the last one the action is ``look``.

    Args:
        commands: the game commands to play, in order.
        tool_every: call the tool on every ``tool_every``-th turn (``0`` never calls it).
        tool_name: the tool to call (its wire name, or the part after ``__``).
        model: the model name reported in responses.

    Raises:
        ValueError: ``tool_every`` is negative.
    """

    scripted = True

    def __init__(
        self,
        commands: Sequence[str],
        *,
        tool_every: int = 5,
        tool_name: str = "think",
        model: str = SCRIPTED_MODEL_NAME,
    ) -> None:
        if tool_every < 0:
            raise ValueError(f"tool_every must be >= 0 (0 never calls a tool), got {tool_every}")
        self._commands = tuple(commands)
        self._tool_every = tool_every
        self._tool_name = tool_name
        self._model = model
        self._position = 0
        self._turns = 0
        self._calls = 0

    @property
    def model(self) -> str:
        """The model name reported in responses."""
        return self._model

    @property
    def commands(self) -> tuple[str, ...]:
        """The commands being played."""
        return self._commands

    @property
    def tool_every(self) -> int:
        """The tool is called on turns 0, ``tool_every``, ``2 * tool_every``, ..."""
        return self._tool_every

    @property
    def tool_name(self) -> str:
        """The tool it calls."""
        return self._tool_name

    @property
    def position(self) -> int:
        """How many commands have been answered as actions."""
        return self._position

    @property
    def turns(self) -> int:
        """How many turns have started (requests whose last message was ``user``)."""
        return self._turns

    def __repr__(self) -> str:
        return (
            f"ScriptedModel(model={self._model!r}, commands={len(self._commands)}, "
            f"position={self._position}, tool_every={self._tool_every}, tool_name={self._tool_name!r})"
        )

    def _next_command(self) -> str:
        if self._position < len(self._commands):
            return self._commands[self._position]
        return _FALLBACK_ACTION

    def _offered_tool(self, tools: Sequence[Mapping[str, Any]] | None) -> str | None:
        for tool in tools or ():
            function = tool.get("function")
            name = function.get("name") if isinstance(function, Mapping) else None
            if isinstance(name, str) and (name == self._tool_name or name.endswith(f"__{self._tool_name}")):
                return name
        return None

    async def complete(self, request: CompletionRequest, /) -> LLMResponse:
        """Answer as the walkthrough says (see the class docstring); sampling is ignored.

        Only the last message's role, the tools offered, ``tool_choice`` (``"none"`` suppresses
        the tool call) and ``response_format`` (then the answer is always the final JSON) matter.

        Returns:
            A tool call or the final JSON content.
        """
        await anyio.lowlevel.checkpoint()
        messages, tools = request.messages, request.tools
        prompt_tokens = sum(_tokens(_text_of(m)) for m in messages) + (
            _tokens(json.dumps(list(tools), default=str)) if tools else 0
        )
        last_role = messages[-1].get("role") if messages else None
        if request.response_format is None and last_role == "user":
            turn = self._turns
            self._turns += 1
            wire_name = self._offered_tool(tools)
            if (
                wire_name is not None
                and request.tool_choice != "none"
                and self._tool_every > 0
                and turn % self._tool_every == 0
            ):
                return self._tool_call(wire_name, turn, prompt_tokens)
        return self._answer(last_role, prompt_tokens)

    def _tool_call(self, wire_name: str, turn: int, prompt_tokens: int) -> LLMResponse:
        self._calls += 1
        arguments = json.dumps(
            {
                "thought": f"Turn {turn + 1}: next step is {self._next_command()!r}",
                "thoughtNumber": 1,
                "totalThoughts": 1,
                "nextThoughtNeeded": False,
            }
        )
        call = ToolCall(
            id=f"call_scripted_{self._calls}",
            type="function",
            function=FunctionCall(name=wire_name, arguments=arguments),
        )
        return LLMResponse(
            content=None,
            model=self._model,
            usage=self._usage(prompt_tokens, arguments),
            tool_calls=(call,),
            finish_reason="tool_calls",
        )

    def _answer(self, last_role: Any, prompt_tokens: int) -> LLMResponse:
        total = len(self._commands)
        if self._position < total:
            action = self._commands[self._position]
            thinking = (
                f"Following the scripted walkthrough: step {self._position + 1} of {total} is {action!r}."
            )
            self._position += 1
        else:
            action = _FALLBACK_ACTION
            thinking = f"The scripted walkthrough is over ({total} commands); looking around."
        if last_role == "tool":
            thinking = f"Thought it over with the tool. {thinking}"
        content = json.dumps({"thinking": thinking, "action": action, "new_objective": None})
        return LLMResponse(
            content=content,
            model=self._model,
            usage=self._usage(prompt_tokens, content),
            tool_calls=None,
            finish_reason="stop",
        )

    @staticmethod
    def _usage(prompt_tokens: int, answer: str) -> dict[str, int]:
        completion = _tokens(answer)
        return {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion,
            "total_tokens": prompt_tokens + completion,
        }
