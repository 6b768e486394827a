"""The Jericho adapter (``ZorkGame``) on real Zork I, the Z-machine reader and action validation."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from servers.helpers import modules_loaded_by

import zorkmcp.game
from zorkmcp.errors import GameError
from zorkmcp.game import (
    MAX_ACTION_LENGTH,
    PACKAGED_GAME,
    PACKAGED_GAMES_DIR,
    ActionError,
    StepResult,
    ZorkGame,
    check_game_file,
    movement_direction,
    strip_status_line,
    validate_action,
    walkthrough,
)
from zorkmcp.game._zmachine import StoryMemory, check_story_bytes

ZORK1_Z3 = PACKAGED_GAME

# Seeds with which Jericho's Zork I walkthrough wins on the MIT zork1.z3 (found by trying 0-299:
# 12, 26, 32, 46, 54, 63, 102, 108, 114, 159, 187, 204, 207, 210, ...); seed 1 loses.
WINNING_SEEDS = (12, 26, 32)

# West of House → Kitchen (through the window) → Living Room → down the trap door into the dark.
TO_CELLAR = ["n", "e", "open window", "w", "w", "move rug", "open trap door", "d"]
# From the forest Zork reincarnates you in, back down into the cellar.
BACK_TO_CELLAR = ["e", "s", "e", "w", "w", "open trap door", "d"]


def zork1_path() -> Path:
    """The real Zork I (MIT release 119), packaged with zorkmcp."""
    return ZORK1_Z3


def supported_game_path() -> Path:
    """A story file Jericho supports natively (the classic zork1.z5), if one is available."""
    candidates = [os.environ.get("ZORKMCP_SUPPORTED_GAME", ""), str(PACKAGED_GAMES_DIR / "zork1.z5")]
    for candidate in candidates:
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    pytest.skip("no game that Jericho supports natively (set ZORKMCP_SUPPORTED_GAME to a zork1.z5)")


@pytest.fixture
def game() -> ZorkGame:
    return ZorkGame.open(zork1_path(), seed=12)


def test_package_exports_what_all_names() -> None:
    for name in zorkmcp.game.__all__:
        assert hasattr(zorkmcp.game, name), name
    assert {"ZorkGame", "StepResult", "GameState", "resolve_game_path", "walkthrough"} <= set(
        zorkmcp.game.__all__
    )


# -- the z3 at rest ---------------------------------------------------------------------------------


def test_z3_opens_at_west_of_house_with_state_from_the_z_machine(game: ZorkGame) -> None:
    assert not game.supported  # Jericho treats the MIT z3 as unsupported; the adapter fills in
    assert game.name == "zork1"
    assert game.max_score == 350
    assert (game.score, game.moves, game.location, game.inventory) == (0, 0, "West of House", [])
    assert game.intro.startswith("ZORK I: The Great Underground Empire")
    assert game.intro.endswith(
        "West of House\nYou are standing in an open field west of a white house, with a "
        "boarded front door.\nThere is a small mailbox here."
    )
    assert game.observation == game.intro
    assert not game.done
    assert not game.victory
    assert not game.died


def test_step_strips_the_status_line_and_reads_moves(game: ZorkGame) -> None:
    result = game.step("open mailbox")
    assert result == StepResult(
        observation="Opening the small mailbox reveals a leaflet.",
        score=0,
        moves=1,
        reward=0,
        location="West of House",
        done=False,
        victory=False,
        died=False,
    )
    result = game.step("north")
    assert result.observation.startswith("North of House\nYou are facing the north side of a white house.")
    assert "Score:" not in result.observation
    assert "Moves:" not in result.observation
    assert (result.location, result.moves) == ("North of House", 2)


def test_inventory_comes_from_the_object_tree(game: ZorkGame) -> None:
    game.step("open mailbox")
    game.step("take leaflet")
    assert game.inventory == ["leaflet"]
    for action in ["n", "e", "open window", "w", "take sack", "take bottle"]:
        game.step(action)
    # The game's own order: the latest taken first, as "inventory" lists them.
    assert game.inventory == ["glass bottle", "brown sack", "leaflet"]
    listing = game.step("inventory").observation
    for item in game.inventory:
        assert item in listing
    game.step("drop leaflet")
    assert game.inventory == ["glass bottle", "brown sack"]


def test_points_are_rewarded_when_gained(game: ZorkGame) -> None:
    for action in ["n", "e", "open window"]:
        assert game.step(action).reward == 0
    kitchen = game.step("w")  # entering the house is worth 10 points
    assert (kitchen.location, kitchen.score, kitchen.reward, kitchen.moves) == ("Kitchen", 10, 10, 4)
    assert game.step("look").reward == 0


def test_reset_starts_over_and_the_seed_makes_runs_reproducible() -> None:
    actions = walkthrough()[:120]
    with ZorkGame.open(zork1_path(), seed=7) as first, ZorkGame.open(zork1_path(), seed=7) as second:
        one = [first.step(a).observation for a in actions]
        two = [second.step(a).observation for a in actions]
        assert one == two
        assert first.reset() == first.intro
        assert (first.score, first.moves, first.location, first.inventory) == (0, 0, "West of House", [])
        assert [first.step(a).observation for a in actions] == one


def test_seed_zero_is_a_seed_not_the_default() -> None:
    # Jericho reads seed 0 as "no seed"; the adapter passes it through.
    actions = walkthrough()[:150]
    runs = []
    for seed in (0, 0, 12):
        with ZorkGame.open(zork1_path(), seed=seed) as game:
            runs.append([game.step(a).observation for a in actions])
    assert runs[0] == runs[1]
    assert runs[0] != runs[2]


@pytest.mark.parametrize("seed", [-1, 1.5, True, "12"])
def test_bad_seeds_are_refused(seed: object) -> None:
    with pytest.raises(GameError, match="seed must be a non-negative integer"):
        ZorkGame.open(zork1_path(), seed=seed)  # type: ignore[arg-type]


def test_two_games_in_one_process_are_independent() -> None:
    with ZorkGame.open(zork1_path(), seed=1) as one, ZorkGame.open(zork1_path(), seed=1) as two:
        one.step("n")
        assert (one.location, two.location) == ("North of House", "West of House")
        assert (one.moves, two.moves) == (1, 0)


def test_a_closed_game_says_so(game: ZorkGame) -> None:
    game.close()
    with pytest.raises(GameError, match="was closed"):
        game.step("look")


# -- winning and losing -----------------------------------------------------------------------------


@pytest.mark.parametrize("seed", WINNING_SEEDS)
def test_walkthrough_wins_350_of_350(seed: int) -> None:
    actions = walkthrough("zork1")
    assert len(actions) == 396
    with ZorkGame.open(zork1_path(), seed=seed) as game:
        results = [game.step(action) for action in actions]
        final = results[-1]
        assert (final.score, game.max_score) == (350, 350)
        assert final.done
        assert final.victory
        assert not final.died
        assert final.observation.startswith("Inside the Barrow")
        assert "Your score is 350 (total of 350 points)" in final.observation
        assert not any(r.done for r in results[:-1])
        assert sum(r.reward for r in results) == 350
        assert game.inventory == ["ancient map", "screwdriver", "brass lantern"]
        with pytest.raises(GameError, match=r"the game is over \(score 350, 394 moves\)"):
            game.step("look")


def test_walkthrough_with_an_unlucky_seed_does_not_win() -> None:
    with ZorkGame.open(zork1_path(), seed=1) as game:
        results = [game.step(action) for action in walkthrough()]
        assert results[-1].score < 350
        assert not any(r.victory or r.done for r in results)


def test_deaths_are_reported_and_the_third_ends_the_game(game: ZorkGame) -> None:
    for action in TO_CELLAR:
        game.step(action)
    assert (game.location, game.score) == ("Cellar", 35)
    deaths: list[StepResult] = []
    for _ in range(3):
        result = game.step("n")  # into the dark Troll Room: a grue (with seed 12, every time)
        assert result.died, result.observation
        assert "****  You have died  ****" in result.observation
        deaths.append(result)
        if not result.done:
            assert result.location == "Forest"  # Zork reincarnates you and the game goes on
            for action in BACK_TO_CELLAR:
                game.step(action)
    assert [d.done for d in deaths] == [False, False, True]
    assert [d.reward for d in deaths] == [-10, -10, -10]
    assert not any(d.victory for d in deaths)
    assert "(Type RESTART, RESTORE, or QUIT)" in deaths[-1].observation
    assert game.done
    assert not game.victory
    with pytest.raises(GameError, match="the game is over"):
        game.step("look")
    game.reset()
    assert not game.done
    assert game.step("look").location == "West of House"


def test_walkthrough_of_an_unknown_game_is_an_error() -> None:
    with pytest.raises(GameError, match="Jericho has no walkthrough for 'no-such-game'"):
        walkthrough("no-such-game")


# -- actions ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "message"),
    [
        ("", "action is empty"),
        ("   ", "action is empty"),
        ("x" * 10240, "action is 10240 characters long; the game reads at most 198"),
        ("look\nquit", r"action contains '\\n' at position 4: only printable ASCII"),
        ("look\x00", r"action contains '\\x00' at position 4"),
        ("\tlook", r"action contains '\\t' at position 0"),
        ("take café", "action contains 'é' at position 8"),
        # dumb-frotz would read these as interpreter commands and loop forever on an unknown one
        ("\\b", "action contains a backslash at position 0"),
        ("say \\help", "action contains a backslash at position 4"),
        ("save", "'save' is not available in this game session"),
        ("look. quit", "'quit' is not available"),
        ("RESTART", "'restart' is not available"),
        ("script", "'script' is not available"),
    ],
)
def test_bad_actions_are_refused_before_the_interpreter(game: ZorkGame, action: str, message: str) -> None:
    with pytest.raises(ActionError, match=message):
        game.step(action)
    assert game.moves == 0  # nothing reached the game


def test_non_string_actions_are_refused() -> None:
    with pytest.raises(ActionError, match="action must be a string, got int"):
        validate_action(5)


def test_blocked_commands_write_no_files(
    game: ZorkGame, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for action in ["save", "script"]:
        with pytest.raises(ActionError):
            game.step(action)
    assert list(tmp_path.iterdir()) == []


def test_validate_action_trims_spaces_and_allows_the_longest_line() -> None:
    assert validate_action("  open mailbox ") == "open mailbox"
    assert validate_action("x" * MAX_ACTION_LENGTH) == "x" * MAX_ACTION_LENGTH


@pytest.mark.parametrize(
    ("action", "direction"),
    [
        ("n", "north"),
        ("North", "north"),
        ("  go  north ", "north"),
        ("ne", "northeast"),
        ("SW", "southwest"),
        ("u", "up"),
        ("d", "down"),
        ("enter", "enter"),
        ("exit", "exit"),
        ("in", "in"),
        ("out", "out"),
        ("walk west", "west"),
        ("take lamp", None),
        ("north lamp", None),
        ("look", None),
    ],
)
def test_movement_direction(action: str, direction: str | None) -> None:
    assert movement_direction(action) == direction


def test_strip_status_line() -> None:
    raw = (
        "> West of House                                        Score: 0                Moves: 0   \n"
        "Opening the small mailbox reveals a leaflet.\n\n"
    )
    assert strip_status_line(raw) == "Opening the small mailbox reveals a leaflet."
    assert strip_status_line(" > Cellar         Score: -10      Moves: 12\n\nDark.\n") == "Dark."
    assert strip_status_line("Score: 5 is not a status line\n") == "Score: 5 is not a status line"


# -- bad files -------------------------------------------------------------------------------------


def test_missing_file_says_how_to_pass_one(tmp_path: Path) -> None:
    with pytest.raises(
        GameError, match=r"game file not found: .*nope\.z3\. Pass a Z-machine story file .*--game PATH"
    ):
        ZorkGame.open(tmp_path / "nope.z3")
    with pytest.raises(GameError, match=r"game file not found: .*nope\.z3\. Pass a Z-machine story file"):
        check_game_file(tmp_path / "nope.z3")
    check_game_file(zork1_path())  # a sound story: no error


def test_a_directory_is_not_a_game(tmp_path: Path) -> None:
    with pytest.raises(GameError, match=r"cannot read game file .*: Is a directory"):
        ZorkGame.open(tmp_path)


@pytest.mark.skipif(
    os.name != "posix" or os.geteuid() == 0, reason="root reads any file; needs a normal user"
)
def test_an_unreadable_file_is_named(tmp_path: Path) -> None:
    story = tmp_path / "zork1.z3"
    story.write_bytes(zork1_path().read_bytes())
    story.chmod(0)
    with pytest.raises(GameError, match=r"cannot read game file .*zork1\.z3: Permission denied"):
        ZorkGame.open(story)


@pytest.mark.parametrize(
    ("mangle", "message"),
    [
        (lambda data: b"", "is 0 bytes long, too short to be a Z-machine story file"),
        (
            lambda data: b"# not a game\n" * 20,
            "is not a Z-machine story file \\(its first byte, the version, is 35",
        ),
        (lambda data: data[:5000], "is truncated: the header says 86838 bytes, the file has 5000"),
        (
            lambda data: data[:40000] + bytes([data[40000] ^ 0xFF]) + data[40001:],
            "is corrupt: its checksum is",
        ),
    ],
)
def test_broken_story_files_never_reach_the_interpreter(tmp_path: Path, mangle: object, message: str) -> None:
    story = tmp_path / "broken.z3"
    story.write_bytes(mangle(zork1_path().read_bytes()))  # type: ignore[operator]
    with pytest.raises(GameError, match=message):
        ZorkGame.open(story)
    with pytest.raises(GameError, match=message):
        check_game_file(story)


def test_a_story_file_broken_after_it_was_played_is_refused(tmp_path: Path) -> None:
    """A story that passed once is not trusted by its name: the bytes read are checked again."""
    story = tmp_path / "zork1.z3"
    data = zork1_path().read_bytes()
    story.write_bytes(data)
    ZorkGame.open(story, seed=12).close()
    story.write_bytes(data[:40000] + bytes([data[40000] ^ 0xFF]) + data[40001:])
    with pytest.raises(GameError, match=r"zork1\.z3 is corrupt: its checksum is 0x"):
        ZorkGame.open(story, seed=12)
    story.write_bytes(data)
    with ZorkGame.open(story, seed=12) as game:
        assert game.score == 0


def test_an_unsupported_version_5_story_is_refused(tmp_path: Path) -> None:
    data = bytearray(zork1_path().read_bytes())
    data += bytes(-len(data) % 4)  # a consistent version 5 header: length in 4-byte units
    data[0] = 5
    data[0x1A:0x1C] = (len(data) // 4).to_bytes(2, "big")
    story = tmp_path / "other.z5"
    story.write_bytes(bytes(data))
    with pytest.raises(GameError, match="is a version 5 story that Jericho does not support"):
        ZorkGame.open(story)
    with pytest.raises(GameError, match="is a version 5 story that Jericho does not support"):
        check_game_file(story)


# -- the Z-machine reader --------------------------------------------------------------------------


def test_story_header_and_object_names() -> None:
    data = zork1_path().read_bytes()
    assert hashlib.md5(data, usedforsecurity=False).hexdigest() == "1d4606016ea58ee038da53d994392323"
    header = check_story_bytes(data, "zork1.z3")
    assert (header.version, header.release, header.serial, header.file_length) == (
        3,
        119,
        "880429",
        len(data),
    )
    memory = StoryMemory(data, data[: header.static_base])
    assert memory.object_count() == 250
    assert (memory.name(64), memory.name(44), memory.name(230)) == (
        "West of House",
        "cretin",
        "small mailbox",
    )
    assert memory.parent(230) == 64  # the mailbox stands West of House
    assert 230 in set(memory.children(64))


def test_story_memory_refuses_other_versions() -> None:
    data = bytearray(zork1_path().read_bytes())
    data[0] = 5
    with pytest.raises(ValueError, match="only versions 1-3 have a status line"):
        StoryMemory(bytes(data), b"")


# -- the classic z5 through Jericho's own API ------------------------------------------------------


def test_a_game_jericho_supports_uses_its_native_api() -> None:
    path = supported_game_path()
    with ZorkGame.open(path) as game:
        assert game.supported
        assert game.max_score is not None
        assert game.max_score > 0
        assert game.location != "Unknown"
        before = game.moves
        result = game.step("look")
        assert result.moves >= before
        assert "Score:" not in result.observation
        if game.name == "zork1":
            game.reset()
            results = [game.step(action) for action in walkthrough()]
            assert results[-1].victory
            assert results[-1].done
            assert results[-1].score == 350


def test_checking_a_version_3_story_does_not_import_jericho() -> None:
    # Checking a story is done where no game runs: zorkmcp play's own process (its game is a server
    # process), the driver of a Ray run. Jericho imports numpy (about 12 MB, and 55 ms of CPU), and
    # only a version 4+ story needs Jericho's list.
    statement = f"from zorkmcp.game import check_game_file; check_game_file({str(ZORK1_Z3)!r})"
    assert modules_loaded_by(statement, ("jericho", "numpy")) == []


_OUT_OF_FILES = """
import os, resource
from zorkmcp.errors import GameError
from zorkmcp.game import PACKAGED_GAME
from zorkmcp.game._jericho import ZorkGame

ZorkGame.open(PACKAGED_GAME, seed=12)  # every import done
resource.setrlimit(resource.RLIMIT_NOFILE, (128, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
held = []
try:
    while True:
        held.append(os.open(os.devnull, os.O_RDONLY))
except OSError:
    pass
os.close(held.pop())  # one descriptor free: Jericho's copy of its interpreter gets it, fopen does not
try:
    ZorkGame.open(PACKAGED_GAME, seed=12)
    print("opened")
except GameError as exc:
    print(f"GameError: {exc}")
"""


def test_a_game_opened_without_spare_file_descriptors_is_a_game_error_not_the_end_of_the_process() -> None:
    # Jericho's interpreter exits the whole process ("Fatal error: Cannot open story file") when its
    # own fopen of the story file fails: a zorkmcp eval out of open files ended without its summary.
    done = subprocess.run(
        [sys.executable, "-c", _OUT_OF_FILES], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stdout) == (
        0,
        "GameError: zork1.z3 cannot be opened: Too many open files (the interpreter needs a few file "
        "descriptors: allow more open files, ulimit -n, or run fewer episodes at once, --concurrency)\n",
    ), done.stderr


def test_a_story_path_that_is_not_utf8_is_a_game_error_that_says_what_to_do(tmp_path: Path) -> None:
    # Jericho encodes the path as UTF-8: the game server died of a UnicodeEncodeError traceback.
    story = tmp_path / os.fsdecode(b"bad\xffname.z3")
    story.write_bytes(zorkmcp.game.PACKAGED_GAME.read_bytes())
    with pytest.raises(GameError) as caught:
        check_game_file(story)
    assert str(caught.value) == (
        f"game file {tmp_path}/bad\\xffname.z3: its path is not valid UTF-8, which the interpreter (Jericho) "
        "needs; rename the file or its folder, or copy it to a path that is"
    )
