"""Settings (``pyproject.toml`` ``[tool.zorkgpt.*]``) and MCP server configuration (``mcp_config.json``).

Both files are read synchronously: configuration is loaded before any event loop starts
(seeds 000 §Configuration Schema: fail fast for configuration, graceful at runtime).

Validation goes through one private, strict :class:`cattrs.Converter`: a JSON ``1`` never
becomes ``"1"``, ``true`` is not an integer, unknown keys are errors where the format is
ours, and every message names the file and the key (``$.mcpServers.thinking.args[1]``).
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import sys
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Final, Literal, TypeVar, get_args

import attrs
from attrs import field, frozen
from cattrs import Converter, transform_error
from cattrs.cols import list_structure_factory, mapping_structure_factory
from cattrs.errors import BaseValidationError, ForbiddenExtraKeysError
from cattrs.gen import make_dict_structure_fn
from cattrs.v import format_exception as _cattrs_format_exception

from ._jsontypes import json_type_name
from .errors import ConfigError

__all__ = [
    "DEFAULT_MAX_RESULT_BYTES",
    "FilesSettings",
    "LLMSettings",
    "McpConfig",
    "McpSettings",
    "OrchestratorSettings",
    "RetrySettings",
    "SamplingSettings",
    "ServerConfig",
    "Settings",
]

DEFAULT_MAX_RESULT_BYTES = 64 * 1024

_T = TypeVar("_T")


# --- validation helpers -------------------------------------------------------------------------


class _Problem(ValueError):
    """One broken rule about one value; ``key`` (if set) is the attribute the rule is about.

    ``str()`` reads as a sentence: ``"tool_call_timeout_seconds must be > 0, got -1"``.
    """

    def __init__(self, problem: str, *, key: str | None = None) -> None:
        super().__init__(f"{key} {problem}" if key else problem)
        self.problem = problem
        self.key = key


def _show(value: object) -> str:
    """``'1' (string)``: the value, shortened, and its JSON/TOML type."""
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({json_type_name(value)})"


def _positive(inst: object, attribute: attrs.Attribute[Any], value: float | None) -> None:
    """attrs validator: ``None`` or a number > 0 (``nan`` is not > 0)."""
    if value is not None and not value > 0:
        raise _Problem(f"must be > 0, got {value!r}", key=attribute.name)


def _non_empty(inst: object, attribute: attrs.Attribute[Any], value: str) -> None:
    if not value:
        raise _Problem("must not be empty", key=attribute.name)


def _one_of(*choices: str) -> Callable[[object, attrs.Attribute[Any], str], None]:
    def check(inst: object, attribute: attrs.Attribute[Any], value: str) -> None:
        if value not in choices:
            allowed = ", ".join(repr(c) for c in choices)
            raise _Problem(f"must be one of {allowed}, got {value!r}", key=attribute.name)

    return check


# --- the models ---------------------------------------------------------------------------------


@frozen(kw_only=True)
class McpSettings:
    """``[tool.zorkgpt.mcp]`` (seeds 000 §Configuration; Requirement 13 defaults)."""

    enabled: bool = False
    config_file: str = field(default="mcp_config.json", validator=_non_empty)
    max_tool_iterations: int = field(default=20, validator=_positive)
    tool_call_timeout_seconds: float = field(default=30, validator=_positive)
    server_startup_timeout_seconds: float = field(default=10, validator=_positive)
    force_tool_support: bool = False
    max_result_bytes: int = field(default=DEFAULT_MAX_RESULT_BYTES, validator=_positive)
    turn_timeout_seconds: float | None = field(default=None, validator=_positive)


@frozen(kw_only=True)
class LLMSettings:
    """``[tool.zorkgpt.llm]``: where the agent's model lives."""

    client_base_url: str | None = None
    agent_model: str | None = None
    agent_base_url: str | None = None
    api_key_env: str | None = None
    cache_control: bool = True
    """Mark system and user messages for prompt caching (Requirement 4.7); strict OpenAI-compatible
    endpoints that reject the field need ``false``."""


@frozen(kw_only=True)
class RetrySettings:
    """``[tool.zorkgpt.retry]``."""

    max_retries: int = 5
    initial_delay: float = 1.0
    max_delay: float = 60.0
    exponential_base: float = 2.0
    jitter_factor: float = 0.1
    timeout_seconds: float = 120.0
    retry_on_timeout: bool = True
    retry_on_rate_limit: bool = True
    retry_on_server_error: bool = True


@frozen(kw_only=True)
class SamplingSettings:
    """``[tool.zorkgpt.agent_sampling]``."""

    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    max_tokens: int | None = None


@frozen(kw_only=True)
class FilesSettings:
    """``[tool.zorkgpt.files]``."""

    game_file_path: str | None = None
    json_log_file: str = "logs/zorkmcp_events.jsonl"
    episode_log_file: str = "logs/episode.log"


@frozen(kw_only=True)
class OrchestratorSettings:
    """``[tool.zorkgpt.orchestrator]``."""

    max_turns_per_episode: int = 500


# The sections of pyproject.toml we read, in file order; only [tool.zorkgpt.mcp] is ours alone,
# the others are shared with ZorkGPT, whose users keep keys we don't use (critic_model, ...).
_SECTIONS: Final[tuple[tuple[str, type[Any], bool], ...]] = (
    ("mcp", McpSettings, True),
    ("llm", LLMSettings, False),
    ("retry", RetrySettings, False),
    ("agent_sampling", SamplingSettings, False),
    ("files", FilesSettings, False),
    ("orchestrator", OrchestratorSettings, False),
)


@frozen(kw_only=True)
class Settings:
    """Everything read from one ``pyproject.toml``; ``Settings()`` is the embedded defaults."""

    mcp: McpSettings = field(factory=McpSettings)
    llm: LLMSettings = field(factory=LLMSettings)
    retry: RetrySettings = field(factory=RetrySettings)
    agent_sampling: SamplingSettings = field(factory=SamplingSettings)
    files: FilesSettings = field(factory=FilesSettings)
    orchestrator: OrchestratorSettings = field(factory=OrchestratorSettings)
    source: Path | None = None
    """The pyproject.toml these came from (``None`` for embedded defaults)."""

    @classmethod
    def from_pyproject(cls, path: Path | None = None) -> Settings:
        """Read the ``[tool.zorkgpt.*]`` sections of a ``pyproject.toml``.

        Like ZorkGPT's ``GameConfiguration.from_toml()`` (seeds 000 §GameConfiguration
        Extensions): a missing file or a missing section gives the defaults (Requirement 13).
        In ``[tool.zorkgpt.mcp]`` unknown keys, wrong types and non-positive numbers are
        errors. The other sections are shared with ZorkGPT, so unknown keys there are
        ignored, but keys we know must have the right type. Booleans must be TOML booleans;
        integers are accepted where numbers are expected, not the other way round.

        Args:
            path: the file to read; defaults to ``pyproject.toml`` in the current directory.

        Returns:
            The settings, with ``source`` set to the file's absolute path (``None`` when the
            file does not exist).

        Raises:
            ConfigError: the file is not valid TOML or a value breaks a rule; the message
                names the key, the file and the section.
        """
        path = Path("pyproject.toml") if path is None else path
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return cls()
        except OSError as exc:
            raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from exc
        try:
            document = tomllib.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise ConfigError(f"{path} is not valid UTF-8 (byte {exc.start})") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"invalid TOML in {path}: {exc}") from exc

        zorkgpt = document.get("tool", {})
        zorkgpt = zorkgpt.get("zorkgpt", {}) if isinstance(zorkgpt, dict) else zorkgpt
        if not isinstance(zorkgpt, dict):
            raise ConfigError(f"[tool.zorkgpt] must be a table, got {_show(zorkgpt)} ({path})")
        sections: dict[str, Any] = {}
        for name, model, strict in _SECTIONS:
            where = f"{path} [tool.zorkgpt.{name}]"
            table = zorkgpt.get(name, {})
            if not isinstance(table, dict):
                raise ConfigError(f"[tool.zorkgpt.{name}] must be a table, got {_show(table)} ({path})")
            if not strict:
                known = {a.name for a in attrs.fields(model)}
                table = {k: v for k, v in table.items() if k in known}
            sections[name] = _structure(table, model, where=where, style="toml")
        return cls(**sections, source=path.absolute())

    def mcp_config_path(self) -> Path:
        """Where ``mcp_config.json`` is: ``config_file`` resolved against the pyproject's folder.

        An absolute ``config_file`` (``~`` is expanded) is used as is; a relative one is
        relative to the folder of :attr:`source`, or to the current directory for the
        embedded defaults.
        """
        configured = Path(self.mcp.config_file).expanduser()
        if configured.is_absolute():
            return configured
        base = self.source.parent if self.source is not None else Path.cwd()
        return base / configured


@frozen(kw_only=True)
class ServerConfig:
    """One entry of ``mcpServers`` (or ``servers``) in ``mcp_config.json``."""

    name: str
    type: Literal["stdio", "inprocess"] = field(default="stdio", validator=_one_of("stdio", "inprocess"))
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(factory=dict)
    cwd: str | None = None
    module: str | None = None
    """``package.module:factory`` for ``type = "inprocess"``."""
    disabled: bool = False
    lifecycle: Literal["per_turn", "per_episode"] = field(
        default="per_turn", validator=_one_of("per_turn", "per_episode")
    )
    timeout: float | None = field(default=None, validator=_positive)
    """Seconds per tool call; overrides ``tool_call_timeout_seconds``."""
    tools: tuple[str, ...] | None = None
    """Allow-list of tool names; ``None`` offers every tool."""


@frozen(kw_only=True)
class McpConfig:
    """A whole ``mcp_config.json``: the servers in file order."""

    servers: tuple[ServerConfig, ...]
    source: Path | None = None

    @property
    def enabled_servers(self) -> tuple[ServerConfig, ...]:
        return tuple(s for s in self.servers if not s.disabled)

    @classmethod
    def from_file(
        cls,
        path: Path,
        *,
        check_commands: bool = True,
        environ: Mapping[str, str] | None = None,
    ) -> McpConfig:
        """Read and validate an ``mcp_config.json``.

        See :meth:`from_dict` for the format.

        Args:
            path: the file.
            check_commands: check that every enabled stdio server's ``command`` is on
                ``PATH`` and its ``cwd`` exists.
            environ: the variables ``${VAR}`` is expanded from (default ``os.environ``).

        Raises:
            ConfigError: the file is missing (the seeds' two-option message), is not JSON
                (with line and column), or breaks a rule (with the JSON path).
        """
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
            raise ConfigError(f"MCP config {path} is not valid UTF-8 (byte {exc.start})") from exc
        try:
            data = json.loads(text, object_pairs_hook=_no_duplicate_keys)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"invalid JSON in {path} at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            ) from exc
        except _DuplicateKeyError as exc:
            raise ConfigError(f"invalid MCP config {path}: {exc}") from exc
        return cls.from_dict(data, source=path, check_commands=check_commands, environ=environ)

    @classmethod
    def from_dict(
        cls,
        data: object,
        *,
        source: Path | None = None,
        check_commands: bool = True,
        environ: Mapping[str, str] | None = None,
    ) -> McpConfig:
        """Validate the parsed contents of an ``mcp_config.json``.

        The format is Claude Desktop's ``{"mcpServers": {name: {command, args, env}}}``
        plus what Claude Code, Cline and VS Code users paste: ``servers`` as an alias of
        ``mcpServers``, ``"type": "stdio"``, ``cwd``, ``disabled`` (and Cline's
        ``autoApprove``/``alwaysAllow``, accepted and ignored). ``${VAR}`` and
        ``${VAR:-default}`` are expanded in ``command``, ``args``, ``env`` values and
        ``cwd`` (``:-`` also applies when the variable is empty); an unset variable without
        a default is an error, except in disabled servers, which are left unexpanded.

        zorkmcp's own per-server keys: ``lifecycle`` (``"per_turn"``, the default, or
        ``"per_episode"``), ``timeout`` (seconds per tool call, > 0), ``tools`` (allow-list
        of tool names) and ``"type": "inprocess"`` with ``"module": "package.module:factory"``
        (a Python MCP server object; the module is not imported here).

        The command ``python`` or ``python3`` means the interpreter running zorkmcp: it is
        replaced by ``sys.executable``, so a server started from a virtualenv sees the same
        installed packages. A relative ``cwd`` is relative to the config file's folder.

        Args:
            data: the parsed JSON.
            source: the file it came from (used in messages and to resolve ``cwd``).
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
        where = str(source) if source is not None else "MCP config"
        remote = _remote_servers(data)
        if remote:
            raise ConfigError(_summarize(remote, where))
        wire = _structure(data, _WireConfig, where=where, style="json")
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
        base = source.parent if source is not None else None
        env = os.environ if environ is None else environ
        problems: list[str] = []
        servers = []
        # seeds 002 Req 2.6 uses only the first server (V1); zorkmcp keeps them all, in file
        # order, and the MCP layer federates their tools (seeds 004).
        for name, entry in entries.items():
            server = _build_server(name, entry, _path("$", key, name), base, env, problems)
            if server is not None:
                servers.append(server)
        if not problems and all(s.disabled for s in servers):
            names = ", ".join(s.name for s in servers)
            raise ConfigError(
                f'every MCP server is disabled ({names}): set "disabled": false on one, or set '
                f"mcp.enabled = false in pyproject.toml ({where})"
            )
        if not problems and check_commands:
            for server in servers:
                if not server.disabled and server.type == "stdio":
                    _check_host(server, _path("$", key, server.name), problems)
        if problems:
            raise ConfigError(_summarize(problems, where))
        return cls(servers=tuple(servers), source=source)


# --- the wire format of mcp_config.json (JSON keys as attribute names: error paths show them) -----


@frozen(kw_only=True)
class _WireServer:
    type: Literal["stdio", "inprocess"] | None = None
    command: str | None = None
    args: list[str] | None = None
    env: dict[str, str] | None = None
    cwd: str | None = None
    module: str | None = None
    disabled: bool = False
    lifecycle: Literal["per_turn", "per_episode"] = "per_turn"
    timeout: float | None = field(default=None, validator=_positive)
    tools: list[str] | None = None
    autoApprove: list[str] | None = None  # Cline's; accepted, not used
    alwaysAllow: list[str] | None = None  # Cline's; accepted, not used


@frozen(kw_only=True)
class _WireConfig:
    mcpServers: dict[str, _WireServer] | None = None
    servers: dict[str, _WireServer] | None = None


# --- the converter ------------------------------------------------------------------------------


def _strict_str(value: object, _: type) -> str:
    if not isinstance(value, str):
        raise _Problem(f"must be a string, got {_show(value)}")
    return value


def _strict_bool(value: object, _: type) -> bool:
    if not isinstance(value, bool):
        raise _Problem(f"must be true or false, got {_show(value)}")
    return value


def _strict_int(value: object, _: type) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Problem(f"must be an integer, got {_show(value)}")
    return value


def _strict_float(value: object, _: type) -> float:
    # An int stays an int (30 == 30.0; messages then show the number as written).
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise _Problem(f"must be a number, got {_show(value)}")
    return value


def _strict_literal(value: object, type_: Any) -> object:
    choices = get_args(type_)
    if value not in choices or type(value) is not type(choices[0]):
        allowed = ", ".join(json.dumps(c) for c in choices)
        raise _Problem(f"must be one of {allowed}, got {_show(value)}")
    return value


def _strict_list_factory(type_: Any, converter: Converter) -> Callable[[Any, Any], Any]:
    inner = list_structure_factory(type_, converter)

    def structure(value: object, t: Any) -> Any:
        if not isinstance(value, list | tuple):
            raise _Problem(f"must be an array, got {_show(value)}")
        return inner(value, t)

    return structure


def _strict_mapping_factory(type_: Any, converter: Converter) -> Callable[[Any, Any], Any]:
    inner = mapping_structure_factory(type_, converter, dict, detailed_validation=True)

    def structure(value: object, t: Any) -> Any:
        if not isinstance(value, Mapping):
            raise _Problem(f"must be an object, got {_show(value)}")
        return inner(value, t)

    return structure


def _strict_class_factory(cl: Any, converter: Converter) -> Callable[[Any, Any], Any]:
    inner = make_dict_structure_fn(cl, converter)

    def structure(value: object, t: Any) -> Any:
        if not isinstance(value, Mapping):
            raise _Problem(f"must be an object, got {_show(value)}")
        return inner(value, t)

    return structure


def _origin(type_: object) -> object:
    return getattr(type_, "__origin__", None)


def _make_converter() -> Converter:
    converter = Converter(forbid_extra_keys=True, detailed_validation=True)
    converter.register_structure_hook(str, _strict_str)
    converter.register_structure_hook(bool, _strict_bool)
    converter.register_structure_hook(int, _strict_int)
    converter.register_structure_hook(float, _strict_float)
    converter.register_structure_hook_func(lambda t: _origin(t) is Literal, _strict_literal)
    converter.register_structure_hook_factory(lambda t: _origin(t) is list, _strict_list_factory)
    converter.register_structure_hook_factory(lambda t: _origin(t) is dict, _strict_mapping_factory)
    converter.register_structure_hook_factory(attrs.has, _strict_class_factory)
    return converter


_converter: Final = _make_converter()

# Marks the attribute name a validator complained about inside a transform_error line.
_KEY_MARK: Final = "\x1f"


def _format_exception(exc: BaseException, type_: type | None) -> str:
    """``format_exception`` for :func:`cattrs.transform_error` that keeps our messages."""
    if isinstance(exc, _Problem):
        if exc.key:
            return f"{_KEY_MARK}{exc.key}{_KEY_MARK}{exc.problem}"
        return exc.problem
    if isinstance(exc, ForbiddenExtraKeysError):
        extra = sorted(exc.extra_fields)
        allowed = ", ".join(a.name for a in attrs.fields(exc.cl))
        noun = "key" if len(extra) == 1 else "keys"
        return f"has unknown {noun} {', '.join(repr(k) for k in extra)} (allowed: {allowed})"
    if isinstance(exc, KeyError):
        return "is required"
    return _cattrs_format_exception(exc, type_)


_PATH_PART: Final = re.compile(r"\.([^.\[]+)|\[(\d+)\]|\[('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")\]")
_PLAIN_KEY: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


def _path(root: str, *parts: str | int) -> str:
    """A JSON path: ``_path("$", "mcpServers", "a b", 1) == '$.mcpServers["a b"][1]'``."""
    out = root
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN_KEY.fullmatch(part):
            out += f".{part}"
        else:
            out += f"[{json.dumps(part, ensure_ascii=False)}]"
    return out


def _rewrite_cattrs_path(path: str) -> str:
    """cattrs writes mapping keys as ``['key']``; show them as JSON keys (``.key``)."""
    parts: list[str | int] = []
    for match in _PATH_PART.finditer(path, 1):
        attr, index, key = match.groups()
        if attr is not None:
            parts.append(attr)
        elif index is not None:
            parts.append(int(index))
        else:
            parts.append(str(ast.literal_eval(key)))
    return _path("$", *parts)


def _summarize(problems: list[str], where: str) -> str:
    if len(problems) == 1:
        return f"{problems[0]} ({where})"
    lines = "\n".join(f"  {p}" for p in problems)
    return f"{len(problems)} problems in {where}:\n{lines}"


def _structure(data: object, model: type[_T], *, where: str, style: Literal["json", "toml"]) -> _T:
    """Structure ``data`` with the project converter; raise ConfigError with readable lines."""
    try:
        return _converter.structure(data, model)
    except (BaseValidationError, _Problem) as exc:
        lines = transform_error(exc, path="$", format_exception=_format_exception)
    problems = []
    for line in lines:
        description, _, raw_path = line.rpartition(" @ $")
        path = _rewrite_cattrs_path("$" + raw_path)
        if description.startswith(_KEY_MARK):
            _, key, description = description.split(_KEY_MARK, 2)
            path = _path(path, key)
        if style == "toml":
            subject = path.removeprefix("$").removeprefix(".")
            problems.append(f"{subject} {description}" if subject else description.removeprefix("has "))
        else:
            problems.append(f"{path} {description}" if path != "$" else f"the top level {description}")
    raise ConfigError(_summarize(problems, where))


class _DuplicateKeyError(ValueError):
    pass


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKeyError(f"duplicate key {json.dumps(key)} in one object")
        out[key] = value
    return out


# --- from the wire format to ServerConfig -------------------------------------------------------

_VAR: Final = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
_MODULE_SPEC: Final = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_REMOTE_TYPES: Final = frozenset({"http", "sse", "streamable-http", "streamableHttp", "streamable_http"})
_PYTHON_COMMANDS: Final = frozenset({"python", "python3"})
_NEEDS: Final[Mapping[str, str]] = {
    "npx": "Node.js >= 20 (npx comes with it): install it from https://nodejs.org",
    "node": "Node.js >= 20: install it from https://nodejs.org",
    "npm": "Node.js >= 20 (npm comes with it): install it from https://nodejs.org",
    "uvx": "uv (uvx comes with it): install it from https://docs.astral.sh/uv/",
    "uv": "uv: install it from https://docs.astral.sh/uv/",
}


def _remote_servers(data: object) -> list[str]:
    """Entries written for a remote (HTTP/SSE) server, which zorkmcp cannot start."""
    problems = []
    for key in ("mcpServers", "servers"):
        entries = data.get(key) if isinstance(data, Mapping) else None
        for name, entry in entries.items() if isinstance(entries, Mapping) else ():
            if isinstance(entry, Mapping) and ("url" in entry or entry.get("type") in _REMOTE_TYPES):
                problems.append(
                    f"{_path('$', key, str(name))} is a remote (HTTP/SSE) server; zorkmcp starts "
                    f'"stdio" and "inprocess" servers only (run it over stdio, or remove it)'
                )
    return problems


def _expand(text: str, path: str, environ: Mapping[str, str], problems: list[str] | None) -> str:
    """Expand ``${VAR}`` / ``${VAR:-default}``; unset variables are reported into ``problems``.

    With ``problems=None`` (disabled servers) an unset reference is left as written.
    """

    def substitute(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        value = environ.get(name)
        if value is not None and (value or default is None):
            return value
        if default is not None:
            return default
        if problems is not None:
            problems.append(
                f"{path} uses ${{{name}}}, but the environment variable {name} is not set "
                f"(set it, or write ${{{name}:-default}})"
            )
        return match.group(0)

    return _VAR.sub(substitute, text)


def _build_server(
    name: str,
    entry: _WireServer,
    path: str,
    base: Path | None,
    environ: Mapping[str, str],
    problems: list[str],
) -> ServerConfig | None:
    if not name.strip():
        problems.append(f"{path} is not a usable server name (it is empty)")
        return None
    sink = None if entry.disabled else problems
    before = len(problems)
    server_type: Literal["stdio", "inprocess"] = entry.type or "stdio"
    command = None if entry.command is None else _expand(entry.command, _path(path, "command"), environ, sink)
    args = tuple(_expand(a, _path(path, "args", i), environ, sink) for i, a in enumerate(entry.args or ()))
    env = {k: _expand(v, _path(path, "env", k), environ, sink) for k, v in (entry.env or {}).items()}
    cwd = None if entry.cwd is None else _expand(entry.cwd, _path(path, "cwd"), environ, sink)
    if server_type == "stdio":
        if entry.module is not None:
            problems.append(f'{path}.module is only used with "type": "inprocess"')
        if command is None:
            problems.append(f'{path}.command is required (the program that starts the server, e.g. "npx")')
        elif not command.strip():
            problems.append(f"{path}.command must not be empty")
        elif command in _PYTHON_COMMANDS:
            command = sys.executable
    else:
        for key, value in (
            ("command", entry.command),
            ("args", entry.args),
            ("env", entry.env),
            ("cwd", cwd),
        ):
            if value is not None:
                problems.append(f'{path}.{key} is not used by "type": "inprocess" servers (remove it)')
        if entry.module is None:
            problems.append(f'{path}.module is required for "type": "inprocess" ("package.module:factory")')
        elif not _MODULE_SPEC.fullmatch(entry.module):
            problems.append(f'{path}.module must look like "package.module:factory", got {entry.module!r}')
    if entry.tools is not None and not entry.tools:
        problems.append(f"{path}.tools must name at least one tool (remove it to offer every tool)")
    if cwd is not None and base is not None:
        cwd = str(base / Path(cwd).expanduser())
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
        tools=None if entry.tools is None else tuple(entry.tools),
    )


def _check_host(server: ServerConfig, path: str, problems: list[str]) -> None:
    """The command of an enabled stdio server can be run, and its cwd exists."""
    if server.cwd is not None and not Path(server.cwd).is_dir():
        problems.append(f"{path}.cwd is not a directory: {server.cwd}")
        return
    command = server.command
    assert command is not None  # stdio servers have one (checked in _build_server)
    if os.sep in command or (os.altsep and os.altsep in command):
        candidate = Path(command).expanduser()
        if not candidate.is_absolute() and server.cwd is not None:
            candidate = Path(server.cwd) / candidate
        if not (candidate.is_file() and os.access(candidate, os.X_OK)):
            problems.append(f"{path}.command {command!r} is not an executable file")
        return
    search_path = server.env.get("PATH", os.environ.get("PATH", os.defpath))
    if shutil.which(command, path=search_path) is None:
        needs = _NEEDS.get(command)
        hint = f"; this server needs {needs}" if needs else ""
        problems.append(
            f"{path}.command {command!r} was not found on PATH{hint} "
            f'(or set "disabled": true on server {server.name!r})'
        )
