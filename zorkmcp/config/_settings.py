"""Settings: the ``[tool.zorkgpt.*]`` sections of ``pyproject.toml``, and the embedded defaults.

Read synchronously: configuration is loaded before any event loop starts (seeds 000
§Configuration Schema: fail fast for configuration, graceful at runtime).
"""

from __future__ import annotations

import ast
import os
import re
import stat
import sys
import tomllib
from pathlib import Path
from typing import Any, Final

import attrs
from attrs import field, frozen
from attrs.validators import optional

from .._urls import url_problem
from ..errors import ConfigError
from ._convert import (
    Problem,
    boolean,
    fold_key,
    in_range,
    instance_of,
    near_miss,
    non_empty,
    optional_string,
    show,
    source_path,
    structure,
    summarize,
)

__all__ = [
    "DEFAULT_MAX_RESULT_BYTES",
    "EMBEDDED_MCP_CONFIG",
    "MAX_SECONDS",
    "FilesSettings",
    "LLMSettings",
    "McpSettings",
    "OrchestratorSettings",
    "RetrySettings",
    "SamplingSettings",
    "Settings",
    "check_settings_file",
    "not_utf8",
]

DEFAULT_MAX_RESULT_BYTES = 64 * 1024

MAX_SECONDS: Final = 604_800
"""The upper bound of every timeout and delay in seconds (one week)."""

EMBEDDED_MCP_CONFIG: Final = Path(__file__).resolve().with_name("default_mcp_config.json")
"""The package's ``mcp_config.json``: the embedded think server, a stdio subprocess per turn."""

_seconds = in_range(0, MAX_SECONDS, what="one week")
_delay = in_range(0, MAX_SECONDS, low_open=False, what="one week")
_unit = in_range(0, 1, low_open=False)


_VARIABLE_REFERENCE: Final = re.compile(r"\$\{[^}]*\}?|\$[A-Za-z_][A-Za-z0-9_]*|%[A-Za-z_][A-Za-z0-9_]*%")


def _as_written(inst: object, attribute: attrs.Attribute[Any], value: str | None) -> None:
    """attrs validator: a path with no environment variable in it (``$HOME``, ``${HOME}``, ``%USERPROFILE%``).

    Paths are taken as written, as ZorkGPT takes them: ``json_log_file = "$HOME/logs/x.jsonl"`` would
    make a folder called ``$HOME`` in the current one, and ``config_file = "${CONFIG}/m.json"`` would be
    looked for in a folder of that name. A ``$`` not followed by a name is part of the name.
    """
    if isinstance(value, str) and (found := _VARIABLE_REFERENCE.search(value)) is not None:
        raise Problem(
            f"holds {found[0]}, but paths are taken as written (no environment variable is expanded, as "
            "in ZorkGPT): write the path itself (~/ is the home folder)",
            key=attribute.name,
        )


def _file(example: str) -> Any:
    """attrs validator: a path that names a file (``config_file``, the logs), as a string.

    ``""`` and a blank one name no file; one ending in ``/`` (or ``.``, ``..``) names a folder, and
    ``json_log_file = "logs/"`` would write the event log to a file called ``logs`` and then fail on
    the episode log inside it, after the episode began.
    """

    def check(inst: object, attribute: attrs.Attribute[Any], value: str) -> None:
        non_empty(inst, attribute, value)
        if not value.strip():
            raise Problem(f'must not be blank: name the file (e.g. "{example}")', key=attribute.name)
        if value.endswith(("/", os.sep)) or os.path.basename(value) in (".", ".."):
            raise Problem(
                f"must name a file, not a folder, got {show(value)}: write the file's name too "
                f'(e.g. "{example}")',
                key=attribute.name,
            )
        _as_written(inst, attribute, value)

    return check


@frozen(kw_only=True)
class McpSettings:
    """``[tool.zorkgpt.mcp]`` (seeds 000 §Configuration; Requirement 13 defaults)."""

    enabled: bool = field(default=False, validator=boolean)
    config_file: str = field(default="mcp_config.json", validator=_file("mcp_config.json"))
    max_tool_iterations: int = field(default=20, validator=in_range(0, 1000, integer=True))
    tool_call_timeout_seconds: float = field(default=30, validator=_seconds)
    server_startup_timeout_seconds: float = field(default=10, validator=_seconds)
    force_tool_support: bool = field(default=False, validator=boolean)
    max_result_bytes: int = field(
        default=DEFAULT_MAX_RESULT_BYTES, validator=in_range(0, 1 << 30, what="1 GiB", integer=True)
    )
    turn_timeout_seconds: float | None = field(default=None, validator=optional(_seconds))


def _http_url(inst: object, attribute: attrs.Attribute[Any], value: str | None) -> None:
    """attrs validator: a model endpoint the HTTP client can use (else every request would fail, or
    with no API key the offline model would play without a word about the URL)."""
    if value is None:
        return
    optional_string(inst, attribute, value)
    problem = url_problem(value, example="https://openrouter.ai/api/v1")
    if problem is not None:
        raise Problem(problem, key=attribute.name)


_VARIABLE_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _looks_like_a_key(value: str) -> bool:
    """Whether ``value`` may be an API key itself rather than a variable's name (never show it then).

    Keys are long runs of letters and digits, often with ``-`` (``sk-or-v1-…``, ``sk-ant-…``: no
    variable's name, so only whether to show it is decided here) and sometimes in a variable's own
    alphabet (Groq's ``gsk_…``: mixed case with digits, 32 or more long, which no one names a variable).
    """
    if len(value) >= 20 and "-" in value:
        return True
    mixed = any(c.islower() for c in value) and any(c.isupper() for c in value)
    return len(value) >= 32 and mixed and any(c.isdigit() for c in value)


def _variable(inst: object, attribute: attrs.Attribute[Any], value: str | None) -> None:
    """attrs validator of ``api_key_env``: ``None`` or the name of an environment variable.

    A blank name would silently read the default variables instead; a name no shell can export
    (``MY KEY``) is never set. A value that may be the key itself (pasted where its variable's name
    goes) is never shown: it would reach the terminal and the logs in the offline model's notice.
    """
    if value is None:
        return
    optional_string(inst, attribute, value)
    if not value.strip():
        raise Problem(
            "must not be blank: name the environment variable that holds the API key (e.g. "
            '"MY_KEY_VARIABLE"), or leave the key out to read OPENROUTER_API_KEY for OpenRouter and '
            "OPENAI_API_KEY for any other endpoint",
            key=attribute.name,
        )
    if _VARIABLE_NAME.fullmatch(value) and not _looks_like_a_key(value):
        return
    if _looks_like_a_key(value):
        raise Problem(
            "must name the environment variable that holds the API key, not hold the key (its value "
            "is not shown): export the key, e.g. MY_KEY_VARIABLE=…, and write "
            'api_key_env = "MY_KEY_VARIABLE"',
            key=attribute.name,
        )
    raise Problem(
        f"must be the name of an environment variable (letters, digits and _, not starting with a "
        f'digit, e.g. "MY_KEY_VARIABLE"), got {show(value)}',
        key=attribute.name,
    )


def _not_blank(what: str, remedy: str) -> Any:
    """attrs validator: ``None`` or a string that is not blank (a blank one would be sent, or read, as is)."""

    def check(inst: object, attribute: attrs.Attribute[Any], value: str | None) -> None:
        optional_string(inst, attribute, value)
        if value is not None and not value.strip():
            raise Problem(f"must not be blank: {what}, or leave the key out {remedy}", key=attribute.name)

    return check


@frozen(kw_only=True)
class LLMSettings:
    """``[tool.zorkgpt.llm]``: where the agent's model lives."""

    client_base_url: str | None = field(default=None, validator=_http_url)
    agent_model: str | None = field(
        default=None,
        validator=_not_blank('name the model (e.g. "openai/gpt-4o-mini")', "for the default model"),
    )
    agent_base_url: str | None = field(default=None, validator=_http_url)
    api_key_env: str | None = field(default=None, validator=_variable)
    cache_control: bool = field(default=True, validator=boolean)
    """Mark system and user messages for prompt caching (Requirement 4.7); strict OpenAI-compatible
    endpoints that reject the field need ``false``."""


@frozen(kw_only=True)
class RetrySettings:
    """``[tool.zorkgpt.retry]``."""

    max_retries: int = field(default=5, validator=in_range(0, 100, low_open=False, integer=True))
    initial_delay: float = field(default=1.0, validator=_delay)
    max_delay: float = field(default=60.0, validator=_delay)
    exponential_base: float = field(default=2.0, validator=in_range(1, 100, low_open=False))
    jitter_factor: float = field(default=0.1, validator=_unit)
    timeout_seconds: float = field(default=120.0, validator=_seconds)
    retry_on_timeout: bool = field(default=True, validator=boolean)
    retry_on_rate_limit: bool = field(default=True, validator=boolean)
    retry_on_server_error: bool = field(default=True, validator=boolean)


@frozen(kw_only=True)
class SamplingSettings:
    """``[tool.zorkgpt.agent_sampling]`` (the ranges OpenAI-compatible servers accept)."""

    temperature: float | None = field(default=None, validator=optional(in_range(0, 2, low_open=False)))
    top_p: float | None = field(default=None, validator=optional(_unit))
    top_k: int | None = field(
        default=None, validator=optional(in_range(0, 1_000_000, low_open=False, integer=True))
    )
    min_p: float | None = field(default=None, validator=optional(_unit))
    max_tokens: int | None = field(default=None, validator=optional(in_range(0, 10_000_000, integer=True)))


def _home(path: str) -> str:
    """``~/logs/x.jsonl`` is in the home folder, as in ``game_file_path`` and ``config_file``.

    Anything but a string without a NUL byte is left as it is, for the validator to refuse.
    """
    return os.path.expanduser(path) if isinstance(path, str) and "\0" not in path else path


@frozen(kw_only=True)
class FilesSettings:
    """``[tool.zorkgpt.files]``."""

    game_file_path: str | None = field(
        default=None,
        validator=[
            _not_blank("give the story file", "to play the Zork I that ships with the package"),
            _as_written,
        ],
    )
    json_log_file: str = field(
        default="logs/zorkmcp_events.jsonl", converter=_home, validator=_file("logs/zorkmcp_events.jsonl")
    )
    episode_log_file: str = field(
        default="logs/episode.log", converter=_home, validator=_file("logs/episode.log")
    )


@frozen(kw_only=True)
class OrchestratorSettings:
    """``[tool.zorkgpt.orchestrator]``."""

    max_turns_per_episode: int = field(default=500, validator=in_range(0, 1_000_000, integer=True))


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
    """Everything read from one ``pyproject.toml``; ``Settings()`` is the loader's defaults."""

    mcp: McpSettings = field(factory=McpSettings, validator=instance_of(McpSettings))
    llm: LLMSettings = field(factory=LLMSettings, validator=instance_of(LLMSettings))
    retry: RetrySettings = field(factory=RetrySettings, validator=instance_of(RetrySettings))
    agent_sampling: SamplingSettings = field(
        factory=SamplingSettings, validator=instance_of(SamplingSettings)
    )
    files: FilesSettings = field(factory=FilesSettings, validator=instance_of(FilesSettings))
    orchestrator: OrchestratorSettings = field(
        factory=OrchestratorSettings, validator=instance_of(OrchestratorSettings)
    )
    source: Path | None = field(default=None, converter=source_path)
    """The pyproject.toml these came from (``None`` for defaults); a ``str`` becomes a ``Path``."""

    @classmethod
    def embedded(cls) -> Settings:
        """The package's own defaults for ``zorkmcp play`` with no settings file.

        MCP is on, with :data:`EMBEDDED_MCP_CONFIG` (the think server, per turn); everything
        else is the loader's defaults, so the model is the offline scripted one unless an API
        key or ``--base-url`` says otherwise.
        """
        return cls(mcp=McpSettings(enabled=True, config_file=str(EMBEDDED_MCP_CONFIG)))

    @classmethod
    def load(cls, path: str | os.PathLike[str] | None = None) -> Settings:
        """The settings ``zorkmcp play`` uses: the file's, or :meth:`embedded` when it has none.

        Args:
            path: the ``pyproject.toml`` (a ``str`` or a path); default the one in the current directory.

        Returns:
            :meth:`from_pyproject` when the file exists and has a ``[tool.zorkgpt]`` table, else
            :meth:`embedded` (``source`` is ``None``).

        Raises:
            ConfigError: as :meth:`from_pyproject`.
        """
        file = Path("pyproject.toml" if path is None else path)
        document = _read_toml(file)
        if document is not None and (problems := _misnamed_tables(document)):
            raise ConfigError(summarize(problems, str(file)))
        if document is None or not _has_zorkgpt(document):
            return cls.embedded()
        return cls._from_document(document, file)

    @classmethod
    def from_pyproject(cls, path: str | os.PathLike[str] | None = None) -> Settings:
        """Read the ``[tool.zorkgpt.*]`` sections of a ``pyproject.toml``.

        Like ZorkGPT's ``GameConfiguration.from_toml()`` (seeds 000 §GameConfiguration
        Extensions): a missing file or a missing section gives the defaults (Requirement 13).
        In ``[tool.zorkgpt.mcp]`` unknown keys, wrong types and out-of-range numbers are
        errors. The other sections are shared with ZorkGPT, so unknown keys there are
        ignored, but keys we know must have the right type and range. Booleans must be TOML
        booleans; integers are accepted where numbers are expected, not the other way round.

        Args:
            path: the file to read (a ``str`` or a path); defaults to ``pyproject.toml`` in the
                current directory.

        Returns:
            The settings, with ``source`` set to the file's absolute path (``None`` when the
            file does not exist).

        Raises:
            ConfigError: the file is not valid TOML or a value breaks a rule; the message
                names the key, the file and the section.
        """
        file = Path("pyproject.toml" if path is None else path)
        document = _read_toml(file)
        if document is not None and (problems := _misnamed_tables(document)):
            raise ConfigError(summarize(problems, str(file)))
        return cls() if document is None else cls._from_document(document, file)

    @classmethod
    def _from_document(cls, document: dict[str, Any], path: Path) -> Settings:
        tool = document.get("tool", {})
        if not isinstance(tool, dict):
            raise ConfigError(
                f"tool must be a table ([tool.zorkgpt.mcp] and the like), got {show(tool)} ({path})"
            )
        zorkgpt = tool.get("zorkgpt", {})
        if not isinstance(zorkgpt, dict):
            raise ConfigError(f"[tool.zorkgpt] must be a table, got {show(zorkgpt)} ({path})")
        if problems := _stray_sections(zorkgpt):
            raise ConfigError(summarize(problems, f"{path} [tool.zorkgpt]"))
        sections: dict[str, Any] = {}
        for name, model, strict in _SECTIONS:
            table = zorkgpt.get(name, {})
            if not isinstance(table, dict):
                raise ConfigError(f"[tool.zorkgpt.{name}] must be a table, got {show(table)} ({path})")
            where = f"{path} [tool.zorkgpt.{name}]"
            if not strict:
                if problems := _slips(name, table):
                    raise ConfigError(summarize(problems, where))
                known = _KEYS[name]
                table = {k: v for k, v in table.items() if k in known}
            slipped = _slipped_keys(name, table) if strict else {}
            table = {k: v for k, v in table.items() if k not in slipped}
            try:
                sections[name] = structure(table, model, where=where, style="toml", also=slipped.values())
            except RecursionError as exc:
                raise ConfigError(f"[tool.zorkgpt.{name}] is nested too deeply ({path})") from exc
        return cls(**sections, source=path.absolute())

    def mcp_config_path(self) -> Path:
        """Where ``mcp_config.json`` is: ``config_file`` resolved against the pyproject's folder.

        An absolute ``config_file`` (``~`` is expanded) is used as is; a relative one is
        relative to the folder of :attr:`source`, or to the current directory for the
        defaults.
        """
        configured = Path(self.mcp.config_file).expanduser()
        if configured.is_absolute():
            return configured
        base = self.source.parent if self.source is not None else Path.cwd()
        return base / configured


_KEYS: Final[dict[str, tuple[str, ...]]] = {
    name: tuple(a.name for a in attrs.fields(model)) for name, model, _ in _SECTIONS
}
"""The keys zorkmcp reads in each section, in declaration order."""

_ALIASES: Final[dict[str, dict[str, str]]] = {
    "llm": {"model": "agent_model", "base_url": "client_base_url", "api_base": "client_base_url"},
    "orchestrator": {"max_turns": "max_turns_per_episode"},
}
"""Keys users write for ours (an eval arm's ``model`` and ``base_url``, ``--turns``): zorkmcp's name."""

_SECRET_KEY: Final = re.compile(r".*apikey|key|(auth|access|api|bearer)?token|secret|password")
"""Folded keys (:func:`~._convert.fold_key`) that hold a secret: zorkmcp reads none from a file."""


def _home_of(key: str, but: str | None = None) -> str | None:
    """The section (not ``but``) one of whose keys ``key`` is, but for case, ``-`` and ``_``."""
    folded = fold_key(key)
    for name, keys in _KEYS.items():
        if name != but and any(fold_key(k) == folded for k in keys):
            return name
    return None


def _slips(section: str, table: dict[str, Any]) -> list[str]:
    """Keys of a section shared with ZorkGPT that are not ZorkGPT's but a slip of the user's.

    Such a section ignores the keys zorkmcp does not read (ZorkGPT's ``critic_model``); a typo of
    one it reads (``agent_modle``), one of another section's keys (``temperature`` in ``llm``), another
    tool's name for it (``model``) or an API key would then be ignored silently, and the episode would
    run with the default instead. Each is a line naming the key and what to write.
    """
    known = _KEYS[section]
    reads = f"zorkmcp reads {', '.join(known)} here and leaves other keys to ZorkGPT"
    problems: list[str] = []
    for key in table:
        if key in known:
            continue
        if section == "llm" and _SECRET_KEY.fullmatch(fold_key(key)):
            problems.append(
                f"{key}: zorkmcp reads no API key from a file (it would end up in version control): "
                "export it as OPENROUTER_API_KEY (sent only to OpenRouter) or OPENAI_API_KEY (sent to any "
                "other endpoint), or name its variable with api_key_env, and remove this key"
            )
        elif (home := _home_of(key, but=section)) is not None:
            problems.append(f"{key} belongs in [tool.zorkgpt.{home}], not here: move it there")
        elif (alias := _ALIASES.get(section, {}).get(key.casefold())) is not None:
            problems.append(f"unknown key {key!r}: zorkmcp's name for it is {alias!r} ({reads})")
        elif (meant := near_miss(key, known)) is not None:
            problems.append(f"unknown key {key!r}: did you mean {meant!r}? ({reads})")
    return problems


def _slipped_keys(section: str, table: dict[str, Any]) -> dict[str, str]:
    """The unknown keys of a section that is zorkmcp's alone (``[tool.zorkgpt.mcp]``) whose meaning is plain.

    A slip of one of its keys (``enable``, ``Enabled``, ``max-tool-iterations``, the start of one alone:
    ``tool_call_timeout``; did you mean...?) or a key
    of another section (``temperature``: move it there), each with its line; any other unknown key is
    left to the converter, whose line lists the keys allowed.
    """
    known = _KEYS[section]
    found: dict[str, str] = {}
    for key in table:
        if key in known:
            continue
        folded = fold_key(key)
        longer = [k for k in known if len(folded) >= 6 and fold_key(k).startswith(folded)]
        if (meant := near_miss(key, known) or (longer[0] if len(longer) == 1 else None)) is not None:
            found[key] = f"unknown key {key!r}: did you mean {meant!r}?"
        elif (home := _home_of(key, but=section)) is not None:
            found[key] = f"{key} belongs in [tool.zorkgpt.{home}], not here: move it there"
    return found


_TABLE_NAMES: Final = ("zorkgpt", "zorkmcp")
"""What a table meant for zorkmcp may be called: ``zorkgpt``, or the package's own name."""


def _misnamed_tables(document: dict[str, Any]) -> list[str]:
    """Tables plainly meant for zorkmcp that it would not read, and silently play with other settings.

    ``[tool.zorkmcp.mcp]`` (the package's name, not ZorkGPT's), ``[tool.zorkgtp]``, ``[tool.ZorkGPT]``,
    ``[tools.zorkgpt.mcp]`` and ``[zorkgpt.mcp]`` (no ``tool.``): with no ``[tool.zorkgpt]``
    ``zorkmcp play`` would use its embedded defaults, and beside one the table would be ignored.
    """
    problems: list[str] = []

    def meant(table: str) -> bool:
        return table != "zorkgpt" and (table == "zorkmcp" or near_miss(table, _TABLE_NAMES) is not None)

    def rename(written: str, value: object) -> str:
        inner = [k for k, v in value.items() if isinstance(v, dict)] if isinstance(value, dict) else []
        sub = f".{inner[0]}" if inner else ""
        example = f"[{written}{sub}] to [tool.zorkgpt{sub}]"
        return (
            f"[{written}] is not read: zorkmcp's settings are the [tool.zorkgpt.*] tables, as ZorkGPT's "
            f"({', '.join(_KEYS)}): rename {example}"
        )

    for key, value in document.items():
        if key == "tool":
            if isinstance(value, dict):
                problems += [
                    rename(f"tool.{k}", v) for k, v in value.items() if isinstance(v, dict) and meant(k)
                ]
        elif isinstance(value, dict) and (key.casefold() == "zorkgpt" or meant(key)):
            problems.append(rename(key, value))
        elif isinstance(value, dict) and near_miss(key, ("tool",)) is not None:
            problems += [
                rename(f"{key}.{k}", v)
                for k, v in value.items()
                if isinstance(v, dict) and (k == "zorkgpt" or meant(k))
            ]
    return problems


def _stray_sections(zorkgpt: dict[str, Any]) -> list[str]:
    """What in ``[tool.zorkgpt]`` itself looks meant for a section zorkmcp reads and would be ignored.

    A table named like one of ours but for a slip (``[tool.zorkgpt.MCP]``, ``[tool.zorkgpt.mpc]``),
    and a key of one of our sections written in ``[tool.zorkgpt]`` itself (``enabled = true`` right
    under it). ZorkGPT's own sections (``gameplay``, ``critic_sampling``...) are left alone.
    """
    names = tuple(_KEYS)
    problems: list[str] = []
    for key, value in zorkgpt.items():
        if key in _KEYS:
            continue
        if isinstance(value, dict):
            if (meant := near_miss(key, names)) is not None:
                problems.append(
                    f"[tool.zorkgpt.{key}] is not a section zorkmcp reads: did you mean "
                    f"[tool.zorkgpt.{meant}]? (it reads {', '.join(names)})"
                )
        elif (home := _home_of(key)) is not None:
            problems.append(
                f"{key} belongs in [tool.zorkgpt.{home}], not in [tool.zorkgpt] itself: move it there"
            )
    return problems


def _has_zorkgpt(document: dict[str, Any]) -> bool:
    tool = document.get("tool")
    return isinstance(tool, dict) and "zorkgpt" in tool


def check_settings_file(path: str | os.PathLike[str], *, given: str | None = None, remedy: str = "") -> None:
    """A ``--pyproject`` given must be there (without the flag, a missing ``./pyproject.toml`` means
    the embedded defaults); a named pipe (``--pyproject <(…)``) is read as a file.

    Args:
        path: the settings file (a ``str`` or a path).
        given: how the caller named it (default ``--pyproject PATH``).
        remedy: what the message ends with (e.g. `` (leave pyproject out for ./pyproject.toml)``).

    Raises:
        ConfigError: it does not exist, is a folder, or cannot be looked at; one line.
    """
    path = Path(path)
    given = given if given is not None else f"--pyproject {path}"
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise ConfigError(f"{given}: no such file{remedy}") from None
    except OSError as exc:
        raise ConfigError(f"{given}: cannot be read: {exc.strerror or exc}{remedy}") from None
    if stat.S_ISDIR(mode):
        raise ConfigError(f"{given}: is a folder, not a settings file{remedy}")


def _read_toml(path: Path) -> dict[str, Any] | None:
    """The parsed file, ``None`` when it does not exist; every other failure is a ConfigError."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise ConfigError(
            f"{path} is a folder, not a settings file: give the pyproject.toml with --pyproject PATH"
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from exc
    try:
        text = raw.decode("utf-8-sig")  # a BOM (Notepad writes one) is no statement
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path} {not_utf8(raw, exc, located=True)}") from exc
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        hint = _json_instead(path, text) or _toml_hint(text, str(exc)) or _twice_hint(text, str(exc))
        raise ConfigError(f"invalid TOML in {path}: {exc}{hint}") from exc
    except RecursionError as exc:
        raise ConfigError(f"invalid TOML in {path}: tables or arrays nested too deeply") from exc
    except ValueError as exc:  # an integer longer than Python converts (4300 digits)
        raise ConfigError(f"invalid TOML in {path}: {_too_long(exc)}") from exc


def not_utf8(raw: bytes, exc: UnicodeDecodeError, *, located: bool = False) -> str:
    """The end of the sentence that names a file which is not UTF-8: where, and what to do.

    UTF-16 is named: Windows PowerShell 5's ``>`` and ``Out-File`` write it, so a file made there is
    UTF-16 from its first byte. ``located``: the line and column of the first bad byte, and the fix
    (a Latin-1 ``é`` in a comment is found by its line, not by counting bytes).
    """
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return (
            "is UTF-16 (Windows PowerShell's > and Out-File write it), not UTF-8: save it as UTF-8 "
            "(Out-File -Encoding utf8, or your editor's encoding menu)"
        )
    if not located:
        return f"is not valid UTF-8 (byte {exc.start})"
    before = raw[: exc.start]
    line, column = before.count(b"\n") + 1, exc.start - (before.rfind(b"\n") + 1) + 1
    return (
        f"is not valid UTF-8 (byte {exc.start}) at line {line}, column {column} "
        f"(0x{raw[exc.start]:02x}): save it as UTF-8 (your editor's encoding menu)"
    )


def _json_instead(path: Path, text: str) -> str:
    """``--pyproject mcp_config.json``: the servers' file given where the settings go (``""``: not so)."""
    if path.suffix.lower() != ".json" and not text.lstrip().startswith("{"):
        return ""
    return (
        " (it looks like JSON: this is where the pyproject.toml goes; name an mcp_config.json with "
        "config_file in its [tool.zorkgpt.mcp], or with --config for zorkmcp tools and call)"
    )


_TOML_AT: Final = re.compile(r"\(at line (\d+), column (\d+)\)$")
_TOML_WORDS: Final[dict[str, str]] = {
    **dict.fromkeys(("True", "TRUE", "False", "FALSE"), "TOML's booleans are lowercase: true or false"),
    **dict.fromkeys(("yes", "Yes", "no", "No", "on", "off"), "TOML's booleans are true and false"),
    **dict.fromkeys(("None", "none", "null", "Null", "NULL", "nil"), "TOML has no null: leave the key out"),
}


def _toml_hint(text: str, message: str) -> str:
    """What a Python or YAML habit looks like where ``tomllib`` found an invalid value (``""``: none).

    ``enabled = True`` and ``api_key_env = None`` are Python; ``agent_model = gpt-4o`` needs quotes.
    """
    match = _TOML_AT.search(message)
    if match is None or not message.startswith("Invalid value"):
        return ""
    lines = text.splitlines()
    line, column = int(match[1]), int(match[2])
    if not 0 < line <= len(lines):
        return ""
    rest = lines[line - 1][column - 1 :].split("#", 1)[0].strip()
    word = re.match(r"[A-Za-z_][\w./:@-]*", rest)
    if word is None:
        return ""
    if (hint := _TOML_WORDS.get(word[0])) is not None:
        return f" ({hint})"
    if (meant := near_miss(word[0], ("true", "false"))) is not None:
        return f" (did you mean {meant}?)"
    if _looks_like_a_key(rest) or "key" in lines[line - 1][: column - 1].casefold():
        return " (a string needs quotes; the value is not shown)"
    return f' (a string needs quotes: "{rest}")'


def _twice_hint(text: str, message: str) -> str:
    """A key or a table written twice: which, and what to do (``""``: not that mistake)."""
    match = _TOML_AT.search(message)
    declared = re.match(r"Cannot declare \((.*)\) twice", message)
    if match is not None and declared is not None:
        try:
            table = ".".join(ast.literal_eval(f"({declared[1]},)"))
        except (ValueError, SyntaxError, TypeError):
            return ""
        return f" ([{table}] is written twice: merge the two into one)"
    if match is None or not message.startswith("Cannot overwrite a value"):
        return ""
    lines = text.splitlines()
    line = int(match[1])
    if not 0 < line <= len(lines):
        return ""
    if lines[line - 1].lstrip().startswith("["):  # a table over a key already set: no one key to name
        return ""
    key = lines[line - 1].split("=", 1)[0].strip()
    shown = key if _VARIABLE_NAME.fullmatch(key.replace("-", "_").replace(".", "_")) else "a key"
    return f" ({shown} is set twice in one table: keep one)"


def _too_long(exc: ValueError) -> str:
    if "digits" in str(exc):
        return f"a number has more than {sys.get_int_max_str_digits()} digits"
    return str(exc)
