"""Tool names: the seeds' canonical ``server.tool`` and the wire-safe names the LLM sees.

OpenAI and Anthropic only accept function names matching ``^[a-zA-Z0-9_-]{1,64}$``, so the dotted
canonical name (seeds 000 §Tool name format, property 34) cannot go on the wire. Every tool gets a
deterministic wire name ``server__tool`` with other characters replaced by ``_``; when that is longer
than 64 characters, or when two tools would share it, the name is cut and given a stable short hash
of the canonical name. Routing always goes through the table built here, never through splitting a
name (a server or tool name may itself contain dots or double underscores). A name that would start
with a digit or ``-`` (a server called ``1password``) starts with ``_``: Gemini's API refuses a
function name that does not start with a letter or an underscore, on every request that offers it.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable

__all__ = [
    "MAX_WIRE_NAME_LENGTH",
    "WIRE_NAME_PATTERN",
    "assign_wire_names",
    "base_wire_name",
    "canonical_name",
]

MAX_WIRE_NAME_LENGTH = 64
WIRE_NAME_PATTERN = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_-]{0,63}$")
_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")
_HASH_LENGTH = 8


def canonical_name(server: str, tool: str) -> str:
    """The seeds' prefixed name ``{server}.{tool}`` (property 34), used in logs, events and calls."""
    return f"{server}.{tool}"


def base_wire_name(server: str, tool: str) -> str:
    """``server__tool`` with every character outside ``[a-zA-Z0-9_-]`` replaced by ``_`` (uncut), and
    ``_`` before it when it would start with a digit or ``-`` (``_1password__get_item``)."""
    name = _UNSAFE.sub("_", f"{server}__{tool}")
    return name if name[:1].isalpha() or name[:1] == "_" else f"_{name}"


def _hashed(base: str, server: str, tool: str, salt: int) -> str:
    digest = hashlib.sha256(f"{server}\0{tool}\0{salt}".encode("utf-8", "surrogatepass")).hexdigest()
    return f"{base[: MAX_WIRE_NAME_LENGTH - _HASH_LENGTH - 1]}_{digest[:_HASH_LENGTH]}"


def assign_wire_names(pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """Give every ``(server, tool)`` pair a valid, unique wire name.

    A pair keeps its plain :func:`base_wire_name` when that is short enough and no other pair in the
    set shares it; otherwise it gets a hashed name. The result depends only on the set of pairs, not
    on their order, so the same servers give the same names on every turn.

    Args:
        pairs: the tools of one toolbox.

    Returns:
        A mapping from each pair to its wire name; the names are pairwise distinct and each matches
        :data:`WIRE_NAME_PATTERN`.
    """
    unique = sorted(set(pairs))
    bases = {pair: base_wire_name(*pair) for pair in unique}
    counts = Counter(bases.values())
    names: dict[tuple[str, str], str] = {}
    used: set[str] = set()
    for pair in unique:
        base = bases[pair]
        if counts[base] == 1 and len(base) <= MAX_WIRE_NAME_LENGTH:
            names[pair] = base
            used.add(base)
    for pair in unique:
        if pair in names:
            continue
        salt = 0
        candidate = _hashed(bases[pair], *pair, salt)
        while candidate in used:
            salt += 1
            candidate = _hashed(bases[pair], *pair, salt)
        names[pair] = candidate
        used.add(candidate)
    return names
