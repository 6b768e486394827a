"""``play --record`` that records nothing says so.

The header is written with the model's first answer, so an episode that ends before one (the model
refuses, Ctrl-C while it thinks) leaves no cassette, and a file that was at the path as it was.
That used to happen without a word: the user found no cassette, or an older one, and no reason.
A real loopback model that refuses, real Zork.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import pytest
from llm_server import json_reply
from play_support import write_project
from play_support import zork1_path as zork1
from rich.console import Console
from test_bridge import llm_in_thread

from zorkmcp.cli import main

if TYPE_CHECKING:
    from pathlib import Path

REFUSAL = json_reply({"error": {"message": "no such model"}}, status=404)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)


def play(folder: Path, *extra: str) -> tuple[int, str]:
    logs = {
        "json_log_file": str(folder / "logs" / "events.jsonl"),
        "episode_log_file": str(folder / "logs" / "episode.log"),
    }
    pyproject = write_project(folder, enabled=False, files=logs)
    out, err = io.StringIO(), io.StringIO()
    argv = ["play", "--game", str(zork1()), "--pyproject", str(pyproject), "--turns", "2", "--quiet", *extra]
    code = main(argv, console=Console(file=out, width=400), err=Console(file=err, width=2000))
    return code, err.getvalue()


def test_a_recording_the_model_never_answered_says_no_cassette_was_written(tmp_path: Path) -> None:
    cassette = tmp_path / "new.jsonl"
    with llm_in_thread(REFUSAL) as llm:
        code, err = play(tmp_path, "--base-url", llm.base_url, "--model", "m", "--record", str(cassette))
    assert code == 1
    assert (
        f"warning: --record {cassette}: nothing was recorded, as the episode ended before the model "
        "answered a request; the cassette was not written\n"
    ) in err
    assert not cassette.exists()


def test_an_older_cassette_at_the_path_is_said_to_be_left_as_it_was(tmp_path: Path) -> None:
    cassette = tmp_path / "old.jsonl"
    cassette.write_text("an older recording\n")
    with llm_in_thread(REFUSAL) as llm:
        code, err = play(tmp_path, "--base-url", llm.base_url, "--model", "m", "--record", str(cassette))
    assert code == 1
    assert (
        f"warning: --record {cassette}: nothing was recorded, as the episode ended before the model "
        "answered a request; the cassette was not written (the file that was there is left as it was)\n"
    ) in err
    assert cassette.read_text() == "an older recording\n"


def test_a_recording_that_recorded_turns_gives_no_such_warning(tmp_path: Path) -> None:
    cassette = tmp_path / "played.jsonl"
    code, err = play(tmp_path, "--record", str(cassette))  # the offline scripted model answers
    assert code == 0
    assert err == ""
    assert len(cassette.read_text().splitlines()) == 1 + 2  # the header and one exchange per turn
