"""The MCP layer's stdlib logger: raw diagnostics only (a server's stderr lines).

Events and episode-log lines go to the episode's one :class:`~zorkmcp.observability.EventSink`,
never here.
"""

from __future__ import annotations

import logging

__all__ = ["logger"]

logger = logging.getLogger("zorkmcp.mcp")
