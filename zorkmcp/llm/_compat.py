"""Which models can call tools and take a JSON schema: the seeds' name heuristic (seeds 000 §2.4,
Requirement 12), and what endpoints answer when they do not (Requirements 4.5 and 4.6).
"""

from __future__ import annotations

import re
from typing import Literal

from ..errors import LLMError, LLMHTTPError, LLMProviderError

__all__ = [
    "CONTEXT_REMEDY",
    "NO_TOOL_PATTERNS",
    "PER_MINUTE_REMEDY",
    "TOOL_PATTERNS",
    "TOO_MANY_TOOLS_REMEDY",
    "exceeds_context",
    "exceeds_token_rate",
    "finish_reason_said",
    "refuses_response_format",
    "refuses_tool_count",
    "refuses_tools",
    "supports_tool_calling",
    "too_large",
    "tools_remedy",
]

# seeds 000 §2.4: reasoning models explicitly don't support tools.
NO_TOOL_PATTERNS: tuple[str, ...] = (
    "o1-",
    "o3-",
    "qwq",
    "deepseek-r1",
    "deepseek-reasoner",
    "-reasoning",
    "r1-",
)

# seeds 000 §2.4: known tool-supporting model families (OpenRouter naming).
TOOL_PATTERNS: tuple[str, ...] = (
    "gpt-4",
    "gpt-3.5",
    "claude-3",
    "claude-sonnet",
    "claude-opus",
    "claude-haiku",
    "gemini",
    "mistral",
    "mixtral",
    "llama-3.1",
    "llama-3.2",
    "command-r",
)


def supports_tool_calling(model: str, force: bool = False) -> bool:
    """Guess from the model's name whether it can call tools (Requirement 12.1–12.4).

    The check is a case-insensitive substring match. Reasoning models
    (:data:`NO_TOOL_PATTERNS`) answer ``False``; known families (:data:`TOOL_PATTERNS`)
    answer ``True``; anything else is assumed to support tools and fails at run time if not.

    Args:
        model: the model name, e.g. ``"anthropic/claude-3.5-sonnet"``.
        force: ``[tool.zorkgpt.mcp] force_tool_support``; ``True`` bypasses the heuristic.

    Returns:
        ``True`` if the model is expected to support tool calling.
    """
    if force:
        return True
    name = model.lower()
    if any(pattern in name for pattern in NO_TOOL_PATTERNS):
        return False
    if any(pattern in name for pattern in TOOL_PATTERNS):
        return True
    # seeds 000 §2.4: default is to assume support and fail at run time if wrong.
    return True


# Requirement 4.5: what an endpoint answers when the model or the server cannot take ``tools``.
_TOOLS_REFUSED = re.compile(
    r"does(?: not|n'?t) support (?:tools|tool[ _-]?(?:calling|calls|use)|function[ _-]?calling)"  # Ollama
    r"|(?:tools|tool[ _-]?(?:calling|calls|use|choice)|function[ _-]?calling)"
    r" (?:is|are) not (?:supported|enabled|available)"  # Gemini, Mistral, generic
    r"|tool choice requires --enable-auto-tool-choice"  # vLLM without the flag
    r"|tools param requires --jinja"  # llama.cpp without --jinja
    r"|no endpoints found that support (?:tool use|the provided 'tool_choice')",  # OpenRouter
    re.IGNORECASE,
)

# Requirement 4.6: an error that names the structured-output feature (llama.cpp before json_schema,
# OpenAI and Groq for models without it, DeepSeek, vLLM's guided decoding, TGI's serde error).
_RESPONSE_FORMAT_NAMED = re.compile(
    r"response[ _]?format|json[ _]?schema|structured[ _]outputs?|guided[ _](?:decoding|json)", re.IGNORECASE
)


# What an endpoint answers when a request offers more tools than it takes (OpenAI, Azure OpenAI:
# 128; GitHub Copilot's API: 128; Gemini: 512 function declarations).
_TOOL_COUNT_REFUSED = re.compile(
    r"'tools'\W+array too long"  # OpenAI: Invalid 'tools': array too long. Expected … maximum length 128
    r"|more than \d+ tools"  # GitHub Copilot: You may not include more than 128 tools in your request.
    r"|at most \d+ function declarations"  # Gemini: At most 512 function declarations can be specified.
    r"|too many (?:tools|functions)",
    re.IGNORECASE,
)

TOO_MANY_TOOLS_REMEDY = (
    'the endpoint takes fewer tools in one request: offer fewer with a "tools" allow-list per server in '
    "mcp_config.json (zorkmcp tools lists them)"
)
"""What to do when an endpoint refuses the number of tools (see :func:`refuses_tool_count`)."""


def refuses_tool_count(text: str) -> bool:
    """Whether an endpoint's error text says the request offered more tools than it takes.

    OpenAI: ``Invalid 'tools': array too long. Expected an array with maximum length 128, but got an
    array with length 160 instead.``; GitHub Copilot's API: ``You may not include more than 128 tools
    in your request.``; Gemini: ``At most 512 function declarations can be specified.``
    """
    return _TOOL_COUNT_REFUSED.search(text) is not None


def refuses_tools(text: str) -> bool:
    """Whether an endpoint's error text says the model or the server cannot take ``tools``.

    Matches what real servers answer (Ollama: ``… does not support tools``; vLLM: ``"auto" tool
    choice requires --enable-auto-tool-choice …``; llama.cpp: ``tools param requires --jinja flag``;
    OpenRouter: ``No endpoints found that support tool use``) and plain English to the same effect.
    """
    return _TOOLS_REFUSED.search(text) is not None


def refuses_response_format(text: str) -> bool:
    """Whether an endpoint's error text names ``response_format`` or structured output.

    Meant for an error answer to a request that sent ``response_format`` (the forced final call,
    Requirement 4.6): such an error is about it (``response_format type json_schema is not
    supported``, ``response_format type must be one of "text" or "json_object"``, ``This
    response_format type is unavailable now``, ``unknown variant `json_schema` ``).
    """
    return _RESPONSE_FORMAT_NAMED.search(text) is not None


def tools_remedy(text: str) -> str:
    """What to do when an endpoint refuses tools, for the error text it gave (one line)."""
    lowered = text.lower()
    if "enable-auto-tool-choice" in lowered:
        server = "start vLLM with --enable-auto-tool-choice --tool-call-parser <the model's parser>"
    elif "--jinja" in lowered:
        server = "start llama-server with --jinja"
    else:
        server = "use a model that can call tools"
    return f"play without tools (--no-mcp, or [tool.zorkgpt.mcp] enabled = false), or {server}"


# What an endpoint answers when the request does not fit the model's context window (the prompt, or
# the prompt and max_tokens together). Ollama answers none: it cuts the prompt silently.
_CONTEXT_EXCEEDED = re.compile(
    r"context_length_exceeded"  # OpenAI's and Azure's code
    r"|maximum context length"  # OpenAI, vLLM, OpenRouter, DeepSeek, Groq, Together, SGLang
    r"|prompt is too long"  # Anthropic (also through OpenRouter): prompt is too long: 210000 tokens > …
    r"|exceed context limit"  # Anthropic: input length and `max_tokens` exceed context limit: 197000 + …
    r"|exceeds? the available context size|exceed_context_size_error"  # llama.cpp's llama-server
    r"|too large for model with \d+ maximum context length"  # Mistral
    r"|input token count .{0,40}exceeds the maximum number of tokens"  # Gemini
    r"|`inputs` tokens \+ `max_new_tokens` must be"  # Hugging Face TGI
    r"|loaded with context length of only"  # LM Studio
    r"|context (?:length|window|size) (?:was |has been |is )?exceeded"
    r"|exceeds? (?:the |its |the model's )?(?:maximum )?context (?:length|window|size)",
    re.IGNORECASE,
)

CONTEXT_REMEDY = (
    "the request does not fit the model's context window: give the model server a larger context "
    "(vLLM --max-model-len, llama-server -c, Ollama num_ctx), lower max_tokens, or offer fewer tools "
    '(a "tools" allow-list per server in mcp_config.json, or --no-mcp)'
)
"""What to do when an endpoint says a request does not fit the model's context (:func:`exceeds_context`)."""


def exceeds_context(text: str) -> bool:
    """Whether an endpoint's error text says the request does not fit the model's context window.

    OpenAI: ``This model's maximum context length is 128000 tokens. However, your messages resulted in
    130536 tokens.`` (code ``context_length_exceeded``); vLLM: ``This model's maximum context length is
    8192 tokens. However, you requested 9120 tokens (8096 in the messages, 1024 in the completion).``;
    Anthropic: ``prompt is too long: 210000 tokens > 200000 maximum``; llama.cpp: ``the request
    exceeds the available context size, try increasing it``; Mistral, Gemini, TGI and LM Studio too.
    """
    return _CONTEXT_EXCEEDED.search(text) is not None


# What an endpoint answers when one request holds more tokens than the account may send in a minute
# (OpenAI's 429, Groq's 413, both with the code rate_limit_exceeded): no wait makes it fit.
_TOKEN_RATE_EXCEEDED = re.compile(
    r"request too large for .{0,200}? on tokens per min(?:ute)?",  # OpenAI, Groq, Azure OpenAI
    re.IGNORECASE | re.DOTALL,
)

PER_MINUTE_REMEDY = (
    "one request holds more tokens than the account may send in a minute, so no wait makes it fit (not "
    "retried): move to a higher usage tier (a larger tokens-per-minute limit), send a smaller prompt (a "
    'smaller max_result_bytes in [tool.zorkgpt.mcp]), or offer fewer tools (a "tools" allow-list per server '
    "in mcp_config.json, or --no-mcp)"
)
"""What to do when one request is larger than the account's tokens-per-minute limit
(:func:`exceeds_token_rate`)."""


def exceeds_token_rate(text: str) -> bool:
    """Whether an endpoint's error text says one request is larger than the per-minute token limit.

    OpenAI (HTTP 429, code ``rate_limit_exceeded``): ``Request too large for gpt-4o in organization
    org-… on tokens per min (TPM): Limit 30000, Requested 45000. The input or output tokens must be
    reduced in order to run successfully.``; Groq (HTTP 413): ``Request too large for model
    `llama3-70b-8192` in organization `org_…` on tokens per minute (TPM): Limit 6000, Requested 7500,
    please reduce your message size and try again.`` Unlike a rate limit, no wait helps.
    """
    return _TOKEN_RATE_EXCEEDED.search(text) is not None


def too_large(error: LLMError) -> Literal["context window", "tokens per minute"] | None:
    """Which limit an endpoint's error says the request is larger than, if any.

    ``"context window"``: an HTTP 400, 413 or 422 (or a provider error) whose text says the request
    does not fit the model's context (:func:`exceeds_context`); ``"tokens per minute"``: an HTTP 429
    or 413 (or a provider error) whose text says it is larger than the account's per-minute token
    limit (:func:`exceeds_token_rate`). A shorter request may fit either.
    """
    if not isinstance(error, (LLMHTTPError, LLMProviderError)):
        return None
    text = f"{error.provider_message or ''} {error.body_excerpt}"
    http = error.status if isinstance(error, LLMHTTPError) else None
    if http in (None, 413, 429) and exceeds_token_rate(text):
        return "tokens per minute"
    if http in (None, 400, 413, 422) and exceeds_context(text):
        return "context window"
    return None


_LENGTH_REMEDY = "raise max_tokens in [tool.zorkgpt.agent_sampling] (in zorkmcp eval: the arm's max_tokens)"


def finish_reason_said(reason: str, max_tokens: int | None = None) -> str:
    """What a ``finish_reason`` other than ``stop`` means, and for ``length`` what to do (one phrase).

    ``length``: ``the model stopped with finish_reason 'length': its answer was cut at its token limit
    (max_tokens 256); raise max_tokens in [tool.zorkgpt.agent_sampling] (…)``; ``max_tokens``: the
    limit the request sent (``None``: it sent none, so the endpoint's own limit cut it: its default, or
    what is left of the model's context window, as vLLM has it).
    """
    said = f"the model stopped with finish_reason {reason!r}"
    if reason == "length" and max_tokens is not None:
        return f"{said}: its answer was cut at its token limit (max_tokens {max_tokens}); {_LENGTH_REMEDY}"
    if reason == "length":
        return (
            f"{said}: its answer was cut at the endpoint's own token limit (no max_tokens was sent); "
            f"{_LENGTH_REMEDY.replace('raise', 'set', 1)}, or give the model server a larger context"
        )
    if reason == "content_filter":
        return f"{said}: the provider's content filter cut or withheld its answer"
    return said
