"""A zorkmcp process killed with SIGKILL (``kill -9``, the OOM killer) leaves no process behind.

Nothing of a process killed so runs: no teardown, no exit hook, no signal handler. Its guard
(:mod:`zorkmcp._pidfds`), a process of its own, ends every server and all they started once it is
gone: a server busy in a call or ignoring the end of its input, behind ``sh -c``, its children in its
process group and those that called ``setsid``; the zygote and the servers it forked. Real
``zorkmcp`` processes, real servers; each test marks everything it starts with a variable of its own
(inherited by every process below the command) and kills whatever still carries it when it ends,
passed or failed.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import uuid
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING

from play_support import offline_env
from servers.helpers import MISBEHAVING

from zorkmcp import _pidfds

if TYPE_CHECKING:
    from collections.abc import Iterator

GUARD = 60.0
"""Seconds before a blocking wait gives up (a hang guard, never an assertion on time)."""
GONE_WITHIN = 10.0
"""Seconds the processes of a killed command get to be gone (the guard takes milliseconds)."""
MARK = "ORPHANS_TEST_MARK"
"""The variable marking what a test started (not ``ZORKMCP_*``, which the guard drops: it carries this)."""
HANG_SERVER = Path(__file__).with_name("play_hang_server.py")
PYPROJECT = '[tool.zorkgpt.mcp]\nenabled = true\nconfig_file = "mcp_config.json"\n'


def _marked(mark: str) -> dict[int, str]:
    """Live processes (not zombies) whose environment carries ``ORPHANS_TEST_MARK=<mark>``, by PID."""
    wanted = f"{MARK}={mark}".encode()
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
            cmdline = (
                Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            )
        except OSError:
            continue
        if wanted in environ and state not in (b"Z", b"X"):
            found[int(entry)] = cmdline.strip()
    return found


def _pin(pids: dict[int, str]) -> dict[int, int]:
    pinned = {}
    for pid in pids:
        with suppress(OSError):
            pinned[pid] = os.pidfd_open(pid)
    return pinned


@contextmanager
def _marked_command(argv: list[str], cwd: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """``zorkmcp ARGV`` in a session of its own, offline, marked; leaving, whatever is marked is killed."""
    mark = uuid.uuid4().hex
    command = subprocess.Popen(
        [sys.executable, "-m", "zorkmcp.cli", *argv],
        cwd=cwd,
        env=offline_env(**{MARK: mark}),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        yield command, mark
    finally:
        if command.poll() is None:
            command.kill()
            command.wait()
        for pidfd in _pin(_marked(mark)).values():  # only left when the test failed
            with suppress(OSError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            os.close(pidfd)
        if command.stderr is not None:
            command.stderr.close()


def _kill_9_and_see_what_is_left(command: subprocess.Popen[bytes], mark: str) -> dict[int, str]:
    """SIGKILL the command; what of it is still running once everything had time to go (command lines)."""
    before = _marked(mark)
    assert len(before) >= 3, before  # the command, its guard, its servers
    command.kill()
    command.wait()
    pinned = _pin(before)
    try:
        # real-time: the guard, a process of its own, ends them; bounded by GONE_WITHIN
        poller = select.poll()
        for pidfd in pinned.values():
            poller.register(pidfd, select.POLLIN)
        left = set(pinned.values())
        while left and (ready := poller.poll(GONE_WITHIN * 1000)):
            for pidfd, _ in ready:
                poller.unregister(pidfd)
                left.discard(pidfd)
    finally:
        for pidfd in pinned.values():
            os.close(pidfd)
    return _marked(mark)


def _read_until(fd: int, wanted: bytes, count: int = 1) -> bytes:
    heard = b""
    while heard.count(wanted) < count:
        assert select.select([fd], [], [], GUARD)[0], f"never heard {wanted!r} x{count}: {heard!r}"
        heard += os.read(fd, 4096)
    return heard


def _fifo(path: Path) -> int:
    os.mkfifo(path)
    return os.open(path, os.O_RDWR | os.O_NONBLOCK)  # read-write: select() wakes only for data


def test_kill_9_during_a_call_leaves_nothing_of_a_server_behind_sh_nor_its_children(tmp_path: Path) -> None:
    # sh -c without exec: sh -> python; the server ignores SIGTERM and the end of its input (it is
    # busy, in a sense), has a child in its process group and one that called setsid.
    fifo = tmp_path / "server.fifo"
    reader = _fifo(fifo)
    server = f"{sys.executable} -S {MISBEHAVING} stubborn,child,setsid-child; echo done"
    config = {"mcpServers": {"bad": {"command": "sh", "args": ["-c", server],
                                     "env": {"MISBEHAVING_CALLS_FIFO": str(fifo)}}}}  # fmt: skip
    (tmp_path / "mcp_config.json").write_text(json.dumps(config))
    argv = ["call", "bad.hang", "{}", "--config", "mcp_config.json", "--timeout", "600"]
    try:
        with _marked_command(argv, tmp_path) as (command, mark):
            _read_until(reader, b"CALL hang\n")
            assert _kill_9_and_see_what_is_left(command, mark) == {}
    finally:
        os.close(reader)


def test_kill_9_mid_turn_of_play_leaves_no_server_zygote_or_child(tmp_path: Path) -> None:
    # A per_turn think server hangs in its call (with a child); a per_episode server has a child in
    # its group; a per_turn server forks one that calls setsid; the embedded server is forked by the
    # episode's zygote; the game server runs too.
    fifo = tmp_path / "think.fifo"
    reader = _fifo(fifo)
    servers = {
        "thinking": {"command": sys.executable, "args": [str(HANG_SERVER), str(fifo), "--child"]},
        "episode": {"command": sys.executable, "args": ["-S", str(MISBEHAVING), "child"],
                    "lifecycle": "per_episode"},
        "escaper": {"command": sys.executable, "args": ["-S", str(MISBEHAVING), "setsid-child"]},
        "embedded": {"command": "python3", "args": ["-m", "zorkmcp.servers.thinking"]},
    }  # fmt: skip
    (tmp_path / "mcp_config.json").write_text(json.dumps({"mcpServers": servers}))
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    try:
        with _marked_command(["play", "--turns", "50", "--quiet"], tmp_path) as (command, mark):
            _read_until(reader, b"THINK ")  # turn 0's think call is under way
            running = _marked(mark).values()
            assert any("zorkmcp.servers._zygote" in line for line in running), running
            assert _kill_9_and_see_what_is_left(command, mark) == {}
    finally:
        os.close(reader)


def test_kill_9_of_eval_with_four_episodes_at_once_leaves_nothing(tmp_path: Path) -> None:
    fifo = tmp_path / "ready.fifo"
    reader = _fifo(fifo)
    announce = {"MISBEHAVING_READY_FIFO": str(fifo)}
    servers = {
        "episode": {"command": sys.executable, "args": ["-S", str(MISBEHAVING), "child"],
                    "lifecycle": "per_episode", "env": announce},
        "escaper": {"command": sys.executable, "args": ["-S", str(MISBEHAVING), "setsid-child"]},
        "thinking": {"command": "python3", "args": ["-m", "zorkmcp.servers.thinking"]},
    }  # fmt: skip
    (tmp_path / "mcp_config.json").write_text(json.dumps({"mcpServers": servers}))
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    argv = ["eval", "--episodes", "8", "--concurrency", "4", "--turns", "200", "--quiet", "--out", "run"]
    try:
        with _marked_command(argv, tmp_path) as (command, mark):
            _read_until(reader, b"PID ", count=4)  # four episodes' per_episode servers have started
            assert _kill_9_and_see_what_is_left(command, mark) == {}
    finally:
        os.close(reader)


def test_a_command_that_ends_normally_reaps_its_guard(tmp_path: Path) -> None:
    config = {"mcpServers": {"bad": {"command": sys.executable, "args": ["-S", str(MISBEHAVING), "ok"]}}}
    (tmp_path / "mcp_config.json").write_text(json.dumps(config))
    with _marked_command(["call", "bad.echo", '{"text": "hi"}', "--config", "mcp_config.json"], tmp_path) as (
        command,
        mark,
    ):
        assert command.wait(timeout=GUARD) == 0
        assert _marked(mark) == {}  # the guard was told, and reaped, before the command exited


def test_a_guard_that_died_is_started_again_by_the_next_spawn() -> None:
    first = _pidfds.ensure_guard()
    assert first is not None
    assert _pidfds.ensure_guard() == first  # one per process
    pidfd = os.pidfd_open(first)
    try:
        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        assert select.select([pidfd], [], [], GUARD)[0]
    finally:
        os.close(pidfd)
    second = _pidfds.ensure_guard()
    assert second not in (None, first)
    assert _pidfds.guard_pid() == second


_FORKS_THEN_DIES = """
import os, signal, subprocess, sys, time
from zorkmcp import _pidfds
_pidfds.ensure_guard()
env = {**os.environ, _pidfds.OWNER_ENV_VAR: _pidfds.owner_token()}
pause = [sys.executable, "-c", "import signal; signal.pause()"]
server = subprocess.Popen(pause, env=env, start_new_session=True)
said, say = os.pipe()
child = os.fork()
if child == 0:  # a forked child (multiprocessing's default) that lives on: it must not hold the guard
    os.write(say, f"{_pidfds.owner_token() != env[_pidfds.OWNER_ENV_VAR]} {_pidfds.guard_pid()}".encode())
    signal.pause()
os.close(say)
# one line, one writer: the child's words come through the owner (they once interleaved on stdout)
print(server.pid, child, os.read(said, 100).decode(), flush=True)
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_child_forked_by_the_owner_does_not_keep_its_guard_waiting() -> None:
    mark = uuid.uuid4().hex
    owner = subprocess.Popen(
        [sys.executable, "-c", _FORKS_THEN_DIES],
        env=offline_env(**{MARK: mark}),
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert owner.stdout is not None
        said = owner.stdout.readline().split()
        assert owner.wait(timeout=GUARD) == -signal.SIGKILL
        assert said[2:] == ["True", "None"]  # the child has a token of its own, and no guard yet
        server = int(said[0])
        pidfd = os.pidfd_open(server)
        try:
            # real-time: the guard, a process of its own, kills the server; bounded by GONE_WITHIN
            assert select.select([pidfd], [], [], GONE_WITHIN)[0], f"server {server} outlived its owner"
        finally:
            os.close(pidfd)
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()
        for pidfd in _pin(_marked(mark)).values():  # the forked child; the server when the test failed
            with suppress(OSError):
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            os.close(pidfd)
        if owner.stdout is not None:
            owner.stdout.close()


_NO_FILE_DESCRIPTORS = """
import os, resource
from zorkmcp import _pidfds
resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
held = []
try:
    while True:
        held.append(os.open(os.devnull, os.O_RDONLY))
except OSError:
    pass
print(_pidfds.ensure_guard(), _pidfds.guard_pid())
"""


def test_a_guard_that_cannot_start_for_want_of_file_descriptors_is_no_error() -> None:
    # Its pipe raised EMFILE out of the first server's spawn: a run out of open files ended in a
    # traceback instead of its one line (tests/test_eval_open_files.py, now and then).
    done = subprocess.run(
        [sys.executable, "-c", _NO_FILE_DESCRIPTORS],
        env=offline_env(),
        capture_output=True,
        text=True,
        timeout=GUARD,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "None None\n", "")
