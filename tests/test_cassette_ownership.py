"""A recording owns its cassette for the run (``--record``, ``RecordingModel``).

Two recordings of one cassette used to interleave into a file no replay could play, both reporting
success: the header was written by a rename, every exchange appended by path. A recording now holds
an exclusive lock beside the cassette (as ``zorkmcp eval`` holds its run folder) and appends to the
file it wrote. Real processes where the point is two of them, real Zork and the offline scripted
model for ``play``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
from test_cassette import play, project

from zorkmcp.errors import CassetteError
from zorkmcp.llm import (
    CassetteHeader,
    CompletionRequest,
    RecordingModel,
    ReplayModel,
    ScriptedModel,
    open_llm_client,
)

if TYPE_CHECKING:
    from pathlib import Path

    from llm_server import LLMServer

WEST = CompletionRequest([{"role": "user", "content": "West of House."}])
NORTH = CompletionRequest([{"role": "user", "content": "North of House."}])

_HOLDER = """\
import sys
from pathlib import Path

import trio

from zorkmcp.llm import CassetteHeader, CompletionRequest, RecordingModel, ScriptedModel

header = CassetteHeader(model="scripted-walkthrough")
model = RecordingModel(ScriptedModel(["north"]), Path(sys.argv[1]), header)
trio.run(model.complete, CompletionRequest([{"role": "user", "content": "West of House."}]))
print("recording", flush=True)
sys.stdin.read()  # holds the cassette until the test lets it go (or kills it)
"""


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)


def refusal(cassette: Path, pid: int) -> str:
    return (
        f"{cassette}: another recording (pid {pid}) is writing to this cassette; wait for it to end, or "
        "record to another file (nothing was played or recorded)"
    )


def recorder(path: Path, *actions: str) -> RecordingModel:
    return RecordingModel(ScriptedModel(list(actions)), path, CassetteHeader(model="scripted-walkthrough"))


def test_a_second_play_recording_the_same_cassette_stops_before_anything_starts(tmp_path: Path) -> None:
    cassette = tmp_path / "shared.jsonl"
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(cassette)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "recording\n"  # it holds the cassette now
        held = cassette.read_bytes()

        code, out, err = play(project(tmp_path / "b"), "--turns", "2", "--record", str(cassette))
        assert code == 2
        assert err == f"zorkmcp play: cassette error: {refusal(cassette, holder.pid)}"
        assert out == ""  # no banner, no summary: nothing started
        assert not (tmp_path / "b" / "logs").exists()
        assert cassette.read_bytes() == held  # the other recording's cassette is as it was

        holder.kill()  # kill -9: the system lets its lock go; its lock file stays behind
        holder.wait(timeout=30)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(timeout=30)
        assert holder.stdin is not None
        holder.stdin.close()
        assert holder.stdout is not None
        holder.stdout.close()
    assert (tmp_path / ".shared.jsonl.lock").read_text() == f"{holder.pid}\n"

    code, _, err = play(project(tmp_path / "c"), "--turns", "2", "--record", str(cassette))
    assert code == 0, err
    assert ReplayModel(cassette).turns == 2  # a whole new recording, of this run only
    assert not (tmp_path / ".shared.jsonl.lock").exists()  # let go when the run ended


async def test_a_second_recording_model_is_refused_and_the_first_stays_whole(
    tmp_path: Path, llm_server: LLMServer
) -> None:
    cassette = tmp_path / "c.jsonl"
    first = recorder(cassette, "north", "east")
    await first.complete(WEST)
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o-test") as model:
        second = RecordingModel(model, cassette, CassetteHeader(model="gpt-4o-test"))
        with pytest.raises(CassetteError, match=f"^{re.escape(refusal(cassette, os.getpid()))}$"):
            await second.complete(NORTH)
    assert llm_server.requests == []  # refused before its model was asked
    await first.complete(NORTH)
    replay = ReplayModel(cassette)
    assert (replay.turns, replay.remaining) == (2, 2)
    await replay.complete(WEST)
    answer = await replay.complete(NORTH)
    assert json.loads(answer.content or "{}")["action"] == "east"  # the first recording's, not "up"


async def test_a_recording_appends_to_the_file_it_wrote_not_to_what_is_at_its_path_later(
    tmp_path: Path,
) -> None:
    cassette, moved = tmp_path / "c.jsonl", tmp_path / "moved.jsonl"
    model = recorder(cassette, "north", "east")
    await model.complete(WEST)
    cassette.rename(moved)
    cassette.write_text("someone else's file\n")
    await model.complete(NORTH)
    assert cassette.read_text() == "someone else's file\n"
    assert ReplayModel(moved).turns == 2


async def test_a_recording_lets_its_cassette_go_when_it_is_closed(tmp_path: Path) -> None:
    cassette = tmp_path / "new" / "c.jsonl"  # its folder is made when it is claimed
    lock = tmp_path / "new" / ".c.jsonl.lock"
    with recorder(cassette, "north") as model:
        assert lock.read_text() == f"{os.getpid()}\n"
        await model.complete(WEST)
    assert not lock.exists()
    with pytest.raises(CassetteError, match=r"this recording was closed; start another to record again$"):
        await model.complete(NORTH)
    again = recorder(cassette, "east")  # another recording may take it now
    await again.complete(NORTH)
    again.close()
    assert not lock.exists()
    assert ReplayModel(cassette).turns == 1  # it replaced the closed recording's cassette

    with recorder(tmp_path / "unused" / "deeper" / "c.jsonl", "north"):
        assert (tmp_path / "unused" / "deeper" / ".c.jsonl.lock").exists()
    assert not (tmp_path / "unused").exists()  # a claim that recorded nothing leaves no folder
