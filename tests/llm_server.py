"""A real chat-completions HTTP server on 127.0.0.1 for tests: trio sockets + h11, no mocks.

It answers ``POST …/chat/completions`` (any path, in fact) from a *script* of replies, one
per request, and records every request it reads (method, path, headers, parsed JSON body,
trio time, connection number), so tests assert on what really went over the wire. A step
can be a :class:`Reply` or a function of the :class:`RecordedRequest` that returns one.
Replies can be delayed (``trio.sleep``: virtual under ``MockClock``) or held until an event,
fail with 429 + ``Retry-After``, 5xx, HTML, garbage or a provider error inside a 200, or drop the
connection without answering. Keep-alive works: several requests may share a connection.

Two ways in:

- the pytest fixture ``llm_server`` (runs in pytest-trio's ``nursery`` fixture; register this
  module with ``pytest_plugins = ["llm_server"]`` in ``tests/conftest.py``, or import
  ``llm_server_fixture`` into the test module)::

      async def test_x(llm_server):
          llm_server.script(content_reply("hi"))
          async with open_llm_client(base_url=llm_server.base_url, model="m") as client: ...

- ``async with serve_llm(step, ...) as server:`` inside ``trio.run`` (Hypothesis tests).

When the script runs out the server answers ``418`` with an error naming the request, so
a test that sends more requests than it scripted fails loudly instead of hanging.
"""

from __future__ import annotations

import email.utils
import http
import itertools
import json
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import h11
import pytest
import trio
from attrs import define, evolve, field, frozen

__all__ = [
    "DEFAULT_MODEL",
    "LLMServer",
    "RecordedRequest",
    "Reply",
    "Step",
    "agent_reply",
    "completion",
    "content_reply",
    "delayed",
    "drop_connection",
    "garbage_reply",
    "html_reply",
    "http_date",
    "json_reply",
    "llm_server_fixture",
    "provider_error_reply",
    "rate_limited",
    "rendezvous",
    "serve_llm",
    "server_error",
    "sse_reply",
    "tool_call",
    "tool_call_reply",
]

DEFAULT_MODEL = "test-model"
_JSON = "application/json"
_call_ids = itertools.count(1)


@frozen(kw_only=True)
class Reply:
    """One scripted answer.

    Attributes:
        status: the HTTP status.
        body: the raw body.
        headers: extra response headers (``Content-Length`` and ``Date`` are added unless given).
        delay: seconds to wait before answering (``trio.sleep``; virtual under ``MockClock``).
        drop: close the connection without answering (after ``delay``).
        hold: answer only once this event is set (after ``delay``): requests that must be open
            together, or a model that never answers.
    """

    status: int = 200
    body: bytes = b""
    headers: tuple[tuple[str, str], ...] = ()
    delay: float = 0.0
    drop: bool = False
    hold: trio.Event | None = None


@define(kw_only=True)
class RecordedRequest:
    """One request as the server read it off the socket.

    Attributes:
        method: e.g. ``"POST"``.
        path: the request target, e.g. ``"/v1/chat/completions"``.
        headers: header names lower-cased; repeated headers joined with ``", "``.
        body: the raw body.
        json: the body parsed as JSON, or ``None`` if it is not JSON.
        time: ``trio.current_time()`` when the request was complete (virtual in tests).
        connection: which TCP connection carried it (1, 2, ... in accept order).
        outcome: ``"pending"``, ``"answered"``, ``"dropped"``, ``"unscripted"`` or
            ``"client-gone"`` (the client disconnected before the answer was sent).
    """

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json: Any
    time: float
    connection: int
    outcome: str = "pending"

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The ``messages`` of the JSON body (empty if there are none)."""
        body = self.json if isinstance(self.json, dict) else {}
        messages = body.get("messages")
        return messages if isinstance(messages, list) else []


Step = Reply | Callable[[RecordedRequest], Reply]
"""A scripted step: a fixed reply, or a function of the request that makes one."""


# --- reply builders -------------------------------------------------------------------


def http_date(posix: float) -> str:
    """An HTTP-date (``Date`` / ``Retry-After``) for a POSIX time."""
    return email.utils.formatdate(posix, usegmt=True)


def json_reply(
    data: Any, *, status: int = 200, headers: Sequence[tuple[str, str]] = (), delay: float = 0.0
) -> Reply:
    """A JSON answer with any body."""
    return Reply(
        status=status,
        body=json.dumps(data).encode(),
        headers=(("content-type", _JSON), *headers),
        delay=delay,
    )


def completion(
    message: Mapping[str, Any],
    *,
    model: str = DEFAULT_MODEL,
    finish_reason: str | None = "stop",
    usage: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A chat-completions body with one choice holding ``message``."""
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": 1700000000,
        "model": model,
        "choices": [{"index": 0, "message": dict(message), "finish_reason": finish_reason}],
        "usage": dict(usage)
        if usage is not None
        else {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def content_reply(
    content: str | None,
    *,
    model: str = DEFAULT_MODEL,
    finish_reason: str | None = "stop",
    usage: Mapping[str, Any] | None = None,
    delay: float = 0.0,
) -> Reply:
    """An assistant answer with text content."""
    message = {"role": "assistant", "content": content}
    return json_reply(completion(message, model=model, finish_reason=finish_reason, usage=usage), delay=delay)


def agent_reply(
    action: str, *, thinking: str = "scripted thinking", new_objective: str | None = None, delay: float = 0.0
) -> Reply:
    """The agent's final JSON answer (``thinking``, ``action``, ``new_objective``) as content."""
    content = json.dumps({"thinking": thinking, "action": action, "new_objective": new_objective})
    return content_reply(content, delay=delay)


def tool_call(
    name: str, arguments: str | Mapping[str, Any] = "{}", *, id: str | None = None
) -> dict[str, Any]:
    """One wire-format tool call; ``arguments`` given as a mapping is JSON-encoded; ids are unique."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {
        "id": id if id is not None else f"call_test_{next(_call_ids)}",
        "type": "function",
        "function": {"name": name, "arguments": args},
    }


def tool_call_reply(
    *calls: Mapping[str, Any],
    content: str | None = None,
    model: str = DEFAULT_MODEL,
    finish_reason: str | None = "tool_calls",
    delay: float = 0.0,
) -> Reply:
    """An assistant answer that calls tools (build the calls with :func:`tool_call`)."""
    message = {"role": "assistant", "content": content, "tool_calls": [dict(c) for c in calls]}
    return json_reply(completion(message, model=model, finish_reason=finish_reason), delay=delay)


def rate_limited(
    retry_after: str | float | None = None, *, date: str | None = None, delay: float = 0.0
) -> Reply:
    """``429 Too Many Requests``, with ``Retry-After`` (seconds or an HTTP-date) if given."""
    headers: list[tuple[str, str]] = []
    if retry_after is not None:
        headers.append(("retry-after", retry_after if isinstance(retry_after, str) else f"{retry_after:g}"))
    if date is not None:
        headers.append(("date", date))
    error = {"error": {"message": "Rate limit exceeded: slow down", "type": "rate_limit", "code": 429}}
    return json_reply(error, status=429, headers=headers, delay=delay)


def server_error(status: int = 500, message: str = "upstream exploded", *, delay: float = 0.0) -> Reply:
    """A 5xx answer with an OpenAI-style error body."""
    return json_reply(
        {"error": {"message": message, "type": "server_error", "code": status}}, status=status, delay=delay
    )


def html_reply(status: int = 200, *, delay: float = 0.0) -> Reply:
    """An HTML page, as a web server or a proxy answers when the base URL is wrong."""
    page = b"<!DOCTYPE html>\n<html><head><title>Welcome</title></head><body><h1>It works!</h1></body></html>"
    return Reply(
        status=status, body=page, headers=(("content-type", "text/html; charset=utf-8"),), delay=delay
    )


def garbage_reply(
    body: bytes = b"this is not {json", *, status: int = 200, content_type: str = _JSON, delay: float = 0.0
) -> Reply:
    """A body that is not JSON (labelled as JSON by default)."""
    return Reply(status=status, body=body, headers=(("content-type", content_type),), delay=delay)


def provider_error_reply(
    message: str = "Provider returned error", *, code: int | str | None = 502, delay: float = 0.0
) -> Reply:
    """A ``200`` whose body is an error object (OpenRouter does this)."""
    error: dict[str, Any] = {"message": message}
    if code is not None:
        error["code"] = code
    return json_reply({"error": error}, delay=delay)


def sse_reply(*chunks: Any, done: bool = True, content_type: str = "text/event-stream") -> Reply:
    """A streamed answer (server-sent events), as a server that streams whatever was asked sends it.

    Each chunk is one ``data:`` event: a mapping is JSON-encoded, a string is sent as it is;
    ``data: [DONE]`` ends the stream when ``done``.
    """
    events = [c if isinstance(c, str) else json.dumps(c) for c in chunks]
    if done:
        events.append("[DONE]")
    body = "".join(f"data: {event}\n\n" for event in events).encode()
    return Reply(body=body, headers=(("content-type", content_type),))


def drop_connection(*, delay: float = 0.0) -> Reply:
    """Read the request, then close the connection without answering."""
    return Reply(drop=True, delay=delay)


def delayed(reply: Reply, seconds: float) -> Reply:
    """The same reply, sent after ``seconds``."""
    return evolve(reply, delay=seconds)


# --- the server -----------------------------------------------------------------------


@define
class LLMServer:
    """The scripted server; start it with ``await nursery.start(server.serve)``.

    Attributes:
        base_url: ``http://127.0.0.1:<port>/v1`` once started.
        requests: every request read so far, in order.
        default: the step used when the script is empty (``None``: answer 418).
    """

    _steps: deque[Step] = field(factory=deque, alias="steps", converter=deque)
    default: Step | None = None
    requests: list[RecordedRequest] = field(factory=list, init=False)
    base_url: str = field(default="", init=False)
    _connections: itertools.count[int] = field(factory=lambda: itertools.count(1), init=False)

    def script(self, *steps: Step) -> None:
        """Replace the remaining script with ``steps``."""
        self._steps = deque(steps)

    def push(self, *steps: Step) -> None:
        """Append ``steps`` to the script."""
        self._steps.extend(steps)

    @property
    def remaining(self) -> int:
        """How many scripted steps are left."""
        return len(self._steps)

    @property
    def bodies(self) -> list[Any]:
        """The parsed JSON bodies of all requests."""
        return [r.json for r in self.requests]

    async def serve(self, *, task_status: trio.TaskStatus[LLMServer] = trio.TASK_STATUS_IGNORED) -> None:
        """Listen on 127.0.0.1 (a free port) and answer until cancelled."""
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(partial(trio.serve_tcp, self._handle, 0, host="127.0.0.1"))
            port = listeners[0].socket.getsockname()[1]
            self.base_url = f"http://127.0.0.1:{port}/v1"
            task_status.started(self)

    async def _handle(self, stream: trio.SocketStream) -> None:
        connection = next(self._connections)
        conn = h11.Connection(h11.SERVER)
        try:
            while True:
                request = await self._read_request(conn, stream, connection)
                if request is None:
                    return
                self.requests.append(request)
                await self._respond(conn, stream, request)
                if request.outcome not in ("answered", "unscripted") or conn.our_state is not h11.DONE:
                    return
                conn.start_next_cycle()
        except (trio.BrokenResourceError, trio.ClosedResourceError, h11.ProtocolError):
            return  # the client went away or spoke garbage: this connection is over
        finally:
            with trio.CancelScope(shield=True), trio.move_on_after(1):
                await stream.aclose()

    async def _read_request(
        self, conn: h11.Connection, stream: trio.SocketStream, connection: int
    ) -> RecordedRequest | None:
        head: h11.Request | None = None
        body = bytearray()
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await stream.receive_some(65536))
            elif isinstance(event, h11.Request):
                head = event
            elif isinstance(event, h11.Data):
                body.extend(event.data)
            elif isinstance(event, h11.EndOfMessage) and head is not None:
                break
            elif isinstance(event, h11.ConnectionClosed):
                return None
        headers: dict[str, str] = {}
        for name, value in head.headers:
            key = name.decode("latin-1").lower()
            text = value.decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        try:
            parsed = json.loads(body)
        except ValueError:
            parsed = None
        return RecordedRequest(
            method=head.method.decode(),
            path=head.target.decode(),
            headers=headers,
            body=bytes(body),
            json=parsed,
            time=trio.current_time(),
            connection=connection,
        )

    def _next_reply(self, request: RecordedRequest) -> Reply:
        step = self._steps.popleft() if self._steps else self.default
        if step is None:
            request.outcome = "unscripted"
            error = {
                "error": {"message": f"llm_server: no scripted reply left for request #{len(self.requests)}"}
            }
            return json_reply(error, status=418)
        return step(request) if callable(step) else step

    async def _respond(
        self, conn: h11.Connection, stream: trio.SocketStream, request: RecordedRequest
    ) -> None:
        reply = self._next_reply(request)
        if reply.delay > 0:
            await trio.sleep(reply.delay)  # virtual time: tests run this on a MockClock
        if reply.hold is not None:
            await reply.hold.wait()
        if reply.drop:
            request.outcome = "dropped"
            return
        names = {name.lower() for name, _ in reply.headers}
        headers = list(reply.headers)
        if "date" not in names:
            headers.append(("date", email.utils.formatdate(usegmt=True)))
        headers.append(("content-length", str(len(reply.body))))
        data = b"".join(
            conn.send(event) or b""
            for event in (
                h11.Response(status_code=reply.status, headers=headers, reason=_reason(reply.status)),
                h11.Data(data=reply.body),
                h11.EndOfMessage(),
            )
        )
        if request.outcome == "pending":
            request.outcome = "answered"  # before sending: the client may act on it before send_all returns
        try:
            await stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            request.outcome = "client-gone"
            raise


def _reason(status: int) -> bytes:
    try:
        return http.HTTPStatus(status).phrase.encode()
    except ValueError:
        return b""


# --- ways in --------------------------------------------------------------------------


@asynccontextmanager
async def serve_llm(*steps: Step, default: Step | None = None) -> AsyncIterator[LLMServer]:
    """Run an :class:`LLMServer` for the duration of the block (inside ``trio.run``).

    Args:
        steps: the script.
        default: the step used once the script is empty.
    """
    server = LLMServer(steps=steps, default=default)
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve)
        try:
            yield server
        finally:
            nursery.cancel_scope.cancel()


@pytest.fixture(name="llm_server")
async def llm_server_fixture(nursery: trio.Nursery) -> LLMServer:
    """A scripted chat-completions server on 127.0.0.1, running in the test's nursery."""
    server = LLMServer()
    await nursery.start(server.serve)
    return server


def rendezvous(k: int, everyone_asked: Callable[[], None], *, release: bool = True) -> tuple[Any, trio.Event]:
    """A model that answers only once ``k`` chat requests are open together (never, with ``release=False``).

    When the k-th request arrives, every episode of the run is waiting for its model:
    ``everyone_asked`` is called then, to look at the run's processes.
    """
    everyone, never = trio.Event(), trio.Event()
    arrived: list[RecordedRequest] = []

    def step(request: RecordedRequest) -> Reply:
        if request.method != "POST":  # the run's probe of the endpoint (GET /models), not an episode
            return Reply(status=404)
        arrived.append(request)
        if len(arrived) == k:
            everyone_asked()
            everyone.set()
        return evolve(agent_reply("look"), hold=everyone if release else never)

    return step, everyone
