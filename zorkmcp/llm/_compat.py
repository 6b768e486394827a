"""Which models can call tools and take a JSON schema: the seeds' name heuristic (seeds 000 §2.4,
Requirement 12), and what endpoints answer when they do not (Requirements 4.5 and 4.6).
"""

from __future__ import annotations

import re

__all__ = [
    "NO_TOOL_PATTERNS",
    "TOOL_PATTERNS",
    "TOO_MANY_TOOLS_REMEDY",
    "refuses_response_format",
    "refuses_tool_count",
    "refuses_tools",
    "supports_tool_calling",
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
