"""What an eval record says of the model's answers: turns that played the agent's fallback action
(the final answer did not parse, or the turn's deadline passed), and the requests and tokens of
every turn, the one an error ended too. Real Zork, the real loopback model, the runner and the
command; records without these counts (an older zorkmcp's) still load, as unknown."""

from __future__ import annotations

import csv
import json
from functools import partial
from typing import TYPE_CHECKING, Any

import attrs
import eval_support
import pytest
import trio
from eval_support import inprocess_game
from llm_server import agent_reply, content_reply, server_error
from play_support import zork1_path
from report_data import write_run

from zorkmcp.cli import main
from zorkmcp.config import Settings
from zorkmcp.eval import (
    EpisodeSpec,
    episode_paths,
    play_episodes,
    read_episode,
    render_eval_report,
    summarize,
)
from zorkmcp.eval._runner import write_run_summary

if TYPE_CHECKING:
    from pathlib import Path

    from llm_server import LLMServer


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def autojump_clock() -> trio.testing.MockClock:
    """Virtual time that jumps once every task has been blocked for 50 ms of real time.

    Not zero: the in-process game answers from a worker thread, and a zero threshold jumps the clock
    while it does (tried: the first test's episode then ended at the abandoned reply's 10 s, not at
    its turn deadline's 5 s). Every duration asserted is still exact on this clock.
    """
    return trio.testing.MockClock(autojump_threshold=0.05)


def _spec(seed: int, base_url: str, turns: int, *, turn_deadline: float | None = None) -> EpisodeSpec:
    eval_support.prebuild(seed)
    settings = Settings()
    if turn_deadline is not None:
        settings = attrs.evolve(settings, mcp=attrs.evolve(settings.mcp, turn_timeout_seconds=turn_deadline))
    return EpisodeSpec(
        arm="a",
        seed=seed,
        max_turns=turns,
        game_path=zork1_path(),
        settings=settings,
        model="test-model",
        base_url=base_url,
        game_server=inprocess_game(seed),
    )


async def test_turns_that_played_the_fallback_action_are_counted_in_the_record_summary_csv_and_page(
    llm_server: LLMServer, autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    llm_server.script(
        agent_reply("open mailbox"),  # turn 1: the model's own answer
        content_reply("I would open the mailbox."),  # turn 2: prose, no JSON object
        agent_reply("north", delay=10.0),  # turn 3: the answer comes after the 5 s turn deadline
        content_reply('{"thinking": "no action"}'),  # turn 4: JSON without an action
    )
    done: list[dict[str, Any]] = []
    start = trio.current_time()
    await play_episodes(
        [_spec(1, llm_server.base_url, turns=4, turn_deadline=5.0)],
        tmp_path,
        concurrency=1,
        on_done=done.append,
    )
    assert trio.current_time() - start == pytest.approx(5.0)  # only turn 3 waited: its whole deadline
    (record,) = done
    assert (record.get("error"), record["turns"]) == (None, 4)
    assert (record["parse_errors"], record["deadlines"]) == (2, 1)
    # the unanswered request of turn 3 is not counted: 3 answers of 11 + 7 tokens each
    assert (record["llm_requests"], record["prompt_tokens"], record["completion_tokens"]) == (3, 33, 21)
    assert read_episode(episode_paths(tmp_path, "a", 1)[0]) == record

    summary = write_run_summary(tmp_path, [record])
    arm = summary["arms"]["a"]
    assert (arm["parse_errors"], arm["parse_error_rate"], arm["deadlines"], arm["deadline_rate"]) == (
        2,
        0.5,
        1,
        0.25,
    )
    assert json.loads((tmp_path / "summary.json").read_text())["arms"]["a"]["parse_error_rate"] == 0.5
    with (tmp_path / "summary.csv").open(newline="") as f:
        (row,) = csv.DictReader(f)
    assert (row["parse_errors"], row["deadlines"], row["llm_requests"]) == ("2", "1", "3")
    page = (tmp_path / "report.html").read_text()
    assert "<th>answers not parsed / deadlines</th>" in page
    assert "<td class=n>2 (50%) / 1 (25%)</td>" in page
    assert (
        "<p class=warn>a: on 2 (50%) of its turns the model's final answer did not parse; on 1 (25%) the "
        "turn deadline passed. On those turns the agent played its fallback action, not the model's"
    ) in page


async def test_the_requests_and_tokens_of_the_turn_an_error_ended_are_counted(
    llm_server: LLMServer, autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    llm_server.script(
        agent_reply("open mailbox"),  # turn 1: 11 + 7 tokens
        content_reply("", usage={"prompt_tokens": 100, "completion_tokens": 3}),  # turn 2: no content...
        server_error(400, "context length exceeded"),  # ... and its forced final call is refused
    )
    done: list[dict[str, Any]] = []
    await play_episodes(
        [_spec(1, llm_server.base_url, turns=3)], tmp_path, concurrency=1, on_done=done.append
    )
    (record,) = done
    assert "context length exceeded" in record["error"]
    assert [r.outcome for r in llm_server.requests] == ["answered"] * 3
    assert record["turns"] == 1
    assert (record["llm_requests"], record["prompt_tokens"], record["completion_tokens"]) == (2, 111, 10)
    assert (record["parse_errors"], record["deadlines"]) == (0, 0)
    arm = summarize([record])["arms"]["a"]
    assert (arm["llm_requests"], arm["prompt_tokens"], arm["completion_tokens"]) == (2, 111, 10)


def _eval(tmp_path: Path, *args: str) -> int:
    return main(["eval", "--game", str(zork1_path()), "--out", str(tmp_path / "run"), *args])


async def test_the_command_says_when_an_arms_model_mostly_failed_to_answer(
    llm_server: LLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A model that answers in prose, never with the JSON object asked for: every turn plays the fallback.
    monkeypatch.chdir(tmp_path)
    prose = "I would go north, then open the mailbox."
    llm_server.script(server_error(404, "no models route"), *[content_reply(prose) for _ in range(4)])
    flags = ("--no-mcp", "--model", "m", "--base-url", llm_server.base_url, "--episodes", "2", "--turns", "2")
    code = await trio.to_thread.run_sync(partial(_eval, tmp_path, *flags))
    out, _ = capsys.readouterr()
    assert code == 0, out
    run = tmp_path / "run"
    lines = out.splitlines()
    assert (
        sum(line.startswith("arm=no-mcp seed=") and line.endswith(" parse_errors=2") for line in lines) == 2
    )
    assert (
        "no-mcp: 4 turn(s) (100%) played the fallback action: the model's final answer did not parse" in lines
    )
    arm = json.loads((run / "summary.json").read_text())["arms"]["no-mcp"]
    assert (arm["failed"], arm["parse_errors"], arm["parse_error_rate"], arm["deadlines"]) == (0, 4, 1.0, 0)
    with (run / "summary.csv").open(newline="") as f:
        assert [(r["seed"], r["parse_errors"], r["deadlines"]) for r in csv.DictReader(f)] == [
            ("12", "2", "0"),
            ("13", "2", "0"),
        ]
    page = (run / "report.html").read_text()
    assert "<td class=n>4 (100%) / 0 (0%)</td>" in page
    assert "<p class=warn>no-mcp: on 4 (100%) of its turns the model's final answer did not parse." in page


def test_records_without_the_counts_load_and_count_as_unknown_not_as_zero(tmp_path: Path) -> None:
    records = write_run(tmp_path, seeds=2, failed=False)  # records as an older zorkmcp wrote them
    path = tmp_path / "episodes" / "mcp" / "seed-1.json"
    assert "parse_errors" not in records[0]
    assert read_episode(path) == records[0]  # kept by --resume
    newer = {**records[0], "turns": 40, "parse_errors": 4, "deadlines": 0}  # one record of this zorkmcp
    path.write_text(json.dumps(newer))
    summary = summarize([newer, *records[1:]])
    mcp, no_mcp = summary["arms"]["mcp"], summary["arms"]["no-mcp"]
    assert (mcp["parse_errors"], mcp["parse_error_rate"], mcp["deadlines"], mcp["deadline_rate"]) == (
        4,
        0.1,  # over the turns of the record that counts them (40), not over the arm's
        0,
        0.0,
    )
    assert (no_mcp["parse_errors"], no_mcp["parse_error_rate"], no_mcp["deadlines"]) == (None, None, None)
    page = render_eval_report(tmp_path).read_text()
    assert "<td class=n>4 (10%) / 0 (0%)</td>" in page
    assert "<td class=n>– / –</td>" in page
    assert "<p class=warn>mcp: on 4 (10%) of its turns the model's final answer did not parse." in page
    assert "no-mcp: on" not in page


@pytest.mark.parametrize(
    ("key", "value", "why"),
    [
        ("parse_errors", -1, "parse_errors is -1, not a count (an integer >= 0)"),
        ("deadlines", "2", 'deadlines is "2", not a count (an integer >= 0)'),
    ],
)
def test_a_record_whose_counts_are_not_counts_is_played_again(
    tmp_path: Path, key: str, value: Any, why: str
) -> None:
    from zorkmcp.eval._results import read_episode_file

    records = write_run(tmp_path, seeds=1, failed=False)
    path = tmp_path / "episodes" / "mcp" / "seed-1.json"
    path.write_text(json.dumps({**records[0], key: value}))
    assert read_episode_file(path) == (None, why)
    assert read_episode(path) is None
