"""``zorkmcp._outputs``: the files the commands write are checked before anything starts, written whole."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import pytest

from zorkmcp._outputs import check_output, write_atomically
from zorkmcp.errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path


def test_a_path_that_can_be_made_passes_and_nothing_is_made(tmp_path: Path) -> None:
    check_output(tmp_path / "a" / "b" / "out.json", "--flag x", "pass another --flag")
    check_output(tmp_path / "a" / "run", "--out x", "pass another --out", folder=True, what="the folder")
    (tmp_path / "old.json").write_text("{}")
    check_output(tmp_path / "old.json", "--flag x", "pass another --flag")  # replaced when written
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.json"]


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
