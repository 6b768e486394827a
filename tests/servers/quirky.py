"""A raw stdio JSON-RPC MCP server whose every answer a test chooses: stdlib only, starts fast.

Usage: ``python -S quirky.py SPEC`` where ``SPEC`` is a JSON object (the text itself, not a file):

    protocol        the protocolVersion to answer initialize with (default: the client's)
    capabilities    the server's capabilities (default ``{"tools": {}}``)
    tools           the tools/list entries exactly as published (any JSON, valid MCP or not)
    page_size       list tools this many per page (``nextCursor`` is the index of the next one)
    list_result     answer tools/list with this result instead (the same every time)
    list_error      answer tools/list with this JSON-RPC error object (``{"code", "message"}``)
    answers         per tool name, what tools/call answers: ``{"result": ...}`` or ``{"error": ...}``
    after_initialized  notifications to send once ``notifications/initialized`` arrives

It writes ``PID <pid>`` to stderr at start and ``METHOD <method>`` for every request it receives. A
tools/call with no entry in ``answers`` answers with the text of ``{"pid", "calls", "arguments"}``
(``calls``: the tools/call requests this process has handled, this one included). A method it does
not know is answered -32601, as the SDK's servers do.
"""

from __future__ import annotations

import json
import os
import sys


def _send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _list_tools(spec: dict[str, object], params: dict[str, object]) -> dict[str, object]:
    if "list_result" in spec:
        return spec["list_result"]
    tools = list(spec.get("tools", []))
    size = spec.get("page_size")
    if not isinstance(size, int):
        return {"tools": tools}
    start = int(params.get("cursor") or 0)
    page: dict[str, object] = {"tools": tools[start : start + size]}
    if start + size < len(tools):
        page["nextCursor"] = str(start + size)
    return page


def main(spec: dict[str, object]) -> None:
    print(f"PID {os.getpid()}", file=sys.stderr, flush=True)
    answers: dict[str, dict[str, object]] = spec.get("answers", {})
    calls = 0
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        method = message.get("method")
        if "id" not in message:  # a notification (or a response to nothing we asked)
            if method == "notifications/initialized":
                for note in spec.get("after_initialized", []):
                    _send({"jsonrpc": "2.0", **note})
            continue
        ident, params = message["id"], message.get("params") or {}
        print(f"METHOD {method}", file=sys.stderr, flush=True)
        reply: dict[str, object]
        if method == "initialize":
            version = spec.get("protocol", params.get("protocolVersion"))
            capabilities = spec.get("capabilities", {"tools": {}})
            info = {"name": "quirky", "version": "1"}
            reply = {"result": {"protocolVersion": version, "capabilities": capabilities, "serverInfo": info}}
        elif method == "ping":
            reply = {"result": {}}
        elif method == "tools/list" and "tools" in spec.get("capabilities", {"tools": {}}):
            reply = (
                {"error": spec["list_error"]}
                if "list_error" in spec
                else {"result": _list_tools(spec, params)}
            )
        elif method == "tools/call":
            calls += 1
            name = params.get("name")
            default = {"pid": os.getpid(), "calls": calls, "arguments": params.get("arguments")}
            reply = answers.get(
                name, {"result": {"content": [{"type": "text", "text": json.dumps(default)}]}}
            )
        else:
            reply = {"error": {"code": -32601, "message": f"Method not found: {method}"}}
        _send({"jsonrpc": "2.0", "id": ident, **reply})


if __name__ == "__main__":
    main(json.loads(sys.argv[1]))
