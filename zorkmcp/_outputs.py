"""The files the commands write: can they be made there (:func:`check_output`, before anything
starts), and writing one so that a reader never sees half of it (:func:`write_atomically`).

A path under a file (``--out /dev/null/x``), or in a folder this user cannot write, would otherwise
be found when the command first writes it: after an episode played for nothing, with a traceback.
Standard library only (the commands call this before they import the engine).
"""

from __future__ import annotations

import os
from contextlib import suppress
from typing import TYPE_CHECKING

from .errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["check_output", "write_atomically"]


def check_output(
    path: Path, named: str, remedy: str, *, folder: bool = False, what: str = "the file"
) -> None:
    """Raise a one-line :class:`ConfigError` when ``path`` cannot be made and written.

    Args:
        path: the file, or the folder when ``folder``.
        named: how the user gave it (``--out runs/x``, ``[tool.zorkgpt.files] json_log_file``).
        remedy: what to do instead (``pass another --out``).
        folder: ``path`` is a folder to make (and write files in), not a file.
        what: how the message names ``path`` (``the run's folder``).

    Raises:
        ConfigError: a part of the path is a file, a file's path is a folder, or the folder it
            would be made in is not writable.
    """
    if path.is_dir() and not folder:
        raise ConfigError(f"{named}: {path.absolute()} is a folder, not a file; {remedy}")
    existing = path if folder else path.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(
            f"{named}: {existing.absolute()} is not a folder, so {what} {path} cannot be made there; {remedy}"
        )
    target = path if path.exists() else existing
    if not os.access(target, os.W_OK | (os.X_OK if target.is_dir() else 0)):
        kind = "folder" if target.is_dir() else "file"
        raise ConfigError(f"{named}: the {kind} {target.absolute()} is not writable; {remedy}")


def write_atomically(path: Path, text: str) -> None:
    """Write ``path`` through a temporary file beside it, renamed: a reader sees the old file or the new.

    Raises:
        OSError: it cannot be written (a full disk); the temporary file is removed (on any way out).
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:  # a full disk, or Ctrl-C in the middle: no temporary file is left
        with suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise
