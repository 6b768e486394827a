"""One request larger than the account's tokens-per-minute limit is not retried, and a turn goes on.

OpenAI answers ``429 Request too large for gpt-4o in organization … on tokens per min (TPM): Limit
30000, Requested 45000`` (Groq the same with a 413): no wait makes such a request fit, so the client
does not retry it (it used to, ``max_retries`` times), and says what to do. The engine treats it as a
request too large for the context window: once a turn it asks for the final answer without the
turn's tool calls and tools, which may fit.

The client against the loopback server on virtual time; ``zorkmcp play`` (in process) against it
in a thread of its own, with real Zork and the in-process think server.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

import pytest
import trio
from llm_server import LLMServer, agent_reply, json_reply, tool_call, tool_call_reply
from play_support import INPROCESS_THINKING, events_of, read_events, write_project
from play_support import zork1_path as zork1
from rich.console import Console
from test_bridge import llm_in_thread

from zorkmcp.cli import main
from zorkmcp.config import RetrySettings
from zorkmcp.errors import LLMError
from zorkmcp.llm import CompletionRequest, open_llm_client
from zorkmcp.observability import EventRecorder

if TYPE_CHECKING:
    from pathlib import Path

TOO_LARGE = (
    "Request too large for gpt-4o in organization org-abc123 on tokens per min (TPM): Limit 30000, "
    "Requested 45000. The input or output tokens must be reduced in order to run successfully. Visit "
    "https://platform.openai.com/account/rate-limits to learn more."
)
OPENAI_TPM = {"error": {"message": TOO_LARGE, "type": "tokens", "param": None, "code": "rate_limit_exceeded"}}
GROQ_TPM = {
    "error": {
        "message": "Request too large for model `llama3-70b-8192` in organization `org_01abc` service tier "
        "`on_demand` on tokens per minute (TPM): Limit 6000, Requested 7500, please reduce your message size "
        "and try again. Visit https://console.groq.com/docs/rate-limits for more information.",
        "type": "tokens",
        "code": "rate_limit_exceeded",
    }
}
REMEDY = (
    "one request holds more tokens than the account may send in a minute, so no wait makes it fit (not "
    "retried): move to a higher usage tier (a larger tokens-per-minute limit), send a smaller prompt (a "
    'smaller max_result_bytes in [tool.zorkgpt.mcp]), or offer fewer tools (a "tools" allow-list per server '
    "in mcp_config.json, or --no-mcp)"
)
UPSTREAM_TPM = {"error": {"message": "Provider returned error", "code": 429, "metadata": {"raw": TOO_LARGE}}}
REACHED = {  # a rate limit: the minute's other requests used the tokens; a wait mends it
    "error": {
        "message": "Rate limit reached for gpt-4o in organization org-abc123 on tokens per min (TPM): "
        "Limit 30000, Used 28000, Requested 3000. Please try again in 2s.",
        "type": "tokens",
        "code": "rate_limit_exceeded",
    }
}
USER = [{"role": "user", "content": "West of House. What now?"}]


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENROUTER_API_KEY", "OPENAI_API_KEY", "GAME", "ZORKMCP_GAME_SEED"):
        monkeypatch.delenv(name, raising=False)


async def fails(server: LLMServer, events: EventRecorder) -> LLMError:
    retry = RetrySettings(jitter_factor=0.0)  # five retries, 1, 2, 4, 8 and 16 s apart
    async with open_llm_client(
        base_url=server.base_url, model="gpt-4o", retry=retry, events=events
    ) as client:
        with pytest.raises(LLMError) as caught:
            await client.complete(CompletionRequest(USER))
    return caught.value


async def test_openai_s_request_too_large_for_the_tpm_limit_is_not_retried(
    llm_server: LLMServer, autojump_clock: Any
) -> None:
    llm_server.script(
        json_reply(OPENAI_TPM, status=429), json_reply(REACHED, status=429), agent_reply("look")
    )
    events = EventRecorder()
    started = trio.current_time()
    error = await fails(llm_server, events)
    assert str(error).replace(llm_server.base_url, "{base}") == (
        f"POST {{base}}/chat/completions answered HTTP 429 Too Many Requests: {TOO_LARGE} — {REMEDY}"
    )
    assert (error.status, error.provider_message) == (429, TOO_LARGE)
    assert len(llm_server.requests) == 1
    assert trio.current_time() - started == 0.0
    assert events.of_type("llm_retry") == []
    # a rate limit on tokens per minute that the minute's other requests reached is still waited out
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o", events=events) as client:
        response = await client.complete(CompletionRequest(USER))
    assert response.content is not None
    assert [e["retry"] for e in events.of_type("llm_retry")] == [1]
    assert len(llm_server.requests) == 3


async def test_groq_s_413_for_the_tpm_limit_says_so_not_that_a_proxy_takes_less(
    llm_server: LLMServer,
) -> None:
    llm_server.script(json_reply(GROQ_TPM, status=413))
    error = await fails(llm_server, EventRecorder())
    assert str(error).endswith(f"{GROQ_TPM['error']['message']} — {REMEDY}")
    assert "client_max_body_size" not in str(error)


async def test_an_upstream_s_tpm_error_inside_openrouter_s_200_is_not_retried(
    llm_server: LLMServer, autojump_clock: Any
) -> None:
    llm_server.script(json_reply(UPSTREAM_TPM), agent_reply("look"))
    error = await fails(llm_server, EventRecorder())
    assert error.status == 429
    assert error.provider_message == f"Provider returned error ({TOO_LARGE})"
    assert len(llm_server.requests) == 1


def play(folder: Path, base_url: str, *, turns: int, mcp: bool = True) -> int:
    """``zorkmcp play`` with the in-process think server, at most one retry 0.01 s later."""
    logs = {"json_log_file": str(folder / "events.jsonl"), "episode_log_file": str(folder / "episode.log")}
    pyproject = write_project(folder, mcp_config=INPROCESS_THINKING, enabled=mcp, files=logs)
    tables = (
        f'\n[tool.zorkgpt.llm]\nclient_base_url = "{base_url}"\nagent_model = "gpt-4o"\n'
        "\n[tool.zorkgpt.retry]\nmax_retries = 1\ninitial_delay = 0.01\n"
    )
    pyproject.write_text(pyproject.read_text() + tables)
    argv = ["play", "--game", str(zork1()), "--pyproject", str(pyproject), "--quiet", "--turns", str(turns)]
    return main(
        argv, console=Console(file=io.StringIO(), width=120), err=Console(file=io.StringIO(), width=400)
    )


def test_a_turn_whose_tool_calls_outgrow_the_tpm_limit_asks_for_the_answer_without_them(
    tmp_path: Path,
) -> None:
    steps = [
        tool_call_reply(tool_call("zork__memory", {})),
        json_reply(OPENAI_TPM, status=429),  # the turn's history with its tool result is too large
        agent_reply("north"),  # asked for with the turn's opening messages only
        agent_reply("east"),
    ]
    with llm_in_thread(*steps) as llm:
        code = play(tmp_path, llm.base_url, turns=2)
        bodies = [r.json for r in llm.requests]
    assert code == 0
    assert len(bodies) == 4
    assert [m["role"] for m in bodies[2]["messages"]] == ["system", "user"]
    assert "tools" not in bodies[2]
    events = read_events(tmp_path / "events.jsonl")
    (exceeded,) = events_of(events, "llm_context_exceeded")
    assert {k: exceeded[k] for k in ("turn", "dropped_messages", "dropped_tools", "error", "limit")} == {
        "turn": 1,
        "dropped_messages": 2,
        "dropped_tools": 4,
        "error": TOO_LARGE,
        "limit": "tokens per minute",
    }
    assert events_of(events, "llm_retry") == []
    assert [t["action"] for t in events_of(events, "turn_complete")] == ["north", "east"]
    log = (tmp_path / "episode.log").read_text()
    assert (
        "Turn 1 Iteration 2: the request is larger than the account's tokens-per-minute limit "
        f"({TOO_LARGE}); the final answer is asked for with the turn's opening messages only, without its "
        "tool calls and their results (2 messages) and the 4 tools offered"
    ) in log


@pytest.mark.parametrize(
    ("reply", "said"),
    [
        (json_reply(OPENAI_TPM, status=429), f"answered HTTP 429 Too Many Requests: {TOO_LARGE} — {REMEDY}"),
        (
            json_reply(UPSTREAM_TPM),  # OpenRouter: the upstream's 429 inside a 200
            "answered HTTP 200 with a provider error (code 429): Provider returned error "
            f"({TOO_LARGE}) — {REMEDY}",
        ),
    ],
)
def test_without_anything_to_leave_out_the_episode_ends_at_once_with_what_to_do(
    tmp_path: Path, reply: Any, said: str
) -> None:
    with llm_in_thread(reply, agent_reply("north")) as llm:
        code = play(tmp_path, llm.base_url, turns=2, mcp=False)
        requests = len(llm.requests)
    assert (code, requests) == (1, 1)
    (complete,) = events_of(read_events(tmp_path / "events.jsonl"), "episode_complete")
    assert (complete["stopped"], complete["turns"]) == ("error", 0)
    assert complete["error"].startswith("LLM")
    assert complete["error"].endswith(said)
