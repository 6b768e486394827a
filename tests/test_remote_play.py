"""The remote servers' "done when": one config with a stdio, a Streamable HTTP and an SSE server.

A bearer token from an environment variable opens both remote servers; every tool is listed and
called through ``zorkmcp tools`` / ``zorkmcp call`` and inside a ``zorkmcp play`` turn against the
loopback model, and the token appears in no output, log or event. Real parts: the stdlib think
server as a subprocess, the MCP SDK's server under uvicorn on 127.0.0.1 (tests/servers/remote.py),
real Zork.
"""

from __future__ import annotations

import io
import json
import sys
from typing import TYPE_CHECKING, Any

import pytest
from llm_server import agent_reply, tool_call, tool_call_reply
from play_support import events_of, read_events, write_project, zork1_path
from rich.console import Console
from servers.remote import SDK_HTTP_WARNINGS, TOKEN, RemoteTestServer, serve_remote
from test_bridge import llm_in_thread

from zorkmcp.cli import main

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

pytestmark = SDK_HTTP_WARNINGS


@pytest.fixture(scope="module")
def remote() -> Iterator[RemoteTestServer]:
    with serve_remote() as server:
        yield server


@pytest.fixture
def pyproject(tmp_path: Path, remote: RemoteTestServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The project: the three servers, the token in ``WEB_TOKEN``, logs in ``tmp_path/logs``."""
    monkeypatch.setenv("WEB_TOKEN", TOKEN)
    return _project(tmp_path, remote)


def _project(folder: Path, remote: RemoteTestServer) -> Path:
    bearer = {"Authorization": "Bearer ${WEB_TOKEN}"}
    config: dict[str, Any] = {
        "mcpServers": {
            "thinking": {"command": sys.executable, "args": ["-m", "zorkmcp.servers.thinking"]},
            "web": {
                "type": "http",
                "url": remote.url("/auth/mcp"),
                "headers": bearer,
                "lifecycle": "per_episode",
                "tools": ["echo"],
            },
            "feed": {"type": "sse", "url": remote.url("/auth/sse"), "headers": bearer, "tools": ["echo"]},
        }
    }
    logs = {
        "json_log_file": str(folder / "logs" / "events.jsonl"),
        "episode_log_file": str(folder / "logs" / "episode.log"),
    }
    return write_project(folder, mcp_config=config, files=logs)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``zorkmcp ARGV``: its exit status, and what it wrote (through its consoles and to stdout/stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), console=Console(file=out, width=200), err=Console(file=err, width=400))
    printed = capsys.readouterr()
    return code, out.getvalue() + printed.out, err.getvalue() + printed.err


def test_tools_and_call_reach_every_server(pyproject: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "tools", "--json", "--pyproject", str(pyproject))
    assert code == 0, err
    assert [tool["name"] for tool in json.loads(out)] == ["thinking.think", "web.echo", "feed.echo"]
    answers = []
    for name, arguments in (
        ("web.echo", {"text": "over http"}),
        ("feed.echo", {"text": "over sse"}),
        (
            "thinking.think",
            {"thought": "go west", "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": False},
        ),
    ):
        code, out, err = _run(capsys, "call", name, json.dumps(arguments), "--pyproject", str(pyproject))
        assert code == 0, err
        answers.append(json.loads(out)["content"])
        assert TOKEN not in out + err
    assert answers[:2] == ["over http", "over sse"]
    assert answers[2]["thoughtNumber"] == 1


def test_a_play_turn_calls_every_server(
    pyproject: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    think = {"thought": "mailbox", "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": False}
    batch = tool_call_reply(
        tool_call("web__echo", {"text": "over http"}),
        tool_call("feed__echo", {"text": "over sse"}),
        tool_call("thinking__think", think),
    )
    with llm_in_thread(batch, agent_reply("open mailbox")) as llm:
        pyproject.write_text(
            pyproject.read_text()
            + f'\n[tool.zorkgpt.llm]\nclient_base_url = "{llm.base_url}"\nagent_model = "gpt-4o"\n'
        )
        code, out, err = _run(
            capsys,
            "play",
            "--game",
            str(zork1_path()),
            "--pyproject",
            str(pyproject),
            "--quiet",
            "--turns",
            "1",
        )
    assert code == 0, err
    offered = [tool["function"]["name"] for tool in llm.bodies[0]["tools"]]
    assert offered == [
        "thinking__think",
        "web__echo",
        "feed__echo",
        "zork__memory",  # the game server's own tools, play_action left out (the answer plays it)
        "zork__get_map",
        "zork__inventory",
    ]
    events = read_events(tmp_path / "logs" / "events.jsonl")
    results = events_of(events, "mcp_tool_result")
    assert [(e["server_name"], e["tool_name"], e["is_error"]) for e in results] == [
        ("web", "web.echo", False),
        ("feed", "feed.echo", False),
        ("thinking", "thinking.think", False),
    ]
    turn = events_of(events, "turn_complete")[0]
    assert turn["action"] == "open mailbox"
    assert "Opening the small mailbox reveals a leaflet." in turn["observation"]
    episode_log = (tmp_path / "logs" / "episode.log").read_text()
    everything = out + err + (tmp_path / "logs" / "events.jsonl").read_text() + episode_log
    assert TOKEN not in everything
    assert json.dumps(TOKEN)[1:-1] not in everything
