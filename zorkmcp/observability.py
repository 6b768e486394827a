"""Observability: structured events, the human-readable episode log, and tracing (Requirement 7).

Async code never writes files. During a turn, events and log lines are collected in memory by an
:class:`EventRecorder`; the synchronous side (the orchestrator, after ``get_action`` returned)
appends them to the JSON-lines event log and the episode log with :class:`LogFiles`.

Event types (seeds 000 §Observability, 002 Requirement 7): ``mcp_tool_call``, ``mcp_tool_result``,
``mcp_tool_timeout``, ``mcp_tool_error``, ``mcp_session_complete``, ``mcp_no_content``,
``mcp_unexpected_state``, ``mcp_disabled_fallback``, ``agent_parse_error`` (and a few of ours, listed
in the README).

Tracing: one span for the tool-calling session and one per tool call. Langfuse when its keys are set
and the optional ``langfuse`` package is installed, otherwise OpenTelemetry (a no-op unless the
application configured a tracer provider).
"""

from __future__ import annotations

import json
import os
import threading
import time
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, Protocol

import attrs

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from pathlib import Path

    from opentelemetry.trace import TracerProvider

__all__ = [
    "EventRecorder",
    "EventSink",
    "LangfuseTracer",
    "LogFiles",
    "NullSink",
    "OtelTracer",
    "Span",
    "Tracer",
    "open_tracer",
]


class EventSink(Protocol):
    """Where the engine and the MCP layer report what happened."""

    def emit(self, event_type: str, /, **fields: Any) -> None:
        """Record one structured event (a JSON-lines record)."""

    def log(self, level: str, message: str, /) -> None:
        """Record one human-readable line (``level`` is INFO, WARNING, DEBUG or ERROR)."""


class NullSink:
    """An :class:`EventSink` that drops everything."""

    def emit(self, event_type: str, /, **fields: Any) -> None:
        del event_type, fields

    def log(self, level: str, message: str, /) -> None:
        del level, message


@attrs.define
class EventRecorder:
    """An :class:`EventSink` that keeps events and log lines in memory.

    ``context`` fields (``episode_id``, ``turn``) are added to every event that does not set them.
    Thread-safe: a ``bridge.Bridge`` records from its loop thread (prewarmed servers start and stop
    in the background) while the caller's thread drains.
    """

    context: dict[str, Any] = attrs.field(factory=dict)
    events: list[dict[str, Any]] = attrs.field(factory=list)
    lines: list[str] = attrs.field(factory=list)
    echo: bool = False
    """Also forward log lines to the stdlib logger ``zorkmcp`` (handy in a REPL)."""
    _lock: threading.Lock = attrs.field(factory=threading.Lock, repr=False, eq=False, init=False)

    def emit(self, event_type: str, /, **fields: Any) -> None:
        record: dict[str, Any] = {"timestamp": time.time(), "event_type": event_type}
        with self._lock:
            for key, value in self.context.items():
                record.setdefault(key, value)
            record.update(fields)
            self.events.append(record)

    def log(self, level: str, message: str, /) -> None:
        with self._lock:
            self.lines.append(f"[{level}] {message}")
        if self.echo:
            import logging

            logging.getLogger("zorkmcp").log(logging.getLevelName(level), message)

    def of_type(self, event_type: str) -> list[dict[str, Any]]:
        """The recorded events of one type, oldest first."""
        with self._lock:
            return [e for e in self.events if e["event_type"] == event_type]

    def drain(self) -> tuple[list[dict[str, Any]], list[str]]:
        """Hand over everything recorded so far and start empty."""
        with self._lock:
            events, lines = self.events, self.lines
            self.events, self.lines = [], []
        return events, lines


@attrs.define
class LogFiles:
    """Appends drained events and lines to the JSON-lines event log and the episode log.

    Synchronous on purpose: call it from the orchestrator between turns, never from async code.
    """

    json_log: Path | None
    episode_log: Path | None

    def write(self, events: list[dict[str, Any]], lines: list[str]) -> None:
        """Append one JSON object per line to the event log and one entry per line to the episode log.

        Event lines are ASCII JSON: no character inside a string (U+2028, a lone surrogate echoed
        from a model) can split a line or fail to encode. A message that contains line breaks (a
        tool's error text, say) stays one episode-log entry: its breaks are written as ``\\n``.
        """
        if self.json_log is not None and events:
            self.json_log.parent.mkdir(parents=True, exist_ok=True)
            with self.json_log.open("a", encoding="utf-8") as f:
                for event in events:
                    f.write(json.dumps(event, default=str) + "\n")
        if self.episode_log is not None and lines:
            self.episode_log.parent.mkdir(parents=True, exist_ok=True)
            with self.episode_log.open("a", encoding="utf-8", errors="backslashreplace") as f:
                f.write("".join("\\n".join(line.splitlines()) + "\n" for line in lines))


class Span(Protocol):
    """What the engine does with a span: attach attributes."""

    def update(self, **attributes: Any) -> None: ...


class Tracer(Protocol):
    """Starts spans; the engine wraps the tool-calling session and each tool call."""

    def span(self, name: str, /, **attributes: Any) -> AbstractContextManager[Span]: ...


def _flatten(attributes: Mapping[str, Any]) -> dict[str, Any]:
    """OpenTelemetry accepts str/bool/int/float (and sequences of them); JSON-encode the rest."""
    out: dict[str, Any] = {}
    for key, value in attributes.items():
        if value is None:
            continue
        if isinstance(value, str | bool | int | float):
            out[key] = value
        else:
            out[key] = json.dumps(value, default=str, ensure_ascii=False)
    return out


@attrs.define
class _OtelSpan:
    span: Any

    def update(self, **attributes: Any) -> None:
        self.span.set_attributes(_flatten(attributes))


@attrs.define
class OtelTracer:
    """Spans through the OpenTelemetry API (a no-op unless a tracer provider is configured).

    Args:
        name: the instrumentation scope name.
        provider: the tracer provider to use (for instance an SDK provider with an in-memory
            exporter in tests); ``None`` uses the global one.
    """

    name: str = "zorkmcp"
    provider: TracerProvider | None = attrs.field(default=None, kw_only=True)

    @contextmanager
    def span(self, name: str, /, **attributes: Any) -> Iterator[Span]:
        from opentelemetry import trace

        tracer = trace.get_tracer(self.name, tracer_provider=self.provider)
        with tracer.start_as_current_span(name, attributes=_flatten(attributes)) as span:
            yield _OtelSpan(span)


@attrs.define
class _LangfuseSpan:
    span: Any

    def update(self, **attributes: Any) -> None:
        self.span.update(metadata=attributes)


@attrs.define
class LangfuseTracer:
    """Spans through Langfuse (seeds 000 §Langfuse Integration)."""

    client: Any

    @contextmanager
    def span(self, name: str, /, **attributes: Any) -> Iterator[Span]:
        with self.client.start_as_current_span(name=name, metadata=attributes) as span:
            yield _LangfuseSpan(span)


def open_tracer(env: Mapping[str, str] | None = None) -> OtelTracer | LangfuseTracer:
    """Langfuse when ``LANGFUSE_PUBLIC_KEY`` and ``LANGFUSE_SECRET_KEY`` are set and the package is
    installed (``pip install zorkmcp[langfuse]``), else OpenTelemetry."""
    env = os.environ if env is None else env
    if env.get("LANGFUSE_PUBLIC_KEY") and env.get("LANGFUSE_SECRET_KEY"):
        try:
            from langfuse import get_client
        except ImportError:
            return OtelTracer()
        return LangfuseTracer(get_client())
    return OtelTracer()
