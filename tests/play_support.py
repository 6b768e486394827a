"""Helpers for the orchestrator and ``zorkmcp play`` tests: projects on disk, logs, processes."""

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
import time
import uuid
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

__all__ = [
    "HANG_SERVER",
    "INPROCESS_THINKING",
    "PER_TURN_THINKING",
    "ZORK1_Z3",
    "all_exit",
    "default_sigint",
    "descendants",
    "events_of",
    "is_running",
    "offline_env",
    "proc_start_time",
    "read_events",
    "run_in_tmux",
    "write_project",
    "zork1_path",
]

from zorkmcp.game import PACKAGED_GAME

if TYPE_CHECKING:
    from collections.abc import Callable

REPO = Path(__file__).resolve().parents[1]
ZORK1_Z3 = PACKAGED_GAME
HANG_SERVER = Path(__file__).with_name("play_hang_server.py")

PER_TURN_THINKING: dict[str, Any] = {
    "mcpServers": {"thinking": {"command": "python3", "args": ["-m", "zorkmcp.servers.thinking"]}}
}
"""The repository's default mcp_config.json: the embedded think server, a stdio subprocess per turn."""

INPROCESS_THINKING: dict[str, Any] = {
    "mcpServers": {
        "thinking": {
            "type": "inprocess",
            "module": "zorkmcp.servers.thinking:create_server",
            "lifecycle": "per_episode",
        }
    }
}
"""The same think tool in process for the whole episode (fast: the 350-point run)."""

_KEY_VARIABLES = ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "GAME", "ZORKMCP_GAME_SEED")


def zork1_path() -> Path:
    """The real Zork I (MIT release 119), packaged with zorkmcp."""
    return ZORK1_Z3


def default_sigint() -> None:
    """``preexec_fn`` for a child that will get Ctrl-C: SIGINT (and SIGHUP) back to their default disposition.

    A process started in the background by a non-interactive shell (CI runners can do this) inherits
    SIGINT *ignored*, and Python then installs no KeyboardInterrupt handler in its children.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)  # and SIGHUP, which nohup ignores


def offline_env(**extra: str) -> dict[str, str]:
    """The environment for a ``zorkmcp`` subprocess: no API key (the offline scripted model), no GAME."""
    env = {k: v for k, v in os.environ.items() if k not in _KEY_VARIABLES}
    env.update(extra)
    return env


def run_in_tmux(
    cwd: Path,
    command: str,
    width: int,
    height: int,
    *,
    meanwhile: Callable[..., object] | None = None,
    watch: bool = False,
) -> list[str]:
    """``command`` in a ``width``×``height`` tmux pane (a real terminal); the screen and its scrollback.

    ``meanwhile``, if given, is called while the command runs with a function that types keys into
    the pane (``send("abc")``, ``send("C-c")``: tmux's ``send-keys``). With ``watch``, it gets a
    second one, ``wait_for(text)``: it returns once the pane has shown ``text`` (in what the command
    wrote to the terminal, its escape sequences left out), reading that as it comes (tmux's
    ``pipe-pane`` into a named pipe), and fails after 60 s without it.

    Skips the test when tmux is not installed.
    """
    if shutil.which("tmux") is None:
        pytest.skip("tmux is not installed: a live view cannot be checked in a real terminal")
    socket = f"zorkmcp-live-{uuid.uuid4().hex[:8]}"
    tmux = ["tmux", "-L", socket]
    script = f"cd {cwd} && {command}; {' '.join(tmux)} wait-for -S ran; exec cat"
    env = offline_env(TERM="xterm-256color")
    env.pop("TMUX", None)
    with tempfile.TemporaryDirectory() as folder:
        pipe = Path(folder) / "pane"
        os.mkfifo(pipe)
        reader = os.open(pipe, os.O_RDWR | os.O_NONBLOCK)  # always a writer: select() wakes only for data
        try:
            subprocess.run(
                [*tmux, "new-session", "-d", "-x", str(width), "-y", str(height), script], env=env, check=True
            )
            try:
                if watch:
                    subprocess.run([*tmux, "pipe-pane", f"cat > {pipe}"], env=env, check=True)
                if meanwhile is not None:

                    def send(*keys: str) -> None:
                        subprocess.run([*tmux, "send-keys", *keys], env=env, check=True)

                    meanwhile(send, partial(_wait_for, reader, [])) if watch else meanwhile(send)
                subprocess.run([*tmux, "wait-for", "ran"], env=env, check=True, timeout=60)
                pane = subprocess.run(
                    [*tmux, "capture-pane", "-p", "-S", "-200"],
                    env=env,
                    check=True,
                    capture_output=True,
                    text=True,
                )
            finally:
                subprocess.run([*tmux, "kill-server"], env=env, check=False)
        finally:
            os.close(reader)
    return pane.stdout.rstrip("\n").splitlines()


_ESCAPES = re.compile(
    r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][0-9A-Za-z]|\x1b[=>78]|\r"
)
"""What a terminal takes as commands in a program's output (CSI, OSC, charsets, keypad modes), and CR."""


WAIT_FOR_SECONDS = 60.0
"""How long ``wait_for`` (:func:`run_in_tmux`) waits for its text at most: a bound, not a pace."""


def _wait_for(reader: int, seen: list[bytes], text: str) -> None:
    """Read the pane's output from ``reader`` until, escape sequences left out, it holds ``text``.

    A live view redraws itself: output comes all the time, so the bound is on the whole wait.
    """

    def shown() -> str:
        return _ESCAPES.sub("", b"".join(seen).decode("utf-8", "replace"))

    deadline = time.monotonic() + WAIT_FOR_SECONDS
    while text not in shown():
        left = deadline - time.monotonic()
        ready = select.select([reader], [], [], max(left, 0))[0] if left > 0 else []
        assert ready, f"the pane never showed {text!r}; its last output: {shown()[-600:]!r}"
        seen.append(os.read(reader, 65536))


def write_project(
    folder: Path,
    *,
    mcp_config: dict[str, Any] | str | None = PER_TURN_THINKING,
    enabled: bool = True,
    max_turns: int | None = None,
    files: dict[str, str] | None = None,
) -> Path:
    """Write ``pyproject.toml`` (and ``mcp_config.json``) into ``folder``.

    Args:
        folder: created if needed.
        mcp_config: the JSON object, raw text (e.g. broken JSON), or ``None`` for no file.
        enabled: ``[tool.zorkgpt.mcp] enabled``.
        max_turns: ``[tool.zorkgpt.orchestrator] max_turns_per_episode``.
        files: keys of ``[tool.zorkgpt.files]``.

    Returns:
        The pyproject's path.
    """
    folder.mkdir(parents=True, exist_ok=True)
    lines = [
        "[tool.zorkgpt.mcp]",
        f"enabled = {'true' if enabled else 'false'}",
        'config_file = "mcp_config.json"',
    ]
    if max_turns is not None:
        lines += ["[tool.zorkgpt.orchestrator]", f"max_turns_per_episode = {max_turns}"]
    if files:
        lines.append("[tool.zorkgpt.files]")
        lines += [f"{key} = {json.dumps(value)}" for key, value in files.items()]
    pyproject = folder / "pyproject.toml"
    pyproject.write_text("\n".join(lines) + "\n", encoding="utf-8")
    if mcp_config is not None:
        text = mcp_config if isinstance(mcp_config, str) else json.dumps(mcp_config, indent=2)
        (folder / "mcp_config.json").write_text(text, encoding="utf-8")
    return pyproject


def read_events(path: Path) -> list[dict[str, Any]]:
    """The JSON-lines event log."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def events_of(events: list[dict[str, Any]], event_type: str) -> list[dict[str, Any]]:
    """The events of one type, oldest first."""
    return [e for e in events if e["event_type"] == event_type]


def _stat_fields(pid: int) -> list[str] | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()  # fields from the state on (the name may hold spaces)


def proc_start_time(pid: int) -> int | None:
    """The process's start time in clock ticks (tells a reused PID apart), ``None`` when it is gone."""
    fields = _stat_fields(pid)
    return int(fields[19]) if fields is not None else None


def is_running(pid: int, start_time: int | None) -> bool:
    """Whether the process ``pid`` that started at ``start_time`` still runs (a zombie counts as gone)."""
    fields = _stat_fields(pid)
    if fields is None or fields[0] in ("Z", "X"):
        return False
    return start_time is None or int(fields[19]) == start_time


async def all_exit(processes: dict[int, tuple[int | None, str]]) -> None:
    """Wait until every one of these processes (from :func:`descendants`) has exited (pidfd readable)."""
    import trio

    for pid, (start, _) in processes.items():
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        try:
            if is_running(pid, start):  # not a new process that got the PID
                await trio.lowlevel.wait_readable(pidfd)
        finally:
            os.close(pidfd)


def descendants(root: int) -> dict[int, tuple[int | None, str]]:
    """Every live descendant of ``root`` (by parent PID, from /proc): PID → (start time, command line)."""
    if not sys.platform.startswith("linux"):  # pragma: no cover
        pytest.skip("needs /proc")
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat_fields(int(entry))
            if fields is not None:
                parents[int(entry)] = int(fields[1])
    found: dict[int, tuple[int | None, str]] = {}
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in found:
                try:
                    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
                except OSError:
                    continue
                found[pid] = (proc_start_time(pid), cmdline)
                frontier.append(pid)
    return found


def stopped_by_a_full_disk(code: int, out: str, err: str, file: Path, summary_json: Path) -> dict[str, Any]:
    """Check that ``zorkmcp play`` stopped because ``file`` met a full disk, as the README's fault table
    says (exit 1, the summary table, no traceback, the last line naming the file, the reason and what
    to mend, ``--summary-json`` saying so), and return the ``--summary-json``.
    """
    reason = f"{file}: cannot be written (No space left on device)"
    assert code == 1
    assert "Episode summary" in out
    assert "Traceback" not in err
    assert err.endswith(
        f"zorkmcp play: a file could not be written (RunWriteError): {reason}; what it held stays valid; "
        "make room on its disk"
    ), err
    summary: dict[str, Any] = json.loads(summary_json.read_text())  # its own folder had room
    assert (summary["stopped"], summary["error"]) == ("error", f"RunWriteError: {reason}")
    return summary
