"""Host checks for an enabled stdio server: its command can be run, its ``cwd`` exists."""

from __future__ import annotations

import json
import os
import shlex
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from collections.abc import Mapping

    from ._servers import ServerConfig

__all__ = ["check_host"]

_NEEDS: Final[Mapping[str, str]] = {
    "npx": "Node.js >= 20 (npx comes with it): install it from https://nodejs.org",
    "node": "Node.js >= 20: install it from https://nodejs.org",
    "npm": "Node.js >= 20 (npm comes with it): install it from https://nodejs.org",
    "uvx": "uv (uvx comes with it): install it from https://docs.astral.sh/uv/",
    "uv": "uv: install it from https://docs.astral.sh/uv/",
}


def check_host(server: ServerConfig, path: str, problems: list[str]) -> None:
    """The command of an enabled stdio server can be run, and its cwd exists.

    A path the system will not even look at (a folder on the way that this user may not enter:
    ``Path.is_dir`` raises ``PermissionError`` there; a name too long) is a problem named with why.
    """
    if server.cwd is not None:
        try:
            is_dir = Path(server.cwd).is_dir()
        except OSError as exc:
            problems.append(f"{path}.cwd cannot be looked at ({exc.strerror or exc}): {server.cwd}")
            return
        if not is_dir:
            problems.append(f"{path}.cwd is not a directory: {server.cwd}")
            return
    command = server.command
    assert command is not None  # stdio servers have one (checked in _build_server)
    search_path = _search_path(server)
    if (written := _arguments_in(command, server, search_path, path)) is not None:
        problems.append(written)
        return
    if os.sep in command or (os.altsep and os.altsep in command):
        candidate = Path(command).expanduser()
        if not candidate.is_absolute() and server.cwd is not None:
            candidate = Path(server.cwd) / candidate
        try:
            runnable = candidate.is_file() and os.access(candidate, os.X_OK)
        except OSError as exc:
            problems.append(f"{path}.command {command!r} cannot be looked at ({exc.strerror or exc})")
            return
        if not runnable:
            problems.append(f"{path}.command {command!r} is not an executable file")
        return
    if shutil.which(command, path=search_path) is None:
        needs = _NEEDS.get(command)
        hint = f"; this server needs {needs}" if needs else ""
        problems.append(
            f"{path}.command {command!r} was not found on PATH{hint} "
            f'(or set "disabled": true on server {server.name!r})'
        )


def _search_path(server: ServerConfig) -> str:
    """The ``PATH`` the server's command is looked up on: its own ``env``'s, else this process's."""
    return server.env.get("PATH", os.environ.get("PATH", os.defpath))


def _arguments_in(command: str, server: ServerConfig, search_path: str, path: str) -> str | None:
    """The problem line when ``command`` is a whole command line (``path``: the server's JSON path).

    ``"command": "npx -y @modelcontextprotocol/server-memory"`` is what a shell runs, but the server
    is started without one: the program would be looked up under that whole name, and the message
    would say ``npx -y …`` is not on PATH (or, for a name with a ``/``, not an executable file). A
    program whose own name holds a space (an existing file) is left alone.
    """
    if not any(c.isspace() for c in command.strip()):
        return None
    candidate = Path(command).expanduser()
    if not candidate.is_absolute() and server.cwd is not None:
        candidate = Path(server.cwd) / candidate
    try:
        if candidate.is_file():
            return None
        words = shlex.split(command)
    except (OSError, ValueError):  # a path that cannot be looked at, an unclosed quote: the usual checks
        return None
    if not words:
        return None
    program, arguments = words[0], [*words[1:], *server.args]
    line = (
        f"{path}.command {command!r} holds the program's arguments; the server is started without a "
        f"shell, so the program goes in command and each argument in args: "
        f'"command": {json.dumps(program)}, "args": {json.dumps(arguments, ensure_ascii=False)}'
    )
    if os.sep not in program and shutil.which(program, path=search_path) is None:
        needs = _NEEDS.get(program)
        line += f" ({program!r} is not on PATH either{f': this server needs {needs}' if needs else ''})"
    return line
