"""Observability (Requirement 7; seeds 000 §Observability; properties 28–32): events, logs, spans."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

import engine_servers
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st
from llm_server import LLMServer, agent_reply, content_reply, tool_call, tool_call_reply
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from zorkmcp.agent import ZorkAgent
from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.engine import TurnOptions, run_turn
from zorkmcp.errors import RunWriteError
from zorkmcp.llm import open_llm_client
from zorkmcp.mcp import McpManager
from zorkmcp.observability import (
    EventRecorder,
    LogFiles,
    OtelTracer,
    open_tracer,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

    import trio.testing

THOUGHTBOX = ServerConfig(
    name="thoughtbox", type="inprocess", module="engine_servers:create_thoughtbox_server"
)
PROBE = ServerConfig(name="p", type="inprocess", module="engine_servers:create_probe_server", timeout=5)
OPENING = [{"role": "system", "content": "play"}, {"role": "user", "content": "West of House"}]
ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=20)


@pytest.fixture(autouse=True)
def _reset_servers() -> None:
    engine_servers.reset_probe()
    engine_servers.THINK_DELAYS.clear()


@pytest.fixture
def exporter() -> Iterator[tuple[InMemorySpanExporter, OtelTracer]]:
    spans = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    yield spans, OtelTracer(provider=provider)
    provider.shutdown()


# --- the recorder ---------------------------------------------------------------------


def test_recorder_adds_context_and_keeps_order() -> None:
    recorder = EventRecorder(context={"episode_id": "ep-7", "turn": 3})
    recorder.emit("mcp_tool_call", tool_name="thoughtbox.think", turn=4)
    recorder.emit("mcp_no_content", iterations=2)
    recorder.log("WARNING", "Turn 3: something")
    first, second = recorder.events
    assert first["event_type"] == "mcp_tool_call"
    assert (first["episode_id"], first["turn"]) == ("ep-7", 4)  # an explicit field wins
    assert (second["episode_id"], second["turn"], second["iterations"]) == ("ep-7", 3, 2)
    assert isinstance(first["timestamp"], float)
    assert recorder.of_type("mcp_no_content") == [second]
    assert recorder.lines == ["[WARNING] Turn 3: something"]
    # In the episode log, a line names its episode: several episodes may share one file.
    assert recorder.drain() == ([first, second], ["ep-7 [WARNING] Turn 3: something"])
    assert (recorder.events, recorder.lines) == ([], [])
    assert recorder.of_type("mcp_no_content") == [second]  # inspection outlives the drain


def test_recorder_is_bounded_when_nobody_drains() -> None:
    recorder = EventRecorder(limit=3)
    for index in range(5):
        recorder.emit("tick", index=index)
        recorder.log("INFO", f"tick {index}")
    assert [e["index"] for e in recorder.events] == [2, 3, 4]
    assert [e["index"] for e in recorder.recent] == [2, 3, 4]
    assert recorder.lines == ["[INFO] tick 2", "[INFO] tick 3", "[INFO] tick 4"]
    assert recorder.dropped == 4  # two events and two lines pushed out before anyone drained them


def test_listeners_see_every_event_and_line_as_it_happens() -> None:
    seen: list[tuple[str, Any]] = []

    class Listener:
        def emit(self, event_type: str, /, **fields: Any) -> None:
            seen.append((event_type, fields["episode_id"]))

        def log(self, level: str, message: str, /) -> None:
            seen.append((level, message))

    recorder = EventRecorder(context={"episode_id": "ep-1"})
    recorder.add_listener(Listener())
    recorder.emit("mcp_no_content", iterations=1)
    recorder.log("WARNING", "careful")
    assert seen == [("mcp_no_content", "ep-1"), ("WARNING", "careful")]


# --- the files ------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | ANY_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(ANY_TEXT, inner, max_size=3),
    max_leaves=8,
)
ODD_VALUES = st.sampled_from([Path("/tmp/x"), {1, 2}, b"bytes", object])


@settings(max_examples=100)
@given(
    events=st.lists(
        st.tuples(
            ANY_TEXT.filter(bool),
            st.dictionaries(st.from_regex(r"\A[a-z_]{1,10}\Z"), JSON_VALUES | ODD_VALUES, max_size=4),
        ),
        max_size=5,
    ),
    messages=st.lists(
        st.tuples(st.sampled_from(["DEBUG", "INFO", "WARNING", "ERROR"]), ANY_TEXT), max_size=5
    ),
)
def test_log_files_write_one_json_object_and_one_log_entry_per_line(
    events: list[tuple[str, dict[str, Any]]], messages: list[tuple[str, str]]
) -> None:
    recorder = EventRecorder(context={"episode_id": "ep"})
    for event_type, fields in events:
        fields.pop("timestamp", None)
        fields.pop("event_type", None)
        recorder.emit(event_type, **fields)
    for level, message in messages:
        recorder.log(level, message)
    drained, lines = recorder.drain()
    with tempfile.TemporaryDirectory() as tmp:
        files = LogFiles(
            json_log=Path(tmp, "logs", "events.jsonl"), episode_log=Path(tmp, "logs", "episode.log")
        )
        files.write(drained, lines)
        files.write(drained, lines)  # appends
        if drained:
            written = Path(tmp, "logs", "events.jsonl").read_text(encoding="utf-8")
            assert written.endswith("\n")
            records = [json.loads(line) for line in written.splitlines()]
            assert len(records) == 2 * len(drained)
            for record, original in zip(records, drained + drained, strict=True):
                assert isinstance(record, dict)
                assert record["event_type"] == original["event_type"]
                assert record["episode_id"] == "ep"
                for key, value in original.items():
                    if not isinstance(value, Path | set | bytes | type):
                        assert record[key] == value
        else:
            assert not Path(tmp, "logs", "events.jsonl").exists()
        if lines:
            text = Path(tmp, "logs", "episode.log").read_text(encoding="utf-8")
            assert text.endswith("\n")
            physical = text.splitlines()
            assert len(physical) == 2 * len(lines)
            for line, (level, _) in zip(physical, messages + messages, strict=True):
                assert line.startswith(f"ep [{level}] ")


async def test_episode_log_has_the_seeds_format(
    llm_server: LLMServer, autojump_clock: trio.testing.MockClock
) -> None:
    """Seeds 000 §Episode Logs, line for line, from a real turn."""
    engine_servers.THINK_DELAYS.extend([0.3, 0.2])
    llm_server.script(
        tool_call_reply(
            tool_call("thoughtbox__think", {"thought": "I should explore..."}),
            tool_call("thoughtbox__think", {"thought": "Based on the puzzle..."}),
        ),
        agent_reply("examine door"),
    )
    events = EventRecorder(context={"episode_id": "ep-15"})
    mgr = McpManager(McpConfig(servers=(THOUGHTBOX,)), McpSettings(enabled=True), events=events)
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o") as client:
        agent = ZorkAgent(model=client, settings=McpSettings(enabled=True), mcp=mgr, events=events)
        action = await agent.generate_action("West of House", turn=15)
    assert action.action == "examine door"
    assert [line for line in events.lines if "Turn 15" in line] == [
        "[INFO] Turn 15: MCP session started (max 20 iterations)",
        "[INFO] Turn 15 Iteration 1: Agent calling tool thoughtbox.think",
        '[DEBUG] Turn 15 Iteration 1: Tool arguments: {"thought": "I should explore..."}',
        "[INFO] Turn 15 Iteration 1: Tool result received (0.3s)",
        "[INFO] Turn 15 Iteration 1: Agent calling tool thoughtbox.think",
        '[DEBUG] Turn 15 Iteration 1: Tool arguments: {"thought": "Based on the puzzle..."}',
        "[INFO] Turn 15 Iteration 1: Tool result received (0.2s)",
        "[INFO] Turn 15: MCP session complete (2 iterations, 2 tool calls)",
        "[INFO] Turn 15: Agent action: examine door",
    ]
    tool_events = [e for e in events.events if e["event_type"].startswith(("mcp_tool", "mcp_session"))]
    assert [e["event_type"] for e in tool_events] == [
        "mcp_tool_call",
        "mcp_tool_result",
        "mcp_tool_call",
        "mcp_tool_result",
        "mcp_session_complete",
    ]
    assert tool_events[0] | {"timestamp": 0} == {
        "timestamp": 0,
        "event_type": "mcp_tool_call",
        "episode_id": "ep-15",
        "tool_name": "thoughtbox.think",
        "server_name": "thoughtbox",
        "arguments": {"thought": "I should explore..."},
        "iteration": 1,
    }
    assert tool_events[1] | {"timestamp": 0} == {
        "timestamp": 0,
        "event_type": "mcp_tool_result",
        "episode_id": "ep-15",
        "tool_name": "thoughtbox.think",
        "server_name": "thoughtbox",
        "result_type": "dict",
        "result_length": len(str({"thought": "I should explore...", "next_thought_needed": False})),
        "is_error": False,
        "duration_ms": 300.0,
        "iteration": 1,
    }
    assert tool_events[-1] | {"timestamp": 0} == {
        "timestamp": 0,
        "event_type": "mcp_session_complete",
        "episode_id": "ep-15",
        "iterations": 2,
        "tool_calls_count": 2,
        "tools_used": ["thoughtbox.think"],
        "final_action": "examine door",
    }

    with tempfile.TemporaryDirectory() as tmp:
        files = LogFiles(json_log=Path(tmp, "events.jsonl"), episode_log=Path(tmp, "episode.log"))
        files.write(*events.drain())
        episode = Path(tmp, "episode.log").read_text(encoding="utf-8").splitlines()
        assert "ep-15 [INFO] Turn 15: MCP session complete (2 iterations, 2 tool calls)" in episode
        records = [
            json.loads(line) for line in Path(tmp, "events.jsonl").read_text(encoding="utf-8").splitlines()
        ]
    assert [r["event_type"] for r in records if r["event_type"].startswith("mcp_tool")] == [
        "mcp_tool_call",
        "mcp_tool_result",
        "mcp_tool_call",
        "mcp_tool_result",
    ]


def test_multi_line_messages_stay_one_entry_in_the_episode_log() -> None:
    recorder = EventRecorder()
    recorder.log(
        "WARNING", "Turn 2 Iteration 1: Tool call failed: p.ok - 1 validation error\ntag\n  Field required"
    )
    with tempfile.TemporaryDirectory() as tmp:
        LogFiles(json_log=None, episode_log=Path(tmp, "episode.log")).write([], recorder.lines)
        text = Path(tmp, "episode.log").read_text(encoding="utf-8")
    assert text == (
        "[WARNING] Turn 2 Iteration 1: Tool call failed: p.ok - 1 validation error\\ntag\\n  Field required\n"
    )


FULL = Path("/dev/full")
"""A device every write to fails with ENOSPC: a full disk, from the kernel, without root."""


@pytest.mark.skipif(not FULL.exists(), reason="needs /dev/full")
def test_a_log_on_a_full_disk_is_named_and_its_lines_wait_for_room(tmp_path: Path) -> None:
    events_log, episode_log = tmp_path / "events.jsonl", tmp_path / "episode.log"
    events_log.symlink_to(FULL)
    files = LogFiles(json_log=events_log, episode_log=episode_log)
    recorder = EventRecorder(context={"episode_id": "ep"})
    recorder.set_context(turn=1)
    recorder.emit("turn_complete")
    recorder.log("INFO", "Turn 1")
    with pytest.raises(RunWriteError) as caught:
        files.write(*recorder.drain())
    assert str(caught.value) == f"{events_log}: cannot be written (No space left on device)"
    assert caught.value.remedy == "make room on its disk"
    assert episode_log.read_text() == "ep [INFO] Turn 1\n"  # the other log is written all the same

    events_log.unlink()  # room again: the turn the full disk held back comes first, and no gap
    recorder.set_context(turn=2)
    recorder.emit("turn_complete")
    files.write(*recorder.drain())
    assert [e["turn"] for e in map(json.loads, events_log.read_text().splitlines())] == [1, 2]
    assert files.dropped == 0


@pytest.mark.skipif(not FULL.exists(), reason="needs /dev/full")
def test_the_lines_a_full_disk_holds_back_are_bounded(tmp_path: Path) -> None:
    events_log = tmp_path / "events.jsonl"
    events_log.symlink_to(FULL)
    files = LogFiles(json_log=events_log, episode_log=None, limit=3)
    for turn in range(1, 5):
        with pytest.raises(RunWriteError, match="No space left on device"):
            files.write([{"event_type": "turn_complete", "turn": turn}] * 2, [])
    assert files.dropped == 8 - 3
    events_log.unlink()
    files.write([], [])
    assert [e["turn"] for e in map(json.loads, events_log.read_text().splitlines())] == [3, 4, 4]


_FILL_UP = """\
import resource, sys
from pathlib import Path
from zorkmcp.errors import RunWriteError
from zorkmcp.observability import LogFiles

log, limit = Path(sys.argv[1]), int(sys.argv[2])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))  # Python ignores SIGXFSZ
try:
    LogFiles(json_log=log, episode_log=None).write([{"event_type": "turn_complete", "text": "x" * 400}], [])
except RunWriteError as exc:
    print(exc, exc.remedy, sep="; ")
"""


def test_a_log_that_fills_up_in_the_middle_of_a_line_keeps_its_whole_lines(tmp_path: Path) -> None:
    # A file that cannot grow past a size (RLIMIT_FSIZE, no root needed): the write stops in the
    # middle of the new line, as on a disk that fills up.
    log = tmp_path / "events.jsonl"
    log.write_text('{"event_type": "turn_complete", "turn": 1}\n')
    before = log.read_bytes()
    limit = len(before) + 100
    done = subprocess.run(
        [sys.executable, "-c", _FILL_UP, str(log), str(limit)], capture_output=True, text=True, check=False
    )
    assert log.read_bytes() == before  # not half of the new line
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        f"{log}: cannot be written (File too large); "
        "allow larger files (ulimit -f) or give it a file system that takes them\n"
    )


# --- tracing --------------------------------------------------------------------------


async def test_otel_spans_for_the_session_and_each_tool_call(
    llm_server: LLMServer,
    autojump_clock: trio.testing.MockClock,
    exporter: tuple[InMemorySpanExporter, OtelTracer],
) -> None:
    """Properties 31, 32 with OpenTelemetry: one session span, one span per tool call inside it."""
    spans, tracer = exporter
    llm_server.script(
        tool_call_reply(tool_call("p__ok", {"tag": "a", "seconds": 1.5}), tool_call("p__fail", {"tag": "b"})),
        tool_call_reply(tool_call("p__hang", {"tag": "c"}), tool_call("p__ok", {"tag": "skipped"})),
        content_reply("done"),
    )
    mgr = McpManager(McpConfig(servers=(PROBE,)), McpSettings(enabled=True))
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o") as client:
        result = await run_turn(
            client,
            OPENING,
            open_toolbox=lambda: mgr.open_turn(),
            tracer=tracer,
            options=TurnOptions(turn=9, parse_answer=lambda content: content),
        )
    assert result.content == "done"
    finished = spans.get_finished_spans()
    assert [s.name for s in finished] == [
        "mcp-tool-p.ok",
        "mcp-tool-p.fail",
        "mcp-tool-p.hang",
        "agent-tool-calling-session",
    ]
    *tools, session = finished
    assert dict(session.attributes or {}) == {
        "turn": 9,
        "mcp_enabled": True,
        "max_iterations": 20,
        "tools_offered": 3,
        "iterations_used": 3,
        "tools_called": 4,
        "final_action": "done",
        "deadline_exceeded": False,
    }
    assert session.parent is None
    assert session.context is not None
    for span in tools:
        assert span.parent is not None
        assert span.parent.span_id == session.context.span_id
        assert span.context is not None
        assert span.context.trace_id == session.context.trace_id
    assert dict(tools[0].attributes or {}) == {
        "tool_name": "p.ok",
        "server_name": "p",
        "timeout_seconds": 5.0,
        "input": json.dumps({"tag": "a", "seconds": 1.5}),
        "output": json.dumps({"content": {"tag": "a", "seconds": 1.5}}),  # the probe echoes its arguments
        "is_error": False,
        "timed_out": False,
        "duration_ms": 1500.0,
    }
    assert (tools[1].attributes or {})["is_error"] is True
    assert dict(tools[2].attributes or {})["timed_out"] is True
    assert dict(tools[2].attributes or {})["duration_ms"] == 5000.0
    assert tools[0].end_time is not None
    assert tools[0].start_time is not None


async def test_one_session_span_per_turn(
    llm_server: LLMServer, exporter: tuple[InMemorySpanExporter, OtelTracer]
) -> None:
    spans, tracer = exporter
    llm_server.script(content_reply("a"), content_reply("b"))
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o") as client:
        for turn in (1, 2):
            await run_turn(client, OPENING, tracer=tracer, options=TurnOptions(turn=turn))
    sessions = spans.get_finished_spans()
    assert [
        (s.name, (s.attributes or {})["turn"], (s.attributes or {})["tools_offered"]) for s in sessions
    ] == [
        ("agent-tool-calling-session", 1, 0),
        ("agent-tool-calling-session", 2, 0),
    ]
    assert sessions[0].context is not None
    assert sessions[1].context is not None
    assert sessions[0].context.trace_id != sessions[1].context.trace_id


def test_default_otel_tracer_uses_the_global_provider(
    exporter: tuple[InMemorySpanExporter, OtelTracer],
) -> None:
    """Without a provider the spans go to the global one (a no-op here), not to another provider."""
    spans, _ = exporter
    with OtelTracer().span("agent-tool-calling-session", turn=1) as span:
        span.update(iterations_used=1, nested={"a": [1]}, nothing=None)
    assert spans.get_finished_spans() == ()


# --- Langfuse or OpenTelemetry --------------------------------------------------------
# (the real Langfuse SDK, as CI installs it: tests/test_tracing_langfuse.py)


KEYS = {"LANGFUSE_PUBLIC_KEY": "pk-lf-1", "LANGFUSE_SECRET_KEY": "sk-lf-1"}


@pytest.mark.parametrize(
    "env",
    [{}, {"LANGFUSE_PUBLIC_KEY": "pk-lf-1"}, {"LANGFUSE_SECRET_KEY": "sk-lf-1"}, dict.fromkeys(KEYS, "")],
)
def test_open_tracer_needs_both_langfuse_keys(env: dict[str, str]) -> None:
    assert isinstance(open_tracer(env), OtelTracer)


def test_open_tracer_falls_back_when_langfuse_is_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "langfuse", None)  # import langfuse -> ImportError
    assert isinstance(open_tracer(KEYS), OtelTracer)
