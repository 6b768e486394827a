"""Where the MCP layer reports: an ``EventSink`` when given, else stdlib logging."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from zorkmcp.observability import EventSink

__all__ = ["Reporter", "logger"]

logger = logging.getLogger("zorkmcp.mcp")

_LEVELS = {"DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARNING": logging.WARNING, "ERROR": logging.ERROR}


class Reporter:
    """Sends structured events and human-readable lines to an ``EventSink`` or to ``zorkmcp.mcp``.

    Args:
        events: the sink; ``None`` logs through ``logging.getLogger("zorkmcp.mcp")`` (events at DEBUG).
    """

    def __init__(self, events: EventSink | None = None) -> None:
        self._events = events

    def emit(self, event_type: str, /, **fields: Any) -> None:
        """Record one structured event."""
        if self._events is not None:
            self._events.emit(event_type, **fields)
        else:
            logger.debug("%s %r", event_type, fields)

    def log(self, level: str, message: str, /) -> None:
        """Record one human-readable line (``level``: DEBUG, INFO, WARNING or ERROR)."""
        if self._events is not None:
            self._events.log(level, message)
        else:
            logger.log(_LEVELS.get(level, logging.INFO), "%s", message)
