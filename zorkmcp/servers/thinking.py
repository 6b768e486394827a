"""The embedded reasoning server: one ``think`` tool.

Two ways to run the same tool from the same core (:mod:`._thinking_core`):

* ``python -m zorkmcp.servers.thinking``: an MCP stdio server on the standard library only
  (:mod:`._stdio_jsonrpc`), so a per-turn spawn costs tens of milliseconds instead of the
  second that importing the MCP SDK takes. The default ``mcp_config.json`` uses it, so
  nothing needs Node.js.
* :func:`create_server`: a fresh MCP SDK server object for ``"type": "inprocess"``
  (``"module": "zorkmcp.servers.thinking:create_server"``), run over the SDK's memory
  transport. The SDK is imported only inside that function.

Each process, and each :func:`create_server` call, has its own thought history.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, Final

from .. import __version__
from ._stdio_jsonrpc import JsonRpcServer, StdioTool
from ._thinking_core import (
    TOOL_ANNOTATIONS,
    TOOL_DESCRIPTION,
    TOOL_INPUT_SCHEMA,
    TOOL_NAME,
    TOOL_TITLE,
    ThinkingSession,
)

if TYPE_CHECKING:
    from collections.abc import Sequence

    from mcp.server.lowlevel import Server

__all__ = ["SERVER_NAME", "create_server", "create_stdio_server", "main"]

SERVER_NAME: Final = "zorkmcp-thinking"

_INSTRUCTIONS: Final = "Use the think tool to reason step by step before choosing a game action."

_USAGE: Final = "usage: python -m zorkmcp.servers.thinking [-h] [--sdk]"

_HELP: Final = (
    "Serve MCP over stdio (newline-delimited JSON-RPC on stdin/stdout) until stdin closes: one tool,\n"
    "think (thought, thoughtNumber, totalThoughts, nextThoughtNeeded, ...), which records a thought\n"
    "and answers with the progress as JSON. Put it in an MCP client's configuration, e.g.\n"
    '{"mcpServers": {"thinking": {"command": "python3", "args": ["-m", "zorkmcp.servers.thinking"]}}}\n'
    "\n"
    "options:\n"
    "  -h, --help  show this help and exit\n"
    "  --sdk       serve the same tool with the MCP SDK's server (about half a second slower to start)"
)


def create_server() -> Server[Any]:
    """A fresh in-process MCP server offering the ``think`` tool (fresh state per call).

    Returns:
        An ``mcp.server.lowlevel.Server``; run it with the SDK's memory transport
        (``mcp.client._memory.InMemoryTransport`` or ``mcp.client.Client(server)``).
    """
    from ._lowlevel import lowlevel_server

    return lowlevel_server(_tools(), name=SERVER_NAME, version=__version__, instructions=_INSTRUCTIONS)


def create_stdio_server() -> JsonRpcServer:
    """The stdlib JSON-RPC server with a fresh ``think`` session (what ``main`` runs)."""
    return JsonRpcServer(_tools(), name=SERVER_NAME, version=__version__, instructions=_INSTRUCTIONS)


def _tools() -> list[StdioTool]:
    """The ``think`` tool over a fresh thought history."""
    think = ThinkingSession().call
    return [
        StdioTool(
            name=TOOL_NAME,
            title=TOOL_TITLE,
            description=TOOL_DESCRIPTION,
            input_schema=TOOL_INPUT_SCHEMA,
            annotations=TOOL_ANNOTATIONS,
            function=think,
        )
    ]


def _serve_with_sdk() -> None:
    """The same tool on the MCP SDK's own stdio server (``--sdk``): for comparison in benchmarks."""
    import signal

    import anyio
    from mcp.server.stdio import stdio_server

    async def run() -> None:
        server = create_server()
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    # The SDK reads stdin in a worker thread that Ctrl-C cannot interrupt: with Python's handler the
    # server would hang until its input closed, then exit 1 with a traceback.
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:  # an ignored SIGINT stays ignored
        signal.signal(signal.SIGINT, signal.SIG_DFL)
    anyio.run(run, backend="trio")


def main(argv: Sequence[str] | None = None) -> int:
    """Serve MCP on stdin/stdout until stdin closes.

    Args:
        argv: ``["--sdk"]`` serves the same tool with the MCP SDK's stdio server instead of the
            standard-library loop (about half a second slower to start; used by the benchmarks);
            ``["--help"]`` (or ``["-h"]``) prints the usage and exits.

    Returns:
        The exit status: 0 on EOF and after ``--help``, 2 for any other argument, 130 on Ctrl-C
        (with ``--sdk`` the process ends by SIGINT itself, which a shell reports as 130).
    """
    args = sys.argv[1:] if argv is None else list(argv)
    if args == ["--sdk"]:
        _serve_with_sdk()
        return 0
    if args in (["-h"], ["--help"]):
        try:
            print(_USAGE + "\n\n" + _HELP, flush=True)
        except BrokenPipeError:  # `--help | head -1`: the reader has gone; nothing is left to say
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # the exit's flush is quiet
        return 0
    if args:
        print(f"{_USAGE}  (unexpected: {' '.join(args)}; --help says more)", file=sys.stderr)
        return 2
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print() must not corrupt the protocol stream
    try:
        create_stdio_server().serve(stdin, stdout)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
