"""JSON type names for error messages (standard library only: the embedded server imports it)."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["json_kind", "json_type_name"]


def json_type_name(value: object) -> str:
    """The JSON name of ``value``'s type (``"integer"``, ``"object"``…), or the Python name."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def json_kind(value: object) -> str:
    """A parsed JSON value's kind as a sentence names it: ``a string``, ``an array``, ``a number``."""
    name = json_type_name(value)
    if name == "null":
        return name
    name = "number" if name == "integer" else name
    return f"{'an' if name[0] in 'aeiou' else 'a'} {name}"
