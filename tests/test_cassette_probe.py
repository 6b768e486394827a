"""Cassettes as a user meets them after the recording: mended by hand, saved by an editor, packed,
joined, or recorded into a named pipe (``--record`` / ``--replay``).

A cassette that cannot be replayed is one line naming the file, what is wrong and what to do, exit
2 before anything starts (README, ``zorkmcp play``: a cassette that is not one exits 2 naming the
file and the line), never a traceback in the middle of the episode; one that an editor saved with
a byte order mark, CRLF line endings or raw U+2028 characters still replays. Real Zork, the real
think server in process and the offline scripted model record; a replay needs no model.
"""

from __future__ import annotations

import gzip
import json
import os
import re
from typing import TYPE_CHECKING, Any

import pytest
from test_cassette import play, project, turns_of

from zorkmcp.errors import CassetteError
from zorkmcp.llm import CassetteHeader, CompletionRequest, RecordingModel, ReplayModel, ScriptedModel
from zorkmcp.llm._cassette import CassetteFile

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two turns of Zork recorded with MCP on: turn 1 calls the think tool (lines 2 and 3), turn 2
    answers (line 4). The record folder's event log is the recorded episode's."""
    folder = tmp_path_factory.mktemp("recording")
    cassette = folder / "c.jsonl"
    with pytest.MonkeyPatch.context() as patch:
        for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "GAME", "ZORKMCP_GAME_SEED"):
            patch.delenv(name, raising=False)
        code, _, err = play(project(folder / "rec"), "--turns", "2", "--record", str(cassette))
    assert code == 0, err
    return cassette


def lines_of(cassette: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in cassette.read_text().splitlines()]


def mended(recording: Path, to: Path, mend: Callable[[list[dict[str, Any]]], object]) -> Path:
    """A copy of ``recording`` at ``to`` with its lines (parsed) changed by ``mend``."""
    lines = lines_of(recording)
    mend(lines)
    to.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return to


def refused(tmp_path: Path, cassette: Path) -> str:
    """``play --replay cassette``: exit 2 before anything starts; its one line on stderr."""
    code, out, err = play(project(tmp_path / "replay"), "--replay", str(cassette))
    assert (code, out) == (2, ""), err
    assert not (tmp_path / "replay" / "logs").exists()  # nothing started
    assert "Traceback" not in err
    return err


def reply(index: int, **fields: Any) -> Callable[[list[dict[str, Any]]], object]:
    return lambda lines: lines[index]["response"].update(fields)


@pytest.mark.parametrize(
    ("mend", "wrong"),
    [
        (
            reply(2, usage=7),
            "line 3 is not a recorded exchange (its response's usage is 7, not an object or null)",
        ),
        (
            reply(3, content=5),
            "line 4 is not a recorded exchange (its response's content is 5, not text or null)",
        ),
        (
            reply(1, tool_calls="think"),
            'line 2 is not a recorded exchange (its response\'s tool_calls is "think", not a list or null)',
        ),
        (
            lambda lines: lines[1]["response"]["tool_calls"][0].pop("type"),
            "line 2 is not a recorded exchange (its response's tool_calls[0] has no type)",
        ),
        (
            lambda lines: lines[2]["request"].update(messages="West of House."),
            'line 3 is not a recorded exchange (its request\'s messages is "West of House.", not a list '
            "of messages)",
        ),
    ],
    ids=["usage", "content", "tool_calls", "call without type", "messages"],
)
def test_a_reply_mended_into_the_wrong_kind_exits_2_naming_the_line_and_the_field(
    tmp_path: Path, recording: Path, mend: Callable[[list[dict[str, Any]]], object], wrong: str
) -> None:
    # These used to be met in the middle of the replay, as a traceback (AttributeError, KeyError,
    # TypeError) from the engine or the agent.
    cassette = mended(recording, tmp_path / "mended.jsonl", mend)
    assert refused(tmp_path, cassette) == (
        f"zorkmcp play: cassette error: {cassette}: {wrong}; mend that line, or record the cassette again"
    )


@pytest.mark.parametrize("seed", [-5, "12", 2**40, True])
def test_a_header_seed_that_is_no_game_seed_exits_2_naming_it(
    tmp_path: Path, recording: Path, seed: object
) -> None:
    # -5 and 2**40 used to reach the game server, which did not start (exit 1); "12" and true were
    # dropped in silence, and the replay played seed 12 whatever the recording's was.
    cassette = mended(recording, tmp_path / "seed.jsonl", lambda lines: lines[0].update(seed=seed))
    assert refused(tmp_path, cassette) == (
        f"zorkmcp play: cassette error: {cassette}: the header's seed is {seed!r}, not a game seed "
        "(0 to 2147483647); set it to the seed the episode was recorded with"
    )


def test_a_cassette_an_editor_saved_replays_to_the_same_end(tmp_path: Path, recording: Path) -> None:
    # A byte order mark and CRLF line endings (Notepad), and the answer's text holding U+2028 and
    # U+0085 raw, as `jq -c` writes non-ASCII text: JSON allows both inside a string, and only "\n"
    # ends a cassette's line.
    lines = lines_of(recording)
    answer = json.loads(lines[3]["response"]["content"])
    answer["thinking"] = "north\u2028of\u0085the house"
    lines[3]["response"]["content"] = json.dumps(answer, ensure_ascii=False)
    edited = tmp_path / "edited.jsonl"
    edited.write_bytes(
        b"\xef\xbb\xbf" + "".join(json.dumps(line, ensure_ascii=False) + "\r\n" for line in lines).encode()
    )
    code, _, err = play(project(tmp_path / "replay"), "--replay", str(edited))
    assert (code, err) == (0, "")
    recorded, replayed = turns_of(recording.parent / "rec"), turns_of(tmp_path / "replay")
    assert [turn[0] for turn in replayed] == [turn[0] for turn in recorded] == ["N", "N"]
    assert replayed == recorded


def test_files_that_are_not_cassettes_say_what_is_wrong_and_what_to_do(
    tmp_path: Path, recording: Path
) -> None:
    text = recording.read_bytes()

    packed = tmp_path / "c.jsonl.gz"
    packed.write_bytes(gzip.compress(text))
    assert refused(tmp_path, packed) == (
        f"zorkmcp play: cassette error: {packed}: a gzip-compressed file, not a cassette as zorkmcp writes "
        f"it; decompress it first (gzip -dc {packed} > cassette.jsonl) and replay that"
    )

    folder = tmp_path / "cassettes"
    folder.mkdir()
    assert refused(tmp_path, folder) == (
        f"zorkmcp play: cassette error: {folder}: a folder, not a cassette file; pass the cassette file "
        "itself"
    )

    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert refused(tmp_path, empty) == (
        f"zorkmcp play: cassette error: {empty}: the file is empty, not a cassette (a recording writes its "
        "header with the model's first answer); record it again"
    )

    latin1 = tmp_path / "latin1.jsonl"  # re-saved as Latin-1 by an editor: é is one byte, 0xe9
    header, second, rest = text.split(b"\n", 2)
    latin1.write_bytes(b"\n".join([header, second.replace(b'"role"', b'"r\xe9le"', 1), rest]))
    assert refused(tmp_path, latin1) == (
        f"zorkmcp play: cassette error: {latin1}: not a zorkmcp cassette (line 2 is not UTF-8 text: byte "
        "0xe9 at column 30)"
    )

    newer = mended(recording, tmp_path / "newer.jsonl", lambda lines: lines[0].update(version=2))
    assert refused(tmp_path, newer) == (
        f"zorkmcp play: cassette error: {newer}: cassette version 2; this zorkmcp reads version 1 (written "
        "by a newer zorkmcp: upgrade zorkmcp to replay it)"
    )

    joined = tmp_path / "joined.jsonl"  # cat a.jsonl b.jsonl > joined.jsonl
    joined.write_bytes(text + text)
    assert refused(tmp_path, joined) == (
        f"zorkmcp play: cassette error: {joined}: line 5 is a second cassette header (two cassettes joined "
        "into one file?); replay each cassette from a file of its own"
    )


WEST = CompletionRequest([{"role": "user", "content": "West of House."}])


def _pipe_refusal(pipe: Path) -> str:
    return (
        f"{pipe}: a named pipe that no process reads, so the recording would wait for one; start its "
        f"reader first (cat {pipe} > cassette.jsonl &), or record to a file"
    )


def test_a_named_pipe_no_process_reads_is_refused_before_anything_starts(tmp_path: Path) -> None:
    pipe = tmp_path / "cassette.pipe"
    os.mkfifo(pipe)
    header = CassetteHeader(model="scripted-walkthrough")
    # No reader: opening the pipe used to wait for one in a worker thread, at the model's first
    # answer, where Ctrl-C could not stop it. It is refused when the recording claims it.
    refusal = _pipe_refusal(pipe)
    with pytest.raises(CassetteError, match=f"^{re.escape(refusal)}$"):
        CassetteFile(pipe, header).claim()
    code, out, err = play(project(tmp_path / "play"), "--turns", "1", "--record", str(pipe))
    assert (code, out, err) == (2, "", f"zorkmcp play: cassette error: {refusal}")
    assert not (tmp_path / "play" / "logs").exists()  # nothing started


async def test_a_named_pipe_is_recorded_into_only_while_a_process_reads_it(tmp_path: Path) -> None:
    pipe = tmp_path / "cassette.pipe"
    os.mkfifo(pipe)
    header = CassetteHeader(model="scripted-walkthrough")
    with pytest.raises(CassetteError, match=f"^{re.escape(_pipe_refusal(pipe))}$"):
        CassetteFile(pipe, header).claim()

    # With a reader, the cassette goes through the pipe and replays.
    reader = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
    try:
        with RecordingModel(ScriptedModel(["north"]), pipe, header) as model:
            await model.complete(WEST)
        received = os.read(reader, 65536)
    finally:
        os.close(reader)
    copy = tmp_path / "received.jsonl"
    copy.write_bytes(received)
    replay = ReplayModel(copy)
    assert (replay.turns, replay.remaining) == (1, 1)
    answer = await replay.complete(WEST)
    assert json.loads(answer.content or "{}")["action"] == "north"


def test_the_offline_models_notice_of_a_recording_belongs_to_its_episode(tmp_path: Path) -> None:
    # Before: with --record the notice was given before the episode had its id: the event log's
    # llm_offline_model had no episode_id, and its episode-log line no id before it
    code, _, _ = play(project(tmp_path), "--turns", "1", "--record", str(tmp_path / "c.jsonl"))
    assert code == 0
    lines = [json.loads(line) for line in (tmp_path / "logs" / "events.jsonl").read_text().splitlines()]
    (notice,) = [e for e in lines if e["event_type"] == "llm_offline_model"]
    (start,) = [e for e in lines if e["event_type"] == "episode_start"]
    assert notice["episode_id"] == start["episode_id"]
    episode_log = (tmp_path / "logs" / "episode.log").read_text(encoding="utf-8")
    (said,) = [line for line in episode_log.splitlines() if "No API key for" in line]
    assert f"{start['episode_id']} " in said
