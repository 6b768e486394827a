"""A replay plays with the settings its cassette recorded, and says that it is a replay.

MCP on or off, ``max_tool_iterations`` and the agent's sampling shape the requests, so a replay takes
them from the cassette's header (as it takes the seed and the turn limit), unless ``--no-mcp`` is
given: a mismatch known before the start is one line, before anything starts. ``--model`` and
``--base-url`` are not used by a replay, and it says so. Every record a replay leaves (the event
log, the episode log, ``--summary-json``) names the cassette it played (``replayed_from``).
Real Zork, real MCP servers (the think tool in process), the offline scripted model or the loopback
LLM to record; a replay needs no model at all.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

import pytest
from play_support import events_of, read_events
from test_cassette import play, project, turns_of

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)


def with_header(cassette: Path, **fields: Any) -> Path:
    header, *exchanges = cassette.read_text().splitlines()
    cassette.write_text("\n".join([json.dumps({**json.loads(header), **fields}), *exchanges]) + "\n")
    return cassette


def test_a_replay_has_mcp_on_or_off_as_its_recording_had(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    assert play(project(tmp_path / "rec"), "--turns", "3", "--no-mcp", "--record", str(cassette))[0] == 0

    code, out, err = play(project(tmp_path / "replay"), "--replay", str(cassette))  # MCP on in its folder
    assert (code, err) == (0, "")
    assert "model scripted-walkthrough, MCP off (no tools), up to 3 turns" in out
    assert turns_of(tmp_path / "replay") == turns_of(tmp_path / "rec")

    # and the other way: recorded with MCP on, replayed where [tool.zorkgpt.mcp] enabled = false
    with_mcp = tmp_path / "mcp.jsonl"
    assert play(project(tmp_path / "rec-mcp"), "--turns", "3", "--record", str(with_mcp))[0] == 0
    code, out, err = play(project(tmp_path / "replay-mcp", enabled=False), "--replay", str(with_mcp))
    assert (code, err) == (0, "")
    assert "model scripted-walkthrough, MCP on, up to 3 turns" in out
    assert turns_of(tmp_path / "replay-mcp") == turns_of(tmp_path / "rec-mcp")


def test_the_recorded_sampling_and_tool_iterations_are_the_replays(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    recording = project(tmp_path / "rec")
    text = recording.read_text().replace("enabled = true\n", "enabled = true\nmax_tool_iterations = 1\n")
    recording.write_text(text + "[tool.zorkgpt.agent_sampling]\ntemperature = 0.3\ntop_k = 40\n")
    forced = (
        "warning: Turn 1: Agent exited tool loop without content after 1 iterations; forcing final action"
    )
    assert play(recording, "--turns", "3", "--record", str(cassette))[::2] == (0, forced)  # one think call
    settings = json.loads(cassette.read_text().splitlines()[0])["settings"]
    assert (settings["max_tool_iterations"], settings["agent_sampling"]["temperature"]) == (1, 0.3)

    code, _, err = play(project(tmp_path / "replay"), "--replay", str(cassette))  # neither set there
    assert (code, err) == (0, forced)  # the same turns: with 20 iterations there would be no forced call
    assert turns_of(tmp_path / "replay") == turns_of(tmp_path / "rec")
    (complete,) = events_of(read_events(tmp_path / "replay" / "logs" / "events.jsonl"), "episode_complete")
    assert (complete["stopped"], complete["turns"]) == ("turn limit", 3)


def test_no_mcp_for_a_recording_with_mcp_on_stops_before_anything_starts(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    assert play(project(tmp_path / "rec"), "--turns", "2", "--record", str(cassette))[0] == 0

    code, out, err = play(project(tmp_path / "replay"), "--no-mcp", "--replay", str(cassette))
    assert (code, out) == (2, "")
    assert err == (
        f"zorkmcp play: cassette error: {cassette}: the cassette was recorded with MCP on (its header's "
        "settings.mcp_enabled is true), and this run turns it off, so the tools offered would differ at "
        "turn 1; drop --no-mcp"
    )
    assert not (tmp_path / "replay" / "logs").exists()


def test_a_header_whose_sampling_is_not_valid_exits_2_naming_the_field(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    assert play(project(tmp_path / "rec"), "--turns", "1", "--record", str(cassette))[0] == 0
    sampling = {"temperature": 7, "top_p": None, "top_k": None, "min_p": None, "max_tokens": None}
    settings = {"mcp_enabled": True, "max_tool_iterations": 20, "agent_sampling": sampling}
    with_header(cassette, settings=settings)

    code, out, err = play(project(tmp_path / "replay"), "--replay", str(cassette))
    assert (code, out) == (2, "")
    assert err == (
        f"zorkmcp play: cassette error: {cassette}: the header's settings.agent_sampling is not valid "
        "(temperature must be <= 2, got 7); record the cassette again"
    )


def test_model_and_base_url_are_said_to_be_unused_by_a_replay(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    assert play(project(tmp_path / "rec"), "--turns", "2", "--record", str(cassette))[0] == 0

    flags = ["--model", "other/model", "--base-url", "http://127.0.0.1:9/v1", "--replay", str(cassette)]
    code, out, err = play(project(tmp_path / "replay"), *flags)
    assert code == 0, err
    assert err == (
        "warning: --model other/model and --base-url are not used with --replay: no model is called, the "
        "cassette answers as the recorded model scripted-walkthrough"
    )
    assert "model scripted-walkthrough, MCP on, up to 2 turns" in out
    code, _, err = play(project(tmp_path / "again"), "--model", "m", "--replay", str(cassette))
    assert (code, err) == (
        0,
        "warning: --model m is not used with --replay: no model is called, the cassette answers as the "
        "recorded model scripted-walkthrough",
    )


def test_a_replay_names_its_cassette_in_every_record_it_leaves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    recorded_summary, replayed_summary = tmp_path / "rec.json", tmp_path / "replay.json"
    flags = ["--turns", "2", "--record", "c.jsonl", "--summary-json", str(recorded_summary)]
    assert play(project(tmp_path / "rec"), *flags)[0] == 0

    flags = ["--replay", "c.jsonl", "--summary-json", str(replayed_summary)]
    code, _, err = play(project(tmp_path / "replay"), *flags)
    assert code == 0, err

    # the path as it was given (relative here), not made absolute
    replayed = read_events(tmp_path / "replay" / "logs" / "events.jsonl")
    ((start,), (complete,)) = events_of(replayed, "episode_start"), events_of(replayed, "episode_complete")
    assert (start["replayed_from"], complete["replayed_from"]) == ("c.jsonl", "c.jsonl")
    assert json.loads(replayed_summary.read_text())["replayed_from"] == "c.jsonl"
    first = (tmp_path / "replay" / "logs" / "episode.log").read_text().splitlines()[0]
    assert re.search(
        r"Episode episode-[0-9a-f]{12}: zork1 \(zork1\.z3, seed 12\), model scripted-walkthrough \(offline "
        r"scripted model\), MCP on, up to 2 turns, replayed from the cassette c\.jsonl$",
        first,
    ), first

    # the recording itself is no replay: none of its records has the key
    recorded = read_events(tmp_path / "rec" / "logs" / "events.jsonl")
    for event in [*events_of(recorded, "episode_start"), *events_of(recorded, "episode_complete")]:
        assert "replayed_from" not in event
    assert list(json.loads(recorded_summary.read_text())) == [
        "score",
        "max_score",
        "moves",
        "turns",
        "victory",
        "game_over",
        "tool_calls",
        "llm_requests",
        "prompt_tokens",
        "completion_tokens",
        "model",
        "scripted",
        "stopped",
        "error",
    ]
