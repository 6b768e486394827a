"""``zorkmcp tools`` and ``zorkmcp call``: look at and poke the configured MCP servers.

Both work whether or not ``[tool.zorkgpt.mcp] enabled`` is set; ``--config`` defaults to the
configured ``config_file``, and with no ``[tool.zorkgpt]`` at all to what ``zorkmcp play`` starts
(the embedded think server). Exit codes: 0 success (``call``: a normal result), 1 an error result, a
timeout, a server that did not start or standard output that cannot be written (a full disk), 2 a
configuration or usage error (message on stderr), 130 interrupted, 141 the reader of the output went
away (``| head``: the rest of the output is dropped, with no message, as ``zorkmcp play`` does).

``zorkmcp tools`` also shows, on stderr, the warnings ``zorkmcp play`` shows for the same servers (a
``tools`` allow-list naming a tool the server lacks, a tool left out for its input schema, an
ambiguous name, more tools than OpenAI's API takes in one request), in the engine's words. It lists
the tools of every server that started, and says on stderr, one line each, which did not and why
(then exits 1; when none started, one more line says so, instead of an empty table); a server that
started with no tools capability (prompts or resources only), or whose ``tools/list`` is empty, is
a ``note:`` line there, with 0 tools. ``zorkmcp tools SERVER`` starts and lists that server only.
``zorkmcp call SERVER.TOOL`` (or ``SERVER__TOOL``) starts only that server when the name can belong
to no other configured server (and another server's command missing from ``PATH`` is then no
error); ``call NAME -`` reads the arguments from standard input.
Control characters a server puts in names and descriptions are shown escaped (``\\x1b``), except in
JSON output, which stays JSON whatever standard output's encoding (``\\uXXXX`` escapes when it is
not UTF-8).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from ._argtypes import file_path_object
from ._stdout import OutputError, output_failed, print_line
from .errors import ConfigError, MCPServerStartupError

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable, Sequence
    from pathlib import Path

    from ._cli_lint import LintTool
    from .config import McpConfig, McpSettings, ServerConfig, Settings
    from .mcp import ModelSampler, ServerHandle, Toolbox, ToolCallResult, ToolInfo

    _Starts = Callable[[McpConfig], Sequence[ServerConfig]]
    """The servers a command will start, of an ``mcp_config.json``."""

__all__ = ["add_mcp_subcommands", "cmd_call", "cmd_tools"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_CONFIG = 2
EXIT_INTERRUPTED = 130
_SUMMARY_CHARS = 120
_DESCRIPTION_MIN_WIDTH = 20
"""The narrowest the description column gets; the names are never cut, the table widens instead."""


def _error(message: str) -> None:
    from ._controls import visible_controls

    if sys.stderr is None:  # closed (2>&-): print(file=None) would write it on stdout, into the JSON
        return
    print(visible_controls(message, keep="\n"), file=sys.stderr)


def _command(body: Callable[[], int]) -> int:
    """Run a command's ``body``: Ctrl-C anywhere in it, its imports too, is ``interrupted`` and 130.

    The engine's imports take most of a second; a Ctrl-C then was a ``KeyboardInterrupt`` traceback.
    Standard output closed (``>&-``: ``sys.stdout`` is ``None``) is one line and status 1 before
    anything starts, as a full disk is once it is written.
    """
    try:
        if sys.stdout is None:
            _error("cannot write to standard output: it is closed (send it to /dev/null to drop it)")
            return EXIT_FAILED
        return body()
    except KeyboardInterrupt:
        _error("interrupted")
        return EXIT_INTERRUPTED


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
    return (
        f"{path} (from {_origin(settings)}): no such file; create it (examples/ has templates), "
        "or pass --config PATH"
    )


def _folder_config(path: Path, settings: Settings, *, from_flag: bool) -> str:
    """One line for an ``mcp_config.json`` path that is a folder: pass the file, the one in it if any."""
    inside = path / "mcp_config.json"
    named = f"--config {path}" if from_flag else f"{path} (from {_origin(settings)})"
    if inside.is_file():
        fix = f"pass the file in it: --config {inside}"
    elif from_flag:
        fix = "pass --config with the path of an mcp_config.json"
    else:
        fix = "point config_file at an mcp_config.json, or pass --config PATH"
    return f"{named}: is a folder, not an mcp_config.json; {fix}"


def _origin(settings: Settings) -> str:
    """Where the configured ``config_file`` comes from, for messages about it."""
    if settings.source is None:
        return "zorkmcp's embedded settings"
    return f"[tool.zorkgpt.mcp] config_file in {settings.source}"


def _load(
    config_path: Path | None, pyproject: Path | None, starts: _Starts | None = None
) -> tuple[Settings, McpConfig]:
    from .config import McpConfig, Settings, check_settings_file  # here: ``zorkmcp --help`` stays quick

    if pyproject is not None:
        check_settings_file(pyproject)
    settings = Settings.load(pyproject)  # zorkmcp play's: with no [tool.zorkgpt], the embedded defaults
    path = config_path if config_path is not None else settings.mcp_config_path()
    try:
        return settings, McpConfig.from_file(path)
    except ConfigError as exc:
        if isinstance(exc.__cause__, FileNotFoundError):
            raise ConfigError(_missing_config(path, settings, from_flag=config_path is not None)) from exc
        if isinstance(exc.__cause__, IsADirectoryError):
            raise ConfigError(_folder_config(path, settings, from_flag=config_path is not None)) from exc
        if starts is None:
            raise
        # Perhaps only a server this command does not start has a command not on PATH (or a cwd that
        # is gone): `call SERVER.TOOL` starts that one server, so the others' commands do not matter.
        try:
            unchecked = McpConfig.from_file(path, check_commands=False)
        except ConfigError:
            raise exc from None
        if not _runnable(starts(unchecked)):
            raise
        return settings, unchecked


def _runnable(servers: Sequence[ServerConfig]) -> bool:
    """Whether each enabled stdio server of ``servers`` has its command and its cwd (``check_commands``)."""
    from .config._checks import check_host

    problems: list[str] = []
    for server in servers:
        if not server.disabled and server.type == "stdio":
            check_host(server, server.name, problems)
    return not problems


def _run(
    func: Callable[[Settings, McpConfig], int],
    config_path: Path | None,
    pyproject: Path | None,
    *,
    starts: _Starts | None = None,
) -> int:
    """Load the settings and ``mcp_config.json``, run ``func``: a configuration error is one line and 2.

    ``starts``: the servers ``func`` will start, when not all: a command missing from ``PATH`` is an
    error only for those (``zorkmcp play`` and ``tools`` start them all, and refuse any).
    """
    try:
        settings, config = _load(config_path, pyproject, starts)
        from .llm import pick_base_url

        pick_base_url(settings.llm)  # a bad OPENAI_BASE_URL: the sampler a server may ask for needs it
    except ConfigError as exc:
        _error(f"configuration error: {exc}")
        return EXIT_CONFIG
    try:
        return func(settings, config)
    except MCPServerStartupError as exc:
        _error(str(exc))
        return EXIT_FAILED
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


class _CallWarnings(_Warnings):
    """The event sink of ``zorkmcp call``: it speaks of the tool called, not of the others.

    The lines of the servers' start-up are held until the tool is known (:meth:`release`); then the
    warnings the tool table logged about other tools (:attr:`~zorkmcp.mcp.Toolbox.notes`: a schema
    left out, a description cut, an allow-list name the server lacks) are only counted, in one
    ``note:`` line that says where to read them, and every other line is shown as ``tools`` shows it.
    """

    def __init__(self, tools_command: str) -> None:
        self._held: list[tuple[str, str]] | None = []
        self._tools_command = tools_command

    def log(self, level: str, message: str, /) -> None:
        if self._held is not None and level in ("WARNING", "ERROR"):
            self._held.append((level, message))
            return
        super().log(level, message)

    def release(self, toolbox: Toolbox | None = None, name: str = "") -> None:
        """Show the held lines: of the notes of ``toolbox``, those about the tool ``name`` resolves
        to (or, unresolved, those about a tool whose canonical name is ``name``); all without one."""
        from .mcp._names import base_wire_name, canonical_name

        held, self._held = self._held or [], None
        others: set[str] = set()
        if toolbox is not None:
            info = toolbox.resolve(name)
            called = {(info.server, info.tool)} if info is not None else set()
            for note in toolbox.notes:
                if not any(
                    tool in called
                    or (info is None and name in (canonical_name(*tool), base_wire_name(*tool)))
                    for tool in note.about
                ):
                    others.add(note.message)
        unsaid = 0
        for level, message in held:
            if message in others:
                unsaid += 1
            else:
                super().log(level, message)
        if unsaid:
            warnings = f"{unsaid} warning{'s' if unsaid > 1 else ''}"
            _error(f"note: {warnings} about other tools not shown ({self._tools_command} shows them)")


def _json_text(value: object, *, indent: int | None = None) -> str:
    """``value`` as JSON that standard output can carry: non-ASCII characters as they are when its
    encoding has them (UTF-8), else as ``\\uXXXX`` escapes (``PYTHONIOENCODING=ascii``, a Latin-1
    locale: the stream would write ``\\xe9`` for ``é``, which is no JSON escape, and ``jq`` would
    refuse the output)."""
    text = json.dumps(value, indent=indent, ensure_ascii=False, default=str)
    try:
        text.encode(getattr(sys.stdout, "encoding", None) or "utf-8")
    except (UnicodeEncodeError, LookupError):  # a lone surrogate too: JSON has an escape for it
        return json.dumps(value, indent=indent, ensure_ascii=True, default=str)
    return text


def _tool_json(info: ToolInfo) -> dict[str, Any]:
    return {
        "name": info.name,
        "wire_name": info.wire_name,
        "server": info.server,
        "description": info.description,
        "parameters": info.parameters,
    }


def _print_table(tools: list[ToolInfo]) -> None:
    """The tools as a table: names whole (they are what ``call`` takes), descriptions shortened and wrapped.

    Every cell is plain text (a ``[`` in a name is not rich markup) with its control characters
    escaped; the table is as wide as the console, or wider when the names need it.
    """
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from ._controls import visible_controls

    rows = [
        (info, [visible_controls(cell, keep="") for cell in (info.name, info.wire_name, info.server)])
        for info in tools
    ]
    table = Table(title=f"{len(tools)} MCP tool{'' if len(tools) == 1 else 's'}")
    widths = []
    for index, header in enumerate(("name", "wire name", "server")):
        width = max([len(header), *(len(cells[index]) for _, cells in rows)])
        widths.append(width)
        table.add_column(header, no_wrap=True, min_width=width, overflow="fold")
    table.add_column("description", min_width=_DESCRIPTION_MIN_WIDTH, overflow="fold")
    for info, cells in rows:
        summary = " ".join(info.description.split())
        if len(summary) > _SUMMARY_CHARS:
            summary = summary[: _SUMMARY_CHARS - 1].rstrip() + "…"
        table.add_row(*(Text(cell) for cell in cells), Text(visible_controls(summary, keep="")))
    console = Console(emoji=False)  # stdout's: its width, and colours on a terminal
    needed = sum(widths) + _DESCRIPTION_MIN_WIDTH + 3 * 4 + 1  # each column: a border and 2 of padding
    if console.width < needed:
        console = Console(emoji=False, width=needed)
    try:
        with console.capture() as capture:  # written by print_line: rich's answer to EPIPE is SystemExit(1)
            console.print(table)
    except OSError as exc:  # leaving the capture flushes stdout (an empty write fails on /dev/full)
        raise OutputError(exc) from exc
    print_line(capture.get().removesuffix("\n"))


def _sampler(settings: Settings, events: _Warnings) -> ModelSampler:
    """The sampler ``zorkmcp play`` would give the servers with ``"sampling": true``: the settings'
    model, opened for each request (``tools`` declares the capability as ``play`` does, so a server
    lists the same tools; ``call`` answers with that model, or refuses with the offline scripted one)."""
    from .llm import ModelChoice
    from .mcp import ModelSampler

    choice = ModelChoice.from_settings(settings)
    return ModelSampler.opening(lambda: choice.open(events))


@asynccontextmanager
async def _open_servers(
    servers: Sequence[ServerConfig],
    settings: McpSettings,
    sampler: ModelSampler,
    events: _Warnings | None = None,
) -> AsyncIterator[tuple[Toolbox, dict[str, MCPServerStartupError]]]:
    """Like :func:`~zorkmcp.mcp.open_toolbox`, but a server that does not start leaves the others.

    Yields:
        The toolbox of the servers that started, and the startup error of each that did not (in
        ``servers`` order).
    """
    import anyio

    from .mcp import Toolbox, start_server
    from .mcp._sampling import SamplingPolicy

    events = events if events is not None else _Warnings()
    sampling = SamplingPolicy(sampler)
    handles: dict[str, ServerHandle] = {}
    errors: dict[str, MCPServerStartupError] = {}

    async def start(nursery: anyio.abc.TaskGroup, server: ServerConfig) -> None:
        try:
            handles[server.name] = await start_server(
                nursery, server, settings, events=events, sampling=sampling
            )
        except MCPServerStartupError as exc:
            errors[server.name] = exc

    async with anyio.create_task_group() as nursery:
        try:
            async with anyio.create_task_group() as starters:
                for server in servers:
                    starters.start_soon(start, nursery, server)
            started = [handles[s.name].session for s in servers if s.name in handles]
            failed = {s.name: errors[s.name] for s in servers if s.name in errors}
            yield Toolbox(started, settings, events=events), failed
        finally:
            for handle in handles.values():
                handle.close()


def _listed(toolbox: Toolbox) -> list[LintTool]:
    """Every tool the servers listed (after each ``tools`` allow-list), for ``--lint``: its raw input
    schema and description, its wire name when it is offered, and why it is left out whatever the
    schema (:func:`~zorkmcp.mcp._tools.not_callable`, or a ``tools/list`` entry that is not valid
    MCP: those follow the server's other tools)."""
    from ._cli_lint import LintTool
    from .mcp._names import canonical_name
    from .mcp._tools import not_callable

    wire = {(info.server, info.tool): info.wire_name for info in toolbox.tools}
    listed: list[LintTool] = []
    for server in toolbox.servers:
        session = toolbox.session(server)
        if session is None:
            continue
        allowed = session.config.tools
        names = {tool.name for tool in session.tools}
        for tool in session.tools:
            if allowed is None or tool.name in allowed:
                listed.append(
                    LintTool(
                        name=canonical_name(server, tool.name),
                        schema=tool.input_schema,
                        server=server,
                        wire_name=wire.get((server, tool.name)),
                        left_out=not_callable(tool),
                        description=tool.description or "",
                        repairs=tuple(note for repaired, note in session.repairs if repaired == tool.name),
                    )
                )
        listed.extend(
            LintTool(name=canonical_name(server, name), server=server, left_out=reason)
            for name, reason in session.left_out
            if (allowed is None or name in allowed) and name not in names  # as build_tool_infos
        )
    return listed


def _without_tools(toolbox: Toolbox) -> list[str]:
    """One line per server that started but offers no tools at all, saying why (no tools capability,
    or an empty ``tools/list``: otherwise the server would be missing from the table without a word)."""
    notes = []
    for server in toolbox.servers:
        session = toolbox.session(server)
        if session is not None and not session.offers_tools:
            notes.append(
                f"MCP server '{server}' started with 0 tools: its initialize answer declares no tools "
                "capability (a server of prompts or resources only)"
            )
        elif session is not None and not session.tools and not session.left_out:
            notes.append(f"MCP server '{server}' started with 0 tools: its tools/list answer lists none")
    return notes


def cmd_tools(
    config_path: Path | None,
    pyproject: Path | None,
    as_json: bool,
    *,
    lint: bool = False,
    servers: Sequence[str] = (),
) -> int:
    """Start the configured servers, print the tools of those that started, shut them down.

    A server that does not start is one line on stderr (its startup error); the others are listed.
    When none started, stderr says so in one more line and standard output has no table (``--json``:
    ``[]``).

    Args:
        config_path: ``mcp_config.json`` (default: the configured ``config_file``).
        pyproject: settings file (default: ``./pyproject.toml``).
        as_json: print a JSON list of objects with ``name`` (canonical), ``wire_name``, ``server``,
            ``description`` and ``parameters`` instead of a table (with ``lint``: the lint report).
        lint: print, per tool, what schema translation changed and what it left out, and why.
        servers: start and list only these servers of ``mcp_config.json`` (another server's
            command missing from ``PATH`` is then no error); a name it lacks, or a disabled server,
            is a configuration error. None: every enabled server.

    Returns:
        The exit code (0, 1 when a server did not start (the others are listed all the same) or
        stdout cannot be written, 2 for a configuration error, 130 interrupted, 141 when the reader of
        stdout went away).
    """
    return _command(lambda: _tools(config_path, pyproject, as_json, lint=lint, servers=servers))


def _named(names: Sequence[str], config: McpConfig) -> list[ServerConfig]:
    """The configured servers of ``names`` (``zorkmcp tools SERVER...``), in configuration order."""
    return [server for server in config.servers if server.name in names]


def _server_problem(server: str, config: McpConfig) -> str | None:
    """Why ``zorkmcp tools SERVER`` cannot list ``server`` (not configured, disabled), or ``None``."""
    where = "mcp_config.json" if config.source is None else str(config.source)
    named = _named([server], config)
    if not named:
        servers = ", ".join(s.name for s in config.servers)
        return (
            f"SERVER '{server}': {where} has no MCP server of that name (its servers: {servers}); "
            "name one of them, or none to list them all"
        )
    if named[0].disabled:
        return f"SERVER '{server}' is disabled in {where} (\"disabled\": true); remove that to start it"
    return None


def _tools(
    config_path: Path | None, pyproject: Path | None, as_json: bool, *, lint: bool, servers: Sequence[str]
) -> int:
    from ._bridge import run_trio
    from ._cli_lint import lint_report, render_lint_report

    def tools(settings: Settings, config: McpConfig) -> int:
        for name in servers:
            if (problem := _server_problem(name, config)) is not None:
                _error(f"configuration error: {problem}")
                return EXIT_CONFIG
        started_servers = _named(servers, config) if servers else config.enabled_servers

        async def main() -> tuple[list[ToolInfo], list[LintTool], list[str], list[str], bool]:
            sampler = _sampler(settings, _Warnings())
            async with _open_servers(started_servers, settings.mcp, sampler) as (toolbox, failed):
                failures = [str(exc) for exc in failed.values()]
                notes = _without_tools(toolbox)
                started = bool(toolbox.servers)
                return list(toolbox.tools), _listed(toolbox), failures, notes, started

        infos, listed, failures, notes, started = run_trio(main)
        for failure in failures:
            _error(failure)
        for note in notes:
            _error(f"note: {note}")
        if not started:  # an empty table (or "0 tool(s)") would read as servers without tools
            if as_json:
                print_line("[]")
            _error(_none_started(started_servers))
            return EXIT_FAILED
        if (warning := _too_many_tools(infos, config)) is not None:
            _error(f"warning: {warning}")
        if lint:
            report = lint_report(listed)
            if as_json:
                print_line(_json_text(report, indent=2))
            else:
                print_line("\n".join(render_lint_report(report)))
        elif as_json:
            print_line(_json_text([_tool_json(info) for info in infos], indent=2))
        else:
            _print_table(infos)
        return EXIT_FAILED if failures else EXIT_OK

    starts = (lambda config: _named(servers, config)) if servers else None
    return _run(tools, config_path, pyproject, starts=starts)


def _none_started(servers: Sequence[ServerConfig]) -> str:
    """The line that ends ``zorkmcp tools`` when no server started (each one's reason is above it)."""
    if len(servers) == 1:
        return f"MCP server '{servers[0].name}' did not start: no tools to list"
    return f"none of the {len(servers)} MCP servers started: no tools to list"


def _too_many_tools(infos: Sequence[ToolInfo], config: McpConfig) -> str | None:
    """The warning when ``zorkmcp play`` would offer the model more tools than OpenAI's API takes.

    ``play`` offers the game's tools (``memory``, ``get_map``, ``inventory``) beside these servers'
    (a configuration with a server named like the game's is refused there, and counted as it is here).
    """
    from .episode import GAME_SERVER_NAME, GAME_TOOLS_FOR_AGENT
    from .mcp._manager import MAX_OPENAI_TOOLS, too_many_tools_advice, tools_per_server

    game = (
        0 if any(server.name == GAME_SERVER_NAME for server in config.servers) else len(GAME_TOOLS_FOR_AGENT)
    )
    if len(infos) + game <= MAX_OPENAI_TOOLS:
        return None
    counts = ", ".join(
        f"{server}: {count}" for server, count in tools_per_server(i.server for i in infos).items()
    )
    offered = f"these servers offer {len(infos)} tools ({counts})"
    if game:
        offered += f", and zorkmcp play adds the game's {game}: {len(infos) + game} in all"
    return f"{offered}; {too_many_tools_advice()}"


def cmd_call(
    name: str,
    json_args: str,
    config_path: Path | None,
    pyproject: Path | None,
    timeout: float | None,
) -> int:
    """Call one tool and print its ``ToolCallResult.to_dict()`` as JSON.

    Only the server ``name`` points at is started when no other configured server can own the
    name (see :func:`_owners`); otherwise every enabled server is, as ``zorkmcp play`` would. An
    unknown tool's error says why when it can: its server is disabled, the server's ``tools``
    allow-list leaves it out, or the name is ambiguous (then it lists the wire names to use).

    Args:
        name: canonical (``thinking.think``) or wire name (``thinking__think``).
        json_args: the arguments as a JSON object, or ``-``: read them from standard input.
        config_path: ``mcp_config.json`` (default: the configured ``config_file``).
        pyproject: settings file (default: ``./pyproject.toml``).
        timeout: seconds for the call (default: the tool's configured timeout).

    Returns:
        0 for a normal result, 1 for an error result, a timeout, a server that did not start or
        stdout that cannot be written, 2 for a configuration error or arguments that are not a JSON
        object, 130 interrupted, 141 when the reader of stdout went away.
    """
    return _command(lambda: _call(name, json_args, config_path, pyproject, timeout))


_EXAMPLE_ARGS = """'{"text": "hi"}'"""
"""A JSON-ARGS as a shell takes it whole, for the messages about one it did not."""


def _read_arguments(json_args: str) -> tuple[str, str]:
    """The JSON text of the arguments and how messages name it: ``-`` reads standard input to its end.

    Raises:
        ValueError: standard input is closed, or is not UTF-8 text (the message says so).
    """
    if json_args != "-":
        return json_args, "the arguments"
    stream = sys.stdin
    if stream is None:  # closed (<&-)
        raise ValueError(
            "JSON-ARGS is -, but standard input is closed: pass the arguments on it, or as JSON-ARGS"
        )
    if stream.isatty():
        _error("reading the arguments, a JSON object, from standard input (end them with Ctrl-D)")
    try:
        data = stream.buffer.read() if hasattr(stream, "buffer") else stream.read().encode()
        return data.decode("utf-8-sig"), "the arguments read from standard input"
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"the arguments read from standard input are not UTF-8 text ({exc.reason})"
        ) from None
    except OSError as exc:
        raise ValueError(
            f"JSON-ARGS is -, but standard input cannot be read ({exc.strerror or exc})"
        ) from None


def _arguments(json_args: str) -> dict[str, Any]:
    """The ``call`` arguments as a JSON object.

    Raises:
        ValueError: the one line to show (not JSON, not an object, ``-`` and standard input unreadable).
    """
    text, named = _read_arguments(json_args)
    if not text.strip():
        raise ValueError(
            f"{named} are empty: pass one JSON object, such as {_EXAMPLE_ARGS}, or no JSON-ARGS for {{}}"
        )
    try:
        arguments = _parse_arguments(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"{named} are not valid JSON: {exc}; pass one JSON object, such as {_EXAMPLE_ARGS} (JSON "
            "strings and keys take double quotes), or - to read it from standard input"
        ) from None
    except ValueError as exc:
        raise ValueError(f"{named} are not valid JSON: {exc}") from None
    if not isinstance(arguments, dict):
        shown = text.strip() if len(text.strip()) <= 80 else text.strip()[:77] + "..."
        raise ValueError(f"{named} must be a JSON object, got {shown!r}")
    return arguments


def _call(
    name: str, json_args: str, config_path: Path | None, pyproject: Path | None, timeout: float | None
) -> int:
    try:
        arguments = _arguments(json_args)
    except ValueError as exc:
        _error(f"configuration error: {exc}")
        return EXIT_CONFIG

    from ._bridge import run_trio
    from .mcp import open_toolbox

    def call(settings: Settings, config: McpConfig) -> int:
        owners = _owners(name, config.servers)
        if len(owners) == 1 and owners[0].disabled:
            result = _unknown(name, f"MCP server '{owners[0].name}' is disabled in mcp_config.json")
        else:
            servers = _to_start(name, config)

            def lint(server: str) -> str:
                return _tools_command(config_path, pyproject, server)

            async def call_in(toolbox: Toolbox, events: _CallWarnings) -> ToolCallResult:
                events.release(toolbox, name)
                if toolbox.resolve(name) is None and (why := _why_unknown(name, toolbox, config, lint)):
                    return why
                return await toolbox.call_tool(name, arguments, timeout=timeout)

            async def main() -> ToolCallResult:
                # the warnings `tools` shows, about this tool only (a tool left out for its schema
                # would be just "Unknown tool"); those about other tools are counted
                only = servers[0].name if owners and len(servers) == 1 else None
                events = _CallWarnings(_tools_command(config_path, pyproject, only))
                sampler = _sampler(settings, events)
                try:
                    if owners:
                        async with open_toolbox(
                            servers, settings.mcp, events=events, sampler=sampler
                        ) as toolbox:
                            return await call_in(toolbox, events)
                    # No server can have the name (a typo): the servers start only to list their tools,
                    # and one that does not start is a line on stderr, as in `tools`, not the failure.
                    async with _open_servers(servers, settings.mcp, sampler, events) as (toolbox, failed):
                        for failure in failed.values():
                            _error(str(failure))
                        return await call_in(toolbox, events)
                finally:
                    events.release()  # a start that failed: what the servers said before it

            result = run_trio(main)
        print_line(_json_text(result.to_dict()))
        return EXIT_FAILED if result.is_error else EXIT_OK

    return _run(call, config_path, pyproject, starts=lambda config: _to_start(name, config))


def _tools_command(config_path: Path | None, pyproject: Path | None, server: str | None = None) -> str:
    """The ``zorkmcp tools --lint`` command that lists the same servers' warnings, as a shell takes it
    (``server``: that server's only)."""
    import shlex

    words = ["zorkmcp", "tools", "--lint"]
    if config_path is not None:
        words += ["--config", str(config_path)]
    if pyproject is not None:
        words += ["--pyproject", str(pyproject)]
    if server is not None:
        words += ["--", server] if server.startswith("-") else [server]
    return shlex.join(words)


def _to_start(name: str, config: McpConfig) -> list[ServerConfig]:
    """The servers ``call`` starts for ``name``: its one owner, else every enabled server."""
    owners = _owners(name, config.servers)
    return owners if len(owners) == 1 and not owners[0].disabled else list(config.enabled_servers)


def _owners(name: str, servers: Sequence[ServerConfig]) -> list[ServerConfig]:
    """The configured servers (disabled ones too) whose tools can have ``name``, canonical or wire.

    Canonical names are ``server.tool``; wire names start with the server's part of
    :func:`~zorkmcp.mcp._names.base_wire_name`, or with its first characters when the name is cut
    and hashed (:mod:`zorkmcp.mcp._names`). Two servers whose tools collide on a name both own it.
    """
    from .mcp._names import MAX_WIRE_NAME_LENGTH, base_wire_name

    kept = MAX_WIRE_NAME_LENGTH - 9  # a hashed wire name: that much of the base, "_", 8 hex digits
    owners = []
    for server in servers:
        prefix = base_wire_name(server.name, "")  # "server__", made wire-safe
        if (
            name.startswith(f"{server.name}.")
            or name.startswith(prefix)
            or (len(prefix) > kept and name[:kept] == prefix[:kept])
        ):
            owners.append(server)
    return owners


def _unknown(name: str, reason: str) -> ToolCallResult:
    from .mcp import ToolCallResult

    return ToolCallResult(content=None, is_error=True, error_message=f"Unknown tool '{name}': {reason}")


def _why_unknown(
    name: str, toolbox: Toolbox, config: McpConfig, lint: Callable[[str], str]
) -> ToolCallResult | None:
    """The error for a ``name`` the toolbox does not resolve, when it can tell why (else ``None``).

    Why: two tools share the canonical name (the error lists their wire names), a wire name without
    the hash it was given (two tools share it, or it is too long), a server's ``tools`` allow-list
    leaves the tool out, the server lists the tool but the engine leaves it out (its input schema
    cannot be offered, it runs only as a task, its ``tools/list`` entry is not valid MCP: the
    reason ``--lint`` gives, and ``lint(server)``, the command that explains), its server offers no
    tools at all (prompts or resources only), a name shaped ``SERVER.TOOL`` or ``SERVER__TOOL`` names
    no configured server (a typo), a disabled server may have it, or it is a tool's own name without
    its server (``think`` for ``thinking.think``).
    """
    from .mcp._names import base_wire_name, canonical_name

    available = ", ".join(info.name for info in toolbox.tools) or "none"
    same = [info for info in toolbox.tools if info.name == name]
    if len(same) > 1:
        wire = ", ".join(f"{info.wire_name} (server '{info.server}')" for info in same)
        return _unknown(name, f"the name is ambiguous; call one of them by its wire name: {wire}")
    if hashed := [info for info in toolbox.tools if base_wire_name(info.server, info.tool) == name]:
        wire = ", ".join(f"{info.wire_name} (server '{info.server}')" for info in hashed)
        return _unknown(
            name,
            "a wire name that two tools share, or longer than 64 characters, ends in a hash; call "
            f"{'the tool' if len(hashed) == 1 else 'one of them'} by its wire name: {wire}",
        )
    for server in toolbox.servers:
        session = toolbox.session(server)
        if session is None or session.config.tools is None:
            continue
        for tool in session.tools:
            if name in (canonical_name(server, tool.name), base_wire_name(server, tool.name)):
                if tool.name not in session.config.tools:
                    return _unknown(
                        name,
                        f"MCP server '{server}' has the tool, but its 'tools' allow-list in mcp_config.json "
                        f"leaves it out. Available tools: {available}",
                    )
    if (left_out := _left_out(name, toolbox)) is not None:
        server, reason = left_out
        return _unknown(
            name,
            f"MCP server '{server}' lists it, but zorkmcp leaves it out: {reason} ({lint(server)} explains)",
        )
    owners = _owners(name, config.servers)
    owner = toolbox.session(owners[0].name) if len(owners) == 1 else None
    if owner is not None and owner.config.tools is not None:
        wanted = name.removeprefix(f"{owner.name}.")
        if wanted != name and wanted in owner.config.tools and wanted not in {t.name for t in owner.tools}:
            return _unknown(
                name,
                f"MCP server '{owner.name}' has no tool of that name (its 'tools' allow-list in "
                f"mcp_config.json names it). Available tools: {available}",
            )
    if owner is not None and not owner.offers_tools:
        return _unknown(
            name,
            f"MCP server '{owner.name}' offers no tools: its initialize answer declares no tools "
            f"capability (a server of prompts or resources only). Available tools: {available}",
        )
    if not owners and (separator := re.search(r"\.|__", name)) is not None and separator.start() > 0:
        servers = ", ".join(server.name for server in config.servers)
        return _unknown(
            name,
            f"no MCP server in mcp_config.json is named '{name[: separator.start()]}' (its servers: "
            f"{servers}). Available tools: {available}",
        )
    disabled = [s.name for s in owners if s.disabled]
    if disabled:
        servers = ", ".join(f"'{server}'" for server in disabled)
        plural = "s" if len(disabled) > 1 else ""
        return _unknown(
            name,
            f"it may be a tool of MCP server{plural} {servers}, disabled in mcp_config.json. "
            f"Available tools: {available}",
        )
    if bare := [info.name for info in toolbox.tools if info.tool == name]:
        return _unknown(name, f"a tool is called by SERVER.TOOL; did you mean {' or '.join(bare)}?")
    return None


def _left_out(name: str, toolbox: Toolbox) -> tuple[str, str] | None:
    """``(server, why)`` when ``name`` is the canonical or (unhashed) wire name of a tool a server
    lists and the engine leaves out, why as ``zorkmcp tools --lint`` says it; else ``None``."""
    from ._cli_lint import lint_report
    from .mcp._names import base_wire_name

    listed = _listed(toolbox)
    for tool, entry in zip(listed, lint_report(listed), strict=True):
        if entry["excluded"] is None or tool.server is None:
            continue
        own = tool.name.removeprefix(f"{tool.server}.")
        if name in (tool.name, base_wire_name(tool.server, own)):
            return tool.server, str(entry["excluded"])
    return None


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


def _parse_arguments(json_args: str) -> object:
    """The ``call`` arguments: strict JSON.

    Raises:
        ValueError: not JSON (the message says why): a syntax error, ``NaN`` or ``Infinity`` (which
            Python's reader accepts, and the server would get as ``null``), a float out of range,
            an integer longer than Python converts, nesting deeper than Python reads, or a key
            given twice in one object.
    """
    from .config._convert import no_duplicate_keys

    try:
        return json.loads(
            json_args,
            parse_constant=_json_constant,
            parse_float=_json_float,
            parse_int=_json_int,
            # a key given twice: RFC 8259 leaves it to the reader (Python keeps the last, a server's
            # reader may keep the first), so mcp_config.json's rule, one key once, holds here too
            object_pairs_hook=no_duplicate_keys,
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
        type=file_path_object,
        default=None,
        help="mcp_config.json to use (default: [tool.zorkgpt.mcp] config_file; with no "
        "[tool.zorkgpt] in the settings file, zorkmcp play's embedded think server)",
    )
    parser.add_argument(
        "--pyproject",
        metavar="PATH",
        type=file_path_object,
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
        description="Start every enabled server of mcp_config.json (or only those named), print each tool "
        "(canonical name, wire name the LLM sees, server, description) and shut the servers down. The "
        "warnings zorkmcp "
        "play gives for these servers (e.g. a 'tools' allow-list naming a tool the server lacks, a tool "
        "left out, a description cut for the model, more tools than OpenAI's API takes) go to stderr. "
        "Exit 0, or 1 when a server did not start (reported on stderr; the tools of the others are "
        "listed all the same) or the output cannot be written, 2 for a configuration error (a SERVER "
        "not in mcp_config.json, or disabled there, too), 130 "
        "interrupted (Ctrl-C), 141 when the reader of the output went away (| head).",
    )
    tools.add_argument(
        "servers",
        metavar="SERVER",
        nargs="*",
        help="start and list only this server of mcp_config.json, or these (as call SERVER.TOOL starts "
        "only its own; default: every enabled server)",
    )
    _common(tools)
    tools.add_argument(
        "--json",
        action="store_true",
        dest="as_json",
        help="print a JSON list of {name, wire_name, server, description, parameters} (descriptions whole)",
    )
    tools.add_argument(
        "--lint",
        action="store_true",
        help="per tool, what the engine changes before the LLM sees it (its input schema, a description "
        "longer than OpenAI's API takes) and which tools it leaves out, and why (with --json: a list of "
        "{tool, status, changes, excluded, parameters, server, wire_name})",
    )
    tools.set_defaults(
        run=lambda args: cmd_tools(
            args.config, args.pyproject, args.as_json, lint=args.lint, servers=args.servers
        )
    )

    call = subparsers.add_parser(
        "call",
        help="call one MCP tool and print the result as JSON",
        description="Start the server the tool name points at (every enabled server when the name could "
        "belong to more than one, or to none), call the tool and print ToolCallResult.to_dict() as JSON. "
        "Exit 0 for a normal result, 1 for an error result (an unknown tool too), a timeout, a server "
        "that did not start or an output that cannot be written, 2 for a configuration error or "
        "JSON-ARGS that is not a JSON object, 130 interrupted (Ctrl-C), 141 when the reader of the "
        "output went away (| head).",
    )
    call.add_argument(
        "name", metavar="NAME", help="tool name, canonical (thinking.think) or wire (thinking__think)"
    )
    call.add_argument(
        "json_args",
        metavar="JSON-ARGS",
        nargs="?",
        default="{}",
        help='the arguments, one JSON object quoted for the shell, e.g. \'{"text": "hi"}\' '
        "(default: {}); - reads it from standard input",
    )
    # A JSON object the shell split into words (not quoted): said in words, not as argparse's
    # "unrecognized arguments" under the usage of the whole program.
    # default=[]: not "required", so a call without NAME names only NAME as missing
    call.add_argument("split_args", nargs="*", default=[], help=argparse.SUPPRESS)
    _common(call)
    call.add_argument(
        "--timeout",
        metavar="S",
        type=_positive_seconds,
        default=None,
        help="seconds before the call is abandoned, > 0 (default: the tool's configured timeout)",
    )
    call.set_defaults(run=_run_call)


def _run_call(args: argparse.Namespace) -> int:
    if args.split_args:
        words = [args.json_args, *args.split_args]
        _error(
            f"configuration error: JSON-ARGS is one argument, got {len(words)} ({' '.join(words)}): quote "
            f"the JSON object for the shell, e.g. {_EXAMPLE_ARGS}"
        )
        return EXIT_CONFIG
    return cmd_call(args.name, args.json_args, args.config, args.pyproject, args.timeout)
