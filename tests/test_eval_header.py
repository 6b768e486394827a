"""The run's first line says how many episodes play at once: never more than the run has.

``--episodes 1 --concurrency 16`` said "16 at once". Real Zork, the offline scripted model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from play_support import zork1_path

from zorkmcp.cli import main

if TYPE_CHECKING:
    from pathlib import Path


@pytest.mark.parametrize(
    ("episodes", "flags", "at_once"),
    [
        ("1", ["--no-mcp", "--concurrency", "16"], "1"),
        ("2", ["--compare-mcp"], "4"),  # two arms of two episodes, four at once by default
        ("3", ["--no-mcp", "--concurrency", "2"], "2"),
    ],
)
def test_the_first_line_says_how_many_play_at_once(
    episodes: str, flags: list[str], at_once: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    command = ["eval", "--game", str(zork1_path()), "--episodes", episodes, "--turns", "1", "--out", "run",
               "--quiet", *flags]  # fmt: skip
    assert main(command) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert f"; up to 1 turn; {at_once} at once; writing run" in first, first
