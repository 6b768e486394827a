"""Record an episode to a cassette and replay it offline to the same end (``--record`` / ``--replay``).

Real Zork, real MCP servers (the think tool in process, the game server as a subprocess); the
offline scripted model records, a replay needs no model at all. The cassette is also a ``ChatModel``
for the engine API.
"""

from __future__ import annotations

import io
import json
import re
import resource
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from llm_server import RecordedRequest, Reply, agent_reply
from play_support import INPROCESS_THINKING, events_of, read_events, stopped_by_a_full_disk, write_project
from play_support import zork1_path as zork1
from rich.console import Console
from test_bridge import llm_in_thread

from zorkmcp.cli import main
from zorkmcp.engine import TurnOptions, run_turn
from zorkmcp.errors import CassetteError, CassetteMismatchError
from zorkmcp.llm import CassetteHeader, CompletionRequest, RecordingModel, ReplayModel, ScriptedModel

SECRET = "sk-or-v1-CASSETTE-SECRET-KEY"


def project(folder: Path, **options: Any) -> Path:
    logs = {
        "json_log_file": str(folder / "logs" / "events.jsonl"),
        "episode_log_file": str(folder / "logs" / "episode.log"),
    }
    return write_project(folder, files=logs, mcp_config=INPROCESS_THINKING, **options)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """No API key from the environment: the offline scripted model plays (no real model is called)."""
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)


def play(pyproject: Path, *extra: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    argv = ["play", "--game", str(zork1()), "--pyproject", str(pyproject), "--quiet", *extra]
    code = main(argv, console=Console(file=out, width=120), err=Console(file=err, width=400))
    return code, out.getvalue(), " ".join(err.getvalue().split())


def turns_of(folder: Path) -> list[tuple[Any, ...]]:
    turns = events_of(read_events(folder / "logs" / "events.jsonl"), "turn_complete")
    return [(t["action"], t["score"], t["moves"], [c["name"] for c in t["tools"]]) for t in turns]


def test_a_recorded_episode_replays_offline_to_the_same_end(tmp_path: Path) -> None:
    cassette = tmp_path / "episode.cassette"
    code, _, err = play(project(tmp_path / "rec"), "--turns", "12", "--record", str(cassette))
    assert code == 0, err
    header, *exchanges = [json.loads(line) for line in cassette.read_text().splitlines()]
    assert (header["format"], header["version"], header["seed"], header["game"]) == (
        "zorkmcp-cassette",
        1,
        12,
        "zork1.z3",
    )
    assert header["model"] == "scripted-walkthrough"
    assert header["game_md5"] == "1d4606016ea58ee038da53d994392323"
    assert len(exchanges) == 12 + 3  # one request per turn, plus a tool round on turns 1, 6 and 11

    code, out, err = play(project(tmp_path / "replay"), "--turns", "12", "--replay", str(cassette))
    assert code == 0, err
    assert "Replaying" in out
    recorded, replayed = turns_of(tmp_path / "rec"), turns_of(tmp_path / "replay")
    assert replayed == recorded
    # Jericho's walkthrough, played by the scripted model; the think tool on turns 1, 6 and 11.
    assert [t[0] for t in recorded[:4]] == ["N", "N", "U", "Get egg"]
    assert [bool(t[3]) for t in recorded].count(True) == 3


def test_a_replay_that_differs_stops_naming_the_turn_and_the_difference(tmp_path: Path) -> None:
    cassette = tmp_path / "episode.cassette"
    assert play(project(tmp_path / "rec"), "--turns", "3", "--record", str(cassette))[0] == 0
    # the same think server under another name: the tools offered differ, which no header tells
    renamed = write_project(
        tmp_path / "replay",
        files={"json_log_file": str(tmp_path / "replay" / "logs" / "events.jsonl")},
        mcp_config={"mcpServers": {"notes": INPROCESS_THINKING["mcpServers"]["thinking"]}},
    )
    code, out, err = play(renamed, "--turns", "3", "--replay", str(cassette))
    assert code == 1
    assert f"cassette {cassette} line 2, turn 1: the engine sent a request the cassette does not have" in err
    assert (
        "the tools offered differ (the cassette has ['thinking__think', 'zork__memory', 'zork__get_map', "
        "'zork__inventory'], this run offers ['notes__think', 'zork__memory', 'zork__get_map', "
        "'zork__inventory'])"
    ) in err
    assert re.search(r"stopped\s+│ error: CassetteMismatchError", " ".join(out.split())), out


def test_a_cassette_holds_no_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)  # the key sent to an endpoint other than OpenRouter's
    cassette = tmp_path / "episode.cassette"
    with llm_in_thread(default=agent_reply("look")) as llm:
        pyproject = project(tmp_path)
        pyproject.write_text(
            pyproject.read_text() + f'\n[tool.zorkgpt.llm]\nclient_base_url = "{llm.base_url}"\n'
        )
        code, _, err = play(pyproject, "--turns", "2", "--no-mcp", "--record", str(cassette))
        assert llm.requests[0].headers["authorization"] == f"Bearer {SECRET}"  # it was sent...
    assert code == 0, err
    text = cassette.read_text()
    assert SECRET not in text  # ...and is not on the cassette
    assert "authorization" not in text.lower()
    assert len(text.splitlines()) == 3


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, r"no such cassette file \(record one with zorkmcp play --record FILE\)"),
        ('{"format": "zorkmcp-cassette", "vers', r"is truncated \(its header, line 1, is incomplete\)"),
        ('{"hello": "world"}\n', r"not a zorkmcp cassette \(no 'zorkmcp-cassette' header"),
        ("\x00\x01binary\n", r"not a zorkmcp cassette \(line 1 is not JSON: Expecting value at column 1\)"),
        ('{"format": "zorkmcp-cassette", "version": 9, "model": "m"}\n', r"cassette version 9; this zorkmcp"),
    ],
)
def test_a_missing_truncated_or_foreign_cassette_exits_2_naming_the_file(
    tmp_path: Path, content: str | None, message: str
) -> None:
    cassette = tmp_path / "bad.cassette"
    if content is not None:
        cassette.write_text(content)
    code, out, err = play(project(tmp_path), "--replay", str(cassette))
    assert code == 2
    assert err.startswith(f"zorkmcp play: cassette error: {cassette}: ")
    assert re.search(message, err), err
    assert "Traceback" not in err
    assert "Episode summary" not in out


async def test_the_cassette_is_a_chat_model_for_the_engine(tmp_path: Path) -> None:
    path = tmp_path / "turn.cassette"
    messages = [{"role": "user", "content": "West of House."}]
    recorder = RecordingModel(ScriptedModel(["north"]), path, CassetteHeader(model="scripted-walkthrough"))
    first = await run_turn(recorder, messages, options=TurnOptions(turn=1))
    replayed = await run_turn(ReplayModel(path), messages, options=TurnOptions(turn=1))
    assert replayed.content == first.content
    assert json.loads(replayed.content or "{}")["action"] == "north"

    with pytest.raises(
        CassetteMismatchError, match=r"line 2, turn 1: .*message 0 \(user\), its content, differs"
    ):
        await ReplayModel(path).complete(CompletionRequest([{"role": "user", "content": "Kitchen."}]))
    with pytest.raises(CassetteError, match=r"no such cassette file"):
        ReplayModel(tmp_path / "missing.cassette")


_FILL_UP = """\
import resource, sys
import trio
from pathlib import Path
from zorkmcp.errors import RunWriteError
from zorkmcp.llm import CassetteHeader, CompletionRequest, RecordingModel, ScriptedModel

path = Path(sys.argv[1])
opening = [{"role": "user", "content": "West of House."}]
tool_round = [*opening, {"role": "assistant", "content": None}, {"role": "tool", "content": "x" * 400}]


async def main() -> None:
    model = RecordingModel(ScriptedModel(["north", "east"]), path, CassetteHeader(model="scripted"))
    await model.complete(CompletionRequest(opening))  # turn 1
    await model.complete(CompletionRequest([{"role": "user", "content": "North of House."}]))  # turn 2
    # the disk fills up in the middle of turn 2's second exchange (RLIMIT_FSIZE; Python ignores SIGXFSZ)
    resource.setrlimit(resource.RLIMIT_FSIZE, (path.stat().st_size + 100, resource.RLIM_INFINITY))
    try:
        await model.complete(CompletionRequest(tool_round))
    except RunWriteError as exc:
        print(exc)


trio.run(main)
"""


def test_a_cassette_that_fills_up_keeps_its_whole_turns(tmp_path: Path) -> None:
    # A file that cannot grow past a size (no root needed): the write stops in the middle of the line,
    # as on a disk that fills up. The cassette is cut back to the end of the last whole turn.
    cassette = tmp_path / "turns.cassette"
    done = subprocess.run(
        [sys.executable, "-c", _FILL_UP, str(cassette)], capture_output=True, text=True, check=False
    )
    lines = cassette.read_text().splitlines(keepends=True)
    assert lines[-1].endswith("\n")  # no half line
    assert len(lines) == 2  # the header and turn 1: not turn 2's first exchange without its second
    replayed = ReplayModel(cassette)
    assert (replayed.turns, replayed.remaining) == (1, 1)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == f"{cassette}: cannot be written (File too large)\n"


def test_a_cassette_that_cannot_grow_stops_the_episode_and_replays_the_turns_it_holds(tmp_path: Path) -> None:
    # At the fifth answer the cassette cannot grow any more (RLIMIT_FSIZE: as a full disk would stop
    # it, with no root; Python ignores SIGXFSZ). The logs are smaller than the limit: they go on.
    cassette = tmp_path / "episode.cassette"
    count = 0

    def step(request: RecordedRequest) -> Reply:
        nonlocal count
        del request
        count += 1
        if count == 5:
            resource.setrlimit(resource.RLIMIT_FSIZE, (cassette.stat().st_size + 100, unlimited[1]))
        return agent_reply(["north", "south", "east", "west", "look"][count - 1])

    unlimited = resource.getrlimit(resource.RLIMIT_FSIZE)
    try:
        with llm_in_thread(default=step) as llm:
            pyproject = project(tmp_path / "rec")
            pyproject.write_text(
                pyproject.read_text() + f'\n[tool.zorkgpt.llm]\nclient_base_url = "{llm.base_url}"\n'
            )
            code, out, err = play(
                pyproject,
                "--turns",
                "8",
                "--no-mcp",
                "--record",
                str(cassette),
                "--summary-json",
                str(tmp_path / "s.json"),
            )
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, unlimited)
    reason = f"{cassette}: cannot be written (File too large)"
    assert code == 1
    assert "Episode summary" in out
    assert err.endswith(
        f"zorkmcp play: a file could not be written (RunWriteError): {reason}; what it held stays valid; "
        "allow larger files (ulimit -f) or give it a file system that takes them"
    ), err
    summary = json.loads((tmp_path / "s.json").read_text())
    assert (summary["stopped"], summary["error"], summary["turns"]) == (
        "error",
        f"RunWriteError: {reason}",
        4,
    )
    # the cassette holds the four turns whole, and a replay plays them to the same end
    assert cassette.read_text().endswith("\n")
    assert ReplayModel(cassette).turns == 4
    code, _, err = play(project(tmp_path / "replay"), "--no-mcp", "--turns", "4", "--replay", str(cassette))
    assert code == 0, err
    assert turns_of(tmp_path / "replay") == turns_of(tmp_path / "rec")[:4]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_cassette_on_a_disk_full_from_the_start_stops_the_episode_at_its_first_turn(tmp_path: Path) -> None:
    cassette = tmp_path / "episode.cassette"
    cassette.symlink_to("/dev/full")  # the check before the episode cannot tell a full disk
    code, out, err = play(
        project(tmp_path), "--record", str(cassette), "--summary-json", str(tmp_path / "s.json")
    )
    summary = stopped_by_a_full_disk(code, out, err, cassette, tmp_path / "s.json")
    assert summary["turns"] == 0
    (complete,) = events_of(read_events(tmp_path / "logs" / "events.jsonl"), "episode_complete")
    assert complete["error"] == summary["error"]
