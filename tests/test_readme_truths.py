"""What README.md tells a user to type, paste or expect is what the code does.

``test_readme.py`` runs the engine examples; these tests keep the rest from going stale: the
defaults table against the settings classes, the command synopses against the parsers, every JSON
and TOML block against the loaders, the Bridge example against a loopback model, the game server's
``status()`` fields, and the Events table against the log of a real ``zorkmcp play`` episode.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import trio
from llm_server import LLMServer, agent_reply, tool_call, tool_call_reply
from play_support import PER_TURN_THINKING, offline_env, read_events

from zorkmcp.cli import build_parser
from zorkmcp.config import McpConfig, McpSettings, RetrySettings, Settings
from zorkmcp.eval._spec import load_eval_file

README = Path(__file__).resolve().parents[1] / "README.md"
TEXT = README.read_text(encoding="utf-8")
GUARD = 120  # seconds: a hang guard for subprocesses, never an assertion


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", TEXT, re.DOTALL)


def section(heading: str) -> str:
    """The README's text from ``heading`` (a whole line) to the next heading of any level."""
    start = TEXT.index(f"\n{heading}\n") + len(heading) + 2
    end = re.compile(r"^#+ ", re.MULTILINE).search(TEXT, start)
    return TEXT[start : end.start() if end else len(TEXT)]


def table_rows(text: str) -> list[list[str]]:
    """The cells of each row of the first markdown table in ``text``, header and rule left out."""
    lines = [line for line in text.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines[2:]]


def ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


# --- configuration ----------------------------------------------------------------------------


def readme_value(cell: str) -> Any:
    if cell == "none":
        return None
    return json.loads(cell.strip("`"))


def test_mcp_defaults_table_is_mcp_settings() -> None:
    rows = table_rows(section("### `[tool.zorkgpt.mcp]` in `pyproject.toml`"))
    table = {ticked(key)[0]: readme_value(default) for key, default, _ in rows}
    assert table == {
        "enabled": False,
        "config_file": "mcp_config.json",
        "max_tool_iterations": 20,
        "tool_call_timeout_seconds": 30,
        "server_startup_timeout_seconds": 10,
        "force_tool_support": False,
        "max_result_bytes": 65536,
        "turn_timeout_seconds": None,
    }
    assert attrs.asdict(McpSettings()) == table


def test_model_settings_block_loads_and_shows_the_retry_defaults(tmp_path: Path) -> None:
    (block,) = [b for b in blocks("toml") if "[tool.zorkgpt.retry]" in b]
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(block, encoding="utf-8")
    settings = Settings.from_pyproject(pyproject)
    assert settings.llm.client_base_url == "https://openrouter.ai/api/v1"
    assert settings.llm.agent_model == "openai/gpt-4o-mini"
    assert settings.llm.cache_control is True
    assert (settings.agent_sampling.temperature, settings.agent_sampling.max_tokens) == (0.7, 1024)
    assert attrs.asdict(settings.retry) == {
        "max_retries": 5,
        "initial_delay": 1.0,
        "max_delay": 60.0,
        "exponential_base": 2.0,
        "jitter_factor": 0.1,
        "timeout_seconds": 120.0,
        "retry_on_timeout": True,
        "retry_on_rate_limit": True,
        "retry_on_server_error": True,
    }
    assert settings.retry == RetrySettings()  # the block spells out the defaults


def test_files_and_orchestrator_defaults_are_the_readmes() -> None:
    settings = Settings()
    assert settings.files.json_log_file == "logs/zorkmcp_events.jsonl"
    assert settings.files.episode_log_file == "logs/episode.log"
    assert settings.orchestrator.max_turns_per_episode == 500
    assert "`max_turns_per_episode` (default 500)" in TEXT
    assert "(default `logs/zorkmcp_events.jsonl`, `logs/episode.log`," in TEXT


def test_every_mcp_config_block_loads(tmp_path: Path) -> None:
    servers = []
    for number, block in enumerate(blocks("json")):
        path = tmp_path / f"mcp_config_{number}.json"
        path.write_text(block, encoding="utf-8")
        config = McpConfig.from_file(path, check_commands=False, environ={"MY_TOKEN": "t"})
        servers.append([(s.name, s.type) for s in config.servers])
    assert servers == [
        [("thinking", "stdio"), ("sequential-thinking", "stdio")],
        [("search", "http")],
        [("docs", "sse")],
    ]


def test_eval_file_block_loads(tmp_path: Path) -> None:
    (block,) = [b for b in blocks("toml") if "[eval]" in b]
    path = tmp_path / "eval.toml"
    path.write_text(block, encoding="utf-8")
    parsed = load_eval_file(path)
    assert attrs.asdict(parsed.eval) == {
        "episodes": 20,
        "seed": 12,
        "max_turns": 100,
        "concurrency": 16,
        "game": "zork1",
        "out": str(tmp_path / "runs/tools"),
    }
    assert [(a.name, a.model, a.mcp, a.temperature, a.api_key_env) for a in parsed.arms] == [
        ("mcp", "openai/gpt-4o-mini", True, 0.2, None),
        ("no-mcp", "openai/gpt-4o-mini", False, None, "OPENROUTER_API_KEY"),
    ]


# --- commands ---------------------------------------------------------------------------------


def groups(usage: str) -> set[str]:
    """The top-level ``[...]`` groups and bare words of a synopsis, whitespace collapsed."""
    found: set[str] = set()
    depth, current = 0, ""
    for char in " ".join(usage.split()):
        if char == "[":
            depth += 1
        if depth:
            current += char
        if char == "]":
            depth -= 1
            if depth == 0:
                found.add(current)
                current = ""
    return found


def parser_usage(command: str) -> set[str]:
    (subparsers,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return groups(subparsers.choices[command].format_usage()) - {"[-h]"}


def readme_usage(command: str) -> set[str]:
    start = TEXT.index(f"zorkmcp {command} [")
    end = TEXT.index("`", start) if TEXT[start - 1] == "`" else TEXT.index("\n", start)
    if command == "play":  # the fenced synopsis, two lines
        end = TEXT.index("```", start)
    return groups(TEXT[start:end])


def test_play_and_eval_synopses_are_the_parsers() -> None:
    assert readme_usage("play") == parser_usage("play")
    assert readme_usage("eval") == parser_usage("eval")


def test_tools_and_call_synopses_name_real_flags() -> None:
    assert readme_usage("tools") == {"[--config PATH]", "[--json]", "[--lint]", "[SERVER ...]"}
    assert readme_usage("tools") <= parser_usage("tools")
    assert readme_usage("call") == {"[--config PATH]", "[--timeout S]", "[JSON-ARGS]"}
    assert readme_usage("call") <= parser_usage("call")


def test_pyproject_flag_is_on_every_command_but_report() -> None:
    assert "Every\ncommand but `zorkmcp report` takes `--pyproject PATH`." in TEXT
    having = {
        c for c in ("play", "tools", "call", "eval", "report") if "[--pyproject PATH]" in parser_usage(c)
    }
    assert having == {"play", "tools", "call", "eval"}


def test_game_server_status_fields_are_the_readmes(tmp_path: Path) -> None:
    listed = re.search(r"`status\(\)` \(JSON: ([a-z_, ]+)\)", TEXT)
    assert listed is not None
    config = tmp_path / "mcp_config.json"
    game = {"command": "python3", "args": ["-m", "zorkmcp.game.server", "--seed", "12"]}
    config.write_text(json.dumps({"mcpServers": {"zork": game}}), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "zorkmcp.cli", "call", "--config", str(config), "zork.status"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=offline_env(),
        timeout=GUARD,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)["content"]
    assert listed.group(1).split(", ") == list(status)
    assert status == {
        "game": "zork1",
        "location": "West of House",
        "score": 0,
        "max_score": 350,
        "moves": 0,
        "game_over": False,
        "victory": False,
        "died": False,
    }


# --- the Bridge example, for real ---------------------------------------------------------------


async def test_bridge_example_plays_a_turn_against_a_loopback_model(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    (example,) = [b for b in blocks("python") if "with Bridge() as bridge" in b]
    (tmp_path / "example.py").write_text(example, encoding="utf-8")
    (tmp_path / "mcp_config.json").write_text(json.dumps(PER_TURN_THINKING), encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(
        "[tool.zorkgpt.mcp]\nenabled = true\n"
        f'[tool.zorkgpt.llm]\nagent_base_url = "{llm_server.base_url}"\nagent_model = "llama3.1"\n',
        encoding="utf-8",
    )
    thought = {"thought": "A mailbox.", "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": False}
    llm_server.script(tool_call_reply(tool_call("thinking__think", thought)), agent_reply("open mailbox"))
    with trio.fail_after(GUARD):
        done = await trio.run_process(
            [sys.executable, "example.py"],
            cwd=tmp_path,
            env=offline_env(),
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode() == "open mailbox\n"
    first, second = llm_server.bodies
    assert [t["function"]["name"] for t in first["tools"]] == ["thinking__think"]
    assert first["model"] == "llama3.1"
    assert first["messages"][-1]["content"].startswith("West of House. There is a small mailbox here.")
    assert second["messages"][-1]["role"] == "tool"


# --- Events -----------------------------------------------------------------------------------

COMMON = {"timestamp", "event_type", "episode_id", "turn"}


def events_table() -> dict[str, set[str]]:
    table: dict[str, set[str]] = {}
    for cells in table_rows(section("## Events")):
        for name in ticked(cells[0]):
            table[name] = set(ticked(cells[1]))
    return table


def test_events_table_holds_every_field_of_a_played_episode(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "zorkmcp.cli", "play", "--turns", "3", "--quiet"],
        capture_output=True,
        text=True,
        cwd=tmp_path,  # no pyproject.toml: the embedded defaults, the offline scripted model
        env=offline_env(),
        timeout=GUARD,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    events = read_events(tmp_path / "logs/zorkmcp_events.jsonl")
    table = events_table()
    assert {e["event_type"] for e in events} == {
        "llm_offline_model",
        "mcp_zygote_started",
        "mcp_server_started",
        "episode_start",
        "mcp_tool_call",
        "mcp_tool_result",
        "mcp_session_complete",
        "mcp_turn_teardown",
        "mcp_server_stopped",
        "turn_complete",
        "episode_complete",
    }
    for event in events:
        fields = set(event) - COMMON
        assert fields <= table[event["event_type"]], (
            event["event_type"],
            fields - table[event["event_type"]],
        )
    (end,) = [e for e in events if e["event_type"] == "episode_complete"]
    written = re.search(r"`--summary-json PATH` writes `\{(.*?)\}`", TEXT, re.DOTALL)
    assert written is not None
    assert set(end) - COMMON == set(re.findall(r'"(\w+)"', written.group(1)))
    tools = next(e["tools"] for e in events if e["event_type"] == "turn_complete" and e["tools"])
    assert set(tools[0]) == {"name", "server", "arguments", "result", "duration_ms", "outcome"}


# --- layout, dependencies, examples -------------------------------------------------------------

REPO = README.parent


def test_layout_names_files_that_exist() -> None:
    layout = section("## Layout").split("```")[1]
    folders = re.findall(r"^(\S+)\s", layout, re.MULTILINE)
    assert folders == [
        "pyproject.toml",
        "mcp_config.json",
        "zorkmcp/",
        "bridge/",
        "tests/",
        "benchmarks/",
        "examples/",
        "docs/",
    ]
    assert all((REPO / name).exists() for name in folders)
    package = layout[layout.index("zorkmcp/") : layout.index("bridge/")]
    modules = {"config/", "mcp/", "llm/", "game/", "servers/", "eval/"} | {
        "errors",
        "engine",
        "agent",
        "observability",
        "episode",
        "_bridge",
        "orchestrator",
        "cli",
        "_live",
        "_cli_eval",
    }
    for module in modules:
        assert re.search(rf"[\s(,]{re.escape(module)}[\s(,]", package), module
        path = REPO / "zorkmcp" / module
        assert path.is_dir() if module.endswith("/") else path.with_suffix(".py").is_file(), module


def test_dependencies_sentence_names_every_dependency() -> None:
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = [re.split(r"[<>=\[ ]", spec)[0] for spec in project["dependencies"]]
    assert names == [
        "trio",
        "anyio",
        "mcp",
        "httpx2",
        "attrs",
        "cattrs",
        "rich",
        "jericho",
        "matplotlib",
        "python-dotenv",
    ]
    sentence = TEXT[TEXT.index("Dependencies: ") :].split(". ")[0]
    assert all(re.search(rf"\b{re.escape(name)}\b", sentence) for name in names), sentence


def test_examples_folder_holds_the_files_the_readme_lists(tmp_path: Path) -> None:
    listed = re.search(r"Ready-made files in `examples/`: (.*?)\.\n", TEXT, re.DOTALL)
    assert listed is not None
    files = sorted(name for name in ticked(listed.group(1)) if name.endswith(".json"))
    assert files == [
        "mcp_config.inprocess.json",
        "mcp_config.sequential-thinking.json",
        "mcp_config.thoughtbox.json",
    ]
    assert sorted(p.name for p in (REPO / "examples").iterdir()) == files
    servers = [
        [
            (s.name, s.type)
            for s in McpConfig.from_file(REPO / "examples" / name, check_commands=False).servers
        ]
        for name in files
    ]
    assert servers == [
        [("thinking", "inprocess")],
        [("sequential-thinking", "stdio")],
        [("thoughtbox", "stdio")],
    ]
