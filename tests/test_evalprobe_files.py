"""``zorkmcp eval``'s FILE.toml as a demanding user gives it: from another folder than its own
(``game = "zork1.z3"`` played from the eval file's folder only), after ``--ray`` (whose address may be
left out, so argparse took the file for the cluster's address), and a file that is no eval file at all
(the settings' ``pyproject.toml``, an ``mcp_config.json``). Each is taken as meant, or refused in one
line that says what the file is and what to pass instead, exit 2 before anything starts."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from zorkmcp._cli_eval import build_plan
from zorkmcp.cli import build_parser, main
from zorkmcp.config import Settings
from zorkmcp.game import PACKAGED_GAME

if TYPE_CHECKING:
    from zorkmcp.eval import EvalPlan


@pytest.fixture(autouse=True)
def _here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAMES_DIR"):
        monkeypatch.delenv(name, raising=False)


def _plan_of(*argv: str) -> EvalPlan:
    args = build_parser().parse_args(["eval", *argv, "--out", "run"])
    return build_plan(args, Settings.load(None))


# -- a story file's name in the eval file ---------------------------------------------------------------


def test_a_story_files_name_in_the_eval_file_plays_from_any_folder() -> None:
    # Before: "game file not found: evals/zork1.z3" from the eval file's parent folder, while the
    # same file played the packaged Zork I when started from its own folder.
    Path("evals").mkdir()
    Path("evals/eval.toml").write_text('[eval]\ngame = "zork1.z3"\n', encoding="utf-8")
    assert _plan_of("evals/eval.toml").game_path == PACKAGED_GAME


def test_a_story_file_beside_the_eval_file_comes_before_the_games_folders() -> None:
    Path("evals").mkdir()
    Path("evals/zork1.z3").write_bytes(PACKAGED_GAME.read_bytes())
    Path("evals/eval.toml").write_text('[eval]\ngame = "zork1.z3"\n', encoding="utf-8")
    assert _plan_of("evals/eval.toml").game_path == Path("evals/zork1.z3")


def test_a_story_file_that_is_nowhere_is_named_where_the_eval_file_says(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Path("evals").mkdir()
    Path("evals/eval.toml").write_text('[eval]\ngame = "zork9.z5"\n', encoding="utf-8")
    assert main(["eval", "evals/eval.toml", "--out", "run", "--quiet"]) == 2
    assert capsys.readouterr().err.startswith(
        "zorkmcp eval: GameError: game file not found: evals/zork9.z5 (from evals/eval.toml: eval.game). "
    )
    assert not Path("run").exists()


# -- the file after --ray ----------------------------------------------------------------------------------


def test_the_eval_file_after_ray_is_the_eval_file(capsys: pytest.CaptureFixture[str]) -> None:
    # Before: the file was --ray's address; the default arm was set up (the file unread), then the
    # run stopped at "--ray eval.toml: Ray cannot join this cluster (… Invalid address format …)".
    Path("eval.toml").write_text("[eval]\nepisodes = 0\n", encoding="utf-8")
    assert main(["eval", "--ray", "eval.toml", "--out", "run", "--quiet"]) == 2
    assert capsys.readouterr().err == (
        "zorkmcp eval: ConfigError: eval.toml: eval.episodes must be >= 1, got 0 (fix the key in the "
        "eval file)\n"
    )
    assert not Path("run").exists()


# -- a file that is not an eval file -----------------------------------------------------------------------


def test_a_settings_file_given_as_the_eval_file_says_to_pass_it_as_pyproject(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Before: "pyproject.toml: the top level has unknown key build-system, project, tool (allowed:
    # eval, arms) (fix the key in the eval file)": as if the file needed mending.
    Path("pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.zorkgpt.mcp]\nenabled = false\n', encoding="utf-8"
    )
    assert main(["eval", "pyproject.toml", "--out", "run", "--quiet"]) == 2
    assert capsys.readouterr().err == (
        "zorkmcp eval: ConfigError: pyproject.toml holds [tool…] tables and no [eval] or [[arms]]: it is "
        "a settings file, not an eval file; pass it as --pyproject pyproject.toml (an eval file holds "
        "[eval] and [[arms]] tables)\n"
    )


def test_an_mcp_config_given_as_the_eval_file_says_where_it_goes(capsys: pytest.CaptureFixture[str]) -> None:
    # Before: "invalid TOML in the eval file mcp_config.json: Invalid statement (at line 1, column 1)"
    Path("mcp_config.json").write_text('{"mcpServers": {}}\n', encoding="utf-8")
    assert main(["eval", "mcp_config.json", "--out", "run", "--quiet"]) == 2
    assert capsys.readouterr().err == (
        "zorkmcp eval: ConfigError: the eval file mcp_config.json is JSON, not TOML: an eval file is "
        "TOML, with [eval] and [[arms]] tables; an mcp_config.json is named by an arm's mcp_config key "
        "(or [tool.zorkgpt.mcp] config_file)\n"
    )


def test_an_eval_file_with_a_tool_table_beside_its_own_is_told_its_unknown_key(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Path("eval.toml").write_text("[eval]\nepisodes = 2\n\n[tool.zorkgpt.mcp]\nenabled = false\n")
    assert main(["eval", "eval.toml", "--out", "run", "--quiet"]) == 2
    assert capsys.readouterr().err == (
        "zorkmcp eval: ConfigError: eval.toml: the top level has unknown key tool (allowed: eval, arms) "
        "(fix the key in the eval file)\n"
    )
