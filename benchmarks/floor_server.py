"""The floor: the smallest useful MCP stdio server in Python (standard library only, no zorkmcp import).

One tool, ``think``, with the same name and arguments as the embedded reasoning server, so a turn
that uses it is comparable. It answers ``initialize``, ``tools/list``, ``tools/call`` and ``ping``
and exits on stdin EOF. Whatever a per-turn Python server costs beyond this is the server's own
start-up work; this is only the interpreter plus ``json``.

Run: ``python benchmarks/floor_server.py`` (the benchmarks start it as a subprocess).
"""

from __future__ import annotations

import json
import sys

__all__ = ["main"]

_TOOL = {
    "name": "think",
    "description": "Record one thought (floor server for benchmarks).",
    "inputSchema": {
        "type": "object",
        "properties": {
            "thought": {"type": "string"},
            "thoughtNumber": {"type": "integer"},
            "totalThoughts": {"type": "integer"},
            "nextThoughtNeeded": {"type": "boolean"},
        },
        "required": ["thought", "thoughtNumber", "totalThoughts", "nextThoughtNeeded"],
    },
}
_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")


def _answer(request: dict[str, object], thoughts: list[object]) -> dict[str, object] | None:
    method, request_id = request.get("method"), request.get("id")
    if request_id is None:
        return None  # a notification
    params = request.get("params")
    params = params if isinstance(params, dict) else {}
    if method == "initialize":
        wanted = params.get("protocolVersion")
        result: dict[str, object] = {
            "protocolVersion": wanted if wanted in _VERSIONS else _VERSIONS[-1],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "floor", "version": "1"},
        }
    elif method == "tools/list":
        result = {"tools": [_TOOL]}
    elif method == "tools/call" and params.get("name") == "think":
        arguments = params.get("arguments")
        thoughts.append(arguments.get("thought") if isinstance(arguments, dict) else None)
        text = json.dumps({"thoughtHistoryLength": len(thoughts)})
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    elif method == "ping":
        result = {}
    else:
        error = {"code": -32601, "message": f"no such method or tool: {method}"}
        return {"jsonrpc": "2.0", "id": request_id, "error": error}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def main() -> None:
    """Serve until stdin closes."""
    thoughts: list[object] = []
    out = sys.stdout
    for line in sys.stdin:
        if not line.strip():
            continue
        response = _answer(json.loads(line), thoughts)
        if response is not None:
            out.write(json.dumps(response) + "\n")
            out.flush()


if __name__ == "__main__":
    main()
