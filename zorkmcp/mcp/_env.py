"""The environment an MCP server process starts with (Requirement 3.2, property 7)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["SECRET_MARKERS", "build_server_env", "looks_secret"]

SECRET_MARKERS: tuple[str, ...] = ("API_KEY", "TOKEN", "SECRET", "PASSWORD")
"""A variable whose name contains one of these (any case) is withheld unless the server asks for it."""


def looks_secret(name: str) -> bool:
    """Tell whether an environment variable's name looks like it holds a secret.

    Args:
        name: the variable's name.
    """
    upper = name.upper()
    return any(marker in upper for marker in SECRET_MARKERS)


def build_server_env(
    server_env: Mapping[str, str], base_env: Mapping[str, str]
) -> tuple[dict[str, str], tuple[str, ...]]:
    """Merge the system environment with a server's ``env`` (seeds 000 §MCP SDK Integration).

    The seeds pass ``{**os.environ, **server.env}``; we do the same but leave out variables that
    look like secrets (see :data:`SECRET_MARKERS`) unless the server's ``env`` names them, so an
    API key meant for the LLM does not leak into every tool process.

    Args:
        server_env: the server's ``env`` from ``mcp_config.json`` (already expanded).
        base_env: the system environment, usually ``os.environ``.

    Returns:
        The merged environment and the sorted names that were withheld (names only, never values).
    """
    withheld = sorted(name for name in base_env if looks_secret(name) and name not in server_env)
    skip = set(withheld)
    merged = {name: value for name, value in base_env.items() if name not in skip}
    merged.update(server_env)
    return merged, tuple(withheld)
