"""The files the commands write: can they be made there (:func:`check_output`, before anything
starts), is each a file of its own, none of them a file the command reads (:func:`check_apart`),
writing one so that a reader never sees half of it (:func:`write_atomically`; the temporary files a
killed writer left are removed by :func:`remove_left_temp_files`), and appending to one so that it
never ends in half a line (:func:`append_whole`).

A path under a file (``--out /dev/null/x``), or in a folder this user cannot write, would otherwise
be found when the command first writes it: after an episode played for nothing, with a traceback.
Standard library only (the commands call this before they import the engine).
"""

from __future__ import annotations

import errno
import os
import re
import stat
import sys
import time
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Final

from ._surrogates import SURROGATE
from .errors import ConfigError, RunWriteError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

__all__ = [
    "append_whole",
    "check_apart",
    "check_output",
    "file_identity",
    "open_pipe",
    "remove_left_temp_files",
    "temp_path",
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
    _check_encodable(path, named, remedy)
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


def file_identity(path: Path) -> tuple[int, int] | str:
    """What tells the file ``path`` leads to from any other: two paths lead to one file when theirs are equal.

    The file's device and inode when there is one (through any symbolic link, and alike for each
    hard link of it), else the path with its links resolved (the file a write would make).
    """
    try:
        found = os.stat(path)  # follows a symbolic link
    except (OSError, ValueError):
        return os.path.realpath(path)
    return (found.st_dev, found.st_ino)


def check_apart(outputs: Iterable[tuple[str, str, Path, str]], inputs: Iterable[tuple[str, Path]]) -> None:
    """Raise a one-line :class:`ConfigError` when an output is one of the ``inputs``, or another output.

    Paths are compared by :func:`file_identity`: a symbolic or a hard link to an input is that input.
    Outputs written in place (:func:`written_in_place`: ``/dev/stdout``, a device, a named pipe)
    replace nothing, and may be shared.

    Args:
        outputs: ``(what, named, path, remedy)`` for each: how another output's message names it
            (``--summary-json``), how its own message does (``--summary-json x.json``), the path, and
            what to do instead (``pass another --summary-json``).
        inputs: ``(what, path)`` for each file the command reads, or must leave as it is; ``what``
            says what it is (``the game, which play reads``).

    Raises:
        ConfigError: ``{named}: that is {what}; {remedy}``, or ``{named}: the same file as {what},
            and one file cannot be both; {remedy}``.
    """
    read = {file_identity(path): what for what, path in inputs}
    written: dict[tuple[int, int] | str, str] = {}
    for what, named, path, remedy in outputs:
        if written_in_place(path):
            continue
        same = file_identity(path)
        if same in read:
            raise ConfigError(f"{named}: that is {read[same]}; {remedy}")
        if same in written:
            raise ConfigError(
                f"{named}: the same file as {written[same]}, and one file cannot be both; {remedy}"
            )
        written[same] = what


_TMP_EXTRA = len(".{name}.4194304.tmp") - len("{name}")
"""How much longer the temporary file's name is than its target's (:func:`write_atomically`)."""


def _check_encodable(path: Path, named: str, remedy: str) -> None:
    """``path`` can be a name on this system: Python names a file in the locale's encoding.

    In the C or POSIX locale (``LC_ALL=C`` with ``PYTHONCOERCECLOCALE=0``, or where no UTF-8 locale
    is installed) that is ASCII, in a Latin-1 locale Latin-1: a path a settings file gives
    (``json_log_file = "logs/événements.jsonl"``, an eval file's ``out``) may hold a character it
    lacks, and every look at that path was a ``UnicodeEncodeError`` traceback. (A path given on the
    command line always can: Python keeps its bytes. A lone surrogate, from JSON, never can.)
    """
    try:
        os.fsencode(path)
    except UnicodeEncodeError as exc:
        char = exc.object[exc.start]
        if SURROGATE.fullmatch(char):
            why = f"it holds a lone surrogate (U+{ord(char):04X}), which no file name can"
            fix = remedy
        else:
            encoding = sys.getfilesystemencoding()
            why = (
                f"{char} (U+{ord(char):04X}) cannot be in a file name here: this system names files "
                f"in {encoding}, from the locale (LC_ALL, LC_CTYPE, LANG)"
            )
            fix = f"run it with a UTF-8 locale (LC_ALL=C.UTF-8) or PYTHONUTF8=1, or {remedy}"
        raise ConfigError(f"{named}: {why}; {fix}") from None


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
    os.close(open_written(path, text))


def open_written(path: Path, text: str) -> int:
    """:func:`write_atomically`, and a descriptor open for appending to the file it wrote.

    What is appended to the descriptor (:func:`append_whole`) goes to that file, whatever is later
    renamed to ``path`` or removed from it. The caller closes the descriptor.

    Raises:
        OSError: it cannot be written (a full disk); the temporary file is removed (on any way out).
    """
    data = utf8(text)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
    if written_in_place(path):
        fd = _open_in_place(path, flags)
        try:
            append_whole(fd, data)
        except BaseException:
            os.close(fd)
            raise
        return fd
    target = Path(os.path.realpath(path))  # a link's file (made if the link dangles), not the link
    tmp = temp_path(target)
    fd = -1
    try:
        fd = os.open(tmp, flags | os.O_TRUNC, 0o666)
        append_whole(fd, data)
        os.replace(tmp, target)
    except BaseException:  # a full disk, or Ctrl-C in the middle: no temporary file is left
        if fd >= 0:
            os.close(fd)
        with suppress(OSError):
            tmp.unlink(missing_ok=True)
        raise
    return fd


def temp_path(target: Path) -> Path:
    """The temporary file :func:`write_atomically` writes ``target`` through: ``.NAME.PID.tmp`` beside it."""
    return target.with_name(f".{target.name}.{os.getpid()}.tmp")


_TEMP_NAME = re.compile(r"\.(?P<name>.+)\.(?P<pid>[1-9][0-9]{0,9})\.tmp")
"""A name :func:`temp_path` makes: the target's name and the writer's process id."""

_PID_MAX: Final = 2**22
"""The largest process id a system gives (Linux's ``pid_max`` can be set no higher)."""


def _running(pid: int) -> bool:
    """Whether a process ``pid`` runs on this machine (another user's too; a zombie counts)."""
    try:
        os.kill(pid, 0)  # signal 0: only asks
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it runs, as another user
        return True
    return True


def remove_left_temp_files(folder: Path, is_target: Callable[[str], bool]) -> list[Path]:
    """Remove the temporary files in ``folder`` that a process killed inside :func:`write_atomically` left.

    Only ``.NAME.PID.tmp`` files (regular files, not links or folders) whose ``NAME`` passes
    ``is_target`` and whose process ``PID`` no longer runs: one of a running process may be being
    written (another command writing there, this very process), so it stays. (A process id the
    system has since given to another process keeps its file: left, never one removed too many.)

    Returns:
        The files removed, sorted; a folder that cannot be read, or a file that cannot be removed,
        is left as it is (it harms nothing).
    """
    removed = []
    try:
        with os.scandir(folder) as entries:
            found = [(entry.name, entry.is_file(follow_symlinks=False)) for entry in entries]
    except OSError:
        return []
    for name, is_file in sorted(found):
        match = _TEMP_NAME.fullmatch(name)
        if not is_file or match is None or not is_target(match["name"]):
            continue
        pid = int(match["pid"])
        if pid > _PID_MAX or _running(pid):
            continue
        path = folder / name
        try:
            path.unlink()
        except OSError:  # gone meanwhile, or a folder that is not writable
            continue
        removed.append(path)
    return removed


PIPE_WAIT: Final = 0.05
"""Seconds between two tries to open a named pipe that no process reads yet (:func:`_open_in_place`)."""


def open_pipe(path: Path, flags: int) -> int | None:
    """``path`` opened for writing, without waiting, when it is a named pipe; ``None`` when it is not.

    (Nothing there, or a path not to be looked at, is not a pipe: whoever opens it says why.)

    Raises:
        OSError: ``ENXIO`` when no process reads the pipe yet; any other reason it cannot be opened.
    """
    try:
        if not stat.S_ISFIFO(os.stat(path).st_mode):
            return None
    except OSError:
        return None
    fd = os.open(path, flags | os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), 0o666)
    os.set_blocking(fd, True)  # a reader that is slow holds the writes back, as any pipe does
    return fd


def _open_in_place(path: Path, flags: int) -> int:
    """``os.open`` of a path written in place; a named pipe is waited for in short steps, not in one.

    Opening a named pipe for writing waits until a process opens it for reading. Waiting in one
    ``open`` is not interrupted by a Ctrl-C that the system hands to another of the process's
    threads (trio's worker threads, idle after a run): the main thread sleeps on in the system
    call, and the handler that would stop it runs only once a reader comes (a third Ctrl-C while
    ``zorkmcp eval`` wrote a ``summary.json`` that is a named pipe was lost in 2 runs of 12). Tried
    without waiting every :data:`PIPE_WAIT` seconds instead, the press is handled at the next try.
    """
    while True:
        try:
            fd = open_pipe(path, flags)
        except OSError as exc:
            if exc.errno != errno.ENXIO:  # ENXIO: no process reads it yet
                raise
            time.sleep(PIPE_WAIT)
            continue
        return fd if fd is not None else os.open(path, flags, 0o666)


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


def append_whole(path: Path | int, data: bytes, *, keep: int | None = None) -> int:
    """Append ``data`` to ``path`` (made if missing), whole or not at all: no file ends in half a line.

    On any way out before all of ``data`` is written (a full disk, a file grown past its limit, Ctrl-C
    between two writes), the file is cut back to its size before, or to ``keep`` bytes (the start of
    a group of lines that belong together). Unless something else wrote to it meanwhile (a file two
    processes append to): then it is left as it is. What cannot be cut (``/dev/stdout`` as a pipe,
    ``/dev/full``) is left as it is, too.

    Args:
        path: the file (opened for appending, so a symbolic link's file is written), or a descriptor
            open for appending (:func:`open_written`; it stays open).
        data: what to append.
        keep: how many bytes to keep on a failure (at most the size before); default: the size before.

    Returns:
        The file's size before ``data`` (0 for a device or a pipe).

    Raises:
        OSError: ``data`` could not all be written (the file is cut back).
    """
    if isinstance(path, int):
        return _append_whole(path, data, keep, str(path))
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o666)
    try:
        return _append_whole(fd, data, keep, str(path))
    finally:
        os.close(fd)


def _append_whole(fd: int, data: bytes, keep: int | None, name: str) -> int:
    before = os.fstat(fd).st_size
    written = 0
    try:
        view = memoryview(data)
        while written < len(view):
            count = os.write(fd, view[written:])
            if count == 0:  # no progress and no error: do not spin
                raise OSError(errno.EIO, os.strerror(errno.EIO), name)
            written += count
    except BaseException:  # re-raised: the file keeps no part of data
        with suppress(OSError):
            if os.fstat(fd).st_size == before + written:  # nobody else appended meanwhile
                os.ftruncate(fd, min(before, keep) if keep is not None else before)
        raise
    return before


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
    if exc.errno == errno.ENOENT and not os.path.isabs(exc.filename or "") and _cwd_removed():
        # a relative path (logs/, runs/…), where the shell's folder was removed while the command ran
        return "cd to a folder that exists (the current folder was removed while the command ran)"
    return "mend the folder"  # a file or a folder in the way, a folder gone


def _cwd_removed() -> bool:
    """Whether the current folder was removed (``rm -rf`` of the folder a command runs in)."""
    try:
        os.getcwd()
    except FileNotFoundError:
        return True
    except OSError:  # cannot be told (EACCES on a folder above): not that
        return False
    return False


def write_error(path: Path, exc: OSError) -> RunWriteError:
    """The :class:`RunWriteError` for ``path`` that could not be written: the file, the system's reason
    (``logs/zorkmcp_events.jsonl: cannot be written (No space left on device)``) and the remedy, caused
    by ``exc``."""
    error = RunWriteError(f"{path}: cannot be written ({exc.strerror or exc})", remedy=write_remedy(exc))
    error.__cause__ = exc
    return error
