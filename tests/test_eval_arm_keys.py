"""``zorkmcp eval``: an arm's model and API key variable are what they say, or the run does not start.

An arm that names its key variable (``api_key_env``) whose variable is unset played the offline
scripted model, exit 0, and the notice then advised setting that very variable; a blank model name
was sent to the endpoint as it was. Each is now one line, exit 2, before anything starts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from play_support import zork1_path

from zorkmcp.cli import main

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        "OPENROUTER_API_KEY",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "GAME",
        "ZORKMCP_GAME_SEED",
        "ZORKMCP_TEST_KEY",
    ):
        monkeypatch.delenv(name, raising=False)


def _eval(tmp_path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["eval", "--game", str(zork1_path()), "--out", str(tmp_path / "run"), "--quiet", *args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("value", "state"), [(None, "is not set"), ("  ", "is empty")])
def test_an_arms_key_variable_that_is_not_set_stops_the_run_naming_the_arm_and_the_variable(
    value: str | None,
    state: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    if value is not None:
        monkeypatch.setenv("ZORKMCP_TEST_KEY", value)
    path = tmp_path / "eval.toml"
    path.write_text(
        '[[arms]]\nname = "plain"\nmcp = false\n\n'
        '[[arms]]\nname = "keyed"\nmcp = false\napi_key_env = "ZORKMCP_TEST_KEY"\n'
    )
    code, out, err = _eval(tmp_path, capsys, str(path), "--turns", "1")
    assert code == 2
    assert out == ""
    assert err.splitlines() == [
        f"zorkmcp eval: ConfigError: {path}: arm keyed has api_key_env = 'ZORKMCP_TEST_KEY', but "
        f"ZORKMCP_TEST_KEY {state} in this environment, so the arm would play without its key (for a remote "
        "endpoint, the offline scripted model); export ZORKMCP_TEST_KEY, or remove api_key_env from the arm "
        "(then OPENROUTER_API_KEY is read for OpenRouter, OPENAI_API_KEY for any other endpoint)"
    ]
    assert not (tmp_path / "run").exists()
    # set, the run goes on to its start-up check of the endpoint (here one that refuses connections)
    monkeypatch.setenv("ZORKMCP_TEST_KEY", "sk-test")
    path.write_text(
        '[[arms]]\nname = "keyed"\nmcp = false\nbase_url = "http://127.0.0.1:9/v1"\n'
        'api_key_env = "ZORKMCP_TEST_KEY"\n'
    )
    code, out, err = _eval(tmp_path, capsys, str(path), "--turns", "1")
    assert code == 2
    assert "\n  keyed  openai/gpt-4o-mini at http://127.0.0.1:9/v1; no tools\n" in out
    assert " ".join(err.split()).startswith(
        "zorkmcp eval: ConfigError: the model endpoint http://127.0.0.1:9/v1 of arm(s) keyed cannot be "
        "reached: cannot connect to http://127.0.0.1:9/v1 (connection refused, or the server is not running)"
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('model = "  "', "arms[0].model is blank: give the model's name, or leave the key out"),
        (
            'api_key_env = ""',
            "arms[0].api_key_env is blank: give the name of the variable that holds the API key, or leave "
            "the key out",
        ),
    ],
)
def test_a_blank_model_or_key_variable_in_an_arm_stops_the_run(
    line: str,
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "eval.toml"
    path.write_text(f'[[arms]]\nname = "a"\n{line}\n')
    code, out, err = _eval(tmp_path, capsys, str(path))
    assert code == 2
    assert out == ""
    assert err.splitlines() == [
        f"zorkmcp eval: ConfigError: {path}: {message} (fix the key in the eval file)"
    ]
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("model", ["", "   "])
def test_a_blank_model_flag_stops_the_run(
    model: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # "" was taken as no --model at all; "   " was sent to the endpoint
    monkeypatch.chdir(tmp_path)
    code, out, err = _eval(tmp_path, capsys, "--no-mcp", "--model", model)
    assert code == 2
    assert out == ""
    assert err.splitlines() == [
        "zorkmcp eval: ConfigError: --model is blank: give the model's name, or leave --model out"
    ]
    assert not (tmp_path / "run").exists()


def test_a_key_pasted_into_an_arms_api_key_env_is_refused_and_never_shown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before, the run printed the key three times, as the name of a variable that was not set."""
    monkeypatch.chdir(tmp_path)
    key = "sk-or-v1-0123456789abcdef0123456789abcdef"
    (tmp_path / "eval.toml").write_text(f'[[arms]]\nname = "a"\nmcp = false\napi_key_env = "{key}"\n')
    code, out, err = _eval(tmp_path, capsys, "eval.toml", "--turns", "1")
    assert code == 2
    assert key not in out + err
    assert " ".join(err.split()) == (
        "zorkmcp eval: ConfigError: eval.toml: arms[0].api_key_env must name the environment variable that "
        "holds the API key, not hold the key (its value is not shown): export the key, e.g. "
        'MY_KEY_VARIABLE=…, and write api_key_env = "MY_KEY_VARIABLE" (fix the key in the eval file)'
    )
