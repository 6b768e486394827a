"""Choosing the story file: ``--game``, ``GAME``, ``game_file_path``, or the MIT release, downloaded.

The order (issue "Play Zork" §1; seeds 003 §Server Initialization for ``GAME``):

1. ``--game PATH`` on the command line;
2. the ``GAME`` environment variable: a path, or a name such as ``zork1`` (or ``zork1.z3``)
   looked up in the games folders (``$ZORKMCP_GAMES_DIR``, ``./games``, the user cache folder),
   trying the name as given and with the usual story extensions; ``GAME=zork1`` found nowhere
   falls through to the download below;
3. ``[tool.zorkgpt.files] game_file_path`` in ``pyproject.toml``;
4. otherwise Microsoft's MIT release of Zork I (release 119): used from the user cache folder
   (``$XDG_CACHE_HOME/zorkmcp/games`` or ``~/.cache/zorkmcp/games``) when it is there and its md5
   checks out, else downloaded there from its public repository and verified.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import GameError

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

__all__ = [
    "DEFAULT_GAME_NAME",
    "ZORK1_MD5",
    "ZORK1_URL",
    "default_cache_dir",
    "default_games_dirs",
    "resolve_game_path",
]

ZORK1_URL = "https://raw.githubusercontent.com/historicalsource/zork1/master/COMPILED/zork1.z3"
"""Where Microsoft's MIT release of Zork I lives (overridable with ``ZORKMCP_GAME_URL``)."""

ZORK1_MD5 = "1d4606016ea58ee038da53d994392323"
"""md5 of ``zork1.z3``, release 119 / serial 880429."""

DEFAULT_GAME_NAME = "zork1"

_STORY_SUFFIXES = (".z3", ".z5", ".z8", ".z4", ".z6", ".z7", ".z2", ".z1", ".dat")
_MAX_DOWNLOAD_BYTES = 1 << 20  # zork1.z3 is 86,838 bytes
_CONNECT_TIMEOUT = 5.0
_READ_TIMEOUT = 15.0

_HOW_TO_GIVE = (
    "pass it with --game PATH, set GAME=PATH (or GAME=zork1 with the file in a games folder), "
    "or set game_file_path in [tool.zorkgpt.files] of pyproject.toml"
)


def default_cache_dir(env: Mapping[str, str] = os.environ) -> Path:
    """The folder downloaded games are kept in: ``$XDG_CACHE_HOME/zorkmcp/games``.

    Args:
        env: the environment to read ``XDG_CACHE_HOME`` (and ``HOME``) from.

    Returns:
        The folder (it may not exist yet).
    """
    xdg = env.get("XDG_CACHE_HOME", "")
    if xdg and Path(xdg).is_absolute():
        base = Path(xdg)
    else:
        home = env.get("HOME", "")
        base = (Path(home) if home else Path.home()) / ".cache"
    return base / "zorkmcp" / "games"


def default_games_dirs(env: Mapping[str, str] = os.environ) -> list[Path]:
    """Folders a game *name* is looked up in: ``$ZORKMCP_GAMES_DIR``, ``./games``, the cache folder.

    Args:
        env: the environment to read ``ZORKMCP_GAMES_DIR`` and the cache folder's variables from.

    Returns:
        The folders, in search order.
    """
    dirs = [Path(env["ZORKMCP_GAMES_DIR"]).expanduser()] if env.get("ZORKMCP_GAMES_DIR") else []
    return [*dirs, Path("games"), default_cache_dir(env)]


def resolve_game_path(
    cli_path: str | None = None,
    settings_path: str | None = None,
    *,
    env: Mapping[str, str] = os.environ,
    games_dirs: Sequence[Path] | None = None,
    cache_dir: Path | None = None,
    download: bool = True,
    settings_base: Path | None = None,
    announce: Callable[[str], None] | None = None,
) -> Path:
    """Find the story file to play (see the module docstring for the order).

    Args:
        cli_path: ``--game PATH``, if given.
        settings_path: ``[tool.zorkgpt.files] game_file_path``, if set.
        env: the environment (``GAME``, ``ZORKMCP_GAMES_DIR``, ``ZORKMCP_GAME_URL``,
            ``XDG_CACHE_HOME``).
        games_dirs: folders to look a game name up in; default :func:`default_games_dirs`.
        cache_dir: where the downloaded release is kept; default :func:`default_cache_dir`.
        download: whether the MIT release may be downloaded when nothing else is found.
        settings_base: the folder a relative ``settings_path`` is relative to (the folder of the
            ``pyproject.toml`` it came from); default the working folder.
        announce: called with a sentence when the game is downloaded or taken from the cache;
            default: print it to stderr (stdout may be an MCP stdio channel).

    Returns:
        The path of an existing file. It is not opened here: :meth:`ZorkGame.open` checks it.

    Raises:
        GameError: the named file does not exist, a ``GAME`` name is in no games folder, or the
            download failed or did not match the checksum; the message says where to get the
            file and how to pass it.
    """
    say = announce if announce is not None else _print_to_stderr
    cache = cache_dir if cache_dir is not None else default_cache_dir(env)
    if cli_path:
        return _existing(Path(cli_path).expanduser(), "--game")
    game = env.get("GAME", "").strip()
    if game:
        return _from_game_variable(game, env, games_dirs, cache, download, say)
    if settings_path:
        path = Path(settings_path).expanduser()
        if settings_base is not None and not path.is_absolute():
            path = settings_base / path
        return _existing(path, "game_file_path in [tool.zorkgpt.files]")
    return _zork1_release(env, cache, download, say)


def _from_game_variable(
    game: str,
    env: Mapping[str, str],
    games_dirs: Sequence[Path] | None,
    cache: Path,
    download: bool,
    say: Callable[[str], None],
) -> Path:
    path = Path(game).expanduser()
    if os.sep in game or "/" in game or path.is_file():
        return _existing(path, "the GAME environment variable")
    # A bare name ("zork1" or "zork1.z3"): look in the games folders.
    has_suffix = path.suffix.lower() in _STORY_SUFFIXES
    names = [game] if has_suffix else [game, *(f"{game}{suffix}" for suffix in _STORY_SUFFIXES)]
    dirs = list(games_dirs) if games_dirs is not None else default_games_dirs(env)
    for folder in dirs:
        for name in names:
            if (folder / name).is_file():
                return folder / name
    if path.stem == DEFAULT_GAME_NAME and path.suffix.lower() in ("", ".z3"):
        return _zork1_release(env, cache, download, say)
    searched = ", ".join(str(d) for d in dirs)
    tried = game if has_suffix else f"{game} (or {game}.z3, {game}.z5, …)"
    raise GameError(
        f"GAME={game}: no story file named {tried} in {searched}. "
        f"Put the file in one of those folders, or {_HOW_TO_GIVE}"
    )


def _existing(path: Path, source: str) -> Path:
    if not path.exists():
        raise GameError(f"game file not found: {path} (from {source}). Check the path, or {_HOW_TO_GIVE}")
    if not path.is_file():
        raise GameError(
            f"game file {path} (from {source}) is not a file. Point it at a story file such as zork1.z3"
        )
    return path


def _zork1_release(env: Mapping[str, str], cache: Path, download: bool, say: Callable[[str], None]) -> Path:
    target = cache / "zork1.z3"
    if target.is_file():
        digest = _md5_of(target)
        if digest == ZORK1_MD5:
            say(f"Playing Zork I (MIT release 119) from {target}")
            return target
        say(f"{target} has md5 {digest}, not {ZORK1_MD5}; downloading it again")
    url = env.get("ZORKMCP_GAME_URL") or ZORK1_URL
    if not download:
        raise GameError(f"no game file given and {target} is missing. {_where_to_get(url)}")
    data = _download(url, target)
    digest = hashlib.md5(data, usedforsecurity=False).hexdigest()
    if digest != ZORK1_MD5:
        raise GameError(
            f"the file downloaded from {url} has md5 {digest}, expected {ZORK1_MD5} (Zork I release 119); "
            f"it was not saved. {_where_to_get(ZORK1_URL)}"
        )
    _write_atomically(target, data)
    say(f"Downloaded Zork I (MIT release 119) from {url} to {target} (md5 {digest} verified)")
    return target


def _download(url: str, target: Path) -> bytes:
    import httpx

    timeout = httpx.Timeout(_READ_TIMEOUT, connect=_CONNECT_TIMEOUT)
    try:
        with (
            httpx.Client(timeout=timeout, follow_redirects=True) as client,
            client.stream("GET", url) as response,
        ):
            if response.status_code != 200:
                raise GameError(
                    f"could not download Zork I from {url}: HTTP {response.status_code}. {_where_to_get(url)}"
                )
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > _MAX_DOWNLOAD_BYTES:
                    raise GameError(
                        f"could not download Zork I from {url}: the answer is larger than "
                        f"{_MAX_DOWNLOAD_BYTES} bytes, not a story file. {_where_to_get(url)}"
                    )
                chunks.append(chunk)
    except httpx.HTTPError as exc:
        raise GameError(
            f"could not download Zork I from {url} ({type(exc).__name__}: {exc or 'no details'}); "
            f"are you offline? {_where_to_get(url)}"
        ) from exc
    return b"".join(chunks)


def _where_to_get(url: str) -> str:
    where = f"Get zork1.z3 from {url}" if url == ZORK1_URL else f"Get zork1.z3 from {url} or {ZORK1_URL}"
    return f"{where} (Microsoft's MIT release, repository historicalsource/zork1), then {_HOW_TO_GIVE}."


def _md5_of(path: Path) -> str:
    try:
        return hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest()
    except OSError as exc:
        raise GameError(f"cannot read {path}: {exc.strerror or exc}") from exc


def _write_atomically(target: Path, data: bytes) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".zork1-", suffix=".part")
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(data)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    except OSError as exc:
        raise GameError(
            f"downloaded Zork I but cannot save it to {target}: {exc.strerror or exc}. "
            f"Save it yourself and {_HOW_TO_GIVE}"
        ) from exc


def _print_to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
