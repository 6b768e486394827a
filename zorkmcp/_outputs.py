"""The files the commands write: can they be made there (:func:`check_output`, before anything
starts), writing one so that a reader never sees half of it (:func:`write_atomically`), and
appending to one so that it never ends in half a line (:func:`append_whole`).

A path under a file (``--out /dev/null/x``), or in a folder this user cannot write, would otherwise
be found when the command first writes it: after an episode played for nothing, with a traceback.
Standard library only (the commands call this before they import the engine).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from contextlib import suppress
from pathlib import Path

from ._surrogates import SURROGATE
from .errors import ConfigError, RunWriteError

__all__ = [
    "append_whole",
    "check_output",
    "utf8",
    "write_atomically",
    "write_error",
    "write_remedy",
    "written_in_place",
]

_DESCRIPTOR = re.compile(r"/dev/(stdout|stderr|fd/\d+)|/proc/(self|thread-self|\d+)/fd/\d+")
"""The paths that name an open file descriptor of the process."""


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
        ConfigError: a part of the path is a file, a file's path is a folder, a name in it is longer
            than the file system takes, or the folder it would be made in is not writable.
    """
    _check_names(path, named, remedy, folder=folder)
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


_TMP_EXTRA = len(".{name}.4194304.tmp") - len("{name}")
"""How much longer the temporary file's name is than its target's (:func:`write_atomically`)."""


def _check_names(path: Path, named: str, remedy: str, *, folder: bool) -> None:
    """Each name in ``path`` fits the file system (``NAME_MAX``, 255 bytes on most), its temporary
    file's too; asking the system about a longer one raises ``OSError`` ("File name too long")."""
    for index, part in enumerate(path.parts):
        limit = 255
        with suppress(OSError, ValueError):
            limit = os.pathconf(Path(*path.parts[:index]) if index else Path.cwd(), "PC_NAME_MAX")
        room = limit if folder or index < len(path.parts) - 1 else limit - _TMP_EXTRA
        if len(os.fsencode(part)) > room:
            raise ConfigError(
                f"{named}: the name {part[:24]}… is {len(os.fsencode(part))} bytes long, and a name "
                f"zorkmcp writes there can be {room} at most; {remedy}"
            )


def written_in_place(path: Path) -> bool:
    """Whether :func:`write_atomically` writes ``path`` as it is rather than replacing it.

    So it does for a path that names an open file descriptor (``/dev/stdout``, ``/dev/stderr``,
    ``/dev/fd/N``, ``/proc/self/fd/N``), whatever it leads to (a terminal, a pipe, or the file a
    shell redirected it to), and for one that is neither a regular file nor a folder (``/dev/null``,
    a named pipe).
    """
    if _DESCRIPTOR.fullmatch(os.path.abspath(path)):
        return True
    try:
        mode = os.stat(path).st_mode  # follows a symbolic link
    except OSError:
        return False  # nothing there yet: the rename makes the file
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def write_atomically(path: Path, text: str) -> None:
    """Write ``path`` through a temporary file beside it, renamed: a reader sees the old file or the new.

    Only a file the command makes or replaces is written that way. What :func:`written_in_place`
    names (``/dev/stdout``, ``/dev/null``, a named pipe) is appended to as it is: a rename would put
    a file in place of the device or the pipe (as root, in place of ``/dev/null`` itself), and their
    reader would never see the text; appending keeps what a shell's ``>>`` asked for. A symbolic
    link keeps pointing where it did: the file it points to is replaced. The text is written as
    UTF-8, a lone surrogate in it (a name from a path that is not UTF-8) as its escape (:func:`utf8`).

    Raises:
        OSError: it cannot be written (a full disk); the temporary file is removed (on any way out).
    """
    data = utf8(text)
    if written_in_place(path):
        with open(path, "ab") as stream:
            stream.write(data)
        return
    target = Path(os.path.realpath(path))  # a link's file (made if the link dangles), not the link
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, target)
    except BaseException:  # a full disk, or Ctrl-C in the middle: no temporary file is left
        with suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise


def utf8(text: str) -> bytes:
    """``text`` in UTF-8, each lone surrogate in it shown as an escape rather than failing the write.

    A name read from a path that is not valid UTF-8 (``runs/bad\\xffout``: Linux paths are bytes)
    holds the byte as a surrogate (``"\\udcff"``, Python's ``surrogateescape``), which UTF-8 cannot
    encode: such a byte is written as ``\\xff``, any other lone surrogate as U+FFFD.
    """
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:

        def shown(match: re.Match[str]) -> str:
            code = ord(match.group())
            return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else "\ufffd"

        return SURROGATE.sub(shown, text).encode("utf-8")


def append_whole(path: Path, data: bytes, *, keep: int | None = None) -> int:
    """Append ``data`` to ``path`` (made if missing), whole or not at all: no file ends in half a line.

    On any way out before all of ``data`` is written (a full disk, a file grown past its limit, Ctrl-C
    between two writes), the file is cut back to its size before, or to ``keep`` bytes (the start of
    a group of lines that belong together). Unless something else wrote to it meanwhile (a file two
    processes append to): then it is left as it is. What cannot be cut (``/dev/stdout`` as a pipe,
    ``/dev/full``) is left as it is, too.

    Args:
        path: the file (opened for appending, so a symbolic link's file is written).
        data: what to append.
        keep: how many bytes to keep on a failure (at most the size before); default: the size before.

    Returns:
        The file's size before ``data`` (0 for a device or a pipe).

    Raises:
        OSError: ``data`` could not all be written (the file is cut back).
    """
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        before = os.fstat(fd).st_size
        written = 0
        try:
            view = memoryview(data)
            while written < len(view):
                count = os.write(fd, view[written:])
                if count == 0:  # no progress and no error: do not spin
                    raise OSError(errno.EIO, os.strerror(errno.EIO), str(path))
                written += count
        except BaseException:  # re-raised: the file keeps no part of data
            with suppress(OSError):
                if os.fstat(fd).st_size == before + written:  # nobody else appended meanwhile
                    os.ftruncate(fd, min(before, keep) if keep is not None else before)
            raise
        return before
    finally:
        os.close(fd)


def write_remedy(exc: OSError) -> str:
    """What to do about the reason a file could not be written (``make room on its disk``)."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return "make room on its disk"
    if exc.errno == errno.EFBIG:  # past the file size limit of the process, or of the file system
        return "allow larger files (ulimit -f) or give it a file system that takes them"
    if exc.errno in (errno.EMFILE, errno.ENFILE):
        return "allow more open files (ulimit -n) or pass a lower --concurrency"
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return "make the folder writable"
    if exc.errno == errno.ENAMETOOLONG:
        return "give it a shorter name"
    return "mend the folder"  # a file or a folder in the way, a folder gone


def write_error(path: Path, exc: OSError) -> RunWriteError:
    """The :class:`RunWriteError` for ``path`` that could not be written: the file, the system's reason
    (``logs/zorkmcp_events.jsonl: cannot be written (No space left on device)``) and the remedy, caused
    by ``exc``."""
    error = RunWriteError(f"{path}: cannot be written ({exc.strerror or exc})", remedy=write_remedy(exc))
    error.__cause__ = exc
    return error
