"""A ``sampling/createMessage`` the MCP SDK answers itself is in the episode's record too.

The SDK checks a server's request against its types before zorkmcp's ``sampling_callback`` runs, and
answers what they refuse (no ``maxTokens``, ``messages`` that are not a list, an ``includeContext``
MCP does not define) with ``-32602 Invalid request parameters`` and nothing more. The server's answer
stays the SDK's; the ``mcp_sampling`` event and the episode log's INFO line now say that a request
came and why it was not answered. Real parts: the SDK's server of ``tests/servers/sampling_probe.py``
(it sends raw params) in process and as a stdio process, a ``bridge.Bridge`` writing its log files,
and the loopback chat-completions server, which is never asked.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import trio
from llm_server import LLMServer, content_reply
from play_support import events_of, read_events
from servers.helpers import RecordingSink

import bridge
from zorkmcp.config import McpConfig, McpSettings, RetrySettings, ServerConfig, Settings
from zorkmcp.llm import open_llm_client
from zorkmcp.mcp import McpManager, ModelSampler, open_toolbox
from zorkmcp.observability import LogFiles

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    import trio.testing

    from zorkmcp.llm import ChatModel

PROBE = Path(__file__).with_name("servers") / "sampling_probe.py"
LAMP = {"role": "user", "content": {"type": "text", "text": "Where is the lamp?"}}
SDK_ANSWER = {"error": "Invalid request parameters", "code": -32602}
REFUSED = "refused by the MCP SDK before zorkmcp saw it: -32602 Invalid request parameters"


@pytest.fixture
async def model(llm_server: LLMServer) -> AsyncIterator[ChatModel]:
    async with open_llm_client(
        base_url=llm_server.base_url, model="test-model", retry=RetrySettings(max_retries=0)
    ) as client:
        yield client


def prober(**options: Any) -> ServerConfig:
    return ServerConfig(
        name="prober",
        type="inprocess",
        module="servers.sampling_probe:create_server",
        sampling=True,
        **options,
    )


def sampled(events: RecordingSink) -> list[dict[str, Any]]:
    return [fields for name, fields in events.events if name == "mcp_sampling"]


def refused(problems: str, *, tool: str | None = "prober.raw") -> dict[str, Any]:
    """The ``mcp_sampling`` event of a request the SDK refused: no model was asked."""
    return {
        "server": "prober",
        "tool": tool,
        "model": None,
        "prompt_tokens": None,
        "completion_tokens": None,
        "duration_ms": 0.0,
        "error": f"{REFUSED} ({problems})",
    }


@pytest.mark.parametrize(
    ("params", "problems"),
    [
        ({"messages": [LAMP]}, "maxTokens: Field required"),
        ({"messages": "Where is the lamp?", "maxTokens": 50}, "messages: Input should be a valid list"),
        (
            {"messages": [LAMP], "maxTokens": 50, "includeContext": "everything"},
            "includeContext: Input should be 'none', 'thisServer' or 'allServers'",
        ),
        (
            {"messages": [{"role": "system", "content": LAMP["content"]}], "maxTokens": 50},
            "messages.0.role: Input should be 'user' or 'assistant'",
        ),
        (
            {"messages": "x", "maxTokens": "lots", "temperature": "hot", "includeContext": 1},
            "messages: Input should be a valid list; includeContext: Input should be 'none', 'thisServer' "
            "or 'allServers'; temperature: Input should be a valid number, unable to parse string as a "
            "number; 1 more",
        ),
    ],
    ids=["no-maxTokens", "messages-a-string", "includeContext-unknown", "system-role", "four-problems"],
)
async def test_a_request_the_sdk_refuses_is_an_mcp_sampling_event(
    llm_server: LLMServer,
    model: ChatModel,
    autojump_clock: trio.testing.MockClock,
    params: dict[str, Any],
    problems: str,
) -> None:
    """No event and no log line used to say that the server asked at all."""
    events = RecordingSink()
    manager = McpManager(
        McpConfig(servers=(prober(),)), McpSettings(enabled=True), events=events, sampler=ModelSampler(model)
    )
    async with manager.open_turn() as toolbox:
        answer = await toolbox.call_tool("prober.raw", {"params": params})
    assert answer.content == [SDK_ANSWER]  # the server is told what the SDK told it
    assert llm_server.bodies == []
    assert sampled(events) == [refused(problems)]
    assert (
        "INFO",
        f"MCP server 'prober' asked for sampling during prober.raw; not answered: {REFUSED} ({problems})",
    ) in events.lines


async def test_requests_the_sdk_refuses_between_answered_ones_are_each_reported_once(
    llm_server: LLMServer, model: ChatModel, autojump_clock: trio.testing.MockClock
) -> None:
    events = RecordingSink()
    manager = McpManager(
        McpConfig(servers=(prober(lifecycle="per_episode"),)),
        McpSettings(enabled=True),
        events=events,
        sampler=ModelSampler(model),
    )
    llm_server.script(content_reply("Take the lamp."), content_reply("Take the lamp."))
    async with manager.open_episode() as episode, manager.open_turn(episode) as toolbox:
        good = {"params": {"messages": [LAMP], "maxTokens": 50}, "count": 2, "concurrent": True}
        bad = {"params": {"messages": [LAMP]}, "count": 2, "concurrent": True}
        answers = [
            await toolbox.call_tool("prober.raw", good),
            await toolbox.call_tool("prober.raw", bad),
        ]
    lamp = {"type": "text", "text": "Take the lamp."}
    answered = {"role": "assistant", "content": lamp, "model": "test-model", "stopReason": "endTurn"}
    assert [answer.content for answer in answers] == [[answered] * 2, [SDK_ANSWER] * 2]
    assert [(e["model"], e["error"]) for e in sampled(events)] == [
        ("test-model", None),
        ("test-model", None),
        (None, f"{REFUSED} (maxTokens: Field required)"),
        (None, f"{REFUSED} (maxTokens: Field required)"),
    ]


async def test_a_stdio_server_s_refused_request_is_reported(llm_server: LLMServer, model: ChatModel) -> None:
    events = RecordingSink()
    server = ServerConfig(name="prober", command=sys.executable, args=(str(PROBE),), sampling=True)
    async with open_toolbox([server], McpSettings(), events=events, sampler=ModelSampler(model)) as toolbox:
        answer = await toolbox.call_tool("prober.raw", {"params": {"messages": [LAMP], "maxTokens": "lots"}})
    assert answer.content == [SDK_ANSWER]
    problems = "maxTokens: Input should be a valid integer, unable to parse string as an integer"
    assert [(e["tool"], e["model"], e["error"]) for e in sampled(events)] == [
        ("prober.raw", None, f"{REFUSED} ({problems})")
    ]


def test_a_bridge_writes_the_refused_request_to_its_event_log(tmp_path: Path) -> None:
    logs = LogFiles(json_log=tmp_path / "events.jsonl", episode_log=tmp_path / "episode.log")
    servers = McpConfig(servers=(prober(lifecycle="per_episode"),))
    with bridge.Bridge(Settings(), servers=servers, walkthrough=["north"], log_files=logs) as episode:
        assert episode.get_action("West of House.")["action"] == "north"
        answer = episode.call_tool("prober.raw", {"params": {"messages": [LAMP]}})
    assert answer.content == [SDK_ANSWER]
    [event] = events_of(read_events(tmp_path / "events.jsonl"), "mcp_sampling")
    assert {key: event[key] for key in ("episode_id", "turn", "server", "tool", "model", "error")} == {
        "episode_id": episode.setup.episode_id,
        "turn": 1,
        "server": "prober",
        "tool": "prober.raw",
        "model": None,
        "error": f"{REFUSED} (maxTokens: Field required)",
    }
    assert (
        f"{episode.setup.episode_id} [INFO] MCP server 'prober' asked for sampling during prober.raw; not "
        f"answered: {REFUSED} (maxTokens: Field required)"
    ) in (tmp_path / "episode.log").read_text()
