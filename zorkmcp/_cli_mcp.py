"""``zorkmcp tools`` and ``zorkmcp call``: look at and poke the configured MCP servers.

Both work whether or not ``[tool.zorkgpt.mcp] enabled`` is set; ``--config`` defaults to the
configured ``config_file``, and with no ``[tool.zorkgpt]`` at all to what ``zorkmcp play`` starts
(the embedded think server). Exit codes: 0 success (``call``: a normal result), 1 an error result, a
timeout, a server that did not start or standard output that cannot be written (a full disk), 2 a
configuration or usage error (message on stderr), 130 interrupted, 141 the reader of the output went
away (``| head``: the rest of the output is dropped, with no message, as ``zorkmcp play`` does).

``zorkmcp tools`` also shows, on stderr, the warnings ``zorkmcp play`` shows for the same servers (a
``tools`` allow-list naming a tool the server lacks, a tool left out for its input schema, an
ambiguous name), in the engine's words.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._stdout import OutputError, output_failed, print_line
from .errors import ConfigError, MCPServerStartupError

if TYPE_CHECKING:
    from collections.abc import Callable

    from .config import McpConfig, Settings
    from .mcp import Toolbox, ToolCallResult, ToolInfo

__all__ = ["add_mcp_subcommands", "cmd_call", "cmd_tools"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_CONFIG = 2
EXIT_INTERRUPTED = 130
_SUMMARY_CHARS = 120


def _error(message: str) -> None:
    print(message, file=sys.stderr)


def _missing_config(path: Path, settings: Settings, *, from_flag: bool) -> str:
    """One line for an ``mcp_config.json`` that does not exist: which, where it came from, what to do.

    (``McpConfig.from_file`` says "MCP is enabled but …", ``zorkmcp play``'s words, which do not
    hold here: these commands work whether or not MCP is enabled.)
    """
    if from_flag:
        return (
            f"--config {path}: no such file; pass --config with the path of an mcp_config.json, "
            "or create it (examples/ has templates)"
        )
    origin = (
        f"[tool.zorkgpt.mcp] config_file in {settings.source}"
        if settings.source is not None
        else "zorkmcp's embedded settings"
    )
    return f"{path} (from {origin}): no such file; create it (examples/ has templates), or pass --config PATH"


def _load(config_path: Path | None, pyproject: Path | None) -> tuple[Settings, McpConfig]:
    from .config import McpConfig, Settings, check_settings_file  # here: ``zorkmcp --help`` stays quick

    if pyproject is not None:
        check_settings_file(pyproject)
    settings = Settings.load(pyproject)  # zorkmcp play's: with no [tool.zorkgpt], the embedded defaults
    path = config_path if config_path is not None else settings.mcp_config_path()
    try:
        return settings, McpConfig.from_file(path)
    except ConfigError as exc:
        if not isinstance(exc.__cause__, FileNotFoundError):
            raise
        raise ConfigError(_missing_config(path, settings, from_flag=config_path is not None)) from exc


def _run(func: Callable[[Settings, McpConfig], int], config_path: Path | None, pyproject: Path | None) -> int:
    try:
        settings, config = _load(config_path, pyproject)
    except ConfigError as exc:
        _error(f"configuration error: {exc}")
        return EXIT_CONFIG
    try:
        return func(settings, config)
    except MCPServerStartupError as exc:
        _error(str(exc))
        return EXIT_FAILED
    except KeyboardInterrupt:
        _error("interrupted")
        return EXIT_INTERRUPTED
    except OutputError as exc:
        return output_failed(exc.error)


class _Warnings:
    """The event sink of ``zorkmcp tools`` and ``call``: the warnings and errors ``zorkmcp play`` shows on its
    terminal, on stderr, as it shows them (``warning: `` and the engine's message)."""

    def emit(self, event_type: str, /, **fields: Any) -> None:
        del event_type, fields

    def log(self, level: str, message: str, /) -> None:
        if level in ("WARNING", "ERROR"):
            _error(f"{level.lower()}: {message}")


def _tool_json(info: ToolInfo) -> dict[str, Any]:
    return {
        "name": info.name,
        "wire_name": info.wire_name,
        "server": info.server,
        "description": info.description,
        "parameters": info.parameters,
    }


def _print_table(tools: list[ToolInfo]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{len(tools)} MCP tools")
    table.add_column("name")
    table.add_column("wire name")
    table.add_column("server")
    table.add_column("description")
    for info in tools:
        summary = " ".join(info.description.split())
        if len(summary) > _SUMMARY_CHARS:
            summary = summary[: _SUMMARY_CHARS - 1].rstrip() + "…"
        table.add_row(info.name, info.wire_name, info.server, summary)
    console = Console(emoji=False)  # stdout's: its width, and colours on a terminal
    try:
        with console.capture() as capture:  # written by print_line: rich's answer to EPIPE is SystemExit(1)
            console.print(table)
    except OSError as exc:  # leaving the capture flushes stdout (an empty write fails on /dev/full)
        raise OutputError(exc) from exc
    print_line(capture.get().removesuffix("\n"))


def _listed_schemas(toolbox: Toolbox) -> list[tuple[str, dict[str, Any] | None]]:
    """Every tool the servers listed (after each ``tools`` allow-list), with its raw input schema."""
    from .mcp._names import canonical_name

    pairs: list[tuple[str, dict[str, Any] | None]] = []
    for server in toolbox.servers:
        session = toolbox.session(server)
        if session is None:
            continue
        allowed = session.config.tools
        for tool in session.tools:
            if allowed is None or tool.name in allowed:
                pairs.append((canonical_name(server, tool.name), tool.input_schema))
    return pairs


def cmd_tools(config_path: Path | None, pyproject: Path | None, as_json: bool, *, lint: bool = False) -> int:
    """Start the configured servers, print every tool, shut them down.

    Args:
        config_path: ``mcp_config.json`` (default: the configured ``config_file``).
        pyproject: settings file (default: ``./pyproject.toml``).
        as_json: print a JSON list of objects with ``name`` (canonical), ``wire_name``, ``server``,
            ``description`` and ``parameters`` instead of a table (with ``lint``: the lint report).
        lint: print, per tool, what schema translation changed and what it left out, and why.

    Returns:
        The exit code (0, 1 when a server did not start or stdout cannot be written, 2 for a
        configuration error, 141 when the reader of stdout went away).
    """

    from ._bridge import run_trio
    from ._cli_lint import lint_report, render_lint_report
    from .mcp import open_toolbox

    def tools(settings: Settings, config: McpConfig) -> int:
        async def main() -> tuple[list[ToolInfo], list[tuple[str, dict[str, Any] | None]]]:
            async with open_toolbox(config.enabled_servers, settings.mcp, events=_Warnings()) as toolbox:
                return list(toolbox.tools), _listed_schemas(toolbox)

        infos, schemas = run_trio(main)
        if lint:
            report = lint_report(schemas)
            if as_json:
                print_line(json.dumps(report, indent=2, ensure_ascii=False))
            else:
                print_line("\n".join(render_lint_report(report)))
        elif as_json:
            print_line(json.dumps([_tool_json(info) for info in infos], indent=2, ensure_ascii=False))
        else:
            _print_table(infos)
        return EXIT_OK

    return _run(tools, config_path, pyproject)


def cmd_call(
    name: str,
    json_args: str,
    config_path: Path | None,
    pyproject: Path | None,
    timeout: float | None,
) -> int:
    """Call one tool and print its ``ToolCallResult.to_dict()`` as JSON.

    Args:
        name: canonical (``thinking.think``) or wire name (``thinking__think``).
        json_args: the arguments as a JSON object.
        config_path: ``mcp_config.json`` (default: the configured ``config_file``).
        pyproject: settings file (default: ``./pyproject.toml``).
        timeout: seconds for the call (default: the tool's configured timeout).

    Returns:
        0 for a normal result, 1 for an error result, a timeout, a server that did not start or
        stdout that cannot be written, 2 for a configuration error or arguments that are not a JSON
        object, 141 when the reader of stdout went away.
    """
    try:
        arguments = _parse_arguments(json_args)
    except ValueError as exc:
        _error(f"configuration error: the arguments are not valid JSON: {exc}")
        return EXIT_CONFIG
    if not isinstance(arguments, dict):
        _error(f"configuration error: the arguments must be a JSON object, got {json_args!r}")
        return EXIT_CONFIG

    from ._bridge import run_trio
    from .mcp import open_toolbox

    def call(settings: Settings, config: McpConfig) -> int:
        async def main() -> ToolCallResult:
            # the warnings of `tools` too: a tool left out for its schema is otherwise just "Unknown tool"
            async with open_toolbox(config.enabled_servers, settings.mcp, events=_Warnings()) as toolbox:
                return await toolbox.call_tool(name, arguments, timeout=timeout)

        result = run_trio(main)
        print_line(json.dumps(result.to_dict(), ensure_ascii=False, default=str))
        return EXIT_FAILED if result.is_error else EXIT_OK

    return _run(call, config_path, pyproject)


class _NotJson(ValueError):
    """JSON text Python would read but JSON has no value for, or a number Python will not read."""


def _json_constant(name: str) -> float:
    raise _NotJson(f"{name} is not JSON (JSON numbers are finite; use null or a string)")


def _json_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise _NotJson(f"the number {shown} is too large for a double")
    return value


def _json_int(text: str) -> int:
    limit = sys.get_int_max_str_digits()
    if limit and len(text.lstrip("-")) > limit:
        raise _NotJson(f"a number has more than {limit} digits (pass it as a string)")
    return int(text)


def _json_object(pairs: list[tuple[str, object]]) -> dict[str, object]:
    seen: dict[str, object] = {}
    for key, value in pairs:
        if key in seen:
            # RFC 8259 leaves it to the reader: Python keeps the last, a server's reader may keep the first
            raise _NotJson(f"the key {key!r} appears twice in one object")
        seen[key] = value
    return seen


def _parse_arguments(json_args: str) -> object:
    """The ``call`` arguments: strict JSON.

    Raises:
        ValueError: not JSON (the message says why): a syntax error, ``NaN`` or ``Infinity`` (which
            Python's reader accepts, and the server would get as ``null``), a float out of range,
            an integer longer than Python converts, nesting deeper than Python reads, or a key
            given twice in one object.
    """
    try:
        return json.loads(
            json_args,
            parse_constant=_json_constant,
            parse_float=_json_float,
            parse_int=_json_int,
            object_pairs_hook=_json_object,
        )
    except RecursionError:
        raise ValueError("objects or arrays nested too deeply") from None


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds > 0, got {text!r}")
    return value


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config",
        metavar="PATH",
        type=Path,
        default=None,
        help="mcp_config.json to use (default: [tool.zorkgpt.mcp] config_file; with no "
        "[tool.zorkgpt] in the settings file, zorkmcp play's embedded think server)",
    )
    parser.add_argument(
        "--pyproject",
        metavar="PATH",
        type=Path,
        default=None,
        help="settings file (default: ./pyproject.toml)",
    )


def add_mcp_subcommands(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``tools`` and ``call`` on the ``zorkmcp`` parser.

    Each sets ``run``: a callable taking the parsed namespace and returning the exit code.

    Args:
        subparsers: what ``ArgumentParser.add_subparsers()`` returned.
    """
    tools = subparsers.add_parser(
        "tools",
        help="start the configured MCP servers and list their tools",
        description="Start every enabled server of mcp_config.json, print each tool (canonical name, "
        "wire name the LLM sees, server, description) and shut the servers down. The warnings zorkmcp "
        "play gives for these servers (e.g. a 'tools' allow-list naming a tool the server lacks, a tool left "
        "out for its input schema) go to stderr.",
    )
    _common(tools)
    tools.add_argument(
        "--json",
        action="store_true",
        dest="as_json",
        help="print a JSON list of {name, wire_name, server, description, parameters}",
    )
    tools.add_argument(
        "--lint",
        action="store_true",
        help="per tool, what schema translation changed for the LLM endpoint and what it left out, and why "
        "(with --json: a list of {tool, status, changes, excluded, parameters})",
    )
    tools.set_defaults(run=lambda args: cmd_tools(args.config, args.pyproject, args.as_json, lint=args.lint))

    call = subparsers.add_parser(
        "call",
        help="call one MCP tool and print the result as JSON",
        description="Start the configured servers, call one tool and print ToolCallResult.to_dict() as JSON. "
        "Exit 0 for a normal result, 1 for an error result or timeout, 2 for a configuration error, "
        "141 when the reader of the output went away (| head).",
    )
    call.add_argument("name", help="tool name, canonical (thinking.think) or wire (thinking__think)")
    call.add_argument(
        "json_args", metavar="JSON-ARGS", nargs="?", default="{}", help="a JSON object (default: {})"
    )
    _common(call)
    call.add_argument(
        "--timeout",
        metavar="S",
        type=_positive_seconds,
        default=None,
        help="seconds before the call is abandoned, > 0 (default: the tool's configured timeout)",
    )
    call.set_defaults(
        run=lambda args: cmd_call(args.name, args.json_args, args.config, args.pyproject, args.timeout)
    )
