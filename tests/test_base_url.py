"""The model's base URL: one the HTTP client cannot use is a one-line error before anything starts
(never a traceback, never a silent fall back to the offline model), and its user info is never shown."""

from __future__ import annotations

import io
import json
from typing import TYPE_CHECKING

import pytest
from llm_server import json_reply
from play_support import read_events, write_project
from play_support import zork1_path as zork1
from rich.console import Console
from test_bridge import llm_in_thread

from zorkmcp.cli import main

if TYPE_CHECKING:
    from pathlib import Path

PORT_RULE = (
    "a port must be a number from 1 to 65535 (correct it, or leave it out for the default: 80 for "
    "http://, 443 for https://)"
)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME"):
        monkeypatch.delenv(name, raising=False)


@pytest.mark.parametrize("command", ["play", "eval"])
@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("127.0.0.1:11434/v1", "must be an http:// or https:// URL with a host, got no http:// or https:// "
         'at its start (write e.g. "http://127.0.0.1:11434/v1")'),
        ("ftp://127.0.0.1/v1", 'must be an http:// or https:// URL with a host, got ftp://… (write e.g. '
         '"http://127.0.0.1:11434/v1")'),
        ("http://127.0.0.1:99999/v1", f"has port 99999: {PORT_RULE}"),
        ("http://", 'must be an http:// or https:// URL with a host, got no host after "http://" (write '
         'e.g. "http://127.0.0.1:11434/v1")'),
    ],
)  # fmt: skip
def test_a_base_url_flag_the_client_cannot_use_is_a_usage_error(
    command: str, url: str, problem: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    # Before, with no API key such a URL played the offline model without a word; with one, a traceback.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main([command, "--base-url", url])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"zorkmcp {command}: error: argument --base-url: {problem}"
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("key", ["client_base_url", "agent_base_url"])
def test_a_base_url_setting_the_client_cannot_use_names_the_key_and_the_file(
    key: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    (tmp_path / "pyproject.toml").write_text(f'[tool.zorkgpt.llm]\n{key} = "localhost:8080/v1"\n')
    assert main(["play", "--turns", "1", "--quiet"]) == 2
    assert " ".join(capsys.readouterr().err.split()) == (
        f"zorkmcp play: configuration error (ConfigError): {key} must be an http:// or https:// URL with "
        'a host, got no http:// or https:// at its start (write e.g. "https://openrouter.ai/api/v1") '
        "(pyproject.toml [tool.zorkgpt.llm])"
    )


def test_an_arms_base_url_the_client_cannot_use_names_the_arm(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "eval.toml").write_text('[[arms]]\nname = "a"\nbase_url = "http://h:0/v1"\n')
    assert main(["eval", "eval.toml", "--out", "run"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"zorkmcp eval: ConfigError: eval.toml: arms[0].base_url has port 0: {PORT_RULE} (fix the key in "
        "the eval file)"
    ]


def test_user_info_in_the_base_url_is_never_shown(tmp_path: Path) -> None:
    # A basic-auth proxy in front of a model: http://user:secret@host/v1. The model refuses here, so the
    # URL appears in the error, the summary, the logs and the events: always without its user info.
    refusal = json_reply({"error": {"message": "no such model"}}, status=404)
    logs = {
        "json_log_file": str(tmp_path / "logs" / "events.jsonl"),
        "episode_log_file": str(tmp_path / "logs" / "episode.log"),
    }
    pyproject = write_project(tmp_path, enabled=False, files=logs)
    with llm_in_thread(refusal) as llm:
        port = llm.base_url.split(":")[2].split("/")[0]
        url = f"http://agent:pa55word@127.0.0.1:{port}/v1"
        out, err = io.StringIO(), io.StringIO()
        code = main(
            ["play", "--game", str(zork1()), "--pyproject", str(pyproject), "--turns", "1", "--quiet",
             "--base-url", url, "--model", "m"],
            console=Console(file=out, width=400), err=Console(file=err, width=400),
        )  # fmt: skip
    assert code == 1
    written = out.getvalue() + err.getvalue()
    written += "".join(p.read_text() for p in (tmp_path / "logs").iterdir())
    assert f"http://127.0.0.1:{port}/v1/chat/completions" in written
    assert "pa55word" not in written
    assert "agent@" not in written
    assert [e["stopped"] for e in read_events(tmp_path / "logs" / "events.jsonl") if e["event_type"] ==
            "episode_complete"] == ["error"]  # fmt: skip


def test_user_info_is_not_shown_when_the_offline_model_plays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    write_project(tmp_path, enabled=False)
    url = "https://agent:pa55word@models.example.invalid/v1"
    flags = ["--turns", "1", "--quiet", "--base-url", url, "--record", "c.jsonl"]
    assert main(["play", "--game", str(zork1()), *flags]) == 0
    out, err = capsys.readouterr()
    written = out + err + "".join(p.read_text() for p in (tmp_path / "logs").iterdir())
    assert "No LLM configured (no API key for https://models.example.invalid/v1)" in " ".join(out.split())
    assert "pa55word" not in written
    header = json.loads((tmp_path / "c.jsonl").read_text().splitlines()[0])
    assert header["settings"]["base_url"] == "https://models.example.invalid/v1"  # a cassette holds no secret
    assert "pa55word" not in (tmp_path / "c.jsonl").read_text()
