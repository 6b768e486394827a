"""``zorkmcp eval``'s command line and eval file as a demanding user gets them: a flag that erases
the difference between the file's arms (``--no-mcp`` on arms ``mcp`` and ``no-mcp``), a number of
episodes no run can hold (``--episodes 100000000``), and the keys of the file named one way in every
message (``eval.episodes``, ``arms[0].temperature``). Each bad input is one line naming the file, the
flag or the key and what to do, exit 2 before anything starts (no folder made)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest
from play_support import zork1_path

from zorkmcp._cli_eval import arm_lines, build_plan
from zorkmcp.cli import build_parser, main
from zorkmcp.config import Settings
from zorkmcp.errors import ConfigError


@pytest.fixture(autouse=True)
def _here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME"):
        monkeypatch.delenv(name, raising=False)


def _eval(text: str | None, capsys: pytest.CaptureFixture[str], *flags: str) -> tuple[int, str]:
    file = []
    if text is not None:
        Path("eval.toml").write_text(text, encoding="utf-8")
        file = ["eval.toml"]
    code = main(["eval", *file, "--game", str(zork1_path()), "--out", "run", "--quiet", *flags])
    return code, capsys.readouterr().err


MCP_AND_NO_MCP = '[[arms]]\nname = "mcp"\nmcp = true\n\n[[arms]]\nname = "no-mcp"\nmcp = false\n'


# -- a flag that makes the file's arms one ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "flags", "message"),
    [
        (  # Before: both arms played without tools, and the summary compared them: 0.00, "cannot tell"
            MCP_AND_NO_MCP,
            ["--no-mcp"],
            "eval.toml: --no-mcp turns the tools off for every arm, and arms mcp (mcp = true) and no-mcp "
            "(mcp = false) differ only in mcp, so they would play the same and comparing them would say "
            "nothing; leave --no-mcp out to compare them, or keep one of the two in the file (nothing was "
            "played)",
        ),
        (  # an arm that leaves mcp to the settings (on, here) is the same as mcp = true
            '[[arms]]\nname = "tools"\n\n[[arms]]\nname = "plain"\nmcp = false\n',
            ["--no-mcp"],
            "eval.toml: --no-mcp turns the tools off for every arm, and arms tools (mcp not set) and plain "
            "(mcp = false) differ only in mcp, so they would play the same and comparing them would say "
            "nothing; leave --no-mcp out to compare them, or keep one of the two in the file (nothing was "
            "played)",
        ),
        (  # the first two arms alike: a and c
            '[[arms]]\nname = "a"\nmodel = "x/one"\n[[arms]]\nname = "b"\nmodel = "x/two"\n'
            'temperature = 0.2\n[[arms]]\nname = "c"\nmodel = "x/two"\n',
            ["--model", "q/r"],
            'eval.toml: --model sets the model (q/r) for every arm, and arms a (model = "x/one") and c '
            '(model = "x/two") differ only in model, so they would play the same and comparing them would '
            "say nothing; leave --model out to compare them, or keep one of the two in the file (nothing "
            "was played)",
        ),
        (
            '[[arms]]\nname = "a"\nbase_url = "http://127.0.0.1:8000/v1"\n[[arms]]\nname = "b"\n'
            'base_url = "http://127.0.0.1:8001/v1"\nmodel = "m"\n',
            ["--base-url", "http://127.0.0.1:9000/v1", "--model", "m"],
            "eval.toml: --model sets the model (m) and --base-url sets the endpoint "
            "(http://127.0.0.1:9000/v1) for every arm, and arms a (model not set, base_url = "
            '"http://127.0.0.1:8000/v1") and b (model = "m", base_url = "http://127.0.0.1:8001/v1") differ '
            "only in model and base_url, so they would play the same and comparing them would say nothing; "
            "leave --model and --base-url out to compare them, or keep one of the two in the file (nothing "
            "was played)",
        ),
    ],
)
def test_a_flag_that_makes_the_files_arms_play_the_same_stops_the_run(
    text: str, flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # --episodes 1 --turns 1: the old code played them
    assert _eval(text, capsys, "--episodes", "1", "--turns", "1", *flags) == (
        2,
        f"zorkmcp eval: ConfigError: {message}\n",
    )
    assert sorted(p.name for p in Path().iterdir()) == ["eval.toml"]  # nothing was made


@pytest.mark.parametrize(
    ("text", "flags", "tools"),
    [
        # the arms still differ in their models: a comparison of models, without tools
        (
            '[[arms]]\nname = "a"\nmcp = true\nmodel = "x/one"\n'
            '[[arms]]\nname = "b"\nmcp = false\nmodel = "x/two"\n',
            ["--no-mcp"],
            [False, False],
        ),
        # alike in the file already: a run to see the spread (A/A), the user's to play
        (
            '[[arms]]\nname = "a"\nmcp = false\n[[arms]]\nname = "b"\nmcp = false\n',
            ["--no-mcp"],
            [False, False],
        ),
        # --model on arms that differ in tools
        (MCP_AND_NO_MCP, ["--model", "q/r"], [True, False]),
        # one arm: nothing to compare
        ('[[arms]]\nname = "a"\nmcp = true\n', ["--no-mcp"], [False]),
    ],
)
def test_flags_that_leave_the_arms_apart_are_taken(text: str, flags: list[str], tools: list[bool]) -> None:
    Path("eval.toml").write_text(text, encoding="utf-8")
    args = build_parser().parse_args(
        ["eval", "eval.toml", "--game", str(zork1_path()), "--out", "run", *flags]
    )
    plan = build_plan(args, Settings.load(None))
    assert [arm.settings_for(plan.settings).mcp.enabled for arm in plan.arms] == tools


# -- as many episodes as a run can hold ---------------------------------------------------------------


def _plan(*flags: str) -> None:
    args = build_parser().parse_args(["eval", *flags, "--game", str(zork1_path()), "--out", "run"])
    build_plan(args, Settings.load(None))


def test_more_episodes_than_a_run_holds_stop_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    # Before: 5 GB of episode specs in a minute, and still nothing shown beyond the settings
    with pytest.raises(ConfigError) as refused:
        _plan("--episodes", "100000000")
    assert str(refused.value) == (
        "--episodes is 100000000, more than one run plays per arm (at most 1000000: each episode is two "
        "files in episodes/<arm>/, and the summary reads every record back); pass fewer, or play the "
        "seeds in several runs (each with its --seed and --out)"
    )
    Path("eval.toml").write_text("[eval]\nepisodes = 1000001\n")
    with pytest.raises(ConfigError) as refused:
        _plan("eval.toml")
    assert str(refused.value) == (
        "eval.toml: eval.episodes is 1000001, more than one run plays per arm (at most 1000000: each "
        "episode is two files in episodes/<arm>/, and the summary reads every record back); give fewer, "
        "or play the seeds in several runs (each with its --seed and --out)"
    )
    _plan("eval.toml", "--episodes", "1000000")  # as many as a run holds
    assert sorted(p.name for p in Path().iterdir()) == ["eval.toml"]
    # on the command line: the one line, exit 2
    assert _eval("[eval]\nepisodes = 1000001\n", capsys) == (
        2,
        f"zorkmcp eval: ConfigError: {refused.value}\n",
    )


def test_a_plan_of_a_million_episodes_lists_them_as_they_are_asked_for() -> None:
    # Before: each plan.specs() made every spec (3.5 s and 200 MB a million), and the run asked for
    # them four times before an episode started, once more only to print each arm's model.
    args = build_parser().parse_args(
        ["eval", "--compare-mcp", "--episodes", "1000000", "--game", str(zork1_path()), "--out", "run"]
    )
    plan = build_plan(args, Settings.load(None))
    tracemalloc.start()
    try:
        specs = plan.specs()
        lines = arm_lines(plan)
        last, first = specs[-1], next(reversed(specs))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20_000_000, peak  # a list of them: 400 MB
    assert len(specs) == 2_000_000
    assert [(s.arm, s.seed) for s in specs[:3]] == [("mcp", 12), ("no-mcp", 12), ("mcp", 13)]
    assert (last.arm, last.seed) == (first.arm, first.seed) == ("no-mcp", 1000011)
    assert (specs[1_999_998].arm, specs[1_999_998].seed) == ("mcp", 1000011)
    assert [(s.arm, s.seed) for s in specs[-4::2]] == [("mcp", 1000010), ("mcp", 1000011)]
    assert [line.split()[0] for line in lines[:2]] == ["[bold]mcp", "[bold]no-mcp[/]"]
    assert specs[0].settings is specs[2].settings  # an arm's episodes share one settings object
    with pytest.raises(IndexError):
        specs[2_000_000]


def test_seeds_past_the_interpreters_int_name_the_keys_of_the_file(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Before: "pass a lower --seed or fewer --episodes", flags the user had not given
    assert _eval("[eval]\nseed = 2147483647\nepisodes = 2\n", capsys) == (
        2,
        "zorkmcp eval: ConfigError: eval.toml: seeds 2147483647…2147483648 (eval.seed 2147483647, "
        "eval.episodes 2): the last is past 2147483647 (2**31 - 1), the largest game seed; give a lower "
        "eval.seed or fewer eval.episodes\n",
    )
    assert _eval("[eval]\nseed = 2147483647\n", capsys, "--episodes", "3") == (
        2,
        "zorkmcp eval: ConfigError: eval.toml: seeds 2147483647…2147483649 (eval.seed 2147483647, "
        "--episodes 3): the last is past 2147483647 (2**31 - 1), the largest game seed; give a lower "
        "eval.seed or fewer --episodes\n",
    )


# -- a key of the file is named one way --------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # Before: "eval episodes must be >= 1" beside "eval.episodes must be an integer"
        ("[eval]\nepisodes = 0\n", "eval.episodes must be >= 1, got 0 (fix the key in the eval file)"),
        (
            '[eval]\nepisodes = "3"\n',
            "eval.episodes must be an integer, got '3' (string) (fix the key in the eval file)",
        ),
        (  # Before: "got True", Python's spelling of TOML's true
            "[eval]\nconcurrency = true\n",
            "eval.concurrency must be an integer, got True (boolean) (fix the key in the eval file)",
        ),
        ("[eval]\nmax_turns = -1\n", "eval.max_turns must be >= 1, got -1 (fix the key in the eval file)"),
        (
            "[eval]\nseed = -1\n",
            "eval.seed must be from 0 to 2147483647 (2**31 - 1), got -1 (fix the key in the eval file)",
        ),
        (
            '[eval]\nout = " "\n',
            "eval.out is empty: give the run's folder, or leave it out for runs/<timestamp> (fix the key "
            "in the eval file)",
        ),
        (
            '[[arms]]\nname = "a"\ntemperature = 3\n',
            "arms[0].temperature must be <= 2, got 3.0 (fix the key in the eval file)",
        ),
        (
            '[[arms]]\nname = "a"\nmodel = " "\n',
            "arms[0].model is blank: give the model's name, or leave the key out (fix the key in the eval "
            "file)",
        ),
        (
            '[[arms]]\nname = "../x"\n',
            "arms[0].name must be 1-64 letters, digits, '.', '_' or '-' (ASCII, the first a letter or digit: "
            "it names a folder), got '../x' (fix the key in the eval file)",
        ),
        (  # Before: "1-64 letters, …, got 'é'": é is a letter
            '[[arms]]\nname = "\u00e9t\u00e9"\n',
            "arms[0].name must be 1-64 letters, digits, '.', '_' or '-' (ASCII, the first a letter or digit: "
            "it names a folder), got '\u00e9t\u00e9' (fix the key in the eval file)",
        ),
        ("[[arms]]\nmcp = true\n", "arms[0].name is required (fix the key in the eval file)"),
        (  # Before: "arms.name 'a' is used by more than one arm": which ones?
            '[[arms]]\nname = "a"\n[[arms]]\nname = "b"\n[[arms]]\nname = "a"\n',
            "arms[0].name and arms[2].name are both 'a'; each arm names a folder of the run, so names must "
            "differ (fix the key in the eval file)",
        ),
        (
            '[[arms]]\nname = "tools"\n[[arms]]\nname = "Tools"\n',
            "arms[0].name 'tools' and arms[1].name 'Tools' differ only in case, and each names a folder of "
            "the run; names must differ in more than case (fix the key in the eval file)",
        ),
    ],
)
def test_a_key_of_the_eval_file_is_named_by_its_table_and_key(
    text: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _eval(text, capsys) == (2, f"zorkmcp eval: ConfigError: eval.toml: {message}\n")


def test_a_path_of_the_eval_file_is_named_by_its_table_and_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("eval.toml").write_text('[eval]\ngame = "nosuch"\n')
    assert main(["eval", "eval.toml", "--quiet"]) == 2
    assert capsys.readouterr().err.startswith(
        "zorkmcp eval: GameError: eval.toml: eval.game nosuch: no story file named nosuch (or nosuch.z3, "
    )
    assert _eval('[[arms]]\nname = "a"\nmcp_config = "nosuch.json"\n', capsys) == (
        2,
        f"zorkmcp eval: ConfigError: {tmp_path / 'nosuch.json'} (arm a, from eval.toml: arms[0].mcp_config): "
        "no such file; create it (examples/ has templates), point the arm's mcp_config at another, or set "
        "mcp = false for the arm\n",
    )
    Path("afile").write_text("")
    Path("eval.toml").write_text('[eval]\nout = "afile/run"\n')
    assert main(["eval", "eval.toml", "--game", str(zork1_path()), "--quiet"]) == 2
    assert capsys.readouterr().err == (
        "zorkmcp eval: ConfigError: eval.toml: eval.out: "
        f"{tmp_path / 'afile'} is not a folder, so the run's folder afile/run cannot be made "
        "there; pass another --out\n"
    )
