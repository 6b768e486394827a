"""Response models of a chat completion and the :class:`ChatModel` protocol.

The three attrs classes carry the names and fields of seeds 000 §2.1 (``LLMResponse``,
``ToolCall``, ``FunctionCall``); they are frozen so a response can be shared freely.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from attrs import field, frozen

from ..config import SamplingSettings
from ._text import valid_json_text, valid_text

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = ["ChatModel", "CompletionRequest", "FunctionCall", "LLMResponse", "ToolCall"]


def _optional_text(value: str | None) -> str | None:
    return valid_text(value) if isinstance(value, str) else value


@frozen(kw_only=True)
class FunctionCall:
    """The function part of a tool call (seeds 000 §2.1).

    Both fields are made valid Unicode on the way in (:mod:`zorkmcp.llm._text`): a lone surrogate,
    raw or a JSON escape in ``arguments``, becomes U+FFFD, so that the parsed arguments (Requirement
    5.3) can go to any MCP transport, log or game.

    Attributes:
        name: the tool's wire name as the model sent it (e.g. ``thinking__think``).
        arguments: the arguments as a JSON string (``"{}"`` when the model sent none).
    """

    name: str = field(converter=valid_text)
    arguments: str = field(converter=valid_json_text)


@frozen(kw_only=True)
class ToolCall:
    """One tool call requested by the model (seeds 000 §2.1).

    Attributes:
        id: the call's identifier; ``role: "tool"`` answers refer to it.
        type: always ``"function"`` for now.
        function: what to call and with which arguments.
    """

    id: str = field(converter=valid_text)
    type: str = field(converter=valid_text)
    function: FunctionCall


@frozen(kw_only=True)
class LLMResponse:
    """What one chat completion returned (seeds 000 §2.1; property 12 of seeds 001).

    Exactly one of ``content`` and ``tool_calls`` is set when the model answered at all:
    with tool calls ``content`` is ``None``; otherwise ``tool_calls`` is ``None`` (an empty
    list from the provider counts as none). Both are ``None`` for an empty answer. The text fields
    hold no lone surrogate: one becomes U+FFFD on the way in (:mod:`zorkmcp.llm._text`).

    Attributes:
        content: the assistant's text, or ``None``.
        model: the model that answered (as the provider reports it).
        usage: integer token counts (``prompt_tokens``, ``completion_tokens``, ...).
        tool_calls: the requested tool calls in order, or ``None``.
        finish_reason: ``"stop"``, ``"tool_calls"``, ``"length"``, ... as reported.
        text_beside_calls: text the assistant sent beside its tool calls, which is not its
            ``content`` (Requirement 4.3); ``None`` without tool calls or without such text. The
            engine reads an answer there only on the forced final call, where no tools were
            offered (some vLLM builds add a stray call to a plain answer).
        refusal: the model's refusal (OpenAI's ``message.refusal``, sent instead of content when
            the model declines a structured answer); ``None`` when it sent none.
        reasoning: the reasoning the endpoint sent apart from the content (``reasoning_content``:
            vLLM's and DeepSeek's reasoning parsers; ``reasoning``: Ollama, OpenRouter), which is
            never the answer; ``None`` when it sent none. Kept to say why an answer is missing.
    """

    content: str | None = field(converter=_optional_text)
    model: str = field(converter=valid_text)
    usage: dict[str, int] | None = None
    tool_calls: tuple[ToolCall, ...] | None = None
    finish_reason: str | None = field(default=None, converter=_optional_text)
    text_beside_calls: str | None = field(default=None, converter=_optional_text)
    refusal: str | None = field(default=None, converter=_optional_text)
    reasoning: str | None = field(default=None, converter=_optional_text)


def _messages(value: Sequence[Mapping[str, Any]]) -> tuple[Mapping[str, Any], ...]:
    return tuple(value)


def _tuple_or_none(value: Sequence[Mapping[str, Any]] | None) -> tuple[Mapping[str, Any], ...] | None:
    return None if value is None else tuple(value)


def _stop(value: str | Sequence[str] | None) -> str | tuple[str, ...] | None:
    return value if value is None or isinstance(value, str) else tuple(value)


@frozen
class CompletionRequest:
    """One chat completion request: what every :class:`ChatModel` answers.

    A small frozen value (``attrs.evolve`` to change one field), so the engine, the models and
    a recorded cassette pass the same object around instead of eleven keyword arguments.

    Attributes:
        messages: the conversation in OpenAI chat format (copied into a tuple).
        tools: tool schemas in OpenAI format (``{"type": "function", "function": {...}}``);
            ``None`` or empty: no tools are sent.
        tool_choice: ``"auto"``, ``"none"`` or ``{"type": "function", "function": {"name": ...}}``.
        response_format: passed through unchanged (the forced final call's JSON schema).
        sampling: ``[tool.zorkgpt.agent_sampling]``; values left ``None`` are not sent.
        stop: stop sequence(s); ``None`` is not sent.
        extra_headers: extra HTTP headers for this request.
    """

    messages: tuple[Mapping[str, Any], ...] = field(converter=_messages)
    tools: tuple[Mapping[str, Any], ...] | None = field(default=None, kw_only=True, converter=_tuple_or_none)
    tool_choice: str | Mapping[str, Any] | None = field(default=None, kw_only=True)
    response_format: Mapping[str, Any] | None = field(default=None, kw_only=True)
    sampling: SamplingSettings = field(factory=SamplingSettings, kw_only=True)
    stop: str | tuple[str, ...] | None = field(default=None, kw_only=True, converter=_stop)
    extra_headers: Mapping[str, str] | None = field(default=None, kw_only=True)


class ChatModel(Protocol):
    """Anything that answers chat completions: :class:`LLMClient`, :class:`ScriptedModel`, a cassette."""

    @property
    def model(self) -> str:
        """The model name sent with every request."""
        ...

    @property
    def scripted(self) -> bool:
        """``True`` for the offline scripted model (a replayed cassette: as the model it recorded was)."""
        ...

    async def complete(self, request: CompletionRequest, /) -> LLMResponse:
        """Answer one chat completion request.

        Raises:
            LLMError: the endpoint did not give a usable completion.
            ModelCompatibilityError: the endpoint refused the request's tools (Requirement 4.5).
        """
        ...
