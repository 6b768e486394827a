"""Which models can call tools: the seeds' name heuristic (seeds 000 §2.4, Requirement 12)."""

from __future__ import annotations

__all__ = ["NO_TOOL_PATTERNS", "TOOL_PATTERNS", "supports_tool_calling"]

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
