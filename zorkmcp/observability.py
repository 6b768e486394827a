"""Observability: structured events, the human-readable episode log, and tracing (Requirement 7).

One event stream: every component (the MCP layer, the LLM client, the engine, the agent, the
episode loop) reports through one :class:`EventSink` — in an episode, one :class:`EventRecorder`.
Async code never writes files: the synchronous side (``bridge.get_action()``, ``bridge.Bridge``,
``zorkmcp play``) drains the recorder after every turn and appends to the JSON-lines event log and
the episode log with :class:`LogFiles`. Logs, the live view and reports are readers of that stream.

Event types (seeds 000 §Observability, 002 Requirement 7): ``mcp_tool_call``, ``mcp_tool_result``,
``mcp_tool_timeout``, ``mcp_tool_error``, ``mcp_session_complete``, ``mcp_no_content``,
``mcp_unexpected_state``, ``mcp_disabled_fallback``, ``agent_parse_error`` (and a few of ours, listed
in the README).

Tracing: one span for the tool-calling session and one per tool call. Langfuse (any SDK from 3.0)
when its keys are set and the optional ``langfuse`` package is installed, otherwise OpenTelemetry (a
no-op unless the application configured a tracer provider; ``opentelemetry-instrument`` does for the
CLI). A failed or timed-out tool call, a turn past its deadline and a span a cancellation ends are
errors. A fault of the tracing backend never fails a turn: it is logged once and the tracer goes quiet.
Spans Langfuse's host does not take (it cannot be reached, it refuses the keys) are said in one line,
once, instead of the exporter's warning per batch; at exit the last spans get at most Langfuse's
request timeout (``LANGFUSE_TIMEOUT``, 5 s), and none once the host has failed, so an unreachable host
does not hold the process through the exporter's retries.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import logging
import os
import re
import stat
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from ._outputs import append_whole, write_error

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping
    from contextlib import AbstractContextManager
    from pathlib import Path
    from types import TracebackType

    from opentelemetry.trace import TracerProvider

    from .errors import RunWriteError

__all__ = [
    "DEFAULT_EVENT_LIMIT",
    "EXIT_WAIT_SECONDS",
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

_log = logging.getLogger("zorkmcp.observability")


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


DEFAULT_EVENT_LIMIT = 5000
"""How many events (and, separately, episode-log lines) an :class:`EventRecorder` holds at most."""

_BOOTTIME = getattr(time, "CLOCK_BOOTTIME", None)


def _monotonic() -> float:
    """Seconds of a clock that never goes back: ``CLOCK_BOOTTIME`` (a suspend counts), else monotonic."""
    return time.monotonic() if _BOOTTIME is None else time.clock_gettime(_BOOTTIME)


_CONTEXT_FIELDS = frozenset({"episode_id", "turn"})
"""Fields an event leaves out when it sets them to ``None`` (also any other field of the context)."""


@attrs.define
class EventRecorder:
    """The one :class:`EventSink` of an episode: every component reports here.

    It keeps what was reported in memory, **bounded**, for two readers:

    * the writer of the log files (:meth:`drain` hands over everything not yet written; the
      synchronous side calls it after every turn — ``bridge.get_action()``, ``bridge.Bridge`` and
      ``zorkmcp play`` do);
    * whoever inspects the episode (:meth:`of_type`, :attr:`recent`: the newest events, kept after
      a drain).

    When nobody drains, the oldest pending records are dropped past ``limit`` and :attr:`dropped`
    counts them, so a long episode holds flat memory.

    Every event's ``timestamp`` is in seconds since the Unix epoch (a float), and never less than the
    one of the event recorded before it: it is read from a monotonic clock (Linux's ``CLOCK_BOOTTIME``,
    which counts a suspend too), set to the wall clock when the recorder was made, while the record
    is stored. A wall clock set back (NTP, by hand) or two threads that report at once cannot put the
    events out of order.

    ``context`` fields (``episode_id``, ``turn``) are added to every event that does not set them;
    an event that sets one to ``None`` goes without it (a prewarmed server's start belongs to no
    turn). In the episode log, lines start with the episode id (see :meth:`drain`). Thread-safe: a
    ``bridge.Bridge`` records from its loop thread (prewarmed
    servers start and stop in the background) while the caller's thread drains.
    """

    context: dict[str, Any] = attrs.field(factory=dict)
    limit: int = DEFAULT_EVENT_LIMIT
    dropped: int = 0
    _events: deque[dict[str, Any]] = attrs.field(init=False)
    _lines: deque[tuple[str | None, str]] = attrs.field(init=False)
    _recent: deque[dict[str, Any]] = attrs.field(init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, repr=False, eq=False, init=False)
    _listeners: list[EventSink] = attrs.field(factory=list, repr=False, eq=False, init=False)
    _epoch: float = attrs.field(init=False, repr=False, eq=False)
    """The wall-clock time at which the monotonic clock read 0 (timestamps are this plus its reading)."""

    def add_listener(self, listener: EventSink) -> None:
        """Also pass every event and line to ``listener`` as it happens (a live view, a terminal).

        Listeners are called from whichever thread reports (the loop thread of a ``Bridge``), after
        the record is stored; they must be quick and must not raise. One that raises an
        ``Exception`` is removed (it gets nothing more; the others still get every record) and
        said once: an ``ERROR`` line in the episode log and an error of the ``zorkmcp.observability``
        logger with its traceback, naming the listener, the record and the exception. The engine
        goes on as if nothing had happened. Other exceptions (``KeyboardInterrupt``) go through.
        """
        with self._lock:
            self._listeners.append(listener)

    def __attrs_post_init__(self) -> None:
        self._events = deque(maxlen=self.limit)
        self._lines = deque(maxlen=self.limit)
        self._recent = deque(maxlen=self.limit)
        self._epoch = time.time() - _monotonic()

    def set_context(self, **fields: Any) -> None:
        """Set context fields (e.g. ``turn``) for the events that follow."""
        with self._lock:
            self.context.update(fields)

    def emit(self, event_type: str, /, **fields: Any) -> None:
        with self._lock:  # the clock is read under the lock: the events' order is the timestamps'
            record: dict[str, Any] = {"timestamp": self._epoch + _monotonic(), "event_type": event_type}
            record.update(self.context)
            record.update(fields)
            for key in _CONTEXT_FIELDS | self.context.keys():
                if key in fields and fields[key] is None:
                    del record[key]  # set to None: the event has none (not the context's)
            if len(self._events) == self.limit:
                self.dropped += 1
            self._events.append(record)
            self._recent.append(record)
            listeners = list(self._listeners)
        shown = {k: v for k, v in record.items() if k != "event_type"}
        failed: list[tuple[EventSink, Exception]] = []
        for listener in listeners:
            try:
                listener.emit(event_type, **shown)
            except Exception as exc:  # noqa: BLE001 - a reader's fault must not become the engine's
                failed.append((listener, exc))
        for listener, error in failed:  # said once the others have this event
            self._drop_listener(listener, f"the event '{event_type}'", error)

    def log(self, level: str, message: str, /) -> None:
        with self._lock:
            episode = self.context.get("episode_id")
            if len(self._lines) == self.limit:
                self.dropped += 1
            self._lines.append((None if episode is None else str(episode), f"[{level}] {message}"))
            listeners = list(self._listeners)
        failed: list[tuple[EventSink, Exception]] = []
        for listener in listeners:
            try:
                listener.log(level, message)
            except Exception as exc:  # noqa: BLE001 - a reader's fault must not become the engine's
                failed.append((listener, exc))
        for listener, error in failed:  # said once the others have this line
            self._drop_listener(listener, f"an episode-log line ({level})", error)

    def _drop_listener(self, listener: EventSink, record: str, exc: Exception) -> None:
        """Remove a listener that raised, and say so once (the other listeners hear it too)."""
        with self._lock:
            index = next((i for i, known in enumerate(self._listeners) if known is listener), None)
            if index is None:
                return  # another thread removed it already (and said so)
            del self._listeners[index]
        kind = type(listener)
        message = (
            f"event listener {kind.__module__}.{kind.__qualname__} raised {type(exc).__name__}: {exc} "
            f"on {record}; it was removed and gets no more events (a listener must not raise)"
        )
        _log.error("%s", message, exc_info=exc)
        self.log("ERROR", message)

    @property
    def events(self) -> list[dict[str, Any]]:
        """The events not yet drained, oldest first."""
        with self._lock:
            return list(self._events)

    @property
    def lines(self) -> list[str]:
        """The episode-log lines not yet drained, oldest first, in the seeds' format (``[INFO] …``)."""
        with self._lock:
            return [line for _, line in self._lines]

    @property
    def recent(self) -> list[dict[str, Any]]:
        """The newest events (at most ``limit``), drained or not, oldest first."""
        with self._lock:
            return list(self._recent)

    def of_type(self, event_type: str) -> list[dict[str, Any]]:
        """The recent events of one type, oldest first (see :attr:`recent`)."""
        with self._lock:
            return [e for e in self._recent if e["event_type"] == event_type]

    def drain(self) -> tuple[list[dict[str, Any]], list[str]]:
        """Hand over the events and lines not yet drained, for the log files.

        Each line starts with its episode id when the context had one (``episode-3f2a… [INFO] Turn 3:
        …``), so episodes that share one episode log can be told apart.
        """
        with self._lock:
            events = list(self._events)
            lines = [line if episode is None else f"{episode} {line}" for episode, line in self._lines]
            self._events.clear()
            self._lines.clear()
        return events, lines


@attrs.define
class LogFiles:
    """Appends drained events and lines to the JSON-lines event log and the episode log.

    Synchronous on purpose: call it from the orchestrator between turns, never from async code.

    Each log gets one append per :meth:`write`, whole or not at all: a log that cannot take it (a
    full disk, a file grown past its limit) is cut back to the end of its last whole line, so what it
    held stays valid. The lines it could not take are held and go first into the next write of that
    log (one that fits leaves no gap), at most ``limit`` of them (past that the oldest are dropped and
    counted in :attr:`dropped`).

    A log whose last line has no line break (a process killed with ``kill -9`` in the middle of its
    write, a log a program or an editor left so) never gets the next line glued to it: the event
    log's torn line, which is not JSON, is cut off (said once, as a warning of the
    ``zorkmcp.observability`` logger); a whole one, and the episode log's, is ended with a line break
    first. Appends to a regular file hold an exclusive ``flock`` on it, so that zorkmcp processes
    sharing a log never cut what another is writing.
    """

    json_log: Path | None
    episode_log: Path | None
    limit: int = attrs.field(default=DEFAULT_EVENT_LIMIT, kw_only=True)
    dropped: int = attrs.field(default=0, init=False)
    """Lines dropped because their log could not be written for ``limit`` lines."""
    _held: dict[str, list[str]] = attrs.field(
        factory=lambda: {"json": [], "episode": []}, init=False, repr=False
    )

    def write(self, events: list[dict[str, Any]], lines: list[str]) -> None:
        """Append one JSON object per line to the event log and one entry per line to the episode log.

        Event lines are ASCII JSON: no character inside a string (U+2028, a lone surrogate echoed
        from a model) can split a line or fail to encode. A message that contains line breaks (a
        tool's error text, say) stays one episode-log entry: its breaks are written as ``\\n``, and
        its other control characters (a server's ANSI colours, a NUL) as ``\\x1b``, ``\\x00``…, so
        that ``tail -f`` shows no terminal's commands and ``grep`` takes the log for text.

        Raises:
            RunWriteError: a log cannot be written (a full disk, a folder gone); the message names the
                file and the reason. The other log is written all the same; the lines not written are
                held for the next call.
        """
        failures = [
            failure
            for failure in (
                self._append("json", self.json_log, [json.dumps(e, default=str) + "\n" for e in events]),
                self._append("episode", self.episode_log, [_one_line(x) + "\n" for x in lines]),
            )
            if failure is not None
        ]
        if failures:
            raise failures[0]

    def _append(self, which: str, path: Path | None, new: list[str]) -> RunWriteError | None:
        """Append the held lines and ``new`` to ``path`` in one write; the error, if it could not."""
        if path is None:
            return None
        held = self._held[which]
        held.extend(new)
        if not held:
            return None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            data = "".join(held).encode("utf-8", errors="backslashreplace")
            with _held_for_append(path) as log:
                if log is not None:
                    data = _mend_last_line(log, path, json_lines=which == "json") + data
                append_whole(path if log is None else log, data)  # through the locked descriptor
        except OSError as exc:
            excess = len(held) - self.limit
            if excess > 0:
                del held[:excess]
                self.dropped += excess
            return write_error(path, exc)
        held.clear()
        return None


_CONTROL = re.compile("[\x00-\x08\x0e-\x1b\x1f\x7f-\x9f]")
"""Control characters other than the tab and those :meth:`str.splitlines` takes as line breaks."""


def _one_line(message: str) -> str:
    """``message`` as one episode-log entry: line breaks as ``\\n``, other control characters escaped."""
    return _CONTROL.sub(lambda found: f"\\x{ord(found.group()):02x}", "\\n".join(message.splitlines()))


@contextlib.contextmanager
def _held_for_append(path: Path) -> Iterator[int | None]:
    """An exclusive ``flock`` on the regular file at ``path`` for one append, and a descriptor (open for
    appending) to read its end with and write through; ``None`` when it is no regular file (a
    terminal, a pipe, ``/dev/null``), is not there yet, or cannot be opened (the append opens it). On
    a file system that does not lock, the descriptor comes without the lock."""
    fd: int | None = None
    with contextlib.suppress(OSError):
        if stat.S_ISREG(os.stat(path).st_mode):
            fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CLOEXEC)
    if fd is None:
        yield None
        return
    try:
        with contextlib.suppress(OSError):  # no locks on this file system (ENOLCK): mend without one
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield fd
    finally:
        os.close(fd)  # lets the lock go


_TAIL_CHUNK = 65536
_TAIL_LIMIT = 64 << 20
"""A last line longer than this (64 MiB) is not read (no event is that long): it is kept, and ended."""


def _mend_last_line(fd: int, path: Path, *, json_lines: bool) -> bytes:
    """Mend a log whose last line has no line break, before the next append.

    The event log's last line when it is not JSON (a write cut in the middle) is cut off; any other
    such line (the episode log's, one longer than :data:`_TAIL_LIMIT`) is kept. Returns what the
    next append starts with: ``b"\\n"`` when the kept last line needs one, else ``b""``.
    """
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return b""
    start = size
    while start > 0:  # the start of the last line: after the line break before it, or 0
        begin = max(start - _TAIL_CHUNK, 0)
        found = os.pread(fd, start - begin, begin).rfind(b"\n")
        if found >= 0:
            start = begin + found + 1
            break
        start = begin
    if json_lines and size - start <= _TAIL_LIMIT:
        tail = os.pread(fd, size - start, start)
        try:
            json.loads(tail)
        except ValueError:  # (a UnicodeDecodeError too)
            os.ftruncate(fd, start)
            _log.warning(
                "%s: its last line was cut short (%d bytes, not JSON: a process stopped in the "
                "middle of writing it, such as by kill -9); it was removed before the next events",
                path,
                size - start,
            )
            return b""
    return b"\n"


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


def _problem(attributes: Mapping[str, Any]) -> str | None:
    """What went wrong, when the engine's attributes say something did (the span's error status)."""
    if attributes.get("timed_out") is True:
        return "the tool call timed out"
    if attributes.get("is_error") is True:
        return "the tool call failed"
    if attributes.get("deadline_exceeded") is True:
        return "the turn's deadline passed"
    return None


class _Backend(Protocol):
    """One tracing backend's three moves, each of which may fail (they are guarded by the caller)."""

    def start(self, name: str, attributes: Mapping[str, Any]) -> AbstractContextManager[Any]: ...

    def update(self, span: Any, attributes: Mapping[str, Any]) -> None: ...

    def cut(self, span: Any, exc: BaseException) -> None: ...


@attrs.define(eq=False)
class _Faults:
    """Whether a tracer's backend has failed: the first fault is said once and ends its spans."""

    backend: str
    broken: bool = False

    def fault(self, doing: str, exc: Exception) -> None:
        if self.broken:
            return
        self.broken = True
        _log.error(
            "tracing through %s failed %s (%s: %s); this tracer opens no more spans, the turns go on",
            self.backend,
            doing,
            type(exc).__name__,
            exc,
            exc_info=exc,
        )


class _NoSpan:
    """The span of a tracer whose backend failed: takes attributes and drops them."""

    def update(self, **attributes: Any) -> None:
        del attributes


_NO_SPAN = _NoSpan()


class _GuardedSpan:
    """One span of a backend that must never fail the turn it traces.

    An ``Exception`` from the backend (starting, updating or ending the span) is said once
    (:class:`_Faults`) and the span and the tracer's later spans become no-ops; the traced code's own
    exceptions (and ``Cancelled``, ``KeyboardInterrupt``) go through unchanged. A span that a
    ``BaseException`` ends (a cancelled turn, Ctrl-C) is marked as an error before it ends.
    """

    def __init__(self, backend: _Backend, faults: _Faults, name: str, attributes: dict[str, Any]) -> None:
        self._backend = backend
        self._faults = faults
        self._name = name
        self._attributes = attributes
        self._context: AbstractContextManager[Any] | None = None
        self._span: Any = None

    def __enter__(self) -> Span:
        if self._faults.broken:
            return _NO_SPAN
        try:
            context = self._backend.start(self._name, self._attributes)
            self._span = context.__enter__()
        except Exception as exc:  # noqa: BLE001 - a tracing fault must not become the turn's
            self._faults.fault(f"starting the span '{self._name}'", exc)
            return _NO_SPAN
        self._context = context
        return self

    def update(self, **attributes: Any) -> None:
        if self._context is None or self._faults.broken:
            return
        try:
            self._backend.update(self._span, attributes)
        except Exception as exc:  # noqa: BLE001 - a tracing fault must not become the turn's
            self._faults.fault(f"updating the span '{self._name}'", exc)

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        context, self._context = self._context, None
        if context is None:
            return
        if exc is not None and not isinstance(exc, Exception) and not self._faults.broken:
            try:
                self._backend.cut(self._span, exc)
            except Exception as error:  # noqa: BLE001 - a tracing fault must not become the turn's
                self._faults.fault(f"marking the span '{self._name}' as cut short", error)
        try:
            context.__exit__(kind, exc, tb)  # never suppresses the traced code's exception
        except Exception as error:  # noqa: BLE001 - a tracing fault must not become the turn's
            if error is not exc:
                self._faults.fault(f"ending the span '{self._name}'", error)


@attrs.define
class _OtelBackend:
    name: str
    provider: TracerProvider | None

    def start(self, name: str, attributes: Mapping[str, Any]) -> AbstractContextManager[Any]:
        from opentelemetry import trace

        tracer = trace.get_tracer(self.name, tracer_provider=self.provider)
        return tracer.start_as_current_span(name, attributes=_flatten(attributes))

    def update(self, span: Any, attributes: Mapping[str, Any]) -> None:
        span.set_attributes(_flatten(attributes))
        problem = _problem(attributes)
        if problem is not None:
            from opentelemetry.trace import Status, StatusCode

            span.set_status(Status(StatusCode.ERROR, problem))

    def cut(self, span: Any, exc: BaseException) -> None:
        from opentelemetry.trace import Status, StatusCode

        span.set_status(Status(StatusCode.ERROR, f"ended by {type(exc).__name__}"))


@attrs.define
class OtelTracer:
    """Spans through the OpenTelemetry API (a no-op unless a tracer provider is configured).

    A span whose tool call failed or timed out, or whose turn ran out of time, gets the error status
    (so does one that a cancellation or Ctrl-C ends). A fault of the tracing backend (a span
    processor that raises) never fails a turn: it is logged once, as an error of the
    ``zorkmcp.observability`` logger, and this tracer opens no more spans.

    Args:
        name: the instrumentation scope name.
        provider: the tracer provider to use (for instance an SDK provider with an in-memory
            exporter in tests); ``None`` uses the global one.
    """

    name: str = "zorkmcp"
    provider: TracerProvider | None = attrs.field(default=None, kw_only=True)
    _faults: _Faults = attrs.field(factory=lambda: _Faults("OpenTelemetry"), init=False, repr=False, eq=False)

    def span(self, name: str, /, **attributes: Any) -> AbstractContextManager[Span]:
        return _GuardedSpan(_OtelBackend(self.name, self.provider), self._faults, name, attributes)


@attrs.define
class _LangfuseBackend:
    """Langfuse's Python SDK, as seeds 000 §Langfuse Integration uses it: the tool call's arguments
    are the span's ``input``, its result the ``output``, the rest ``metadata``; a problem is the
    ``ERROR`` level. A span starts with ``start_as_current_observation`` (late 3.x, 4.x, 5.x) or, on
    early 3.x, ``start_as_current_span``; ``update`` takes the same keywords in each."""

    client: Any

    def start(self, name: str, attributes: Mapping[str, Any]) -> AbstractContextManager[Any]:
        metadata = {key: value for key, value in attributes.items() if key != "input"}
        observe = getattr(self.client, "start_as_current_observation", None)
        if observe is None:
            start = self.client.start_as_current_span
            return start(name=name, input=attributes.get("input"), metadata=metadata)  # type: ignore[no-any-return]
        return observe(  # type: ignore[no-any-return]
            name=name, as_type="span", input=attributes.get("input"), metadata=metadata
        )

    def update(self, span: Any, attributes: Mapping[str, Any]) -> None:
        metadata = {key: value for key, value in attributes.items() if key != "output"}
        fields: dict[str, Any] = {"metadata": metadata}
        if "output" in attributes:
            fields["output"] = attributes["output"]
        if (problem := _problem(attributes)) is not None:
            fields.update(level="ERROR", status_message=problem)
        span.update(**fields)

    def cut(self, span: Any, exc: BaseException) -> None:
        span.update(level="ERROR", status_message=f"ended by {type(exc).__name__}")


@attrs.define
class LangfuseTracer:
    """Spans through Langfuse (seeds 000 §Langfuse Integration), with any Langfuse SDK from 3.0.

    The tool call's arguments are the span's input, its result the output; the other attributes are
    its metadata. A failed or timed-out tool call, or a turn that ran out of time, gets the ``ERROR``
    level. Like :class:`OtelTracer`, a fault of Langfuse's client never fails a turn (it is logged
    once).
    """

    client: Any
    _faults: _Faults = attrs.field(factory=lambda: _Faults("Langfuse"), init=False, repr=False, eq=False)

    def span(self, name: str, /, **attributes: Any) -> AbstractContextManager[Span]:
        return _GuardedSpan(_LangfuseBackend(self.client), self._faults, name, attributes)


_said: set[str] = set()
"""The notices :func:`open_tracer` gave in this process (each is given once)."""


def _say_once(message: str, exc: BaseException | None = None) -> None:
    if message not in _said:
        _said.add(message)
        _log.warning("%s", message, exc_info=exc)


def open_tracer(env: Mapping[str, str] | None = None) -> OtelTracer | LangfuseTracer:
    """Langfuse when ``LANGFUSE_PUBLIC_KEY`` and ``LANGFUSE_SECRET_KEY`` are set and the package is
    installed (``pip install zorkmcp[langfuse]``), else OpenTelemetry.

    When the keys are set but Langfuse cannot be used (the package is not installed, or its client
    cannot be made), a warning of the ``zorkmcp.observability`` logger says so, once per process,
    and the spans go through OpenTelemetry.

    With Langfuse, spans its host does not take are said once, in one line (a warning of the
    ``zorkmcp.observability`` logger naming the host, the reason and what to check), instead of
    OpenTelemetry's exporter's warnings, one or more per batch; and the process's exit waits at
    most :data:`EXIT_WAIT_SECONDS` (or ``LANGFUSE_TIMEOUT`` seconds, when set) for the last spans.
    """
    env = os.environ if env is None else env
    if env.get("LANGFUSE_PUBLIC_KEY") and env.get("LANGFUSE_SECRET_KEY"):
        try:
            from langfuse import get_client
        except ImportError:
            _say_once(
                "LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY are set but the langfuse package is not "
                'installed (pip install "zorkmcp[langfuse]"): tracing goes through OpenTelemetry instead'
            )
            return OtelTracer()
        try:
            client = get_client()
        except Exception as exc:  # noqa: BLE001 - tracing must not stop an episode
            _say_once(
                f"the Langfuse client could not be made ({type(exc).__name__}: {exc}): "
                "tracing goes through OpenTelemetry instead",
                exc,
            )
            return OtelTracer()
        _watch_delivery(client, env)
        return LangfuseTracer(client)
    return OtelTracer()


EXIT_WAIT_SECONDS = 5.0
"""How long the process's exit waits, at most, for Langfuse to take the last spans when
``LANGFUSE_TIMEOUT`` is not set: Langfuse's own default request timeout, so that a working host far
away still gets them. A host that fails (refused, unreachable, wrong keys) ends the wait at once;
Langfuse's own exit went on retrying it, a request timeout per try."""

_EXPORTER_LOGGER = "opentelemetry.exporter.otlp.proto.http.trace_exporter"
"""The logger of the OTLP/HTTP span exporter that Langfuse's SDK (3.x to 5.x) sends spans with."""


def _watch_delivery(client: Any, env: Mapping[str, str]) -> None:
    """Say in one line when ``client``'s host does not take the spans; bound the send at exit.

    Once per client: a later :func:`open_tracer` in the process (the next episode) gets the same
    client from ``get_client()`` and changes nothing.
    """
    global _delivery
    with _delivery_lock:
        if _delivery is not None and _delivery.client is client:
            return
        exporter_log = logging.getLogger(_EXPORTER_LOGGER)
        if _delivery is not None:  # another client (other keys): it reports from now on
            exporter_log.removeFilter(_delivery.filter)
        _delivery = _LangfuseDelivery(client, env)
        exporter_log.addFilter(_delivery.filter)
        # after Langfuse's own exit handler (get_client() registered it): ours runs first
        atexit.register(_delivery.at_exit)


_delivery: _LangfuseDelivery | None = None
"""The Langfuse client :func:`open_tracer` last opened, watched (one per process in practice)."""
_delivery_lock = threading.Lock()


class _LangfuseDelivery:
    """Whether Langfuse's host takes the spans, said once; and the bounded send of the last ones at exit.

    OpenTelemetry's exporter, which Langfuse sends with, logs each batch it could not send (a warning
    per retry, an error per batch: many lines in a long episode, printed by Python as they come when
    logging is not configured). :meth:`filter` takes those records off that logger and turns the
    first into one warning of the ``zorkmcp.observability`` logger: the host, the reason in words and
    what to check. :meth:`at_exit` sends what is left in a thread of its own and waits for it at most
    ``LANGFUSE_TIMEOUT`` seconds when set, else :data:`EXIT_WAIT_SECONDS`, and no longer once the
    host has failed; if the send is still under way, the exit handlers that would wait for it again
    (Langfuse's, the tracer provider's) are taken off so that nothing waits for it: the spans not
    sent are dropped and said.
    """

    def __init__(self, client: Any, env: Mapping[str, str]) -> None:
        self.client = client
        self.host, self._host_variable = _langfuse_host(client, env)
        self.exit_wait = _exit_wait(env.get("LANGFUSE_TIMEOUT"))
        self.said: str | None = None
        """The one line said, once said."""
        self._lock = threading.Lock()
        self._exiting = False
        self._settled = threading.Event()
        """Set, at exit, when the send ended or the host failed."""
        self._sent = False
        """The send at exit ended (its thread is done)."""

    def filter(self, record: logging.LogRecord) -> bool:
        """A :class:`logging.Filter` for the exporter's logger: its warnings and errors stop here."""
        if record.levelno < logging.WARNING:
            return True
        try:
            problem = _delivery_problem(record.getMessage())
        except Exception:  # noqa: BLE001 - a record we cannot read is still not printed
            problem = None
        if problem is not None:
            self.failed(*problem)
        return False

    def failed(self, reason: str, advice: str | None = None) -> None:
        """The host did not take spans: say so, the first time."""
        if advice is None:
            advice = f"check {self._host_variable}"
        with self._lock:
            if self._exiting:
                self._settled.set()
            if self.said is not None:
                return
            self.said = (
                f"tracing: the traces could not be delivered to Langfuse at {self.host} ({reason}); {advice}"
            )
        _log.warning("%s", self.said)

    def at_exit(self, wait: Callable[[float], bool] | None = None) -> None:
        """Send the spans not yet sent, waiting at most :attr:`exit_wait` seconds (an exit handler).

        Args:
            wait: waits for the send to end or the host to fail, given the most seconds to wait;
                true when it did (tests give one that does not wait).
        """
        with self._lock:
            self._exiting = True
        resources = getattr(self.client, "_resources", None)  # Langfuse's, 3.x to 5.x
        try:
            if resources is not None:
                atexit.unregister(resources.shutdown)  # what we do now, bounded
            thread = threading.Thread(target=self._send, name="zorkmcp-langfuse-exit", daemon=True)
            thread.start()
            settled = (self._settled.wait if wait is None else wait)(self.exit_wait)
        except KeyboardInterrupt:  # Ctrl-C at exit: leave at once, without a traceback
            settled = False
            self.failed("the exit was interrupted", "the spans not sent were dropped")
        except Exception as exc:  # noqa: BLE001 - tracing must not turn an exit into a traceback
            settled = False
            self.failed(f"{type(exc).__name__}: {exc}", "the spans not sent were dropped")
        if not settled:
            self.failed(
                f"no answer within {self.exit_wait:g} s at exit",
                f"check {self._host_variable}, or set LANGFUSE_TIMEOUT to wait longer",
            )
        if not self._sent:
            # The send goes on in its daemon thread, which the interpreter drops: the provider's own
            # exit handler would wait for it (its batch worker needs the same lock), so it goes too.
            provider = getattr(resources, "tracer_provider", None)  # 4.x, 5.x; 3.x: the global one
            if provider is None:
                from opentelemetry import trace

                provider = trace.get_tracer_provider()
            shutdown = getattr(provider, "shutdown", None)
            if shutdown is not None:
                atexit.unregister(shutdown)

    def _send(self) -> None:
        try:
            self.client.shutdown()  # flushes the spans, stops Langfuse's threads
        except Exception as exc:  # noqa: BLE001 - said, in the exit's one line
            self.failed(f"{type(exc).__name__}: {exc}", "the spans not sent were dropped")
        finally:
            self._sent = True
            self._settled.set()


def _langfuse_host(client: Any, env: Mapping[str, str]) -> tuple[str, str]:
    """The host the client sends to, and the variable that names it (for the user to check)."""
    host = getattr(client, "_base_url", None) or getattr(client, "_host", None)  # 4.x, 5.x / 3.x
    if not isinstance(host, str) or not host:
        host = env.get("LANGFUSE_BASE_URL") or env.get("LANGFUSE_HOST") or "https://cloud.langfuse.com"
    variable = "LANGFUSE_BASE_URL" if env.get("LANGFUSE_BASE_URL") == host else "LANGFUSE_HOST"
    return host, variable


def _exit_wait(value: str | None) -> float:
    """``LANGFUSE_TIMEOUT`` (seconds, as Langfuse reads it) when set to a number, else the default."""
    if value:
        try:
            seconds = float(value)
        except ValueError:
            return EXIT_WAIT_SECONDS
        if seconds >= 0 and seconds != float("inf"):
            return seconds
    return EXIT_WAIT_SECONDS


_STATUS = re.compile(r"code: (\d{3}), reason: (.*)", re.DOTALL)
_NO_STATUS = re.compile(r"code: None, reason: (.*)", re.DOTALL)
_TRANSIENT = re.compile(r"Transient error (.*) encountered while exporting", re.DOTALL)
_ERRNO = re.compile(r"\[Errno -?\d+\] ([^'\")\]]+)")
_UNRESOLVED = (
    "name or service not known",
    "nodename nor servname",
    "temporary failure in name resolution",
    "getaddrinfo failed",
    "no address associated",
)


def _delivery_problem(message: str) -> tuple[str, str | None] | None:
    """What an exporter's warning says went wrong, in words, and what to check (``None``: the variable
    naming the host); ``None`` for a record that is no failure of the host (the exporter shut down)."""
    if "already shutdown" in message or message.startswith("Shutdown in progress"):
        return None
    if (status := _STATUS.search(message)) is not None:
        code, phrase = int(status.group(1)), status.group(2).strip()
        said = f"HTTP {code} {phrase}".strip()
        if code in (401, 403):
            return said, "check LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY"
        return said, None if code == 404 else "the spans it refused were dropped"
    if "due to timeout" in message:
        return "no answer in time", None
    for pattern in (_NO_STATUS, _TRANSIENT):  # a connection's failure (or a 429, 5xx's reason phrase)
        if (found := pattern.search(message)) is not None:
            return _in_words(found.group(1)), None
    return _in_words(message), "those spans were dropped"  # the batch was not sent (too large, say)


def _in_words(detail: str) -> str:
    """A connection error's text (urllib3's, several lines deep) as a few words."""
    lower = detail.lower()
    if "connection refused" in lower:
        return "connection refused"
    if any(marker in lower for marker in _UNRESOLVED):
        return "the host name could not be resolved"
    if "timed out" in lower or "timeout" in lower:
        return "no answer in time"
    if "certificate" in lower:
        return "its TLS certificate was not accepted"
    if (errno := _ERRNO.search(detail)) is not None:
        return errno.group(1).strip().lower()
    line = " ".join(detail.split())
    return line if len(line) <= 200 else line[:199] + "\u2026"
