"""``zorkmcp eval`` as a user who runs it for days gets it: a turn limit no record can hold, an eval
file that writes out ``arms = []``, arm names that no folder can have on Windows (where a run's
folder is copied), far more episodes at once than the machine's memory holds, and a resume that
keeps episodes another version of zorkmcp played. Each bad input is one line, exit 2 before
anything starts; the concurrency is lowered to what fits and said; the other version is said."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from play_support import offline_env, zork1_path

from zorkmcp import __version__
from zorkmcp import _cli_eval as cli_eval
from zorkmcp._cli_eval import build_plan
from zorkmcp.cli import build_parser, main
from zorkmcp.config import Settings
from zorkmcp.eval import load_eval_file


@pytest.fixture(autouse=True)
def _here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME"):
        monkeypatch.delenv(name, raising=False)


def _eval(*flags: str, text: str | None = None) -> int:
    """``zorkmcp eval`` of one short episode per seed, without tools (the offline scripted model)."""
    file = []
    if text is not None:
        Path("eval.toml").write_text(text, encoding="utf-8")
        file = ["eval.toml"]
    game = str(zork1_path())
    return main(["eval", *file, "--game", game, "--out", "run", "--episodes", "1", "--turns", "1", *flags])


def _written() -> list[str]:
    return sorted(str(p) for p in Path().rglob("*") if p.name != "eval.toml")


# -- a turn limit past what a record holds ----------------------------------------------------------


def test_a_turn_limit_past_a_million_stops_at_once(capsys: pytest.CaptureFixture[str]) -> None:
    # Before: the episode played (to the walkthrough's end) and its record said max_turns
    # 99999999999999999999, which is not an exact count: the summary left it out ("No episode has
    # finished: nothing to summarize"), exit 0, `zorkmcp report` read nothing, and every resume
    # played it again.
    game = str(zork1_path())
    with pytest.raises(SystemExit) as exited:
        main(["eval", "--game", game, "--out", "run", "--no-mcp", "--episodes", "1", "--turns", "9" * 20])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "zorkmcp eval: error: argument --turns: must be at most 1000000, as max_turns_per_episode, got "
        "'99999999999999999999'"
    )
    assert _eval(text="[eval]\nmax_turns = 9223372036854775807\n") == 2
    assert capsys.readouterr().err == (
        "zorkmcp eval: ConfigError: eval.toml: eval.max_turns must be <= 1000000, got 9223372036854775807 "
        "(fix the key in the eval file)\n"
    )
    assert _written() == []
    # a million is a limit, as in [tool.zorkgpt.orchestrator] max_turns_per_episode
    args = build_parser().parse_args(["eval", "--game", game, "--out", "run", "--turns", "1000000"])
    assert build_plan(args, Settings.load(None)).max_turns == 1_000_000
    Path("eval.toml").write_text("[eval]\nmax_turns = 1000000\n", encoding="utf-8")
    assert load_eval_file(Path("eval.toml")).eval.max_turns == 1_000_000


# -- arms = [] ----------------------------------------------------------------------------------------


def test_an_empty_array_of_arms_is_refused_rather_than_played_as_the_default_arm(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Before: `arms = []` played the one arm zorkmcp play would use ("mcp"), exit 0: a file that
    # says "no arm" (arms commented out one by one, a generator's empty list) ran a run nobody asked for.
    assert _eval("--quiet", text="arms = []\n\n[eval]\nepisodes = 1\n") == 2
    assert capsys.readouterr().err == (
        "zorkmcp eval: ConfigError: eval.toml: arms is empty (arms = []), so the file plays no arm; write "
        "one [[arms]] table per arm (name, model, …), or leave arms out for the one arm zorkmcp play would "
        "use (fix the key in the eval file)\n"
    )
    assert _written() == []
    # leaving arms out is the way to the default arm
    Path("eval.toml").write_text("[eval]\nepisodes = 1\n", encoding="utf-8")
    assert load_eval_file(Path("eval.toml")).arms == []


# -- arm names a folder cannot have -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "why"),
    [
        # Before: each was taken, and episodes/CON/ is a folder that a Windows checkout, zip or share
        # of the run cannot hold (CON is the console there, nul.txt the null device)
        ("CON", "must not be a device name of Windows"),
        ("nul.txt", "must not be a device name of Windows"),
        ("Lpt9", "must not be a device name of Windows"),
        ("com0.tar.gz", "must not be a device name of Windows"),
        ("aux", "must not be a device name of Windows"),
    ],
)
def test_an_arm_named_as_a_windows_device_is_refused(
    name: str, why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _eval("--quiet", text=f'[[arms]]\nname = "{name}"\nmcp = false\n') == 2
    assert capsys.readouterr().err == (
        f"zorkmcp eval: ConfigError: eval.toml: arms[0].name {why} (CON, PRN, AUX, NUL, COM0-9, LPT0-9, "
        f"with or without an extension), where no folder can have it, got '{name}' (fix the key in the "
        "eval file)\n"
    )
    assert _written() == []


def test_an_arm_name_ending_in_a_dot_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    # Before: taken; Windows drops the dot, so arms "v1." and "v1" were one folder there
    assert _eval("--quiet", text='[[arms]]\nname = "v1."\nmcp = false\n') == 2
    assert capsys.readouterr().err == (
        "zorkmcp eval: ConfigError: eval.toml: arms[0].name must not end with '.' (it names a folder, and "
        "Windows drops a trailing '.': it would be 'v1'), got 'v1.' (fix the key in the eval file)\n"
    )
    assert _written() == []


def test_a_name_too_long_for_a_folder_is_shown_cut_with_its_length(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Before: the 300 characters in full, in the middle of the line, burying the rule and the fix
    assert _eval("--quiet", text=f'[[arms]]\nname = "{"a" * 300}"\n') == 2
    assert capsys.readouterr().err == (
        "zorkmcp eval: ConfigError: eval.toml: arms[0].name must be 1-64 letters, digits, '.', '_' or '-' "
        f"(ASCII, the first a letter or digit: it names a folder), got '{'a' * 38}… (300 characters) (fix "
        "the key in the eval file)\n"
    )


def test_names_that_only_look_like_devices_are_taken() -> None:
    names = ["CONSOLE", "con_1", "LPT10", "nul-arm", "a.b", "v1.0", "COMx"]
    Path("eval.toml").write_text("".join(f'[[arms]]\nname = "{n}"\n' for n in names), encoding="utf-8")
    assert [arm.name for arm in load_eval_file(Path("eval.toml")).arms] == names


# -- more episodes at once than the memory holds --------------------------------------------------------


def test_a_concurrency_past_the_memory_is_lowered_to_what_fits_and_said(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: K was taken as it came; `--concurrency 100000` of 100000 episodes started 100000 at
    # once (some 20 GB before the first turn), and the OOM killer ended the run with its episodes.
    # The machine's free memory is the one thing set here: room for two episodes.
    per_episode = getattr(cli_eval, "MEMORY_PER_EPISODE", 8 << 20)
    monkeypatch.setattr(cli_eval, "memory_available", lambda: 2 * per_episode + 5, raising=False)
    assert _eval("--no-mcp", "--episodes", "3", "--concurrency", "100000") == 0
    out, err = capsys.readouterr()
    assert "seeds 12…14; up to 1 turn; 2 at once; writing run" in " ".join(out.split())
    assert err.splitlines()[0] == (
        "zorkmcp eval: --concurrency 100000 is more episodes at once than this machine's memory holds: 16 "
        "MiB is available, room for 2 at about 8 MiB each; the run plays 2 at once (the concurrency "
        "changes no episode's result); for more at once, free memory or play on a Ray cluster of several "
        "machines (--ray ADDRESS)"
    )
    assert sorted(p.name for p in Path("run/episodes/no-mcp").glob("seed-*.json")) == [
        "seed-12.json",
        "seed-13.json",
        "seed-14.json",
    ]
    # the eval file's key is named as the file has it
    assert _eval("--no-mcp", "--out", "run2", "--episodes", "3", text="[eval]\nconcurrency = 50\n") == 0
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith(
        "zorkmcp eval: eval.toml: eval.concurrency = 50 is more episodes at once than this machine's "
        "memory holds: 16 MiB is available, room for 2 at"
    )
    # within it, nothing is said
    assert _eval("--no-mcp", "--out", "run3", "--episodes", "2", "--concurrency", "100000") == 0
    assert "memory holds" not in capsys.readouterr().err


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/meminfo")
def test_the_memory_available_is_the_systems() -> None:
    total = next(
        int(line.split()[1]) * 1024
        for line in Path("/proc/meminfo").read_text(encoding="ascii").splitlines()
        if line.startswith("MemTotal:")
    )
    available = cli_eval.memory_available()
    assert available is not None
    assert 0 < available <= total
    assert cli_eval.at_once_bound(None) is None  # not known: not bounded
    assert cli_eval.at_once_bound(0) == 1  # one episode plays, whatever is left
    assert cli_eval.at_once_bound(10 * cli_eval.MEMORY_PER_EPISODE + 1) == 10


# -- a resume that keeps another version's episodes -----------------------------------------------------


def test_a_resume_that_keeps_another_versions_episodes_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    # Before: records of zorkmcp 0.0.9 and of this version went into one arm's mean without a word,
    # though the agent that played them (its prompt, how it reads answers) may differ.
    assert _eval("--no-mcp", "--episodes", "2", "--quiet") == 0
    for seed, version in ((12, "0.0.9"), (13, __version__)):
        path = Path(f"run/episodes/no-mcp/seed-{seed}.json")
        path.write_text(json.dumps({**json.loads(path.read_text()), "zorkmcp": version}), encoding="utf-8")
    capsys.readouterr()
    assert _eval("--no-mcp", "--episodes", "3", "--quiet", "--resume") == 0
    out, err = capsys.readouterr()
    assert err == (
        f"zorkmcp eval: --resume: 1 of the finished episodes the run keeps were played by another zorkmcp "
        f"than this one ({__version__}): 0.0.9 (1), such as {Path('run/episodes/no-mcp/seed-12.json')}; "
        "another version's agent may play otherwise, and an arm's mean would mix both: to compare like "
        "with like, stop (Ctrl-C) and pass a new --out\n"
    )
    assert "1 episode(s) played, 2 resumed" in out
    # a version that is not a string is no record zorkmcp wrote: that episode is played again
    path = Path("run/episodes/no-mcp/seed-12.json")
    path.write_text(json.dumps({**json.loads(path.read_text()), "zorkmcp": 9}), encoding="utf-8")
    assert _eval("--no-mcp", "--episodes", "3", "--quiet", "--retry-failed") == 0
    out, err = capsys.readouterr()
    assert (err, "1 episode(s) played, 2 resumed" in out) == ("", True)
    assert json.loads(path.read_text())["zorkmcp"] == __version__  # played again, by this version


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="Ray is not installed")
def test_a_ray_runtime_of_the_runs_own_is_bounded_by_a_worker_per_episode(tmp_path: Path) -> None:
    # Before: `--ray --concurrency 1000` asked Ray for 1000 tasks at once on this machine, each a
    # worker process of about 100 MB (40 at once took 3.7 GB): 100 GB before the first turn. The
    # run is a real process (Ray's runtime is its own); only its free memory is set: room for two.
    script = (
        "import sys; from zorkmcp import _cli_eval as c; "
        "c.memory_available = lambda: 2 * c.RAY_MEMORY_PER_EPISODE + 5; "
        "from zorkmcp.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    command = [
        sys.executable, "-c", script, "eval", "--ray", "--game", str(zork1_path()), "--no-mcp", "--episodes",
        "3", "--turns", "1", "--concurrency", "1000", "--out", "run", "--quiet",
    ]  # fmt: skip
    done = subprocess.run(  # real-time: Ray's runtime starts and stops on the real clock
        command, cwd=tmp_path, env=offline_env(), capture_output=True, text=True, timeout=180, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = " ".join(done.stdout.split())
    assert "seeds 12…14; up to 1 turn; 2 at once; on a Ray runtime of its own; writing run" in out
    assert "so 2 run at once" in out
    assert done.stderr.splitlines()[0] == (
        "zorkmcp eval: --concurrency 1000 is more episodes at once than this machine's memory holds: 256 "
        "MiB is available, room for 2 at about 128 MiB each, a Ray worker; the run plays 2 at once (the "
        "concurrency changes no episode's result); for more at once, free memory or join a Ray cluster "
        "(--ray ADDRESS)"
    )
