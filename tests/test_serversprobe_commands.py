"""Zork I's own file commands through the game MCP server, as another MCP client sends them.

The adapter refuses ``save``, ``script``, ``restart``... because they write files into the server's
working folder or restart the game behind the server's back. Zork I (a version 3 story) reads only
the first 6 letters of a word, so ``scripting`` *is* ``script``; and it has debugging verbs that start
with ``#``: ``#record`` wrote every later command into a file named ``#record`` in the folder the
client started the server in, and ``#command`` played the commands of a file from there (a ``look``
then moved the player north, and the map and the history recorded a look).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import mcp_types
import pytest
import trio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from zorkmcp.game import ActionError, validate_action

REPO = Path(__file__).resolve().parents[1]
GAME = REPO / "zorkmcp" / "game" / "data" / "zork1.z3"

_FILES = "saving, restoring, restarting, quitting, transcripts and command recordings are disabled"
_DEBUG = (
    "the game's debugging commands (words starting with '#': #command, #record, #unrecord, #random) "
    "are disabled"
)
_REFUSED = "Error executing tool play_action: {!r} is not available in this game session: "

REFUSED = [
    ("#record", f"'#record' is not available in this game session: {_DEBUG}"),
    ("#unrecord", f"'#unrecord' is not available in this game session: {_DEBUG}"),
    ("#comm", f"'#comm' is not available in this game session: {_DEBUG}"),
    ("#command", f"'#command' is not available in this game session: {_DEBUG}"),
    ("#random 5", f"'#random' is not available in this game session: {_DEBUG}"),
    ("look. #reco", f"'#reco' is not available in this game session: {_DEBUG}"),
    (
        "scripting",
        "'scripting' (the game reads its first 6 letters, 'script') is not available in this game "
        f"session: {_FILES}",
    ),
    (
        "unscripted",
        "'unscripted' (the game reads its first 6 letters, 'unscri') is not available in this game "
        f"session: {_FILES}",
    ),
    (
        "restarting",
        "'restarting' (the game reads its first 6 letters, 'restar') is not available in this game "
        f"session: {_FILES}",
    ),
    (
        "Restoration",
        "'restoration' (the game reads its first 6 letters, 'restor') is not available in this game "
        f"session: {_FILES}",
    ),
    ("recording on", f"'recording' is not available in this game session: {_FILES}"),
    ("replay", f"'replay' is not available in this game session: {_FILES}"),
    ("save", f"'save' is not available in this game session: {_FILES}"),
]


@pytest.mark.parametrize(("action", "message"), REFUSED, ids=[action for action, _ in REFUSED])
def test_file_commands_the_game_would_read_are_refused(action: str, message: str) -> None:
    with pytest.raises(ActionError) as excinfo:
        validate_action(action)
    assert str(excinfo.value) == message


@pytest.mark.parametrize(
    "action", ["record", "records", "saved", "quitting", "press #3", "say scrip", "resto"]
)
def test_words_the_game_reads_otherwise_are_played(action: str) -> None:
    # 'record' is Ballyhoo's tape-recorder verb; 'saved' and 'quitting' are not save and quit in
    # six letters, nor 'scrip' and 'resto' script and restore; a '#' before a digit is no debugging verb.
    assert validate_action(action) == action


def _text(result: mcp_types.CallToolResult) -> str:
    (content,) = result.content
    assert isinstance(content, mcp_types.TextContent)
    return content.text


async def test_the_game_server_writes_and_reads_no_file_of_its_folder(tmp_path: Path) -> None:
    (tmp_path / "#command").write_text("north\n")  # what #command would have played
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "zorkmcp.game.server", "--game", str(GAME), "--seed", "3"],
        cwd=str(tmp_path), env=dict(os.environ),  # the SDK passes on only HOME, PATH, ...: keep PYTHONPATH
    )  # fmt: skip
    with (tmp_path.parent / f"{tmp_path.name}-stderr.txt").open("w") as errlog:
        async with (
            stdio_client(server, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            with trio.fail_after(60):  # a hang guard, never an assertion on time
                answers = [
                    await session.call_tool("play_action", {"action": action})
                    for action in ("#record", "#command", "scripting", "restarting", "look")
                ]
                status = json.loads(_text(await session.call_tool("status", {})))
    assert [(answer.is_error, _text(answer)) for answer in answers[:4]] == [
        (True, _REFUSED.format("#record") + _DEBUG),
        (True, _REFUSED.format("#command") + _DEBUG),
        (True, "Error executing tool play_action: 'scripting' (the game reads its first 6 letters, 'script') "
               f"is not available in this game session: {_FILES}"),
        (True, "Error executing tool play_action: 'restarting' (the game reads its first 6 letters, "
               f"'restar') is not available in this game session: {_FILES}"),
    ]  # fmt: skip
    assert answers[4].is_error is False
    assert _text(answers[4]) == (
        "West of House\n"
        "You are standing in an open field west of a white house, with a boarded front door.\n"
        "There is a small mailbox here.\n\n"
        "[Score: 0 | Moves: 1]"
    )
    assert (status["location"], status["moves"]) == ("West of House", 1)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["#command"]
    assert (tmp_path / "#command").read_text() == "north\n"
