"""The project's strict cattrs converter, its validators and its error lines.

One private :class:`cattrs.Converter` structures both files: a JSON ``1`` never becomes ``"1"``,
``true`` is not an integer, unknown keys are errors where the format is ours, no string holds a
NUL byte, and every message names the key (``$.mcpServers.thinking.args[1]``). Numbers are
checked against finite bounds (:func:`in_range`), so ``inf``, ``nan`` and absurd values are
refused with the bound in the message.

The validators also guard the classes built in Python (``McpSettings(enabled="yes")``): there they
raise :class:`Problem`, a :class:`~zorkmcp.errors.ConfigError` that names the attribute.
"""

from __future__ import annotations

import ast
import json
import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Final, Literal, TypeVar, get_args

import attrs
from cattrs import Converter, transform_error
from cattrs.cols import list_structure_factory, mapping_structure_factory
from cattrs.errors import BaseValidationError, ForbiddenExtraKeysError
from cattrs.gen import make_dict_structure_fn
from cattrs.v import format_exception as _cattrs_format_exception

from .._jsontypes import json_type_name
from ..errors import ConfigError

__all__ = [
    "DuplicateKeyError",
    "Problem",
    "boolean",
    "fold_key",
    "in_range",
    "instance_of",
    "json_path",
    "near_miss",
    "no_duplicate_keys",
    "non_empty",
    "one_of",
    "optional_string",
    "show",
    "source_path",
    "string",
    "string_mapping",
    "structure",
    "summarize",
]

_T = TypeVar("_T")

# --- validators -------------------------------------------------------------------------


class Problem(ConfigError, ValueError):
    """One broken rule about one value; ``key`` (if set) is the attribute the rule is about.

    ``str()`` reads as a sentence: ``"tool_call_timeout_seconds must be > 0, got -1"``. A class
    built in Python raises it as it is (a :class:`~zorkmcp.errors.ConfigError`, so ``except
    ZorkMCPError`` sees it; still a ``ValueError``, as before); the file loaders turn it into a
    line that also names the file and the key's path.
    """

    def __init__(self, problem: str, *, key: str | None = None) -> None:
        super().__init__(f"{key} {problem}" if key else problem)
        self.problem = problem
        self.key = key


def show(value: object) -> str:
    """``'1' (string)``: the value, shortened, and its JSON/TOML type."""
    try:
        text = repr(value)
    except RecursionError:
        text = "[...]" if isinstance(value, list) else "{...}"
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{text} ({json_type_name(value)})"


def boolean(inst: object, attribute: attrs.Attribute[Any], value: bool) -> None:
    """attrs validator: ``True`` or ``False`` (not ``"yes"``, not ``1``)."""
    if not isinstance(value, bool):
        raise Problem(f"must be True or False, got {show(value)}", key=attribute.name)


def _string_problem(value: object) -> str | None:
    """What is wrong with ``value`` as a string the OS may be given (``None``: nothing)."""
    if not isinstance(value, str):
        return f"must be a string, got {show(value)}"
    if "\0" in value:
        return f"must not contain a NUL byte, got {show(value)}"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a JSON "\ud800" escape: no OS can take it
        return f"must be valid Unicode (it holds a lone surrogate), got {show(value)}"
    return None


def string(inst: object, attribute: attrs.Attribute[Any], value: str) -> None:
    """attrs validator: a ``str`` with no NUL byte and no lone surrogate (as the file loaders require)."""
    if (problem := _string_problem(value)) is not None:
        raise Problem(problem, key=attribute.name)


def optional_string(inst: object, attribute: attrs.Attribute[Any], value: str | None) -> None:
    """attrs validator: ``None`` or a :func:`string`."""
    if value is not None:
        string(inst, attribute, value)


def non_empty(inst: object, attribute: attrs.Attribute[Any], value: str) -> None:
    """attrs validator: a ``str``, not empty."""
    string(inst, attribute, value)
    if not value:
        raise Problem("must not be empty", key=attribute.name)


def string_mapping(inst: object, attribute: attrs.Attribute[Any], value: Mapping[str, str]) -> None:
    """attrs validator: a mapping of strings to strings (``env``, ``headers``)."""
    if not isinstance(value, Mapping):
        raise Problem(f"must be a mapping of strings to strings, got {show(value)}", key=attribute.name)
    for name, item in value.items():
        if not isinstance(name, str):
            raise Problem(f"keys must be strings, got {show(name)}", key=attribute.name)
        if not isinstance(item, str):
            raise Problem(f"must be a string, got {show(item)}", key=f"{attribute.name}[{name!r}]")


def source_path(value: str | os.PathLike[str] | None) -> Path | None:
    """attrs converter of ``source``: ``None``, or the file as a :class:`~pathlib.Path`."""
    if value is None:
        return None
    if not isinstance(value, str | os.PathLike):
        raise Problem(f"must be a path (a str or an os.PathLike), got {show(value)}", key="source")
    return Path(value)


def instance_of(cls: type) -> Callable[[object, attrs.Attribute[Any], object], None]:
    """attrs validator: an instance of ``cls`` (``Settings(mcp=...)`` takes a ``McpSettings``)."""

    def check(inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if not isinstance(value, cls):
            raise Problem(f"must be a {cls.__name__}, got {show(value)}", key=attribute.name)

    return check


def one_of(*choices: str) -> Callable[[object, attrs.Attribute[Any], str], None]:
    """attrs validator: the value is one of ``choices``."""

    def check(inst: object, attribute: attrs.Attribute[Any], value: str) -> None:
        if value not in choices:
            allowed = ", ".join(repr(c) for c in choices)
            raise Problem(f"must be one of {allowed}, got {value!r}", key=attribute.name)

    return check


def in_range(
    low: float, high: float, *, low_open: bool = True, what: str = "", integer: bool = False
) -> Callable[[object, attrs.Attribute[Any], float], None]:
    """attrs validator: a finite number in ``(low, high]`` (``[low, high]`` if not open).

    ``nan`` fails the lower bound, ``inf`` the upper; the message names the bound broken:
    ``"must be > 0, got -1"``, ``"must be <= 604800 (one week), got inf"``. A value that is not a
    number (a ``bool`` is not one) is refused first: ``"must be a number, got '30' (string)"``.
    Wrap it in ``attrs.validators.optional`` where ``None`` is allowed.

    Args:
        low: the lower bound.
        high: the upper bound (inclusive).
        low_open: whether ``low`` itself is refused.
        what: what ``high`` means, shown in brackets after it (``"one week"``).
        integer: whether only an ``int`` will do (``"must be an integer, got 2.5 (number)"``).
    """
    high_text = f"{high:g}" if isinstance(high, float) else str(high)
    high_rule = f"must be <= {high_text}" + (f" ({what})" if what else "")
    kinds: tuple[type, ...] = (int,) if integer else (int, float)
    kind = "an integer" if integer else "a number"

    def check(inst: object, attribute: attrs.Attribute[Any], value: float) -> None:
        if isinstance(value, bool) or not isinstance(value, kinds):
            raise Problem(f"must be {kind}, got {show(value)}", key=attribute.name)
        if not (value > low if low_open else value >= low):
            raise Problem(f"must be {'>' if low_open else '>='} {low:g}, got {value!r}", key=attribute.name)
        if not value <= high:
            raise Problem(f"{high_rule}, got {value!r}", key=attribute.name)

    return check


# --- the converter ------------------------------------------------------------------------------


def _strict_str(value: object, _: type) -> str:
    if (problem := _string_problem(value)) is not None:
        raise Problem(problem)
    assert isinstance(value, str)
    return value


def _strict_bool(value: object, _: type) -> bool:
    if not isinstance(value, bool):
        raise Problem(f"must be true or false, got {show(value)}")
    return value


def _strict_int(value: object, _: type) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise Problem(f"must be an integer, got {show(value)}")
    return value


def _strict_float(value: object, _: type) -> float:
    # An int stays an int (30 == 30.0; messages then show the number as written).
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise Problem(f"must be a number, got {show(value)}")
    return value


def _strict_literal(value: object, type_: Any) -> object:
    choices = get_args(type_)
    if value not in choices or type(value) is not type(choices[0]):
        allowed = ", ".join(json.dumps(c) for c in choices)
        raise Problem(f"must be one of {allowed}, got {show(value)}")
    return value


def _strict_list_factory(type_: Any, converter: Converter) -> Callable[[Any, Any], Any]:
    inner = list_structure_factory(type_, converter)

    def structure(value: object, t: Any) -> Any:
        if not isinstance(value, list | tuple):
            raise Problem(f"must be an array, got {show(value)}")
        return inner(value, t)

    return structure


def _strict_mapping_factory(type_: Any, converter: Converter) -> Callable[[Any, Any], Any]:
    inner = mapping_structure_factory(type_, converter, dict, detailed_validation=True)

    def structure(value: object, t: Any) -> Any:
        if not isinstance(value, Mapping):
            raise Problem(f"must be an object, got {show(value)}")
        return inner(value, t)

    return structure


def _strict_class_factory(cl: Any, converter: Converter) -> Callable[[Any, Any], Any]:
    inner = make_dict_structure_fn(cl, converter)

    def structure(value: object, t: Any) -> Any:
        if not isinstance(value, Mapping):
            raise Problem(f"must be an object, got {show(value)}")
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
    if isinstance(exc, Problem):
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


def json_path(root: str, *parts: str | int) -> str:
    """A JSON path: ``json_path("$", "mcpServers", "a b", 1) == '$.mcpServers["a b"][1]'``."""
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
    return json_path("$", *parts)


def summarize(problems: list[str], where: str) -> str:
    """One line for one problem, a counted list for several; ``where`` names file and section."""
    if len(problems) == 1:
        return f"{problems[0]} ({where})"
    lines = "\n".join(f"  {p}" for p in problems)
    return f"{len(problems)} problems in {where}:\n{lines}"


def structure(
    data: object,
    model: type[_T],
    *,
    where: str,
    style: Literal["json", "toml"],
    also: Iterable[str] = (),
) -> _T:
    """Structure ``data`` with the project converter; raise ConfigError with readable lines.

    ``also``: problems the caller found in ``data`` (a key it took out, with what was meant), listed
    after the converter's, so that one message holds every problem of the table.
    """
    also = list(also)
    try:
        result = _converter.structure(data, model)
    except (BaseValidationError, Problem) as exc:
        lines = transform_error(exc, path="$", format_exception=_format_exception)
    else:
        if not also:
            return result
        lines = []
    problems = []
    for line in lines:
        description, _, raw_path = line.rpartition(" @ $")
        path = _rewrite_cattrs_path("$" + raw_path)
        if description.startswith(_KEY_MARK):
            _, key, description = description.split(_KEY_MARK, 2)
            path = json_path(path, key)
        if style == "toml":
            subject = path.removeprefix("$").removeprefix(".")
            problems.append(f"{subject} {description}" if subject else description.removeprefix("has "))
        else:
            problems.append(f"{path} {description}" if path != "$" else f"the top level {description}")
    raise ConfigError(summarize(problems + also, where))


def fold_key(key: str) -> str:
    """A key as a slip of the hand may leave it: case, ``-``, ``_`` and spaces do not count."""
    return re.sub(r"[-_\s]", "", key.casefold())


def _slips(a: str, b: str) -> int:
    """How many letters typed wrong, left out, added or swapped turn ``a`` into ``b`` (optimal string
    alignment distance)."""
    before: list[int] = []
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            current[j] = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], before[j - 2] + 1)
        before, row = row, current
    return row[len(b)]


def near_miss(key: str, known: Iterable[str]) -> str | None:
    """The key of ``known`` that ``key`` is a slip of, if any (``None`` for itself and for a far one).

    A slip is the same key written in another case or with ``-``, ``_`` or spaces moved
    (``Agent-Model``, ``top-p``, ``maxtokens``), or one letter wrong, left out, added or two swapped
    (two for keys longer than six letters: ``agent_modle``, ``temprature``, ``max_retrys``). The
    sections shared with ZorkGPT ignore keys they do not read, so a slip there would be ignored
    silently and change what runs; a key merely alike (ZorkGPT's ``critic_base_url`` beside
    ``client_base_url``) is not one.
    """
    folded = fold_key(key)
    best: tuple[int, str] | None = None
    for candidate in known:
        if candidate == key:
            return None
        target = fold_key(candidate)
        slips = _slips(folded, target)
        if slips <= (1 if len(target) <= 6 else 2) and (best is None or slips < best[0]):
            best = (slips, candidate)
    return None if best is None else best[1]


class DuplicateKeyError(ValueError):
    """A JSON object has the same key twice (``json.loads`` would keep the last silently)."""


def no_duplicate_keys(pairs: Iterable[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for :func:`json.loads` that refuses duplicate keys."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise DuplicateKeyError(f"duplicate key {json.dumps(key)} in one object")
        out[key] = value
    return out
