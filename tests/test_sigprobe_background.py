"""A command started with ``&`` in a script ignores SIGINT; SIGTERM still takes its Ctrl-C path.

Bash starts a job in the background of a non-interactive shell (a script, ``bash -c``, a CI step)
with SIGINT ignored, and ``timeout``, Slurm, systemd and ``cmd & … kill $!`` then stop it with
SIGTERM. That SIGTERM used to end the command on the spot (its servers first): ``zorkmcp eval`` left
no summary, no resume line and its lock, ``zorkmcp play`` no summary. Now it stops as on Ctrl-C
(exit status 143), and a real SIGINT is still dropped: the shell asked for that.

Every command here is started through ``bash -c '… & …'``, so the ignored SIGINT is bash's own.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import textwrap
import threading
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

from llm_server import completion
from play_support import PER_TURN_THINKING, descendants, events_of, offline_env, read_events, write_project
from servers.helpers import MISBEHAVING

import zorkmcp

if TYPE_CHECKING:
    from collections.abc import Iterator

REPO = Path(zorkmcp.__file__).resolve().parents[1]
ENTRY = "import sys; from zorkmcp._entry import main; sys.exit(main())"
ZORKMCP = f"env PYTHONPATH={REPO}:{REPO / 'tests'} {sys.executable} -c '{ENTRY}'"
"""``zorkmcp`` of the tree under test."""
GUARD = 60.0
"""Seconds before a wait gives up: a bound against a hang, never a pace."""


class _Gate:
    """A chat-completions endpoint: each request is counted, then answered once the test lets it through."""

    def __init__(self) -> None:
        self.asked = threading.Semaphore(0)
        self.gate = threading.Semaphore(0)

    def wait_asked(self, what: str) -> None:
        # real-time: the command runs in its own process, at its own pace
        assert self.asked.acquire(timeout=GUARD), f"the model was never asked: {what}"


@contextmanager
def _model() -> Iterator[tuple[str, _Gate]]:
    gate = _Gate()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # zorkmcp eval's probe of the endpoint (GET /models)
            self.send_error(404)

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", 0)))
            gate.asked.release()
            if not gate.gate.acquire(timeout=GUARD):  # real-time: held until the test lets it through
                self.send_error(503)
                return
            content = json.dumps({"thinking": "Looking around.", "action": "look", "new_objective": None})
            body = json.dumps(completion({"role": "assistant", "content": content})).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            with suppress(OSError):  # the command stopped meanwhile: nobody reads the answer
                self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            del format, args

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", gate
    finally:
        gate.gate.release(100)  # a request still held is answered, and its handler ends
        server.shutdown()
        server.server_close()
        thread.join()


class _Background:
    """``bash -c 'COMMAND > out 2> err & echo $! > pid; wait $!; echo $?'`` in ``folder``."""

    def __init__(self, folder: Path, command: str) -> None:
        self.folder = folder
        script = f"cd {folder}; {command} > out.txt 2> err.txt & echo $! > pid.txt; wait $!; echo $?"
        self.shell = subprocess.Popen(
            ["bash", "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=offline_env()
        )
        self.pid = 0

    def started(self) -> int:
        # real-time: bash writes the PID once it has started the job
        for _ in range(int(GUARD * 100)):
            with suppress(FileNotFoundError, ValueError):
                self.pid = int((self.folder / "pid.txt").read_text())
                return self.pid
            select.select([], [], [], 0.01)
        raise AssertionError("bash never started the job")

    def signal_ignored(self, signum: int) -> bool:
        """Whether the command drops ``signum``: ignored, or blocked in each of its threads."""

        def mask(status: Path, field: str) -> int:
            line = next(line for line in status.read_text().splitlines() if line.startswith(f"{field}:"))
            return int(line.split()[1], 16) >> (signum - 1) & 1

        tasks = list(Path(f"/proc/{self.pid}/task").iterdir())
        return bool(mask(Path(f"/proc/{self.pid}/status"), "SigIgn")) or all(
            mask(task / "status", "SigBlk") for task in tasks
        )

    def finish(self) -> tuple[int, str, str]:
        """The command's exit status (as ``$?`` says it), its stdout and stderr."""
        shell_out, shell_err = self.shell.communicate(timeout=GUARD)
        assert self.shell.returncode == 0, shell_err.decode()
        return (
            int(shell_out.decode().strip()),
            (self.folder / "out.txt").read_text(),
            (self.folder / "err.txt").read_text(),
        )

    def close(self) -> None:
        if self.shell.returncode is None:
            with suppress(ProcessLookupError):
                if self.pid:
                    os.kill(self.pid, signal.SIGKILL)
            self.shell.kill()
            self.shell.wait()


def _all_ended(processes: dict[int, tuple[int | None, str]]) -> None:
    """Every one of these processes has ended (or ends within :data:`GUARD`: the guard reaps last)."""
    for pid in processes:
        try:
            pidfd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        try:
            # real-time: a process ends in its own time
            assert select.select([pidfd], [], [], GUARD)[0], (
                f"{processes[pid][1]} (PID {pid}) outlived zorkmcp"
            )
        finally:
            os.close(pidfd)


def test_eval_in_the_background_of_a_script_stops_on_sigterm_as_on_ctrl_c(tmp_path: Path) -> None:
    # zorkmcp eval run.toml & ... kill -TERM $!: the summary of the episodes that ended, the resume
    # line, exit status 143, the lock removed; a real SIGINT (Ctrl-C in the script's terminal) changed
    # nothing before it.
    with _model() as (url, model):
        (tmp_path / "run.toml").write_text(
            textwrap.dedent(f"""\
                [eval]
                episodes = 3
                max_turns = 1
                concurrency = 1
                out = "runs/slow"

                [[arms]]
                name = "a"
                model = "m"
                base_url = "{url}"
                mcp = false
                """),
            encoding="utf-8",
        )
        job = _Background(tmp_path, f"{ZORKMCP} eval run.toml --quiet")
        try:
            pid = job.started()
            model.wait_asked("episode 1")
            assert job.signal_ignored(signal.SIGINT)
            model.gate.release(1)
            model.wait_asked("episode 2")
            os.kill(pid, signal.SIGINT)  # dropped: the shell asked for it
            model.gate.release(1)
            model.wait_asked("episode 3")  # the run went on
            children = descendants(pid)
            os.kill(pid, signal.SIGTERM)
            code, out, err = job.finish()
        finally:
            job.close()
    assert code == 143, err
    assert out.splitlines()[-4:] == [
        "arm    episodes failed  score ± se win rate moves tools/turn tokens in/out",
        "─" * 74,
        "a             2      0 0.00 ± 0.00       0%   1.0       0.00       22 / 14",
        "2 episode(s) played, 0 resumed; files in runs/slow "
        "(episodes/, summary.json, summary.csv, report.html)",
    ]
    assert err == (
        "zorkmcp eval: interrupted; the summary covers the finished episodes; to play the rest, run the "
        "same command with --resume --out runs/slow\n"
    )
    assert "Traceback" not in err
    run = tmp_path / "runs" / "slow"
    assert sorted(p.name for p in run.iterdir() if not p.is_dir()) == [
        "report.html",
        "summary.csv",
        "summary.json",
    ]
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["arms"]["a"]["episodes"], summary["arms"]["a"]["seeds"]) == (2, [12, 13])
    assert summary["plan"] == {"arms": ["a"], "first_seed": 12, "last_seed": 14}
    _all_ended(children)


def test_play_in_the_background_of_a_script_prints_its_summary_on_sigterm(tmp_path: Path) -> None:
    # zorkmcp play & ... kill -TERM $!: the episode summary (stopped: interrupted (SIGTERM)), exit 143,
    # its servers (the game, the think server) ended with it.
    pyproject = write_project(tmp_path, mcp_config=PER_TURN_THINKING)
    with _model() as (url, model):
        job = _Background(
            tmp_path, f"{ZORKMCP} play --turns 20 --pyproject {pyproject} --base-url {url} --model m"
        )
        try:
            pid = job.started()
            model.wait_asked("turn 1")
            model.gate.release(1)
            model.wait_asked("turn 2")
            os.kill(pid, signal.SIGINT)  # dropped
            model.gate.release(1)
            model.wait_asked("turn 3")
            children = descendants(pid)
            os.kill(pid, signal.SIGTERM)
            code, out, err = job.finish()
        finally:
            job.close()
    assert (code, err) == (143, "")
    assert "Episode summary" in out
    assert "│ stopped         │ interrupted (SIGTERM) │" in out
    assert "│ turns           │ 2                     │" in out
    assert any("zorkmcp.game.server" in cmd for _, cmd in children.values())
    events = read_events(tmp_path / "logs" / "zorkmcp_events.jsonl")
    assert events_of(events, "episode_complete")[0]["stopped"] == "interrupted"
    _all_ended(children)


def test_call_in_the_background_of_a_script_stops_its_server_on_sigterm(tmp_path: Path) -> None:
    # zorkmcp call & ... kill -TERM $!, the server busy in the call and deaf to SIGTERM and to the end
    # of its input: the call is cancelled as on Ctrl-C, the server killed, exit 143.
    fifo = tmp_path / "ready.fifo"
    os.mkfifo(fifo)
    server = {"command": sys.executable, "args": ["-S", str(MISBEHAVING), "stubborn"],
              "env": {"MISBEHAVING_READY_FIFO": str(fifo), "MISBEHAVING_CALLS_FIFO": str(fifo)}}  # fmt: skip
    (tmp_path / "mcp_config.json").write_text(json.dumps({"mcpServers": {"bad": server}}))
    reader = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)  # read-write: select() wakes only for data
    job = _Background(tmp_path, f"{ZORKMCP} call bad.hang '{{}}' --config mcp_config.json --timeout 600")
    try:
        pid = job.started()
        heard = b""
        while b"CALL hang\n" not in heard:  # started, then in the call
            # real-time: the server starts in its own process
            assert select.select([reader], [], [], GUARD)[0], f"the server never got the call: {heard!r}"
            heard += os.read(reader, 4096)
        server_pid = int(heard.split()[1])
        assert job.signal_ignored(signal.SIGINT)
        children = descendants(pid)
        assert server_pid in children
        os.kill(pid, signal.SIGTERM)
        code, out, err = job.finish()
    finally:
        os.close(reader)
        job.close()
    assert (code, out) == (143, "")
    assert "Traceback" not in err
    assert err == "interrupted\n"  # as on Ctrl-C
    _all_ended(children)


_PROBE = """\
import os, signal, subprocess, sys, threading, trio
from zorkmcp._signals import interruption, stops_as_ctrl_c

if sys.argv[1:] == ["thread"]:  # a thread the mask of this one would not reach
    threading.Thread(target=threading.Event().wait, daemon=True).start()

def pending():
    with open("/proc/self/status") as f:
        fields = dict(line.split(":\\t", 1) for line in f if ":\\t" in line)
    return bool(int(fields["SigPnd"], 16) & 2 or int(fields["ShdPnd"], 16) & 2)

# real-time: a server process deaf to SIGTERM that waits, idle, until it is killed
STUBBORN = "import signal as s, time; s.signal(s.SIGTERM, s.SIG_IGN); print(flush=True); time.sleep(600)"

async def main():
    if sys.argv[1:] == ["thread"]:  # a server deaf to SIGTERM: ended first, by SIGKILL
        server = subprocess.Popen([sys.executable, "-c", STUBBORN], stdout=subprocess.PIPE)
        server.stdout.readline()
        print("server", server.pid, flush=True)
    os.kill(os.getpid(), signal.SIGINT)
    await trio.sleep(0)  # a checkpoint, no wait: where a delivered SIGINT would be raised
    print("SIGINT dropped", pending(), flush=True)
    os.kill(os.getpid(), signal.SIGTERM)
    try:
        await trio.sleep_forever()
    except KeyboardInterrupt:
        print("KeyboardInterrupt", interruption(), flush=True)

with stops_as_ctrl_c():
    trio.run(main, restrict_keyboard_interrupt_to_checkpoints=True)
print("after", signal.getsignal(signal.SIGINT) is signal.SIG_IGN, pending(), flush=True)
"""


def test_trio_gets_sigterm_as_ctrl_c_and_sigint_stays_dropped(tmp_path: Path) -> None:
    # The mechanism alone: a trio loop in a job started with & gets SIGTERM as Ctrl-C (trio put in
    # its SIGINT handler: this fails if trio stops doing so where SIGINT is Python's own), while the
    # SIGINT sent to itself is held, never delivered, and dropped once the block ends.
    (tmp_path / "probe.py").write_text(_PROBE, encoding="utf-8")
    job = _Background(tmp_path, f"env PYTHONPATH={REPO} {sys.executable} probe.py")
    try:
        job.started()
        code, out, err = job.finish()
    finally:
        job.close()
    assert (code, out, err) == (0, "SIGINT dropped True\nKeyboardInterrupt SIGTERM\nafter True False\n", "")


def test_sigterm_still_ends_on_the_spot_where_sigint_cannot_be_held(tmp_path: Path) -> None:
    # A second thread at the start: SIGINT blocked in this one would reach that one, and Python
    # would run its handler. Then SIGTERM ends the process as its default does, as before, its
    # servers first (one deaf to SIGTERM is killed).
    (tmp_path / "probe.py").write_text(_PROBE, encoding="utf-8")
    job = _Background(tmp_path, f"env PYTHONPATH={REPO} {sys.executable} probe.py thread")
    try:
        job.started()
        code, out, err = job.finish()
    finally:
        job.close()
    server, dropped = out.splitlines()
    server_pid = int(server.split()[1])
    try:
        assert (code, server.split()[0], dropped, err) == (143, "server", "SIGINT dropped False", "")
        _all_ended({server_pid: (None, "the stubborn server")})
    finally:
        with suppress(ProcessLookupError):
            os.kill(server_pid, signal.SIGKILL)  # only reached alive when the test fails
