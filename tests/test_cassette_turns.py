"""Where a cassette's turns start and end, read from what the engine sends (``RecordingModel``,
``ReplayModel``), and a cassette cut in the middle of a write.

A turn's forced final call ends with a user message too; it is told from a turn's first request by
that message (the engine's request for the final answer), not by its ``response_format``, which
:class:`~zorkmcp.engine.TurnOptions` leaves ``None`` by default. A cassette whose last line is
incomplete (a crash, ``kill -9``) replays the whole turns before it, as one cut by Ctrl-C does.
The loopback LLM over HTTP and in-process MCP servers for the engine; real Zork for ``play``.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from typing import TYPE_CHECKING

import engine_servers
import pytest
from llm_server import LLMServer, content_reply, tool_call, tool_call_reply
from play_support import events_of, read_events
from test_cassette import play, project, turns_of

from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.engine import TurnOptions, run_turn
from zorkmcp.errors import CassetteMismatchError
from zorkmcp.llm import CassetteHeader, RecordingModel, ReplayModel, open_llm_client
from zorkmcp.mcp import McpManager

if TYPE_CHECKING:
    from pathlib import Path

    from zorkmcp.llm import ChatModel

TOOLS = ServerConfig(name="tools", type="inprocess", module="engine_servers:create_tools_server", timeout=5)
ONE_ROUND = TurnOptions(max_tool_iterations=1)  # final_response_format=None, the default
TEXT = [{"role": "user", "content": "Name a colour."}, {"role": "user", "content": "Name a fruit."}]
PARTS = [{"role": "user", "content": [{"type": "text", "text": "Name a car."}]}]
LAST = [{"role": "user", "content": "Name a tree."}]


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    engine_servers.reset()
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)


async def four_turns(model: ChatModel) -> list[str | None]:
    """Four turns with no answer schema, each forced final call of another shape."""
    manager = McpManager(McpConfig(servers=(TOOLS,)), McpSettings(enabled=True))
    answers = []
    for opening in ([TEXT[0]], [TEXT[1]], PARTS, LAST):
        result = await run_turn(model, opening, open_toolbox=lambda: manager.open_turn(), options=ONE_ROUND)
        answers.append(result.content)
    return answers


async def test_a_forced_final_call_without_a_schema_is_not_a_turn_of_its_own(
    tmp_path: Path, llm_server: LLMServer
) -> None:
    llm_server.script(
        # turn 1: a tool round, then the forced final call (its own user message after the tool result)
        tool_call_reply(tool_call("tools__echo", {"text": "red"})),
        content_reply("red"),
        # turn 2: no answer at all, then the forced final call (added to the turn's user message)
        content_reply(None, finish_reason="length"),
        content_reply("apple"),
        # turn 3: the same with the user message in parts (the request is its last part)
        content_reply(None, finish_reason="length"),
        content_reply("saab"),
        # turn 4: an answer straight away
        content_reply("oak"),
    )
    cassette = tmp_path / "c.jsonl"
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o-test") as model:
        header = CassetteHeader(model="gpt-4o-test", max_turns=4)
        recorded = await four_turns(RecordingModel(model, cassette, header))
    assert recorded == ["red", "apple", "saab", "oak"]
    assert len(cassette.read_text().splitlines()) == 1 + 7

    replay = ReplayModel(cassette)
    assert (replay.turns, replay.turn_limit, replay.cut_short, replay.remaining) == (4, 4, False, 7)
    assert await four_turns(replay) == recorded
    message = (
        f"cassette {cassette}, turn 5: the cassette holds 4 turns and this run asked for one more; "
        "replay at most 4 turns (--turns 4)"
    )
    with pytest.raises(CassetteMismatchError, match=f"^{re.escape(message)}$"):
        await run_turn(replay, LAST, options=ONE_ROUND)


_CUT_IN_THE_FORCED_FINAL = """\
import resource, sys
import trio
from pathlib import Path
from zorkmcp.errors import RunWriteError
from zorkmcp.llm import CassetteHeader, CompletionRequest, RecordingModel, ScriptedModel

path = Path(sys.argv[1])
FORCE = "Please provide your final action now without calling any more tools."
call = {"id": "c1", "type": "function", "function": {"name": "think", "arguments": "{}"}}


def turn(text):
    opening = [{"role": "user", "content": text}]
    rounds = [*opening, {"role": "assistant", "content": None, "tool_calls": [call]}]
    rounds.append({"role": "tool", "tool_call_id": "c1", "content": "x" * 400})
    return opening, [*rounds, {"role": "user", "content": FORCE}]  # no response_format: None


async def main() -> None:
    model = RecordingModel(ScriptedModel(["north", "east"]), path, CassetteHeader(model="scripted"))
    for text in ("West of House.", "North of House."):
        first, final = turn(text)
        await model.complete(CompletionRequest(first))
        if text == "North of House.":  # the disk fills up in the middle of turn 2's forced final call
            resource.setrlimit(resource.RLIMIT_FSIZE, (path.stat().st_size + 100, resource.RLIM_INFINITY))
        try:
            await model.complete(CompletionRequest(final))
        except RunWriteError as exc:
            print(exc)


trio.run(main)
"""


def test_a_forced_final_call_that_cannot_be_written_takes_its_turn_with_it(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    done = subprocess.run(
        [sys.executable, "-c", _CUT_IN_THE_FORCED_FINAL, str(cassette)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == f"{cassette}: cannot be written (File too large)\n"
    lines = cassette.read_text().splitlines()
    assert len(lines) == 3  # the header and turn 1 (its two exchanges): nothing of turn 2
    assert [json.loads(line)["request"]["messages"][0]["content"] for line in lines[1:]] == [
        "West of House.",
        "West of House.",
    ]
    assert ReplayModel(cassette).turns == 1


def cut(cassette: Path, line: int, to: Path) -> Path:
    """``cassette`` as a crash in the middle of writing its line ``line`` leaves it."""
    lines = cassette.read_text().splitlines(keepends=True)
    to.write_text("".join(lines[: line - 1]) + lines[line - 1][: len(lines[line - 1]) // 2])
    return to


@pytest.mark.parametrize(
    ("line", "whole"),
    [
        (9, 5),  # in turn 6's second exchange (after its think call): turn 6 is left out whole
        (10, 6),  # in turn 7's only exchange
    ],
)
def test_a_cassette_whose_last_line_is_incomplete_replays_its_whole_turns(
    tmp_path: Path, line: int, whole: int
) -> None:
    # 8 turns; the scripted model calls think on turns 1 and 6: lines 2-3 are turn 1, 8-9 turn 6
    cassette = tmp_path / "c.jsonl"
    assert play(project(tmp_path / "rec"), "--turns", "8", "--record", str(cassette))[0] == 0
    crashed = cut(cassette, line, tmp_path / "crashed.jsonl")

    summary = tmp_path / "s.json"
    code, out, err = play(
        project(tmp_path / "replay"), "--replay", str(crashed), "--summary-json", str(summary)
    )
    assert code == 0, err
    assert err == (
        f"warning: {crashed}: its last line (line {line}) is incomplete: the recording stopped in the "
        f"middle of a write (a crash or kill -9); the replay plays the {whole} whole turns before it "
        f"warning: {crashed}: the recording was cut short (Ctrl-C, an error or a crash): the cassette "
        f"holds {whole} of the recorded episode's 8 turns, and the replay played them all"
    )
    assert f"up to 8 turns (the cassette holds {whole})" in out
    assert turns_of(tmp_path / "replay") == turns_of(tmp_path / "rec")[:whole]
    (complete,) = events_of(read_events(tmp_path / "replay" / "logs" / "events.jsonl"), "episode_complete")
    assert (complete["stopped"], complete["turns"]) == ("end of cassette", whole)
    assert json.loads(summary.read_text())["stopped"] == "end of cassette"

    # the same cut in a line that is not the last: that cassette is refused, naming the line
    lines = crashed.read_text().splitlines(keepends=True)
    middle = tmp_path / "middle.jsonl"
    middle.write_text("".join(lines[:3]) + lines[3][:100] + "\n" + "".join(lines[4:]) + "\n")
    code, out, err = play(project(tmp_path / "middle"), "--replay", str(middle))
    assert code == 2
    assert re.fullmatch(
        rf"zorkmcp play: cassette error: {re.escape(str(middle))}: not a zorkmcp cassette \(line 4 is "
        r"not JSON: Unterminated string starting at column 57\)",
        err,
    ), err
    assert "Episode summary" not in out


def test_a_cassette_cut_in_its_header_is_refused(tmp_path: Path) -> None:
    header = json.dumps(CassetteHeader(model="m", max_turns=5).to_json())
    cassette = tmp_path / "c.jsonl"
    cassette.write_text(header[:20])
    code, out, err = play(project(tmp_path), "--replay", str(cassette))
    assert (code, out) == (2, "")
    assert err == (
        f"zorkmcp play: cassette error: {cassette}: the cassette is truncated (its header, line 1, is "
        "incomplete); record it again"
    )
