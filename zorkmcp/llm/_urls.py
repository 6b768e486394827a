"""What a base URL says about the endpoint: local server, OpenRouter, the completions URL."""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["chat_completions_url", "is_local_base_url", "is_openrouter"]

_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "0.0.0.0"})  # noqa: S104 -- a name, not a bind


def _host(base_url: str) -> str:
    """The host, lower-cased, without the trailing dot of a fully qualified name (``openrouter.ai.``)."""
    try:
        return (urlsplit(base_url).hostname or "").lower().rstrip(".")
    except ValueError:
        return ""


def is_local_base_url(base_url: str) -> bool:
    """``True`` for a server on this machine (Ollama, llama.cpp, vLLM): it needs no API key.

    Args:
        base_url: e.g. ``http://localhost:11434/v1``.
    """
    host = _host(base_url)
    return host in _LOCAL_HOSTS or host.endswith(".localhost") or host.startswith("127.")


def is_openrouter(base_url: str) -> bool:
    """``True`` when the base URL points at OpenRouter: the only host ``OPENROUTER_API_KEY`` is sent to."""
    host = _host(base_url)
    return host == "openrouter.ai" or host.endswith(".openrouter.ai")


def chat_completions_url(base_url: str) -> str:
    """``{base_url}/chat/completions`` without a doubled slash."""
    return base_url.rstrip("/") + "/chat/completions"
