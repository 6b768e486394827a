"""Property 8: a server answers nothing but ``initialize`` (and ``ping``) before ``initialize``.

The stdlib test server enforces the rule, so a client that lists tools first fails against it. This
test drives the server over a raw pipe, without the client under test.
"""

from __future__ import annotations

import json
import subprocess
import sys

from servers.helpers import MISBEHAVING


def _exchange(*messages: dict[str, object]) -> list[dict[str, object]]:
    lines = "".join(json.dumps(m) + "\n" for m in messages)
    done = subprocess.run(
        [sys.executable, "-S", str(MISBEHAVING), "ok"],
        input=lines,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"},
    },
}


def test_tools_list_before_initialize_is_refused_then_served_after_it() -> None:
    before = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    ping = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
    after = {"jsonrpc": "2.0", "id": 4, "method": "tools/list"}
    refused, initialized, pong, listed = _exchange(before, INITIALIZE, ping, after)
    assert refused == {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {"code": -32002, "message": "server not initialized"},
    }
    assert initialized["id"] == 2
    assert "result" in initialized
    assert pong == {"jsonrpc": "2.0", "id": 3, "result": {}}
    assert listed["id"] == 4
    assert "pid" in [tool["name"] for tool in listed["result"]["tools"]]  # type: ignore[index]


def test_ping_before_initialize_is_answered() -> None:
    [pong] = _exchange({"jsonrpc": "2.0", "id": 7, "method": "ping"})
    assert pong == {"jsonrpc": "2.0", "id": 7, "result": {}}
