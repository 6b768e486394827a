"""``zorkmcp._outputs``: the files the commands write are checked before anything starts, written whole."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from zorkmcp._outputs import check_output, write_atomically, written_in_place
from zorkmcp.errors import ConfigError


def test_a_path_that_can_be_made_passes_and_nothing_is_made(tmp_path: Path) -> None:
    check_output(tmp_path / "a" / "b" / "out.json", "--flag x", "pass another --flag")
    check_output(tmp_path / "a" / "run", "--out x", "pass another --out", folder=True, what="the folder")
    (tmp_path / "old.json").write_text("{}")
    check_output(tmp_path / "old.json", "--flag x", "pass another --flag")  # replaced when written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.json"]


def test_a_name_longer_than_the_file_system_takes_is_one_line_before_anything_starts(tmp_path: Path) -> None:
    # Linux file systems take names of 255 bytes; a file zorkmcp writes goes through a temporary
    # ".<name>.<pid>.tmp" beside it, 13 bytes longer. Asking the system about a longer name at all
    # (even Path.is_dir) raises "File name too long".
    with pytest.raises(ConfigError) as caught:
        check_output(tmp_path / ("é" * 125), "--x é…", "pass another --x")
    assert str(caught.value) == (
        f"--x é…: the name {'é' * 24}… is 250 bytes long, and a name zorkmcp writes there can be 242 at "
        "most; pass another --x"
    )
    with pytest.raises(
        ConfigError, match=r"is 256 bytes long, and a name zorkmcp writes there can be 255 at most"
    ):
        check_output(tmp_path / ("d" * 256) / "out.json", "--x d…", "pass another --x")
    longest = tmp_path / ("f" * 242)
    check_output(longest, "--x f…", "pass another --x")
    write_atomically(longest, "{}\n")
    assert longest.read_text() == "{}\n"
    check_output(
        tmp_path / ("r" * 255), "--out r…", "pass another --out", folder=True, what="the run's folder"
    )


def test_what_cannot_be_made_is_one_line_naming_the_input_the_place_and_the_remedy(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("a file\n")
    cases = [
        (
            (tmp_path / "notes.txt" / "deep" / "out.json", False, "the file"),
            f"--x: {tmp_path / 'notes.txt'} is not a folder, so the file "
            f"{tmp_path / 'notes.txt' / 'deep' / 'out.json'} cannot be made there; pass another --x",
        ),
        (
            (tmp_path, False, "the file"),
            f"--x: {tmp_path} is a folder, not a file; pass another --x",
        ),
        (
            (tmp_path / "notes.txt", True, "the run's folder"),
            f"--x: {tmp_path / 'notes.txt'} is not a folder, so the run's folder {tmp_path / 'notes.txt'} "
            "cannot be made there; pass another --x",
        ),
    ]
    for (path, folder, what), message in cases:
        with pytest.raises(ConfigError) as caught:
            check_output(path, "--x", "pass another --x", folder=folder, what=what)
        assert str(caught.value) == message


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes any folder; needs a normal user")
def test_a_folder_that_is_not_writable_is_named(tmp_path: Path) -> None:  # pragma: no cover - not as root
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(ConfigError) as caught:
        check_output(locked / "out.json", "--x", "pass another --x")
    assert str(caught.value) == f"--x: the folder {locked} is not writable; pass another --x"


def test_a_write_that_fails_leaves_neither_a_half_file_nor_a_temporary_one(tmp_path: Path) -> None:
    (tmp_path / "summary.json").mkdir()  # the rename onto a folder fails after the text was written
    with pytest.raises(IsADirectoryError):
        write_atomically(tmp_path / "summary.json", "{}\n")
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]
    write_atomically(tmp_path / "new.json", "{}\n")
    assert (tmp_path / "new.json").read_text() == "{}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.json", "summary.json"]


def test_a_named_pipe_gets_the_text_and_stays_a_pipe(tmp_path: Path) -> None:
    # ``zorkmcp report -o PIPE``: a rename would put a file in its place, and its reader would wait forever
    pipe = tmp_path / "page.fifo"
    os.mkfifo(pipe)
    reader = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)  # a reader first, so that the writer does not wait
    try:
        write_atomically(pipe, "<html>a page</html>\n")
        assert os.read(reader, 1000) == b"<html>a page</html>\n"
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.stat(pipe).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page.fifo"]  # no temporary file beside it


def test_a_descriptor_path_appends_to_what_it_leads_to(tmp_path: Path) -> None:
    # ``--output /dev/stdout >> all.html`` (or ``--summary-json /dev/fd/3 3>sum.json``): the text goes
    # where the descriptor goes, after what is there; before, the rename was tried in /dev/fd and failed
    out = tmp_path / "all.html"
    out.write_text("an earlier page\n")
    fd = os.open(out, os.O_WRONLY | os.O_APPEND)
    try:
        write_atomically(Path(f"/dev/fd/{fd}"), "this page\n")
    finally:
        os.close(fd)
    assert out.read_text() == "an earlier page\nthis page\n"


@pytest.mark.parametrize(
    ("name", "in_place"),
    [
        ("/dev/stdout", True),
        ("/dev/stderr", True),
        ("/dev/fd/3", True),
        ("/proc/self/fd/1", True),
        ("/dev/null", True),  # a device
        ("/dev/shm/report.html", False),  # a file the command makes: replaced whole
        ("/dev/fdx/report.html", False),
    ],
)
def test_what_is_written_as_it_is(name: str, in_place: bool) -> None:
    assert written_in_place(Path(name)) is in_place


def test_a_link_keeps_pointing_at_its_file_which_is_replaced(tmp_path: Path) -> None:
    (tmp_path / "pages").mkdir()
    target = tmp_path / "pages" / "report.html"
    target.write_text("the old page\n")
    link = tmp_path / "report.html"
    link.symlink_to(target)
    write_atomically(link, "the new page\n")
    assert link.is_symlink()
    assert os.readlink(link) == str(target)
    assert target.read_text() == "the new page\n"
    assert sorted(p.name for p in (tmp_path / "pages").iterdir()) == ["report.html"]


def _device(path: Path, minor: int) -> Path:
    """A character device at ``path`` (1, ``minor``: 3 is null, 7 is full), made where root may make one."""
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, minor))
    except PermissionError:
        pytest.skip("making a device needs root (as root, the rename replaced /dev/null itself)")
    return path


def test_a_device_is_written_not_replaced(tmp_path: Path) -> None:
    null = _device(tmp_path / "null", 3)
    write_atomically(null, "a page\n")
    assert stat.S_ISCHR(os.stat(null).st_mode)
    full = _device(tmp_path / "full", 7)
    with pytest.raises(OSError, match="No space left on device"):  # a real ENOSPC, from the kernel
        write_atomically(full, "a page\n")
    assert stat.S_ISCHR(os.stat(full).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full", "null"]


def test_play_with_no_settings_file_says_where_else_the_logs_can_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A folder where logs/ cannot be made (a read-only one, or a file named logs) and no
    # pyproject.toml: "run zorkmcp play from another folder" was the only way out it named.
    from zorkmcp.cli import main
    from zorkmcp.game import PACKAGED_GAME

    monkeypatch.chdir(tmp_path)
    (tmp_path / "logs").write_text("not a folder\n")
    assert main(["play", "--turns", "1", "--game", str(PACKAGED_GAME)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "zorkmcp play: configuration error (ConfigError): [tool.zorkgpt.files] json_log_file "
        f"(logs/zorkmcp_events.jsonl): {tmp_path}/logs is not a folder, so the file "
        "logs/zorkmcp_events.jsonl cannot be made there; run zorkmcp play from another folder, or set "
        "json_log_file and episode_log_file in [tool.zorkgpt.files] of a pyproject.toml (--pyproject PATH)\n"
    )
