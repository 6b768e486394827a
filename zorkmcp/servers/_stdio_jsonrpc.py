"""A minimal MCP server over stdio, standard library only.

Importing any part of the MCP SDK costs 1.0-1.9 s here; a server that is spawned once per
turn cannot afford that. This loop speaks just enough of MCP for tool
servers: newline-delimited JSON-RPC 2.0 on stdin/stdout with ``initialize``,
``notifications/initialized``, ``ping``, ``tools/list``, ``tools/call`` and
``notifications/cancelled`` (ignored: every tool here answers at once).

The loop is synchronous on purpose: it is a separate process with one client, and a
blocking ``readline`` is the cheapest correct way to wait for it. It exits on stdin EOF.

This module must stay stdlib-only (no attrs, no dataclasses, no mcp): it is on the start-up
path of ``python -m zorkmcp.servers.thinking``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any, Final

__all__ = [
    "INTERNAL_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "LATEST_PROTOCOL_VERSION",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "SUPPORTED_PROTOCOL_VERSIONS",
    "JsonRpcServer",
    "StdioTool",
]

# The initialize-handshake revisions (mcp_types.version.HANDSHAKE_PROTOCOL_VERSIONS in the
# SDK 2.3 client, which offers the newest and rejects an answer outside this set).
SUPPORTED_PROTOCOL_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_PROTOCOL_VERSION: Final = SUPPORTED_PROTOCOL_VERSIONS[-1]

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603

ToolFunction = Callable[[Mapping[str, Any]], tuple[str, bool]]
"""A tool: ``arguments -> (text, is_error)``."""


class StdioTool:
    """One tool the server offers: its MCP listing and the function that runs it."""

    __slots__ = ("annotations", "description", "function", "input_schema", "name")

    def __init__(
        self,
        *,
        name: str,
        description: str,
        input_schema: Mapping[str, Any],
        function: ToolFunction,
        annotations: Mapping[str, Any] | None = None,
    ) -> None:
        self.name = name
        self.description = description
        self.input_schema = input_schema
        self.function = function
        self.annotations = annotations

    def listing(self) -> dict[str, Any]:
        listing = {"name": self.name, "description": self.description, "inputSchema": dict(self.input_schema)}
        if self.annotations is not None:
            listing["annotations"] = dict(self.annotations)
        return listing


class _RpcError(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class JsonRpcServer:
    """Answers MCP requests for a fixed set of tools; one instance per client."""

    def __init__(
        self,
        tools: Sequence[StdioTool],
        *,
        name: str,
        version: str,
        instructions: str | None = None,
    ) -> None:
        """Create a server.

        Args:
            tools: the tools, listed in this order.
            name: ``serverInfo.name``.
            version: ``serverInfo.version``.
            instructions: optional ``instructions`` for the client.
        """
        self._tools = {tool.name: tool for tool in tools}
        self._server_info = {"name": name, "version": version}
        self._instructions = instructions
        self.protocol_version: str | None = None
        """The negotiated version, once ``initialize`` has been answered."""

    def serve(self, stdin: IO[bytes], stdout: IO[bytes]) -> None:
        """Answer requests line by line until stdin reaches EOF (or stdout is closed)."""
        while True:
            line = stdin.readline()
            if not line:
                return
            if not line.strip():
                continue
            response = self.handle_line(line)
            if response is None:
                continue
            data = json.dumps(response, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
            try:
                stdout.write(data + b"\n")
                stdout.flush()
            except BrokenPipeError:
                return

    def handle_line(self, line: bytes | str) -> dict[str, Any] | None:
        """Answer one line of input; ``None`` when nothing is to be sent back."""
        try:
            text = line.decode("utf-8") if isinstance(line, bytes) else line
            message = json.loads(text)
        except (UnicodeDecodeError, ValueError) as exc:
            return _error(None, PARSE_ERROR, f"Parse error: {exc}")
        return self.handle_message(message)

    def handle_message(self, message: object) -> dict[str, Any] | None:
        """Answer one parsed JSON-RPC message; ``None`` for notifications and responses."""
        if not isinstance(message, dict):
            kind = "batches are not supported" if isinstance(message, list) else "expected a JSON object"
            return _error(None, INVALID_REQUEST, f"Invalid Request: {kind}")
        has_id = "id" in message
        request_id = message.get("id")
        if has_id and (isinstance(request_id, bool) or not isinstance(request_id, str | int | None)):
            return _error(None, INVALID_REQUEST, "Invalid Request: id must be a string or an integer")
        method = message.get("method")
        if message.get("jsonrpc") != "2.0" or not isinstance(method, str):
            if "method" not in message and has_id and ("result" in message or "error" in message):
                return None  # a response; we never send requests, so nothing waits for it
            if not has_id:
                return None  # never answer a notification, not even a malformed one
            return _error(request_id, INVALID_REQUEST, 'Invalid Request: needs "jsonrpc": "2.0" and a method')
        if not has_id:
            return None  # notifications/initialized, notifications/cancelled, anything else
        try:
            result = self._dispatch(method, message.get("params"))
        except _RpcError as exc:
            return _error(request_id, exc.code, exc.message)
        return {"jsonrpc": "2.0", "id": request_id, "result": result}

    def _dispatch(self, method: str, params: object) -> dict[str, Any]:
        if params is not None and not isinstance(params, dict):
            raise _RpcError(INVALID_PARAMS, "Invalid params: params must be an object")
        params = params or {}
        if method == "initialize":
            return self._initialize(params)
        if method == "ping":
            return {}
        if method == "tools/list":
            return {"tools": [tool.listing() for tool in self._tools.values()]}
        if method == "tools/call":
            return self._call_tool(params)
        raise _RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")

    def _initialize(self, params: Mapping[str, Any]) -> dict[str, Any]:
        requested = params.get("protocolVersion")
        version = requested if requested in SUPPORTED_PROTOCOL_VERSIONS else LATEST_PROTOCOL_VERSION
        self.protocol_version = version
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": dict(self._server_info),
        }
        if self._instructions:
            result["instructions"] = self._instructions
        return result

    def _call_tool(self, params: Mapping[str, Any]) -> dict[str, Any]:
        name = params.get("name")
        if not isinstance(name, str):
            raise _RpcError(INVALID_PARAMS, "Invalid params: tools/call needs a tool name")
        tool = self._tools.get(name)
        if tool is None:
            available = ", ".join(self._tools) or "none"
            raise _RpcError(INVALID_PARAMS, f"Unknown tool: {name} (available: {available})")
        arguments = params.get("arguments")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise _RpcError(INVALID_PARAMS, "Invalid params: arguments must be an object")
        try:
            text, is_error = tool.function(arguments)
        except Exception as exc:  # noqa: BLE001 - a tool bug becomes an error result; the server lives on
            text, is_error = f"internal error in tool {name}: {type(exc).__name__}: {exc}", True
        return {"content": [{"type": "text", "text": text}], "isError": is_error}


def _error(request_id: object, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
