"""Observability: the JSON-lines event log, the human-readable episode log and tracing.

SHELL: the EventSink protocol is fixed; the sinks are being written.
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["EventSink"]


class EventSink(Protocol):
    """Where the engine and the MCP layer report what happened."""

    def emit(self, event_type: str, /, **fields: Any) -> None:
        """Record one structured event (a JSON-lines record)."""

    def log(self, level: str, message: str, /) -> None:
        """Record one human-readable line (``level`` is INFO, WARNING, DEBUG or ERROR)."""
