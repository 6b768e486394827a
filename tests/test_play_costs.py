"""What an episode of ``zorkmcp play`` cost in model use: its summary (the terminal table,
``--summary-json``, ``episode_complete``) counts the model requests answered and sums the tokens their
answers reported, as ``zorkmcp eval`` records them — the agent's requests and an MCP server's sampling
requests alike, over every turn; tokens an endpoint does not report are unknown (null), not 0.

Real Zork, real MCP servers, the real loopback chat-completions server in a thread of its own.
"""

from __future__ import annotations

import io
import json
import re
from typing import TYPE_CHECKING, Any

import pytest
from llm_server import completion, json_reply, tool_call
from play_support import events_of, read_events, write_project, zork1_path
from rich.console import Console
from test_bridge import llm_in_thread

from zorkmcp.cli import main

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from llm_server import Reply

COST_KEYS = ("llm_requests", "prompt_tokens", "completion_tokens")
SAMPLER = {
    "mcpServers": {
        "sampler": {"type": "inprocess", "module": "servers.sampling:create_server", "sampling": True}
    }
}
"""A real MCP server (the SDK's, in process) whose ``ask`` tool sends one sampling request."""


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)


def _reply(message: Mapping[str, Any], usage: Mapping[str, int] | None) -> Reply:
    """One answer of the endpoint; ``usage`` ``None``: the body has no ``usage`` at all."""
    body = completion(message, finish_reason="tool_calls" if "tool_calls" in message else "stop")
    if usage is None:
        del body["usage"]
    else:
        body["usage"] = {**usage, "total_tokens": sum(usage.values())}
    return json_reply(body)


def _agent(action: str, usage: Mapping[str, int] | None) -> Reply:
    content = json.dumps({"thinking": "t", "action": action, "new_objective": None})
    return _reply({"role": "assistant", "content": content}, usage)


def _text(text: str, usage: Mapping[str, int] | None) -> Reply:
    return _reply({"role": "assistant", "content": text}, usage)


def _calls(call: Mapping[str, Any], usage: Mapping[str, int] | None) -> Reply:
    return _reply({"role": "assistant", "content": None, "tool_calls": [dict(call)]}, usage)


def _usage(prompt: int, completion_: int) -> dict[str, int]:
    return {"prompt_tokens": prompt, "completion_tokens": completion_}


def _play(
    folder: Path, base_url: str, *extra: str, mcp_config: dict[str, Any] | None = None
) -> tuple[int, str]:
    """``zorkmcp play`` of two turns against the endpoint; its exit status and its stdout (spaces folded)."""
    logs = {
        "json_log_file": str(folder / "logs" / "events.jsonl"),
        "episode_log_file": str(folder / "logs" / "episode.log"),
    }
    pyproject = write_project(folder, mcp_config=mcp_config, enabled=mcp_config is not None, files=logs)
    llm = f'[tool.zorkgpt.llm]\nclient_base_url = "{base_url}"\nagent_model = "test-model"\n'
    pyproject.write_text(f"{pyproject.read_text()}\n{llm}\n[tool.zorkgpt.retry]\nmax_retries = 0\n")
    out = io.StringIO()
    code = main(
        ["play", "--game", str(zork1_path()), "--pyproject", str(pyproject), "--quiet", "--turns", "2",
         "--summary-json", str(folder / "s.json"), *extra],
        console=Console(file=out, width=120),
        err=Console(file=io.StringIO(), width=400),
    )  # fmt: skip
    return code, " ".join(out.getvalue().split())


def _costs(data: Mapping[str, Any]) -> dict[str, Any]:
    return {key: data[key] for key in COST_KEYS}


def _episode_complete(folder: Path) -> dict[str, Any]:
    (complete,) = events_of(read_events(folder / "logs" / "events.jsonl"), "episode_complete")
    return complete


# -- an endpoint that reports usage ---------------------------------------------------------------------


def test_the_summary_counts_the_model_requests_and_sums_their_tokens(tmp_path: Path) -> None:
    steps = (_agent("open mailbox", _usage(120, 9)), _agent("read leaflet", _usage(131, 12)))
    with llm_in_thread(*steps) as llm:
        code, out = _play(tmp_path, llm.base_url)
        assert llm.remaining == 0
    assert code == 0
    assert "│ model requests │ 2 │" in out
    assert "│ tokens in / out │ 251 / 21 │" in out
    summary = json.loads((tmp_path / "s.json").read_text())
    assert list(summary) == [
        "score", "max_score", "moves", "turns", "victory", "game_over", "tool_calls",
        "llm_requests", "prompt_tokens", "completion_tokens", "model", "scripted", "stopped", "error",
    ]  # fmt: skip
    expected = {"llm_requests": 2, "prompt_tokens": 251, "completion_tokens": 21}
    assert _costs(summary) == expected
    assert _costs(_episode_complete(tmp_path)) == expected
    log = (tmp_path / "logs" / "episode.log").read_text()
    assert "tool calls 0, model requests 2, tokens in / out 251 / 21" in log


def test_the_page_zorkmcp_report_draws_of_the_log_says_what_the_episode_cost(tmp_path: Path) -> None:
    steps = (_agent("open mailbox", _usage(1200, 9)), _agent("read leaflet", _usage(1310, 12)))
    with llm_in_thread(*steps) as llm:
        assert _play(tmp_path, llm.base_url)[0] == 0
    page = tmp_path / "page.html"
    assert main(["report", str(tmp_path / "logs" / "events.jsonl"), "--output", str(page)]) == 0
    cards = dict(
        (label, value)
        for value, label in re.findall(
            r"<div class='card'><b>([^<]*)</b><span>([^<]*)</span></div>", page.read_text()
        )
    )
    assert cards["model requests"] == "2"
    assert cards["tokens in / out"] == "2,510 / 21"


def test_a_servers_sampling_request_counts_with_the_agents(tmp_path: Path) -> None:
    """Turn 1: the agent calls ``sampler.ask``, whose server asks the client's model (sampling), then
    answers; turn 2: the agent answers. Four completions, each counted once."""
    steps = (
        _calls(tool_call("sampler__ask", {"prompt": "Where is the lamp?"}), _usage(120, 9)),
        _text("In the living room.", _usage(30, 5)),  # the server's sampling request
        _agent("open mailbox", _usage(140, 20)),
        _agent("read leaflet", _usage(150, 11)),
    )
    with llm_in_thread(*steps) as llm:
        code, out = _play(tmp_path, llm.base_url, mcp_config=SAMPLER)
        assert llm.remaining == 0
        sampled = [(m["role"], m["content"]) for m in llm.requests[1].messages]
    assert code == 0
    assert sampled == [("user", "Where is the lamp?")]
    events = read_events(tmp_path / "logs" / "events.jsonl")
    assert [(e["server"], e["prompt_tokens"], e["error"]) for e in events_of(events, "mcp_sampling")] == [
        ("sampler", 30, None)
    ]
    assert "│ model requests │ 4 │" in out
    assert "│ tokens in / out │ 440 / 45 │" in out
    expected = {"llm_requests": 4, "prompt_tokens": 440, "completion_tokens": 45}
    assert _costs(json.loads((tmp_path / "s.json").read_text())) == expected
    assert _costs(_episode_complete(tmp_path)) == expected


# -- an endpoint that does not report usage -------------------------------------------------------------


def test_tokens_an_endpoint_does_not_report_are_unknown_not_0(tmp_path: Path) -> None:
    # Some vLLM, Ollama or proxy setups send no usage: 0 would make the episode look free.
    with llm_in_thread(_agent("open mailbox", None), _agent("read leaflet", None)) as llm:
        code, out = _play(tmp_path, llm.base_url)
    assert code == 0
    assert "│ model requests │ 2 │" in out
    assert "│ tokens in / out │ – / – │" in out
    expected = {"llm_requests": 2, "prompt_tokens": None, "completion_tokens": None}
    assert _costs(json.loads((tmp_path / "s.json").read_text())) == expected
    assert _costs(_episode_complete(tmp_path)) == expected
    assert "model requests 2, tokens in / out – / –" in (tmp_path / "logs" / "episode.log").read_text()


def test_tokens_some_answers_report_are_the_sum_of_those(tmp_path: Path) -> None:
    with llm_in_thread(_agent("open mailbox", None), _agent("read leaflet", _usage(131, 12))) as llm:
        code, out = _play(tmp_path, llm.base_url)
    assert code == 0
    assert "│ tokens in / out │ 131 / 12 │" in out
    expected = {"llm_requests": 2, "prompt_tokens": 131, "completion_tokens": 12}
    assert _costs(json.loads((tmp_path / "s.json").read_text())) == expected


# -- an episode a model failure ends --------------------------------------------------------------------


def test_an_episode_the_model_ends_still_says_what_its_answers_cost(tmp_path: Path) -> None:
    # Turn 2's request is refused: the turn returns no result, and turn 1's answer was still paid for.
    refusal = json_reply({"error": {"message": "Invalid model name"}}, status=400)
    with llm_in_thread(_agent("open mailbox", _usage(120, 9)), refusal) as llm:
        code, out = _play(tmp_path, llm.base_url)
    assert code == 1
    assert re.search(r"stopped │ error: LLMHTTPError: .*Invalid model name", out)
    assert "│ model requests │ 1 │" in out
    assert "│ tokens in / out │ 120 / 9 │" in out
    summary = json.loads((tmp_path / "s.json").read_text())
    assert (summary["turns"], summary["stopped"]) == (1, "error")
    assert _costs(summary) == {"llm_requests": 1, "prompt_tokens": 120, "completion_tokens": 9}


# -- the offline scripted model and a replayed cassette -------------------------------------------------


def test_the_offline_scripted_model_counts_as_eval_records_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its answers report the tokens it counts (a few characters a token): play sums them, as eval does."""
    monkeypatch.chdir(tmp_path)
    write_project(tmp_path, mcp_config=None, enabled=False)
    game = str(zork1_path())
    assert main(["play", "--game", game, "--turns", "3", "--quiet", "--summary-json", "s.json"]) == 0
    assert main(["eval", "--game", game, "--episodes", "1", "--turns", "3", "--out", "run"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    expected = {"llm_requests": 3, "prompt_tokens": 1198, "completion_tokens": 81}
    assert _costs(json.loads((tmp_path / "s.json").read_text())) == expected
    (record,) = (tmp_path / "run" / "episodes").glob("*/seed-12.json")
    assert _costs(json.loads(record.read_text())) == expected
    assert "│ model requests │ 3 │" in out
    assert "│ tokens in / out │ 1,198 / 81 │" in out


def test_a_replay_counts_the_answers_its_cassette_gives_as_the_recording_did(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    with llm_in_thread(_agent("open mailbox", _usage(120, 9)), _agent("read leaflet", None)) as llm:
        code, _ = _play(tmp_path / "rec", llm.base_url, "--record", str(cassette))
    assert code == 0
    code, out = _play(tmp_path / "replay", "http://127.0.0.1:9/v1", "--replay", str(cassette))
    assert code == 0
    assert "│ model requests │ 2 │" in out
    assert "│ tokens in / out │ 120 / 9 │" in out
    expected = {"llm_requests": 2, "prompt_tokens": 120, "completion_tokens": 9}
    assert _costs(json.loads((tmp_path / "rec" / "s.json").read_text())) == expected
    assert _costs(json.loads((tmp_path / "replay" / "s.json").read_text())) == expected


def test_a_recording_still_refuses_sampling_and_counts_only_the_agents_answers(tmp_path: Path) -> None:
    """The model a recording lends the sampler is its cassette, as it is: the counting wrapper must not
    hide it (sampling stays off while recording: the replay could not answer the same way)."""
    steps = (
        _calls(tool_call("sampler__ask", {"prompt": "Where is the lamp?"}), _usage(120, 9)),
        _agent("open mailbox", _usage(140, 20)),
        _agent("read leaflet", _usage(150, 11)),
    )
    with llm_in_thread(*steps) as llm:
        code, out = _play(tmp_path, llm.base_url, "--record", str(tmp_path / "c.jsonl"), mcp_config=SAMPLER)
        assert llm.remaining == 0
    assert code == 0
    events = read_events(tmp_path / "logs" / "events.jsonl")
    assert [e["error"] for e in events_of(events, "mcp_sampling")] == [
        "sampling is off while a cassette is recorded: its replay could not answer the request the same way"
    ]
    assert "│ model requests │ 3 │" in out
    assert "│ tokens in / out │ 410 / 40 │" in out
    expected = {"llm_requests": 3, "prompt_tokens": 410, "completion_tokens": 40}
    assert _costs(json.loads((tmp_path / "s.json").read_text())) == expected
