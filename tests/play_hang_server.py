"""A stdlib MCP server for the Ctrl-C test of ``zorkmcp play``: its ``think`` tool never answers.

Usage: ``python play_hang_server.py FIFO [--child] [--answer-first]``. When ``think`` is called it
writes ``THINK <pid>`` to the named pipe FIFO (the test waits for that line: a tool call is in
flight) and does not answer; it keeps reading requests and exits when its stdin closes. With
``--child`` it first forks a child that waits forever, and the line is ``THINK <pid> <child pid>``.
With ``--answer-first`` the process answers its first ``think`` call (``ok``) and hangs from the
second on (as a ``per_episode`` server: a turn that shows the live view's whole frame hangs).
"""

from __future__ import annotations

import json
import os
import signal
import sys

PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
THINK = {
    "name": "think",
    "description": "Think (never answers).",
    "inputSchema": {"type": "object", "properties": {"thought": {"type": "string"}}},
}


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def fork_child() -> int:
    pid = os.fork()
    if pid == 0:  # the child: wait until killed
        while True:
            signal.pause()
    return pid


def main() -> None:
    fifo = sys.argv[1]
    child = fork_child() if "--child" in sys.argv[2:] else None
    to_answer = 1 if "--answer-first" in sys.argv[2:] else 0
    for line in sys.stdin:
        if not line.strip():
            continue
        message = json.loads(line)
        request_id = message.get("id")
        method = message.get("method")
        params = message.get("params") or {}
        if request_id is None:
            continue  # notifications (initialized, cancelled)
        if method == "initialize":
            wanted = params.get("protocolVersion")
            send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "result": {
                        "protocolVersion": wanted if wanted in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1],
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "hang-think", "version": "1"},
                    },
                }
            )
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": [THINK]}})
        elif method == "tools/call" and to_answer:
            to_answer -= 1
            send(
                {"jsonrpc": "2.0", "id": request_id, "result": {"content": [{"type": "text", "text": "ok"}]}}
            )
        elif method == "tools/call":
            fd = os.open(fifo, os.O_WRONLY)
            line = f"THINK {os.getpid()}" + (f" {child}" if child is not None else "")
            os.write(fd, f"{line}\n".encode())
            os.close(fd)
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": request_id, "result": {}})
        else:
            send({"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no such method"}})


if __name__ == "__main__":
    main()
