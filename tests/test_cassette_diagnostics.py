"""What a replay says when the cassette and the run part ways, and how a replay is labelled.

A mismatch names the cassette's line, the message and its field, and shows both sides around the
first character that differs; blank lines are skipped and a bad line is named; a recording cut
short replays the turns it holds; a replay carries the recorded model's name and kind.
Real Zork and the offline scripted model or the loopback LLM where an episode is played.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import pytest
from llm_server import agent_reply
from play_support import events_of, read_events
from test_bridge import llm_in_thread
from test_cassette import play, project, turns_of

from zorkmcp.errors import CassetteError, CassetteMismatchError
from zorkmcp.llm import CassetteHeader, CompletionRequest, RecordingModel, ReplayModel, ScriptedModel

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)


STATE = "Turn 5. Location: Forest Path.\n" + "".join(
    f"- Turn {n}: > N -> North of House\n" for n in range(1, 9)
)


async def recorded(path: Path, *requests: CompletionRequest) -> Path:
    model = RecordingModel(ScriptedModel(["north"] * 9), path, CassetteHeader(model="scripted-walkthrough"))
    for request in requests:
        await model.complete(request)
    return path


def tool_round(arguments: str) -> CompletionRequest:
    call = {"id": "c1", "type": "function", "function": {"name": "think", "arguments": arguments}}
    return CompletionRequest(
        [
            {"role": "user", "content": "West of House."},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ]
    )


async def test_a_changed_text_shows_both_sides_at_the_first_difference(tmp_path: Path) -> None:
    cassette = await recorded(
        tmp_path / "c.jsonl",
        CompletionRequest([{"role": "user", "content": "West of House."}]),
        CompletionRequest([{"role": "system", "content": "Play."}, {"role": "user", "content": STATE}]),
    )
    changed = STATE.replace("- Turn 4: > N", "- Turn 4: > S")
    replay = ReplayModel(cassette)
    await replay.complete(CompletionRequest([{"role": "user", "content": "West of House."}]))
    at = STATE.index("- Turn 4: > N") + len("- Turn 4: > ")
    message = (
        f"cassette {cassette} line 3, turn 2: the engine sent a request the cassette does not have "
        f"there: message 1 (user), its content, differs at character {at} (of {len(STATE)} on the "
        f"cassette, {len(changed)} in this run): the cassette has "
        '…"rn 3: > N -> North of House\\n- Turn 4: > N -> North of House\\n- Turn 5: > N -> Nor"…, '
        'this run sent …"rn 3: > N -> North of House\\n- Turn 4: > S -> North of House'
        '\\n- Turn 5: > N -> Nor"…'
    )
    with pytest.raises(CassetteMismatchError, match=f"^{re.escape(message)}$"):
        await replay.complete(
            CompletionRequest([{"role": "system", "content": "Play."}, {"role": "user", "content": changed}])
        )


async def test_a_changed_tool_call_argument_names_the_field(tmp_path: Path) -> None:
    cassette = await recorded(tmp_path / "c.jsonl", tool_round('{"thought": "req 3"}'))
    message = (
        f"cassette {cassette} line 2, turn 0: the engine sent a request the cassette does not have there: "
        "message 1 (assistant), its tool_calls[0].function.arguments, differs at character 13 (of 20 on "
        'the cassette, 20 in this run): the cassette has "{\\"thought\\": \\"req 3\\"}", this run sent '
        '"{\\"thought\\": \\"REQ 3\\"}"'
    )
    with pytest.raises(CassetteMismatchError, match=f"^{re.escape(message)}$"):
        await ReplayModel(cassette).complete(tool_round('{"thought": "REQ 3"}'))


async def test_blank_lines_are_skipped_and_a_bad_line_is_named(tmp_path: Path) -> None:
    request = CompletionRequest([{"role": "user", "content": "West of House."}])
    cassette = await recorded(tmp_path / "c.jsonl", request, request)
    header, first, second = cassette.read_text().splitlines()

    blank = tmp_path / "blank.jsonl"  # a blank line in the middle, and an editor's trailing newline
    blank.write_text(f"{header}\n{first}\n\n  \n{second}\n\n")
    replay = ReplayModel(blank)
    assert (replay.turns, replay.remaining) == (2, 2)
    await replay.complete(request)
    with pytest.raises(CassetteMismatchError, match=rf"^cassette {re.escape(str(blank))} line 5, turn 2: "):
        await replay.complete(CompletionRequest([{"role": "user", "content": "Kitchen."}]))

    bad = tmp_path / "bad.jsonl"
    bad.write_text(f"{header}\n\n{first}\n{second[:-1]}\n")
    with pytest.raises(
        CassetteError,
        match=rf"^{re.escape(str(bad))}: not a zorkmcp cassette \(line 4 is not JSON: Expecting ',' "
        r"delimiter at column \d+\)$",
    ):
        ReplayModel(bad)


def with_header(cassette: Path, **fields: Any) -> Path:
    header, *exchanges = cassette.read_text().splitlines()
    cassette.write_text("\n".join([json.dumps({**json.loads(header), **fields}), *exchanges]) + "\n")
    return cassette


def test_a_recording_cut_short_replays_the_turns_it_holds_and_says_so(tmp_path: Path) -> None:
    # as Ctrl-C after 3 turns of --turns 50 leaves it: the header says 50, the cassette holds 3
    cassette = tmp_path / "c.jsonl"
    assert play(project(tmp_path / "rec"), "--turns", "3", "--record", str(cassette))[0] == 0
    with_header(cassette, max_turns=50)

    summary = tmp_path / "s.json"
    code, out, err = play(
        project(tmp_path / "replay"), "--replay", str(cassette), "--summary-json", str(summary)
    )
    assert code == 0, err
    # the recorded turn limit, not the turns the cassette holds; it stops where the cassette ends
    assert "up to 50 turns (the cassette holds 3)" in out
    assert re.search(r"stopped\s+│ end of cassette", " ".join(out.split())), out
    assert err == (
        f"warning: {cassette}: the recording was cut short (Ctrl-C, an error or a crash): the cassette "
        "holds 3 of the recorded episode's 50 turns, and the replay played them all"
    )
    assert turns_of(tmp_path / "replay") == turns_of(tmp_path / "rec")
    events = read_events(tmp_path / "replay" / "logs" / "events.jsonl")
    ((start,), (complete,)) = events_of(events, "episode_start"), events_of(events, "episode_complete")
    assert start["max_turns"] == 50
    assert (complete["stopped"], complete["turns"]) == ("end of cassette", 3)
    assert json.loads(summary.read_text())["stopped"] == "end of cassette"


def test_a_cassette_that_holds_no_turn_says_so(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    cassette.write_text(json.dumps(CassetteHeader(model="m", max_turns=50).to_json()) + "\n")
    code, _, err = play(project(tmp_path), "--no-mcp", "--replay", str(cassette))
    assert code == 1
    assert err.endswith(
        f"zorkmcp play: the model failed (CassetteMismatchError): cassette {cassette}, turn 1: the "
        "cassette holds no turn (its recording stopped before the model's first answer); there is "
        "nothing to replay"
    ), err
    assert "--turns 0" not in err


def test_a_replay_carries_the_recorded_model_and_says_it_is_a_replay(tmp_path: Path) -> None:
    cassette, summary = tmp_path / "llm.jsonl", tmp_path / "s.json"
    with llm_in_thread(default=agent_reply("look")) as llm:
        pyproject = project(tmp_path / "rec")
        pyproject.write_text(
            pyproject.read_text()
            + f'\n[tool.zorkgpt.llm]\nclient_base_url = "{llm.base_url}"\nagent_model = "walker"\n'
        )
        assert play(pyproject, "--turns", "2", "--no-mcp", "--record", str(cassette))[0] == 0
    assert json.loads(cassette.read_text().splitlines()[0])["scripted"] is False

    code, out, err = play(
        project(tmp_path / "replay"), "--no-mcp", "--replay", str(cassette), "--summary-json", str(summary)
    )
    assert code == 0, err
    assert re.search(r"│ model\s+│ walker \(replayed from the cassette\s", out), out
    assert "offline scripted model" not in out
    written = json.loads(summary.read_text())
    assert (written["model"], written["scripted"]) == ("walker", False)

    scripted = tmp_path / "scripted.jsonl"  # the offline scripted model's episode stays scripted
    assert play(project(tmp_path / "rec2"), "--turns", "2", "--no-mcp", "--record", str(scripted))[0] == 0
    code, out, _ = play(
        project(tmp_path / "replay2"), "--no-mcp", "--replay", str(scripted), "--summary-json", str(summary)
    )
    assert code == 0
    assert "scripted-walkthrough (offline scripted model, replayed from the cassette" in " ".join(out.split())
    assert json.loads(summary.read_text())["scripted"] is True
    # a cassette of an older zorkmcp (no "scripted" in its header): the recorded model's name tells
    assert ReplayModel(with_header(cassette, scripted=None)).scripted is False
    assert ReplayModel(with_header(scripted, scripted=None)).scripted is True
