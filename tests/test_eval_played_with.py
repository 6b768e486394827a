"""What an episode record says it was played with (the model's endpoint, the story file's md5, the
arm's servers and agent settings), and a ``--resume`` that refuses to put episodes played otherwise
into one arm. Real Zork, real MCP server processes, the offline scripted model or the loopback one."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
from functools import partial
from typing import TYPE_CHECKING, Any

import pytest
import trio
from eval_support import episode_records
from llm_server import agent_reply, server_error
from play_support import zork1_path

from zorkmcp._cli_eval import build_plan
from zorkmcp.cli import build_parser, main
from zorkmcp.config import Settings
from zorkmcp.errors import ConfigError
from zorkmcp.eval import episode_paths, resumable_episodes

if TYPE_CHECKING:
    from pathlib import Path

    from llm_server import LLMServer

ZORK1_MD5 = "1d4606016ea58ee038da53d994392323"
SECRET = "sk-never-in-clear"
THINKING = {"command": "python3", "args": ["-m", "zorkmcp.servers.thinking"], "env": {"THINK_TOKEN": SECRET}}
"""The repository's think server, per turn, with a token in its environment (the server ignores it)."""


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)


def _project(folder: Path, server: dict[str, Any], mcp: str = "") -> Path:
    """``pyproject.toml`` (MCP on, plus ``mcp``: more lines of ``[tool.zorkgpt.mcp]``) and an
    ``mcp_config.json`` with one server, ``thinking``; the config's path."""
    (folder / "pyproject.toml").write_text(
        f'[tool.zorkgpt.mcp]\nenabled = true\nconfig_file = "mcp_config.json"\n{mcp}', encoding="utf-8"
    )
    config = folder / "mcp_config.json"
    config.write_text(json.dumps({"mcpServers": {"thinking": server}}), encoding="utf-8")
    return config


def _eval(tmp_path: Path, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["eval", "--out", str(tmp_path / "run"), "--quiet", *args])
    out, err = capsys.readouterr()
    return code, out, err


def _files(run: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in sorted(run.rglob("*")) if path.is_file()}


def _refusal(path: Path, clash: str) -> str:
    return (
        f"zorkmcp eval: ConfigError: {path}: {clash} (and 1 more episode file(s)); resume with the "
        "settings the run began with, or pass a new --out"
    )


def _sha(value: Any) -> str:
    """A record's digest of a value: the first 16 hex digits of the SHA-256 of its canonical JSON."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def _joined(text: str) -> str:
    return "".join(text.split())  # rich wraps the line to the terminal's width


def test_a_record_says_what_it_was_played_with_and_holds_no_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    _project(tmp_path, THINKING)
    code, out, _ = _eval(
        tmp_path, "--game", str(zork1_path()), "--episodes", "1", "--turns", "1", capsys=capsys
    )
    assert code == 0, out
    seed_12 = episode_paths(tmp_path / "run", "mcp", 12)[0]
    record = json.loads(seed_12.read_text())
    assert (record["base_url"], record["game_md5"]) == (None, ZORK1_MD5)  # the scripted model has no endpoint
    agent = {
        "max_tool_iterations": 20,
        "tool_call_timeout_seconds": 30,
        "server_startup_timeout_seconds": 10,
        "max_result_bytes": 65536,
        "force_tool_support": False,
        "turn_timeout_seconds": None,
    }
    thinking = {
        "type": "stdio", "module": None, "lifecycle": "per_turn", "timeout": None, "tools": None,
        "sampling": False,
        "command": _sha(sys.executable),  # python3: the interpreter running zorkmcp
        "args": "68213bde5bed8fc2", "env": "18a7294225763f34", "cwd": None, "url": None, "headers": None,
        "roots": None,
    }  # fmt: skip
    assert (thinking["args"], thinking["env"]) == (_sha(THINKING["args"]), _sha(THINKING["env"]))
    assert record["setup"] == {
        "fingerprint": _sha({"agent": agent, "servers": {"thinking": thinking}}),
        "agent": agent,
        "servers": {"thinking": thinking},
    }
    assert SECRET not in seed_12.read_text()
    assert SECRET not in (tmp_path / "run" / "summary.json").read_text()


def test_resume_refuses_a_server_swapped_behind_its_name_and_says_what_differs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The names alone were compared: another command, other arguments or another environment behind
    # "thinking" went into the same arm's mean.
    monkeypatch.chdir(tmp_path)
    config = _project(tmp_path, THINKING)
    common = ("--game", str(zork1_path()), "--episodes", "2", "--turns", "1")
    code, out, _ = _eval(tmp_path, *common, capsys=capsys)
    assert code == 0, out
    run = tmp_path / "run"
    before = _files(run)
    seed_12 = episode_paths(run, "mcp", 12)[0]
    where = f"({config}, the arm's mcp_config.json)"
    for server, differs in [
        ({**THINKING, "args": [*THINKING["args"], "--oracle"]}, "args"),
        ({**THINKING, "env": {"THINK_TOKEN": "sk-another"}}, "env"),
        ({**THINKING, "command": "python3.11"}, "command"),
        ({**THINKING, "lifecycle": "per_episode"}, "lifecycle"),
        ({**THINKING, "args": ["-m", "zorkmcp.servers.thinking", "-v"], "timeout": 5}, "timeout and args"),
    ]:
        _project(tmp_path, server)
        for resume in ("--resume", "--retry-failed"):
            code, _, err = _eval(tmp_path, *common, resume, capsys=capsys)
            assert code == 2
            clash = (
                f"server 'thinking' of this run's arm mcp has other {differs} than the episode played with"
            )
            assert _joined(err) == _joined(_refusal(seed_12, f"{clash} {where}"))
            assert SECRET not in err
            assert "sk-another" not in err
            assert _files(run) == before
    _project(tmp_path, THINKING)  # the server the run began with; the concurrency changes no episode
    code, out, _ = _eval(tmp_path, *common, "--resume", "--concurrency", "1", capsys=capsys)
    assert code == 0, out
    assert "0 episode(s) played, 2 resumed" in out


@pytest.mark.parametrize(
    ("setting", "clash"),
    [
        ("max_tool_iterations = 5", "max_tool_iterations is 20 but this run's arm mcp has 5"),
        ("tool_call_timeout_seconds = 2.5", "tool_call_timeout_seconds is 30 but this run's arm mcp has 2.5"),
        ("turn_timeout_seconds = 60", "turn_timeout_seconds is null but this run's arm mcp has 60"),
    ],
)
def test_resume_refuses_episodes_played_with_other_agent_settings(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    setting: str,
    clash: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    _project(tmp_path, THINKING)
    common = ("--game", str(zork1_path()), "--episodes", "2", "--turns", "1")
    code, out, _ = _eval(tmp_path, *common, capsys=capsys)
    assert code == 0, out
    run = tmp_path / "run"
    before = _files(run)
    _project(tmp_path, THINKING, mcp=f"{setting}\n")
    code, _, err = _eval(tmp_path, *common, "--resume", capsys=capsys)
    assert code == 2
    key = setting.split(" ", 1)[0]
    expected = f"{clash} ([tool.zorkgpt.mcp] {key} in the settings file)"
    assert _joined(err) == _joined(_refusal(episode_paths(run, "mcp", 12)[0], expected))
    assert _files(run) == before


def test_records_of_an_older_zorkmcp_are_kept_with_no_check_of_what_they_do_not_say(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # An older record has no setup, base_url or game_md5: what it was played with cannot be known.
    monkeypatch.chdir(tmp_path)
    _project(tmp_path, THINKING)
    common = ("--game", str(zork1_path()), "--episodes", "2", "--turns", "1")
    code, out, _ = _eval(tmp_path, *common, capsys=capsys)
    assert code == 0, out
    run = tmp_path / "run"
    for path in sorted((run / "episodes" / "mcp").glob("seed-*.json")):
        record = json.loads(path.read_text())
        for key in ("setup", "base_url", "game_md5", "servers_disabled", "requests_without_usage"):
            del record[key]
        path.write_text(json.dumps(record))
    _project(tmp_path, {**THINKING, "args": [*THINKING["args"], "--oracle"]}, mcp="max_tool_iterations = 5\n")
    code, out, _ = _eval(tmp_path, *common, "--resume", capsys=capsys)
    assert code == 0, out
    assert "0 episode(s) played, 2 resumed" in out


def test_on_a_ray_cluster_a_resume_compares_only_the_server_settings_no_worker_expands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Each worker of a cluster expands ${VAR} in the command, arguments, environment… from its own
    # environment: those may differ from the driver's. The lifecycle, the tools, the type do not.
    monkeypatch.chdir(tmp_path)
    config = _project(tmp_path, THINKING)
    flags = ("--episodes", "2", "--turns", "1")
    code, out, _ = _eval(tmp_path, "--game", str(zork1_path()), *flags, capsys=capsys)
    assert code == 0, out
    run = tmp_path / "run"
    _project(tmp_path, {**THINKING, "env": {"THINK_TOKEN": "sk-worker"}})
    args = build_parser().parse_args(
        ["eval", *flags, "--game", str(zork1_path()), "--out", str(run), "--resume"]
    )
    plan = build_plan(args, Settings.load(None))
    with pytest.raises(ConfigError, match=r"server 'thinking' of this run's arm mcp has other env "):
        resumable_episodes(plan)
    assert [r["seed"] for r in resumable_episodes(plan, cluster=True)] == [12, 13]
    _project(tmp_path, {**THINKING, "tools": ["think"]})
    plan = build_plan(args, Settings.load(None))
    here = rf"server 'thinking' of this run's arm mcp has other tools than the episode played with \({config}"
    with pytest.raises(ConfigError, match=here):
        resumable_episodes(plan, cluster=True)


def test_resume_refuses_episodes_of_another_story_file_of_the_same_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    game = tmp_path / "games" / "zork1.z3"
    game.parent.mkdir()
    shutil.copyfile(zork1_path(), game)
    common = ("--game", str(game), "--no-mcp", "--episodes", "2", "--turns", "1")
    code, out, _ = _eval(tmp_path, *common, capsys=capsys)
    assert code == 0, out
    run = tmp_path / "run"
    assert {r["game_md5"] for r in episode_records(run).values()} == {ZORK1_MD5}
    before = _files(run)
    with game.open("ab") as story:  # past the length its header states: still a sound story file
        story.write(b"\0")
    code, _, err = _eval(tmp_path, *common, "--resume", capsys=capsys)
    assert code == 2
    clash = (
        f'game_md5 is "{ZORK1_MD5}" but this run\'s arm no-mcp has "32e710395e0453865f82880fdd4b1fb9" '
        "(the md5 of the story file: it was changed or replaced since, or --game (or game in [eval]) names "
        "another file of that name)"
    )
    assert _joined(err) == _joined(_refusal(episode_paths(run, "no-mcp", 12)[0], clash))
    assert _files(run) == before


async def test_a_record_keeps_its_endpoint_without_credentials_and_a_resume_refuses_another(
    llm_server: LLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Records had no endpoint at all: a run against a local vLLM resumed against a provider serving
    # the same model name mixed the two silently.
    monkeypatch.chdir(tmp_path)
    llm_server.script(server_error(404, "no models route"), agent_reply("look"), agent_reply("look"))
    port = llm_server.base_url.removeprefix("http://127.0.0.1:").removesuffix("/v1")
    common = ("--game", str(zork1_path()), "--no-mcp", "--model", "m", "--episodes", "2", "--turns", "1")
    with_password = f"http://someone:hunter2@127.0.0.1:{port}/v1"
    code, out, _ = await trio.to_thread.run_sync(
        partial(_eval, tmp_path, *common, "--base-url", with_password, capsys=capsys)
    )
    assert code == 0, out
    run = tmp_path / "run"
    records = episode_records(run)
    assert [(r["model"], r["base_url"]) for r in records.values()] == [("m", llm_server.base_url)] * 2
    assert "hunter2" not in episode_paths(run, "no-mcp", 12)[0].read_text()
    another_password = f"http://someone:swordfish@127.0.0.1:{port}/v1"  # a credential, not a setting
    code, out, _ = await trio.to_thread.run_sync(
        partial(_eval, tmp_path, *common, "--base-url", another_password, "--resume", capsys=capsys)
    )
    assert code == 0, out
    assert "0 episode(s) played, 2 resumed" in out
    before = _files(run)
    code, _, err = await trio.to_thread.run_sync(
        partial(_eval, tmp_path, *common, "--base-url", "http://127.0.0.1:9/v1", "--resume", capsys=capsys)
    )
    assert code == 2
    clash = (
        f'base_url is "{llm_server.base_url}" but this run\'s arm no-mcp has "http://127.0.0.1:9/v1" (the '
        "model's endpoint: --base-url, the arm's base_url, agent_base_url in [tool.zorkgpt.llm], or "
        "OPENAI_BASE_URL)"
    )
    assert _joined(err) == _joined(_refusal(episode_paths(run, "no-mcp", 12)[0], clash))
    assert _files(run) == before
    assert len(llm_server.requests) == 3  # the probe and two turns: neither resume asked the model


@pytest.mark.parametrize(
    ("then", "now", "differs"),
    [
        ({"sampling": True}, {}, "sampling"),
        ({"roots": ["/srv/notes"]}, {"roots": ["/srv/other"]}, "roots"),
        ({"roots": ["/srv/notes"]}, {}, "roots"),
    ],
)
def test_resume_tells_a_server_given_other_capabilities(
    then: dict[str, Any], now: dict[str, Any], differs: str
) -> None:
    # sampling and roots change what a server offers (server-everything hides tools without them)
    from zorkmcp.config import McpConfig, ServerConfig
    from zorkmcp.eval._spec import arm_setup, setup_clash

    def setup(extra: dict[str, Any]) -> dict[str, Any]:
        server = ServerConfig(name="helper", command="python3", args=["-c", "pass"], **extra)
        return arm_setup(Settings(), McpConfig(servers=(server,)))

    assert setup_clash(setup(then), setup(now), arm="mcp", source=None, cluster=False) == (
        f"server 'helper' of this run's arm mcp has other {differs} than the episode played with "
        "(the arm's servers)"
    )
    assert setup_clash(setup(now), setup(now), arm="mcp", source=None, cluster=False) is None
