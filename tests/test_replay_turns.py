"""A replay plays the recorded episode's turn limit (``--replay`` with and without ``--turns``).

Real Zork, real MCP servers (the think tool in process, the game server as a subprocess); the
offline scripted model records, a replay needs no model at all. A cassette of an older zorkmcp has
no ``max_turns`` in its header: it replays the turns it holds.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import pytest
from play_support import events_of, read_events
from play_support import zork1_path as zork1
from test_cassette import play, project, turns_of
from test_orchestrator import THREE_DEATHS

from zorkmcp.config import Settings
from zorkmcp.errors import CassetteMismatchError
from zorkmcp.llm import CassetteHeader, CompletionRequest, RecordingModel, ReplayModel, ScriptedModel
from zorkmcp.orchestrator import Orchestrator

if TYPE_CHECKING:
    from pathlib import Path

    import trio.testing


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)


def header_of(cassette: Path) -> dict[str, Any]:
    return dict(json.loads(cassette.read_text().splitlines()[0]))


def as_older_cassette(cassette: Path, older: Path) -> Path:
    """The same cassette as an older zorkmcp wrote it: no ``max_turns`` in the header."""
    header, *exchanges = cassette.read_text().splitlines()
    fields = json.loads(header)
    fields.pop("max_turns", None)  # (recorded by this zorkmcp: it is there)
    older.write_text("\n".join([json.dumps(fields), *exchanges]) + "\n")
    return older


def ending(folder: Path) -> tuple[Any, ...]:
    """How the episode logged in ``folder`` ended: (stopped, turns, score, victory, game over)."""
    (complete,) = events_of(read_events(folder / "logs" / "events.jsonl"), "episode_complete")
    return (
        complete["stopped"],
        complete["turns"],
        complete["score"],
        complete["victory"],
        complete["game_over"],
    )


def test_a_replay_without_turns_plays_the_recorded_turn_limit(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    code, _, err = play(project(tmp_path / "rec"), "--turns", "8", "--record", str(cassette))
    assert code == 0, err
    assert header_of(cassette)["max_turns"] == 8

    code, out, err = play(project(tmp_path / "replay"), "--replay", str(cassette))
    assert code == 0, err
    assert "up to 8 turns" in out
    assert ending(tmp_path / "replay") == ("turn limit", 8, 5, False, False)
    assert turns_of(tmp_path / "replay") == turns_of(tmp_path / "rec")


def test_an_older_cassette_without_a_turn_limit_replays_the_turns_it_holds(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    assert play(project(tmp_path / "rec"), "--turns", "8", "--record", str(cassette))[0] == 0
    older = as_older_cassette(cassette, tmp_path / "older.jsonl")

    code, out, err = play(project(tmp_path / "replay"), "--replay", str(older))
    assert code == 0, err
    assert "up to 8 turns" in out
    assert ending(tmp_path / "replay") == ("turn limit", 8, 5, False, False)
    assert turns_of(tmp_path / "replay") == turns_of(tmp_path / "rec")
    assert (ReplayModel(older).turns, ReplayModel(older).turn_limit) == (8, 8)


def test_an_explicit_turns_wins_and_more_than_the_cassette_holds_says_how_many(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    assert play(project(tmp_path / "rec"), "--turns", "8", "--record", str(cassette))[0] == 0

    code, out, err = play(project(tmp_path / "fewer"), "--turns", "3", "--replay", str(cassette))
    assert code == 0, err
    assert "up to 3 turns" in out
    assert ending(tmp_path / "fewer") == ("turn limit", 3, 0, False, False)

    code, _, err = play(project(tmp_path / "more"), "--turns", "10", "--replay", str(cassette))
    assert code == 1
    assert err == (
        f"error: Episode stopped: CassetteMismatchError: cassette {cassette}, turn 9: the "
        "cassette holds 8 turns and this run asked for one more; replay at most 8 turns (--turns 8) "
        "zorkmcp play: the model failed (CassetteMismatchError): cassette "
        f"{cassette}, turn 9: the cassette holds 8 turns and this run asked for one more; "
        "replay at most 8 turns (--turns 8)"
    )
    assert ending(tmp_path / "more")[:2] == ("error", 8)


def test_an_episode_that_ended_by_game_over_replays_to_the_same_end(tmp_path: Path) -> None:
    cassette = tmp_path / "deaths.jsonl"
    recorded = Orchestrator(
        Settings.from_pyproject(project(tmp_path / "rec", enabled=False)),
        game_path=zork1(),
        seed=12,
        walkthrough=THREE_DEATHS,
        record=cassette,
    ).run()
    assert (recorded.stopped, recorded.turns) == ("game over", 25)
    assert header_of(cassette)["max_turns"] == 500  # max_turns_per_episode

    older = as_older_cassette(cassette, tmp_path / "older.jsonl")
    for name, played in (("replay", cassette), ("older", older)):
        code, _, err = play(project(tmp_path / name), "--no-mcp", "--replay", str(played))
        assert code == 0, err
        assert ending(tmp_path / name) == ("game over", 25, 5, False, True)
        assert turns_of(tmp_path / name) == turns_of(tmp_path / "rec")


def test_a_won_episode_replays_to_the_same_victory(tmp_path: Path) -> None:
    cassette = tmp_path / "won.jsonl"
    code, _, err = play(project(tmp_path / "rec"), "--record", str(cassette))
    assert code == 0, err
    assert ending(tmp_path / "rec") == ("victory", 396, 350, True, True)
    assert header_of(cassette)["max_turns"] == 500

    older = as_older_cassette(cassette, tmp_path / "older.jsonl")
    # the replay logs the recorded turn limit (500), not the turns its cassette holds (396); a
    # cassette without one (an older zorkmcp's) can only tell the turns it holds
    for name, played, limit in (("replay", cassette, 500), ("older", older, 396)):
        code, out, err = play(project(tmp_path / name), "--replay", str(played))
        assert code == 0, err
        assert ending(tmp_path / name) == ("victory", 396, 350, True, True)
        (start,) = events_of(read_events(tmp_path / name / "logs" / "events.jsonl"), "episode_start")
        assert start["max_turns"] == limit
        assert f"up to {limit} turns" in out


def test_a_header_whose_turn_limit_is_not_a_number_exits_2_naming_the_file(tmp_path: Path) -> None:
    cassette = tmp_path / "bad.jsonl"
    cassette.write_text('{"format": "zorkmcp-cassette", "version": 1, "model": "m", "max_turns": "all"}\n')
    code, out, err = play(project(tmp_path), "--replay", str(cassette))
    assert code == 2
    assert err == (
        f"zorkmcp play: cassette error: {cassette}: the header's max_turns is 'all', not a number of "
        "turns; record the cassette again"
    )
    assert "Episode summary" not in out


async def test_the_replay_model_says_how_many_turns_it_holds(
    tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    cassette = tmp_path / "c.jsonl"
    request = CompletionRequest([{"role": "user", "content": "West of House."}])
    header = CassetteHeader(model="scripted-walkthrough", max_turns=5)
    await RecordingModel(ScriptedModel(["north"]), cassette, header).complete(request)
    replay = ReplayModel(cassette)
    # the recording stopped after 1 of its 5 turns: a replay plays the turn it holds
    assert (replay.turns, replay.recorded_turn_limit, replay.turn_limit, replay.cut_short) == (1, 5, 1, True)
    await replay.complete(request)
    message = (
        f"cassette {cassette}, turn 2: the cassette holds 1 turn and this run asked for "
        "one more; replay at most 1 turn (--turns 1)"
    )
    with pytest.raises(CassetteMismatchError, match=f"^{re.escape(message)}$"):
        await replay.complete(request)
