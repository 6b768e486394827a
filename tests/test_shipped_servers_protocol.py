"""The two shipped stdio servers (``python -m zorkmcp.servers.thinking``, ``python -m zorkmcp.game.server``)
against the MCP specification, line by line, as real processes.

Each conversation is written to the server's stdin at once and read back after EOF: the standard-library
loop answers in order and exits 0, so every answer is compared literally.
"""

from __future__ import annotations

import json
import select
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

REPO = Path(__file__).resolve().parents[1]
GAME = REPO / "zorkmcp" / "game" / "data" / "zork1.z3"
THINK_SERVER = [sys.executable, "-m", "zorkmcp.servers.thinking"]
GAME_SERVER = [sys.executable, "-m", "zorkmcp.game.server", "--game", str(GAME), "--seed", "12"]

GUARD = 60.0
"""Seconds before a blocking wait gives up (a hang guard, never an assertion on time)."""

THOUGHT = {"thought": "Try the key.", "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": False}


def _line(message: Any) -> bytes:
    return json.dumps(message).encode() + b"\n"


def _initialize(version: str, request_id: object = 0) -> dict[str, Any]:
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}


async def _converse(command: list[str], lines: list[bytes]) -> list[Any]:
    done = await trio.run_process(
        command, stdin=b"".join(lines), capture_stdout=True, capture_stderr=True, cwd=str(REPO)
    )
    assert (done.returncode, done.stderr) == (0, b"")
    return [json.loads(line) for line in done.stdout.splitlines()]


# --- lone surrogates: valid JSON escapes that have no UTF-8 form ----------------------------------


@pytest.mark.parametrize("command", [THINK_SERVER, GAME_SERVER], ids=["think", "game"])
async def test_a_lone_surrogate_escape_is_answered_and_the_server_lives_on(command: list[str]) -> None:
    # "\ud800" is valid JSON (RFC 8259 §7 allows any \uXXXX escape); the answer echoes it, and the
    # server died writing it (UnicodeEncodeError: surrogates not allowed), losing every later answer.
    lines = [
        _line(_initialize("2025-11-25")),
        b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "ping"}\n',
        b'{"jsonrpc": "2.0", "id": 2, "method": "x\\udc00"}\n',
        b'{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "\\ud83d"}}\n',
        b'{"jsonrpc": "2.0", "id": 4, "method": "ping"}\n',
    ]
    answers = await _converse(command, lines)
    assert answers[1:] == [
        {"jsonrpc": "2.0", "id": "\ud800", "result": {}},
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -32601, "message": "Method not found: x\udc00"}},
        {"jsonrpc": "2.0", "id": 3, "error": {"code": -32602, "message": answers[3]["error"]["message"]}},
        {"jsonrpc": "2.0", "id": 4, "result": {}},
    ]
    assert answers[3]["error"]["message"].startswith("Unknown tool: \ud83d (available: ")


async def test_the_surrogate_answers_are_ascii_escapes_on_the_wire() -> None:
    lines = [_line(_initialize("2025-11-25")), b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "ping"}\n']
    done = await trio.run_process(THINK_SERVER, stdin=b"".join(lines), capture_stdout=True, cwd=str(REPO))
    assert done.stdout.splitlines()[1] == b'{"jsonrpc":"2.0","id":"\\ud800","result":{}}'
    done.stdout.decode("utf-8")  # every byte on stdout is UTF-8 (Transports: MUST be UTF-8 encoded)


# --- ids: MCP requests MUST carry a string or integer id, never null ------------------------------


async def test_a_request_with_a_null_id_is_an_invalid_request() -> None:
    # Basic, Requests: "Unlike base JSON-RPC, the ID MUST NOT be null." A result sent back with
    # "id": null matches no request (and the SDK's JSONRPCResponse refuses it).
    initialize = {**_initialize("2025-11-25"), "id": None}
    lines = [
        _line(initialize),
        _line({"jsonrpc": "2.0", "id": None, "method": "ping"}),
        _line({"jsonrpc": "2.0", "id": None, "result": {}}),  # a response: never answered
        _line({"jsonrpc": "2.0", "id": 12345678901234567890, "method": "ping"}),
        _line({"jsonrpc": "2.0", "id": "p", "method": "ping"}),
    ]  # fmt: skip
    invalid = {"code": -32600, "message": "Invalid Request: id must be a string or an integer"}
    assert await _converse(THINK_SERVER, lines) == [
        {"jsonrpc": "2.0", "id": None, "error": invalid},
        {"jsonrpc": "2.0", "id": None, "error": invalid},
        {"jsonrpc": "2.0", "id": 12345678901234567890, "result": {}},
        {"jsonrpc": "2.0", "id": "p", "result": {}},
    ]


# --- initialize -----------------------------------------------------------------------------------


async def test_initialize_without_a_protocol_version_is_invalid_params() -> None:
    # Lifecycle: the client MUST send the protocol version it supports (InitializeRequest requires
    # protocolVersion); the SDK's server answers -32602 too. The server stays usable.
    lines = [
        _line({"jsonrpc": "2.0", "id": 1, "method": "initialize"}),
        _line({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"capabilities": {}}}),
        _line({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {"protocolVersion": 20250618}}),
        _line(_initialize("2024-11-05", request_id=4)),
    ]
    answers = await _converse(THINK_SERVER, lines)
    invalid = {"code": -32602, "message": "Invalid params: initialize needs a protocolVersion (a string)"}
    assert answers[:3] == [{"jsonrpc": "2.0", "id": i, "error": invalid} for i in (1, 2, 3)]
    assert answers[3]["result"]["protocolVersion"] == "2024-11-05"


# --- JSON-RPC batches: 2025-03-26 servers MUST receive them ---------------------------------------

_BATCH = [
    {"jsonrpc": "2.0", "id": 1, "method": "ping"},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": "b", "method": "tools/call", "params": {"name": "think", "arguments": THOUGHT}},
    {"jsonrpc": "2.0", "id": 3, "method": "resources/list"},
    5,
    _initialize("2025-03-26", request_id=4),
]
_PROGRESS = (
    '{"thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": false, "branches": [], '
    '"thoughtHistoryLength": 1}'
)


async def test_a_batch_is_answered_under_2025_03_26() -> None:
    # 2025-03-26, Basic (Batching): "MCP implementations MAY support sending JSON-RPC batches, but
    # MUST support receiving JSON-RPC batches"; its stdio transport carries them. JSON-RPC 2.0 §6:
    # one answer per request in an array, none for notifications, one error for an empty batch.
    lines = [
        _line(_initialize("2025-03-26")),
        _line(_BATCH),
        _line([{"jsonrpc": "2.0", "method": "notifications/initialized"}]),  # no answer at all
        _line([]),
        _line({"jsonrpc": "2.0", "id": 9, "method": "ping"}),
    ]
    answers = await _converse(THINK_SERVER, lines)
    assert answers[0]["result"]["protocolVersion"] == "2025-03-26"
    assert answers[1:] == [
        [
            {"jsonrpc": "2.0", "id": 1, "result": {}},
            {"jsonrpc": "2.0", "id": "b",
             "result": {"content": [{"type": "text", "text": _PROGRESS}], "isError": False}},
            {"jsonrpc": "2.0", "id": 3,
             "error": {"code": -32601, "message": "Method not found: resources/list"}},
            {"jsonrpc": "2.0", "id": None,
             "error": {"code": -32600, "message": "Invalid Request: expected a JSON object"}},
            {"jsonrpc": "2.0", "id": 4,
             "error": {"code": -32600, "message": "Invalid Request: initialize must not be part of a batch"}},
        ],
        {"jsonrpc": "2.0", "id": None,
         "error": {"code": -32600, "message": "Invalid Request: an empty batch"}},
        {"jsonrpc": "2.0", "id": 9, "result": {}},
    ]  # fmt: skip


async def test_a_batch_is_refused_under_the_revisions_without_batches() -> None:
    # 2025-06-18 removed batching: a batch there is one Invalid Request, and nothing in it runs.
    ping = {"jsonrpc": "2.0", "id": 9, "method": "ping"}
    answers = await _converse(GAME_SERVER, [_line(_initialize("2025-11-25")), _line(_BATCH), _line(ping)])
    message = (
        "Invalid Request: batches are not supported (protocol version 2025-11-25; "
        "only 2025-03-26 carries them)"
    )
    assert answers[1:] == [
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}},
        {"jsonrpc": "2.0", "id": 9, "result": {}},
    ]  # fmt: skip


# --- Ctrl-C ---------------------------------------------------------------------------------------


def _interrupted(command: list[str]) -> tuple[int, bytes]:
    """Start a server, wait for its answer to a ping, send SIGINT; its exit status and stderr."""
    server = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(REPO)
    )
    try:
        assert server.stdin is not None
        assert server.stdout is not None
        assert server.stderr is not None
        server.stdin.write(_line({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        server.stdin.flush()
        assert select.select([server.stdout], [], [], GUARD)[0], "the server never answered the ping"
        assert json.loads(server.stdout.readline()) == {"jsonrpc": "2.0", "id": 1, "result": {}}
        server.send_signal(signal.SIGINT)
        # stdin stays open: the server must end on the signal alone, not wait for its input.
        returncode = server.wait(timeout=GUARD)
        return returncode, server.stderr.read()
    finally:
        if server.returncode is None:
            server.kill()
            server.wait()
        for pipe in (server.stdin, server.stdout, server.stderr):
            if pipe is not None:
                pipe.close()


def test_ctrl_c_ends_the_game_server_with_130_and_no_traceback() -> None:
    assert _interrupted(GAME_SERVER) == (130, b"")


@pytest.mark.parametrize("command", [THINK_SERVER, GAME_SERVER], ids=["think", "game"])
def test_ctrl_c_ends_an_sdk_server_at_once(command: list[str]) -> None:
    # The SDK reads stdin in a worker thread: Python's SIGINT handler left the server waiting for a line
    # of input, then exiting 1 with a KeyboardInterrupt group on stderr.
    assert _interrupted([*command, "--sdk"]) == (-signal.SIGINT, b"")
