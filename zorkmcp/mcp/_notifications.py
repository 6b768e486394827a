"""What MCP servers tell the client, as events: logs, progress, a changed tool list.

One :class:`ServerNotifications` per server session (stdio, in-process or remote alike)::

    notes = ServerNotifications(server.name, events)
    async with ClientSession(read, write, logging_callback=notes.on_log, message_handler=notes.on_message):
        ...
        await client.call_tool(name, args, progress_callback=notes.progress_for(name))
        if notes.take_tools_changed():   # before the next LLM request of the turn
            ...                          # list the tools again

Events: ``mcp_server_log`` (server, level, logger, data) plus an episode-log line;
``mcp_tool_progress`` (server, tool, progress, total, message); ``mcp_tools_changed`` (server);
``mcp_server_not_json_rpc`` (server, line): the first stdout line of a stdio server's process that
is not JSON-RPC (a banner, a ``print``), with a warning in the episode log (later lines: debug).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

import anyio.lowlevel
import mcp_types

from zorkmcp._controls import visible_controls

from ._stdio import NotJsonRpc

if TYPE_CHECKING:
    from mcp.client.session import IncomingMessage
    from mcp.shared.dispatcher import ProgressFnT

    from zorkmcp.observability import EventSink

__all__ = ["MAX_LOG_DATA_CHARS", "NOTES_BURST", "NOTES_PER_SECOND", "ServerNotifications"]

MAX_LOG_DATA_CHARS: Final = 2000
"""A server's log data longer than this (as JSON), or a progress message, is cut short in events
and log lines."""

_EPISODE_LEVEL: Final = {
    "debug": "DEBUG",
    "info": "INFO",
    "notice": "INFO",
    "warning": "WARNING",
}


def _bounded(data: Any) -> Any:
    """``data`` as sent, unless its JSON form is longer than :data:`MAX_LOG_DATA_CHARS`."""
    text = data if isinstance(data, str) else json.dumps(data, default=str, ensure_ascii=False)
    if len(text) <= MAX_LOG_DATA_CHARS:
        return data
    return text[:MAX_LOG_DATA_CHARS] + f"… ({len(text) - MAX_LOG_DATA_CHARS} more characters)"


NOTES_BURST: Final = 50
"""Log and progress notifications one server may send at once before :data:`NOTES_PER_SECOND` applies."""
NOTES_PER_SECOND: Final = 5.0
"""Log and progress notifications of one server recorded per second past :data:`NOTES_BURST`: a
server that sends them in a tight loop would otherwise fill the episode's bounded recorder (5000
events between two writes of the log) and push the turn's own events, ``turn_complete`` among
them, out of the event log. The others are counted, and said in one line when one is next recorded."""


class ServerNotifications:
    """Turns one server's notifications into events (see the module docstring).

    Args:
        server: the server's name in ``mcp_config.json``.
        events: where the events and episode-log lines go.
    """

    def __init__(self, server: str, events: EventSink) -> None:
        self.server = server
        self._events = events
        self._tools_changed = False
        self._allowance = float(NOTES_BURST)
        self._counted_at: float | None = None
        self._unrecorded = 0

    def _recorded(self) -> bool:
        """Whether a log or progress notification is recorded now (a token bucket, on the loop's clock).

        The first one recorded after some were not says how many were not, in an episode-log line.
        """
        now = anyio.current_time()
        if self._counted_at is not None:
            self._allowance = min(
                float(NOTES_BURST), self._allowance + (now - self._counted_at) * NOTES_PER_SECOND
            )
        self._counted_at = now
        if self._allowance < 1:
            self._unrecorded += 1
            return False
        self._allowance -= 1
        if self._unrecorded:
            self._events.log(
                "WARNING",
                f"MCP server '{self.server}' sent {self._unrecorded} log or progress notification(s) that "
                f"were not recorded (more than {NOTES_PER_SECOND:g} a second after the first {NOTES_BURST})",
            )
            self._unrecorded = 0
        return True

    def __repr__(self) -> str:
        return f"ServerNotifications(server={self.server!r}, tools_changed={self._tools_changed})"

    async def on_log(self, params: mcp_types.LoggingMessageNotificationParams) -> None:
        """``ClientSession(logging_callback=...)``: a ``notifications/message`` from the server."""
        if not self._recorded():
            await anyio.lowlevel.checkpoint()
            return
        data = _bounded(params.data)
        self._events.emit(
            "mcp_server_log", server=self.server, level=params.level, logger=params.logger, data=data
        )
        source = f"{self.server}/{params.logger}" if params.logger else self.server
        text = data if isinstance(data, str) else json.dumps(data, default=str, ensure_ascii=False)
        self._events.log(
            _EPISODE_LEVEL.get(params.level, "ERROR"), f"MCP server '{source}' [{params.level}]: {text}"
        )
        await anyio.lowlevel.checkpoint()

    async def on_message(self, message: IncomingMessage) -> None:
        """``ClientSession(message_handler=...)``: every other notification, and transport faults."""
        if isinstance(message, mcp_types.ToolListChangedNotification):
            self._tools_changed = True
            self._events.emit("mcp_tools_changed", server=self.server)
            self._events.log("INFO", f"MCP server '{self.server}' changed its tool list")
        elif isinstance(message, NotJsonRpc):
            if message.count == 1:
                self._events.emit("mcp_server_not_json_rpc", server=self.server, line=message.line)
            line = visible_controls(message.line, keep="")
            self._events.log(
                "WARNING" if message.count == 1 else "DEBUG",
                f"MCP server '{self.server}' wrote a line on stdout that is not JSON-RPC (ignored; a server "
                f"must write only JSON-RPC there, its logs to stderr): {line}",
            )
        elif isinstance(message, Exception):
            self._events.log("DEBUG", f"MCP server '{self.server}': transport fault {type(message).__name__}")
        await anyio.lowlevel.checkpoint()

    def take_tools_changed(self) -> bool:
        """Whether the tool list changed since the last call (and forget it)."""
        changed, self._tools_changed = self._tools_changed, False
        return changed

    def progress_for(self, tool: str) -> ProgressFnT:
        """A ``call_tool(progress_callback=...)`` for one call of ``tool`` (its name on the server)."""

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            if not self._recorded():
                await anyio.lowlevel.checkpoint()
                return
            self._events.emit(
                "mcp_tool_progress",
                server=self.server,
                tool=tool,
                progress=progress,
                total=total,
                message=message if message is None else _bounded(message),
            )
            await anyio.lowlevel.checkpoint()

        return on_progress
