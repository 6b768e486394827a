"""``zorkmcp eval``'s inputs a user gets wrong: one line and exit 2 before anything starts, never a
traceback; and the default run folder, which two runs started in the same second must not share."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import pytest
from play_support import zork1_path

from zorkmcp._cli_eval import _reserve
from zorkmcp.cli import main
from zorkmcp.errors import GameError
from zorkmcp.game import ZorkGame

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture(autouse=True)
def _here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME"):
        monkeypatch.delenv(name, raising=False)


def _eval_file(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    (tmp_path / "eval.toml").write_text(text)
    code = main(["eval", "eval.toml", "--game", str(zork1_path()), "--out", "run", "--quiet"])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("arm", "message"),
    [
        ("temperature = -5", "arms[0].temperature must be >= 0, got -5.0"),
        ("temperature = 3", "arms[0].temperature must be <= 2, got 3.0"),
        ("top_p = 7", "arms[0].top_p must be <= 1, got 7.0"),
        ("top_k = -3", "arms[0].top_k must be >= 0, got -3"),
    ],
)
def test_a_sampling_value_out_of_range_in_an_arm_is_one_line(
    arm: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: a traceback from deep in the run (exit 1); the same value in pyproject.toml was one line.
    code, err = _eval_file(tmp_path, f'[[arms]]\nname = "a"\n{arm}\n', capsys)
    assert (code, err) == (
        2,
        f"zorkmcp eval: ConfigError: eval.toml: {message} (fix the key in the eval file)\n",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["eval.toml"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[arms]\nname = "a"\n',
         "eval.toml: arms is one table ([arms]); write each arm as [[arms]], an array of tables"),
        ("[[eval]]\nepisodes = 1\n",
         "eval.toml: eval is an array of tables ([[eval]]); write it as one table, [eval]"),
    ],
)  # fmt: skip
def test_a_table_written_as_the_other_kind_says_which_to_write(
    text: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _eval_file(tmp_path, text, capsys) == (2, f"zorkmcp eval: ConfigError: {message}\n")


def test_an_arms_missing_mcp_config_names_the_arm_and_the_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: play's three-line "MCP is enabled but … Set mcp.enabled = false in pyproject.toml".
    arm = '[[arms]]\nname = "tools"\nmcp = true\nmcp_config = "nope/mcp_config.json"\n'
    assert _eval_file(tmp_path, arm, capsys) == (
        2,
        f"zorkmcp eval: ConfigError: {tmp_path / 'nope' / 'mcp_config.json'} (arm tools, from eval.toml: "
        "arms[0].mcp_config): no such file; create it (examples/ has templates), point the arm's "
        "mcp_config at another, or set mcp = false for the arm\n",
    )


def test_an_arms_broken_mcp_config_names_the_arm(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "bad.json").write_text('{"mcpServers": {"x": {"command": "python3",}}}')
    arms = '[[arms]]\nname = "plain"\nmcp = false\n'
    arm = arms + '[[arms]]\nname = "tools"\nmcp = true\nmcp_config = "bad.json"\n'
    assert _eval_file(tmp_path, arm, capsys) == (
        2,
        f"zorkmcp eval: ConfigError: arm tools: invalid JSON in {tmp_path / 'bad.json'} at line 1, "
        + (  # Python 3.13 stops at the comma itself and words it apart
            "column 43: Illegal trailing comma before end of object"
            if sys.version_info >= (3, 13)
            else "column 44: Expecting property name enclosed in double quotes"
        )
        + " (a comma before the end of an object or an array: JSON allows none; remove it)\n",
    )


def test_seeds_past_the_interpreters_int_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Jericho hands the seed to a C int: 12 and 12 + 2**32 played the same game, 2**32 - 1 a random one.
    code = main(
        ["eval", "--game", str(zork1_path()), "--seed", "2147483647", "--episodes", "2", "--out", "r"]
    )
    assert (code, capsys.readouterr().err) == (
        2,
        "zorkmcp eval: ConfigError: seeds 2147483647…2147483648: the last is past 2147483647 (2**31 - 1), "
        "the largest game seed; pass a lower --seed or fewer --episodes\n",
    )
    assert _eval_file(tmp_path, "[eval]\nseed = 4294967308\n", capsys) == (
        2,
        "zorkmcp eval: ConfigError: eval.toml: eval.seed must be from 0 to 2147483647 (2**31 - 1), got "
        "4294967308 (fix the key in the eval file)\n",
    )
    with pytest.raises(SystemExit) as exited:
        main(["play", "--seed", "4294967308"])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "zorkmcp play: error: argument --seed: must be at most 2147483647 (2**31 - 1), got '4294967308'"
    )
    with pytest.raises(
        GameError,
        match=r"^seed must be at most 2147483647 \(2\*\*31 - 1: the interpreter's int\), got 2147483648$",
    ):
        ZorkGame.open(zork1_path(), seed=2**31)
    with ZorkGame.open(zork1_path(), seed=2**31 - 1) as game:
        assert game.seed == 2147483647
    assert sorted(p.name for p in tmp_path.iterdir()) == ["eval.toml"]


@pytest.mark.parametrize("given", ["flag", "file"])
def test_an_empty_out_is_not_the_current_folder(
    given: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if given == "flag":
        code, named = main(["eval", "--game", str(zork1_path()), "--out", "", "--no-mcp"]), "--out"
    else:
        (tmp_path / "eval.toml").write_text('[eval]\nout = ""\n')
        code, named = (
            main(["eval", "eval.toml", "--game", str(zork1_path()), "--no-mcp"]),
            "eval.toml: eval.out",
        )
    end = " (fix the key in the eval file)" if given == "file" else ""
    assert (code, capsys.readouterr().err) == (
        2,
        f"zorkmcp eval: ConfigError: {named} is empty: give the run's folder, or leave it out for "
        f"runs/<timestamp>{end}\n",
    )
    assert [p.name for p in tmp_path.iterdir()] == (["eval.toml"] if given == "file" else [])


def test_the_default_folder_is_claimed_so_a_second_run_in_that_second_takes_the_next(tmp_path: Path) -> None:
    first = _reserve(tmp_path / "runs" / "20261124-023201")
    second = _reserve(tmp_path / "runs" / "20261124-023201")
    third = _reserve(tmp_path / "runs" / "20261124-023201")
    assert [first.name, second.name, third.name] == [
        "20261124-023201",
        "20261124-023201-2",
        "20261124-023201-3",
    ]
    assert all(p.is_dir() for p in (first, second, third))


def test_a_default_folder_the_run_wrote_nothing_in_is_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The endpoint check fails after the folder was claimed: nothing is left behind, runs/ included.
    code = main(["eval", "--game", str(zork1_path()), "--base-url", "http://127.0.0.1:9/v1", "--no-mcp"])
    assert code == 2
    assert "127.0.0.1:9" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_a_default_run_writes_in_the_folder_it_claimed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "runs").mkdir()
    code = main(
        ["eval", "--game", str(zork1_path()), "--episodes", "1", "--turns", "1", "--no-mcp", "--quiet"]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    (run,) = (tmp_path / "runs").iterdir()
    assert sorted(p.name for p in run.iterdir()) == ["episodes", "report.html", "summary.csv", "summary.json"]
    assert f"files in runs/{run.name} (" in " ".join(out.split())


def test_argparse_types_are_the_same_for_play_and_eval() -> None:
    from zorkmcp._argtypes import game_seed

    assert game_seed("0") == 0
    assert game_seed("2147483647") == 2147483647
    with pytest.raises(argparse.ArgumentTypeError, match=r"^must be a non-negative integer, got '-1'$"):
        game_seed("-1")


def test_an_error_line_of_eval_shows_control_characters_as_escapes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An arm's name cannot hold one, but a file name can: the terminal is told, not driven."""
    bad = tmp_path / "bad\x1b[2J.json"
    bad.write_text("{")
    arm = '[[arms]]\nname = "tools"\nmcp = true\nmcp_config = "bad\\u001b[2J.json"\n'
    code, err = _eval_file(tmp_path, arm, capsys)
    assert code == 2
    assert "\x1b" not in err
    assert "bad\\x1b[2J.json" in err
