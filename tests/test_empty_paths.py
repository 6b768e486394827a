"""An empty path given to eval, tools or call is a usage error, not the flag left out.

Before, ``zorkmcp eval ''`` (a variable left unset) started the default arm's run, and ``tools
--pyproject ''`` read ``.`` as the settings file. (``eval --out ''`` has its own message.) Real
parts: the command line through :func:`zorkmcp.cli.main`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from zorkmcp.cli import main

if TYPE_CHECKING:
    from pathlib import Path


FILE = "must be the path of a file, got an empty one ('')"


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["eval", ""], f"zorkmcp eval: error: argument FILE.toml: {FILE}"),
        (["eval", "--pyproject", ""], f"zorkmcp eval: error: argument --pyproject: {FILE}"),
        (["tools", "--pyproject", ""], f"zorkmcp tools: error: argument --pyproject: {FILE}"),
        (["tools", "--config", ""], f"zorkmcp tools: error: argument --config: {FILE}"),
        (["call", "--config", "", "x.y", "{}"], f"zorkmcp call: error: argument --config: {FILE}"),
    ],
)
def test_an_empty_path_is_a_usage_error(
    argv: list[str],
    said: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == said
    assert list(tmp_path.iterdir()) == []  # nothing started, nothing written
