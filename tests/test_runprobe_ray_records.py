"""The record of an episode whose Ray worker died (``WorkerCrashedError``) has the keys of a played
episode's record, says what the driver knows, and does not make up what only the worker knew.

It held 26 of a played record's 40 keys: no ``base_url``, ``servers``, ``setup``, ``game_md5``,
``zorkmcp``, ``tools``…, ``wall_seconds`` 0.0 for an episode that had played for seconds, and 0
tokens for one that had spent some. Real Zork, the real loopback model, real MCP server processes,
and (in the one Ray test) a real local Ray runtime whose worker is killed with SIGKILL.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import attrs
import pytest
import trio
from attrs import evolve
from llm_server import Reply, agent_reply
from play_support import INPROCESS_THINKING, all_exit, default_sigint, descendants, offline_env, zork1_path

from zorkmcp.config import Settings
from zorkmcp.eval import ArmSpec, EvalPlan, play_episodes, resumable_episodes, write_episode
from zorkmcp.eval._runner import EpisodeResult

if TYPE_CHECKING:
    from pathlib import Path

    from llm_server import LLMServer, RecordedRequest

KNOWN_HERE = (
    "arm", "seed", "model", "scripted", "base_url", "mcp", "servers", "servers_disabled", "max_turns",
    "game", "game_md5", "sampling", "setup", "zorkmcp",
)  # fmt: skip
"""What the driver knows of an episode without its worker: the same as the episode's own record says."""


def _plan(tmp_path: Path, base_url: str) -> EvalPlan:
    """One episode of an arm with the think server in process (its own clock: the test's)."""
    config = tmp_path / "tools.json"
    config.write_text(json.dumps(INPROCESS_THINKING))
    settings = Settings()
    settings = attrs.evolve(settings, mcp=attrs.evolve(settings.mcp, enabled=True, config_file=str(config)))
    return EvalPlan(
        arms=(ArmSpec(name="mcp", model="m", base_url=base_url),), episodes=1, seed=5, max_turns=2,
        concurrency=1, game_path=zork1_path(), out=tmp_path / "run", settings=settings,
    )  # fmt: skip


async def test_a_dead_workers_record_has_a_played_records_keys_and_only_what_the_driver_knows(
    llm_server: LLMServer, autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    from zorkmcp.eval._ray import _failed

    llm_server.default = agent_reply("look")
    plan = _plan(tmp_path, llm_server.base_url)
    (spec,) = plan.specs()
    played: list[dict[str, Any]] = []
    await play_episodes([spec], tmp_path / "played", concurrency=1, on_done=played.append)
    (record,) = played
    crashed = _failed(
        spec, RuntimeError("The worker died unexpectedly\nWorkerCrashedError: SIGKILL"), wall=3.25
    )
    assert list(crashed) == [*record, "error"]  # the same keys, in the same order, and its error
    assert {key: crashed[key] for key in KNOWN_HERE} == {key: record[key] for key in KNOWN_HERE}
    thinking = crashed["setup"]["servers"]["thinking"]
    assert (crashed["servers"], crashed["base_url"], thinking["lifecycle"]) == (
        ["thinking"], llm_server.base_url, "per_episode",
    )  # fmt: skip
    assert {
        key: crashed[key]
        for key in (
            "score", "max_score", "turns", "scores", "llm_requests", "prompt_tokens", "completion_tokens",
            "wall_seconds", "start_seconds", "runner", "pid", "host", "stopped", "error",
        )
    } == {
        "score": 0, "max_score": None, "turns": 0, "scores": [], "llm_requests": 0,
        "prompt_tokens": None, "completion_tokens": None,  # spent, but how many only the worker knew
        "wall_seconds": 3.25, "start_seconds": None, "runner": "ray", "pid": None, "host": None,
        "stopped": "error", "error": "RuntimeError: WorkerCrashedError: SIGKILL",
    }  # fmt: skip
    # a resume reads it as it reads the others: kept, or played again with --retry-failed
    write_episode(plan.out, EpisodeResult(record=crashed, events=[]))
    assert [(r["seed"], r["error"]) for r in resumable_episodes(plan)] == [
        (5, "RuntimeError: WorkerCrashedError: SIGKILL")
    ]
    assert resumable_episodes(plan, retry_failed=True) == []


GUARD = 180.0
"""Real seconds the Ray run may take before the test gives up (Ray starts a worker per episode)."""


@pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason="Ray is not installed (pip install 'zorkmcp[ray]')"
)
async def test_a_worker_killed_mid_episode_on_rays_own_runtime_is_recorded_like_a_played_episode(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    # real-time: a Ray runtime is real processes; the model holds its answers until the test has
    # killed the worker of one of the two episodes, both waiting for it with their servers up
    if not sys.platform.startswith("linux"):  # pragma: no cover
        pytest.skip("needs /proc")
    asked, answer = trio.Event(), trio.Event()
    arrived: list[RecordedRequest] = []

    def step(request: RecordedRequest) -> Reply:
        if request.method != "POST":  # the run's probe of the endpoint
            return Reply(status=404)
        arrived.append(request)
        if len(arrived) == 2:
            asked.set()
        return evolve(agent_reply("look"), hold=answer)

    llm_server.default = step
    run = tmp_path / "run"
    command = [
        sys.executable, "-m", "zorkmcp.cli", "eval", "--ray", "--game", str(zork1_path()), "--base-url",
        llm_server.base_url, "--model", "m", "--turns", "1", "--episodes", "2", "--concurrency", "2",
        "--out", str(run),
    ]  # fmt: skip
    seen: dict[int, tuple[int | None, str]] = {}
    with (tmp_path / "stderr").open("w") as stderr, trio.fail_after(GUARD):
        proc = await trio.lowlevel.open_process(
            command, cwd=tmp_path, env=offline_env(RAY_AUTH_MODE="disabled"), stdout=subprocess.PIPE,
            stderr=stderr, preexec_fn=default_sigint,
        )  # fmt: skip
        try:
            assert proc.stdout is not None
            await asked.wait()
            seen.update(descendants(proc.pid))
            worker = min(
                pid for pid, (_, cmdline) in seen.items() if cmdline.startswith("ray::play_in_worker")
            )
            os.kill(worker, signal.SIGKILL)
            out = b""
            while b"\narm=" not in out:  # the banner, then the dead episode's line
                chunk = await proc.stdout.receive_some()
                assert chunk, out.decode()
                out += chunk
            answer.set()
            async for chunk in proc.stdout:
                out += chunk
            await proc.wait()
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    assert proc.returncode == 1, (tmp_path / "stderr").read_text()[-2000:]  # an episode failed
    records = [
        json.loads(path.read_text()) for path in sorted((run / "episodes" / "mcp").glob("seed-*.json"))
    ]
    (dead,) = [r for r in records if r.get("error")]
    (alive,) = [r for r in records if not r.get("error")]
    assert list(dead) == [*alive, "error"]
    assert {key: dead[key] for key in KNOWN_HERE if key != "seed"} == {
        key: alive[key] for key in KNOWN_HERE if key != "seed"
    }
    assert (dead["error"][:19], dead["runner"], dead["pid"], dead["prompt_tokens"]) == (
        "WorkerCrashedError:", "ray", None, None,
    )  # fmt: skip
    assert dead["wall_seconds"] > 0  # it was in flight until its worker died
    with trio.fail_after(20):  # nothing of the run outlives it: Ray's processes, workers, servers
        await all_exit(seen)
