"""Each API key goes only to the host it belongs to, and ``OPENAI_BASE_URL`` is read as the base URL.

Before: without ``api_key_env``, ``OPENROUTER_API_KEY`` then ``OPENAI_API_KEY`` were tried for any base
URL, so an OpenRouter key went to Groq, a proxy or a local server, and an OpenAI key to openrouter.ai;
and ``OPENAI_BASE_URL`` (OpenAI's own SDK reads it) was ignored, so the OpenRouter default was asked.
Now ``OPENROUTER_API_KEY`` goes to OpenRouter only, ``OPENAI_API_KEY`` to every other endpoint only,
the "no API key" messages say when the other variable is set and what to do, and ``OPENAI_BASE_URL``
is the base URL when neither a flag nor the settings give one (checked like a setting: one line, exit 2).
"""

from __future__ import annotations

import io
import pickle
from typing import TYPE_CHECKING

import pytest
from llm_server import LLMServer, agent_reply, content_reply
from llm_server import llm_server_fixture as llm_server_fixture  # the llm_server fixture
from play_support import write_project
from play_support import zork1_path as zork1
from rich.console import Console
from test_bridge import llm_in_thread

from zorkmcp.cli import main
from zorkmcp.config import LLMSettings, RetrySettings, Settings
from zorkmcp.errors import ConfigError
from zorkmcp.llm import (
    CompletionRequest,
    LLMClient,
    ModelChoice,
    open_chat_model,
    resolve_api_key,
)

if TYPE_CHECKING:
    from pathlib import Path

OR_KEY = "sk-or-v1-HOSTS-OPENROUTER-SECRET-1"
OA_KEY = "sk-proj-HOSTS-OPENAI-SECRET-2"
VARIABLES = (
    "OPENROUTER_API_KEY",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "GROQ_API_KEY",
    "GAME",
    "ZORKMCP_GAME_SEED",
)


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)


# --- which variable goes where -----------------------------------------------------------------


BOTH = {"OPENROUTER_API_KEY": OR_KEY, "OPENAI_API_KEY": OA_KEY}


@pytest.mark.parametrize(
    ("base_url", "environ", "expected"),
    [
        ("https://openrouter.ai/api/v1", BOTH, (OR_KEY, "OPENROUTER_API_KEY")),
        ("https://openrouter.ai./api/v1", BOTH, (OR_KEY, "OPENROUTER_API_KEY")),  # a fully qualified name
        ("https://openrouter.ai/api/v1", {"OPENAI_API_KEY": OA_KEY}, (None, None)),
        ("https://api.openai.com/v1", BOTH, (OA_KEY, "OPENAI_API_KEY")),
        ("https://api.openai.com/v1", {"OPENROUTER_API_KEY": OR_KEY}, (None, None)),
        ("https://api.groq.com/openai/v1", BOTH, (OA_KEY, "OPENAI_API_KEY")),
        ("https://api.groq.com/openai/v1", {"OPENROUTER_API_KEY": OR_KEY}, (None, None)),
        ("https://openrouter.ai.example.com/v1", {"OPENROUTER_API_KEY": OR_KEY}, (None, None)),
        ("https://openrouter.ai@proxy.example.com/v1", {"OPENROUTER_API_KEY": OR_KEY}, (None, None)),
        ("http://localhost:4000/v1", BOTH, (OA_KEY, "OPENAI_API_KEY")),
        ("http://127.0.0.1:8000/v1", {"OPENROUTER_API_KEY": OR_KEY}, (None, None)),
    ],
)
def test_each_default_variable_is_read_for_its_own_host_only(
    base_url: str, environ: dict[str, str], expected: tuple[str | None, str | None]
) -> None:
    assert resolve_api_key(LLMSettings(), base_url, environ=environ) == expected


@pytest.mark.parametrize("base_url", ["https://openrouter.ai/api/v1", "https://api.groq.com/openai/v1"])
def test_api_key_env_names_the_one_variable_sent_wherever_the_base_url_points(base_url: str) -> None:
    environ = {**BOTH, "GROQ_API_KEY": "gsk-groq"}
    llm = LLMSettings(api_key_env="GROQ_API_KEY")
    assert resolve_api_key(llm, base_url, environ=environ) == ("gsk-groq", "GROQ_API_KEY")
    llm = LLMSettings(api_key_env="OPENROUTER_API_KEY")  # the way to send it elsewhere anyway
    assert resolve_api_key(llm, base_url, environ=environ) == (OR_KEY, "OPENROUTER_API_KEY")


def _settings(**llm: str) -> Settings:
    return Settings(llm=LLMSettings(**llm), retry=RetrySettings(jitter_factor=0))


async def test_a_loopback_endpoint_gets_the_openai_key_and_never_the_openrouter_key(
    llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    llm_server.script(content_reply("one"), content_reply("two"))
    settings = _settings(agent_model="m", client_base_url=llm_server.base_url)
    monkeypatch.setenv("OPENROUTER_API_KEY", OR_KEY)
    async with open_chat_model(settings) as model:  # local: a real client, with no key
        assert isinstance(model, LLMClient)
        assert (await model.complete(CompletionRequest([{"role": "user", "content": "hi"}]))).content == "one"
    monkeypatch.setenv("OPENAI_API_KEY", OA_KEY)
    async with open_chat_model(settings) as model:
        assert (await model.complete(CompletionRequest([{"role": "user", "content": "hi"}]))).content == "two"
    first, second = llm_server.requests
    assert "authorization" not in first.headers
    assert second.headers["authorization"] == f"Bearer {OA_KEY}"


# --- the messages that say no key was found ----------------------------------------------------


def test_the_offline_notice_says_an_openai_key_is_not_sent_to_openrouter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OA_KEY)
    choice = ModelChoice.from_settings(_settings())
    assert choice.scripted is not None
    assert choice.notice == (
        "No API key for https://openrouter.ai/api/v1 (set OPENROUTER_API_KEY, name another variable with "
        "api_key_env in [tool.zorkgpt.llm], or point agent_base_url / client_base_url at a local server such "
        "as http://localhost:11434/v1): using the OFFLINE SCRIPTED MODEL instead of openai/gpt-4o-mini — its "
        "actions come from a fixed list of commands, not from an LLM. OPENAI_API_KEY is set, but it is only "
        "sent to endpoints other than OpenRouter's: to use it with OpenAI, pass --base-url "
        "https://api.openai.com/v1 (or client_base_url in [tool.zorkgpt.llm])."
    )


def test_the_offline_notice_says_an_openrouter_key_is_not_sent_to_groq(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", OR_KEY)
    choice = ModelChoice.from_settings(_settings(client_base_url="https://api.groq.com/openai/v1"))
    assert choice.scripted is not None
    assert choice.notice == (
        "No API key for https://api.groq.com/openai/v1 (set OPENAI_API_KEY, name another variable with "
        "api_key_env in [tool.zorkgpt.llm], or point agent_base_url / client_base_url at a local server such "
        "as http://localhost:11434/v1): using the OFFLINE SCRIPTED MODEL instead of openai/gpt-4o-mini — its "
        "actions come from a fixed list of commands, not from an LLM. OPENROUTER_API_KEY is set, but it is "
        "only sent to OpenRouter (openrouter.ai): export this endpoint's key as OPENAI_API_KEY, or set "
        'api_key_env = "OPENROUTER_API_KEY" in [tool.zorkgpt.llm] to send it to '
        "https://api.groq.com/openai/v1 anyway."
    )


def _play(pyproject: Path, *extra: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    argv = ["play", "--game", str(zork1()), "--pyproject", str(pyproject), "--quiet", *extra]
    code = main(argv, console=Console(file=out, width=400), err=Console(file=err, width=400))
    return code, out.getvalue(), " ".join(err.getvalue().split())


def _project(folder: Path) -> Path:
    logs = {
        "json_log_file": str(folder / "logs" / "events.jsonl"),
        "episode_log_file": str(folder / "logs" / "ep.log"),
    }
    return write_project(folder, files=logs, mcp_config=None, enabled=False)


def test_plays_banner_says_the_openai_key_is_not_sent_to_openrouter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OA_KEY)
    code, out, err = _play(_project(tmp_path), "--turns", "1")
    assert code == 0, err
    banner = " ".join(out.split("zorkmcp play:")[0].split())
    assert banner == (
        "No LLM configured (no API key for https://openrouter.ai/api/v1): playing with the offline scripted "
        "model, which replays Jericho's walkthrough of the game — no LLM is called. To play with a real "
        "model, set OPENROUTER_API_KEY, or pass --base-url for a local server such as "
        "http://127.0.0.1:11434/v1 (Ollama). OPENAI_API_KEY is set, but it is only sent to endpoints other "
        "than OpenRouter's: to use it with OpenAI, pass --base-url https://api.openai.com/v1 (or "
        "client_base_url in [tool.zorkgpt.llm])."
    )
    logs = (tmp_path / "logs" / "events.jsonl").read_text() + (tmp_path / "logs" / "ep.log").read_text()
    assert OA_KEY not in out + err + logs


def _plan_lines(tmp_path: Path, *flags: str) -> list[str]:
    from zorkmcp._cli_eval import arm_lines, build_plan
    from zorkmcp.cli import build_parser

    pyproject = _project(tmp_path)
    argv = [
        "eval",
        "--pyproject",
        str(pyproject),
        "--game",
        str(zork1()),
        "--out",
        str(tmp_path / "x"),
        *flags,
    ]
    args = build_parser().parse_args(argv)
    return arm_lines(build_plan(args, Settings.load(pyproject)))


def test_the_eval_header_says_the_openrouter_key_is_not_sent_to_the_arms_endpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENROUTER_API_KEY", OR_KEY)
    lines = _plan_lines(tmp_path, "--base-url", "https://api.groq.com/openai/v1")
    assert lines == [
        "  [bold]no-mcp[/]  [yellow]offline scripted model[/]; no tools",
        "[bold yellow]No API key for https://api.groq.com/openai/v1[/]: no-mcp plays the offline "
        "scripted model, which replays Jericho's walkthrough of the game (no LLM is called). To evaluate a "
        "real model, set OPENAI_API_KEY (or api_key_env in \\[\\[arms]]), or pass --base-url for a local "
        "server such as http://127.0.0.1:11434/v1 (Ollama). OPENROUTER_API_KEY is set, but it is only sent "
        "to OpenRouter (openrouter.ai): export this endpoint's key as OPENAI_API_KEY, or set api_key_env = "
        '"OPENROUTER_API_KEY" in \\[tool.zorkgpt.llm] (or the arm\'s api_key_env) to send it to '
        "https://api.groq.com/openai/v1 anyway.",
    ]


# --- OPENAI_BASE_URL ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("llm", "override", "expected"),
    [
        ({}, None, ("http://127.0.0.1:9/env", "OPENAI_BASE_URL")),
        ({}, "http://127.0.0.1:9/flag", ("http://127.0.0.1:9/flag", "override")),
        (
            {"client_base_url": "http://127.0.0.1:9/client"},
            None,
            ("http://127.0.0.1:9/client", "client_base_url"),
        ),
        (
            {"client_base_url": "http://127.0.0.1:9/client", "agent_base_url": "http://127.0.0.1:9/agent"},
            None,
            ("http://127.0.0.1:9/agent", "agent_base_url"),
        ),
    ],
)
def test_openai_base_url_comes_after_the_flag_and_the_settings(
    llm: dict[str, str], override: str | None, expected: tuple[str, str]
) -> None:
    from zorkmcp.llm import pick_base_url  # here: each test fails on its own on the old code

    environ = {"OPENAI_BASE_URL": "http://127.0.0.1:9/env"}
    assert pick_base_url(LLMSettings(**llm), override, environ=environ) == expected
    assert pick_base_url(LLMSettings(), None, environ={"OPENAI_BASE_URL": "  "}) == (
        "https://openrouter.ai/api/v1",
        "default",
    )


def test_play_talks_to_openai_base_url_with_the_openai_key_and_says_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with llm_in_thread(default=agent_reply("look")) as llm:
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", OA_KEY)
        monkeypatch.setenv("OPENROUTER_API_KEY", OR_KEY)
        code, out, err = _play(_project(tmp_path), "--turns", "1", "--model", "m", "--seed", "5")
        requests = list(llm.requests)
    assert code == 0, err
    assert [(r.path, r.headers["authorization"], r.json["model"]) for r in requests] == [
        ("/v1/chat/completions", f"Bearer {OA_KEY}", "m")
    ]
    assert out.splitlines()[0] == (
        f"zorkmcp play: zork1.z3, seed 5, model m at {llm.base_url} (from OPENAI_BASE_URL), MCP off "
        "(no tools), up to 1 turn"
    )
    logs = (tmp_path / "logs" / "events.jsonl").read_text() + (tmp_path / "logs" / "ep.log").read_text()
    assert OA_KEY not in out + err + logs
    assert OR_KEY not in out + err + logs


def test_a_bad_openai_base_url_stops_play_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "localhost:8080/v1?token=hidden")
    code, out, err = _play(_project(tmp_path), "--turns", "1")
    assert (code, out) == (2, "")
    assert err == (
        "zorkmcp play: configuration error (ConfigError): OPENAI_BASE_URL must be an http:// or https:// URL "
        'with a host, got no http:// or https:// at its start (write e.g. "http://127.0.0.1:11434/v1"); it '
        "is the model's base URL when no --base-url (or eval arm's base_url) and no agent_base_url / "
        "client_base_url in [tool.zorkgpt.llm] gives one: correct it, or unset it for the default "
        "https://openrouter.ai/api/v1"
    )
    assert not (tmp_path / "logs").exists()
    # --base-url decides: the variable is not read, nor refused
    from zorkmcp.llm import pick_base_url

    assert pick_base_url(LLMSettings(), "http://127.0.0.1:9/v1") == ("http://127.0.0.1:9/v1", "override")


def test_a_bad_openai_base_url_stops_eval_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:99999/v1")
    argv = ["eval", "--game", str(zork1()), "--out", "run", "--no-mcp", "--turns", "1", "--quiet"]
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert " ".join(err.split()) == (
        "zorkmcp eval: ConfigError: OPENAI_BASE_URL has port 99999: a port must be a number from 1 to 65535 "
        "(correct it, or leave it out for the default: 80 for http://, 443 for https://); it is the model's "
        "base URL when no --base-url (or eval arm's base_url) and no agent_base_url / client_base_url in "
        "[tool.zorkgpt.llm] gives one: correct it, or unset it for the default https://openrouter.ai/api/v1"
    )
    assert not (tmp_path / "run").exists()


def test_an_evals_episodes_play_against_the_drivers_openai_base_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from zorkmcp._cli_eval import arm_lines, build_plan
    from zorkmcp.cli import build_parser

    monkeypatch.setenv("OPENAI_BASE_URL", "http://user:secret@127.0.0.1:9/v1")
    pyproject = _project(tmp_path)
    argv = ["eval", "--pyproject", str(pyproject), "--game", str(zork1()), "--out", str(tmp_path / "x")]
    plan = build_plan(build_parser().parse_args(argv), Settings.load(pyproject))
    assert arm_lines(plan) == [
        "  [bold]no-mcp[/]  openai/gpt-4o-mini at http://127.0.0.1:9/v1 (from OPENAI_BASE_URL); no tools"
    ]
    assert "secret" not in repr(plan) + repr(plan.specs()[0])  # user info in the URL is never shown
    shipped = pickle.dumps(plan.specs()[0])  # what a Ray worker gets
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8/worker")  # the worker's own environment
    choice = pickle.loads(shipped).model_choice()  # our own bytes
    assert (choice.base_url, choice.base_url_from, choice.endpoint, choice.scripted) == (
        "http://user:secret@127.0.0.1:9/v1",
        "OPENAI_BASE_URL",
        "http://127.0.0.1:9/v1 (from OPENAI_BASE_URL)",
        None,
    )


def test_a_bad_openai_base_url_is_a_config_error_for_the_library_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "ftp://models.example.com/v1")
    with pytest.raises(ConfigError) as raised:
        ModelChoice.from_settings(_settings())
    assert str(raised.value).startswith(
        'OPENAI_BASE_URL must be an http:// or https:// URL with a host, got ftp://… (write e.g. "http://'
    )


@pytest.mark.parametrize("command", [["tools"], ["call", "thinking.think", "{}"]])
def test_a_bad_openai_base_url_stops_tools_and_call_in_one_line(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The sampler a server may ask for is the settings' model: a traceback here before the fix.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", "localhost:8080/v1")
    assert main(command) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "configuration error: OPENAI_BASE_URL must be an http:// or https:// URL "
        'with a host, got no http:// or https:// at its start (write e.g. "http://127.0.0.1:11434/v1"); it '
        "is the model's base URL when no --base-url (or eval arm's base_url) and no agent_base_url / "
        "client_base_url in [tool.zorkgpt.llm] gives one: correct it, or unset it for the default "
        "https://openrouter.ai/api/v1\n"
    )
