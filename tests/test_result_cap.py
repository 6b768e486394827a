"""``max_result_bytes`` caps what the model is shown, never the engine's own reads of the game.

The game server's ``status`` is a JSON object the episode loop reads for score, moves and game
over (Requirement 9); cut to a one-byte cap it would be ``'{…[truncated 140 bytes]'``. The cap is on
the tool results offered to the model, so a game tool the model calls is still cut. Real Zork, the
real ``zorkmcp play``, the loopback LLM in a thread of its own.
"""

from __future__ import annotations

import io
import json
from typing import TYPE_CHECKING, Any

from llm_server import agent_reply, tool_call, tool_call_reply
from play_support import PER_TURN_THINKING, events_of, read_events
from play_support import zork1_path as zork1
from rich.console import Console
from test_bridge import llm_in_thread

from zorkmcp.cli import main

if TYPE_CHECKING:
    from pathlib import Path


def project(folder: Path, *, llm: str = "") -> Path:
    """A project with a one-byte result cap, the think server, logs in ``folder/logs``."""
    (folder / "mcp_config.json").write_text(json.dumps(PER_TURN_THINKING), encoding="utf-8")
    pyproject = folder / "pyproject.toml"
    pyproject.write_text(
        "[tool.zorkgpt.mcp]\n"
        "enabled = true\n"
        f'config_file = "{folder / "mcp_config.json"}"\n'
        "max_result_bytes = 1\n"
        "[tool.zorkgpt.files]\n"
        f'json_log_file = "{folder / "logs" / "events.jsonl"}"\n'
        f'episode_log_file = "{folder / "logs" / "episode.log"}"\n'
        + (f"[tool.zorkgpt.llm]\n{llm}\n" if llm else ""),
        encoding="utf-8",
    )
    return pyproject


def play(pyproject: Path, turns: int) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(
        ["play", "--game", str(zork1()), "--pyproject", str(pyproject), "--quiet", "--turns", str(turns)],
        console=Console(file=out, width=120),
        err=Console(file=err, width=400),
    )
    return code, " ".join(err.getvalue().split())


def the_end(folder: Path) -> dict[str, Any]:
    (complete,) = events_of(read_events(folder / "logs" / "events.jsonl"), "episode_complete")
    return complete


def test_a_one_byte_cap_does_not_cut_the_games_status(tmp_path: Path) -> None:
    code, err = play(project(tmp_path), turns=3)  # the offline scripted model: Jericho's walkthrough
    assert (code, err) == (0, "")
    complete = the_end(tmp_path)
    assert {key: complete[key] for key in ("stopped", "error", "turns", "moves", "score", "max_score")} == {
        "stopped": "turn limit",
        "error": None,
        "turns": 3,
        "moves": 3,
        "score": 0,
        "max_score": 350,
    }
    turns = events_of(read_events(tmp_path / "logs" / "events.jsonl"), "turn_complete")
    assert [(t["action"], t["location"], t["game_error"]) for t in turns] == [
        ("N", "North of House", None),
        ("N", "Forest Path", None),
        ("U", "Up a Tree", None),
    ]


def test_the_model_still_sees_game_tools_cut_to_the_cap(tmp_path: Path) -> None:
    script = (
        tool_call_reply(tool_call("zork__inventory", id="inv")),
        agent_reply("open mailbox"),
    )
    with llm_in_thread(*script) as llm:
        code, err = play(
            project(tmp_path, llm=f'client_base_url = "{llm.base_url}"\nagent_model = "m"'), turns=1
        )
        requests = list(llm.requests)
    assert (code, err) == (0, "")
    (answer,) = [m for m in requests[1].messages if m.get("role") == "tool"]
    assert answer == {
        "role": "tool",
        "tool_call_id": "inv",
        # the first byte of "Inventory: You are empty-handed." (32 bytes)
        "content": '{"content": "I\\u2026[truncated 31 bytes]"}',
    }
    complete = the_end(tmp_path)
    assert (complete["stopped"], complete["turns"], complete["moves"], complete["tool_calls"]) == (
        "turn limit",
        1,
        1,
        1,
    )
