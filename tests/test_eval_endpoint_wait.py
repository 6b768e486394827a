"""``zorkmcp eval`` and a model endpoint that takes requests and does not answer them.

Before, the start-up check let such an endpoint through (a read timeout counted as "connected, and
slow"), and each episode then waited 6 × 120 s for its model, with nothing printed meanwhile when
stdout is not a terminal. Real servers on 127.0.0.1 (trio sockets), virtual time.
"""

from __future__ import annotations

import csv
import json
from functools import partial
from io import StringIO
from typing import TYPE_CHECKING, Any

import pytest
import trio
from eval_support import episode_records
from llm_server import agent_reply, server_error
from play_support import zork1_path
from rich.console import Console

from zorkmcp.cli import main
from zorkmcp.config import Settings
from zorkmcp.eval import ArmSpec, EvalPlan
from zorkmcp.eval._reach import PROBE_SECONDS

if TYPE_CHECKING:
    from pathlib import Path

    from llm_server import LLMServer


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)


async def _silent(stream: trio.SocketStream) -> None:  # takes the request, never answers
    async with stream:
        await stream.receive_some()
        await trio.sleep_forever()


async def _answers_after(seconds: float, stream: trio.SocketStream) -> None:  # a model still loading
    async with stream:
        await stream.receive_some()
        await trio.sleep(seconds)  # virtual: the tests run on autojump_clock
        await stream.send_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")


async def _serve(nursery: trio.Nursery, handler: Any) -> str:
    listeners = await nursery.start(partial(trio.serve_tcp, handler, 0, host="127.0.0.1"))
    return f"http://127.0.0.1:{listeners[0].socket.getsockname()[1]}/v1"


async def test_an_endpoint_that_takes_the_request_and_never_answers_stops_the_run_after_a_requests_wait(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    from zorkmcp.eval._reach import _Endpoint, _unanswered

    url = await _serve(nursery, _silent)
    told: list[tuple[float, str]] = []
    start = trio.current_time()
    endpoint = _Endpoint(url=url, arms=("a", "b"), wait=120.0, attempts=6)
    failed = await _unanswered([endpoint], lambda line: told.append((trio.current_time() - start, line)))
    assert trio.current_time() - start == pytest.approx(120.0)  # as long as one request of the run waits
    assert [(round(at), line) for at, line in told] == [
        (
            10,
            f"the model endpoint {url} of arm(s) a, b took the request (GET {url}/models) and has not "
            "answered in 10 s; the run waits up to 120 s for it, as long as each of its requests waits "
            "(timeout_seconds in [tool.zorkgpt.retry]): a model still loading may answer yet, else the run "
            "stops",
        )
    ]
    assert failed == {
        endpoint: (
            f"took the request (GET {url}/models) and sent no answer in 120 s, as long as each request of "
            "the run waits (timeout_seconds in [tool.zorkgpt.retry]): every episode would wait 6 × 120 s "
            "for its model, and fail",
            "check that it is the model server (something there holds connections open without "
            "answering), or pass the right --base-url (or base_url in [[arms]], agent_base_url in "
            "[tool.zorkgpt.llm], or OPENAI_BASE_URL); a model that takes longer to load needs a higher "
            "timeout_seconds",
        )
    }


async def test_an_endpoint_that_answers_after_30_s_lets_the_run_start_and_says_so(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    from zorkmcp.eval._reach import _Endpoint, _unanswered

    # a local model server that loads its model on the first request: legitimate
    url = await _serve(nursery, partial(_answers_after, 30.0))
    told: list[tuple[float, str]] = []
    start = trio.current_time()
    endpoint = _Endpoint(url=url, arms=("local",), wait=120.0, attempts=6)
    failed = await _unanswered([endpoint], lambda line: told.append((trio.current_time() - start, line)))
    assert failed == {}
    assert trio.current_time() - start == pytest.approx(30.0)
    assert [round(at) for at, _ in told] == [10, 30]
    assert told[1][1] == f"the model endpoint {url} of arm(s) local answered after 30 s; the run starts"


async def test_an_endpoint_that_answers_within_the_probe_is_not_told_about(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    from zorkmcp.eval._reach import _Endpoint, _unanswered

    url = await _serve(nursery, partial(_answers_after, PROBE_SECONDS - 1))
    told: list[str] = []
    endpoint = _Endpoint(url=url, arms=("a",), wait=120.0, attempts=6)
    assert await _unanswered([endpoint], told.append) == {}
    assert told == []


def _plan(tmp_path: Path, *arms: ArmSpec) -> EvalPlan:
    return EvalPlan(
        arms=arms, episodes=3, seed=12, max_turns=5, concurrency=2, game_path=zork1_path(),
        out=tmp_path / "run", settings=Settings(),
    )  # fmt: skip


def _retry(n: int, error: str) -> dict[str, Any]:  # an llm_retry event's fields, as the client emits them
    return {"retry": n, "max_retries": 5, "delay": 1.0, "kind": "transport", "status": None, "error": error}


def test_retries_are_told_on_stderr_once_per_endpoint_then_at_most_once_a_minute(tmp_path: Path) -> None:
    from zorkmcp._cli_eval import RETRY_LINE_SECONDS, LiveProgress

    slow = "http://127.0.0.1:9/v1"
    plan = _plan(
        tmp_path,
        ArmSpec(name="a", model="m", base_url=slow),
        ArmSpec(name="b", model="m", base_url=slow),
        ArmSpec(name="c", model="m", base_url="http://127.0.0.1:8/v1"),
    )
    specs = {(spec.arm, spec.seed): spec for spec in plan.specs()}
    err = StringIO()
    now = [100.0]
    progress = LiveProgress(
        Console(file=StringIO()),
        plan,
        quiet=False,
        err=Console(file=err, width=300, color_system=None),
        clock=lambda: now[0],
    )
    timeout = f"LLMTransportError: POST {slow}/chat/completions: no whole answer within 120s"
    progress.retried(specs["a", 12], _retry(1, timeout))
    progress.retried(specs["b", 12], _retry(1, timeout))  # the same endpoint, within the minute
    progress.retried(specs["c", 13], _retry(1, "LLMHTTPError: 429"))  # another endpoint: told at once
    now[0] += RETRY_LINE_SECONDS - 1
    progress.retried(specs["a", 13], _retry(2, timeout))
    now[0] += 1
    progress.retried(specs["a", 12], _retry(3, "LLMHTTPError: POST …: HTTP 503 \x1b[31mbusy"))
    assert err.getvalue().splitlines() == [
        f"zorkmcp eval: a model request to {slow} (arm a) failed and is retried (retry 1/5, a seed 12): "
        f"{timeout}",
        "zorkmcp eval: a model request to http://127.0.0.1:8/v1 (arm c) failed and is retried (retry 1/5, c "
        "seed 13): LLMHTTPError: 429",
        f"zorkmcp eval: 3 more retries of model requests to {slow} (arms a, b); the latest (retry 3/5, a "
        r"seed 12): LLMHTTPError: POST …: HTTP 503 \x1b[31mbusy",
    ]


def test_retries_are_not_told_without_an_err_console(tmp_path: Path) -> None:
    from zorkmcp._cli_eval import LiveProgress

    plan = _plan(tmp_path, ArmSpec(name="a", model="m", base_url="http://127.0.0.1:9/v1"))
    progress = LiveProgress(Console(file=StringIO()), plan, quiet=False)
    progress.retried(plan.specs()[0], _retry(1, "LLMHTTPError: 500"))
    assert progress.retries == {}


async def test_a_run_whose_model_requests_are_retried_says_so_on_stderr_with_stdout_not_a_terminal(
    llm_server: LLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.zorkgpt.retry]\ninitial_delay = 0\nmax_delay = 0\n")
    llm_server.script(agent_reply("look"), server_error(503, "busy"), agent_reply("look"))  # the probe: any
    flags = [
        "eval", "--game", str(zork1_path()), "--out", str(tmp_path / "run"), "--no-mcp", "--model", "m",
        "--base-url", llm_server.base_url, "--episodes", "1", "--turns", "1",
    ]  # fmt: skip
    code = await trio.to_thread.run_sync(partial(main, flags))
    out, err = capsys.readouterr()
    assert code == 0, err
    assert [(r["turns"], r["llm_retries"]) for r in episode_records(tmp_path / "run").values()] == [(1, 1)]
    assert (
        f"zorkmcp eval: a model request to {llm_server.base_url} (arm no-mcp) failed and is retried (retry "
        f"1/5, no-mcp seed 12): POST {llm_server.base_url}/chat/completions answered HTTP 503 Service "
        "Unavailable: busy"
    ) in " ".join(err.split())
    arm = json.loads((tmp_path / "run" / "summary.json").read_text())["arms"]["no-mcp"]
    assert (arm["episodes"], arm["llm_retries"]) == (1, 1)
    with (tmp_path / "run" / "summary.csv").open(encoding="utf-8", newline="") as f:
        assert [row["llm_retries"] for row in csv.DictReader(f)] == ["1"]
    assert "arm=no-mcp seed=12" in out
