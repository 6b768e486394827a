"""Hold a file for one process: an exclusive ``flock`` on a lock file that holds the holder's process id.

``zorkmcp eval`` holds its run's folder this way (``.zorkmcp-eval.lock`` in it), and ``zorkmcp play
--record`` its cassette (``.NAME.lock`` beside it). The system lets a lock go when its process ends,
however it ends (``kill -9`` too), so a claim is never left stale; the lock file itself is removed
by :func:`let_go`, and one a killed process left behind is taken over by the next holder. The
folders a lock goes in are made by :func:`make_folders`, and removed by :func:`remove_empty` when
nothing was put in them.
Standard library only (the commands call this before they import the engine).
"""

from __future__ import annotations

import fcntl
import os
from contextlib import suppress
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["LockHeldError", "hold", "let_go", "make_folders", "remove_empty"]


class LockHeldError(Exception):
    """Another process holds the lock; :attr:`holder` is its process id when the lock file tells it."""

    def __init__(self, path: Path, holder: int | None) -> None:
        super().__init__(
            f"{path} is held by {'pid ' + str(holder) if holder is not None else 'another process'}"
        )
        self.path = path
        self.holder = holder


def hold(path: Path) -> int | None:
    """Lock ``path`` (made if missing) for this process and write its process id in it.

    Returns:
        The lock's descriptor (pass it to :func:`let_go`), or ``None`` on a file system that does
        not lock files (the caller goes on unclaimed).

    Raises:
        LockHeldError: another process (or another open of it in this one) holds it.
        OSError: ``path`` cannot be opened or written (a folder that is not writable, a full disk).
    """
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise LockHeldError(path, holder) from None
        except OSError:  # no locks here (ENOLCK, EOPNOTSUPP)
            os.close(fd)
            return None
        try:
            still = os.stat(path, follow_symlinks=False)
        except FileNotFoundError:
            still = None
        mine = os.fstat(fd)
        if still is not None and (still.st_dev, still.st_ino) == (mine.st_dev, mine.st_ino):
            break
        os.close(fd)  # the process that held it ended and removed it meanwhile: lock the new one
    text = f"{os.getpid()}\n".encode()
    try:
        os.pwrite(fd, text, 0)  # over a killed process's id: a reader sees one id or the other, never none
        os.ftruncate(fd, len(text))
    except OSError:
        let_go(path, fd)
        raise
    return fd


def let_go(path: Path, fd: int | None) -> None:
    """Remove the lock file (while still held: a process waiting on it takes a fresh one) and unlock it."""
    if fd is None:
        return
    with suppress(OSError):
        os.unlink(path)
    os.close(fd)


def _holder(fd: int) -> int | None:
    """The process id in a lock file (its first line), if it holds one."""
    with suppress(OSError, ValueError):
        first = os.pread(fd, 32, 0).split(b"\n", 1)[0]
        return int(first) if first.strip() else None
    return None


def make_folders(folder: Path) -> list[Path]:
    """Make ``folder`` and the folders above it that are missing; the ones made here, outermost first.

    Raises:
        OSError: one cannot be made (those made here are removed again).
    """
    missing = [each for each in (folder, *folder.parents) if not each.exists()][::-1]
    made: list[Path] = []
    for each in missing:
        try:
            each.mkdir()
        except FileExistsError:  # another process made it meanwhile: it is not ours to remove
            continue
        except OSError:
            remove_empty(made)
            raise
        made.append(each)
    return made


def remove_empty(made: list[Path]) -> None:
    """Remove the folders :func:`make_folders` made, innermost first, as long as they are empty."""
    for folder in reversed(made):
        with suppress(OSError):  # not empty: it stays, and so do the folders above it
            folder.rmdir()
