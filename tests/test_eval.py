"""``zorkmcp eval``: many seeded episodes at once with the one episode loop, real Zork, real servers
and the real loopback model; resume, a failing arm, Ctrl-C and bad eval files."""

from __future__ import annotations

import contextlib
import csv
import errno
import gc
import importlib.util
import json
import os
import re
import resource
import shlex
import shutil
import signal
import socket
import subprocess
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import eval_support
import pytest
import trio
from eval_support import episode_records, inprocess_game
from llm_server import agent_reply, rendezvous, server_error, tool_call, tool_call_reply
from play_support import (
    INPROCESS_THINKING,
    PER_TURN_THINKING,
    all_exit,
    default_sigint,
    descendants,
    is_running,
    offline_env,
    run_in_tmux,
    write_project,
    zork1_path,
)

import zorkmcp.eval
from zorkmcp.cli import main
from zorkmcp.config import Settings
from zorkmcp.errors import ConfigError
from zorkmcp.eval import EpisodeSpec, episode_paths, load_eval_file, play_episodes, read_episode

if TYPE_CHECKING:
    from llm_server import LLMServer

EPISODE_KEYS = {
    "arm", "seed", "score", "max_score", "moves", "turns", "victory", "game_over", "deaths", "tool_calls",
    "tool_errors", "tool_timeouts", "llm_requests", "prompt_tokens", "completion_tokens", "wall_seconds",
    "scores", "runner", "pid", "host", "model", "scripted", "mcp", "servers", "max_turns", "game", "sampling",
    "stopped", "tools", "parse_errors", "deadlines",
}  # fmt: skip


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def autojump_clock() -> trio.testing.MockClock:
    """Virtual time that jumps once every task has been blocked for 50 ms of real time.

    The MCP layer builds in-process servers in a worker thread (even a prebuilt one is a thread
    hop); with a threshold of 0 the clock could jump while an episode waits for it.
    """
    return trio.testing.MockClock(autojump_threshold=0.05)


def _spec(seed: int, base_url: str, turns: int = 3) -> EpisodeSpec:
    eval_support.prebuild(seed)

    return EpisodeSpec(
        arm="a",
        seed=seed,
        max_turns=turns,
        game_path=zork1_path(),
        settings=Settings(),
        model="test-model",
        base_url=base_url,
        game_server=inprocess_game(seed),
    )


# -- a nursery of episodes on the mock clock ---------------------------------------------------------


@pytest.mark.parametrize(("concurrency", "seconds"), [(4, 3.0), (2, 6.0), (1, 12.0)])
async def test_k_episodes_whose_model_takes_a_second_finish_in_the_time_of_one(
    llm_server: LLMServer,
    autojump_clock: trio.testing.MockClock,
    tmp_path: Path,
    concurrency: int,
    seconds: float,
) -> None:
    llm_server.script(*[agent_reply("look", delay=1.0) for _ in range(12)])  # 4 episodes x 3 turns
    finished: list[tuple[float, dict[str, Any]]] = []
    turns: list[tuple[float, int]] = []
    start = trio.current_time()
    await play_episodes(
        [_spec(seed, llm_server.base_url) for seed in (1, 2, 3, 4)],
        tmp_path,
        concurrency=concurrency,
        on_turn=lambda spec: turns.append((trio.current_time() - start, spec.seed)),
        on_done=lambda record: finished.append((trio.current_time() - start, record)),
    )
    assert max(t for t, _ in finished) == pytest.approx(seconds)
    assert sorted(seed for _, seed in turns) == [1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4]
    assert turns[0][0] == pytest.approx(1.0)  # told of each turn as it ends, not when its episode does
    assert sorted(r["seed"] for _, r in finished) == [1, 2, 3, 4]
    record = finished[0][1]
    assert EPISODE_KEYS <= record.keys()
    assert "error" not in record
    assert (record["turns"], record["llm_requests"], record["tool_calls"]) == (3, 3, 0)
    assert (record["prompt_tokens"], record["completion_tokens"]) == (33, 21)  # 11 + 7 per reply
    assert len(record["scores"]) == 3
    assert (record["game"], record["sampling"], record["max_turns"], record["mcp"], record["servers"]) == (
        "zork1.z3",
        {},
        3,
        False,
        [],
    )
    assert (record["runner"], record["pid"], record["host"], record["model"], record["scripted"]) == (
        "local", os.getpid(), socket.gethostname(), "test-model", False,
    )  # fmt: skip
    assert len({r.connection for r in llm_server.requests}) <= concurrency  # one shared pool
    for seed in (1, 2, 3, 4):
        json_path, events_path = episode_paths(tmp_path, "a", seed)
        assert read_episode(json_path) is not None
        types = [json.loads(line)["event_type"] for line in events_path.read_text().splitlines()]
        assert types.count("turn_complete") == 3
        assert types[-1] == "episode_complete"


async def test_episodes_start_seed_by_seed(
    llm_server: LLMServer, autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    # A stopped run has played the first seeds, not a random few.
    llm_server.script(*[agent_reply("look", delay=1.0) for _ in range(6)])
    started: list[int] = []
    await play_episodes(
        [_spec(seed, llm_server.base_url, turns=1) for seed in (1, 2, 3, 4, 5, 6)],
        tmp_path,
        concurrency=2,
        on_start=lambda spec: started.append(spec.seed),
    )
    assert started == [1, 2, 3, 4, 5, 6]


async def test_a_model_that_fails_is_recorded_and_the_other_episodes_go_on(
    llm_server: LLMServer, autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    llm_server.script(server_error(400, "no such model", delay=0.5), agent_reply("look", delay=1.0))
    done: list[dict[str, Any]] = []
    specs = [_spec(1, llm_server.base_url, turns=1), _spec(2, llm_server.base_url, turns=1)]
    await play_episodes(specs, tmp_path, concurrency=2, on_done=done.append)
    failed, played = sorted(done, key=lambda r: "error" not in r)
    assert "no such model" in failed["error"]
    assert (failed["turns"], failed["scores"]) == (0, [])
    assert "error" not in played
    assert played["turns"] == 1
    assert read_episode(episode_paths(tmp_path, "a", failed["seed"])[0]) == failed


def _with_think(config: Path) -> Settings:
    """Settings with MCP on and ``config`` an mcp_config.json of the in-process think server."""
    config.write_text(json.dumps(INPROCESS_THINKING))
    settings = Settings()
    return attrs.evolve(settings, mcp=attrs.evolve(settings.mcp, enabled=True, config_file=str(config)))


async def test_an_arm_plays_the_configuration_it_had_when_the_run_started(
    llm_server: LLMServer, autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    # Each arm's mcp_config.json is read once: one arm, one configuration, whatever the file becomes.
    config = tmp_path / "tools.json"
    settings = _with_think(config)
    specs = [attrs.evolve(_spec(seed, llm_server.base_url, turns=1), settings=settings) for seed in (1, 2)]
    llm_server.script(agent_reply("look", delay=1.0), agent_reply("look", delay=1.0))
    done: list[dict[str, Any]] = []

    def break_the_file(spec: EpisodeSpec) -> None:
        if spec.seed == 1:  # once the run has started: a user edits the file (a small write)
            config.write_text('{"mcpServers": {"thinking": ')

    await play_episodes(specs, tmp_path, concurrency=1, on_start=break_the_file, on_done=done.append)
    assert [(r["seed"], r.get("error"), r["turns"]) for r in done] == [(1, None, 1), (2, None, 1)]
    for seed in (1, 2):
        events = [json.loads(line) for line in episode_paths(tmp_path, "a", seed)[1].read_text().splitlines()]
        started = [e["server"] for e in events if e["event_type"] == "mcp_server_started"]
        assert sorted(started) == ["thinking", "zork"]


async def test_a_record_says_how_each_tool_was_used(
    llm_server: LLMServer, autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    settings = _with_think(tmp_path / "tools.json")
    think = {"thought": "the mailbox", "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": False}
    llm_server.script(
        tool_call_reply(tool_call("thinking__think", think), tool_call("thinking__think", think)),
        agent_reply("open mailbox"),
        tool_call_reply(tool_call("thinking__think", {"thought": 7}), tool_call("nope")),
        agent_reply("look"),
    )
    done: list[dict[str, Any]] = []
    spec = attrs.evolve(_spec(1, llm_server.base_url, turns=2), settings=settings)
    await play_episodes([spec], tmp_path, concurrency=1, on_done=done.append)
    (record,) = done
    assert (record.get("error"), record["tool_calls"], record["tool_errors"]) == (None, 4, 2)
    assert {
        name: {k: v for k, v in use.items() if k != "seconds"} for name, use in record["tools"].items()
    } == {
        "nope": {"calls": 1, "errors": 1, "timeouts": 0, "skipped": 0},  # a tool the model made up
        "thinking.think": {"calls": 3, "errors": 1, "timeouts": 0, "skipped": 0},  # one with bad arguments
    }
    assert list(record["tools"]) == ["nope", "thinking.think"]


# -- the command -------------------------------------------------------------------------------------


def _eval(tmp_path: Path, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["eval", "--game", str(zork1_path()), "--out", str(tmp_path / "run"), *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_resume_plays_only_what_is_missing_or_broken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    common = ("--no-mcp", "--turns", "2", "--concurrency", "3", "--quiet")
    code, out, _ = _eval(tmp_path, "--episodes", "2", *common, capsys=capsys)
    assert code == 0, out
    run = tmp_path / "run"
    played = episode_records(run)
    first = {key: (run / "episodes" / "no-mcp" / f"seed-{key[1]}.json").read_bytes() for key in played}
    assert sorted(first) == [("no-mcp", 12), ("no-mcp", 13)]
    (run / "episodes" / "no-mcp" / "seed-13.json").write_text('{"arm": "no-mcp", "seed": 13, "sco')
    code, out, _ = _eval(tmp_path, "--episodes", "3", "--resume", *common, capsys=capsys)
    assert code == 0, out
    assert (
        f"2 episode(s) played, 1 resumed; files in {run} (episodes/, summary.json, summary.csv, report.html)"
        in (
            out.splitlines()  # one line, however long the folder's name
        )
    )
    assert (run / "episodes" / "no-mcp" / "seed-12.json").read_bytes() == first[("no-mcp", 12)]
    records = episode_records(run)
    assert sorted(records) == [("no-mcp", 12), ("no-mcp", 13), ("no-mcp", 14)]
    assert all(r["turns"] == 2 and r["scripted"] and r["runner"] == "local" for r in records.values())
    summary = json.loads((run / "summary.json").read_text())
    assert summary["arms"]["no-mcp"]["episodes"] == 3
    assert (run / "report.html").read_text().startswith("<!DOCTYPE html>")


def test_the_command_tunes_the_garbage_collector_for_its_run_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    seen: list[tuple[tuple[int, int, int], bool]] = []
    real_run_eval = zorkmcp.eval.run_eval

    def run_eval(*args: Any, **kwargs: Any) -> Any:
        seen.append((gc.get_threshold(), gc.get_freeze_count() > 0))
        return real_run_eval(*args, **kwargs)

    monkeypatch.setattr(zorkmcp.eval, "run_eval", run_eval)
    before = (gc.get_threshold(), gc.get_freeze_count())
    code, out, _ = _eval(tmp_path, "--episodes", "1", "--turns", "1", "--no-mcp", "--quiet", capsys=capsys)
    assert code == 0, out
    assert seen == [((7000, 10, 10), True)]  # the imports' objects frozen, young ones collected less often
    assert (gc.get_threshold(), gc.get_freeze_count()) == before


def _events_of(run: Path, event_type: str) -> list[dict[str, Any]]:
    events = []
    for path in sorted((run / "episodes").glob("*/seed-*.events.jsonl")):
        events += [e for e in map(json.loads, path.read_text().splitlines()) if e["event_type"] == event_type]
    return events


def _started_servers(run: Path) -> list[dict[str, Any]]:
    return _events_of(run, "mcp_server_started")


def test_the_games_run_in_process_and_one_zygote_forks_every_think_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, _ = _eval(
        tmp_path,
        "--compare-mcp",
        "--episodes",
        "3",
        "--turns",
        "3",
        "--concurrency",
        "2",
        "--quiet",
        capsys=capsys,
    )
    assert code == 0, out
    started = _started_servers(tmp_path / "run")
    games = [e for e in started if e["server"] == "zork"]
    thinks = [e for e in started if e["server"] == "thinking"]
    assert len(games) == 6  # 2 arms × 3 seeds
    assert len(thinks) == 9  # the mcp arm: a fresh think server for each of its 3 × 3 turns
    teardowns = _events_of(tmp_path / "run", "mcp_turn_teardown")
    assert [e["servers"] for e in teardowns] == [["thinking"]] * 9  # each turn started its own: no spares
    assert [(e["pid"], e["zygote_pid"]) for e in games] == [(None, None)] * 6  # no process: in the eval's
    assert [e["tools"] for e in games] == [["play_action", "memory", "get_map", "inventory", "status"]] * 6
    [think_zygote] = {e["zygote_pid"] for e in thinks}
    assert think_zygote is not None
    assert len({e["pid"] for e in thinks}) == 9  # a fresh process each time
    assert not any(is_running(pid, None) for pid in [think_zygote, *(e["pid"] for e in thinks)])


def test_a_per_turn_server_the_zygotes_cannot_fork_is_prewarmed_and_spawned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    args = ["-X", "utf8", "-m", "zorkmcp.servers.thinking"]  # interpreter options: not forkable
    config = {"mcpServers": {"thinking": {"command": "python", "args": args, "lifecycle": "per_turn"}}}
    (tmp_path / "spawned.json").write_text(json.dumps(config))
    (tmp_path / "eval.toml").write_text(
        "[eval]\nepisodes = 2\nmax_turns = 3\n\n"
        '[[arms]]\nname = "spawned"\nmcp = true\nmcp_config = "spawned.json"\n'
    )
    code, out, _ = _eval(tmp_path, str(tmp_path / "eval.toml"), "--quiet", capsys=capsys)
    assert code == 0, out
    started = _started_servers(tmp_path / "run")
    thinks = [e for e in started if e["server"] == "thinking"]
    assert len(thinks) >= 6  # a fresh one each turn (the spare for a 4th turn may not get to start)
    assert {e["zygote_pid"] for e in thinks} == {None}
    teardowns = _events_of(tmp_path / "run", "mcp_turn_teardown")
    assert [e["servers"] for e in teardowns] == [[]] * 6  # each turn took a prewarmed spare
    assert [e["pid"] for e in started if e["server"] == "zork"] == [None, None]  # in-process games


_DEAD_SERVER = {
    "mcpServers": {
        "dead": {"command": sys.executable, "args": ["-c", "raise SystemExit(3)"], "lifecycle": "per_episode"}
    }
}
_PLAIN_AND_BROKEN = (
    '[eval]\nepisodes = 2\nmax_turns = 2\n\n[[arms]]\nname = "plain"\nmcp = false\n\n'
    '[[arms]]\nname = "broken"\nmcp = true\nmcp_config = "broken.json"\n'
)


def test_an_arm_whose_server_cannot_start_fails_its_episodes_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "broken.json").write_text(json.dumps(_DEAD_SERVER))
    (tmp_path / "eval.toml").write_text(_PLAIN_AND_BROKEN)
    code, _, err = _eval(tmp_path, str(tmp_path / "eval.toml"), "--quiet", capsys=capsys)
    assert code == 1
    assert "2 episode(s) failed" in " ".join(err.split())
    assert f"to play them again, run the same command with --retry-failed --out {tmp_path / 'run'}" in (
        " ".join(err.split())
    )
    records = episode_records(tmp_path / "run")
    assert sorted(records) == [("broken", 12), ("broken", 13), ("plain", 12), ("plain", 13)]
    for seed in (12, 13):
        assert "error" not in records["plain", seed]
        assert records["plain", seed]["turns"] == 2
        assert "MCPServerStartupError" in records["broken", seed]["error"]
        assert "dead" in records["broken", seed]["error"]
    run = tmp_path / "run"
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["arms"]["plain"]["episodes"], summary["arms"]["plain"]["failed"]) == (2, 0)
    assert (summary["arms"]["broken"]["episodes"], summary["arms"]["broken"]["failed"]) == (2, 2)
    assert summary["arms"]["broken"]["mean_score"] is None
    with (run / "summary.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert sorted((row["arm"], row["seed"]) for row in rows) == [
        ("broken", "12"), ("broken", "13"), ("plain", "12"), ("plain", "13"),
    ]  # fmt: skip
    page = (run / "report.html").read_text()
    assert "plain" in page
    assert "broken" in page

    # the server is mended: --retry-failed plays the two failed episodes again, and only those
    plain = {seed: episode_paths(run, "plain", seed)[0].read_bytes() for seed in (12, 13)}
    (tmp_path / "broken.json").write_text(json.dumps(INPROCESS_THINKING))
    code, out, err = _eval(tmp_path, str(tmp_path / "eval.toml"), "--quiet", "--retry-failed", capsys=capsys)
    assert (code, err) == (0, "")
    assert "2 episode(s) played, 2 resumed" in " ".join(out.split())
    assert {seed: episode_paths(run, "plain", seed)[0].read_bytes() for seed in (12, 13)} == plain
    records = episode_records(run)
    for seed in (12, 13):
        assert "error" not in records["broken", seed]
        assert records["broken", seed]["turns"] == 2
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["arms"]["broken"]["episodes"], summary["arms"]["broken"]["failed"]) == (2, 0)


def test_resume_refuses_episodes_played_with_other_settings_and_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # An arm whose episodes had other settings would average two configurations into one mean.
    monkeypatch.chdir(tmp_path)
    common = ("--no-mcp", "--episodes", "2", "--concurrency", "2", "--quiet")
    code, out, _ = _eval(tmp_path, "--turns", "2", *common, capsys=capsys)
    assert code == 0, out
    run = tmp_path / "run"
    before = {path: path.read_bytes() for path in sorted(run.rglob("*")) if path.is_file()}
    seed_12 = episode_paths(run, "no-mcp", 12)[0]
    for flags, message in [
        (
            ("--turns", "3"),
            f"{seed_12}: max_turns is 2 but this run's arm no-mcp has 3 (--turns, or max_turns in [eval]) "
            "(and 1 more episode file(s)); resume with the settings the run began with, or pass a new --out",
        ),
        (
            ("--turns", "2", "--model", "other", "--base-url", "http://127.0.0.1:9/v1"),  # a real model
            f'{seed_12}: model is "scripted-walkthrough" but this run\'s arm no-mcp has "other" (--model, or '
            "the arm's model) (and 1 more episode file(s)); resume with the settings the run began with, "
            "or pass a new --out",
        ),
    ]:
        for resume in ("--resume", "--retry-failed"):
            code, _, err = _eval(tmp_path, *flags, resume, *common, capsys=capsys)
            assert code == 2
            assert "".join(err.split()) == "".join(
                f"zorkmcp eval: ConfigError: {message}".split()
            )  # rich wraps
            assert {path: path.read_bytes() for path in sorted(run.rglob("*")) if path.is_file()} == before
    seed_13 = episode_paths(run, "no-mcp", 13)[0]
    for key, value, planned in [("game", "other.z5", '"zork1.z3"'), ("sampling", {"temperature": 0.7}, "{}")]:
        record = json.loads(seed_13.read_text())
        seed_13.write_text(json.dumps({**record, key: value}))
        code, _, err = _eval(tmp_path, "--turns", "2", "--resume", *common, capsys=capsys)
        assert code == 2
        clash = f"{seed_13}: {key} is {json.dumps(value)} but this run's arm no-mcp has {planned}"
        assert "".join(clash.split()) in "".join(err.split())
        seed_13.write_text(json.dumps(record))


def test_resume_refuses_episodes_played_with_other_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # "does a search server help?": an mcp_config.json edited between a run and its resume would
    # put episodes with and without the new server into one arm's mean
    monkeypatch.chdir(tmp_path)
    write_project(tmp_path, mcp_config=INPROCESS_THINKING)
    common = ("--episodes", "2", "--turns", "1", "--quiet")
    code, out, _ = _eval(tmp_path, *common, capsys=capsys)
    assert code == 0, out
    run = tmp_path / "run"
    seed_12 = episode_paths(run, "mcp", 12)[0]
    assert json.loads(seed_12.read_text())["servers"] == ["thinking"]
    before = {path: path.read_bytes() for path in sorted(run.rglob("*")) if path.is_file()}
    thinking = INPROCESS_THINKING["mcpServers"]["thinking"]
    write_project(tmp_path, mcp_config={"mcpServers": {"thinking": thinking, "notes": thinking}})  # one more
    code, _, err = _eval(tmp_path, *common, "--resume", capsys=capsys)
    assert code == 2
    assert "".join(err.split()) == "".join(
        f'zorkmcp eval: ConfigError: {seed_12}: servers is ["thinking"] but this run\'s arm mcp has '
        '["notes", "thinking"] (the servers the arm\'s mcp_config.json enables (or its mcp_config)) (and 1 '
        "more episode file(s)); resume with the settings the run began with, or pass a new --out".split()
    )  # rich wraps
    assert {path: path.read_bytes() for path in sorted(run.rglob("*")) if path.is_file()} == before
    write_project(tmp_path, mcp_config=INPROCESS_THINKING)  # the configuration the run began with
    code, out, _ = _eval(tmp_path, *common, "--resume", capsys=capsys)
    assert code == 0, out


def test_a_resume_on_a_ray_cluster_keeps_episodes_its_workers_played_with_their_own_api_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The driver has no API key, a worker had one: its records name the real model, not the scripted one.
    from zorkmcp._cli_eval import build_plan
    from zorkmcp.cli import build_parser
    from zorkmcp.eval import resumable_episodes

    monkeypatch.chdir(tmp_path)
    flags = ("--no-mcp", "--model", "m", "--episodes", "2", "--turns", "1", "--quiet")
    code, out, _ = _eval(tmp_path, *flags, capsys=capsys)
    assert code == 0, out
    run = tmp_path / "run"
    for seed in (12, 13):
        path = episode_paths(run, "no-mcp", seed)[0]
        path.write_text(json.dumps({**json.loads(path.read_text()), "model": "m", "scripted": False}))
    resume = ("--game", str(zork1_path()), "--out", str(run), "--resume")
    args = build_parser().parse_args(["eval", *flags, *resume])
    plan = build_plan(args, Settings.load(None))
    here = r'seed-12\.json: the episode played the model "m", but this run\'s arm no-mcp would play the '
    with pytest.raises(ConfigError, match=here):
        resumable_episodes(plan)  # here, this machine would play the scripted model
    assert [(r["seed"], r["model"]) for r in resumable_episodes(plan, cluster=True)] == [(12, "m"), (13, "m")]
    path = episode_paths(run, "no-mcp", 13)[0]
    path.write_text(json.dumps({**json.loads(path.read_text()), "model": "other"}))
    other = r'seed-13\.json: model is "other" but this run\'s arm no-mcp has "m"'
    with pytest.raises(ConfigError, match=other):
        resumable_episodes(plan, cluster=True)  # another model is still another model


def test_the_record_of_a_ray_task_that_died_resumes_with_its_run(tmp_path: Path) -> None:
    # It named the model "" when no --model was given, and a resume refused it as another model.
    from zorkmcp.eval import ArmSpec, EpisodeResult, EvalPlan, resumable_episodes, write_episode
    from zorkmcp.eval._ray import _failed

    plan = EvalPlan(
        arms=(ArmSpec(name="a"),), episodes=1, seed=5, max_turns=3, concurrency=1, game_path=zork1_path(),
        out=tmp_path, settings=Settings.load(None),
    )  # fmt: skip
    spec = plan.specs()[0]
    record = _failed(spec, RuntimeError("ray: the worker died\nWorkerCrashedError: SIGKILL"))
    assert (record["model"], record["scripted"], record["error"]) == (
        "scripted-walkthrough", True, "RuntimeError: WorkerCrashedError: SIGKILL",
    )  # fmt: skip
    write_episode(tmp_path, EpisodeResult(record=record, events=[]))
    assert [r["seed"] for r in resumable_episodes(plan)] == [5]
    assert resumable_episodes(plan, retry_failed=True) == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[eval]\nepisodes = 2\nepisodez = 3\n", r"eval has unknown key episodez"),
        ('[[arms]]\nname = "a"\nmcp = "yes"\n', r"arms\[0\]\.mcp must be true or false, got 'yes'"),
        ("[eval]\nconcurrency = 0\n", r"concurrency must be >= 1, got 0"),
        (
            '[[arms]]\nname = "a"\n[[arms]]\nname = "a"\n',
            r"arms\[0\]\.name and arms\[1\]\.name are both 'a'; each arm names a folder of the run",
        ),
        (
            '[[arms]]\nname = "tools"\n[[arms]]\nname = "plain"\n[[arms]]\nname = "Tools"\n',
            r"arms\[0\]\.name 'tools' and arms\[2\]\.name 'Tools' differ only in case, and each names a "
            r"folder of the run",
        ),
        ('[[arms]]\nname = "../x"\n', r"name must be 1-64 letters"),
        ("[eval\n", r"invalid TOML"),
    ],
)
def test_a_bad_eval_file_names_the_key(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "eval.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_eval_file(path)


def test_a_bad_eval_file_exits_2_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "eval.toml").write_text('[[arms]]\nname = "a"\nmodle = "x"\n')
    code, _, err = _eval(tmp_path, str(tmp_path / "eval.toml"), capsys=capsys)
    assert code == 2
    assert err.splitlines() == [  # one line, however long, even when stderr is not a terminal
        f"zorkmcp eval: ConfigError: {tmp_path / 'eval.toml'}: arms[0] has unknown key modle (allowed: name, "
        "model, base_url, mcp, mcp_config, api_key_env, temperature, top_p, top_k, min_p, max_tokens) "
        "(fix the key in the eval file)"
    ]
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("given", ["flag", "file"])
def test_a_run_folder_that_cannot_be_made_stops_the_run_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], given: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("a file, not a folder\n")
    folder = tmp_path / "notes.txt" / "run"
    if given == "flag":
        args, named = ["--out", str(folder)], f"--out {folder}"
    else:
        (tmp_path / "eval.toml").write_text('[eval]\nout = "notes.txt/run"\n')
        args, named = [str(tmp_path / "eval.toml")], f"{tmp_path / 'eval.toml'}: eval.out"
    code = main(["eval", "--game", str(zork1_path()), "--no-mcp", "--turns", "1", *args])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert err.splitlines() == [
        f"zorkmcp eval: ConfigError: {named}: {tmp_path / 'notes.txt'} is not a folder, so the run's folder "
        f"{folder} cannot be made there; pass another --out"
    ]
    expected = ["eval.toml", "notes.txt"] if given == "file" else ["notes.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == expected  # no folder made


def test_a_run_folder_that_holds_another_runs_episodes_is_not_played_over_without_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, _ = _eval(tmp_path, "--no-mcp", "--episodes", "2", "--turns", "1", "--quiet", capsys=capsys)
    assert code == 0, out
    run = tmp_path / "run"
    before = {p: p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()}
    code, out, err = _eval(tmp_path, "--no-mcp", "--episodes", "3", "--turns", "2", "--quiet", capsys=capsys)
    assert code == 2
    assert out == ""
    assert err.splitlines() == [
        f"zorkmcp eval: ConfigError: --out {run}: {run} already holds 2 episode file(s) of a run, such as "
        f"{run / 'episodes' / 'no-mcp' / 'seed-12.json'}; to go on with that run pass --resume, else pass "
        "another --out (nothing was played or replaced)"
    ]
    assert {p: p.read_bytes() for p in sorted(run.rglob("*")) if p.is_file()} == before


_NOT_A_RUNS = {
    "summary.json": b'{"name": "my-app", "arms": 2}\n',
    "summary.csv": b"date,amount\n2026-11-01,12\n",
    "report.html": b'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>report.html</title></head>\n',
}


@pytest.mark.parametrize("name", sorted(_NOT_A_RUNS))
@pytest.mark.parametrize("resume", [False, True])
def test_a_file_of_a_runs_name_that_no_run_wrote_is_not_replaced(
    name: str,
    resume: bool,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # ``--out .`` in a project that has a pytest-html report.html, say: the run would replace it.
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    run.mkdir()
    (run / name).write_bytes(_NOT_A_RUNS[name])
    flags = ("--no-mcp", "--episodes", "1", "--turns", "1", "--quiet", *(["--resume"] if resume else []))
    code, out, err = _eval(tmp_path, *flags, capsys=capsys)
    assert code == 2
    assert out == ""
    assert err.splitlines() == [
        f"zorkmcp eval: ConfigError: --out {run}: {run / name} is not a file zorkmcp wrote, and the run "
        "would replace it (a run writes summary.json, summary.csv, report.html in its folder); move it, "
        "or pass another --out (nothing was played or replaced)"
    ]
    assert [(p.name, p.read_bytes()) for p in run.iterdir()] == [(name, _NOT_A_RUNS[name])]


def test_the_files_of_a_run_whose_episodes_are_gone_are_written_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    flags = ("--no-mcp", "--episodes", "1", "--turns", "1", "--quiet")
    code, out, _ = _eval(tmp_path, *flags, capsys=capsys)
    assert code == 0, out
    run = tmp_path / "run"
    shutil.rmtree(run / "episodes")
    # an episode's page drawn over the run's by an older ``zorkmcp report --episode``: zorkmcp's too
    (run / "report.html").write_text(
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>zorkmcp episode no-mcp-seed-12</title></head>\n"
    )
    code, out, _ = _eval(tmp_path, *flags, "--seed", "40", capsys=capsys)
    assert code == 0, out
    assert sorted(episode_records(run)) == [("no-mcp", 40)]
    assert json.loads((run / "summary.json").read_text())["arms"]["no-mcp"]["episodes"] == 1
    assert (run / "summary.csv").read_text().splitlines()[1].startswith("no-mcp,40,")
    assert "<title>zorkmcp eval run</title>" in (run / "report.html").read_text()


def test_a_summary_the_run_cannot_write_is_one_line_and_resume_writes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "run"
    (run / "summary.json").mkdir(parents=True)  # a folder where the summary goes: renaming onto it fails
    flags = ("--no-mcp", "--episodes", "2", "--turns", "1", "--quiet")
    code, _, err = _eval(tmp_path, *flags, capsys=capsys)
    assert code == 1
    assert err.splitlines() == [
        f"zorkmcp eval: {run / 'summary.json'}: cannot be written (Is a directory); every episode is "
        f"written: mend the folder, then run the same command with --resume --out {run} "
        "to write the summary"
    ]
    assert sorted(episode_records(run)) == [("no-mcp", 12), ("no-mcp", 13)]
    assert sorted(p.name for p in run.iterdir()) == ["episodes", "summary.json"]  # no temporary file
    (run / "summary.json").rmdir()  # mended
    code, out, _ = _eval(tmp_path, *flags, "--resume", capsys=capsys)
    assert code == 0, out
    assert json.loads((run / "summary.json").read_text())["arms"]["no-mcp"]["episodes"] == 2


def _soft_open_files(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))


async def test_more_episodes_at_once_than_the_soft_open_file_limit_allows_play_all_the_same(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    # Many shells start with a soft limit of 1024 open files under a far higher hard one; an episode
    # holds a few (its think server's pipes, the model's connection). Here 48 episodes wait for their
    # model together (it answers none before all 48 asked) under a soft limit of 64.
    k, soft = 48, 64
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard != resource.RLIM_INFINITY and hard < 1024:
        pytest.skip(
            f"the hard limit of open files is {hard}: the run could not raise its soft limit far enough"
        )
    llm_server.default, everyone = rendezvous(k, lambda: None)
    run = tmp_path / "run"
    command = [
        sys.executable, "-m", "zorkmcp.cli", "eval", "--game", str(zork1_path()), "--base-url",
        llm_server.base_url, "--model", "m", "--episodes", str(k), "--concurrency", str(k), "--turns", "1",
        "--out", str(run), "--quiet",
    ]  # fmt: skip
    # A hang guard: a run that cannot hold 48 episodes at once never gets an answer.
    with trio.fail_after(120):
        done = await trio.run_process(
            command, cwd=tmp_path, env=offline_env(), check=False, capture_stdout=True, capture_stderr=True,
            preexec_fn=partial(_soft_open_files, soft),
        )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert everyone.is_set()
    records = episode_records(run)
    assert len(records) == k
    assert [r["error"] for r in records.values() if r.get("error")] == []


def test_a_file_that_cannot_be_written_names_itself_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    from zorkmcp.errors import RunWriteError
    from zorkmcp.eval import EpisodeResult, write_episode

    json_path, events_path = episode_paths(tmp_path, "a", 12)
    events_path.mkdir(parents=True)  # a folder where the events file goes: the rename onto it fails
    record = {"arm": "a", "seed": 12, "score": 0}
    with pytest.raises(RunWriteError) as caught:
        write_episode(tmp_path, EpisodeResult(record=record, events=[{"event_type": "x"}]))
    assert str(caught.value) == f"{events_path}: cannot be written (Is a directory)"
    assert [p.name for p in events_path.parent.iterdir()] == ["seed-12.events.jsonl"]
    assert not json_path.exists()


FEWER_OPEN_FILES = "allow more open files (ulimit -n) or pass a lower --concurrency"


@pytest.mark.parametrize(
    ("code", "reason", "remedy"),
    [
        (errno.ENOSPC, "No space left on device", "make room on its disk"),
        (errno.EDQUOT, "Disk quota exceeded", "make room on its disk"),
        (errno.EMFILE, "Too many open files", FEWER_OPEN_FILES),
        (errno.ENFILE, "Too many open files in system", FEWER_OPEN_FILES),
        (errno.EACCES, "Permission denied", "make the folder writable"),
        (errno.EROFS, "Read-only file system", "make the folder writable"),
        (errno.EISDIR, "Is a directory", "mend the folder"),
        (errno.ENOENT, "No such file or directory", "mend the folder"),
    ],
)
def test_a_file_the_run_cannot_write_says_what_to_do_about_the_reason(
    code: int, reason: str, remedy: str
) -> None:
    from zorkmcp.errors import RunWriteError
    from zorkmcp.eval._runner import writing

    with pytest.raises(RunWriteError) as caught, writing(Path("runs/x/summary.json")):
        raise OSError(code, os.strerror(code))
    assert str(caught.value) == f"runs/x/summary.json: cannot be written ({reason})"
    assert caught.value.remedy == remedy


def test_a_full_disk_says_make_room() -> None:
    from zorkmcp.errors import RunWriteError
    from zorkmcp.eval._runner import writing

    with pytest.raises(RunWriteError) as caught, writing(Path("/dev/full")):
        Path("/dev/full").write_text("an episode\n", encoding="utf-8")  # a real ENOSPC, from the kernel
    assert (str(caught.value), caught.value.remedy) == (
        "/dev/full: cannot be written (No space left on device)",
        "make room on its disk",
    )


def test_a_report_the_run_cannot_write_says_what_to_do_about_the_reason(tmp_path: Path) -> None:
    from report_data import write_run

    from zorkmcp.errors import RunWriteError
    from zorkmcp.eval._runner import write_run_summary

    records = write_run(tmp_path, seeds=2, failed=False)
    try:  # report.html is a disk that is always full: summary.json and summary.csv are written first
        os.mknod(tmp_path / "report.html", 0o20666, os.makedev(1, 7))
    except PermissionError:
        pytest.skip("making a device needs root")
    with pytest.raises(RunWriteError) as caught:
        write_run_summary(tmp_path, records)
    assert (str(caught.value), caught.value.remedy) == (
        f"{tmp_path / 'report.html'}: cannot be written (No space left on device)",
        "make room on its disk",
    )
    assert json.loads((tmp_path / "summary.json").read_text())["arms"]["mcp"]["episodes"] == 2


def test_an_episode_file_the_run_cannot_write_stops_the_run_with_one_line_and_resume_goes_on(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    (run / "episodes").mkdir(parents=True)
    (run / "episodes" / "mcp").write_text("a file where the arm's folder goes\n")
    command = [
        sys.executable, "-m", "zorkmcp.cli", "eval", "--game", str(zork1_path()), "--episodes", "3",
        "--concurrency", "2", "--turns", "3", "--out", str(run), "--quiet",
    ]  # fmt: skip
    proc = subprocess.Popen(
        command, cwd=tmp_path, env=offline_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    seen: dict[int, tuple[int | None, str]] = {}
    try:
        while proc.poll() is None:  # every process of the run (its zygote, its think servers), as they come
            seen.update(descendants(proc.pid))
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.02)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, err
    assert err.splitlines() == [  # one line, however long, and no traceback
        f"zorkmcp eval: stopped, {run / 'episodes' / 'mcp'}: cannot be written (File exists); the files "
        f"written before are kept; mend the folder, then run the same command with --resume "
        f"--out {run}"
    ]
    assert "No episode has finished: nothing to summarize." in out
    assert json.loads((run / "summary.json").read_text())["arms"] == {}
    assert seen, "the run started no process: the test saw nothing of it"
    assert not [pid for pid, (start, _) in seen.items() if is_running(pid, start)]
    assert sorted(p.name for p in run.iterdir()) == ["episodes", "summary.csv", "summary.json"]

    (run / "episodes" / "mcp").unlink()  # mended
    done = subprocess.run(
        [*command, "--resume"], cwd=tmp_path, env=offline_env(), capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert sorted(episode_records(run)) == [("mcp", 12), ("mcp", 13), ("mcp", 14)]


# -- a model endpoint that cannot be reached stops the run before it starts ---------------------------


async def test_an_endpoint_that_refuses_connections_stops_the_run_naming_it_and_its_arms(
    llm_server: LLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before, every episode retried its connection six times (~31 s) and the run ended with all failed.
    monkeypatch.chdir(tmp_path)
    llm_server.default = agent_reply("look")
    with socket.socket() as closed, socket.socket() as also_closed:  # bound, not listening: refused
        closed.bind(("127.0.0.1", 0))
        also_closed.bind(("127.0.0.1", 0))
        wrong = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
        other = f"http://127.0.0.1:{also_closed.getsockname()[1]}/v1"
        (tmp_path / "eval.toml").write_text(
            "".join(
                f'[[arms]]\nname = "{name}"\nmodel = "m"\nmcp = false\nbase_url = "{url}"\n'
                for name, url in [("a", wrong), ("good", llm_server.base_url), ("b", wrong), ("c", other)]
            )
        )
        code, out, err = await trio.to_thread.run_sync(
            partial(_eval, tmp_path, str(tmp_path / "eval.toml"), "--episodes", "2", "--quiet", capsys=capsys)
        )
    assert code == 2, out
    line = " ".join(err.split())  # one line, which rich wraps
    assert line.startswith(
        f"zorkmcp eval: ConfigError: the model endpoint {wrong} of arm(s) a, b cannot be reached: "
        f"cannot connect to {wrong} (connection refused, or the server is not running) "
    )
    assert line.endswith(
        " (and 1 more endpoint(s)); start it, or pass the right --base-url (or base_url in [[arms]], "
        "agent_base_url in [tool.zorkgpt.llm], or OPENAI_BASE_URL)"
    )
    assert [(r.method, r.path) for r in llm_server.requests] == [("GET", "/v1/models")]  # probed, not played
    assert not (tmp_path / "run").exists()


async def test_a_peer_that_does_not_speak_http_stops_the_run(
    nursery: trio.Nursery, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # an SSH server's port, say: it answers, not in HTTP, and hangs up
    async def ssh(stream: trio.SocketStream) -> None:
        async with stream:
            await stream.receive_some()
            await stream.send_all(b"SSH-2.0-OpenSSH_9.2\r\nProtocol mismatch.\n")

    monkeypatch.chdir(tmp_path)
    listeners = await nursery.start(partial(trio.serve_tcp, ssh, 0, host="127.0.0.1"))
    url = f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}/v1"
    code, _, err = await trio.to_thread.run_sync(
        partial(_eval, tmp_path, "--no-mcp", "--model", "m", "--base-url", url, "--quiet", capsys=capsys)
    )
    assert code == 2
    assert f"{url} of arm(s) no-mcp cannot be reached (RemoteProtocolError: " in " ".join(err.split())
    assert not (tmp_path / "run").exists()


NEEDS_RAY = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None,
    reason="Ray is not installed (pip install 'zorkmcp[ray]'): --ray says so before it looks at the address",
)


@NEEDS_RAY
@pytest.mark.parametrize(
    ("flag", "ray_address", "named"),
    [
        ("{at}", None, "--ray {at}"),
        ("ray://{at}", None, "--ray ray://{at}"),
        ("auto", "{at}", "--ray auto (RAY_ADDRESS={at})"),
    ],
)
def test_a_ray_cluster_address_where_nothing_answers_stops_the_run_at_once(
    flag: str,
    ray_address: str | None,
    named: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Ray itself retried such an address for minutes, three warnings a minute. Ray need not run here.
    monkeypatch.chdir(tmp_path)
    with socket.socket() as closed:  # bound, not listening: refused
        closed.bind(("127.0.0.1", 0))
        at = f"127.0.0.1:{closed.getsockname()[1]}"
        if ray_address is not None:
            monkeypatch.setenv("RAY_ADDRESS", ray_address.format(at=at))
        code, _, err = _eval(tmp_path, "--no-mcp", "--ray", flag.format(at=at), "--quiet", capsys=capsys)
    assert code == 2
    assert err.splitlines() == [
        f"zorkmcp eval: ConfigError: {named.format(at=at)}: no Ray cluster answers at {at} "
        f"(ConnectionRefusedError: [Errno 111] Connection refused); {RAY_REMEDY}"
    ]
    assert not (tmp_path / "run").exists()


RAY_REMEDY = (
    "check the address (the head's GCS port, 6379 unless ray start --port said otherwise, or "
    "ray://HOST:10001 for Ray Client; the dashboard's port, 8265, is for ray job submit), or start the "
    "cluster (ray start --head)"
)


async def _http1(stream: trio.SocketStream) -> None:  # a web server's port, or the dashboard's
    async with stream:
        await stream.receive_some()
        await stream.send_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")


async def _ssh(stream: trio.SocketStream) -> None:  # speaks first, then hangs up on what it gets
    async with stream:
        await stream.send_all(b"SSH-2.0-OpenSSH_9.2\r\n")
        await stream.receive_some()


async def _hangs_up(stream: trio.SocketStream) -> None:
    await stream.aclose()


async def _silent(stream: trio.SocketStream) -> None:  # accepts, then says nothing
    async with stream:
        await trio.sleep_forever()


@NEEDS_RAY
@pytest.mark.parametrize(
    ("peer", "scheme", "why"),
    [
        (_http1, "", 'something else answers there: "HTTP/1.1 400 Bad Request"; Ray speaks gRPC'),
        (_http1, "ray://", 'something else answers there: "HTTP/1.1 400 Bad Request"; Ray speaks gRPC'),
        (_ssh, "", 'something else answers there: "SSH-2.0-OpenSSH_9.2"; Ray speaks gRPC'),
        (
            _hangs_up,
            "",
            "something accepts connections there and closed this one without an answer; Ray speaks gRPC",
        ),
    ],
)
async def test_a_ray_cluster_address_where_something_else_answers_stops_the_run_at_once(
    peer: Any,
    scheme: str,
    why: str,
    nursery: trio.Nursery,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Ray itself waited past 40 s at an HTTP server's port (ray:// gave up after 31 s). Ray need not run.
    monkeypatch.chdir(tmp_path)
    listeners = await nursery.start(partial(trio.serve_tcp, peer, 0, host="127.0.0.1"))
    at = f"127.0.0.1:{listeners[0].socket.getsockname()[1]}"
    code, _, err = await trio.to_thread.run_sync(
        partial(_eval, tmp_path, "--no-mcp", "--ray", f"{scheme}{at}", "--quiet", capsys=capsys)
    )
    assert code == 2
    assert err.splitlines() == [
        f"zorkmcp eval: ConfigError: --ray {scheme}{at}: no Ray cluster answers at {at} ({why}); {RAY_REMEDY}"
    ]
    assert not (tmp_path / "run").exists()


async def test_a_ray_address_that_accepts_and_says_nothing_is_no_cluster_after_the_wait(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    from zorkmcp.eval._ray import ADDRESS_SECONDS, not_ray

    listeners = await nursery.start(partial(trio.serve_tcp, _silent, 0, host="127.0.0.1"))
    port = listeners[0].socket.getsockname()[1]
    start = trio.current_time()
    assert await not_ray("127.0.0.1", port) == (
        "something accepts connections there and said nothing within 10 s; Ray answers at once"
    )
    assert trio.current_time() - start == pytest.approx(ADDRESS_SECONDS)
    # with RAY_USE_TLS the preface would need TLS first: the connection is all that is checked
    start = trio.current_time()
    assert await not_ray("127.0.0.1", port, tls=True) is None
    assert trio.current_time() - start == 0


async def test_an_endpoint_that_answers_any_status_lets_the_run_play_against_it(
    llm_server: LLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Not every server lists its models: a 404 to the probe is still an answer.
    monkeypatch.chdir(tmp_path)
    llm_server.script(server_error(404, "no such route"), *[agent_reply("look") for _ in range(2)])
    flags = ("--no-mcp", "--model", "m", "--base-url", llm_server.base_url, "--episodes", "2", "--turns", "1")
    code, out, _ = await trio.to_thread.run_sync(partial(_eval, tmp_path, *flags, "--quiet", capsys=capsys))
    assert code == 0, out
    assert [(r.method, r.path) for r in llm_server.requests] == [
        ("GET", "/v1/models"), ("POST", "/v1/chat/completions"), ("POST", "/v1/chat/completions"),
    ]  # fmt: skip
    records = episode_records(tmp_path / "run")
    assert [(r["model"], r["scripted"], r["turns"]) for r in records.values()] == [("m", False, 1)] * 2
    assert f"\n  no-mcp  m at {llm_server.base_url}; no tools\n" in out
    assert "scripted" not in out


def test_the_run_says_what_each_arm_plays_and_when_it_is_the_offline_scripted_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A run that forgot its API key would otherwise report the walkthrough's scores as the model's.
    monkeypatch.chdir(tmp_path)
    flags = ("--compare-mcp", "--episodes", "1", "--turns", "1", "--quiet")
    code, out, _ = _eval(tmp_path, *flags, capsys=capsys)
    assert code == 0, out
    lines = out.splitlines()
    at = lines.index("settings: embedded defaults (no [tool.zorkgpt] in ./pyproject.toml)")
    assert lines[at + 1 : at + 3] == [
        "  mcp     offline scripted model; tools: thinking (default_mcp_config.json)",
        "  no-mcp  offline scripted model; no tools",
    ]
    notice = " ".join(" ".join(lines[at + 3 :]).split("Eval summary")[0].split())
    assert notice == (
        "No API key for https://openrouter.ai/api/v1: mcp, no-mcp play the offline scripted model, which "
        "replays Jericho's walkthrough of the game (no LLM is called). To evaluate a real model, set "
        "OPENROUTER_API_KEY (or api_key_env in [[arms]]), or pass --base-url for a local server such as "
        "http://127.0.0.1:11434/v1 (Ollama)."
    )


def test_the_arm_lines_name_the_servers_an_arm_starts(tmp_path: Path) -> None:
    from zorkmcp._cli_eval import arm_lines, build_plan
    from zorkmcp.cli import build_parser

    config = {
        "mcpServers": {
            **PER_TURN_THINKING["mcpServers"],
            "search": {"command": "search-server", "disabled": True},  # not started, not offered
            "notes": {**INPROCESS_THINKING["mcpServers"]["thinking"]},
        }
    }
    pyproject = write_project(tmp_path, mcp_config=config)
    args = build_parser().parse_args(["eval", "--compare-mcp", "--pyproject", str(pyproject), "--out", "x"])
    plan = build_plan(args, Settings.load(pyproject))
    assert [line.split("; ", 1)[1] for line in arm_lines(plan)[:2]] == [
        "tools: thinking, notes (mcp_config.json)",
        "no tools",
    ]
    # no API key here: on a Ray cluster the workers' own environment decides
    assert not arm_lines(plan)[2].endswith("environment.")
    assert arm_lines(plan, cluster=True)[2].endswith(
        "(Ollama). On the Ray cluster each worker decides from its own environment."
    )


def test_plan_from_file_and_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from zorkmcp._cli_eval import build_plan
    from zorkmcp.cli import build_parser

    monkeypatch.chdir(tmp_path)
    (tmp_path / "eval.toml").write_text(
        '[eval]\nepisodes = 5\nseed = 3\nmax_turns = 7\nconcurrency = 2\nout = "runs/x"\n\n'
        '[[arms]]\nname = "base"\ntemperature = 0.5\nmcp_config = "conf/m.json"\n'
    )
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "m.json").write_text(json.dumps(PER_TURN_THINKING))
    args = build_parser().parse_args(
        ["eval", str(tmp_path / "eval.toml"), "--episodes", "4", "--compare-mcp", "--game", str(zork1_path())]
    )
    plan = build_plan(args, Settings())
    assert [a.name for a in plan.arms] == ["mcp", "no-mcp"]
    assert [a.mcp for a in plan.arms] == [True, False]
    assert (plan.episodes, plan.seed, plan.max_turns, plan.concurrency) == (4, 3, 7, 2)
    assert plan.out == tmp_path / "runs" / "x"
    specs = plan.specs()
    assert [(s.arm, s.seed) for s in specs[:3]] == [("mcp", 3), ("no-mcp", 3), ("mcp", 4)]
    assert specs[0].settings.agent_sampling.temperature == 0.5
    assert specs[0].settings.mcp_config_path() == tmp_path / "conf" / "m.json"
    assert (specs[0].settings.mcp.enabled, specs[1].settings.mcp.enabled) == (True, False)


# -- live progress ------------------------------------------------------------------------------------


def _record_of(arm: str, seed: int, *, score: int, turns: int) -> dict[str, Any]:
    return {"arm": arm, "seed": seed, "score": score, "turns": turns, "moves": turns, "victory": False}


def test_live_progress_counts_turns_as_they_are_played_and_not_those_of_resumed_episodes(
    tmp_path: Path,
) -> None:
    from io import StringIO

    from rich.console import Console

    from zorkmcp._cli_eval import LiveProgress
    from zorkmcp.eval import ArmSpec, EvalPlan

    plan = EvalPlan(
        arms=(ArmSpec(name="mcp"), ArmSpec(name="no-mcp")),
        episodes=3,
        seed=12,
        max_turns=50,
        concurrency=2,
        game_path=zork1_path(),
        out=tmp_path / "run",
        settings=Settings(),
    )
    specs = {(spec.arm, spec.seed): spec for spec in plan.specs()}
    progress = LiveProgress(Console(file=StringIO()), plan, quiet=True)
    progress.resumed([_record_of("mcp", 12, score=10, turns=50)])
    progress.started(specs["mcp", 13])
    progress.started(specs["mcp", 14])
    progress.turned(specs["mcp", 13])
    progress.turned(specs["mcp", 13])
    progress.turned(specs["mcp", 14])
    mcp = progress.arms["mcp"]
    assert (mcp.done, mcp.running, mcp.score, mcp.turns) == (1, 2, 10, 3)
    progress.finished(_record_of("mcp", 13, score=4, turns=2))
    assert (mcp.done, mcp.running, mcp.score, mcp.turns) == (2, 1, 14, 3)
    # an episode whose turns were not seen one by one (on Ray) counts them all when it ends
    progress.started(specs["no-mcp", 12])
    progress.finished(_record_of("no-mcp", 12, score=0, turns=7))
    no_mcp = progress.arms["no-mcp"]
    assert (no_mcp.done, no_mcp.running, no_mcp.score, no_mcp.turns) == (1, 0, 0, 7)
    # a failed episode is done, counted as failed, and left out of the mean (as in the summary)
    progress.started(specs["no-mcp", 13])
    progress.finished({**_record_of("no-mcp", 13, score=9, turns=1), "error": "LLMHTTPError: 429"})
    progress.resumed([{**_record_of("no-mcp", 14, score=9, turns=0), "error": "MCPServerStartupError: x"}])
    assert (no_mcp.done, no_mcp.failed, no_mcp.score, no_mcp.turns) == (3, 2, 0, 8)


def test_arm_stats_show_each_figure_once_it_means_something() -> None:
    from zorkmcp._cli_eval import ArmTally, arm_stats

    assert arm_stats(ArmTally(total=20), 0.0) == ""
    assert arm_stats(ArmTally(total=20, running=16), 0.5) == "16 running"
    assert arm_stats(ArmTally(total=20, running=16, turns=30), 2.0) == "16 running  15.0 turns/s"
    assert arm_stats(ArmTally(total=20, done=4, score=50, turns=45), 3.0) == "mean score 12.5  15.0 turns/s"
    assert arm_stats(ArmTally(total=20, running=2, done=6, failed=2, score=50), 3.0) == (
        "2 running  [red]2 failed[/]  mean score 12.5"
    )
    assert arm_stats(ArmTally(total=20, done=3, failed=3), 3.0) == "[red]3 failed[/]"
    assert arm_stats(ArmTally(total=20, stopped=2, done=1, score=9, turns=6), 3.0) == (
        "2 stopped  mean score 9.0  2.0 turns/s"
    )


def test_the_bars_of_a_stopped_run_say_stopped_not_running(tmp_path: Path) -> None:
    from io import StringIO

    from rich.console import Console

    from zorkmcp._cli_eval import LiveProgress
    from zorkmcp.eval import ArmSpec, EvalPlan

    plan = EvalPlan(
        arms=(ArmSpec(name="mcp"),), episodes=3, seed=12, max_turns=5, concurrency=2,
        game_path=zork1_path(), out=tmp_path / "run", settings=Settings(),
    )  # fmt: skip
    out = StringIO()
    terminal = Console(file=out, force_terminal=True, width=100, color_system=None)
    with LiveProgress(terminal, plan, quiet=False) as progress:
        for spec in plan.specs()[:2]:
            progress.started(spec)
    # Ctrl-C came with two episodes in flight: run_eval returned, the bars end
    assert (progress.arms["mcp"].running, progress.arms["mcp"].stopped) == (0, 2)
    last = out.getvalue().rsplit("\r", 1)[-1]
    assert "2 stopped" in last
    assert "running" not in last


@pytest.mark.parametrize(
    ("seeds", "said"),
    [
        (
            [12, 13],
            "zorkmcp eval: interrupted after every episode was played; the summary covers them all",
        ),
        (
            [12],
            "zorkmcp eval: interrupted; the summary covers the finished episodes; to play the rest, run "
            "the same command with --resume --out runs/x",
        ),
    ],
)
def test_a_run_stopped_as_its_last_episode_ended_does_not_say_to_play_the_rest(
    seeds: list[int], said: str
) -> None:
    # Before: a Ctrl-C right after the last episode said "to play the rest, run … --resume", with
    # nothing left to play
    from io import StringIO

    from rich.console import Console

    from zorkmcp._cli_eval import _tell_outcome
    from zorkmcp.eval import EvalOutcome

    episodes = [{"arm": "a", "seed": seed, "score": 0, "turns": 1, "moves": 1} for seed in seeds]
    plan = {"arms": ["a"], "first_seed": 12, "last_seed": 13}
    outcome = EvalOutcome(
        run_dir=Path("runs/x"), episodes=episodes, played=len(seeds), resumed=0, interrupted=True,
        summary={"arms": {}, "comparisons": [], "plan": plan},
    )  # fmt: skip
    err = StringIO()
    assert _tell_outcome(Console(file=StringIO()), Console(file=err, width=300), outcome) == 130
    assert err.getvalue() == said + "\n"


def test_a_long_arm_name_in_a_narrow_terminal_puts_its_figures_under_it(tmp_path: Path) -> None:
    # Before, in 40 columns the name took 30 cells and left 5 for the figures: "2", "st…", "me…",
    # "sc…" down a column of cut words, 6 to 9 lines an arm
    import re
    from io import StringIO

    from rich.console import Console

    from zorkmcp._cli_eval import LiveProgress
    from zorkmcp.eval import ArmSpec, EvalPlan

    plan = EvalPlan(
        arms=(ArmSpec(name="mcp"), ArmSpec(name="a2-with-a-rather-long-arm-name")), episodes=12, seed=12,
        max_turns=5, concurrency=2, game_path=zork1_path(), out=tmp_path / "run", settings=Settings(),
    )  # fmt: skip
    out = StringIO()
    terminal = Console(file=out, force_terminal=True, width=40, color_system=None)
    with LiveProgress(terminal, plan, quiet=False, clock=lambda: 0.0) as progress:
        for spec in plan.specs()[:4]:
            progress.started(spec)
        for tally in progress.arms.values():
            tally.done, tally.score = 3, 30
            progress._show(tally)
    frame = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue()).rsplit("\r", 1)[-1]
    assert [line.rstrip() for line in frame.splitlines()[-4:]] == [
        "mcp  3/12",
        "  2 stopped  mean score 10.0",
        "a2-with-a-rather-long-arm-name  3/12",
        "  2 stopped  mean score 10.0",
    ]


def test_the_comparison_line_gives_the_paired_interval_when_the_arms_share_seeds() -> None:
    from zorkmcp._cli_eval import comparison_line
    from zorkmcp.eval import summarize

    def episode(arm: str, seed: int, score: int) -> dict[str, Any]:
        return {"arm": arm, "seed": seed, "score": score, "turns": 10, "moves": 10}

    # the seed moves both arms. Welch: se 8.1445, df 5.97, t 2.4497; paired: differences 2, 1, 3, 2
    scores = {"mcp": [40, 31, 59, 48], "no-mcp": [38, 30, 56, 46]}
    summary = summarize(
        [episode(arm, 12 + i, s) for arm, arm_scores in scores.items() for i, s in enumerate(arm_scores)]
    )
    assert comparison_line(summary["comparisons"][0]) == (
        "mcp − no-mcp: mean score difference 2.00 (95% CI -17.95 … 21.95); "
        "seed by seed (4 pairs): 2.00 (95% CI 0.70 … 3.30) → mcp scores higher (paired 95% interval above 0)"
    )
    # Welch: variances 8 and 8, se sqrt(8), df 2, t(0.975, 2) = 4.302653; one seed (2) in both arms
    one_pair = summarize([episode("a", 1, 5), episode("a", 2, 9), episode("b", 2, 2), episode("b", 3, 6)])
    assert comparison_line(one_pair["comparisons"][0]) == (
        "a − b: mean score difference 3.00 (95% CI -9.17 … 15.17); seed by seed (1 pair): 7.00 "
        "(95% CI – … –) → no difference shown (Welch's 95% interval holds 0)"
    )
    apart = summarize([episode("a", 1, 5), episode("a", 2, 9), episode("b", 3, 2), episode("b", 4, 6)])
    assert comparison_line(apart["comparisons"][0]) == (
        "a − b: mean score difference 3.00 (95% CI -9.17 … 15.17) → no difference shown "
        "(Welch's 95% interval holds 0)"
    )


def test_live_progress_in_an_80x24_terminal(tmp_path: Path) -> None:
    zorkmcp = Path(sys.executable).with_name("zorkmcp")
    command = (
        f"{zorkmcp} eval --compare-mcp --episodes 3 --concurrency 2 --turns 4 --game {zork1_path()} "
        f"--out {tmp_path / 'run'}"
    )
    lines = run_in_tmux(tmp_path, command, 80, 24)
    assert max(len(line) for line in lines) <= 80
    bars = [line for line in lines if line.startswith(("mcp ", "no-mcp ")) and "━" in line]
    assert len(bars) == 2, lines  # one line per arm, drawn in place
    for bar in bars:
        assert re.search(r" 3/3 mean score \d+\.\d  \d+\.\d turns/s ", bar), bar
        assert "running" not in bar
    assert any("Eval summary" in line for line in lines)
    # the closing table: every figure of an arm on its one line
    words = [" ".join(line.split()) for line in lines]
    assert "arm episodes failed score ± se win rate moves tools/turn tokens in/out" in words, lines
    rows = [
        w
        for w in words
        if re.fullmatch(r"(mcp|no-mcp) 3 0 \d+\.\d\d ± \d+\.\d\d 0% 4\.0 0\.\d\d [\d,]+ / [\d,]+", w)
    ]
    assert len(rows) == 2, lines
    assert any(
        "(episodes/, summary.json, summary.csv, report.html)" in line for line in " ".join(lines).split("\n")
    )


def test_live_progress_shows_each_failure_as_it_happens_in_an_80x24_terminal(tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text(json.dumps(_DEAD_SERVER))
    (tmp_path / "eval.toml").write_text(_PLAIN_AND_BROKEN)
    zorkmcp = Path(sys.executable).with_name("zorkmcp")
    command = f"{zorkmcp} eval eval.toml --game {zork1_path()} --out {tmp_path / 'run'}"
    lines = run_in_tmux(tmp_path, command, 80, 24)
    assert max(len(line) for line in lines) <= 80
    screen = " ".join(" ".join(lines).split())
    for seed in (12, 13):  # printed above the bars when the episode ends
        assert f"arm=broken seed={seed} score=0 turns=0 moves=0 tool_calls=0 deaths=0" in screen
    assert screen.count('error="MCPServerStartupError: ') == 2
    bars = {line.split()[0]: line for line in lines if line.startswith(("plain ", "broken ")) and "━" in line}
    assert re.search(r" 2/2 mean score \d+\.\d  \d+\.\d turns/s ", bars["plain"]), bars
    assert " 2/2 2 failed " in bars["broken"], bars
    assert "mean score" not in bars["broken"]
    assert "broken 2 2 – ± – – – – 0 / 0" in [" ".join(line.split()) for line in lines]  # on one line


# -- Ctrl-C ------------------------------------------------------------------------------------------


def test_a_run_stopped_before_any_episode_finished_names_only_the_files_it_wrote(tmp_path: Path) -> None:
    from io import StringIO

    from rich.console import Console

    from zorkmcp._cli_eval import print_outcome
    from zorkmcp.eval import EvalOutcome
    from zorkmcp.eval._runner import write_run_summary

    run = tmp_path / "run"
    run.mkdir()
    summary = write_run_summary(run, [])  # what run_eval writes when Ctrl-C came before any episode ended
    out = StringIO()
    outcome = EvalOutcome(run_dir=run, episodes=[], played=0, resumed=0, interrupted=True, summary=summary)
    print_outcome(Console(file=out, width=300, color_system=None), outcome)
    assert out.getvalue().splitlines() == [
        "No episode has finished: nothing to summarize.",
        f"0 episode(s) played, 0 resumed; files in {run} (summary.json, summary.csv)",
    ]


@pytest.mark.parametrize(
    ("stop", "status"),
    [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)],
    ids=["ctrl-c", "sigterm", "sighup"],
)
def test_ctrl_c_sigterm_or_sighup_stops_the_episodes_in_flight_keeps_finished_files_and_exits_130_143_129(
    stop: signal.Signals, status: int, tmp_path: Path
) -> None:
    # SIGTERM (a scheduler's stop, timeout, kill) and SIGHUP (a terminal that closed) take the same
    # path; only the exit status differs
    game = zork1_path()
    run = tmp_path / "run"
    command = [
        sys.executable, "-m", "zorkmcp.cli", "eval", "--game", str(game), "--no-mcp", "--episodes", "6",
        "--concurrency", "2", "--turns", "25", "--out", str(run),
    ]  # fmt: skip
    proc = subprocess.Popen(
        command,
        cwd=tmp_path,
        env=offline_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=default_sigint,
    )
    try:
        assert proc.stdout is not None
        for _ in range(20):  # the banner, then one line per finished episode
            line = proc.stdout.readline()
            if line.startswith("arm=") or not line:
                break
        assert line.startswith("arm="), line
        children = descendants(proc.pid)
        proc.send_signal(stop)
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == status, err
    assert " ".join(err.split()) == (
        "zorkmcp eval: interrupted; the summary covers the finished episodes; to play the rest, run the "
        f"same command with --resume --out {run}"
    )
    records = episode_records(run)
    assert 1 <= len(records) < 6
    for path in (run / "episodes" / "no-mcp").iterdir():
        assert not path.name.endswith(".tmp")
    summary = json.loads((run / "summary.json").read_text())
    assert sum(arm["episodes"] for arm in summary["arms"].values()) == len(records)
    assert not [pid for pid, (start, _) in children.items() if is_running(pid, start)]


def test_a_reader_that_goes_away_stops_the_run_as_ctrl_c_does(tmp_path: Path) -> None:
    # zorkmcp eval ... | head: once head has its lines, the run's next line fails (EPIPE). It stops
    # as on Ctrl-C, with its summary and one line; before, a traceback through the task group, no summary.
    run = tmp_path / "run"
    command = [
        sys.executable, "-m", "zorkmcp.cli", "eval", "--game", str(zork1_path()), "--no-mcp",
        "--episodes", "8", "--concurrency", "2", "--turns", "25", "--out", str(run),
    ]  # fmt: skip
    proc = subprocess.Popen(
        command, cwd=tmp_path, env=offline_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        preexec_fn=default_sigint,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # the banner, then one line per finished episode
            if line.startswith(b"arm="):
                break
        children = descendants(proc.pid)
        proc.stdout.close()  # the reader goes away, as head does
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 141, err  # 128 + SIGPIPE
    assert " ".join(err.decode().split()) == (
        "zorkmcp eval: interrupted; the summary covers the finished episodes; to play the rest, run the "
        f"same command with --resume --out {run}"
    )
    records = episode_records(run)
    assert 1 <= len(records) < 8
    summary = json.loads((run / "summary.json").read_text())
    assert sum(arm["episodes"] for arm in summary["arms"].values()) == len(records)
    assert not [pid for pid, (start, _) in children.items() if is_running(pid, start)]


async def test_a_terminal_that_hangs_up_stops_the_run_as_ctrl_c_does(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    # An ssh connection that drops, a terminal window closed: the shell passes SIGHUP on to the run,
    # whose terminal (its live view, its stderr) is gone. The run stops as on Ctrl-C and writes its
    # summary; before, it ended on the spot with none.
    if shutil.which("tmux") is None or shutil.which("bash") is None:
        pytest.skip("tmux and bash are needed for a real terminal that hangs up")
    run, status = tmp_path / "run", tmp_path / "status"
    llm_server.default, asked = rendezvous(2, lambda: None, release=False)  # a model that never answers
    command = [
        sys.executable, "-c", _KEEPS_THE_STATUS, str(status),
        sys.executable, "-m", "zorkmcp.cli", "eval", "--game", str(zork1_path()), "--base-url",
        llm_server.base_url, "--model", "m", "--episodes", "3", "--concurrency", "2", "--turns", "2",
        "--out", str(run),
    ]  # fmt: skip
    tmux = ["tmux", "-L", f"zorkmcp-hup-{os.getpid()}-{id(run)}"]
    env = offline_env(TERM="xterm-256color")
    env.pop("TMUX", None)
    subprocess.run(
        [*tmux, "new-session", "-d", "-x", "120", "-y", "30", "bash --norc --noprofile -i"],
        env=env,
        check=True,
    )
    try:
        shell = int(subprocess.run([*tmux, "display", "-p", "#{pane_pid}"], env=env, check=True,
                                   capture_output=True, text=True).stdout)  # fmt: skip
        subprocess.run([*tmux, "send-keys", shlex.join(command), "Enter"], env=env, check=True)
        with trio.fail_after(120):
            await asked.wait()  # both episodes wait for the model, the live view on the terminal
        runs = descendants(shell)
        assert any("zorkmcp.cli eval" in cmdline for _, cmdline in runs.values())
        subprocess.run([*tmux, "kill-server"], env=env, check=True)  # the terminal hangs up
        with trio.fail_after(60):
            await all_exit(runs)  # the run and every server it started
    finally:
        subprocess.run([*tmux, "kill-server"], env=env, check=False, capture_output=True)
    assert status.read_text() == "129"  # the Ctrl-C path to its end: no error writing to the dead terminal
    assert json.loads((run / "summary.json").read_text())["arms"] == {}  # written: nothing finished
    assert (run / "summary.csv").is_file()
    assert not list(run.glob("episodes/*/*.json"))


_KEEPS_THE_STATUS = """
import signal, subprocess, sys
signal.signal(signal.SIGHUP, signal.SIG_IGN)  # the shell's SIGHUP reaches the whole job: this one stays
reset = lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL)
code = subprocess.call(sys.argv[2:], preexec_fn=reset)
open(sys.argv[1], "w").write(str(code))
"""
"""``python -c _KEEPS_THE_STATUS FILE COMMAND...``: COMMAND in the same job; its exit status into FILE."""
