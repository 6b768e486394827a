"""``zorkmcp play`` in real terminals (tmux panes) when the episode ends before its first turn, and in
a terminal 20 columns wide: the live view leaves no line that is not part of a frame.

The model is a loopback chat-completions endpoint that holds every request (so the view waits for
the first turn while the test presses Ctrl-C) or refuses it at once (HTTP 400). The command runs the
zorkmcp of the tree under test (``PYTHONPATH``). Waiting for a real terminal is real time: each wait
is bounded and marked.
"""

from __future__ import annotations

import json
import sys
import threading
from contextlib import suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from play_support import run_in_tmux, write_project, zork1_path
from rich.console import Console

import zorkmcp
from zorkmcp._live import LiveView
from zorkmcp.episode import TurnRecord

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

REPO = Path(zorkmcp.__file__).resolve().parents[1]
ENTRY = "import sys; from zorkmcp._entry import main; sys.exit(main())"
ZORKMCP = f"env PYTHONPATH={REPO} {sys.executable} -c '{ENTRY}'"
"""``zorkmcp`` of the tree under test."""
HOLD_SECONDS = 60.0
"""How long the held model keeps a request at most: a bound, not a pace."""


class _Model(BaseHTTPRequestHandler):
    """A chat-completions endpoint that holds each request until ``release`` is set, or refuses it."""

    release = threading.Event()
    refuse = False

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        if self.refuse:
            body = json.dumps({"error": {"message": "model m is not served here", "type": "bad_request"}})
            status = 400
        else:
            self.release.wait(HOLD_SECONDS)  # real-time: held while the test presses Ctrl-C
            body, status = "{}", 503
        data = body.encode()
        with suppress(OSError):  # the run was stopped meanwhile: nobody reads the answer
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        del format, args


def _serve(*, refuse: bool) -> Iterator[str]:
    release = threading.Event()
    handler = type("Model", (_Model,), {"release": release, "refuse": refuse})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        release.set()
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def held_model() -> Iterator[str]:
    yield from _serve(refuse=False)


@pytest.fixture
def refusing_model() -> Iterator[str]:
    yield from _serve(refuse=True)


def _play(tmp_path: Path, url: str) -> str:
    pyproject = write_project(
        tmp_path,
        enabled=False,
        files={"json_log_file": str(tmp_path / "ev.jsonl"), "episode_log_file": str(tmp_path / "ep.log")},
    )
    return (
        f"{ZORKMCP} play --turns 5 --game {zork1_path()} --pyproject {pyproject} --base-url {url} --model m; "
        'echo "exit=$?"'
    )


def test_ctrl_c_before_the_first_turn_leaves_no_waiting_line(tmp_path: Path, held_model: str) -> None:
    """Ctrl-C while the model had not answered once: ``waiting for the first turn…`` stayed on the
    screen above the summary that says the run was interrupted."""

    def interrupt(send: Callable[..., object], wait_for: Callable[[str], None]) -> None:
        wait_for("waiting for the first turn…")
        send("C-c")

    lines = run_in_tmux(  # real-time: a real terminal
        tmp_path, _play(tmp_path, held_model), 80, 24, meanwhile=interrupt, watch=True
    )
    text = "\n".join(lines)
    assert "waiting for the first turn" not in text, lines
    assert "│ stopped         │ interrupted (Ctrl-C) │" in lines, lines
    assert lines[-1] == "exit=130", lines
    summary = lines.index("             Episode summary")
    assert lines[summary - 1].endswith(".toml"), lines  # the settings line, then the summary


def test_a_model_that_fails_the_first_turn_leaves_no_waiting_line(
    tmp_path: Path, refusing_model: str
) -> None:
    """The model refused the first request: ``waiting for the first turn…`` stayed under the error
    and above the summary."""
    lines = run_in_tmux(tmp_path, _play(tmp_path, refusing_model), 100, 30)  # real-time: a real terminal
    assert "waiting for the first turn" not in "\n".join(lines), lines
    assert any(line.startswith("│ stopped         │ error: ") for line in lines), lines
    assert lines[-1] == "exit=1", lines


def _record() -> TurnRecord:
    return TurnRecord(
        turn=1,
        action="look",
        reasoning="Looking around.",
        new_objective=None,
        observation="West of House. You are standing in an open field west of a white house, with a "
        "boarded front door. There is a small mailbox here.",
        score=0,
        max_score=350,
        moves=1,
        location="West of House",
        tool_calls=0,
        tools_used=(),
        game_over=False,
        victory=False,
        seconds=0.5,
    )


def test_a_20_column_frame_keeps_no_tool_calls_yet_on_one_line() -> None:
    """In 20 columns ``no tool calls yet`` wrapped onto two lines: the frame took a line more than the
    terminal's height left for it."""
    view = LiveView(5)
    view.add(_record())
    console = Console(width=20, height=20, force_terminal=True, color_system=None, record=True)
    console.print(view)
    lines = console.export_text().splitlines()
    assert lines[-3:] == [
        "╭─ tool calls: 0 ──╮",
        "│ no tool calls y… │",
        "╰──────────────────╯",
    ]
    assert len(lines) == 19  # the terminal's 20 lines but one, the game's text cut to fit
    assert lines[5:13] == [
        "╭─ game ───────────╮",
        "│ West of House.   │",
        "│ You are standing │",
        "│ in an open field │",
        "│ west of a white  │",
        "│ house, with a    │",
        "│ boarded front …  │",
        "╰──────────────────╯",
    ]
