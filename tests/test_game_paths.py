"""Choosing the game file: --game, GAME, game_file_path, and the Zork I that ships with the package."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from zorkmcp.errors import GameError
from zorkmcp.game import (
    PACKAGED_GAME,
    PACKAGED_GAMES_DIR,
    ZORK1_MD5,
    ZorkGame,
    default_games_dirs,
    resolve_game_path,
)

REPO = Path(__file__).resolve().parents[1]


# -- the order of the sources ----------------------------------------------------------------------


def test_cli_path_wins(tmp_path: Path) -> None:
    story = tmp_path / "mine.z3"
    story.write_bytes(b"x")
    env = {"GAME": str(tmp_path / "other.z3")}
    assert resolve_game_path(str(story), "settings.z3", env=env) == story


def test_missing_cli_path_names_the_file_and_how_to_pass_one(tmp_path: Path) -> None:
    with pytest.raises(
        GameError, match=r"game file not found: .*nope\.z3 \(from --game\)\. Check the path, or pass it"
    ):
        resolve_game_path(str(tmp_path / "nope.z3"), env={})


def test_a_folder_is_not_a_game_file(tmp_path: Path) -> None:
    with pytest.raises(GameError, match=r"\(from --game\) is not a file"):
        resolve_game_path(str(tmp_path), env={})


def test_game_variable_as_a_path(tmp_path: Path) -> None:
    story = tmp_path / "z.z5"
    story.write_bytes(b"x")
    assert resolve_game_path(None, "settings.z3", env={"GAME": str(story)}) == story
    with pytest.raises(GameError, match=r"not found: .*gone\.z3 \(from the GAME environment variable\)"):
        resolve_game_path(None, env={"GAME": str(tmp_path / "gone.z3")})


def test_game_variable_as_a_name_is_looked_up_in_the_games_folders(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    (second / "zork2.z3").write_bytes(b"x")
    found = resolve_game_path(None, "settings.z3", env={"GAME": "zork2"}, games_dirs=[first, second])
    assert found == second / "zork2.z3"
    (first / "zork2.z5").write_bytes(b"x")
    dirs = [first, second]
    assert resolve_game_path(None, env={"GAME": "zork2"}, games_dirs=dirs) == first / "zork2.z5"
    assert resolve_game_path(None, env={"GAME": "zork2.z3"}, games_dirs=dirs) == second / "zork2.z3"
    with pytest.raises(
        GameError, match=r"GAME=zork2\.z8: no file zork2\.z8 in .*, and no story file named zork2\.z8 in "
    ):
        resolve_game_path(None, env={"GAME": "zork2.z8"}, games_dirs=[first, second])


def test_games_dir_variable_and_defaults(tmp_path: Path) -> None:
    env = {"ZORKMCP_GAMES_DIR": str(tmp_path / "g")}
    assert default_games_dirs(env) == [tmp_path / "g", Path("games"), PACKAGED_GAMES_DIR]
    assert default_games_dirs({}) == [Path("games"), PACKAGED_GAMES_DIR]
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / "zork3.z3").write_bytes(b"x")
    assert resolve_game_path(None, env={**env, "GAME": "zork3"}) == tmp_path / "g" / "zork3.z3"


def test_an_unknown_game_name_lists_the_folders_searched(tmp_path: Path) -> None:
    with pytest.raises(
        GameError, match=r"GAME=zork9: no story file named zork9 .* in .*empty\. Put the file"
    ):
        resolve_game_path(None, env={"GAME": "zork9"}, games_dirs=[tmp_path / "empty"])


def test_settings_path_is_relative_to_its_pyproject(tmp_path: Path) -> None:
    (tmp_path / "games").mkdir()
    (tmp_path / "games" / "zork1.z3").write_bytes(b"x")
    found = resolve_game_path(None, "games/zork1.z3", env={}, settings_base=tmp_path)
    assert found == tmp_path / "games" / "zork1.z3"
    with pytest.raises(GameError, match=r"from game_file_path in \[tool\.zorkgpt\.files\]"):
        resolve_game_path(None, "missing.z3", env={}, settings_base=tmp_path)


# -- the packaged MIT release ------------------------------------------------------------------------


def test_with_nothing_given_the_packaged_zork1_is_played(zork1: Path) -> None:
    path = resolve_game_path(None, None, env={})
    assert path == REPO / "zorkmcp" / "game" / "data" / "zork1.z3"
    assert path == PACKAGED_GAME == zork1
    assert hashlib.md5(path.read_bytes(), usedforsecurity=False).hexdigest() == ZORK1_MD5
    assert ZORK1_MD5 == "1d4606016ea58ee038da53d994392323"
    with ZorkGame.open(path, seed=12) as game:
        assert game.location == "West of House"


def test_the_licence_ships_beside_the_game() -> None:
    licence = (PACKAGED_GAMES_DIR / "zork1.LICENSE").read_text(encoding="utf-8")
    assert licence.startswith("MIT License")
    assert "Copyright (c) 2025 Microsoft" in licence


def test_game_zork1_finds_the_packaged_copy_when_no_folder_has_it(tmp_path: Path) -> None:
    env = {"GAME": "zork1", "ZORKMCP_GAMES_DIR": str(tmp_path / "none")}
    assert resolve_game_path(None, None, env=env) == PACKAGED_GAME
    assert resolve_game_path(None, None, env={"GAME": "zork1.z3"}) == PACKAGED_GAME


def test_a_folder_earlier_in_the_search_wins_over_the_packaged_copy(tmp_path: Path) -> None:
    (tmp_path / "zork1.z3").write_bytes(b"mine")
    env = {"GAME": "zork1", "ZORKMCP_GAMES_DIR": str(tmp_path)}
    assert resolve_game_path(None, None, env=env) == tmp_path / "zork1.z3"


def test_game_file_path_wins_over_the_packaged_copy(tmp_path: Path) -> None:
    (tmp_path / "mine.z3").write_bytes(b"x")
    assert resolve_game_path(None, "mine.z3", env={}, settings_base=tmp_path) == tmp_path / "mine.z3"


def test_a_nul_byte_in_game_is_one_clear_error() -> None:
    with pytest.raises(GameError, match="the GAME environment variable contains a NUL byte"):
        resolve_game_path(None, None, env={"GAME": "zo\x00rk"})
    with pytest.raises(GameError, match=r"^--game contains a NUL byte; give a path or a name$"):
        resolve_game_path("a\x00b.z3", None, env={})


def test_game_flag_takes_a_name_as_the_game_variable_does(tmp_path: Path) -> None:
    (tmp_path / "zork2.z5").write_bytes(b"x")
    env = {"GAME": "zork2", "ZORKMCP_GAMES_DIR": str(tmp_path / "none")}
    assert resolve_game_path("zork1", None, env=env) == PACKAGED_GAME
    assert resolve_game_path("zork1.z3", None, env=env) == PACKAGED_GAME
    assert resolve_game_path("zork2", None, env={}, games_dirs=[tmp_path]) == tmp_path / "zork2.z5"
    with pytest.raises(GameError) as caught:
        resolve_game_path("zork9", None, env={}, games_dirs=[tmp_path], cli_source="eval.toml: game")
    assert str(caught.value) == (
        f"eval.toml: game zork9: no story file named zork9 (or zork9.z3, zork9.z5, …) in {tmp_path}. Put "
        "the file in one of those folders, or pass it with --game PATH (or --game zork1 with the file in "
        "a games folder), set GAME the same way, set game_file_path in [tool.zorkgpt.files] of "
        "pyproject.toml, or give none of these to play the packaged Zork I"
    )


@pytest.mark.parametrize("given", ["", "  "])
def test_an_empty_game_flag_is_an_error_not_the_packaged_game(given: str) -> None:
    with pytest.raises(GameError) as caught:
        resolve_game_path(given, None, env={})
    assert str(caught.value) == (
        "--game is empty: give a story file or a game name such as zork1, or leave it out to play the "
        "packaged Zork I"
    )
