"""A minimal MCP server over stdio, standard library only.

Importing any part of the MCP SDK costs 1.0-1.9 s here; a server that is spawned once per
turn cannot afford that. This loop speaks just enough of MCP for tool
servers: newline-delimited JSON-RPC 2.0 on stdin/stdout with ``initialize``,
``notifications/initialized``, ``ping``, ``tools/list``, ``tools/call`` and
``notifications/cancelled`` (ignored: every tool here answers at once). A JSON-RPC batch (an
array) is answered when the client negotiated 2025-03-26, the one revision whose servers MUST
receive batches (its stdio transport carries them); every other revision sends single messages,
and a batch is an Invalid Request there.

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
    "BATCH_PROTOCOL_VERSIONS",
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
BATCH_PROTOCOL_VERSIONS: Final = ("2025-03-26",)
"""The revisions that carry JSON-RPC batches ("MCP implementations MAY support sending JSON-RPC
batches, but MUST support receiving JSON-RPC batches"); 2025-06-18 removed them again."""

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603

ToolFunction = Callable[[Mapping[str, Any]], tuple[str, bool]]
"""A tool: ``arguments -> (text, is_error)``."""


class StdioTool:
    """One tool the server offers: its MCP listing and the function that runs it."""

    __slots__ = ("annotations", "description", "function", "input_schema", "name", "title")

    def __init__(
        self,
        *,
        name: str,
        description: str,
        input_schema: Mapping[str, Any],
        function: ToolFunction,
        annotations: Mapping[str, Any] | None = None,
        title: str | None = None,
    ) -> None:
        self.name = name
        self.description = description
        self.input_schema = input_schema
        self.function = function
        self.annotations = annotations
        self.title = title  # the display name (MCP 2025-06-18); a client of an older revision ignores it

    def listing(self) -> dict[str, Any]:
        listing: dict[str, Any] = {"name": self.name}
        if self.title is not None:
            listing["title"] = self.title
        listing["description"] = self.description
        listing["inputSchema"] = dict(self.input_schema)
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
            data = _encode(response)
            try:
                stdout.write(data + b"\n")
                stdout.flush()
            except BrokenPipeError:
                return

    def handle_line(self, line: bytes | str) -> dict[str, Any] | list[dict[str, Any]] | None:
        """Answer one line of input; ``None`` when nothing is to be sent back.

        A batch (a JSON array) gets a list of answers, under a revision that carries batches
        (:data:`BATCH_PROTOCOL_VERSIONS`).
        """
        try:
            text = line.decode("utf-8") if isinstance(line, bytes) else line
            message = json.loads(text)
        except (UnicodeDecodeError, ValueError) as exc:
            return _error(None, PARSE_ERROR, f"Parse error: {exc}")
        except RecursionError:  # a line of 100,000 "[": the decoder recurses once per level
            return _error(None, PARSE_ERROR, "Parse error: the JSON is nested too deeply")
        if isinstance(message, list):
            return self.handle_batch(message)
        return self.handle_message(message)

    def handle_batch(self, batch: list[object]) -> dict[str, Any] | list[dict[str, Any]] | None:
        """Answer a JSON-RPC batch: one answer per request, in order; ``None`` when all are notifications.

        JSON-RPC 2.0 §6: an empty batch is one Invalid Request, and every member is answered as if
        it came alone. MCP 2025-03-26 (Lifecycle): ``initialize`` MUST NOT be part of a batch.
        """
        if self.protocol_version not in BATCH_PROTOCOL_VERSIONS:
            negotiated = self.protocol_version or "none negotiated yet"
            return _error(
                None,
                INVALID_REQUEST,
                f"Invalid Request: batches are not supported (protocol version {negotiated}; "
                f"only {', '.join(BATCH_PROTOCOL_VERSIONS)} carries them)",
            )
        if not batch:
            return _error(None, INVALID_REQUEST, "Invalid Request: an empty batch")
        answers: list[dict[str, Any]] = []
        for message in batch:
            if isinstance(message, dict) and message.get("method") == "initialize" and "id" in message:
                request_id = message["id"]
                answer: dict[str, Any] | None = _error(
                    request_id if _is_request_id(request_id) else None,
                    INVALID_REQUEST,
                    "Invalid Request: initialize must not be part of a batch",
                )
            elif isinstance(message, list):
                answer = _error(None, INVALID_REQUEST, "Invalid Request: expected a JSON object")
            else:
                answer = self.handle_message(message)
            if answer is not None:
                answers.append(answer)
        return answers or None

    def handle_message(self, message: object) -> dict[str, Any] | None:
        """Answer one parsed JSON-RPC message; ``None`` for notifications and responses."""
        if not isinstance(message, dict):
            kind = "batches are not supported" if isinstance(message, list) else "expected a JSON object"
            return _error(None, INVALID_REQUEST, f"Invalid Request: {kind}")
        has_id = "id" in message
        request_id = message.get("id")
        if has_id and not _is_request_id(request_id):
            if request_id is None and "method" not in message and ("result" in message or "error" in message):
                return None  # a response (we never send requests, so nothing waits for it)
            # MCP (Basic, Requests): "Requests MUST include a string or integer ID. Unlike base
            # JSON-RPC, the ID MUST NOT be null." A result sent back with "id": null matches nothing.
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
        if not isinstance(requested, str):
            # Lifecycle: "the client MUST send a protocol version it supports"; without one there
            # is nothing to negotiate (the SDK's server answers the same code).
            raise _RpcError(INVALID_PARAMS, "Invalid params: initialize needs a protocolVersion (a string)")
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


def _encode(response: object) -> bytes:
    """One line of UTF-8 JSON; all in ``\\uXXXX`` escapes when it holds a lone surrogate (no UTF-8 form).

    A client may send ``"\\ud800"`` (valid JSON) in an id, a method or a tool name, and the answer
    echoes it: written raw it cannot be encoded, and the server would die on it.
    """
    text = json.dumps(response, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(response, separators=(",", ":")).encode("ascii")


def _is_request_id(value: object) -> bool:
    return isinstance(value, str | int) and not isinstance(value, bool)


def _error(request_id: object, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
