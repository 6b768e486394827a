"""``zorkmcp eval``'s inputs and run folder as a fresh user gets them wrong: an eval file whose tables
are of another kind or whose text is not UTF-8, arm keys out of range, ``--compare-mcp`` with a file
of several arms, a run folder with a folder where an episode's file goes, and a ``--resume`` into a
folder that holds no run. Each is one line naming the file, the key or the path and what to do
(exit 2 before anything starts, no traceback), or, for the resume, a line that says so."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from play_support import zork1_path

from zorkmcp.cli import main


@pytest.fixture(autouse=True)
def _here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME"):
        monkeypatch.delenv(name, raising=False)


def _eval(tmp_path: Path, data: bytes, capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, str]:
    (tmp_path / "eval.toml").write_bytes(data)
    code = main(["eval", "eval.toml", "--game", str(zork1_path()), "--out", "run", "--quiet", *flags])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (  # Before: "eval is invalid (AttributeError: 'str' object has no attribute 'keys')"
            b'eval = "x"\n',
            "eval.toml: eval must be a table ([eval] with episodes, seed, \u2026), got 'x' "
            "(fix the key in the eval file)",
        ),
        (  # Before: the string taken for a list of its characters, "arms[0] is invalid (AttributeError…)"
            b'arms = "mcp"\n',
            "eval.toml: arms must be an array of tables ([[arms]] with name, model, \u2026, one per arm), "
            "got 'mcp' (fix the key in the eval file)",
        ),
        (
            b'arms = [{ name = "a" }, 3]\n',
            "eval.toml: arms[1] must be a table ([[arms]] with name, model, \u2026), got 3 "
            "(fix the key in the eval file)",
        ),
        (  # Before: "zorkmcp eval: Problem: max_tokens must be <= 10000000, …": no file, no key
            b'[[arms]]\nname = "a"\nmax_tokens = 10000001\n',
            "eval.toml: arms[0].max_tokens must be <= 10000000, got 10000001 (fix the key in the eval file)",
        ),
        (  # Before: the eval file's folder read as the file: "cannot read MCP config …: Is a directory"
            b'[[arms]]\nname = "a"\nmcp_config = ""\n',
            "eval.toml: arms[0].mcp_config is empty: give the arm's mcp_config.json, or leave the key out "
            "(fix the key in the eval file)",
        ),
        (  # Before: "invalid TOML in the eval file eval.toml: 'utf-8' codec can't decode byte 0xe9 …"
            "[eval]\nepisodes = 1 # d\u00e9j\u00e0\n".encode("latin-1"),
            "the eval file eval.toml is not UTF-8 text (byte 0xe9 on line 2, column 17), and TOML is UTF-8; "
            "save it as UTF-8",
        ),
        (  # Windows PowerShell's `>` writes UTF-16
            "[eval]\r\nepisodes = 1\r\n".encode("utf-16"),
            "the eval file eval.toml is UTF-16 text, and TOML is UTF-8; save it as UTF-8 (in PowerShell: "
            "Out-File -Encoding utf8)",
        ),
    ],
)
def test_a_bad_eval_file_is_one_line_naming_the_file_and_the_key(
    text: bytes, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, err = _eval(tmp_path, text, capsys)
    assert (code, err) == (2, f"zorkmcp eval: ConfigError: {message}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["eval.toml"]


def test_an_arms_mcp_config_that_is_a_folder_names_the_arm_and_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: "arm a: cannot read MCP config /tmp/…: Is a directory", with no key or file named.
    (tmp_path / "configs").mkdir()
    code, err = _eval(tmp_path, b'[[arms]]\nname = "a"\nmcp = true\nmcp_config = "configs"\n', capsys)
    assert (code, err) == (
        2,
        f"zorkmcp eval: ConfigError: {tmp_path / 'configs'} (arm a, from eval.toml: arms[0].mcp_config) is a "
        "folder, not an mcp_config.json; name the file in it, point the arm's mcp_config at another, or set "
        "mcp = false for the arm\n",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["configs", "eval.toml"]


def test_compare_mcp_with_a_file_of_several_arms_names_the_file_the_arms_and_the_way_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: "--compare-mcp makes two arms from one, but the eval file defines 2": which file, what to do?
    code, err = _eval(tmp_path, b'[[arms]]\nname = "a"\n[[arms]]\nname = "b"\n', capsys, "--compare-mcp")
    assert (code, err) == (
        2,
        "zorkmcp eval: ConfigError: --compare-mcp makes two arms, mcp and no-mcp, from one, but "
        "eval.toml defines 2 (a, b); leave --compare-mcp out (the arms' mcp keys decide), or keep one arm "
        "in the file\n",
    )


def _resume(*flags: str) -> int:
    game = str(zork1_path())
    return main(["eval", "--game", game, "--no-mcp", "--episodes", "2", "--turns", "1", "--quiet", *flags])


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (  # Before: seed 12 played, then "stopped, run/episodes/no-mcp/seed-12.json: cannot be written
            # (Is a directory)", exit 1: on a resume with a real model, an episode paid for nothing
            "episodes/no-mcp/seed-12.json",
            "--out run: run/episodes/no-mcp/seed-12.json is a folder where a file of episode no-mcp seed 12 "
            "goes; move it, or pass another --out (nothing was played or replaced)",
        ),
        (
            "episodes/no-mcp/seed-13.events.jsonl",
            "--out run: run/episodes/no-mcp/seed-13.events.jsonl is a folder where a file of episode no-mcp "
            "seed 13 goes; move it, or pass another --out (nothing was played or replaced)",
        ),
    ],
)
def test_a_path_in_the_way_of_an_episodes_file_stops_the_resume_before_anything_plays(
    make: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "run" / make
    path.mkdir(parents=True)
    # not in the way: seed-012.json is no seed's file name, and seed 14 is not this run's
    for name in ("seed-012.json", "seed-14.json"):
        (path.parent / name).mkdir()
    assert _resume("--out", "run", "--resume") == 2
    assert capsys.readouterr().err == f"zorkmcp eval: ConfigError: {message}\n"
    assert [p for p in (tmp_path / "run").rglob("*") if p.is_file()] == []  # nothing written, the lock gone


def test_a_resume_into_a_folder_with_no_run_says_every_episode_is_played(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: a typo in --out played every episode again in a new folder, without a word.
    assert _resume("--out", "runs/gtp4o", "--resume") == 0
    err = capsys.readouterr().err
    assert (
        "zorkmcp eval: --resume: runs/gtp4o holds no episode file, so there is nothing to go on from and "
        "every episode is played; if you meant to go on with a run, stop (Ctrl-C) and check --out\n"
    ) in err
    assert sorted(p.name for p in (tmp_path / "runs" / "gtp4o" / "episodes" / "no-mcp").iterdir()) == [
        "seed-12.events.jsonl",
        "seed-12.json",
        "seed-13.events.jsonl",
        "seed-13.json",
    ]
    # going on with that run: it has episodes now, so no such line
    assert _resume("--out", "runs/gtp4o", "--retry-failed", "--episodes", "3") == 0
    assert "holds no episode file" not in capsys.readouterr().err


def _as_played_by(record_path: Path, **fields: object) -> None:
    """Make a record read as if another model had played it (the run's settings are otherwise the same)."""
    record = json.loads(record_path.read_text(encoding="utf-8"))
    record_path.write_text(json.dumps({**record, **fields}), encoding="utf-8")


def test_a_resume_takes_a_base_url_with_a_trailing_slash_for_the_same_endpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: "base_url is "http://127.0.0.1:9/v1" but this run's arm no-mcp has "http://127.0.0.1:9/v1/"",
    # though the client posts to one URL for both
    assert _resume("--out", "run", "--episodes", "1") == 0
    record = tmp_path / "run" / "episodes" / "no-mcp" / "seed-12.json"
    _as_played_by(record, model="m", scripted=False, base_url="http://127.0.0.1:9/v1")
    capsys.readouterr()
    flags = ("--model", "m", "--base-url", "http://127.0.0.1:9/v1/", "--episodes", "1")
    assert _resume("--out", "run", "--resume", *flags) == 0
    assert capsys.readouterr().err == ""
    assert json.loads(record.read_text(encoding="utf-8"))["base_url"] == "http://127.0.0.1:9/v1"  # kept


def test_a_resume_without_the_api_key_says_so_rather_than_that_the_model_differs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: 'model is "gpt-x" but this run's arm no-mcp has "scripted-walkthrough" (--model, or the
    # arm's model)', to a user who had passed --model gpt-x: the key was missing, not the model
    assert _resume("--out", "run", "--episodes", "1") == 0
    record = tmp_path / "run" / "episodes" / "no-mcp" / "seed-12.json"
    _as_played_by(record, model="gpt-x", scripted=False, base_url="https://openrouter.ai/api/v1")
    capsys.readouterr()
    assert _resume("--out", "run", "--resume", "--model", "gpt-x", "--episodes", "1") == 2
    assert " ".join(capsys.readouterr().err.split()) == (
        f"zorkmcp eval: ConfigError: {Path('run/episodes/no-mcp/seed-12.json')}: the episode played the "
        'model "gpt-x", but this run\'s arm no-mcp would play the offline scripted model: there is no API '
        "key for https://openrouter.ai/api/v1 now (set OPENROUTER_API_KEY, or the arm's api_key_env); resume "
        "with the settings the run began with, or pass a new --out"
    )


def test_a_resume_with_an_api_key_set_since_says_so_rather_than_that_the_model_differs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: 'model is "scripted-walkthrough" but this run's arm no-mcp has "openai/gpt-4o-mini"
    # (--model, or the arm's model)', to a user who had changed no model: a key had been set since
    assert _resume("--out", "run", "--episodes", "1") == 0  # no key: the offline scripted model
    capsys.readouterr()
    monkeypatch.setenv("OPENROUTER_API_KEY", "sk-or-set-since")
    assert _resume("--out", "run", "--resume", "--episodes", "1") == 2
    assert " ".join(capsys.readouterr().err.split()) == (
        f"zorkmcp eval: ConfigError: {Path('run/episodes/no-mcp/seed-12.json')}: the episode played the "
        "offline scripted model (no API key was set when it played), but this run's arm no-mcp would play "
        'the model "openai/gpt-4o-mini" at https://openrouter.ai/api/v1 now, as OPENROUTER_API_KEY is set '
        "(unset it to go on with that run's offline model); resume with the settings the run began with, "
        "or pass a new --out"
    )


@pytest.mark.parametrize("flags", [("--ray",), ("--ray", "127.0.0.1:1"), ("--ray", "ray://127.0.0.1:1")])
def test_ray_not_installed_is_said_before_the_cluster_s_address_is_looked_at(
    flags: tuple[str, ...],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Before: --ray ADDRESS said "no Ray cluster answers at 127.0.0.1:1 …" to a machine without Ray
    monkeypatch.setitem(sys.modules, "ray", None)  # what Python finds where Ray is not installed
    assert _resume("--out", "run", *flags) == 2
    assert capsys.readouterr().err == (
        "zorkmcp eval: ConfigError: --ray needs Ray, which is not installed: pip install 'zorkmcp[ray]'\n"
    )
    assert not (tmp_path / "run").exists()
