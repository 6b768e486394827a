"""A deliberately misbehaving MCP server for tests: stdlib only, starts in a few milliseconds.

Usage: ``python misbehaving.py [MODE[,MODE...]]``, or preloaded by a zygote as ``servers.misbehaving``
(``main(argv)``; ``tests/`` on ``PYTHONPATH``). It writes ``PID <pid>`` to stderr at start, and
also to the FIFO named by ``MISBEHAVING_READY_FIFO`` when that is set (so a test can wait for the
spawn without polling), and ``CALL <tool>`` to the FIFO named by ``MISBEHAVING_CALLS_FIFO`` when a
call arrives. With ``MISBEHAVING_INIT_GATE_FIFO`` set, it answers ``initialize`` only once a line
arrives on that FIFO (a test lets virtual time pass in the start-up first: :func:`helpers.release`).

Modes:
    ok              a normal server (the default)
    no-init         reads everything, never answers initialize
    crash-start     writes a message to stderr and exits with status 3 before reading anything
    noise           writes non-JSON lines to stdout at start and before every response
    stubborn        ignores SIGTERM and stdin EOF (only SIGKILL ends it)
    child           forks a child in its own process group that waits forever (``CHILD <pid>``)
    setsid-child    forks a child that calls setsid and waits forever (escapes the group)
    flaky=PATH      PATH holds N: while N > 0, a start decrements it and fails (exit 4);
                    every start appends a line to PATH.starts
    exact-line      the ``size`` of ``big`` is the length of the whole JSON-RPC line it writes
                    (without the newline), the text padded to fit
    flood=N         writes a line of N bytes (not JSON) to stdout at start
    stderr-flood=N  writes N bytes to stderr at start, then a newline and ``after the flood``
                    (not ended by a newline)

Every mode that answers at all answers a request other than ``initialize`` or ``ping`` that arrives
before ``initialize`` with the JSON-RPC error -32002 "server not initialized" (Property 8).

Tools (all modes that get that far):
    pid        {"pid": <pid>, "calls": <tools/call requests this process handled, this one included>}
    echo       returns the argument "text"
    hang       never answers
    crash      writes to stderr and exits with status 7 mid-call
    children   {"children": [pids of the children forked at start]}
    cancelled  {"cancelled": [request ids of notifications/cancelled received]}
    big        returns "x" * size
    fail       an isError result with the text "it failed on purpose"
    env        {name: value or null} for the argument "names" (a list)
"""

from __future__ import annotations

import json
import os
import signal
import sys

PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")

TOOLS = [
    {"name": "pid", "description": "The server's PID and call counter.", "inputSchema": {"type": "object"}},
    {
        "name": "echo",
        "description": "Echo the text back.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    },
    {"name": "hang", "description": "Never answers.", "inputSchema": {"type": "object"}},
    {"name": "crash", "description": "Exits mid-call.", "inputSchema": {"type": "object"}},
    {"name": "children", "description": "PIDs of forked children.", "inputSchema": {"type": "object"}},
    {"name": "cancelled", "description": "Cancelled request ids.", "inputSchema": {"type": "object"}},
    {
        "name": "big",
        "description": "A large text result.",
        "inputSchema": {"type": "object", "properties": {"size": {"type": "integer"}}},
    },
    {"name": "fail", "description": "An error result.", "inputSchema": {"type": "object"}},
    {
        "name": "env",
        "description": "Values of the named environment variables.",
        "inputSchema": {"type": "object", "properties": {"names": {"type": "array"}}},
    },
]


def err(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def wait_forever() -> None:
    while True:
        signal.pause()


def fork_child(*, new_session: bool) -> int:
    pid = os.fork()
    if pid == 0:
        if new_session:
            os.setsid()
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        wait_forever()
    return pid


class Server:
    def __init__(self, modes: set[str]) -> None:
        self.modes = modes
        self.calls = 0
        self.children: list[int] = []
        self.cancelled: list[object] = []
        self.initialized = False

    def send(self, message: dict[str, object]) -> None:
        if "noise" in self.modes:
            sys.stdout.write("this line is not JSON-RPC\n")
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    def result(self, request_id: object, result: dict[str, object]) -> None:
        self.send({"jsonrpc": "2.0", "id": request_id, "result": result})

    def text(self, request_id: object, text: str, *, is_error: bool = False) -> None:
        self.result(request_id, {"content": [{"type": "text", "text": text}], "isError": is_error})

    def call(self, request_id: object, name: str, arguments: dict[str, object]) -> None:
        self.calls += 1
        if called := os.environ.get("MISBEHAVING_CALLS_FIFO"):
            with open(called, "w") as fifo:
                fifo.write(f"CALL {name}\n")
        if name == "pid":
            self.text(request_id, json.dumps({"pid": os.getpid(), "calls": self.calls}))
        elif name == "echo":
            self.text(request_id, str(arguments.get("text", "")))
        elif name == "hang":
            return
        elif name == "crash":
            err("misbehaving: crashing on purpose in the middle of a call")
            os._exit(7)
        elif name == "children":
            self.text(request_id, json.dumps({"children": self.children}))
        elif name == "cancelled":
            self.text(request_id, json.dumps({"cancelled": self.cancelled}))
        elif name == "big":
            size = arguments.get("size", 100_000)
            size = size if isinstance(size, int) else 0
            if "exact-line" in self.modes:
                empty = {"content": [{"type": "text", "text": ""}], "isError": False}
                size -= len(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": empty}))
            self.text(request_id, "x" * size)
        elif name == "fail":
            self.text(request_id, "it failed on purpose", is_error=True)
        elif name == "env":
            names = arguments.get("names")
            wanted = [str(n) for n in names] if isinstance(names, list) else []
            self.text(request_id, json.dumps({n: os.environ.get(n) for n in wanted}))
        else:
            self.send(
                {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32602, "message": f"no tool {name}"}}
            )

    def handle(self, message: dict[str, object]) -> None:
        method = message.get("method")
        request_id = message.get("id")
        params = message.get("params")
        params = params if isinstance(params, dict) else {}
        if method == "notifications/cancelled":
            self.cancelled.append(params.get("requestId"))
            return
        if request_id is None:
            return  # other notifications
        if "no-init" in self.modes:
            return
        if method not in ("initialize", "ping") and not self.initialized:
            # Property 8: nothing but initialize (and ping) before initialize.
            self.send(
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "error": {"code": -32002, "message": "server not initialized"},
                }
            )
            return
        if method == "initialize":
            if gate := os.environ.get("MISBEHAVING_INIT_GATE_FIFO"):
                with open(gate) as fifo:  # blocks until the test opens it to write, then its line
                    fifo.readline()
            self.initialized = True
            wanted = params.get("protocolVersion")
            version = wanted if wanted in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[-1]
            self.result(
                request_id,
                {
                    "protocolVersion": version,
                    "capabilities": {"tools": {}},
                    "serverInfo": {"name": "misbehaving", "version": "1"},
                },
            )
        elif method == "tools/list":
            self.result(request_id, {"tools": TOOLS})
        elif method == "tools/call":
            arguments = params.get("arguments")
            self.call(request_id, str(params.get("name")), arguments if isinstance(arguments, dict) else {})
        elif method == "ping":
            self.result(request_id, {})
        else:
            self.send(
                {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32601, "message": "no such method"}}
            )

    def serve(self) -> None:
        for line in sys.stdin:
            if line.strip():
                self.handle(json.loads(line))


def flaky(path: str) -> None:
    with open(path + ".starts", "a") as f:
        f.write(f"{os.getpid()}\n")
    try:
        with open(path) as f:
            remaining = int(f.read().strip() or "0")
    except FileNotFoundError:
        remaining = 0
    if remaining > 0:
        # Atomically: a concurrent start must never read a truncated (empty) file as "0".
        with open(f"{path}.{os.getpid()}", "w") as f:
            f.write(str(remaining - 1))
        os.replace(f"{path}.{os.getpid()}", path)
        err(f"misbehaving: flaky start failure ({remaining - 1} more to come)")
        sys.exit(4)


def zygote_preload() -> None:
    """Called once by a zygote that preloads this module; fails when ``MISBEHAVING_PRELOAD=fail``."""
    if os.environ.get("MISBEHAVING_PRELOAD") == "fail":
        raise RuntimeError("the preload failed on purpose")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    modes = set((args[0] if args else "ok").split(","))
    err(f"PID {os.getpid()}")
    if "stubborn" in modes:  # before it says it is ready: a test may stop it as soon as it has
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    ready = os.environ.get("MISBEHAVING_READY_FIFO")
    if ready:
        with open(ready, "w") as fifo:
            fifo.write(f"PID {os.getpid()}\n")
    for mode in modes:
        if mode.startswith("flaky="):
            flaky(mode.removeprefix("flaky="))
    if "crash-start" in modes:
        err("misbehaving: fatal: cannot start (this is the crash-start mode)")
        sys.exit(3)
    server = Server(modes)
    if "child" in modes:
        server.children.append(fork_child(new_session=False))
    if "setsid-child" in modes:
        server.children.append(fork_child(new_session=True))
    for pid in server.children:
        err(f"CHILD {pid}")
    if "noise" in modes:
        sys.stdout.write("starting up... (not JSON)\n")
        sys.stdout.flush()
    for mode in modes:
        if mode.startswith("flood="):
            sys.stdout.write("x" * int(mode.removeprefix("flood=")) + "\n")
            sys.stdout.flush()
        if mode.startswith("stderr-flood="):
            sys.stderr.write("e" * int(mode.removeprefix("stderr-flood=")) + "\nafter the flood")
            sys.stderr.flush()
    server.serve()
    if "stubborn" in modes:
        wait_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())
