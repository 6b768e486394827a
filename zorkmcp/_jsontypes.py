"""JSON type names for error messages (standard library only: the embedded server imports it)."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["json_type_name"]


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
