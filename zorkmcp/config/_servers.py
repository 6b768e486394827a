"""The ``mcp_config.json`` format: Claude Desktop's ``mcpServers``, ``${VAR}`` expansion, zorkmcp's keys.

Read synchronously, before any event loop starts. Remote servers take the forms users paste from
Claude Code, VS Code and Cursor: ``"type": "http"`` (or ``"streamable-http"`` / ``"streamableHttp"``)
or ``"sse"`` with a ``"url"`` (Windsurf's ``"serverUrl"``), and a bare ``"url"`` (Streamable HTTP, or
SSE when the path ends in ``/sse``); ``"headers"`` are expanded like ``env``, and their values never
appear in a repr.

A VS Code ``.vscode/mcp.json`` or a Cursor ``.cursor/mcp.json`` works as it is: ``inputs``,
``envFile`` (read by ``python-dotenv``), ``${env:VAR}``, ``${input:ID}`` (read from an environment
variable, as nothing here can ask for it), and the predefined ``${workspaceFolder}``,
``${workspaceFolderBasename}``, ``${userHome}``, ``${cwd}``, ``${pathSeparator}`` and ``${/}``; VS
Code's ``dev``, ``gallery`` and ``version`` keys are accepted and not used. Its comments and trailing
commas are not JSON (Requirement 2.3): the error names them. A ``${...}`` that none of these is (a
shell's ``${VAR-default}``, VS Code's ``${config:...}``) is an error, not text passed on to the server;
``$${`` is a literal ``${`` (docker-compose's escape), for a server that needs ``${x}`` as it is.

A server's ``timeout`` is seconds, under 1000 (:data:`FILE_TIMEOUT_LIMIT`: Gemini CLI writes
milliseconds). Gemini CLI's other keys: ``httpUrl`` (a Streamable HTTP ``url``), ``includeTools``
(``tools``), ``trust`` and ``description`` (accepted, not used); its ``excludeTools`` is refused, as
zorkmcp has no list of tools to leave out and would offer them.

An application's own settings file is read as it is: beside ``mcpServers`` (or ``servers``), its
other keys (Claude Desktop's ``preferences``, Gemini CLI's ``theme``) are its application's, and left
alone; a slip for one of ours (``input``, ``mcpServer``) is still named. Gemini CLI's ``mcp.allowed``
/ ``mcp.excluded`` (which servers start) and Zed's ``context_servers`` are refused with what to write,
and so, on Linux and macOS, is a command written for Windows (``cmd /c npx``, ``npx.cmd``, ``C:\\``).
"""

from __future__ import annotations

import difflib
import io
import json
import math
import os
import re
import shutil
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Final, Literal
from urllib.parse import unquote, urlsplit

import attrs
from attrs import field, frozen
from attrs.validators import optional

from .._urls import split_url, url_problem
from ..errors import ConfigError
from ._checks import check_host
from ._convert import (
    DuplicateKeyError,
    Problem,
    boolean,
    in_range,
    json_path,
    no_duplicate_keys,
    one_of,
    optional_string,
    show,
    source_path,
    string_mapping,
    structure,
    summarize,
)
from ._settings import MAX_SECONDS, not_utf8

__all__ = [
    "REMOTE_TYPES",
    "McpConfig",
    "RemoteKind",
    "ServerConfig",
    "input_variable",
    "remote_kind",
    "root_uri",
]

_timeout = optional(in_range(0, MAX_SECONDS, what="one week"))

FILE_TIMEOUT_LIMIT: Final = 1000
"""A server's ``timeout`` in a file must be less than this many seconds. Clients disagree on its unit:
Cline and Roo Code write seconds (at most 3600), Gemini CLI's ``settings.json`` milliseconds (its
default is 600000, ten minutes), and Claude Desktop, Claude Code, VS Code and Cursor have no such key.
A value this large is almost surely milliseconds: read as seconds, ``600000`` would let a hung tool
hold the turn for a week, so it is refused, with the value in seconds to write instead. (Built in
Python, :class:`ServerConfig` takes seconds up to one week: no file was copied there.)"""


def _seconds_text(value: float) -> str:
    """``600`` for 600.0, ``1.5`` for 1.5: a number of seconds as a user writes it."""
    return f"{value:.15g}"


def _file_timeout(inst: object, attribute: attrs.Attribute[Any], value: float | None) -> None:
    """attrs validator of ``timeout`` in a file: seconds, > 0 and < :data:`FILE_TIMEOUT_LIMIT`."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if not number or value is None or not math.isfinite(value) or value < FILE_TIMEOUT_LIMIT:
        _timeout(inst, attribute, value)
        return
    seconds = _seconds_text(value / 1000)
    longer = "leave timeout out and raise tool_call_timeout_seconds in pyproject.toml"
    if value / 1000 < FILE_TIMEOUT_LIMIT:
        fix = f"write {seconds} (for calls of {FILE_TIMEOUT_LIMIT} s or more, {longer})"
    else:
        fix = f"{longer}, the only way to calls of {FILE_TIMEOUT_LIMIT} s or more"
    raise Problem(
        f"is {value!r}: zorkmcp reads it as seconds per tool call (as Cline does) and takes less than "
        f"{FILE_TIMEOUT_LIMIT}; as Gemini CLI's milliseconds it is {seconds} s: {fix}",
        key=attribute.name,
    )


ServerType = Literal["stdio", "inprocess", "http", "sse"]
RemoteKind = Literal["http", "sse"]
REMOTE_TYPES: Final[Mapping[str, RemoteKind]] = {
    "http": "http",
    "streamable-http": "http",
    "streamableHttp": "http",
    "streamable_http": "http",
    "sse": "sse",
}
"""The ``"type"`` values users paste for remote servers (Claude Code, VS Code, Cursor), by transport."""


def remote_kind(url: str, type_: str | None = None) -> RemoteKind:
    """The transport of a remote server entry: its ``type``, else guessed from the URL (as Cursor does).

    Raises:
        ValueError: ``type_`` is not a remote type.
    """
    if type_ is not None:
        if type_ not in REMOTE_TYPES:
            raise ValueError(f"remote server type must be one of {sorted(REMOTE_TYPES)}, got {type_!r}")
        return REMOTE_TYPES[type_]
    return "sse" if split_url(url)[2].rstrip("/").endswith("/sse") else "http"


def _strings(value: Iterable[str], key: str) -> tuple[str, ...]:
    """A list of strings as a tuple; a single string is refused (it would be split into characters)."""
    if isinstance(value, str):
        example = f"{key}={tuple(value.split())!r}"
        if len(example) > 80:
            example = f"{key}=shlex.split(line)" if key == "args" else f"{key}=('name', ...)"
        raise Problem(
            f"must be a list of strings, got the single string {show(value)}: "
            f"give one string per item, e.g. {example}",
            key=key,
        )
    if isinstance(value, bytes | Mapping) or not isinstance(value, Iterable):
        raise Problem(f"must be a list of strings, got {show(value)}", key=key)
    items = tuple(value)
    for index, item in enumerate(items):
        if not isinstance(item, str):
            raise Problem(f"must be a string, got {show(item)}", key=f"{key}[{index}]")
    return items


def _args(value: Iterable[str]) -> tuple[str, ...]:
    """attrs converter of ``ServerConfig.args``."""
    return _strings(value, "args")


def _tools(value: Iterable[str] | None) -> tuple[str, ...] | None:
    """attrs converter of ``ServerConfig.tools``."""
    return None if value is None else _strings(value, "tools")


_URI_SCHEME: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
"""How a ``roots`` entry that is a URI starts (``file://``, ``https://``); anything else is a path."""


def _root_problem(value: str) -> str | None:
    """What is wrong with one ``roots`` entry (``None``: nothing): an empty string, or a URI that is
    not the ``file://`` URI of an absolute path."""
    if not value.strip():
        return "must not be empty: give a directory path or a file:// URI"
    if _URI_SCHEME.match(value) is None:
        return None
    parts = urlsplit(value)
    if parts.scheme.lower() != "file":
        return f"must be a directory path or a file:// URI, got {show(value)}"
    if parts.netloc not in ("", "localhost") or not parts.path.startswith("/"):
        return f"must be the file:// URI of an absolute path (file:///home/me/notes), got {show(value)}"
    return None


def root_uri(value: str, base: str | os.PathLike[str] | None = None) -> str:
    """One ``roots`` entry as the ``file://`` URI a client answers ``roots/list`` with.

    A path has ``~`` expanded and is made absolute: relative to ``base`` (the config file's folder)
    when given, else to the working folder. A ``file://`` URI is kept, its percent-encoding made
    canonical (``file:///a%20b`` and ``file:///a b`` are one root). The entry must be valid (see
    :class:`ServerConfig`): this does not check it.
    """
    if _URI_SCHEME.match(value) is not None:
        return Path(unquote(urlsplit(value).path)).as_uri()
    path = Path(value).expanduser()
    if base is not None:
        path = Path(base) / path  # an absolute path stays as it is
    return Path(os.path.abspath(path)).as_uri()


def _roots(value: Iterable[str] | None) -> tuple[str, ...] | None:
    """attrs converter of ``ServerConfig.roots``: ``file://`` URIs (a relative path: from the working
    folder)."""
    if value is None:
        return None
    items = _strings(value, "roots")
    for index, item in enumerate(items):
        if (problem := _root_problem(item)) is not None:
            raise Problem(problem, key=f"roots[{index}]")
    return tuple(root_uri(item) for item in items)


def _command(inst: ServerConfig, attribute: attrs.Attribute[Any], value: str | None) -> None:
    """attrs validator: a stdio server's command is not empty (``None``: see :func:`_complete`)."""
    optional_string(inst, attribute, value)
    if value is not None and not value.strip() and inst.type == "stdio":
        raise Problem(
            'must not be empty for a stdio server: give the program that starts it (e.g. "npx", '
            "or sys.executable for a Python server)",
            key=attribute.name,
        )


def _complete(server: ServerConfig) -> None:
    """What its ``type`` needs is there: a stdio server's ``command``, an inprocess server's ``module``
    (or ``factory``), a remote server's ``url`` (one the HTTP client can use, once ``${VAR}`` is
    expanded). Checked after the attributes' own rules, so a bad value is named first."""
    if server.type == "stdio" and server.command is None:
        raise Problem(
            'is required for a stdio server: give the program that starts it (e.g. "npx", or '
            "sys.executable for a Python server)",
            key="command",
        )
    if server.type == "inprocess" and server.module is None and server.factory is None:
        raise Problem(
            'is required for an inprocess server: give "package.module:factory", or pass factory= (a '
            "callable that returns the server)",
            key="module",
        )
    if server.remote:
        if server.url is None:
            raise Problem(
                f'is required for a remote ({server.type}) server: give its endpoint (e.g. "https://example.com/mcp")',
                key="url",
            )
        if "${" not in server.url:  # a disabled server's unset variable stays as written
            problem = url_problem(server.url, example="https://example.com/mcp")
            if problem is not None:
                raise Problem(problem, key="url")


def _name(inst: object, attribute: attrs.Attribute[Any], value: str) -> None:
    """attrs validator: a server name is a non-empty ``str`` (tools are called ``name.tool``)."""
    if not isinstance(value, str):
        raise Problem(f"must be a string, got {show(value)}", key=attribute.name)
    if not value:
        raise Problem("must not be empty: it names the server in tool names and messages", key=attribute.name)


def _factory(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """attrs validator: ``None`` or a callable."""
    if value is not None and not callable(value):
        raise Problem(
            f"must be a callable that returns the MCP server, got {show(value)}", key=attribute.name
        )


@frozen(kw_only=True)
class ServerConfig:
    """One entry of ``mcpServers`` (or ``servers``) in ``mcp_config.json``.

    Built in Python, it checks what it is given: ``args``, ``tools`` and ``roots`` take lists of
    strings (kept as tuples; one string alone is refused), a stdio ``command`` must be given and not
    empty, an ``inprocess`` server needs ``module`` or ``factory``, a remote one a ``url`` the HTTP
    client can use, booleans are bools. A broken rule raises :class:`~zorkmcp.errors.ConfigError`
    naming the attribute.
    """

    name: str = field(validator=_name)
    type: ServerType = field(default="stdio", validator=one_of("stdio", "inprocess", "http", "sse"))
    command: str | None = field(default=None, validator=_command)
    args: tuple[str, ...] = field(default=(), converter=_args)
    env: Mapping[str, str] = field(factory=dict, validator=string_mapping)
    cwd: str | None = field(default=None, validator=optional_string)
    module: str | None = field(default=None, validator=optional_string)
    """``package.module:factory`` for ``type = "inprocess"``."""
    factory: Callable[[], object] | None = field(default=None, eq=False, repr=False, validator=_factory)
    """For programs that build their configuration in code (never read from a file): the
    ``inprocess`` server's factory itself, called instead of importing :attr:`module`'s (which
    still names the server in messages). Called in a worker thread."""
    disabled: bool = field(default=False, validator=boolean)
    lifecycle: Literal["per_turn", "per_episode"] = field(
        default="per_turn", validator=one_of("per_turn", "per_episode")
    )
    timeout: float | None = field(default=None, validator=_timeout)
    """Seconds per tool call; overrides ``tool_call_timeout_seconds``."""
    tools: tuple[str, ...] | None = field(default=None, converter=_tools)
    """Allow-list of tool names; ``None`` offers every tool."""
    roots: tuple[str, ...] | None = field(default=None, converter=_roots)
    """The folders the server is told it may work in (MCP's ``roots``), as ``file://`` URIs; given as
    paths (``~`` expanded; a relative one is relative to the working folder here, to the config file's
    folder in a file) or ``file://`` URIs. ``None``: the client does not declare the ``roots``
    capability; ``()``: it declares it and lists none."""
    sampling: bool = field(default=False, validator=boolean)
    """Whether the client declares the ``sampling`` capability to this server and answers its
    ``sampling/createMessage`` requests with the episode's model (when the MCP layer was given one,
    see :class:`~zorkmcp.mcp.McpManager`)."""
    url: str | None = field(default=None, validator=optional_string)
    """The endpoint of a remote (``http`` / ``sse``) server."""
    headers: Mapping[str, str] = field(factory=dict, repr=False, validator=string_mapping)
    """HTTP headers of a remote server (expanded; never shown: they often hold a token)."""

    def __attrs_post_init__(self) -> None:
        _complete(self)

    @property
    def remote(self) -> bool:
        """Whether the server is reached over HTTP (Streamable HTTP or SSE)."""
        return self.type in ("http", "sse")


def _servers(value: Iterable[ServerConfig]) -> tuple[ServerConfig, ...]:
    """attrs converter of ``McpConfig.servers``: a sequence of servers, as a tuple."""
    if isinstance(value, ServerConfig | str | bytes | Mapping) or not isinstance(value, Iterable):
        raise Problem(f"must be a list of ServerConfig, got {show(value)}", key="servers")
    return tuple(value)


def _distinct_servers(inst: object, attribute: attrs.Attribute[Any], value: tuple[ServerConfig, ...]) -> None:
    """attrs validator: every item is a ServerConfig, and no two share a name (servers are keyed by it)."""
    seen: set[str] = set()
    for index, server in enumerate(value):
        if not isinstance(server, ServerConfig):
            raise Problem(f"must be a ServerConfig, got {show(server)}", key=f"{attribute.name}[{index}]")
        if server.name in seen:
            raise Problem(
                f"has more than one server named {server.name!r}: give each server its own name",
                key=attribute.name,
            )
        seen.add(server.name)


@frozen(kw_only=True)
class McpConfig:
    """A whole ``mcp_config.json``: the servers in file order.

    Built in Python, ``servers`` must have distinct names (servers are started, called and closed by
    name); names that differ only in case, or that make the same wire name (``a.b`` and ``a_b``),
    are distinct servers, as in a file. ``source`` may be a ``str``; it is kept as a ``Path``.
    """

    servers: tuple[ServerConfig, ...] = field(converter=_servers, validator=_distinct_servers)
    source: Path | None = field(default=None, converter=source_path)

    @property
    def enabled_servers(self) -> tuple[ServerConfig, ...]:
        return tuple(s for s in self.servers if not s.disabled)

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        *,
        check_commands: bool = True,
        environ: Mapping[str, str] | None = None,
    ) -> McpConfig:
        """Read and validate an ``mcp_config.json``.

        See :meth:`from_dict` for the format.

        Args:
            path: the file (a ``str`` or a path).
            check_commands: check that every enabled stdio server's ``command`` is on
                ``PATH`` and its ``cwd`` exists.
            environ: the variables ``${VAR}`` is expanded from (default ``os.environ``).

        Raises:
            ConfigError: the file is missing (the seeds' two-option message), is not JSON
                (with line and column), or breaks a rule (with the JSON path).
        """
        path = Path(path)
        try:
            raw = path.read_bytes()
        except FileNotFoundError as exc:
            # seeds 001 §Error Messages ("Configuration file missing"): the two-option text.
            raise ConfigError(
                f"MCP is enabled but config file not found: {path}\n"
                f"Please either:\n"
                f"  1. Create {path.name} in {path.parent.absolute()} (examples/ has templates), or\n"
                f"  2. Set mcp.enabled = false in pyproject.toml"
            ) from exc
        except OSError as exc:
            raise ConfigError(f"cannot read MCP config {path}: {exc.strerror or exc}") from exc
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise ConfigError(f"MCP config {path} {not_utf8(raw, exc)}") from exc
        try:
            data = _parse(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"invalid JSON in {path} at line {exc.lineno}, column {exc.colno}: {exc.msg}"
                f"{_not_json_hint(path)}"
            ) from exc
        except DuplicateKeyError as exc:
            raise ConfigError(f"invalid MCP config {path}: {exc}") from exc
        except RecursionError as exc:
            raise ConfigError(f"invalid JSON in {path}: objects or arrays nested too deeply") from exc
        except ValueError as exc:  # an integer longer than Python converts (4300 digits)
            raise ConfigError(f"invalid JSON in {path}: {_too_long(exc)}") from exc
        return cls.from_dict(data, source=path, check_commands=check_commands, environ=environ)

    @classmethod
    def from_dict(
        cls,
        data: object,
        *,
        source: str | os.PathLike[str] | None = None,
        check_commands: bool = True,
        environ: Mapping[str, str] | None = None,
    ) -> McpConfig:
        """Validate the parsed contents of an ``mcp_config.json``.

        The format is Claude Desktop's ``{"mcpServers": {name: {command, args, env}}}``
        plus what Claude Code, Cline, Cursor, Windsurf and VS Code users paste: ``servers`` as
        an alias of ``mcpServers``, ``"type": "stdio"``, ``cwd``, ``disabled``, ``envFile``
        (a ``.env`` file of the server's variables; its ``env`` wins), VS Code's ``inputs``
        (and Gemini CLI's ``httpUrl``, a Streamable HTTP ``url``, and ``includeTools``, its name of
        ``tools``; Gemini CLI's ``trust`` and ``description``,
        Cline's ``autoApprove``/``alwaysAllow``, VS Code's ``dev``, ``gallery`` and
        ``version``, accepted and ignored). ``${VAR}``, ``${VAR:-default}``, ``${env:VAR}`` and
        ``${env:VAR:-default}`` are expanded in ``command``, ``args``, ``env`` values, ``cwd``,
        ``envFile``, ``roots``, ``url`` and ``headers`` (``:-`` also applies when the variable is empty);
        so are the editors' predefined variables (``${workspaceFolder}``: the config file's
        folder, or the folder above it for a file in ``.vscode`` or ``.cursor``) and VS Code's
        ``${input:ID}``, read from the environment variable :func:`input_variable` names (or
        the input's ``default``). An unset variable without a default is an error, and so is any
        other ``${...}`` (``${VAR-default}``, ``${config:...}``, an unclosed ``${``), except in
        disabled servers, which are left unexpanded; ``$${`` is a literal ``${`` (``"$${x}"`` passes
        ``${x}``), as in docker-compose.

        zorkmcp's own per-server keys: ``lifecycle`` (``"per_turn"``, the default, or
        ``"per_episode"``), ``timeout`` (seconds per tool call, > 0 and < 1000: a larger value is
        refused as the milliseconds of Gemini CLI's ``settings.json``), ``tools`` (allow-list
        of tool names), ``roots`` (folders the server may work in: paths, relative to the config
        file's folder, or ``file://`` URIs; the client then declares MCP's ``roots`` capability),
        ``sampling`` (``true``: the client declares ``sampling`` and answers with the episode's
        model) and ``"type": "inprocess"`` with ``"module": "package.module:factory"``
        (a Python MCP server object; the module is not imported here).

        The command ``python`` or ``python3`` means the interpreter running zorkmcp: it is
        replaced by ``sys.executable``, so a server started from a virtualenv sees the same
        installed packages. A relative ``cwd`` is relative to the config file's folder.

        Args:
            data: the parsed JSON.
            source: the file it came from (used in messages and to resolve ``cwd``; a ``str`` or a path).
            check_commands: check that every enabled stdio server's ``command`` is on
                ``PATH`` (the server's own ``env`` ``PATH`` if it sets one) and that its
                ``cwd`` is a directory.
            environ: the variables ``${VAR}`` is expanded from (default ``os.environ``).

        Returns:
            The servers in file order. ``ServerConfig.env`` is the server's own ``env``;
            merging it with the system environment is the MCP layer's job.

        Raises:
            ConfigError: a rule is broken; the message has the JSON path and the file.
        """
        source = None if source is None else Path(source)
        where = str(source) if source is not None else "MCP config"
        try:
            key, entries, inputs = _entries(data, where)
        except RecursionError as exc:
            raise ConfigError(f"the MCP config is nested too deeply ({where})") from exc
        base = source.parent if source is not None else None
        variables = _Variables(
            environ=os.environ if environ is None else environ,
            predefined=_predefined(source),
            inputs={declared.id: declared for declared in inputs},
        )
        problems: list[str] = []
        # seeds 002 Req 2.6 uses only the first server (V1); zorkmcp keeps them all, in file
        # order, and the MCP layer federates their tools (seeds 004).
        built = (
            _build_server(name, entry, json_path("$", key, name), base, variables, problems)
            for name, entry in entries.items()
        )
        servers = [server for server in built if server is not None]
        if not problems and all(s.disabled for s in servers):
            names = ", ".join(s.name for s in servers)
            raise ConfigError(
                f'every MCP server is disabled ({names}): set "disabled": false on one (to play without '
                f"MCP: --no-mcp, or enabled = false in [tool.zorkgpt.mcp]) ({where})"
            )
        if not problems and check_commands:
            for server in servers:
                if not server.disabled and server.type == "stdio":
                    server_path = json_path("$", key, server.name)
                    if (windows := _windows_form(server, server_path)) is not None:
                        problems.append(windows)
                    else:
                        check_host(server, server_path, problems)
                    problems.extend(_windows_arguments(server, server_path))
        if problems:
            raise ConfigError(summarize(problems, where))
        return cls(servers=tuple(servers), source=source)


# --- the wire format of mcp_config.json (JSON keys as attribute names: error paths show them) -----


@frozen(kw_only=True)
class _WireServer:
    type: (
        Literal["stdio", "inprocess", "http", "sse", "streamable-http", "streamableHttp", "streamable_http"]
        | None
    ) = None
    command: str | None = None
    args: list[str] | None = None
    env: dict[str, str] | None = None
    cwd: str | None = None
    module: str | None = None
    disabled: bool = False
    lifecycle: Literal["per_turn", "per_episode"] = "per_turn"
    timeout: float | None = field(default=None, validator=_file_timeout)
    tools: list[str] | None = None
    roots: list[str] | None = None
    sampling: bool = False
    url: str | None = None
    headers: dict[str, str] | None = None
    envFile: str | None = None  # VS Code's and Cursor's
    serverUrl: str | None = None  # Windsurf's name of url
    httpUrl: str | None = None  # Gemini CLI's: a Streamable HTTP url (its "url" is SSE's)
    includeTools: list[str] | None = None  # Gemini CLI's name of tools
    excludeTools: list[str] | None = None  # Gemini CLI's deny-list: refused (zorkmcp has none)
    trust: bool | None = None  # Gemini CLI's (no confirmation before a call); accepted, not used
    description: str | None = None  # Gemini CLI's; accepted, not used
    autoApprove: list[str] | None = None  # Cline's; accepted, not used
    alwaysAllow: list[str] | None = None  # Cline's; accepted, not used
    dev: Any = None  # VS Code's (watch and debug a server under development); accepted, not used
    gallery: Any = None  # VS Code's (where it installed the server from); accepted, not used
    version: Any = None  # VS Code's; accepted, not used


@frozen(kw_only=True)
class _WireInput:
    """One of VS Code's ``inputs``: a value it asks the user for, named by ``${input:ID}``."""

    id: str
    type: str | None = None
    description: str | None = None
    default: str | None = None
    password: bool = False
    options: list[Any] | None = None  # pickString
    command: str | None = None  # "type": "command"
    args: Any = None


@frozen(kw_only=True)
class _WireConfig:
    mcpServers: dict[str, _WireServer] | None = None
    servers: dict[str, _WireServer] | None = None
    inputs: list[_WireInput] | None = None  # VS Code's


# --- from the wire format to ServerConfig -------------------------------------------------------

_VAR: Final = re.compile(
    r"\$\{(?:env:(?P<env>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<env_default>[^}]*))?|input:(?P<input>[^}]+)"
    r"|(?P<name>/|[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>[^}]*))?)\}"
)
_REFERENCE: Final = re.compile(
    f"(?P<escaped>\\$\\$\\{{)|{_VAR.pattern}|\\$\\{{(?P<other>[^}}]*)(?P<closed>\\}}?)"
)
"""``$${`` (``escaped``: a literal ``${``, docker-compose's escape), a ``${...}`` :data:`_VAR` expands,
or (``other``) one it does not, which is then a problem: left as written, the server would get
``${config:python.path}`` as its value."""

_EDITOR_ONLY: Final = frozenset(
    {
        "file",
        "fileBasename",
        "fileBasenameNoExtension",
        "fileDirname",
        "fileDirnameBasename",
        "fileExtname",
        "fileWorkspaceFolder",
        "relativeFile",
        "relativeFileDirname",
        "lineNumber",
        "columnNumber",
        "selectedText",
        "execPath",
        "defaultBuildTask",
    }
)
"""VS Code's predefined variables about the editor (the file open in it...), which zorkmcp has none of."""
_URL_KEYS: Final = ("url", "serverUrl", "httpUrl")
_URL_KEYS_NAMED: Final = {
    "serverUrl": "Windsurf's name for it",
    "httpUrl": "Gemini CLI's name for a Streamable HTTP url",
}
_MODULE_SPEC: Final = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_PYTHON_COMMANDS: Final = frozenset({"python", "python3"})


def _parse(text: str) -> object:
    """The file's JSON.

    Requirement 2.3: invalid JSON is a configuration error. VS Code's ``mcp.json`` is JSONC, so a
    file pasted from it may hold comments and trailing commas; the error then says that is what it
    found, so the fix is plain (:func:`_jsonc_hint`).

    Raises:
        json.JSONDecodeError: not JSON; its message ends with the hint, if any.
        DuplicateKeyError: an object has a key twice.
    """
    try:
        return json.loads(text, object_pairs_hook=no_duplicate_keys)
    except json.JSONDecodeError as exc:
        hint = _jsonc_hint(text, exc.pos)
        if not hint:
            raise
        raise json.JSONDecodeError(f"{exc.msg} ({hint})", text, exc.pos) from None


_OTHER_FORMATS: Final[Mapping[str, str]] = {
    ".yaml": "YAML (Continue's config.yaml)",
    ".yml": "YAML (Continue's config.yaml)",
    ".toml": "TOML (Codex's config.toml)",
}


def _not_json_hint(path: Path) -> str:
    """A file whose name says it is not JSON at all: say so, and what an mcp_config.json holds."""
    kind = _OTHER_FORMATS.get(path.suffix.lower())
    if kind is None:
        return ""
    return f" (its name says {kind}; zorkmcp reads JSON: write the servers as {_SERVER_EXAMPLE})"


def _jsonc_hint(text: str, pos: int) -> str:
    """What JSONC allows and JSON does not, found where the JSON parser stopped (``""``: neither)."""
    if text.startswith(("//", "/*"), pos):
        return "a comment: JSON has none, though VS Code's mcp.json allows them; remove it"
    # Python 3.11 and 3.12 stop at the "}" or "]" after a trailing comma, 3.13 at the comma itself
    closes = text[pos : pos + 1] in ("}", "]") and text[:pos].rstrip().endswith(",")
    if closes or (text[pos : pos + 1] == "," and text[pos + 1 :].lstrip()[:1] in ("}", "]")):
        return "a comma before the end of an object or an array: JSON allows none; remove it"
    return ""


def _entries(data: object, where: str) -> tuple[str, dict[str, _WireServer], list[_WireInput]]:
    """The servers' key (``mcpServers`` or ``servers``), entries and VS Code's inputs, structured."""
    if (other := _other_format(data)) is not None:
        raise ConfigError(f"{other} ({where})")
    wire = structure(_own_keys(data), _WireConfig, where=where, style="json")
    if wire.mcpServers is not None and wire.servers is not None:
        raise ConfigError(f'use either "mcpServers" or "servers", not both ({where})')
    key = "servers" if wire.servers is not None else "mcpServers"
    entries = wire.servers if wire.servers is not None else wire.mcpServers
    if entries is None:
        raise ConfigError(
            f'no MCP servers configured: add an "mcpServers" object mapping a server name '
            f'to {{"command": ..., "args": [...]}} ({where})'
        )
    if not entries:
        raise ConfigError(f'no MCP servers configured: "{key}" is empty ({where})')
    return key, entries, list(wire.inputs or ())


_SERVER_EXAMPLE: Final = '{"mcpServers": {"<name>": {"command": "...", "args": ["..."]}}}'

_TOP_KEYS: Final = ("mcpServers", "servers", "inputs")
"""The top-level keys of an ``mcp_config.json``."""


def _folded(key: str) -> str:
    """A key as compared with :data:`_TOP_KEYS`: lowercase, without ``_`` and ``-``."""
    return key.lower().replace("_", "").replace("-", "")


def _own_keys(data: object) -> object:
    """``data`` without the keys of the application whose settings file it is.

    Claude Desktop keeps its ``preferences`` (and ``globalShortcut``) beside ``mcpServers`` in
    ``claude_desktop_config.json``, Gemini CLI its ``theme``, ``model``, ``tools``... in
    ``settings.json``, Claude Code its ``projects`` in ``~/.claude.json``: a file that holds
    ``mcpServers`` (or ``servers``) is read as it is, those keys left to their application. A key
    that looks like a slip for one of :data:`_TOP_KEYS` (``input``, ``mcpServer``, ``server``) is
    kept, so that the error names it; a file without servers is kept whole (the error names its keys).
    """
    if not isinstance(data, Mapping) or not any(key in data for key in _TOP_KEYS[:2]):
        return data
    own = {_folded(key) for key in _TOP_KEYS}

    def kept(key: object) -> bool:
        if not isinstance(key, str) or key in _TOP_KEYS:
            return True
        folded = _folded(key)
        return any(difflib.SequenceMatcher(None, folded, name).ratio() >= 0.7 for name in own)

    return {key: value for key, value in data.items() if kept(key)}


def _other_format(data: object) -> str | None:
    """What another tool's file holds where an ``mcp_config.json`` holds its servers (``None``: ours).

    Continue lists its servers (``mcpServers:`` in its ``config.yaml``, each with a ``name``; its old
    ``config.json`` under ``experimental.modelContextProtocolServers``, each with a ``transport``), and
    VS Code's user ``settings.json`` keeps them under ``"mcp"``. Without this the message would be
    ``$.mcpServers must be an object`` or ``unknown key 'mcp'``, which says what, not how.
    """
    if not isinstance(data, Mapping):
        return None
    for key in ("mcpServers", "servers"):
        listed = data.get(key)
        if isinstance(listed, list) and listed and all(isinstance(item, Mapping) for item in listed):
            return (
                f"$.{key} is a list of servers (Continue's form, each with a name); an mcp_config.json "
                f"maps each server's name to its settings: {_SERVER_EXAMPLE}"
            )
    if (gemini := _gemini_mcp(data.get("mcp"))) is not None:
        return gemini
    if "mcpServers" in data or "servers" in data:
        return None
    zed = data.get("context_servers")
    if isinstance(zed, Mapping):
        return (
            "$.context_servers holds the servers as Zed's settings.json does; an mcp_config.json has "
            'them under "mcpServers" (the same command, args and env; for Zed\'s older "command": '
            '{"path": ..., "args": [...]}, the path is the command): move them there, without Zed\'s '
            '"source" and "settings", and "enabled": false as "disabled": true'
        )
    vscode = data.get("mcp")
    if isinstance(vscode, Mapping) and "servers" in vscode:
        return (
            "$.mcp holds the servers as VS Code's settings.json does; an mcp_config.json has them at its "
            'top level: move the "servers" object there (or point config_file at a .vscode/mcp.json)'
        )
    continue_old = data.get("experimental")
    if isinstance(continue_old, Mapping) and "modelContextProtocolServers" in continue_old:
        return (
            "$.experimental.modelContextProtocolServers is Continue's list of servers; an mcp_config.json "
            f'maps each server\'s name to its settings (what its "transport" holds): {_SERVER_EXAMPLE}'
        )
    return None


_GEMINI_MCP: Final[Mapping[str, str]] = {
    "allowed": (
        "the only servers it starts, which zorkmcp does not read (it would start the others too): "
        'set "disabled": true on the others in mcpServers'
    ),
    "excluded": (
        'the servers it does not start, which zorkmcp does not read (it would start them): set "disabled": '
        "true on them in mcpServers"
    ),
    "serverCommand": (
        "the command of one more server, which zorkmcp does not read: give that server an entry in mcpServers"
    ),
}
"""Gemini CLI's ``mcp`` settings that choose which servers start: what they are, and what to write."""


def _gemini_mcp(value: object) -> str | None:
    """The line refusing Gemini CLI's ``mcp`` object when it chooses the servers (``None``: it does not).

    Left out like the file's other Gemini CLI settings, ``"mcp": {"excluded": ["github"]}`` would
    still start ``github``: a server the user turned off would run, with its credentials.
    """
    if not isinstance(value, Mapping):
        return None
    for key, meaning in _GEMINI_MCP.items():
        if value.get(key):
            return f"$.mcp.{key} is Gemini CLI's: {meaning}, and remove $.mcp.{key}"
    return None


def input_variable(input_id: str) -> str:
    """The environment variable ``${input:ID}`` is read from: ``api-key`` → ``API_KEY``.

    VS Code asks the user for an input when a server starts; zorkmcp runs unattended (an eval, a
    Ray worker), so the value comes from the environment, under a name the ID gives.
    """
    return re.sub(r"[^A-Za-z0-9]+", "_", input_id).strip("_").upper()


@frozen(kw_only=True)
class _Variables:
    """What ``${...}`` is expanded from."""

    environ: Mapping[str, str]
    predefined: Mapping[str, str]
    """The editors' predefined variables (``workspaceFolder``, ``userHome``, ``/``...)."""
    inputs: Mapping[str, _WireInput]
    """VS Code's inputs by ID."""


def _predefined(source: Path | None) -> dict[str, str]:
    """``${workspaceFolder}`` and the rest, as VS Code and Cursor define them for a file at ``source``."""
    try:
        cwd: str | None = os.getcwd()
    except OSError:  # the working folder was removed: ${cwd} (and a file-less ${workspaceFolder}) is unset
        cwd = None
    predefined = {"userHome": os.path.expanduser("~"), "pathSeparator": os.sep, "/": os.sep}
    if cwd is not None:
        predefined["cwd"] = cwd
    if source is not None or cwd is not None:
        folder = Path(os.path.abspath(source)).parent if source is not None else Path(str(cwd))
        workspace = folder.parent if folder.name in (".vscode", ".cursor") else folder
        predefined |= {
            "workspaceFolder": str(workspace),
            "workspaceRoot": str(workspace),  # VS Code's older name of it, which it still expands
            "workspaceFolderBasename": workspace.name,
        }
    return predefined


def _expand(text: str, path: str, variables: _Variables, problems: list[str] | None) -> str:
    """Expand ``${VAR}``, ``${VAR:-default}``, ``${env:VAR}``, ``${input:ID}`` and the predefined variables.

    Unset variables are reported into ``problems``; with ``problems=None`` (disabled servers) an
    unset reference is left as written.
    """
    environ = variables.environ

    def unset(match: re.Match[str], problem: str) -> str:
        if problems is not None:
            problems.append(f"{path} uses {match.group(0)}, {problem}")
        return match.group(0)

    def substitute(match: re.Match[str]) -> str:
        if match["escaped"] is not None:
            return "${"
        if (input_id := match["input"]) is not None:
            name = input_variable(input_id)
            value = environ.get(name) if name else None
            declared = variables.inputs.get(input_id)
            if value is not None:
                return value
            if declared is not None and declared.default is not None:
                return declared.default
            asked = f" ({declared.description})" if declared is not None and declared.description else ""
            return unset(
                match,
                f"a value VS Code asks for{asked}; zorkmcp reads it from the environment variable "
                f"{name or '(none: the ID has no letter or digit)'}, which is not set (set it)",
            )
        if (other := match["other"]) is not None:
            return unset(match, _unexpandable(other, closed=bool(match["closed"])))
        if (name := match["env"]) is not None:
            value, default = environ.get(name), match["env_default"]
            if value is not None and (value or default is None):
                return value
            if default is not None:
                return default
            return unset(match, f"but the environment variable {name} is not set (set it)")
        name, default = match["name"], match["default"]
        if name in variables.predefined:
            return variables.predefined[name]
        value = environ.get(name)
        if value is not None and (value or default is None):
            return value
        if default is not None:
            return default
        if name in _EDITOR_ONLY:
            return unset(
                match,
                "VS Code's variable for the file open in its editor, which zorkmcp (no editor) does not "
                "have: write the value itself",
            )
        return unset(
            match,
            f"but the environment variable {name} is not set (set it, or write ${{{name}:-default}}); "
            f"${match.group(0)} passes {match.group(0)} to the server as written",
        )

    return _REFERENCE.sub(substitute, text)


def _unexpandable(inner: str, *, closed: bool) -> str:
    """Why ``${inner}`` is not expanded, and what to write instead (the end of a sentence)."""
    if not closed:
        name = re.match(r"[A-Za-z_][A-Za-z0-9_]*", inner)
        return f"which has no closing }}: write ${{{name[0] if name else 'NAME'}}}"
    stripped = inner.strip()
    if stripped != inner and _VAR.fullmatch(f"${{{stripped}}}"):
        return f"with spaces inside the braces, which no tool allows: write ${{{stripped}}}"
    shell = re.match(r"(?:env:)?([A-Za-z_][A-Za-z0-9_]*):?[-=?+]", inner)
    if shell is not None:
        return (
            f"a shell form zorkmcp does not expand (only ${{{shell[1]}:-default}} has a default there): "
            f"write ${{{shell[1]}}} or ${{{shell[1]}:-default}}"
        )
    kind = inner.partition(":")[0]
    if kind in ("config", "command"):
        return f"VS Code's ${{{kind}:...}}, which zorkmcp (no editor) cannot read: write the value itself"
    if kind in ("workspaceFolder", "workspaceFolderBasename"):
        return f"VS Code's multi-root form; zorkmcp has one workspace folder: write ${{{kind}}}"
    return (
        "which zorkmcp does not expand (it expands ${VAR}, ${VAR:-default}, ${env:VAR}, ${input:ID} and "
        "${workspaceFolder}, ${userHome} and the like): write the value itself"
    )


def _build_server(
    name: str,
    entry: _WireServer,
    path: str,
    base: Path | None,
    variables: _Variables,
    problems: list[str],
) -> ServerConfig | None:
    if not name.strip():
        problems.append(f"{path} is not a usable server name (it is empty)")
        return None
    before = len(problems)
    sink = None if entry.disabled else problems
    command, args, env, cwd = _expanded(entry, path, variables, sink)
    headers = {
        k: _expand(v, json_path(path, "headers", k), variables, sink)
        for k, v in (entry.headers or {}).items()
    }
    urls = {key: getattr(entry, key) for key in _URL_KEYS if getattr(entry, key) is not None}
    url_key, url = next(iter(urls.items()), ("url", None))
    if len(urls) > 1:
        given = " and ".join(f'"{key}"' for key in urls)
        named = "; ".join(_URL_KEYS_NAMED[key] for key in urls if key != "url")
        problems.append(f"{path} has {'both ' if len(urls) == 2 else ''}{given} ({named}): keep one")
    url = None if url is None else _expand(url, json_path(path, url_key), variables, sink)
    server_type = _server_type(entry.type or ("http" if url_key == "httpUrl" else None), url)
    if server_type == "stdio":
        command = _check_stdio(entry, command, path, problems)
    elif server_type == "inprocess":
        _check_inprocess(entry, cwd, path, problems)
    else:
        empty = {} if sink is None else _empty_header_variables(entry.headers or {}, variables.environ)
        _check_remote(entry, url, url_key, headers, path, problems, empty)
    if server_type != "http" and server_type != "sse":
        for key in (*_URL_KEYS, "headers"):
            if getattr(entry, key) is not None:
                problems.append(f'{path}.{key} is only used by remote servers ("type": "http" or "sse")')
    if entry.envFile is not None:
        if server_type != "stdio":
            problems.append(f"{path}.envFile is only used by stdio servers (remove it)")
        elif sink is not None:  # a disabled server's file is not read
            file = _expand(entry.envFile, json_path(path, "envFile"), variables, sink)
            env = {**_read_env_file(file, base, json_path(path, "envFile"), problems), **env}
    _check_env_keys(entry.env or {}, path, problems)
    tools_key, tools = ("includeTools", entry.includeTools) if entry.tools is None else ("tools", entry.tools)
    if entry.tools is not None and entry.includeTools is not None:
        problems.append(f'{path} has "tools" and "includeTools" (Gemini CLI\'s name for it): keep one')
    if tools is not None and not tools:
        problems.append(f"{path}.{tools_key} must name at least one tool (remove it to offer every tool)")
    if entry.excludeTools is not None:
        problems.append(
            f"{path}.excludeTools (Gemini CLI's) is not supported: zorkmcp has no list of tools to leave "
            'out, so they would be offered; name the tools to offer in "tools" instead'
        )
    if cwd is not None and base is not None:
        cwd = str(base / Path(cwd).expanduser())
    roots = _expanded_roots(entry.roots, path, base, variables, sink, problems)
    if len(problems) > before:
        return None
    return ServerConfig(
        name=name,
        type=server_type,
        command=command,
        args=args,
        env=env,
        cwd=cwd,
        module=entry.module,
        disabled=entry.disabled,
        lifecycle=entry.lifecycle,
        timeout=entry.timeout,
        tools=None if tools is None else tuple(tools),
        roots=roots,
        sampling=entry.sampling,
        url=url,
        headers=headers,
    )


def _server_type(type_: str | None, url: str | None) -> ServerType:
    """``stdio`` or ``inprocess`` as written; a remote ``type`` (or a bare ``url``) as its transport."""
    if type_ == "stdio":
        return "stdio"
    if type_ == "inprocess":
        return "inprocess"
    if type_ is not None or url is not None:
        return remote_kind(url or "", type_)
    return "stdio"


def _empty_header_variables(headers: Mapping[str, str], environ: Mapping[str, str]) -> dict[str, str]:
    """The headers that use a ``${VAR}`` (no default) whose variable is set but empty, with its reference.

    An empty token is never meant: ``"Bearer ${TOKEN}"`` with ``TOKEN=`` would send ``Bearer `` and
    the server's 401 would say nothing of why.
    """
    empty: dict[str, str] = {}
    for name, value in headers.items():
        for match in _REFERENCE.finditer(value):  # not _VAR's: "$${TOKEN}" is no reference to TOKEN
            variable = match["env"] or match["name"]
            default = match["env_default"] if match["env"] else match["default"]
            if variable and default is None and environ.get(variable) == "":
                empty.setdefault(name, match.group(0))
    return empty


def _check_remote(
    entry: _WireServer,
    url: str | None,
    url_key: str,
    headers: Mapping[str, str],
    path: str,
    problems: list[str],
    empty: Mapping[str, str],
) -> None:
    """A remote server: an http(s) URL with a host, no process keys, headers HTTP can carry.

    ``empty``: headers whose ``${VAR}`` expanded to nothing (:func:`_empty_header_variables`).
    """
    for key in ("command", "args", "env", "cwd", "module"):
        if getattr(entry, key) is not None:
            problems.append(f"{path}.{key} is not used by remote (HTTP/SSE) servers (remove it)")
    if url is None:
        problems.append(f'{path}.url is required for a remote server (e.g. "https://example.com/mcp")')
    elif "${" not in url:  # else an unset variable, already reported (or a disabled server's)
        problem = url_problem(url, example="https://example.com/mcp")
        if problem is not None:
            problems.append(f"{path}.{url_key} {problem}")
    for name, value in headers.items():
        if not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", name):
            problems.append(f"{json_path(path, 'headers')} has a header name HTTP cannot carry: {name!r}")
        elif entry.disabled:  # never sent: a variable it needs may be left unset or empty
            continue
        elif name in empty:
            reference = empty[name]
            variable = reference[2:-1].removeprefix("env:")
            problems.append(
                f"{json_path(path, 'headers', name)} uses {reference}, but the environment variable "
                f"{variable} is empty (set it, or drop the header)"
            )
        elif any(c in value for c in "\r\n\x00"):
            problems.append(
                f"{json_path(path, 'headers', name)} must not contain line breaks (value not shown)"
            )
        elif not value.isascii() or any((c < " " and c != "\t") or c == "\x7f" for c in value):
            problems.append(
                f"{json_path(path, 'headers', name)} must be printable ASCII, as HTTP carries it "
                "(value not shown)"
            )
        elif value != value.strip(" \t"):  # HTTP trims them; h11 refuses the request instead
            problems.append(
                f"{json_path(path, 'headers', name)} must not start or end with a space (value not shown; "
                '"Bearer ${TOKEN:-}" with TOKEN unset leaves one: set the variable or drop the header)'
            )


def _expanded(
    entry: _WireServer, path: str, variables: _Variables, sink: list[str] | None
) -> tuple[str | None, tuple[str, ...], dict[str, str], str | None]:
    """``command``, ``args``, ``env`` and ``cwd`` with ``${VAR}`` expanded."""
    command = (
        None if entry.command is None else _expand(entry.command, json_path(path, "command"), variables, sink)
    )
    args = tuple(
        _expand(a, json_path(path, "args", i), variables, sink) for i, a in enumerate(entry.args or ())
    )
    env = {k: _expand(v, json_path(path, "env", k), variables, sink) for k, v in (entry.env or {}).items()}
    cwd = None if entry.cwd is None else _expand(entry.cwd, json_path(path, "cwd"), variables, sink)
    return command, args, env, cwd


def _expanded_roots(
    roots: list[str] | None,
    path: str,
    base: Path | None,
    variables: _Variables,
    sink: list[str] | None,
    problems: list[str],
) -> tuple[str, ...] | None:
    """``roots`` with ``${VAR}`` expanded, as ``file://`` URIs (a relative path: from the file's folder)."""
    if roots is None:
        return None
    uris: list[str] = []
    for index, item in enumerate(roots):
        where = json_path(path, "roots", index)
        value = _expand(item, where, variables, sink)
        if (problem := _root_problem(value)) is not None:
            problems.append(f"{where} {problem}")
        else:
            uris.append(root_uri(value, base))
    return tuple(uris)


def _read_env_file(name: str, base: Path | None, path: str, problems: list[str]) -> dict[str, str]:
    """The variables of a ``.env`` file (``NAME=value`` lines, as ``python-dotenv`` reads them), as written.

    A relative path is relative to the config file's folder. ``${VAR}`` inside the file is kept as
    written (VS Code does not expand it either).
    """
    from dotenv.parser import parse_stream

    file = Path(name).expanduser()
    if not file.is_absolute() and base is not None:
        file = base / file
    try:
        raw = file.read_bytes()
    except FileNotFoundError:
        problems.append(f"{path}: there is no file {file} (write the server's variables there, or remove it)")
        return {}
    except OSError as exc:
        problems.append(f"{path}: cannot read {file} ({exc.strerror or exc})")
        return {}
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        problems.append(f"{path}: {file} {not_utf8(raw, exc)}")
        return {}
    values: dict[str, str] = {}
    for binding in parse_stream(io.StringIO(text)):
        if binding.error:
            line, written = binding.original.line, binding.original.string.strip()
            problems.append(f"{path}: line {line} of {file} is not NAME=value: {written!r}")
        elif binding.key is not None and binding.value is not None:  # a bare NAME sets nothing
            values[binding.key] = binding.value
    return values


def _check_stdio(entry: _WireServer, command: str | None, path: str, problems: list[str]) -> str | None:
    """The rules of a stdio server; returns the command (``python`` is this interpreter)."""
    if entry.module is not None:
        problems.append(f'{path}.module is only used with "type": "inprocess"')
    if command is None:
        problems.append(f'{path}.command is required (the program that starts the server, e.g. "npx")')
    elif not command.strip():
        problems.append(f"{path}.command must not be empty")
    elif command in _PYTHON_COMMANDS:
        return sys.executable
    return command


_WINDOWS_PATH: Final = re.compile(r"[A-Za-z]:[\\/]|\\\\")
"""How a Windows path starts: a drive (``C:\\``, ``C:/``) or a share (``\\\\host``)."""
_WINDOWS_SUFFIXES: Final = (".cmd", ".exe", ".bat")
_CMD_RUN: Final = frozenset({"/c", "/k", "/s", "/d", "/q"})
"""``cmd``'s switches before the command line it runs (``cmd /c npx ...``)."""


def _not_windows() -> str | None:
    """This system's name for a message (``Linux``, ``macOS``), or ``None`` on Windows."""
    if sys.platform == "win32":
        return None
    return {"darwin": "macOS", "linux": "Linux"}.get(sys.platform, sys.platform)


def _windows_form(server: ServerConfig, path: str) -> str | None:
    """The problem line of a stdio command written for Windows, on another system (``None``: none).

    Claude Desktop's and Cursor's Windows instructions start a server with ``cmd /c npx ...``, or name
    ``npx.cmd`` or ``C:\\Program Files\\nodejs\\npx.cmd``: copied to Linux or macOS, the command is
    not on ``PATH`` (or, with its spaces, read as a whole command line), and the message would say
    nothing of why. A program of that name this system has (a ``cmd`` script on ``PATH``) is left alone.
    """
    command = server.command
    system = _not_windows()
    if system is None or command is None:
        return None
    search_path = server.env.get("PATH", os.environ.get("PATH", os.defpath))
    windows_path = _WINDOWS_PATH.match(command) is not None
    if not windows_path and ("/" in command or shutil.which(command, path=search_path)):
        return None  # this system's own path, or a program it has
    name = re.split(r"[\\/]", command)[-1]
    program = name[:-4] if name.lower().endswith(_WINDOWS_SUFFIXES) else name
    if program.lower() == "cmd":
        rest = list(server.args)
        while rest and rest[0].lower() in _CMD_RUN:
            rest.pop(0)
        words = [*rest[0].split(), *rest[1:]] if rest else []
        if not words:
            return (
                f"{path}.command {command!r} is Windows' command interpreter, which {system} does not have: "
                "give the program that starts the server as command, and its arguments as args"
            )
        return (
            f"{path}.command {command!r} is Windows' command interpreter (cmd /c runs the server there), "
            f"which {system} does not have: start the program itself, "
            f'"command": {json.dumps(words[0])}, "args": {json.dumps(words[1:], ensure_ascii=False)}'
        )
    if windows_path:
        return (
            f"{path}.command {command!r} is a Windows path, which {system} does not have: give the "
            f"program's name ({json.dumps(program)} if it is on PATH here) or its path on this system"
        )
    if name != program:
        return (
            f"{path}.command {command!r} is the program's Windows name: on {system} write "
            f'"command": {json.dumps(program)}'
        )
    return None


def _windows_arguments(server: ServerConfig, path: str) -> list[str]:
    """The problem line of the first argument that is a Windows drive's path (``C:\\Users\\me``), on
    another system: the server would start, and fail at its first use of the folder."""
    system = _not_windows()
    if system is None:
        return []
    for index, arg in enumerate(server.args):
        if re.match(r"[A-Za-z]:\\", arg):
            return [
                f"{json_path(path, 'args', index)} {arg!r} is a Windows path, which {system} does not have: "
                "give its path on this system"
            ]
    return []


def _check_inprocess(entry: _WireServer, cwd: str | None, path: str, problems: list[str]) -> None:
    for key, value in (("command", entry.command), ("args", entry.args), ("env", entry.env), ("cwd", cwd)):
        if value is not None:
            problems.append(f'{path}.{key} is not used by "type": "inprocess" servers (remove it)')
    if entry.module is None:
        problems.append(f'{path}.module is required for "type": "inprocess" ("package.module:factory")')
    elif not _MODULE_SPEC.fullmatch(entry.module):
        problems.append(f'{path}.module must look like "package.module:factory", got {entry.module!r}')


def _check_env_keys(env: Mapping[str, str], path: str, problems: list[str]) -> None:
    """Environment variable names the operating system accepts: not empty, no ``=``."""
    for key in env:
        if not key:
            problems.append(f"{json_path(path, 'env')} has an empty variable name (remove it)")
        elif "=" in key:
            problems.append(f"{json_path(path, 'env', key)} is not a variable name: it contains '='")


def _too_long(exc: ValueError) -> str:
    if "digits" in str(exc):
        return f"a number has more than {sys.get_int_max_str_digits()} digits"
    return str(exc)
