"""Choosing the story file: ``--game``, ``GAME``, ``game_file_path``, or the packaged Zork I.

The order (seeds 003 §Server Initialization for ``GAME``):

1. ``--game`` on the command line;
2. the ``GAME`` environment variable;
   either is a path, or a name such as ``zork1`` (or ``zork1.z3``) looked up in the games folders
   (``$ZORKMCP_GAMES_DIR``, ``./games``, then the package's own ``zorkmcp/game/data``), trying the
   name as given and with the usual story extensions;
3. ``[tool.zorkgpt.files] game_file_path`` in ``pyproject.toml``;
4. otherwise the copy of Microsoft's MIT release of Zork I (release 119) that ships with the
   package (``zorkmcp/game/data/zork1.z3``, licence beside it). No network is ever needed.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Final

from ..errors import GameError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

__all__ = [
    "DEFAULT_GAME_NAME",
    "PACKAGED_GAME",
    "PACKAGED_GAMES_DIR",
    "ZORK1_MD5",
    "default_games_dirs",
    "resolve_game_path",
    "story_md5",
]

ZORK1_MD5 = "1d4606016ea58ee038da53d994392323"
"""md5 of ``zork1.z3``, release 119 / serial 880429."""

DEFAULT_GAME_NAME = "zork1"

PACKAGED_GAMES_DIR: Final = Path(__file__).resolve().with_name("data")
"""The package's games folder: Zork I and its MIT licence (``zork1.LICENSE``)."""

PACKAGED_GAME: Final = PACKAGED_GAMES_DIR / "zork1.z3"
"""Microsoft's MIT release of Zork I (release 119), shipped as package data."""

_STORY_SUFFIXES = (".z3", ".z5", ".z8", ".z4", ".z6", ".z7", ".z2", ".z1", ".dat")

_HOW_TO_GIVE = (
    "pass it with --game PATH (or --game zork1 with the file in a games folder), set GAME the same way, "
    "set game_file_path in [tool.zorkgpt.files] of pyproject.toml, or give none of these to play "
    "the packaged Zork I"
)


def default_games_dirs(env: Mapping[str, str] = os.environ) -> list[Path]:
    """Folders a game *name* is looked up in: ``$ZORKMCP_GAMES_DIR``, ``./games``, the package's.

    Args:
        env: the environment to read ``ZORKMCP_GAMES_DIR`` from.

    Returns:
        The folders, in search order.
    """
    dirs = [Path(env["ZORKMCP_GAMES_DIR"]).expanduser()] if env.get("ZORKMCP_GAMES_DIR") else []
    return [*dirs, Path("games"), PACKAGED_GAMES_DIR]


def resolve_game_path(
    cli_path: str | None = None,
    settings_path: str | None = None,
    *,
    env: Mapping[str, str] = os.environ,
    games_dirs: Sequence[Path] | None = None,
    settings_base: Path | None = None,
    cli_source: str = "--game",
) -> Path:
    """Find the story file to play (see the module docstring for the order).

    Args:
        cli_path: ``--game``, if given: a path or a game's name.
        settings_path: ``[tool.zorkgpt.files] game_file_path``, if set.
        env: the environment (``GAME``, ``ZORKMCP_GAMES_DIR``).
        games_dirs: folders to look a game name up in; default :func:`default_games_dirs`.
        settings_base: the folder a relative ``settings_path`` is relative to (the folder of the
            ``pyproject.toml`` it came from); default the working folder.
        cli_source: how messages name where ``cli_path`` came from (``eval.toml: game``).

    Returns:
        The path of an existing file. It is not opened here: :meth:`ZorkGame.open` checks it.

    Raises:
        GameError: the named file does not exist, a name is in no games folder, or ``cli_path``
            is empty; the message says how to pass the file.
    """
    if cli_path is not None:
        if not cli_path.strip():
            raise GameError(
                f"{cli_source} is empty: give a story file or a game name such as zork1, or leave it "
                "out to play the packaged Zork I"
            )
        return _path_or_name(
            cli_path.strip(), f"{cli_source} {cli_path.strip()}", cli_source, env, games_dirs
        )
    game = env.get("GAME", "").strip()
    if game:
        return _path_or_name(game, f"GAME={game}", "the GAME environment variable", env, games_dirs)
    if settings_path:
        path = Path(settings_path).expanduser()
        if settings_base is not None and not path.is_absolute():
            path = settings_base / path
        return _existing(path, "game_file_path in [tool.zorkgpt.files]")
    return _existing(PACKAGED_GAME, "the zorkmcp package (is the installation complete?)")


def _path_or_name(
    game: str, given: str, source: str, env: Mapping[str, str], games_dirs: Sequence[Path] | None
) -> Path:
    """A path (it has a ``/``, or names a file here), else a name looked up in the games folders."""
    if "\0" in game:
        raise GameError(f"{source} contains a NUL byte; give a path or a name")
    path = Path(game).expanduser()
    if os.sep in game or "/" in game or path.is_file():
        return _existing(path, source)
    # A bare name ("zork1" or "zork1.z3"): look in the games folders.
    has_suffix = path.suffix.lower() in _STORY_SUFFIXES
    names = [game] if has_suffix else [game, *(f"{game}{suffix}" for suffix in _STORY_SUFFIXES)]
    dirs = list(games_dirs) if games_dirs is not None else default_games_dirs(env)
    for folder in dirs:
        for name in names:
            if (folder / name).is_file():
                return folder / name
    searched = ", ".join(str(d) for d in dirs)
    tried = game if has_suffix else f"{game} (or {game}.z3, {game}.z5, …)"
    here = f"no file {game} in {Path.cwd()}, and " if has_suffix else ""  # a file here was meant, maybe
    raise GameError(
        f"{given}: {here}no story file named {tried} in {searched}. "
        f"Put the file in one of those folders, or {_HOW_TO_GIVE}"
    )


def _existing(path: Path, source: str) -> Path:
    if "\0" in str(path):
        raise GameError(f"game file path from {source} contains a NUL byte. {_HOW_TO_GIVE}")
    if not path.exists():
        raise GameError(f"game file not found: {path} (from {source}). Check the path, or {_HOW_TO_GIVE}")
    if not path.is_file():
        raise GameError(
            f"game file {path} (from {source}) is not a file. Point it at a story file such as zork1.z3"
        )
    return path


def story_md5(path: Path) -> str:
    """The story file's md5: what a cassette's header and an eval record keep of their game.

    Raises:
        OSError: the file cannot be read.
    """
    return hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest()
