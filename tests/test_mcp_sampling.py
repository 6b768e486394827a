"""MCP sampling: a server with ``"sampling": true`` asks the episode's model through the client.

Real parts only: the SDK's own server (``tests/servers/sampling.py``) in process and as a stdio
process, ``@modelcontextprotocol/server-everything`` on Node.js (skipped without it), and the model
is the loopback chat-completions server (``tests/llm_server.py``) behind a real ``LLMClient``.
Timeouts run on the mock clock.
"""

from __future__ import annotations

import json
import queue
import sys
import textwrap
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import eval_support
import pytest
import trio
import trio.testing
from eval_support import inprocess_game
from llm_server import (
    LLMServer,
    Reply,
    agent_reply,
    content_reply,
    serve_llm,
    tool_call,
    tool_call_reply,
)
from node_support import EVERYTHING, NODE, needs_node_package
from play_support import zork1_path
from servers.helpers import RecordingSink

import bridge
from zorkmcp.config import McpConfig, McpSettings, RetrySettings, ServerConfig, Settings
from zorkmcp.eval import EpisodeSpec, play_episodes
from zorkmcp.llm import ScriptedModel, open_llm_client
from zorkmcp.mcp import McpManager, ToolCallResult, open_toolbox

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from zorkmcp.llm import ChatModel, CompletionRequest, LLMResponse

SAMPLER = Path(__file__).with_name("servers") / "sampling.py"
CACHED = {"type": "ephemeral"}
"""The prompt-caching marker the client puts on system and user messages."""
LAMP = {"prompt": "Where is the lamp?"}


def sampler_server(**options: Any) -> ServerConfig:
    """The SDK server of ``tests/servers/sampling.py`` in process, with sampling asked for."""
    return ServerConfig(
        name="sampler", type="inprocess", module="servers.sampling:create_server", sampling=True, **options
    )


def sampler_of(model: ChatModel) -> Any:
    """The episode's sampler (imported here: each test fails on its own on a zorkmcp without it)."""
    from zorkmcp.mcp._sampling import ModelSampler

    return ModelSampler(model)


def manager_of(*servers: ServerConfig, model: ChatModel, events: RecordingSink) -> McpManager:
    return McpManager(
        McpConfig(servers=servers), McpSettings(enabled=True), events=events, sampler=sampler_of(model)
    )


def sampling_events(events: RecordingSink) -> list[dict[str, Any]]:
    return [fields for name, fields in events.events if name == "mcp_sampling"]


@pytest.fixture
async def model(llm_server: LLMServer) -> AsyncIterator[ChatModel]:
    """A real ``LLMClient`` on the loopback server (no retries: every request is one the test scripted)."""
    async with open_llm_client(
        base_url=llm_server.base_url, model="test-model", retry=RetrySettings(max_retries=0)
    ) as client:
        yield client


async def test_a_sampling_request_is_answered_by_the_episodes_model(
    llm_server: LLMServer, model: ChatModel, autojump_clock: trio.testing.MockClock
) -> None:
    events = RecordingSink()
    llm_server.script(
        content_reply(
            "Take the lamp.",
            finish_reason="length",
            usage={"prompt_tokens": 40, "completion_tokens": 4, "total_tokens": 44},
            delay=1.5,
        )
    )
    arguments = {
        "prompt": "What now?",
        "system": "You advise adventurers.",
        "temperature": 0.2,
        "stop": ["\n\n"],
        "max_tokens": 100_000,
        "image": True,
    }
    async with manager_of(sampler_server(), model=model, events=events).open_turn() as toolbox:
        declared = await toolbox.call_tool("sampler.capabilities", {})
        answer = await toolbox.call_tool("sampler.ask", arguments)
    assert declared.content == {"sampling": {}}
    assert answer == ToolCallResult(
        content={"text": "Take the lamp.", "model": "test-model", "stopReason": "maxTokens"}
    )
    # The request: systemPrompt first, the image as a placeholder (never its base64), maxTokens cut
    # to 4096; includeContext and modelPreferences are not the model's business.
    assert llm_server.bodies == [
        {
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "You advise adventurers.", "cache_control": CACHED},
                {
                    "role": "user",
                    "content": "What now?\n[image: image/png, 96 bytes of base64 not shown]",
                    "cache_control": CACHED,
                },
            ],
            "stream": False,
            "temperature": 0.2,
            "max_tokens": 4096,
            "stop": ["\n\n"],
        }
    ]
    assert sampling_events(events) == [
        {
            "server": "sampler",
            "tool": "sampler.ask",
            "model": "test-model",
            "prompt_tokens": 40,
            "completion_tokens": 4,
            "duration_ms": 1500.0,
            "error": None,
        }
    ]
    assert (
        "INFO",
        "MCP server 'sampler' sampled the model test-model during sampler.ask: "
        "40 prompt + 4 completion tokens, 1.5s",
    ) in events.lines


async def test_the_offline_scripted_model_refuses_sampling(autojump_clock: trio.testing.MockClock) -> None:
    events = RecordingSink()
    scripted = ScriptedModel(["north"])
    async with manager_of(sampler_server(), model=scripted, events=events).open_turn() as toolbox:
        answer = await toolbox.call_tool("sampler.ask", LAMP)
    refusal = "sampling needs a model endpoint; the offline scripted model cannot answer it"
    assert answer.content == {"error": refusal, "code": -32600}
    assert sampling_events(events) == [
        {
            "server": "sampler",
            "tool": "sampler.ask",
            "model": "scripted-walkthrough",
            "prompt_tokens": None,
            "completion_tokens": None,
            "duration_ms": 0.0,
            "error": refusal,
        }
    ]
    assert (
        "INFO",
        f"MCP server 'sampler' asked for sampling during sampler.ask; not answered: {refusal}",
    ) in (events.lines)


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (tool_call_reply(tool_call("zork__look")), "the model answered with tool calls instead of text"),
        (content_reply(""), "the model answered with no text"),
        (content_reply(None), "the model answered with no text"),
    ],
)
async def test_a_model_that_answers_no_text_is_an_error_for_the_server(
    llm_server: LLMServer, model: ChatModel, reply: Reply, error: str
) -> None:
    events = RecordingSink()
    llm_server.script(reply)
    async with manager_of(sampler_server(), model=model, events=events).open_turn() as toolbox:
        answer = await toolbox.call_tool("sampler.ask", LAMP)
    assert answer.content == {"error": error, "code": -32603}
    assert [(e["model"], e["prompt_tokens"], e["error"]) for e in sampling_events(events)] == [
        ("test-model", None, error)
    ]


async def test_at_most_eight_samplings_per_server_and_turn(
    llm_server: LLMServer, model: ChatModel, autojump_clock: trio.testing.MockClock
) -> None:
    events = RecordingSink()
    llm_server.script(*(content_reply(f"answer {n}") for n in range(1, 10)))
    manager = manager_of(sampler_server(lifecycle="per_episode"), model=model, events=events)
    async with manager.open_episode() as episode:
        async with manager.open_turn(episode) as toolbox:
            first = await toolbox.call_tool("sampler.ask_many", {"count": 9})
            again = await toolbox.call_tool("sampler.ask", LAMP)
        asked_in_turn_1 = len(llm_server.requests)
        async with manager.open_turn(episode) as toolbox:  # the same session: a new turn, a new count
            second = await toolbox.call_tool("sampler.ask", LAMP)
    limit = {"error": "at most 8 sampling requests per server and turn are answered", "code": -32600}
    assert first.content == [
        *({"text": f"answer {n}", "model": "test-model", "stopReason": "endTurn"} for n in range(1, 9)),
        limit,
    ]
    assert again.content == limit
    assert asked_in_turn_1 == 8
    assert second.content == {"text": "answer 9", "model": "test-model", "stopReason": "endTurn"}
    assert [e["error"] for e in sampling_events(events)] == [
        *[None] * 8,
        limit["error"],
        limit["error"],
        None,
    ]
    assert [line for line in events.lines if line[0] == "WARNING"] == [
        (
            "WARNING",
            "Turn 1: MCP server 'sampler' asked for more than 8 samplings in one turn; "
            "the rest of this turn's are refused",
        )
    ]


@attrs.define
class Watched:
    """The episode's model, noting on the trio clock when a request it was asked ends and how."""

    inner: ChatModel
    ended: list[tuple[float, str]] = attrs.Factory(list)

    @property
    def model(self) -> str:
        return self.inner.model

    @property
    def scripted(self) -> bool:
        return self.inner.scripted

    async def complete(self, request: CompletionRequest, /) -> LLMResponse:
        try:
            response = await self.inner.complete(request)
        except trio.Cancelled:
            self.ended.append((trio.current_time(), "cancelled"))
            raise
        self.ended.append((trio.current_time(), "answered"))
        return response


@pytest.mark.parametrize("lifecycle", ["per_turn", "per_episode"])
async def test_the_tool_timeout_cancels_the_sampling_request_in_flight(
    llm_server: LLMServer, model: ChatModel, autojump_clock: trio.testing.MockClock, lifecycle: str
) -> None:
    events = RecordingSink()
    never = trio.Event()
    llm_server.script(Reply(hold=never), content_reply("Take the lamp."))
    watched = Watched(model)
    manager = manager_of(sampler_server(timeout=5, lifecycle=lifecycle), model=watched, events=events)
    async with manager.open_episode() as episode, manager.open_turn(episode) as toolbox:
        start = trio.current_time()
        answer = await toolbox.call_tool("sampler.ask", LAMP)
        returned = trio.current_time() - start
        await trio.testing.wait_all_tasks_blocked()
        cancelled = list(watched.ended)
        after = await toolbox.call_tool("sampler.ask", LAMP)  # the server and the model still serve
    assert answer == ToolCallResult(
        content=None, is_error=True, error_message="Tool call timed out after 5s", timed_out=True
    )
    assert returned == 5.0
    assert cancelled == [(start + 5.0, "cancelled")]  # the model request ended with the tool call
    assert after.content == {"text": "Take the lamp.", "model": "test-model", "stopReason": "endTurn"}
    assert [(e["tool"], e["duration_ms"], e["error"]) for e in sampling_events(events)] == [
        (
            "sampler.ask",
            5000.0,
            "cancelled: the tool call it belongs to ended (its timeout, or the turn was cancelled)",
        ),
        ("sampler.ask", 0.0, None),
    ]


async def test_sampling_is_answered_over_stdio(llm_server: LLMServer, model: ChatModel) -> None:
    events = RecordingSink()
    llm_server.script(content_reply("In the living room."))
    server = ServerConfig(name="sampler", command=sys.executable, args=(str(SAMPLER),), sampling=True)
    async with open_toolbox([server], McpSettings(), events=events, sampler=sampler_of(model)) as toolbox:
        answer = await toolbox.call_tool("sampler.ask", LAMP)
    assert answer.content == {"text": "In the living room.", "model": "test-model", "stopReason": "endTurn"}
    assert llm_server.bodies[0]["messages"] == [
        {"role": "user", "content": "Where is the lamp?", "cache_control": CACHED}
    ]
    assert [(e["tool"], e["prompt_tokens"], e["completion_tokens"]) for e in sampling_events(events)] == [
        ("sampler.ask", 11, 7)
    ]


async def test_an_eval_episode_counts_the_sampling_tokens(
    llm_server: LLMServer, tmp_path: Path, autojump_clock: trio.testing.MockClock
) -> None:
    config = tmp_path / "mcp_config.json"
    entry = {"type": "inprocess", "module": "servers.sampling:create_server", "sampling": True}
    config.write_text(json.dumps({"mcpServers": {"sampler": entry}}))
    settings = Settings()
    settings = attrs.evolve(settings, mcp=attrs.evolve(settings.mcp, enabled=True, config_file=str(config)))
    eval_support.prebuild(1)
    spec = EpisodeSpec(
        arm="a",
        seed=1,
        max_turns=1,
        game_path=zork1_path(),
        settings=settings,
        model="test-model",
        base_url=llm_server.base_url,
        game_server=inprocess_game(1),
    )
    llm_server.script(
        tool_call_reply(tool_call("sampler__ask", LAMP)),  # 11 + 7 tokens
        content_reply(
            "In the living room.", usage={"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
        ),
        agent_reply("look"),  # 11 + 7 tokens
    )
    done: list[dict[str, Any]] = []
    await play_episodes([spec], tmp_path / "run", concurrency=1, on_done=done.append)
    (record,) = done
    assert record.get("error") is None
    assert (record["llm_requests"], record["prompt_tokens"], record["completion_tokens"]) == (3, 122, 34)
    tool_messages = [m for m in llm_server.requests[2].messages if m["role"] == "tool"]
    assert [json.loads(m["content"]) for m in tool_messages] == [
        {"content": {"text": "In the living room.", "model": "test-model", "stopReason": "endTurn"}}
    ]


@pytest.mark.parametrize("caller", ["get_action", "Bridge"])
def test_the_play_path_samples_with_the_turns_own_model(caller: str, tmp_path: Path) -> None:
    """get_action's turn and a Bridge's episode (zorkmcp play's) lend their open model to the sampler:
    the request shares its connection (a client opened per request paid a new TCP and TLS start)."""
    handover: queue.Queue[tuple[LLMServer, trio.lowlevel.TrioToken, trio.Event]] = queue.Queue()

    async def serve() -> None:
        stop = trio.Event()
        steps = (
            tool_call_reply(tool_call("sampler__ask", LAMP)),
            content_reply("In the living room."),
            agent_reply("go west"),
        )
        async with serve_llm(*steps) as server:
            handover.put((server, trio.lowlevel.current_trio_token(), stop))
            await stop.wait()

    thread = threading.Thread(target=trio.run, args=(serve,), name="llm-server")
    thread.start()
    server, token, stop = handover.get(timeout=60)
    try:
        entry = {"type": "inprocess", "module": "servers.sampling:create_server", "sampling": True}
        (tmp_path / "mcp_config.json").write_text(json.dumps({"mcpServers": {"sampler": entry}}))
        pyproject = tmp_path / "pyproject.toml"
        pyproject.write_text(
            textwrap.dedent(f"""\
                [tool.zorkgpt.llm]
                client_base_url = "{server.base_url}"
                agent_model = "test-model"

                [tool.zorkgpt.retry]
                max_retries = 0

                [tool.zorkgpt.mcp]
                enabled = true

                [tool.zorkgpt.files]
                json_log_file = "{tmp_path / "events.jsonl"}"
                episode_log_file = "{tmp_path / "episode.log"}"
                """)
        )
        if caller == "get_action":
            action = bridge.get_action("West of House.", pyproject=pyproject)
        else:
            with bridge.Bridge(pyproject=pyproject) as episode:
                action = episode.get_action("West of House.")
    finally:
        bridge.reset()
        token.run_sync_soon(stop.set)
        thread.join(60)
    assert action["action"] == "go west"
    assert [request.connection for request in server.requests] == [1, 1, 1]
    tool_messages = [m for m in server.requests[2].messages if m["role"] == "tool"]
    assert [json.loads(m["content"]) for m in tool_messages] == [
        {"content": {"text": "In the living room.", "model": "test-model", "stopReason": "endTurn"}}
    ]
    events = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [
        {k: e[k] for k in ("turn", "server", "tool", "model", "prompt_tokens", "error")}
        for e in events
        if e["event_type"] == "mcp_sampling"
    ] == [
        {
            "turn": 1,
            "server": "sampler",
            "tool": "sampler.ask",
            "model": "test-model",
            "prompt_tokens": 11,
            "error": None,
        }
    ]


@needs_node_package(EVERYTHING)
async def test_server_everything_triggers_a_sampling_request(llm_server: LLMServer, model: ChatModel) -> None:
    assert NODE is not None
    events = RecordingSink()
    llm_server.script(content_reply("Hello back."))
    plain = ServerConfig(name="plain", command=NODE, args=(str(EVERYTHING), "stdio"))
    sampled = ServerConfig(name="everything", command=NODE, args=(str(EVERYTHING), "stdio"), sampling=True)
    manager = manager_of(plain, sampled, model=model, events=events)
    async with manager.open_turn() as toolbox:
        await toolbox.refresh_if_changed()  # it adds the tools once it knows the client's capabilities
        offered = {info.name for info in toolbox.tools}
        answer = await toolbox.call_tool("everything.trigger-sampling-request", {"prompt": "hello"})
    assert "plain.trigger-sampling-request" not in offered
    assert "everything.trigger-sampling-request" in offered
    assert isinstance(answer.content, str)
    assert answer.content.startswith("LLM sampling result: \n")
    assert json.loads(answer.content.removeprefix("LLM sampling result: \n")) == {
        "role": "assistant",
        "content": {"type": "text", "text": "Hello back."},
        "model": "test-model",
        "stopReason": "endTurn",
    }
    assert llm_server.bodies == [
        {
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "You are a helpful test server.", "cache_control": CACHED},
                {
                    "role": "user",
                    "content": "Resource trigger-sampling-request context: hello",
                    "cache_control": CACHED,
                },
            ],
            "stream": False,
            "temperature": 0.7,
            "max_tokens": 100,
        }
    ]
    assert [(e["server"], e["tool"], e["error"]) for e in sampling_events(events)] == [
        ("everything", "everything.trigger-sampling-request", None)
    ]


def test_zorkmcp_tools_and_call_declare_sampling_as_play_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # `zorkmcp tools` listed fewer tools than play offered (server-everything's sampling tools), and
    # `zorkmcp call` of such a tool could not work: neither declared the capability
    from zorkmcp._cli_mcp import cmd_call

    monkeypatch.chdir(tmp_path)
    entry = {"type": "inprocess", "module": "servers.sampling:create_server", "sampling": True}
    config = tmp_path / "mcp_config.json"
    config.write_text(json.dumps({"mcpServers": {"sampler": entry}}))
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.zorkgpt.llm]\napi_key_env = "ZORKMCP_TEST_UNSET_KEY"\n')  # the scripted model
    monkeypatch.delenv("ZORKMCP_TEST_UNSET_KEY", raising=False)
    assert cmd_call("sampler.capabilities", "{}", config, pyproject, None) == 0
    assert json.loads(capsys.readouterr().out) == {"content": {"sampling": {}}}
    assert cmd_call("sampler.ask", json.dumps(LAMP), config, pyproject, None) == 0
    assert json.loads(capsys.readouterr().out) == {
        "content": {
            "error": "sampling needs a model endpoint; the offline scripted model cannot answer it",
            "code": -32600,
        }
    }
