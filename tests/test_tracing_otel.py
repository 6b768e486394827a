"""Tracing through OpenTelemetry as a user meets it (seeds 000 §Langfuse Integration, properties 31, 32).

A tracing backend that breaks never fails a turn; a failed, timed-out or cut-short call is an error
span; no secret reaches a span; the keys of a Langfuse that is not installed are not ignored silently.
Real OpenTelemetry SDK objects throughout (a provider with an in-memory exporter, and a span
processor that raises as a broken backend does).
"""

from __future__ import annotations

import logging
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import engine_servers
import pytest
import trio
import trio.testing
from llm_server import LLMServer, content_reply, tool_call, tool_call_reply
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.engine import TurnOptions, run_turn
from zorkmcp.llm import open_llm_client
from zorkmcp.mcp import McpManager
from zorkmcp.observability import OtelTracer

if TYPE_CHECKING:
    from collections.abc import Iterator

    from opentelemetry.context import Context
    from opentelemetry.sdk.trace import Span

PROBE = ServerConfig(name="p", type="inprocess", module="engine_servers:create_probe_server", timeout=5)
OPENING = [{"role": "system", "content": "play"}, {"role": "user", "content": "West of House"}]


@pytest.fixture(autouse=True)
def _reset_servers() -> None:
    engine_servers.reset_probe()


@pytest.fixture
def provider() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    yield provider, spans
    provider.shutdown()


class BrokenProcessor(SpanProcessor):
    """A span processor that fails as a broken backend does (the SDK does not catch it)."""

    def __init__(self, when: str) -> None:
        self.when = when

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        if self.when == "start":
            raise RuntimeError("collector gone")

    def on_end(self, span: ReadableSpan) -> None:
        if self.when == "end":
            raise RuntimeError("collector gone")


def status(span: ReadableSpan) -> tuple[str, str | None]:
    return span.status.status_code.name, span.status.description


async def two_calls(llm_server: LLMServer, tracer: OtelTracer) -> Any:
    llm_server.script(
        tool_call_reply(tool_call("p__ok", {"tag": "a"}), tool_call("p__fail", {"tag": "b"})),
        content_reply("done"),
    )
    mgr = McpManager(McpConfig(servers=(PROBE,)), McpSettings(enabled=True))
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o") as client:
        return await run_turn(
            client, OPENING, open_toolbox=lambda: mgr.open_turn(), tracer=tracer, options=TurnOptions(turn=3)
        )


@pytest.mark.parametrize(
    ("when", "doing"),
    [
        ("start", "starting the span 'agent-tool-calling-session'"),
        ("end", "ending the span 'mcp-tool-p.ok'"),
    ],
)
async def test_a_broken_tracing_backend_never_fails_a_turn(
    llm_server: LLMServer,
    autojump_clock: trio.testing.MockClock,
    caplog: pytest.LogCaptureFixture,
    when: str,
    doing: str,
) -> None:
    provider = TracerProvider()
    provider.add_span_processor(BrokenProcessor(when))
    with caplog.at_level(logging.ERROR, logger="zorkmcp.observability"):
        result = await two_calls(llm_server, OtelTracer(provider=provider))
    assert result.content == "done"
    assert [call.outcome for call in result.tool_calls] == ["ok", "error"]
    assert [r.getMessage() for r in caplog.records] == [  # said once, not once per span
        f"tracing through OpenTelemetry failed {doing} (RuntimeError: collector gone); "
        "this tracer opens no more spans, the turns go on"
    ]
    assert caplog.records[0].exc_info is not None


async def test_a_failed_tool_call_is_an_error_span(
    llm_server: LLMServer,
    autojump_clock: trio.testing.MockClock,
    provider: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    tracer_provider, spans = provider
    await two_calls(llm_server, OtelTracer(provider=tracer_provider))
    assert [(s.name, status(s)) for s in spans.get_finished_spans()] == [
        ("mcp-tool-p.ok", ("UNSET", None)),
        ("mcp-tool-p.fail", ("ERROR", "the tool call failed")),
        ("agent-tool-calling-session", ("UNSET", None)),
    ]


async def test_a_timed_out_tool_call_is_an_error_span(
    llm_server: LLMServer,
    autojump_clock: trio.testing.MockClock,
    provider: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    tracer_provider, spans = provider
    llm_server.script(tool_call_reply(tool_call("p__hang", {"tag": "h"})), content_reply("done"))
    mgr = McpManager(McpConfig(servers=(PROBE,)), McpSettings(enabled=True))
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o") as client:
        await run_turn(
            client, OPENING, open_toolbox=lambda: mgr.open_turn(), tracer=OtelTracer(provider=tracer_provider)
        )
    tool, session = spans.get_finished_spans()
    assert (tool.name, status(tool)) == ("mcp-tool-p.hang", ("ERROR", "the tool call timed out"))
    assert dict(tool.attributes or {})["duration_ms"] == 5000.0
    assert status(session) == ("UNSET", None)


async def test_spans_cut_by_the_turn_deadline_end_as_errors(
    llm_server: LLMServer,
    autojump_clock: trio.testing.MockClock,
    provider: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    tracer_provider, spans = provider
    llm_server.script(tool_call_reply(tool_call("p__hang", {"tag": "h"})))
    mgr = McpManager(McpConfig(servers=(PROBE,)), McpSettings(enabled=True))
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o") as client:
        result = await run_turn(
            client,
            OPENING,
            open_toolbox=lambda: mgr.open_turn(),
            tracer=OtelTracer(provider=tracer_provider),
            options=TurnOptions(deadline=2.0),
        )
    assert result.deadline_exceeded is True
    tool, session = spans.get_finished_spans()
    assert session.context is not None
    assert tool.parent is not None
    assert tool.parent.span_id == session.context.span_id
    assert (tool.name, status(tool)) == ("mcp-tool-p.hang", ("ERROR", "ended by Cancelled"))
    assert (session.name, status(session)) == (
        "agent-tool-calling-session",
        ("ERROR", "the turn's deadline passed"),
    )
    assert dict(session.attributes or {})["deadline_exceeded"] is True


async def test_spans_end_when_the_caller_cancels_the_turn(
    llm_server: LLMServer,
    autojump_clock: trio.testing.MockClock,
    provider: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    """Ctrl-C or the caller's own timeout: the turn is cancelled from outside, its spans still end."""
    tracer_provider, spans = provider
    llm_server.script(tool_call_reply(tool_call("p__hang", {"tag": "h"})))
    mgr = McpManager(McpConfig(servers=(PROBE,)), McpSettings(enabled=True))
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o") as client:
        with trio.move_on_after(1.5) as scope:
            await run_turn(
                client,
                OPENING,
                open_toolbox=lambda: mgr.open_turn(),
                tracer=OtelTracer(provider=tracer_provider),
            )
    assert scope.cancelled_caught
    assert [(s.name, status(s)) for s in spans.get_finished_spans()] == [
        ("mcp-tool-p.hang", ("ERROR", "ended by Cancelled")),
        ("agent-tool-calling-session", ("ERROR", "ended by Cancelled")),
    ]


async def test_no_key_or_header_value_reaches_a_span(
    llm_server: LLMServer,
    autojump_clock: trio.testing.MockClock,
    provider: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    tracer_provider, spans = provider
    llm_server.script(tool_call_reply(tool_call("p__ok", {"tag": "a"})), content_reply("done"))
    mgr = McpManager(McpConfig(servers=(PROBE,)), McpSettings(enabled=True))
    async with open_llm_client(
        base_url=llm_server.base_url,
        model="gpt-4o",
        api_key="sk-test-KEY-0451",
        extra_headers={"X-Team-Token": "hdr-TOKEN-0451"},
    ) as client:
        await run_turn(
            client, OPENING, open_toolbox=lambda: mgr.open_turn(), tracer=OtelTracer(provider=tracer_provider)
        )
    assert llm_server.requests[0].headers["authorization"] == "Bearer sk-test-KEY-0451"  # it was sent
    finished = spans.get_finished_spans()
    assert [s.name for s in finished] == ["mcp-tool-p.ok", "agent-tool-calling-session"]
    for span in finished:
        for value in (span.attributes or {}).values():
            assert "0451" not in str(value)


def test_set_langfuse_keys_without_the_package_are_said_once() -> None:
    """The keys ask for Langfuse; without the package the spans go through OpenTelemetry, and a
    warning says so once per process (an evaluation opens a tracer per episode)."""
    code = (
        "import sys\n"
        "sys.modules['langfuse'] = None  # not installed: import langfuse raises ImportError\n"
        "from zorkmcp.observability import OtelTracer, open_tracer\n"
        "keys = {'LANGFUSE_PUBLIC_KEY': 'pk-lf-1', 'LANGFUSE_SECRET_KEY': 'sk-lf-1'}\n"
        "print([type(open_tracer(keys)).__name__ for _ in range(3)])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout) == (0, "['OtelTracer', 'OtelTracer', 'OtelTracer']\n")
    assert done.stderr == (
        "LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY are set but the langfuse package is not installed "
        '(pip install "zorkmcp[langfuse]"): tracing goes through OpenTelemetry instead\n'
    )
