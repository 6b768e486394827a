"""``zorkmcp eval`` out of open files: one line that says so and what to do, never a traceback.

A real ``zorkmcp eval`` process with 128 episodes at once (each with its ``think`` server) under a
limit of 256 open files, set in the child only (soft and hard: the run cannot raise it). The
loopback model answers no episode until the first one has ended, so the episodes that started hold
their descriptors while the others start, fail and write their files. A run that Jericho's
interpreter ends at once (see the test) is played again.
"""

from __future__ import annotations

import re
import resource
import sys
from pathlib import Path
from subprocess import PIPE
from typing import TYPE_CHECKING

import pytest
import trio
from attrs import evolve
from llm_server import Reply, agent_reply
from play_support import offline_env, zork1_path

if TYPE_CHECKING:
    from llm_server import LLMServer, RecordedRequest


def _open_files(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))


FEWER = re.escape(
    "allow more open files (ulimit -n) or pass a lower --concurrency, then run the same command with"
)


async def _play_out_of_files(llm_server: LLMServer, run: Path) -> tuple[int | None, list[str]]:
    """One run of 128 episodes at once under 256 open files: its exit status and its stderr lines."""
    release = trio.Event()

    def step(request: RecordedRequest) -> Reply:
        if request.method != "POST":  # the run's probe of the endpoint (GET /models)
            return Reply(status=404)
        return evolve(agent_reply("look"), hold=release)

    llm_server.default = step
    command = [
        sys.executable, "-m", "zorkmcp.cli", "eval", "--game", str(zork1_path()), "--base-url",
        llm_server.base_url, "--model", "m", "--episodes", "128", "--concurrency", "128", "--turns", "3",
        "--out", str(run),
    ]  # fmt: skip
    process = await trio.lowlevel.open_process(
        command,
        cwd=run.parent,
        env=offline_env(),
        stdout=PIPE,
        stderr=PIPE,
        preexec_fn=lambda: _open_files(256),
    )
    assert process.stdout is not None
    assert process.stderr is not None
    err = bytearray()

    async def read(stream: trio.abc.ReceiveStream, into: bytearray) -> None:
        async for chunk in stream:
            into.extend(chunk)
            if b"\narm=" in into:  # an episode has ended (a line each: stdout is not a terminal)
                release.set()  # the others may play on

    with trio.fail_after(180):  # a hang guard
        async with trio.open_nursery() as nursery:
            nursery.start_soon(read, process.stderr, err)
            await read(process.stdout, bytearray())
        release.set()
        await process.wait()
    return process.returncode, err.decode().splitlines()


async def test_a_run_out_of_open_files_ends_with_one_line_that_says_what_to_do(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    # Three runs: which way each ends (a write error, or failed starts) depends on the timing.
    played: list[tuple[Path, int | None, list[str]]] = []
    for attempt in range(10):
        run = tmp_path / f"run{attempt}"
        code, lines = await _play_out_of_files(llm_server, run)
        # Jericho's interpreter (frotz) ends the whole process (os_fatal: "Fatal error: Cannot open
        # story file", "Fatal error: Too many open files") when a file it opens itself cannot be
        # opened. zorkmcp checks that descriptors are free just before (game/_jericho.py), but
        # another thread may take them in between: rare, not impossible. Such a run says nothing
        # of zorkmcp's own handling: play another.
        if not any(line.startswith("Fatal error: ") for line in lines):
            played.append((run, code, lines))
        if len(played) == 3:
            break
    if not played:
        pytest.skip("the game's interpreter exited the eval process in every attempt (out of open files)")
    for run, code, lines in played:
        _check_one_line(run, code, lines)


RETRIED = re.compile(
    r"zorkmcp eval: (a model request to|\d+ more retries of model requests to) http://127\.0\.0\.1:\d+/v1 "
    r"\(arm mcp\)(; the latest| failed and is retried) .*"
)


def _check_one_line(run: Path, code: int | None, lines: list[str]) -> None:
    assert code == 1, lines[-40:]
    # A model request that could not connect (no descriptor for its socket) is retried, and says so.
    lines = [line for line in lines if not RETRIED.fullmatch(line)]
    assert len(lines) == 1, lines[-40:]  # no traceback
    (line,) = lines
    folder = re.escape(str(run))
    stopped = re.fullmatch(
        rf"zorkmcp eval: stopped, {folder}/episodes/mcp/seed-\d+(\.events\.jsonl|\.json): cannot be "
        rf"written \(Too many open files\); the files written before are kept; {FEWER} --resume --out "
        rf"{folder}",
        line,
    )
    failed = re.fullmatch(
        r"zorkmcp eval: \d+ episode\(s\) failed, e\.g\. mcp seed \d+: MCPServerStartupError: Failed to start "
        r"MCP server '(thinking|zork)': .*Too many open files.*; \d+ of them ran out of open files: "
        rf"{FEWER} --retry-failed --out {folder}",
        line,
    )
    assert stopped or failed, line
    assert (run / "summary.json").exists()  # the summary is written, whichever way the run ended


EMFILE_START = (
    "MCPServerStartupError: Failed to start MCP server 'thinking': OSError: [Errno 24] Too many open files "
    "(each server takes a few file descriptors: allow more open files, `ulimit -n`, or run fewer episodes "
    "at once, --concurrency)\nCommand: python -m zorkmcp.servers.thinking"
)
MODEL_DOWN = "LLMTransportError: connection refused"


def test_the_last_line_says_what_to_do_when_failed_episodes_ran_out_of_open_files() -> None:
    from zorkmcp._cli_eval import failed_line

    failed = [
        {"arm": "mcp", "seed": 12, "error": MODEL_DOWN},
        {"arm": "mcp", "seed": 13, "error": EMFILE_START},
        {
            "arm": "no-mcp",
            "seed": 13,
            "error": "GameError: cannot read game file zork1.z3: Too many open files",
        },
    ]
    assert failed_line(failed, Path("runs/x")) == (
        "[bold red]zorkmcp eval: 3 episode(s) failed[/], e.g. mcp seed 13: MCPServerStartupError: Failed "
        "to start MCP server 'thinking': OSError: [Errno 24] Too many open files (each server takes a few "
        "file descriptors: allow more open files, `ulimit -n`, or run fewer episodes at once, --concurrency) "
        "Command: python -m zorkmcp.servers.thinking; 2 of them ran out of open files: allow more open "
        "files (ulimit -n) or pass a lower --concurrency, then run the same command with --retry-failed "
        "--out runs/x"
    )
    assert failed_line(failed[:1], Path("runs/x")) == (
        "[bold red]zorkmcp eval: 1 episode(s) failed[/], e.g. mcp seed 12: LLMTransportError: connection "
        "refused; to play them again, run the same command with --retry-failed --out runs/x"
    )
