"""One MCP server: transport (stdio subprocess or in-process), ``ClientSession``, startup and shutdown.

The building blocks, from low to high:

* :func:`open_server_session` — an async context manager: start one server, ``initialize()`` then
  ``tools/list`` (seeds 000 §MCP SDK Integration; property 8; not asked of a server without the
  ``tools`` capability), all bounded by ``server_startup_timeout_seconds``; any failure before it
  yields is a plain :class:`~zorkmcp.errors.MCPServerStartupError` naming the server, the command,
  the exit status (one the server chose: not the answer of a server zorkmcp stopped) and the last
  stderr lines. Leaving it ends the server (property 9).
* :func:`start_server` — runs :func:`open_server_session` in a task of a nursery you own and gives
  back a :class:`ServerHandle` once the server is ready. This is how servers start concurrently, and
  how a longer-lived owner (an episode, or a future prewarmer) can start a session in the
  background, hand it to a turn, and close it off the critical path.

Between each transport and its ``ClientSession`` sits a :class:`Wire`, which watches what passes:

* whether the transport really ended. The SDK (mcp 2.3) answers a request whose connection closed
  with its own error -32000 (``CONNECTION_CLOSED``), the first code of JSON-RPC 2.0's "Server error"
  range (-32000 to -32099), which servers send as their own generic error. Only the stream pair can
  tell the two apart (:meth:`ServerSession.connection_lost`): a server's -32000 is an error result,
  never a death.
* the protocol version the server answered ``initialize`` with, for the start-up error of a version
  zorkmcp does not speak (the SDK says only "Unsupported protocol version").
* each ``tools/list`` answer, tool by tool. The SDK validates a listing as a whole against the
  negotiated revision's schema: one tool whose ``inputSchema`` has no ``"type"`` (or is ``{}``), or
  whose ``outputSchema`` is not an object schema, would fail the whole listing and so the server's
  start. The wire hands the SDK what it accepts and :func:`list_all_tools` the tools as published,
  each validated on its own (:func:`_repair_tool`: what is repaired, what is dropped, what is left
  out). The SDK's own ``list_tools`` still reads every page, so pagination and its cache of output
  schemas (which it checks each ``tools/call`` result against) stay as they are.
* which ``tools/call`` requests are in flight, for a server zorkmcp samples for
  (:class:`~._sampling.ServerSampling`): a sampling request is answered only during a tool call, and
  is cancelled when the call ends (its answer, or the ``notifications/cancelled`` of its timeout).
"""

from __future__ import annotations

import errno
import importlib
import json
import math
import os
import signal
import sys
from contextlib import AsyncExitStack, asynccontextmanager, nullcontext
from typing import TYPE_CHECKING, Any, Final, Self, cast
from urllib.parse import unquote, urlsplit

import anyio
import anyio.abc
import anyio.lowlevel
import anyio.to_thread
import mcp_types
import mcp_types.methods
from attrs import define, field, frozen
from mcp.client.session import ClientSession
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.exceptions import MCPError as SdkMCPError
from mcp.shared.jsonrpc_dispatcher import cancelled_request_id_from_params
from mcp.shared.memory import create_client_server_memory_streams
from mcp.shared.message import SessionMessage
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
from pydantic import ValidationError

from zorkmcp.errors import MCPServerStartupError, exception_leaves
from zorkmcp.observability import EventSink, NullSink

from .._jsontypes import json_type_name
from ._env import build_server_env
from ._names import canonical_name
from ._notifications import ServerNotifications
from ._remote import (
    RemoteStatus,
    open_remote_pool,
    open_remote_transport,
    remote_startup_error,
    remote_stream_lost,
)
from ._stdio import INVALID_ANSWER, ProcessInfo, open_stdio_transport, shown_command

if TYPE_CHECKING:
    import contextvars
    from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
    from types import TracebackType

    import httpx2
    from mcp.client._transport import ReadStream, WriteStream
    from mcp.client.session import ClientRequestContext, ListRootsFnT
    from mcp.server.lowlevel import Server
    from mcp_types import RequestId

    from zorkmcp.config import McpSettings, RemoteKind, ServerConfig

    from ._sampling import SamplingPolicy, ServerSampling
    from ._zygote import Forker

__all__ = [
    "INPROCESS_SHUTDOWN_GRACE",
    "ServerHandle",
    "ServerSession",
    "ToolListing",
    "Wire",
    "list_all_tools",
    "open_server_session",
    "result_problems",
    "start_server",
]

INPROCESS_SHUTDOWN_GRACE = 1.0
"""Seconds an in-process server gets to finish after its input closes before it is cancelled."""
_MAX_TOOL_PAGES = 100
_CLIENT_INFO = mcp_types.Implementation(name="zorkmcp", version="0.1.0")


_LISTING_META: Final = "zorkmcp/listing"
"""Where :class:`Wire` leaves its tool-by-tool reading of a ``tools/list`` page for
:func:`list_all_tools`: a key of the page's ``_meta``, which the SDK keeps as it is. JSON only (the
SDK serialises the page to validate it); a key of that name sent by the server itself is removed."""
_STAND_IN_INPUT_SCHEMA: Final = {"type": "object"}
"""What the SDK is shown as the ``inputSchema`` of a tool whose own one it would refuse (the engine
translates the tool's own, :mod:`._schema`)."""
_DROPPABLE: Final = ("outputSchema", "title", "description", "annotations", "icons", "execution", "_meta")
"""Fields a tool can be offered and called without: one that is not valid MCP is dropped, not the tool."""


@frozen
class ToolListing:
    """A server's tools as :func:`list_all_tools` read them, tool by tool.

    Attributes:
        tools: the tools that can be offered, in listing order (repairs applied).
        left_out: ``(tool name, reason)`` for each listed tool that cannot be used at all.
        repairs: ``(tool name, what was changed and why)`` for each repair that kept a tool usable.
    """

    tools: tuple[mcp_types.Tool, ...] = ()
    left_out: tuple[tuple[str, str], ...] = ()
    repairs: tuple[tuple[str, str], ...] = ()


@frozen
class _Repaired:
    """One entry of a ``tools/list`` page: the SDK's copy and the engine's tool, or why it is left out.

    ``left_out`` is ``(name, reason)``; an entry without a usable name has ``None`` and a reason that
    follows "entry #N of tools/list" (:func:`list_all_tools` numbers entries across pages).
    """

    wire: dict[str, Any] | None = None
    tool: dict[str, Any] | None = None
    left_out: tuple[str | None, str] | None = None
    repairs: tuple[tuple[str, str], ...] = ()


def _error_text(error: Any) -> str:
    """One pydantic error as ``path: message (got value)``, with no documentation URL."""
    where = ".".join(str(part) for part in error["loc"])
    text = f"{where}: {error['msg']}" if where else str(error["msg"])
    if error["type"] != "missing":
        try:
            shown = json.dumps(error.get("input"))
        except (TypeError, ValueError):
            shown = ""
        if shown and len(shown) <= 60:
            text += f" (got {shown})"
    return text


def _validation_text(exc: ValidationError, *, limit: int = 3) -> str:
    """A pydantic ``ValidationError`` in one line: its first errors, ``path: message (got value)``."""
    errors = exc.errors(include_url=False)
    text = "; ".join(_error_text(error) for error in errors[:limit])
    return text + (f"; and {len(errors) - limit} more" if len(errors) > limit else "")


def result_problems(exc: ValidationError, *, limit: int = 3) -> str:
    """What is wrong with a result the SDK refused, in one line: ``content.0.text: Field required``.

    A content block is one of several types, and pydantic reports the block against each of them;
    the types whose ``type`` the block does not name say nothing about it and are left out. A block
    of no type MCP knows says so, naming the types there are.
    """
    errors = exc.errors(include_url=False)
    wrong: dict[tuple[Any, ...], list[Any]] = {}  # a union member's path: the literal errors about it
    for error in errors:
        loc = error["loc"]
        if (
            len(loc) >= 2
            and loc[-1] == "type"
            and error["type"] == "literal_error"
            and isinstance(loc[-2], str)
        ):
            wrong.setdefault(loc[:-1], []).append(error)
    kept = [error for error in errors if not any(error["loc"][: len(branch)] == branch for branch in wrong)]
    texts = [  # without the union members' names (``TextContent``): the block's path, its field
        _error_text(
            {**error, "loc": tuple(p for p in error["loc"] if not (isinstance(p, str) and p[:1].isupper()))}
        )
        for error in kept
    ]
    if not texts:  # no member fits: a block of a type MCP does not have
        parents: dict[tuple[Any, ...], list[Any]] = {}
        for branch, literal in wrong.items():
            parents.setdefault(branch[:-1], []).extend(literal)
        for parent, literal in parents.items():
            expected = ", ".join(
                str(error.get("ctx", {}).get("expected", "")).strip("'") for error in literal
            )
            where = ".".join(str(part) for part in parent)
            found = json.dumps(literal[0].get("input"), default=str)[:60]
            texts.append(f"{where}: its type {found} is none of MCP's ({expected})")
    if not texts:
        return _validation_text(exc, limit=limit)
    return "; ".join(texts[:limit]) + (f"; and {len(texts) - limit} more" if len(texts) > limit else "")


def _problems(tool: dict[str, Any], version: str) -> dict[str, str]:
    """The fields of one listed tool the SDK would refuse, each with the first reason: against the
    negotiated revision's schema (what the SDK checks a listing against) and ``mcp_types.Tool``."""
    problems: dict[str, str] = {}
    try:
        mcp_types.methods.validate_server_result("tools/list", version, {"tools": [tool]})
    except ValidationError as exc:
        for error in exc.errors(include_url=False):
            if len(error["loc"]) > 2:  # ("tools", 0, field, where in the field...)
                problems.setdefault(str(error["loc"][2]), _error_text({**error, "loc": error["loc"][3:]}))
    try:
        mcp_types.Tool.model_validate(tool, by_name=False)
    except ValidationError as exc:
        for error in exc.errors(include_url=False):
            if error["loc"]:
                problems.setdefault(str(error["loc"][0]), _error_text({**error, "loc": error["loc"][1:]}))
    return problems


def _dropped(field_name: str, why: str) -> str:
    if field_name == "outputSchema":
        return f"dropped its outputSchema ({why}): its structured results are not checked against a schema"
    return f"dropped its {field_name} ({why})"


def _repair_tool(item: object, version: str) -> _Repaired:
    """One entry of a ``tools/list`` page, validated on its own.

    The rules, which keep every tool that can be called:

    * ``inputSchema`` is kept as published: the engine's translation (:mod:`._schema`) makes it
      portable or leaves the tool out, with a reason ``zorkmcp tools --lint`` shows (``{}`` and a
      schema without ``"type"`` become object schemas there). A missing or ``null`` one is ``{}``
      (its rule for "no schema"). When the SDK would refuse it, the SDK is shown an empty object
      schema instead (it uses input schemas for nothing zorkmcp relies on).
    * A field the tool can be called without (:data:`_DROPPABLE`) that is not valid MCP is dropped,
      with a note: an ``outputSchema`` that is not an object schema (``{"type": "array"}``; MCP
      requires ``"type": "object"`` up to 2025-11-25), so the SDK does not check results against it;
      a ``description`` that is not a string; malformed ``annotations`` or ``icons``.
    * Left out (:attr:`_Repaired.left_out`): an entry that is not an object, has no string ``name``,
      has an ``inputSchema`` that is not a JSON object, or has another field that is not valid MCP
      (``name`` aside, only ``inputSchema`` can be: every other field is droppable).
    """
    if not isinstance(item, dict):
        return _Repaired(left_out=(None, f"is a JSON {json_type_name(item)}, not a tool"))
    name = item.get("name")
    if not isinstance(name, str):
        what = "no name" if name is None else f"a name that is a JSON {json_type_name(name)}, not a string"
        return _Repaired(left_out=(None, f"has {what}"))
    tool = dict(item)
    if tool.get("inputSchema") is None:
        tool["inputSchema"] = {}
    if not isinstance(tool["inputSchema"], dict):
        kind = json_type_name(tool["inputSchema"])
        return _Repaired(left_out=(name, f"its inputSchema is a JSON {kind}, not a schema object"))
    repairs: list[tuple[str, str]] = []
    while True:  # each round drops at least one field of _DROPPABLE, or ends
        problems = _problems(tool, version)
        stand_in = problems.pop("inputSchema", None) is not None
        if not problems:
            break
        for field_name, why in problems.items():
            if field_name not in _DROPPABLE:
                return _Repaired(left_out=(name, f"its {field_name} is not valid MCP ({why})"))
            del tool[field_name]
            repairs.append((name, _dropped(field_name, why)))
    wire = dict(tool, inputSchema=dict(_STAND_IN_INPUT_SCHEMA)) if stand_in else tool
    return _Repaired(wire=wire, tool=tool, repairs=tuple(repairs))


def _read_listing(result: dict[str, Any], version: str) -> dict[str, Any]:
    """A ``tools/list`` page as the SDK will take it, with the tools as published in its ``_meta``."""
    meta = result.get("_meta")
    if isinstance(meta, dict) and _LISTING_META in meta:  # only the wire puts it there
        result = dict(result, _meta={key: value for key, value in meta.items() if key != _LISTING_META})
    try:
        mcp_types.methods.validate_server_result("tools/list", version, result)
    except (ValidationError, ValueError):
        pass
    else:
        return result  # valid as a whole: the usual case, nothing to do
    tools = result.get("tools")
    if not isinstance(tools, list):
        return result  # not a listing at all: the SDK's own error says so
    entries = [_repair_tool(item, version) for item in tools]
    verdict = {  # leftOut: [index on the page, name or null, reason]
        "tools": [entry.tool for entry in entries if entry.tool is not None],
        "leftOut": [[index, *entry.left_out] for index, entry in enumerate(entries) if entry.left_out],
        "repairs": [list(repair) for entry in entries for repair in entry.repairs],
    }
    meta = result.get("_meta")
    meta = dict(meta) if isinstance(meta, dict) else {}
    meta[_LISTING_META] = verdict
    wire_tools = [entry.wire for entry in entries if entry.wire is not None]
    return dict(result, tools=wire_tools, _meta=meta)


@define(kw_only=True, eq=False)
class Wire:
    """What passes between one transport and its ``ClientSession``, as far as zorkmcp needs to know.

    Made by the session's opener; :meth:`wrap` puts it between the transport's streams and the SDK.

    Attributes:
        ended: the transport ended on its own: the session's read stream reached its end or was
            closed under it, or a write found the transport gone.
        released: the session let go of the transport (it is closing).
        protocol_version: the version the server answered ``initialize`` with (as sent, any JSON).
        sampling: told when each ``tools/call`` starts and ends, and shown the server's requests and
            their answers (a server zorkmcp samples for: one the SDK answers itself is reported).
    """

    ended: bool = False
    released: bool = False
    protocol_version: object = None
    sampling: ServerSampling | None = None
    _asked: dict[RequestId, str] = field(factory=dict, alias="_asked")

    @property
    def closed(self) -> bool:
        """The transport ended or was let go of: when the SDK makes up its -32000 "Connection
        closed" for every request still waiting (and for any sent later)."""
        return self.ended or self.released

    def wrap(
        self, read: ReadStream[SessionMessage | Exception], write: WriteStream[SessionMessage]
    ) -> tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]]:
        """The streams to give the ``ClientSession`` instead of the transport's own."""
        return _WatchedRead(read, self), _WatchedWrite(write, self)

    def sent(self, item: SessionMessage) -> None:
        """Note a request whose answer the wire reads (``initialize``, ``tools/list``), and a tool call
        that starts or is cancelled (for :attr:`sampling`)."""
        message = item.message
        if isinstance(message, mcp_types.JSONRPCRequest) and message.method in ("initialize", "tools/list"):
            self._asked[coerce_request_id(message.id)] = message.method
        elif self.sampling is None:
            return
        elif isinstance(message, mcp_types.JSONRPCResponse | mcp_types.JSONRPCError):
            self.sampling.answer_sent(message)  # an answer to the server's request (sampling's included)
        elif isinstance(message, mcp_types.JSONRPCRequest) and message.method == "tools/call":
            tool = (message.params or {}).get("name")
            self.sampling.call_started(coerce_request_id(message.id), tool if isinstance(tool, str) else None)
        elif (
            isinstance(message, mcp_types.JSONRPCNotification) and message.method == "notifications/cancelled"
        ):
            cancelled = cancelled_request_id_from_params(message.params)
            if cancelled is not None:
                self.sampling.call_ended(coerce_request_id(cancelled))

    def received(self, item: SessionMessage | Exception) -> SessionMessage | Exception:
        """Read an answer to a noted request; a ``tools/list`` page comes back as the SDK will take it."""
        if not isinstance(item, SessionMessage):
            return item
        message = item.message
        if isinstance(message, mcp_types.JSONRPCRequest) and self.sampling is not None:
            self.sampling.request_received(message)  # before the SDK checks it (it may answer it itself)
        if not isinstance(message, mcp_types.JSONRPCResponse | mcp_types.JSONRPCError) or message.id is None:
            return item
        if self.sampling is not None:
            self.sampling.call_ended(coerce_request_id(message.id))
        method = self._asked.pop(coerce_request_id(message.id), None)
        if method is None or isinstance(message, mcp_types.JSONRPCError):
            return item
        if method == "initialize":
            self.protocol_version = message.result.get("protocolVersion")
            return item
        spoken = self.protocol_version
        version = spoken if spoken in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION
        listing = _read_listing(message.result, version)
        if listing is message.result:
            return item
        answer = mcp_types.JSONRPCResponse(jsonrpc="2.0", id=message.id, result=listing)
        return SessionMessage(answer, metadata=item.metadata)

    def unsupported_version(self) -> str | None:
        """Why the handshake failed, when the server answered with a version zorkmcp does not speak."""
        version = self.protocol_version
        if version is None or version in HANDSHAKE_PROTOCOL_VERSIONS:
            return None
        shown = repr(version) if isinstance(version, str) else json.dumps(version)
        spoken = ", ".join(HANDSHAKE_PROTOCOL_VERSIONS[:-1]) + f" and {HANDSHAKE_PROTOCOL_VERSIONS[-1]}"
        return (
            f"the server answered initialize with protocol version {shown}, which zorkmcp does not "
            f"speak (it speaks {spoken})"
        )


_GONE = (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError)


class _Closing:
    """A stream wrapper's ``async with``: leaving it closes the stream (:meth:`aclose`)."""

    async def aclose(self) -> None:
        raise NotImplementedError

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class _WatchedRead(_Closing):
    """The session's read stream: the transport's, through :meth:`Wire.received`, noting its end."""

    def __init__(self, inner: ReadStream[SessionMessage | Exception], wire: Wire) -> None:
        self._inner = inner
        self._wire = wire

    @property
    def last_context(self) -> contextvars.Context | None:
        """The sender's context of the last item, as the transport's stream has it (if it has)."""
        context: contextvars.Context | None = getattr(self._inner, "last_context", None)
        return context

    async def receive(self) -> SessionMessage | Exception:
        try:
            item = await self._inner.receive()
        except _GONE:
            self._wire.ended = True
            raise
        return self._wire.received(item)

    async def aclose(self) -> None:
        self._wire.released = True
        await self._inner.aclose()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class _WatchedWrite(_Closing):
    """The session's write stream: the transport's, noting requests and a transport that is gone."""

    def __init__(self, inner: WriteStream[SessionMessage], wire: Wire) -> None:
        self._inner = inner
        self._wire = wire

    async def send(self, item: SessionMessage, /) -> None:
        self._wire.sent(item)
        try:
            await self._inner.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._wire.ended = True
            raise

    async def aclose(self) -> None:
        await self._inner.aclose()


@define(kw_only=True, eq=False)
class ServerSession:
    """A started server: its ``ClientSession``, its tools and what we know about its process.

    Attributes:
        config: the server's configuration.
        client: the SDK session (initialized).
        tools: the server's tools as listed at startup (before the allow-list).
        process: the subprocess (``None`` for ``inprocess`` servers).
        startup_seconds: spawn (or connect) + initialize + tools/list.
        failure: why the connection is unusable, once it is.
        notes: the server's notifications as events (logs, progress, a changed tool list).
        remote: what the HTTP layer saw (remote servers only; ``session_expired`` after a 404).
        offers_tools: the server declared the ``tools`` capability in its ``initialize`` answer;
            without it the server is not asked for tools and has none (a server of prompts or
            resources only).
        left_out: ``(tool name, reason)`` for each listed tool that cannot be used at all (it is
            not in :attr:`tools`; the toolbox reports it as ``mcp_tool_excluded``).
        repairs: ``(tool name, what was changed and why)`` for each repair of the last listing that
            kept a tool usable (:attr:`ToolListing.repairs`; ``zorkmcp tools --lint`` shows them).
        wire: what passed between the transport and ``client`` (:class:`Wire`).
    """

    config: ServerConfig
    client: ClientSession
    tools: tuple[mcp_types.Tool, ...]
    process: ProcessInfo | None
    startup_seconds: float
    failure: str | None = None
    _finished: anyio.Event | None = field(default=None, alias="finished")
    notes: ServerNotifications | None = None
    remote: RemoteStatus | None = None
    _reconnect: Callable[[], Awaitable[bool]] | None = field(default=None, alias="reconnect")
    offers_tools: bool = True
    left_out: tuple[tuple[str, str], ...] = ()
    repairs: tuple[tuple[str, str], ...] = ()
    wire: Wire | None = None

    @property
    def name(self) -> str:
        """The server's name in ``mcp_config.json``."""
        return self.config.name

    @property
    def alive(self) -> bool:
        """Whether calls can still reach the server."""
        if self.failure is not None:
            return False
        if self.process is not None:
            return self.process.running and self.process.protocol_error is None
        return self._finished is None or not self._finished.is_set()

    def connection_lost(self, exc: SdkMCPError) -> bool:
        """Whether ``exc``, raised by a request to the server, says the connection is gone.

        The SDK raises code -32000 both for a request whose transport ended (its own "Connection
        closed") and for a server that answered -32000, the first code of JSON-RPC 2.0's "Server
        error" range. So the code alone says nothing: :attr:`Wire.closed` says whether the transport
        ended, and for a remote server :func:`~._remote.remote_stream_lost` whether the SDK's HTTP
        client gave up on the answer's stream. Any other -32000 is the server's own error.
        """
        if exc.code != mcp_types.CONNECTION_CLOSED:
            return False
        if self.wire is None or self.wire.closed:
            return True
        return self.remote is not None and remote_stream_lost(exc)

    async def renew(self) -> bool:
        """A remote session the server forgot (HTTP 404): open a new one, once; whether it worked.

        The task that owns the connection opens it; calls made meanwhile wait. Stdio and in-process
        sessions cannot be renewed (``False``).
        """
        if self._reconnect is None:
            return False
        return await self._reconnect()

    async def wait_gone(self) -> None:
        """Wait until the server is gone: its process exited, or the task that held its connection ended.

        That task records why a remote connection broke (an SSE event over the SDK's limit, a
        stream that failed) in :attr:`failure` as it ends. Returns at once when there is nothing to
        wait for; the caller bounds the wait.
        """
        if self.process is not None:
            await self.process.exited.wait()
        elif self._finished is not None:
            await self._finished.wait()

    def describe_death(self) -> str:
        """A sentence for an error result: which server is gone and what it said last."""
        parts = [f"MCP server '{self.name}' is not running"]
        if self.process is not None and self.process.protocol_error is not None:
            parts = [f"MCP server '{self.name}' {_broken(self.process)}"]
        elif self.process is not None and (status := _chosen_status(self.process)) is not None:
            parts[0] += f" ({_ended(status)})"
        if self.failure:
            parts.append(self.failure)
        if self.process is not None and self.process.stderr_tail:
            parts.append("last stderr lines: " + " | ".join(self.process.stderr_tail[-5:]))
        return "; ".join(parts)


@define(eq=False)
class ServerHandle:
    """A server running in a task started by :func:`start_server`.

    :meth:`close` asks the task to end the session; :meth:`wait_closed` waits until the server and
    every process it started are gone.
    """

    session: ServerSession
    _stop: anyio.Event = field(alias="stop")
    _done: anyio.Event = field(alias="done")

    def close(self) -> None:
        """Ask the owning task to end the session (returns at once)."""
        self._stop.set()

    @property
    def closed(self) -> bool:
        """Whether the session has ended and the server is gone."""
        return self._done.is_set()

    async def wait_closed(self) -> None:
        """Wait until the session has ended."""
        await self._done.wait()


_DOWNLOADERS: Final = frozenset({"npx", "uvx", "pipx", "bunx", "pnpx"})
"""Commands that fetch the server's package on their first run (``npx -y pkg``), before it can answer."""


def _downloading(server: ServerConfig, timeout: float) -> str:
    """What to do when a server started by a package runner did not answer in time (``""``: none is).

    ``npx -y @modelcontextprotocol/server-filesystem`` took 5.7 s on its first run here (the package
    downloaded), against a 10 s start-up timeout: a slower network or a shorter timeout fails the
    start with nothing said of why.
    """
    if server.type != "stdio" or os.path.basename(server.command or "") not in _DOWNLOADERS:
        return ""
    runner = os.path.basename(server.command or "")
    return (
        f" ({runner} may still be fetching the package on its first run: run the command once by hand, "
        f"or raise server_startup_timeout_seconds in [tool.zorkgpt.mcp], now {timeout:g})"
    )


def _hint(command: str) -> str:
    program = os.path.basename(command)
    if program in ("npx", "node", "npm"):
        return " (Node.js >= 20 is needed for this server)"
    if program in ("uvx", "uv"):
        return " (uv is needed for this server: https://docs.astral.sh/uv/)"
    return ""


def _reason(exc: BaseException, server: ServerConfig, wire: Wire | None) -> str:
    cancelled = anyio.get_cancelled_exc_class()
    leaves = [leaf for leaf in exception_leaves(exc) if not isinstance(leaf, cancelled)] or [exc]
    leaf = leaves[0]
    if isinstance(leaf, FileNotFoundError) and server.type == "stdio":
        return f"command not found: {server.command!r}{_hint(server.command or '')}"
    if isinstance(leaf, PermissionError) and server.type == "stdio":
        return f"permission denied running {server.command!r}"
    if isinstance(leaf, SdkMCPError):
        if leaf.code == mcp_types.CONNECTION_CLOSED and (wire is None or wire.ended):
            return "the server closed the connection during startup"
        if leaf.data == INVALID_ANSWER:  # the message says what the server answered
            return leaf.message
        return f"the server answered with an error: {leaf.message} (code {leaf.code})"
    if isinstance(leaf, ValidationError):
        return f"the server sent an invalid {leaf.title}: {_validation_text(leaf)}"
    if isinstance(leaf, MCPServerStartupError):
        return str(leaf)
    if isinstance(leaf, OSError) and leaf.errno in (errno.EMFILE, errno.ENFILE):
        return (
            f"{type(leaf).__name__}: {leaf} (each server takes a few file descriptors: allow more open "
            "files, `ulimit -n`, or run fewer episodes at once, --concurrency)"
        )
    if isinstance(leaf, OSError) and leaf.errno == errno.E2BIG and server.type == "stdio":
        longest = max(
            len(arg.encode(errors="surrogateescape")) for arg in (server.command or "", *server.args)
        )
        return (
            f"{type(leaf).__name__}: {leaf} (its longest argument has {longest} bytes; Linux takes at most "
            "131072 in one argument, and about 2 MiB for all of them and the environment: pass a long "
            "value in a file)"
        )
    if isinstance(leaf, OSError) and leaf.errno == errno.EAGAIN and server.type == "stdio":
        return (
            f"{type(leaf).__name__}: {leaf} (no process could be started: allow more processes, "
            "`ulimit -u`, or run fewer episodes at once, --concurrency)"
        )
    return f"{type(leaf).__name__}: {leaf}"


def _ended(exit_status: int) -> str:
    """How a process ended: ``exit status 3``, or ``killed by SIGTERM`` for a status of -15."""
    if exit_status >= 0:
        return f"exit status {exit_status}"
    try:
        return f"killed by {signal.Signals(-exit_status).name}"
    except ValueError:
        return f"killed by signal {-exit_status}"


_SIGNALS_SENT: dict[str, tuple[int, ...]] = {
    "none": (),
    "sigterm": (signal.SIGTERM,),
    "sigkill": (signal.SIGTERM, signal.SIGKILL),
}
"""The signals zorkmcp sent a server it stopped, by :attr:`ProcessInfo.escalation`."""


def _chosen_status(info: ProcessInfo) -> int | None:
    """The process's exit status, unless it only answered zorkmcp's stop (``None``).

    A server still running when zorkmcp stopped it (after a start-up timeout, a protocol error such
    as a line over ``MAX_LINE_BYTES``, or any other failure) exits because its stdin closed or it was
    told to, or dies of the SIGTERM or SIGKILL zorkmcp sent: none of them is a status it chose.
    Another signal (a crash while it was being stopped) is its own and shown.
    """
    status = info.returncode
    if status is None or not info.stopped:
        return status
    if status >= 0:
        return None  # it exited because zorkmcp closed its stdin, or signalled it
    if -status in _SIGNALS_SENT[info.escalation]:
        return None  # zorkmcp's own signal ended it
    return status


def _broken(info: ProcessInfo) -> str:
    """What a server that broke the protocol did, and how it ended, said of it.

    ``sent a message of more than 64 MiB (the limit of one JSON-RPC line); zorkmcp stopped it``;
    its own status instead when it ended without zorkmcp's stop (it had exited, or crashed).
    """
    status = _chosen_status(info)
    if info.stopped and status is None:
        return f"{info.protocol_error}; zorkmcp stopped it"
    return f"{info.protocol_error}; it ended" + (f" ({_ended(status)})" if status is not None else "")


def _startup_error(server: ServerConfig, info: ProcessInfo | None, reason: str) -> MCPServerStartupError:
    if server.type == "inprocess":
        command = f"inprocess {server.module}"
    elif info is not None:
        command = info.command_line
    else:
        command = shown_command([server.command or "", *server.args])
    exit_status = _chosen_status(info) if info is not None else None
    tail = info.stderr_tail if info is not None else ()
    lines = [f"Failed to start MCP server '{server.name}': {reason}", f"Command: {command}"]
    if exit_status is not None:  # a negative status is the signal that ended it (-15: SIGTERM)
        lines.append(f"Exit status: {exit_status}" + (f" ({_ended(exit_status)})" if exit_status < 0 else ""))
    elif info is not None and (
        info.returncode is not None or (info.stopped and info.protocol_error is not None)
    ):
        lines.append("The server was still running; zorkmcp stopped it.")
    if tail:
        lines.append("Last stderr lines:")
        lines.extend(f"  {line}" for line in tail[-10:])
    return MCPServerStartupError(
        "\n".join(lines), server=server.name, command=command, exit_status=exit_status, stderr_tail=tail
    )


async def list_all_tools(client: ClientSession, *, offers_tools: bool = True) -> ToolListing:
    """Every tool of an initialized session, following ``nextCursor`` (at most 100 pages).

    Through the SDK's ``list_tools``, over a :class:`Wire` that reads each page tool by tool
    (:func:`_repair_tool`), so one tool the SDK would refuse costs that tool at most, not the list.

    Args:
        client: the session, made over :meth:`Wire.wrap`'s streams.
        offers_tools: whether the server declared the ``tools`` capability; a server that did not
            and answers -32601 (method not found) has no tools.

    Raises:
        mcp.shared.exceptions.MCPError: the server answered with an error.
        pydantic.ValidationError: a page is not a listing at all (``tools`` is not a list, a
            ``nextCursor`` that is not a string).
    """
    tools: list[mcp_types.Tool] = []
    left_out: list[tuple[str, str]] = []
    repairs: list[tuple[str, str]] = []
    cursor: str | None = None
    for _ in range(_MAX_TOOL_PAGES):
        params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
        try:
            result = await client.list_tools(params=params)
        except SdkMCPError as exc:
            if exc.code == mcp_types.METHOD_NOT_FOUND and not offers_tools:
                return ToolListing()
            raise
        verdict = (result.meta or {}).get(_LISTING_META)
        if isinstance(verdict, dict):
            before = len(tools) + len(left_out)  # entries on earlier pages: numbers run across pages
            tools.extend(mcp_types.Tool.model_validate(tool, by_name=False) for tool in verdict["tools"])
            for index, name, reason in verdict["leftOut"]:
                shown = f"#{before + index + 1}"
                left_out.append(
                    (name, reason) if name is not None else (shown, f"entry {shown} of tools/list {reason}")
                )
            repairs.extend((name, note) for name, note in verdict["repairs"])
        else:
            tools.extend(result.tools)
        cursor = result.next_cursor
        if not cursor:
            break
    return ToolListing(tuple(tools), tuple(left_out), tuple(repairs))


def report_repairs(server: str, listing: ToolListing, events: EventSink) -> None:
    """One INFO line per repair that kept a listed tool usable (:attr:`ToolListing.repairs`)."""
    for tool, note in listing.repairs:
        events.log("INFO", f"MCP tool '{canonical_name(server, tool)}': {note}")


async def _discover(client: ClientSession) -> tuple[bool, ToolListing]:
    """``initialize``, then ``tools/list`` when the server has tools (property 8: handshake first).

    A server without the ``tools`` capability (MCP 2025-11-25, "Server Features: Tools": servers that
    support tools MUST declare it) is not asked: it serves prompts or resources only.
    """
    initialized = await client.initialize()
    if initialized.capabilities.tools is None:
        return False, ToolListing()
    return True, await list_all_tools(client)


async def _load_factory(spec: str) -> Callable[[], Any]:
    module_name, sep, attr_path = spec.rpartition(":")
    if not sep or not module_name or not attr_path:
        raise ValueError(f"inprocess module must look like 'package.module:factory', got {spec!r}")
    module = sys.modules.get(module_name)
    if module is None:
        module = await anyio.to_thread.run_sync(importlib.import_module, module_name)
    target: Any = module
    for attr in attr_path.split("."):
        target = getattr(target, attr)
    if not callable(target):
        raise TypeError(f"{spec!r} is not callable")
    return cast("Callable[[], Any]", target)


def _lowlevel_server(obj: Any, spec: str) -> Server[Any]:
    from mcp.server.lowlevel import Server
    from mcp.server.mcpserver import MCPServer

    if isinstance(obj, MCPServer):
        # The SDK's own in-memory transport unwraps MCPServer the same way (mcp/client/_memory.py).
        lowlevel: Server[Any] = obj._lowlevel_server
        return lowlevel
    if isinstance(obj, Server):
        return obj
    raise TypeError(f"{spec!r} returned {type(obj).__name__}, expected an mcp Server or MCPServer")


async def _run_inprocess(
    server: Server[Any],
    read: ReadStream[SessionMessage | Exception],
    write: WriteStream[SessionMessage],
    name: str,
    finished: anyio.Event,
    events: EventSink,
) -> None:
    try:
        await server.run(read, write, server.create_initialization_options(), raise_exceptions=False)
    except Exception as exc:  # noqa: BLE001
        # An in-process server that crashes ends its session (calls get error results), not the turn.
        events.emit("mcp_server_died", server=name, reason=f"the in-process server crashed: {exc!r}")
        events.log("ERROR", f"in-process MCP server '{name}' crashed: {exc!r}")
    finally:
        finished.set()
        await _close_quietly(write)


async def _close_quietly(stream: WriteStream[Any]) -> None:
    with anyio.CancelScope(shield=True):
        await stream.aclose()


async def _build_inprocess(server: ServerConfig) -> Server[Any]:
    """A fresh server object for one session, made in a worker thread (a factory may read files).

    Built before the start-up deadline starts: a worker thread cannot be cancelled anyway, and the
    deadline then bounds what it is for, the MCP handshake.
    """
    spec = server.module or ""
    factory = server.factory if server.factory is not None else await _load_factory(spec)
    return _lowlevel_server(await anyio.to_thread.run_sync(factory), spec)


@asynccontextmanager
async def _open_inprocess_transport(
    server: ServerConfig, lowlevel: Server[Any], opening: _Opening, events: EventSink
) -> AsyncIterator[tuple[ReadStream[SessionMessage | Exception], WriteStream[SessionMessage]]]:
    finished = opening.finished
    assert finished is not None
    async with create_client_server_memory_streams() as (client_streams, server_streams):
        client_read, client_write = client_streams
        server_read, server_write = server_streams
        async with anyio.create_task_group() as nursery:
            nursery.start_soon(
                _run_inprocess, lowlevel, server_read, server_write, server.name, finished, events
            )
            try:
                yield client_read, client_write
            finally:
                # EOF the server instead of cancelling it (as mcp/client/_memory.py does); bounded.
                with anyio.CancelScope(shield=True):
                    await client_write.aclose()
                    with anyio.move_on_after(0 if opening.cut_short else INPROCESS_SHUTDOWN_GRACE):
                        await finished.wait()
                nursery.cancel_scope.cancel()


def report_stop_failure(events: EventSink, server: str, exc: BaseException) -> None:
    """A session that already served its turn failed while closing: an event, never a turn failure."""
    error = f"{type(exc).__name__}: {exc}"
    events.emit("mcp_server_stop_failed", server=server, error=error)
    events.log("ERROR", f"MCP server '{server}' failed while shutting down: {error}")


def _cancelled(exc: BaseException) -> bool:
    """True when ``exc`` is a cancellation (alone, or every leaf of a group is one)."""
    cancelled = anyio.get_cancelled_exc_class()
    return all(isinstance(leaf, cancelled) for leaf in exception_leaves(exc))


def _only_exceptions(exc: BaseException) -> bool:
    """True when every leaf is an ``Exception`` (no cancellation, KeyboardInterrupt, SystemExit)."""
    return all(isinstance(leaf, Exception) for leaf in exception_leaves(exc))


_Streams = tuple["ReadStream[SessionMessage | Exception]", "WriteStream[SessionMessage]"]


@define(kw_only=True, eq=False)
class _Opening:
    """What a start-up knows so far (for its error message): the process, the HTTP status."""

    info: ProcessInfo | None = None
    status: RemoteStatus | None = None
    finished: anyio.Event | None = None
    wire: Wire | None = None
    deadline: float | None = None
    """When the start-up time is up (``None``: it started); see :attr:`ProcessInfo.startup_deadline`."""
    cut_short: bool = False
    """The start-up was cancelled before the server was ready (:meth:`abandon`)."""

    def started(self) -> None:
        """The server answered in time: from now on it is stopped as any other (stdin EOF first)."""
        self.deadline = None
        if self.info is not None:
            self.info.startup_deadline = None

    def abandon(self) -> None:
        """The start-up was cancelled before the server was ready: a turn's deadline passed, Ctrl-C.

        The canceller waits for the server's stop, so the stop is the shortest there is: a stdio
        server gets no end-of-input grace (it is signalled at once, as one whose start-up timed
        out), an in-process one none to finish. A server half through its handshake holds nothing
        that a graceful end would keep, and a turn's deadline is not overrun by a server that
        ignores the end of its input.
        """
        self.cut_short = True
        if self.info is not None:
            self.info.startup_deadline = -math.inf


async def _enter_stdio(
    stack: AsyncExitStack,
    server: ServerConfig,
    opening: _Opening,
    events: EventSink,
    options: _Options,
) -> _Streams:
    if not server.command:
        raise ValueError("a stdio server needs a 'command'")
    env, withheld = build_server_env(server.env, options.base_env)
    if withheld:
        # Requirement 3.2: say which names were withheld, never their values.
        events.emit("mcp_env_withheld", server=server.name, names=list(withheld))
        events.log("DEBUG", f"MCP server '{server.name}': withheld variables {', '.join(withheld)}")
    opening.info = ProcessInfo(
        command=(server.command, *server.args), withheld_env=withheld, startup_deadline=opening.deadline
    )
    read, write, _ = await stack.enter_async_context(
        open_stdio_transport(
            server.command, server.args, env=env, cwd=server.cwd, info=opening.info, zygote=options.zygote
        )
    )
    return read, write


async def _enter_remote(
    stack: AsyncExitStack,
    server: ServerConfig,
    opening: _Opening,
    events: EventSink,
    pool: httpx2.AsyncBaseTransport,
) -> _Streams:
    read, write, opening.status = await stack.enter_async_context(
        open_remote_transport(
            name=server.name,
            url=server.url or "",
            kind=cast("RemoteKind", server.type),
            headers=server.headers,
            pool=pool,
            events=events,
        )
    )
    return read, write


async def _enter_transport(
    stack: AsyncExitStack,
    server: ServerConfig,
    lowlevel: Server[Any] | None,
    opening: _Opening,
    events: EventSink,
    options: _Options,
) -> _Streams:
    if lowlevel is not None:
        opening.finished = anyio.Event()
        return await stack.enter_async_context(_open_inprocess_transport(server, lowlevel, opening, events))
    return await _enter_stdio(stack, server, opening, events, options)


@define(kw_only=True, frozen=True)
class _Options:
    base_env: Mapping[str, str]
    pool: httpx2.AsyncBaseTransport | None
    zygote: Forker | None = None
    sampling: ServerSampling | None = None


def _failure(
    server: ServerConfig, opening: _Opening, exc: BaseException | None, reason: str | None
) -> MCPServerStartupError:
    if reason is None and opening.wire is not None:
        reason = opening.wire.unsupported_version()
    if server.remote:
        return remote_startup_error(
            exc or TimeoutError(reason),
            name=server.name,
            url=server.url or "",
            headers=server.headers,
            status=opening.status,
            reason=reason,
            kind=cast("RemoteKind", server.type),
        )
    if reason is None and opening.info is not None and opening.info.protocol_error is not None:
        reason = f"the server {opening.info.protocol_error}"  # how it ended follows (_startup_error)
    if reason is None:
        reason = _reason(exc, server, opening.wire) if exc is not None else "unknown failure"
    return _startup_error(server, opening.info, reason)


def _started(server: ServerConfig, session: ServerSession, events: EventSink) -> None:
    info = session.process
    events.emit(
        "mcp_server_started",
        server=server.name,
        pid=info.pid if info else None,
        zygote_pid=info.zygote_pid if info else None,
        startup_ms=round(session.startup_seconds * 1000, 1),
        tools=[tool.name for tool in session.tools],
    )
    if not session.offers_tools:
        events.log(
            "INFO",
            f"MCP server '{server.name}' offers no tools: its initialize answer declares no tools "
            "capability (a server of prompts or resources only)",
        )


def _stopped(server: ServerConfig, info: ProcessInfo | None, events: EventSink) -> None:
    fields: dict[str, Any] = {"server": server.name}
    if info is not None:
        fields.update(
            pid=info.pid,
            exit_status=info.returncode,
            escalation=info.escalation,
            strays_killed=info.strays_killed,
            teardown_ms=round((info.teardown_seconds or 0.0) * 1000, 1),
        )
        if info.protocol_error is not None:  # stopped before its teardown: why (its status is raw)
            fields["reason"] = f"MCP server '{server.name}' {_broken(info)}"
    events.emit("mcp_server_stopped", **fields)


def _client_session(
    read: Any, write: Any, notes: ServerNotifications, server: ServerConfig, sampling: ServerSampling | None
) -> ClientSession:
    """The SDK session; it declares ``roots`` for a server with ``roots`` and ``sampling`` when it has an
    answerer (a callback given is a capability declared), and nothing else (no ``elicitation``)."""
    return ClientSession(
        read,
        write,
        client_info=_CLIENT_INFO,
        logging_callback=notes.on_log,
        message_handler=notes.on_message,
        sampling_callback=sampling.answer if sampling is not None else None,
        list_roots_callback=_roots_answer(server.roots) if server.roots is not None else None,
    )


def _root_name(uri: str) -> str:
    """The name a root is listed with: its folder's name (``/`` for the file system's root)."""
    return os.path.basename(unquote(urlsplit(uri).path).rstrip("/")) or "/"


def _roots_answer(roots: tuple[str, ...]) -> ListRootsFnT:
    """``ClientSession(list_roots_callback=...)``: the server's ``roots``, each named after its folder."""
    listing = mcp_types.ListRootsResult(
        roots=[mcp_types.Root.model_validate({"uri": uri, "name": _root_name(uri)}) for uri in roots]
    )

    async def list_roots(context: ClientRequestContext) -> mcp_types.ListRootsResult:
        del context
        await anyio.lowlevel.checkpoint()
        return listing

    return list_roots


@define(kw_only=True, eq=False)
class _Reconnect:
    """The link between a remote session's callers and the task that owns its connection."""

    session: ServerSession | None = None
    request: anyio.Event = field(factory=anyio.Event)
    done: anyio.Event = field(factory=anyio.Event)
    closing: bool = False
    ended: anyio.Event = field(factory=anyio.Event)
    """Set when the owning task has let go of the connection (closed, or broken and reported)."""

    async def __call__(self) -> bool:
        """Open a new MCP session in the owning task (after an expiry); whether it worked."""
        if self.closing or self.session is None or self.session.failure is not None:
            return False
        self.done = anyio.Event()
        self.request.set()
        await self.done.wait()
        return self.session.failure is None


async def _hold_remote(
    server: ServerConfig,
    opening: _Opening,
    events: EventSink,
    options: _Options,
    notes: ServerNotifications,
    link: _Reconnect,
    *,
    task_status: anyio.abc.TaskStatus[tuple[ClientSession, bool]],
) -> None:
    """Own a remote server's connection; open a fresh MCP session each time ``link`` asks for one.

    Reports the first session and whether the server declared the ``tools`` capability.
    """
    first = True
    try:
        async with open_remote_pool() if options.pool is None else nullcontext(options.pool) as pool:
            while not link.closing:
                link.request = anyio.Event()
                serving = False
                try:
                    async with AsyncExitStack() as stack:
                        read, write = await _enter_remote(stack, server, opening, events, pool)
                        opening.wire = Wire(sampling=options.sampling)
                        if options.sampling is not None:
                            options.sampling.new_connection()
                        client = await stack.enter_async_context(
                            _client_session(*opening.wire.wrap(read, write), notes, server, options.sampling)
                        )
                        initialized = await client.initialize()
                        if first:
                            task_status.started((client, initialized.capabilities.tools is not None))
                            first = False
                        else:
                            _reconnected(link, client, opening, events)
                        serving = True
                        await link.request.wait()
                        serving = False
                except Exception as exc:
                    if first:
                        raise
                    _reconnect_failed(link, server, exc, opening, events, broke=serving)
                    return
    finally:
        link.ended.set()


def _reconnected(link: _Reconnect, client: ClientSession, opening: _Opening, events: EventSink) -> None:
    assert link.session is not None
    link.session.client = client
    link.session.remote = opening.status
    link.session.wire = opening.wire
    events.emit("mcp_session_renewed", server=link.session.name)
    events.log("INFO", f"MCP server '{link.session.name}': the session expired; a new one is open")
    link.done.set()


def _reconnect_failed(
    link: _Reconnect,
    server: ServerConfig,
    exc: Exception,
    opening: _Opening,
    events: EventSink,
    *,
    broke: bool,
) -> None:
    """The owner lost its connection: ``broke`` while it served calls, else while opening a new session."""
    error = remote_startup_error(
        exc, name=server.name, url=server.url or "", headers=server.headers, status=opening.status
    )
    reason = str(error).splitlines()[0].removeprefix(f"Failed to start MCP server '{server.name}': ")
    if error.command not in reason:
        reason += f" at {error.command}"  # the URL, as shown (no user info, query or fragment)
    if link.session is not None and broke:
        link.session.failure = f"the connection failed: {reason}"
    elif link.session is not None:
        forgot = link.session.remote is not None and link.session.remote.session_expired
        what = "the server forgot the MCP session, and a new one" if forgot else "a new MCP session"
        link.session.failure = f"{what} failed: {reason}"
    events.log("ERROR", f"MCP server '{server.name}': {reason}")
    link.done.set()


@asynccontextmanager
async def _connect_remote(
    server: ServerConfig, opening: _Opening, events: EventSink, options: _Options
) -> AsyncIterator[ServerSession]:
    start = anyio.current_time()
    notes = ServerNotifications(server.name, events)
    link = _Reconnect()
    async with anyio.create_task_group() as owner:
        client, offers_tools = await owner.start(_hold_remote, server, opening, events, options, notes, link)
        try:
            listing = await list_all_tools(client) if offers_tools else ToolListing()
            report_repairs(server.name, listing, events)
            link.session = ServerSession(
                config=server,
                client=client,
                tools=listing.tools,
                process=None,
                startup_seconds=anyio.current_time() - start,
                notes=notes,
                remote=opening.status,
                reconnect=link,
                finished=link.ended,
                offers_tools=offers_tools,
                left_out=listing.left_out,
                repairs=listing.repairs,
                wire=opening.wire,
            )
            yield link.session
        finally:
            link.closing = True  # the owner leaves its session normally (Streamable HTTP: DELETE)
            link.request.set()


@asynccontextmanager
async def _connect(
    server: ServerConfig,
    lowlevel: Server[Any] | None,
    opening: _Opening,
    events: EventSink,
    options: _Options,
) -> AsyncIterator[ServerSession]:
    """Transport, ``ClientSession``, initialize, ``tools/list`` (the caller bounds the time)."""
    if server.remote:
        async with _connect_remote(server, opening, events, options) as session:
            yield session
        return
    start = anyio.current_time()
    notes = ServerNotifications(server.name, events)
    async with AsyncExitStack() as stack:
        try:
            read, write = await _enter_transport(stack, server, lowlevel, opening, events, options)
            opening.wire = Wire(sampling=options.sampling)
            client = await stack.enter_async_context(
                _client_session(*opening.wire.wrap(read, write), notes, server, options.sampling)
            )
            offers_tools, listing = await _discover(client)
        except BaseException as exc:
            if _cancelled(exc):  # before the stack stops the server: its stop is then the shortest
                opening.abandon()
            raise
        report_repairs(server.name, listing, events)
        yield ServerSession(
            config=server,
            client=client,
            tools=listing.tools,
            process=opening.info,
            startup_seconds=anyio.current_time() - start,
            finished=opening.finished,
            notes=notes,
            offers_tools=offers_tools,
            left_out=listing.left_out,
            repairs=listing.repairs,
            wire=opening.wire,
        )


@asynccontextmanager
async def open_server_session(
    server: ServerConfig,
    settings: McpSettings,
    *,
    events: EventSink | None = None,
    base_env: Mapping[str, str] | None = None,
    pool: httpx2.AsyncBaseTransport | None = None,
    zygote: Forker | None = None,
    sampling: SamplingPolicy | None = None,
) -> AsyncIterator[ServerSession]:
    """Start one MCP server and yield its initialized session with its tools listed.

    The client declares the ``roots`` capability to a server with ``roots`` (and lists them), and
    ``sampling`` to a server with ``"sampling": true`` when ``sampling`` is given; no other.

    Args:
        server: the server's configuration (``stdio``, ``inprocess``, or remote ``http`` / ``sse``).
        settings: ``server_startup_timeout_seconds`` bounds connect or spawn + initialize + tools/list.
        events: where events go (``mcp_server_started``, ``mcp_server_stopped``, ``mcp_env_withheld``,
            and the server's notifications).
        base_env: the environment to merge the server's ``env`` into (default ``os.environ``).
        pool: a remote server's connection pool from :func:`~zorkmcp.mcp._remote.open_remote_pool`,
            owned by the episode; without one the session opens (and closes) its own.
        zygote: the episode's zygote (:mod:`zorkmcp.mcp._zygote`); a stdio server it accepts is
            forked from it instead of spawned.
        sampling: the episode's sampler (:mod:`zorkmcp.mcp._sampling`); ``None``: no server is
            told the client can sample.

    Raises:
        MCPServerStartupError: the server did not start (plain, never inside an exception group).
    """
    events = events if events is not None else NullSink()
    timeout = settings.server_startup_timeout_seconds
    options = _Options(
        base_env=os.environ if base_env is None else base_env,
        pool=pool,
        zygote=zygote,
        sampling=sampling.for_server(server.name, events)
        if sampling is not None and server.sampling
        else None,
    )
    opening = _Opening()
    session: ServerSession | None = None
    try:
        lowlevel = await _build_inprocess(server) if server.type == "inprocess" else None
        opening.deadline = anyio.current_time() + timeout
        with anyio.CancelScope(deadline=opening.deadline) as startup_scope:
            async with _connect(server, lowlevel, opening, events, options) as session:
                startup_scope.deadline = math.inf
                opening.started()
                _started(server, session, events)
                yield session
        if session is None:  # only the startup deadline gets here
            said = f"no answer to initialize and tools/list within {timeout:g}s"
            raise _failure(server, opening, None, said + _downloading(server, timeout))
    except BaseException as exc:
        if session is not None or isinstance(exc, MCPServerStartupError) or not _only_exceptions(exc):
            raise
        raise _failure(server, opening, exc, None) from exc
    finally:
        if session is not None:
            _stopped(server, opening.info, events)


async def _serve(
    server: ServerConfig,
    settings: McpSettings,
    events: EventSink | None,
    pool: httpx2.AsyncBaseTransport | None,
    zygote: Forker | None,
    sampling: SamplingPolicy | None,
    *,
    task_status: anyio.abc.TaskStatus[ServerHandle] = anyio.TASK_STATUS_IGNORED,
) -> None:
    stop, done = anyio.Event(), anyio.Event()
    started = False
    try:
        async with open_server_session(
            server, settings, events=events, pool=pool, zygote=zygote, sampling=sampling
        ) as session:
            task_status.started(ServerHandle(session, stop=stop, done=done))
            started = True
            await stop.wait()
    except BaseException as exc:
        if not started or not _only_exceptions(exc):
            raise
        # The session already ended; an error while closing it must not take down the turn.
        report_stop_failure(events if events is not None else NullSink(), server.name, exc)
    finally:
        done.set()


async def start_server(
    nursery: anyio.abc.TaskGroup,
    server: ServerConfig,
    settings: McpSettings,
    *,
    events: EventSink | None = None,
    pool: httpx2.AsyncBaseTransport | None = None,
    zygote: Forker | None = None,
    sampling: SamplingPolicy | None = None,
) -> ServerHandle:
    """Start a server in a new task of ``nursery`` and return once it is ready.

    The task owns the session (entered and left in that one task) until :meth:`ServerHandle.close`
    or until ``nursery`` is cancelled; either way teardown is complete when the task ends.

    Args:
        nursery: the owner of the server's task (a turn's or an episode's nursery).
        server: what to start.
        settings: startup timeout.
        events: where events go.
        pool: a remote server's connection pool, owned by the caller (see :func:`open_server_session`).
        zygote: the episode's zygote, owned by the caller (see :func:`open_server_session`).
        sampling: the episode's sampler (see :func:`open_server_session`).

    Raises:
        MCPServerStartupError: the server did not start.
    """
    handle: ServerHandle = await nursery.start(_serve, server, settings, events, pool, zygote, sampling)
    return handle
