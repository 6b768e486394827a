"""``zorkmcp play`` in real terminals (tmux panes), as a demanding user drives it: warnings while the
live view is up, stderr in a file, a terminal that cannot show unicode, Ctrl-Z then ``fg``, ``bg``,
and a terminal made narrower during the run.

The model is a loopback chat-completions endpoint whose answers the test lets through one by one
(:class:`_GatedModel`), so a frame stays up while the test presses keys. The command runs the
zorkmcp of the tree under test (``PYTHONPATH``). Waiting for a real terminal is real time: each wait
is bounded and marked.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from contextlib import suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from llm_server import completion
from play_support import offline_env, run_in_tmux, write_project, zork1_path

import zorkmcp

if TYPE_CHECKING:
    from collections.abc import Iterator

REPO = Path(zorkmcp.__file__).resolve().parents[1]
ENTRY = "import sys; from zorkmcp._entry import main; sys.exit(main())"
ZORKMCP = f"env PYTHONPATH={REPO} {sys.executable} -c '{ENTRY}'"
"""``zorkmcp`` of the tree under test."""
WAIT_SECONDS = 30.0
"""How long a wait for the pane's text lasts at most: a bound, not a pace."""
_ESCAPES = re.compile(
    r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78]|\r"
)

NOISY_THINK = """
import sys

from zorkmcp.servers._lowlevel import lowlevel_server
from zorkmcp.servers._stdio_jsonrpc import StdioTool
from zorkmcp.servers._thinking_core import TOOL_DESCRIPTION, TOOL_INPUT_SCHEMA


def _think(arguments):
    print(f"noisy-think: {arguments.get('thought')}", file=sys.stderr)
    return (f"rejected: {arguments.get('thought')}", True)


def create_server():
    tool = StdioTool(
        name="think", description=TOOL_DESCRIPTION, input_schema=TOOL_INPUT_SCHEMA, function=_think
    )
    return lowlevel_server([tool], name="noisy", version="1", instructions="Think.")
"""
"""An in-process think server that debugs on stderr and fails every call (a warning per call)."""

WARNINGS = [
    "warning: Turn 1 Iteration 1: Tool call failed: thinking.think - rejected: Turn 1: next step is 'N'",
    "warning: Turn 6 Iteration 1: Tool call failed: thinking.think - rejected: Turn 6: next step is 'S'",
    "warning: Turn 11 Iteration 1: Tool call failed: thinking.think - rejected: Turn 11: next step is "
    "'Get garlic'",
]
NOISE = [
    "noisy-think: Turn 1: next step is 'N'",
    "noisy-think: Turn 6: next step is 'S'",
    "noisy-think: Turn 11: next step is 'Get garlic'",
]


def _noisy_project(tmp_path: Path) -> str:
    """A project whose think server is :data:`NOISY_THINK`; the command that plays 12 turns in it."""
    (tmp_path / "noisy_think.py").write_text(NOISY_THINK, encoding="utf-8")
    server = {"type": "inprocess", "module": "noisy_think:create_server", "lifecycle": "per_episode"}
    pyproject = write_project(
        tmp_path,
        mcp_config={"mcpServers": {"thinking": server}},
        files={"json_log_file": str(tmp_path / "ev.jsonl"), "episode_log_file": str(tmp_path / "ep.log")},
    )
    command = f"{ZORKMCP} play --turns 12 --game {zork1_path()} --pyproject {pyproject}"
    return command.replace(f"PYTHONPATH={REPO}", f"PYTHONPATH={REPO}:{tmp_path}")


def test_warnings_and_a_servers_stderr_go_above_the_live_view(tmp_path: Path) -> None:
    """A warning on stderr (the same terminal) was written at the end of the frame's last line: the
    next frame was drawn over it (the warnings of turns 6 and 11 were lost) and left the top of the
    last frame behind (``turn 5/12``, ``turn 10/12`` above the final frame)."""
    lines = run_in_tmux(tmp_path, _noisy_project(tmp_path), 160, 40)  # real-time: a real terminal
    for line in WARNINGS + NOISE:
        assert lines.count(line) == 1, (line, lines)
    assert [line.split()[:2] for line in lines if line.startswith("turn ")] == [["turn", "12/12"]], lines
    assert lines.index(WARNINGS[2]) < lines.index(next(x for x in lines if x.startswith("turn 12/12")))


def test_stderr_in_a_file_keeps_a_servers_lines_and_the_warnings_off_the_screen(tmp_path: Path) -> None:
    """``zorkmcp play 2>debug.log``: what an in-process server printed on stderr went above the live
    view on the screen (rich's live display took ``sys.stderr`` over, wherever it went), and not
    into the file."""
    log = tmp_path / "debug.log"
    lines = run_in_tmux(tmp_path, f"{_noisy_project(tmp_path)} 2>{log}", 160, 40)  # real-time: a terminal
    assert not [line for line in lines if "noisy-think" in line or "warning:" in line], lines
    assert "Episode summary" in "\n".join(lines)
    assert log.read_text(encoding="utf-8").splitlines() == [
        NOISE[0],
        WARNINGS[0],
        NOISE[1],
        WARNINGS[1],
        NOISE[2],
        WARNINGS[2],
    ]


def test_a_terminal_that_cannot_show_unicode_keeps_one_frame(tmp_path: Path) -> None:
    """``PYTHONIOENCODING=ascii`` (or a Latin-1 locale): each symbol of the view was written as a
    six-character escape, every line wrapped, and each frame stayed on the screen under the last."""
    pyproject = write_project(
        tmp_path,
        enabled=False,
        files={"json_log_file": str(tmp_path / "ev.jsonl"), "episode_log_file": str(tmp_path / "ep.log")},
    )
    command = f"PYTHONIOENCODING=ascii {ZORKMCP} play --turns 6 --game {zork1_path()} --pyproject {pyproject}"
    lines = run_in_tmux(tmp_path, command, 100, 30)  # real-time: a real terminal
    frames = [line for line in lines if line.startswith("turn ")]
    assert len(frames) == 1, lines
    assert frames[0].startswith("turn 6/6 ")
    assert frames[0].endswith(" score 5/350  moves 6")
    start = lines.index(frames[0])
    end = next(i for i, line in enumerate(lines) if line.strip() == "Episode summary")
    frame = lines[start:end]
    assert re.fullmatch(r"at North of House  > S +requests 6 - tokens [\d,]+ / [\d,]+", frame[1]), frame
    assert frame[2] == "score 0-5 ___###"
    assert frame[-1] == "+" + "-" * 98 + "+"
    assert not [line for line in frame if "\\" in line or len(line) > 100], frame


# -- an interactive shell: Ctrl-Z, fg, bg, a resize -------------------------------------------------


class _GatedModel(BaseHTTPRequestHandler):
    """A chat-completions endpoint that answers ``look`` each time the test lets one request through."""

    gate = threading.Semaphore(0)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        if not self.gate.acquire(timeout=WAIT_SECONDS):
            self.send_error(503)
            return
        content = json.dumps({"thinking": "Looking around.", "action": "look", "new_objective": None})
        body = json.dumps(completion({"role": "assistant", "content": content})).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        with suppress(OSError):  # the run was stopped meanwhile (Ctrl-C): nobody reads the answer
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        del format, args


class _Pane:
    """An interactive bash in a tmux pane (job control: Ctrl-Z, ``fg``, ``bg``), read as it writes."""

    def __init__(self, socket: str, reader: int) -> None:
        self.tmux = ["tmux", "-L", socket]
        self.reader = reader
        self.seen = b""
        self.mark = 0
        """Where the last wait's text ended, in :meth:`shown`: the next wait looks after it."""

    def tmux_run(self, *args: str) -> str:
        return subprocess.run([*self.tmux, *args], check=True, capture_output=True, text=True).stdout

    def keys(self, *keys: str) -> None:
        self.tmux_run("send-keys", *keys)

    def run(self, line: str) -> None:
        self.tmux_run("send-keys", "-l", line)
        self.keys("Enter")

    def shown(self) -> str:
        return _ESCAPES.sub("", self.seen.decode("utf-8", "replace"))

    def wait(self, text: str) -> None:
        """Until the pane has written ``text`` after the last one waited for."""
        deadline = time.monotonic() + WAIT_SECONDS
        while (found := self.shown().find(text, self.mark)) < 0:
            left = deadline - time.monotonic()
            ready = select.select([self.reader], [], [], max(left, 0))[0] if left > 0 else []
            assert ready, f"the pane never showed {text!r}; its last output: {self.shown()[-800:]!r}"
            self.seen += os.read(self.reader, 65536)  # real-time: the terminal writes when it writes
        self.mark = found + len(text)

    def screen(self, *, history: bool = True) -> list[str]:
        lines = self.tmux_run("capture-pane", "-p", *(["-S", "-300"] if history else [])).splitlines()
        while lines and not lines[-1].strip():
            lines.pop()
        return lines

    def cursor_shown(self) -> bool:
        return self.tmux_run("display", "-p", "#{cursor_flag}").strip() == "1"


@pytest.fixture
def pane() -> Iterator[_Pane]:
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed: a live view cannot be checked in a real terminal")
    socket = f"zorkmcp-termprobe-{uuid.uuid4().hex[:8]}"
    env = offline_env(TERM="xterm-256color")
    env.pop("TMUX", None)
    shell = "bash --norc --noprofile -i"
    with tempfile.TemporaryDirectory() as folder:
        fifo = Path(folder) / "pane"
        os.mkfifo(fifo)
        reader = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # always a writer: select() wakes only for data
        tmux = ["tmux", "-L", socket]
        try:
            subprocess.run([*tmux, "new-session", "-d", "-x", "100", "-y", "50", shell], env=env, check=True)
            path = subprocess.run(
                [*tmux, "display", "-p", "#{socket_path}"],
                env=env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout.strip()
            try:
                subprocess.run([*tmux, "pipe-pane", f"cat > {fifo}"], env=env, check=True)
                pane = _Pane(socket, reader)
                pane.run("PS1='$ '; set -b; echo ready-$((20+22))")  # set -b: a job's end is told at once
                pane.wait("ready-42")
                yield pane
            finally:
                subprocess.run([*tmux, "kill-server"], env=env, check=False)
                Path(path).unlink(missing_ok=True)  # tmux leaves its socket behind
        finally:
            os.close(reader)


@pytest.fixture
def model() -> Iterator[tuple[str, threading.Semaphore]]:
    """The gated model's base URL and its gate (``release(n)`` lets ``n`` requests be answered)."""
    gate = threading.Semaphore(0)
    handler = type("Gated", (_GatedModel,), {"gate": gate})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", gate
    finally:
        gate.release(100)  # a request still held answers, and its handler ends
        server.shutdown()
        server.server_close()
        thread.join()


def _play(tmp_path: Path, url: str, turns: int) -> str:
    pyproject = write_project(
        tmp_path,
        enabled=False,
        files={"json_log_file": str(tmp_path / "ev.jsonl"), "episode_log_file": str(tmp_path / "ep.log")},
    )
    return (
        f"cd {tmp_path}; {ZORKMCP} play --turns {turns} --game {zork1_path()} --pyproject {pyproject} "
        f"--base-url {url} --model gated"
    )


def _frame_up(pane: _Pane, turn: int, turns: int) -> None:
    """Until the frame of ``turn`` is drawn whole (its last panel's line)."""
    pane.wait(f"turn {turn}/{turns} ")
    pane.wait("no tool calls yet")


def test_ctrl_z_gives_the_shell_its_cursor_and_echo_and_fg_draws_the_view_below_the_shells_lines(
    tmp_path: Path, pane: _Pane, model: tuple[str, threading.Semaphore]
) -> None:
    """Ctrl-Z left the cursor hidden at the shell's prompt; after ``fg`` the next frame was drawn over
    the shell's lines (``[1]+ Stopped``, ``$ fg``) from where the last frame had been, and the
    terminal echoed keys again (``xyzzy`` and ``^C`` broke the last frame)."""
    url, gate = model
    pane.run(_play(tmp_path, url, 20))
    gate.release(2)
    _frame_up(pane, 2, 20)
    pane.keys("C-z")
    pane.wait("Stopped")
    assert pane.cursor_shown()  # real-time: tmux has drawn what it read
    pane.wait("$ ")
    pane.run("stty -a | grep -o -- '-\\?echo ' ; echo stopped-$((40+2))")
    pane.wait("stopped-42")
    pane.wait("$ ")  # the prompt: what is typed now is the shell's
    pane.run("fg")
    gate.release(3)
    _frame_up(pane, 5, 20)
    assert not pane.cursor_shown()
    pane.keys("xyzzy")
    pane.keys("C-c")
    pane.wait("Logs:")
    pane.run("echo exit=$((0+$?)); stty -a | grep -o -- '-\\?echo '")
    pane.wait("exit=130")
    pane.wait("echo")
    lines = pane.screen()
    assert [line.split()[:2] for line in lines if line.startswith("turn ")] == [
        ["turn", "2/20"],
        ["turn", "5/20"],
    ], lines
    stopped = next(i for i, line in enumerate(lines) if line.startswith("[1]+  Stopped"))
    assert lines[stopped - 1] == "╰" + "─" * 98 + "╯", lines  # the frame of turn 2, whole
    shell = lines[stopped:]
    assert "echo" in shell  # the shell's echo while the command was stopped
    fg = shell.index("$ fg")
    after = next(i for i, line in enumerate(shell) if line.startswith("turn 5/20 "))
    assert after > fg, lines  # below the shell's lines, which stay
    assert not [line for line in lines if "xyzzy" in line or "^C" in line], lines
    assert "stopped         │ interrupted (Ctrl-C) │" in " ".join(lines)
    end = lines.index("exit=130")
    assert lines[end + 1] == "echo", lines  # the echo is back once the command ended


def test_a_run_put_in_the_background_ends_without_drawing_over_the_shell(
    tmp_path: Path, pane: _Pane, model: tuple[str, threading.Semaphore]
) -> None:
    """After Ctrl-Z and ``bg`` the live view went on drawing over the shell's prompt and what was
    typed there, and the run stopped again as it ended (``Stopped``: it set the terminal from the
    background, ``SIGTTOU``), its summary unprinted until ``fg``."""
    url, gate = model
    pane.run(_play(tmp_path, url, 6))
    gate.release(2)
    _frame_up(pane, 2, 6)
    pane.keys("C-z")
    pane.wait("Stopped")
    pane.wait("$ ")
    pane.run("bg")
    pane.wait(" &")  # the shell names the job it continued
    pane.wait("$ ")
    pane.run("echo typed-at-the-prompt-$((40+2))")
    pane.wait("typed-at-the-prompt-42")
    gate.release(10)
    pane.wait("Done")
    lines = pane.screen()
    typed = lines.index("typed-at-the-prompt-42")
    assert lines[typed - 1] == "$ echo typed-at-the-prompt-$((40+2))", lines
    frames = [i for i, line in enumerate(lines) if line.startswith("turn ")]
    assert [lines[i].split()[:2] for i in frames] == [["turn", "2/6"], ["turn", "6/6"]], lines
    assert frames[1] > typed  # the last frame, after what was typed, once the run ended
    assert "Episode summary" in "\n".join(lines[frames[1] :])


def test_a_terminal_made_narrower_shows_the_next_frame_alone(
    tmp_path: Path, pane: _Pane, model: tuple[str, threading.Semaphore]
) -> None:
    """The terminal rewraps each line of the last frame onto two rows; the next frame went up as
    many rows as the frame had lines, and left the rest of the old one on the screen above it."""
    url, gate = model
    pane.run(_play(tmp_path, url, 20))
    gate.release(3)
    _frame_up(pane, 3, 20)
    pane.tmux_run("resize-window", "-x", "50", "-y", "50")
    gate.release(1)
    _frame_up(pane, 4, 20)
    screen = pane.screen(history=False)
    assert screen[0].startswith("turn 4/20 "), screen
    assert screen[-1] == "╰" + "─" * 48 + "╯", screen
    assert max(len(line) for line in screen) <= 50
    pane.keys("C-c")
    pane.wait("Logs:")


def test_a_run_that_sigterm_stops_in_the_background_gives_the_terminal_back(
    tmp_path: Path, pane: _Pane, model: tuple[str, threading.Semaphore]
) -> None:
    """Started with ``&`` in a script, the run ignores SIGINT, and SIGTERM stops it (the Ctrl-C path;
    before, on the spot): the live view had turned the terminal's echo off and hidden the cursor, and
    the shell was left with neither (``-echo``, what was typed unseen)."""
    url, gate = model
    pidfile = tmp_path / "pid"
    script = tmp_path / "background.sh"
    script.write_text(f"{_play(tmp_path, url, 20)} & echo $! > {pidfile}; wait\n", encoding="utf-8")
    pane.run(f"sh {script}")
    gate.release(2)
    _frame_up(pane, 2, 20)
    os.kill(int(pidfile.read_text()), signal.SIGTERM)
    pane.wait("$ ")
    pane.run("stty -a | grep -o -- '-\\?echo '; echo ended-$((40+2))")
    pane.wait("ended-42")
    lines = pane.screen()
    assert lines[lines.index("ended-42") - 1] == "echo", lines
    assert pane.cursor_shown()
