"""zorkmcp: a Trio structured-concurrency engine for LLM agents that use MCP tools."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
