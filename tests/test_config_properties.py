"""Property tests for configuration loading (seeds 001: properties 4, 5 and 45; ${VAR} expansion)."""

from __future__ import annotations

import json
import math
import re
import tempfile
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from zorkmcp.config import (
    FilesSettings,
    LLMSettings,
    McpConfig,
    McpSettings,
    OrchestratorSettings,
    RetrySettings,
    SamplingSettings,
    Settings,
)
from zorkmcp.errors import ConfigError

# Requirement 13 (seeds 002) / property 45: the defaults, written out independently of the model.
REQUIREMENT_13_DEFAULTS: dict[str, Any] = {
    "enabled": False,
    "config_file": "mcp_config.json",
    "max_tool_iterations": 20,
    "tool_call_timeout_seconds": 30,
    "server_startup_timeout_seconds": 10,
    "force_tool_support": False,
}


def toml_value(value: object) -> str:
    """A TOML literal for a bool, int, float or str (a tiny writer: tomllib only reads)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    assert isinstance(value, str)
    out = []
    for ch in value:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def load_toml(text: str) -> Settings:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "pyproject.toml"
        path.write_text(text, encoding="utf-8")
        return Settings.from_pyproject(path)


# Strings never hold a NUL byte (the OS refuses them in paths, arguments and environments).
_no_nul = st.characters(exclude_characters="\0", exclude_categories=("Cs",))  # no NUL, no lone surrogate
# Seconds are in (0, 604800]: one week at most.
_seconds = st.integers(min_value=1, max_value=604_800) | st.floats(
    min_value=0, max_value=604_800, exclude_min=True, allow_nan=False
)


def _names_a_file(path: str) -> bool:
    """What ``config_file`` takes: not blank, no folder (``x/``, ``.``, ``..``), no ``$VAR``/``%VAR%``."""
    last = path.rsplit("/", 1)[-1]
    return bool(path.strip()) and last not in ("", ".", "..") and "$" not in path and "%" not in path


MCP_VALUES: dict[str, st.SearchStrategy[Any]] = {
    "enabled": st.booleans(),
    "config_file": st.text(_no_nul, min_size=1).filter(_names_a_file),
    "max_tool_iterations": st.integers(min_value=1, max_value=1000),
    "tool_call_timeout_seconds": _seconds,
    "server_startup_timeout_seconds": _seconds,
    "force_tool_support": st.booleans(),
    "max_result_bytes": st.integers(min_value=1, max_value=2**30),
    "turn_timeout_seconds": _seconds,
}
# The upper bounds, as the messages say them, and values above them (inf included).
_day = ("604800 (one week)", st.floats(min_value=604_800, exclude_min=True) | st.integers(604_801, 2**63 - 1))
_ABOVE: dict[str, tuple[str, st.SearchStrategy[Any]]] = {
    "max_tool_iterations": ("1000", st.integers(min_value=1001, max_value=2**63 - 1)),
    "max_result_bytes": ("1073741824 (1 GiB)", st.integers(min_value=2**30 + 1, max_value=2**63 - 1)),
    "tool_call_timeout_seconds": _day,
    "server_startup_timeout_seconds": _day,
    "turn_timeout_seconds": _day,
}
_mcp_tables = st.fixed_dictionaries({}, optional=MCP_VALUES)
# Keys ZorkGPT users have in the shared tables, which we ignore.
_foreign_keys = st.dictionaries(
    st.sampled_from(
        ["critic_model", "info_ext_model", "analysis_model", "memory_model", "turn_delay_seconds"]
    ),
    st.text() | st.integers() | st.booleans(),
    max_size=3,
)


def mcp_toml(table: dict[str, Any], foreign: dict[str, Any] | None = None) -> str:
    lines = ["[project]", 'name = "someone-elses-project"', "", "[tool.zorkgpt.mcp]"]
    lines += [f"{key} = {toml_value(value)}" for key, value in table.items()]
    if foreign is not None:
        lines += ["", "[tool.zorkgpt.llm]"] + [f"{k} = {toml_value(v)}" for k, v in foreign.items()]
    return "\n".join(lines) + "\n"


@settings(max_examples=100)
@given(_mcp_tables, _foreign_keys)
def test_property_4_valid_mcp_tables_load_with_equal_values(
    table: dict[str, Any], foreign: dict[str, Any]
) -> None:
    settings_ = load_toml(mcp_toml(table, foreign))
    for key, value in table.items():
        loaded = getattr(settings_.mcp, key)
        assert loaded == value
        assert type(loaded) is type(value)
    assert settings_.mcp == McpSettings(**table)


@settings(max_examples=100)
@given(_mcp_tables)
def test_property_45_missing_keys_get_the_requirement_13_defaults(table: dict[str, Any]) -> None:
    settings_ = load_toml(mcp_toml(table))
    for key, default in REQUIREMENT_13_DEFAULTS.items():
        if key not in table:
            assert getattr(settings_.mcp, key) == default
    if "max_result_bytes" not in table:
        assert settings_.mcp.max_result_bytes == 64 * 1024
    if "turn_timeout_seconds" not in table:
        assert settings_.mcp.turn_timeout_seconds is None


_wrong_for: dict[str, st.SearchStrategy[Any]] = {
    "bool": st.integers() | st.text() | st.floats(allow_nan=False),
    "int": st.booleans() | st.text() | st.floats(allow_nan=False),
    "number": st.booleans() | st.text(),
    "str": st.booleans() | st.integers() | st.floats(allow_nan=False),
}
_kind = {
    "enabled": "bool",
    "force_tool_support": "bool",
    "config_file": "str",
    "max_tool_iterations": "int",
    "max_result_bytes": "int",
    "tool_call_timeout_seconds": "number",
    "server_startup_timeout_seconds": "number",
    "turn_timeout_seconds": "number",
}
_must_be = {"bool": "true or false", "int": "an integer", "number": "a number", "str": "a string"}


@settings(max_examples=100)
@given(_mcp_tables, st.data())
def test_wrong_types_and_out_of_range_numbers_name_the_key_and_file(
    table: dict[str, Any], data: st.DataObject
) -> None:
    key = data.draw(st.sampled_from(sorted(_kind)))
    kind = _kind[key]
    if key in _ABOVE and data.draw(st.booleans()):
        bound, above = _ABOVE[key]
        table[key] = data.draw(above)
        expected = f"{key} must be <= {bound}, got "
    elif kind in ("int", "number") and data.draw(st.booleans()):
        non_positive: st.SearchStrategy[float] = st.integers(max_value=0)
        if kind == "number":
            non_positive |= st.floats(max_value=0, allow_infinity=True) | st.just(math.nan)
        table[key] = data.draw(non_positive)
        expected = f"{key} must be > 0, got "
    else:
        table[key] = data.draw(_wrong_for[kind])
        expected = f"{key} must be {_must_be[kind]}, got "
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "pyproject.toml"
        path.write_text(mcp_toml(table), encoding="utf-8")
        with pytest.raises(ConfigError, match=re.escape(expected)) as excinfo:
            Settings.from_pyproject(path)
    assert f"({path} [tool.zorkgpt.mcp])" in str(excinfo.value)


@settings(max_examples=100)
@given(st.text(alphabet=st.characters(min_codepoint=ord("a"), max_codepoint=ord("z")), min_size=1)
       .filter(lambda k: k not in MCP_VALUES))  # fmt: skip
def test_unknown_mcp_keys_are_errors(key: str) -> None:
    # the keys allowed, or the one meant when it is plain (a slip: "config" for config_file), or the
    # table a key of another one belongs in ("temperature")
    said = (
        rf"(unknown key '{key}' \(allowed: enabled, .*|unknown key '{key}': did you mean '[a-z_]+'\?"
        rf"|{key} belongs in \[tool\.zorkgpt\.[a-z_]+\], not here: move it there)"
    )
    with pytest.raises(ConfigError, match=rf"{said} \(.*\[tool\.zorkgpt\.mcp\]\)$"):
        load_toml(f"[tool.zorkgpt.mcp]\n{key} = 1\n")


# --- built in Python: the same rules as the file -------------------------------------------------

_SECTIONS: dict[str, type[Any]] = {
    "mcp": McpSettings,
    "llm": LLMSettings,
    "retry": RetrySettings,
    "agent_sampling": SamplingSettings,
    "files": FilesSettings,
    "orchestrator": OrchestratorSettings,
}
# What a TOML file can hold in a key, and toml_value can write: no lone surrogate (not UTF-8).
_toml_scalars = (
    st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats()
    | st.text(st.characters(exclude_categories=("Cs",)), max_size=20)
)


@settings(max_examples=300)
@given(st.sampled_from(sorted(_SECTIONS)), st.data())
def test_a_settings_class_built_in_python_refuses_what_its_table_refuses(
    section: str, data: st.DataObject
) -> None:
    """``McpSettings(key=value)`` raises ConfigError exactly when ``key = value`` in the file is an error,
    and with the file's words for a range (a type says True/False, where the file says true/false)."""
    model = _SECTIONS[section]
    key = data.draw(st.sampled_from([field.name for field in attrs.fields(model)]))
    value = data.draw(_toml_scalars)
    file_problem = built_problem = None
    try:
        from_file = getattr(load_toml(f"[tool.zorkgpt.{section}]\n{key} = {toml_value(value)}\n"), section)
    except ConfigError as exc:
        file_problem = str(exc)
    try:
        built = model(**{key: value})
    except ConfigError as exc:
        built_problem = str(exc)
    assert (built_problem is None) == (file_problem is None), (built_problem, file_problem)
    if built_problem is None:
        assert built == from_file
    else:
        assert file_problem is not None
        in_file_words = built_problem.replace("must be True or False", "must be true or false")
        assert file_problem.startswith(f"{in_file_words} (")
        assert file_problem.endswith(f" [tool.zorkgpt.{section}])")


# --- property 5: invalid JSON ------------------------------------------------------------------

_VALID = json.dumps(
    {"mcpServers": {"thoughtbox": {"command": "npx", "args": ["-y", "thoughtbox"]}}}, indent=2
)


@st.composite
def invalid_json_texts(draw: st.DrawFn) -> str:
    """Random text, or the valid example with a character deleted, replaced or inserted."""
    if draw(st.booleans()):
        text = draw(st.text())
    else:
        i = draw(st.integers(0, len(_VALID) - 1))
        junk = draw(st.sampled_from([*list('{}[],:"\\x \n'), "//", "'", "tru", "1.", "\t"]))
        text = draw(st.sampled_from([_VALID[:i] + _VALID[i + 1 :], _VALID[:i] + junk + _VALID[i + 1 :],
                                     _VALID[:i] + junk + _VALID[i:]]))  # fmt: skip
    try:
        json.loads(text.removeprefix("\ufeff"))
    except ValueError as exc:
        assume(isinstance(exc, json.JSONDecodeError))
        return text
    assume(False)
    raise AssertionError("unreachable")


@settings(max_examples=100)
@given(invalid_json_texts())
def test_property_5_invalid_json_is_rejected_with_line_and_column(text: str) -> None:
    try:
        json.loads(text.removeprefix("\ufeff"))
    except json.JSONDecodeError as exc:
        lineno, colno = exc.lineno, exc.colno
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "mcp_config.json"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(
            ConfigError, match=rf"^invalid JSON in .*mcp_config\.json at line {lineno}, column {colno}: "
        ):
            McpConfig.from_file(path)


# --- ${VAR} expansion -------------------------------------------------------------------------

_names = st.from_regex(r"[A-Z_][A-Z0-9_]{0,8}", fullmatch=True)
# No lone surrogates (category Cs): no file can hold one, and the loader rejects them by design.
_literal = st.text(st.characters(exclude_characters="$}\0", exclude_categories=("Cs",)), max_size=5)
_default = st.none() | st.text(
    st.characters(exclude_characters="}\0", exclude_categories=("Cs",)), max_size=5
)


@st.composite
def templates(draw: st.DrawFn) -> tuple[str, list[tuple[str, str | None] | str]]:
    pieces: list[tuple[str, str | None] | str] = draw(
        st.lists(_literal | st.tuples(_names, _default), max_size=5)
    )
    text = "".join(p if isinstance(p, str) else f"${{{p[0]}}}" if p[1] is None else f"${{{p[0]}:-{p[1]}}}"
                   for p in pieces)  # fmt: skip
    return text, pieces


def expected_expansion(pieces: list[tuple[str, str | None] | str], environ: dict[str, str]) -> str | None:
    """Shell semantics of ${NAME} and ${NAME:-default}; None when an unset name has no default."""
    out = []
    for piece in pieces:
        if isinstance(piece, str):
            out.append(piece)
            continue
        name, default = piece
        value = environ.get(name)
        if default is None:
            if value is None:
                return None
            out.append(value)
        else:
            out.append(value if value else default)
    return "".join(out)


@settings(max_examples=100)
@given(templates(), st.dictionaries(_names, st.text(_no_nul, max_size=5)))
def test_variable_expansion_round_trips(
    template: tuple[str, list[tuple[str, str | None] | str]], environ: dict[str, str]
) -> None:
    text, pieces = template
    expected = expected_expansion(pieces, environ)
    data = {"mcpServers": {"s": {"command": "python3", "args": ["-m", text], "env": {"V": text}}}}
    if expected is None:
        missing = next(
            p[0] for p in pieces if not isinstance(p, str) and p[1] is None and p[0] not in environ
        )
        with pytest.raises(ConfigError, match=re.escape(f"$.mcpServers.s.args[1] uses ${{{missing}}}, but")):
            McpConfig.from_dict(data, environ=environ)
        return
    (server,) = McpConfig.from_dict(data, environ=environ).servers
    assert server.args == ("-m", expected)
    assert server.env == {"V": expected}


@settings(max_examples=100)
@given(
    st.lists(
        st.text(_no_nul, min_size=1).filter(lambda s: s.strip() and "$" not in s),  # "${" is a reference
        min_size=1,
        max_size=6,
        unique=True,
    )
)
def test_server_order_and_names_are_preserved(names: list[str]) -> None:
    data = {"mcpServers": {name: {"command": "python3", "args": [name]} for name in names}}
    config = McpConfig.from_dict(data)
    assert [s.name for s in config.servers] == names
    assert [s.args for s in config.servers] == [(name,) for name in names]


# --- hostile documents: accepted, or one ConfigError; never another exception --------------------

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | st.text(max_size=12)
)
_trees = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)
_SERVER_KEYS = ["type", "command", "args", "env", "cwd", "module", "disabled", "lifecycle", "timeout",
                "tools", "url", "autoApprove"]  # fmt: skip
_servers = st.dictionaries(st.sampled_from(_SERVER_KEYS), _trees, max_size=5) | _trees
_mcp_documents = st.one_of(
    _trees,
    st.fixed_dictionaries({"mcpServers": st.dictionaries(st.text(max_size=6), _servers, max_size=3)}),
    st.fixed_dictionaries({"servers": _servers | st.dictionaries(st.text(max_size=6), _servers, max_size=3)}),
)


@st.composite
def _deep(draw: st.DrawFn, opener: str, closer: str) -> str:
    depth = draw(st.integers(min_value=1, max_value=3000))
    return opener * depth + draw(st.sampled_from(["1", "", '"x"'])) + closer * depth


_json_texts = st.one_of(
    _mcp_documents.map(json.dumps),  # NaN and Infinity included: Python's json reads them
    st.binary(max_size=64).map(lambda raw: raw.decode("latin-1")),
    _deep("[", "]"),
    _deep('{"mcpServers": ', "}"),
    st.integers(min_value=4000, max_value=5000).map(lambda n: '{"mcpServers": ' + "9" * n + "}"),
)


def _toml_inline(value: object) -> str:
    """A TOML inline value for a tree (``None`` is no TOML value: an empty table stands for it)."""
    if value is None:
        return "{}"
    if isinstance(value, list):
        return "[" + ", ".join(_toml_inline(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {_toml_inline(v)}" for k, v in value.items()) + "}"
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    return toml_value(value)


_SECTION_NAMES = ["mcp", "llm", "retry", "agent_sampling", "files", "orchestrator", "other"]
_KEYS = sorted({*MCP_VALUES, "temperature", "top_p", "top_k", "max_tokens", "max_retries", "jitter_factor",
                "game_file_path", "max_turns_per_episode", "agent_model", "cache_control"})  # fmt: skip


@st.composite
def _toml_documents(draw: st.DrawFn) -> str:
    lines = []
    for section in draw(st.lists(st.sampled_from(_SECTION_NAMES), max_size=3, unique=True)):
        lines.append(f"[tool.zorkgpt.{section}]")
        table = draw(st.dictionaries(st.sampled_from(_KEYS) | st.text(max_size=5), _trees, max_size=4))
        lines += [f"{json.dumps(key)} = {_toml_inline(value)}" for key, value in table.items()]
    return "\n".join(lines) + "\n"


_toml_texts = st.one_of(
    _toml_documents(),
    st.binary(max_size=64).map(lambda raw: raw.decode("latin-1")),
    _deep("x = [", "]"),
    _deep("x = {a = ", "}"),
    st.integers(min_value=4000, max_value=5000).map(
        lambda n: "[tool.zorkgpt.mcp]\nmax_tool_iterations = " + "9" * n
    ),
)


def _accepted_or_config_error(load_it: Any) -> None:
    """Any exception but a ConfigError with a message (RecursionError, TypeError, ...) fails."""
    message = "accepted"
    try:
        load_it()
    except ConfigError as exc:
        message = str(exc)
    assert message.strip()


@settings(max_examples=200)
@given(_json_texts)
def test_any_mcp_config_document_is_accepted_or_one_config_error(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "mcp_config.json"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        _accepted_or_config_error(lambda: McpConfig.from_file(path, environ={}))


@settings(max_examples=200)
@given(_toml_texts)
def test_any_pyproject_document_is_accepted_or_one_config_error(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "pyproject.toml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        _accepted_or_config_error(lambda: Settings.from_pyproject(path))
        _accepted_or_config_error(lambda: Settings.load(path))
