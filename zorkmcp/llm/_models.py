"""Response models of a chat completion and the :class:`ChatModel` protocol.

The three attrs classes carry the names and fields of seeds 000 §2.1 (``LLMResponse``,
``ToolCall``, ``FunctionCall``); they are frozen so a response can be shared freely.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from attrs import frozen

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["ChatModel", "FunctionCall", "LLMResponse", "ToolCall"]


@frozen(kw_only=True)
class FunctionCall:
    """The function part of a tool call (seeds 000 §2.1).

    Attributes:
        name: the tool's wire name as the model sent it (e.g. ``thinking__think``).
        arguments: the arguments as a JSON string (``"{}"`` when the model sent none).
    """

    name: str
    arguments: str


@frozen(kw_only=True)
class ToolCall:
    """One tool call requested by the model (seeds 000 §2.1).

    Attributes:
        id: the call's identifier; ``role: "tool"`` answers refer to it.
        type: always ``"function"`` for now.
        function: what to call and with which arguments.
    """

    id: str
    type: str
    function: FunctionCall


@frozen(kw_only=True)
class LLMResponse:
    """What one chat completion returned (seeds 000 §2.1; property 12 of seeds 001).

    Exactly one of ``content`` and ``tool_calls`` is set when the model answered at all:
    with tool calls ``content`` is ``None``; otherwise ``tool_calls`` is ``None`` (an empty
    list from the provider counts as none). Both are ``None`` for an empty answer.

    Attributes:
        content: the assistant's text, or ``None``.
        model: the model that answered (as the provider reports it).
        usage: integer token counts (``prompt_tokens``, ``completion_tokens``, ...).
        tool_calls: the requested tool calls in order, or ``None``.
        finish_reason: ``"stop"``, ``"tool_calls"``, ``"length"``, ... as reported.
    """

    content: str | None
    model: str
    usage: dict[str, int] | None = None
    tool_calls: tuple[ToolCall, ...] | None = None
    finish_reason: str | None = None


class ChatModel(Protocol):
    """Anything that answers chat completions: :class:`LLMClient` or :class:`ScriptedModel`."""

    @property
    def model(self) -> str:
        """The model name sent with every request."""
        ...

    @property
    def scripted(self) -> bool:
        """``True`` for the offline scripted model (no LLM is called)."""
        ...

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] | None = None,
        response_format: Mapping[str, Any] | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
        top_k: int | None = None,
        min_p: float | None = None,
        max_tokens: int | None = None,
        stop: str | Sequence[str] | None = None,
        extra_headers: Mapping[str, str] | None = None,
    ) -> LLMResponse:
        """Answer one chat completion request.

        Args:
            messages: the conversation in OpenAI chat format.
            tools: tool schemas in OpenAI format (``{"type": "function", "function": {...}}``).
            tool_choice: ``"auto"``, ``"none"`` or ``{"type": "function", "function": {"name": ...}}``.
            response_format: passed through unchanged (the forced final call's JSON schema).
            temperature: sampling temperature; ``None`` is not sent.
            top_p: nucleus sampling; ``None`` is not sent.
            top_k: top-k sampling; ``None`` is not sent.
            min_p: min-p sampling; ``None`` is not sent.
            max_tokens: completion token limit; ``None`` is not sent.
            stop: stop sequence(s); ``None`` is not sent.
            extra_headers: extra HTTP headers for this request.

        Raises:
            LLMError: the endpoint did not give a usable completion.
        """
        ...
