"""The toolbox of one turn: every tool of every server, in OpenAI format, callable by name.

Translation (seeds 000 §Server Discovery and Appendix; properties 33–38): each MCP tool becomes
``{"type": "function", "function": {"name", "description", "parameters"}}`` with ``input_schema``
translated into the portable subset every OpenAI-compatible endpoint accepts as ``parameters``
(:func:`~zorkmcp.mcp._schema.translate_schema`: a schema already in that subset is offered
unchanged; a tool whose schema cannot be made acceptable is left out with an ``mcp_tool_excluded``
event), a missing description as ``""`` and one longer than OpenAI's API takes cut
(:func:`offered_description`). The ``name`` the LLM sees is the
wire-safe name (see :mod:`._names`); the canonical ``server.tool`` is what logs, events and
:meth:`Toolbox.call_tool` use, and :meth:`Toolbox.call_tool` accepts both.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import anyio.lowlevel
import anyio.to_thread
import mcp_types
from attrs import frozen
from mcp.shared.exceptions import MCPError as SdkMCPError
from pydantic import TypeAdapter, ValidationError

from zorkmcp.observability import EventSink, NullSink

from .._controls import visible_controls
from .._surrogates import lone_surrogate
from ._names import assign_wire_names, canonical_name
from ._remote import remote_call_error
from ._results import ToolCallResult, convert_call_result
from ._schema import translate_schema
from ._session import list_all_tools, report_repairs, result_problems

if TYPE_CHECKING:
    from mcp.client.session import ClientSession
    from mcp.shared.dispatcher import ProgressFnT

    from zorkmcp.config import McpSettings, ServerConfig

    from ._session import ServerSession

__all__ = [
    "DEATH_REPORT_GRACE",
    "MAX_AVAILABLE_CHARS",
    "MAX_DESCRIPTION_CHARS",
    "MISMATCH_CHARS",
    "ToolInfo",
    "ToolNote",
    "ToolTable",
    "Toolbox",
    "build_tool_infos",
    "offered_description",
]

DEATH_REPORT_GRACE = 0.2
"""When a server dies mid-call: how long to wait for its exit status to put it in the error."""
MISMATCH_CHARS = 300
"""How much of what the check of a result against its tool's ``outputSchema`` found the warning quotes."""
MAX_DESCRIPTION_CHARS = 1024
"""The longest tool description OpenAI's API takes: a longer one fails every request of the turn with
HTTP 400 ``Invalid 'tools[0].function.description': string too long. Expected a string with maximum
length 1024`` (``@modelcontextprotocol/server-sequential-thinking``'s has 2781 characters)."""
MAX_AVAILABLE_CHARS = 2000
"""How much of the list of tools an unknown tool's error names (a list of hundreds is cut, and counted)."""
_DESCRIPTION_NOTE = "\x00description"
"""Appended to a server's name (which holds no NUL) in ``reported``: a cut description already said."""
_MISMATCH_NOTE = "\x00outputSchema"
"""Appended to a server's name in ``reported``: a result that did not match its schema already said."""


def utf16_units(text: str) -> int:
    """The length of ``text`` in UTF-16 code units: how OpenAI's API counts a description's characters."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def offered_description(description: str) -> str:
    """``description`` as the model is offered it: whole up to :data:`MAX_DESCRIPTION_CHARS`, else cut.

    A longer one keeps the lines (else the words) that fit, and ends in ``…``.
    Characters are counted as UTF-16 code units, at least as many as any endpoint counts.
    """
    if utf16_units(description) <= MAX_DESCRIPTION_CHARS:
        return description
    room = MAX_DESCRIPTION_CHARS - 1  # for the "…"
    kept = description[:room]
    while utf16_units(kept) > room:
        kept = kept[:-1]
    for boundary in ("\n", " "):  # a whole line when one ends near the cut, else a whole word
        if (at := kept.rfind(boundary)) >= room - 200:
            kept = kept[:at]
            break
    return kept.rstrip() + "…"


_CONNECTION_CLOSED = ToolCallResult(content=None, is_error=True, error_message="the connection closed")
"""A sentinel: the server's connection closed during the call (the caller reports the death)."""


def _seconds(value: float) -> str:
    return f"{value:g}"


@frozen(kw_only=True)
class ToolInfo:
    """One tool as offered to the LLM.

    Attributes:
        name: canonical ``server.tool`` (seeds 000; property 34).
        wire_name: what the LLM sees and calls, matching ``^[a-zA-Z0-9_-]{1,64}$``.
        server: the server's name in ``mcp_config.json``.
        tool: the tool's name on its server.
        description: the tool's description (``""`` when it has none).
        parameters: the tool's ``input_schema`` in the portable subset (property 36: unchanged when
            it already is in it).
        timeout: the effective per-call timeout in seconds (the server's ``timeout`` or
            ``tool_call_timeout_seconds``).
    """

    name: str
    wire_name: str
    server: str
    tool: str
    description: str
    parameters: dict[str, Any]
    timeout: float

    def openai_schema(self) -> dict[str, Any]:
        """The OpenAI tool definition (property 38), the description cut by :func:`offered_description`."""
        return {
            "type": "function",
            "function": {
                "name": self.wire_name,
                "description": offered_description(self.description),
                "parameters": self.parameters,
            },
        }


@frozen
class ToolNote:
    """A warning the building of a tool table logged, with the tools it is about.

    ``zorkmcp call`` shows those about the tool it calls and only counts the others.

    Attributes:
        message: the line as logged (``WARNING``).
        about: ``(server, tool)`` of each tool it speaks of: the tool left out or offered cut, the
            names an allow-list gives that the server lacks, the tools that share an ambiguous name.
    """

    message: str
    about: tuple[tuple[str, str], ...]


class _Notes:
    """Where :func:`build_tool_infos` says its warnings: the sink, and the caller's list of them."""

    def __init__(self, events: EventSink, notes: list[ToolNote] | None) -> None:
        self.events = events
        self._notes = notes

    def warn(self, message: str, *about: tuple[str, str]) -> None:
        if self._notes is not None:
            self._notes.append(ToolNote(message, about))
        self.events.log("WARNING", message)


def build_tool_infos(
    entries: Sequence[tuple[ServerConfig, Sequence[mcp_types.Tool]]],
    settings: McpSettings,
    *,
    events: EventSink | None = None,
    apply_allow_list: bool = True,
    left_out: Mapping[str, Sequence[tuple[str, str]]] | None = None,
    reported: set[tuple[str, str]] | None = None,
    notes: list[ToolNote] | None = None,
) -> list[ToolInfo]:
    """Translate the listed tools of several servers into :class:`ToolInfo` (properties 33–38).

    Servers keep their configuration order and tools their listing order. A server's ``tools``
    allow-list keeps only the named tools (names it lists that the server lacks are reported).

    Args:
        entries: each server's configuration with the tools it listed.
        settings: the global per-call timeout.
        events: where warnings go.
        apply_allow_list: ``False`` offers every tool regardless of ``ServerConfig.tools``.
        left_out: per server name, ``(tool name, reason)`` of the listed tools that cannot be used
            at all (:attr:`ServerSession.left_out`): each is reported as ``mcp_tool_excluded``
            unless the allow-list leaves it out anyway.
        reported: ``(server, tool)`` of the tools left out that were already reported (an
            episode's earlier toolboxes): not reported again; each one reported now is added. A
            description cut for the model is noted there too, as ``(server + "\\x00description",
            tool)``, and :class:`Toolbox` notes a result that did not match its ``outputSchema`` as
            ``(server + "\\x00outputSchema", tool)`` (a server's name holds no NUL: they never meet).
        notes: each warning logged is also appended here, with the tools it is about.
    """
    events = events if events is not None else NullSink()
    say = _Notes(events, notes)
    reported = reported if reported is not None else set()
    kept: list[tuple[ServerConfig, mcp_types.Tool]] = []
    seen: set[tuple[str, str]] = set()  # a name listed twice is offered once
    for server, tools in entries:
        allowed = set(server.tools) if server.tools is not None and apply_allow_list else None
        for tool in tools:
            key = (server.name, tool.name)
            if key in seen or (allowed is not None and tool.name not in allowed):
                continue
            seen.add(key)
            kept.append((server, tool))
        for name, reason in (left_out or {}).get(server.name, ()):
            if (server.name, name) not in seen and (allowed is None or name in allowed):
                seen.add((server.name, name))
                _exclude(server.name, name, reason, say, reported, lint=False)
        offered = {tool for name, tool in seen if name == server.name}
        if allowed is not None and (missing := sorted(allowed - offered)):
            say.warn(
                f"MCP server '{server.name}' has no tools named {', '.join(missing)} "
                "(from its 'tools' allow-list)",
                *((server.name, name) for name in missing),
            )
    portable = _portable(kept, say, reported)
    for server, tool, _ in portable:
        _note_long_description(server.name, tool, say, reported)
    wire = assign_wire_names((server.name, tool.name) for server, tool, _ in portable)
    return [
        ToolInfo(
            name=canonical_name(server.name, tool.name),
            wire_name=wire[(server.name, tool.name)],
            server=server.name,
            tool=tool.name,
            description=tool.description or "",
            parameters=parameters,
            timeout=server.timeout if server.timeout is not None else settings.tool_call_timeout_seconds,
        )
        for server, tool, parameters in portable
    ]


def not_callable(tool: mcp_types.Tool) -> str | None:
    """Why no call the engine makes can succeed, whatever the schema: a tool that runs only as a task.

    Such a tool (``execution.taskSupport: "required"``, MCP 2025-11-25) answers a plain
    ``tools/call`` with an error (-32601); offered to the model, every call of it would fail.
    """
    if tool.execution is not None and tool.execution.task_support == "required":
        return 'it runs only as a task (execution.taskSupport "required"), and zorkmcp calls tools directly'
    return None


def _portable(
    kept: Sequence[tuple[ServerConfig, mcp_types.Tool]], say: _Notes, reported: set[tuple[str, str]]
) -> list[tuple[ServerConfig, mcp_types.Tool, dict[str, Any]]]:
    """Each tool with its schema translated; a tool that cannot be offered is left out, with an event."""
    offered: list[tuple[ServerConfig, mcp_types.Tool, dict[str, Any]]] = []
    for server, tool in kept:
        translation = translate_schema(tool.input_schema)
        if (task_only := not_callable(tool)) is not None or translation.parameters is None:
            reason = task_only or translation.excluded or "the input schema cannot be offered"
            _exclude(server.name, tool.name, reason, say, reported)
            continue
        offered.append((server, tool, translation.parameters))
    return offered


def _exclude(
    server: str,
    tool: str,
    reason: str,
    say: _Notes,
    reported: set[tuple[str, str]],
    *,
    lint: bool = True,
) -> None:
    """Report a listed tool that is not offered, unless ``reported`` holds it already (``lint``:
    ``zorkmcp tools --lint`` says more)."""
    if (server, tool) in reported:
        return
    reported.add((server, tool))
    say.events.emit("mcp_tool_excluded", server=server, tool=tool, reason=reason)
    hint = " (zorkmcp tools --lint explains)" if lint else ""
    say.warn(f"MCP tool '{canonical_name(server, tool)}' left out: {reason}{hint}", (server, tool))


_CALL_RESULT: TypeAdapter[mcp_types.CallToolResult | mcp_types.InputRequiredResult] = TypeAdapter(
    mcp_types.CallToolResult | mcp_types.InputRequiredResult
)
"""What a ``tools/call`` may answer (``ClientSession.call_tool`` reads it the same way)."""


def _note_long_description(
    server: str, tool: mcp_types.Tool, say: _Notes, reported: set[tuple[str, str]]
) -> None:
    """Say once per episode that a tool's description is cut for the model (:func:`offered_description`)."""
    length = utf16_units(tool.description or "")
    key = (server + _DESCRIPTION_NOTE, tool.name)
    if length <= MAX_DESCRIPTION_CHARS or key in reported:
        return
    reported.add(key)
    say.warn(
        f"MCP tool '{canonical_name(server, tool.name)}': its description has {length} characters, more "
        f"than OpenAI's API takes ({MAX_DESCRIPTION_CHARS}); the model is offered it cut to "
        f"{MAX_DESCRIPTION_CHARS}",
        (server, tool.name),
    )


async def _call_unchecked(
    client: ClientSession, tool: str, arguments: dict[str, Any], progress: ProgressFnT | None
) -> mcp_types.CallToolResult:
    """``client.call_tool`` without its check of the result against the tool's ``outputSchema``.

    The SDK raises on a result whose structured content does not match (or is missing), and the
    result is then lost although the tool ran; :meth:`Toolbox._checked` checks it instead.
    """
    params = mcp_types.CallToolRequestParams(name=tool, arguments=arguments)
    result = await client.send_request(
        mcp_types.CallToolRequest(params=params), _CALL_RESULT, progress_callback=progress
    )
    if isinstance(result, mcp_types.InputRequiredResult):
        raise RuntimeError("the server asked for input during the call, which zorkmcp does not give")
    return result


async def _call_renewing(
    session: ServerSession, tool: str, arguments: dict[str, Any], progress: ProgressFnT | None
) -> mcp_types.CallToolResult:
    """Call ``tool``; when a remote server forgot the session (HTTP 404), open a new one and retry once."""
    try:
        return await _call_unchecked(session.client, tool, arguments, progress)
    except SdkMCPError:
        if session.remote is None or not session.remote.session_expired or not await session.renew():
            raise
    return await _call_unchecked(session.client, tool, arguments, progress)


def _schema_problem(exc: RuntimeError) -> str:
    """What the SDK's check of a result against its tool's ``outputSchema`` found, as part of one line."""
    cause = exc.__cause__ or exc.__context__
    kind, message = type(cause).__name__, getattr(cause, "message", None)
    if kind == "ValidationError" and isinstance(message, str):  # jsonschema's: the result
        path = getattr(cause, "json_path", "$")
        said = "returned a result that does not match its outputSchema"
        detail = message if path == "$" else f"{path}: {message}"
    elif "did not return structured content" in str(exc):
        return "returned no structuredContent, which its outputSchema asks for"
    else:  # the schema itself: not valid JSON Schema, a $ref that resolves to nothing
        said = "has an outputSchema its results cannot be checked against"
        detail = message if isinstance(message, str) else str(cause) if cause is not None else str(exc)
    detail = " ".join(visible_controls(detail, keep="").split())
    if len(detail) > MISMATCH_CHARS:
        detail = detail[: MISMATCH_CHARS - 1] + "…"
    return f"{said} ({detail})"


class ToolTable:
    """Both names of every tool, mapped to the tool (the routing table; property 35).

    Wire names are unique by construction. Two tools can share a canonical name only when names
    contain dots (server ``a.b`` tool ``c`` and server ``a`` tool ``b.c``); such a canonical name
    is left out and listed in :attr:`ambiguous`, and those tools are reachable by wire name.

    Args:
        tools: the tools, with wire names from :func:`assign_wire_names`.
    """

    def __init__(self, tools: Sequence[ToolInfo]) -> None:
        self._by_wire = {info.wire_name: info for info in tools}
        by_canonical: dict[str, ToolInfo] = {}
        ambiguous: set[str] = set()
        for info in tools:
            if info.name in by_canonical:
                ambiguous.add(info.name)
            by_canonical[info.name] = info
        for name in ambiguous:
            del by_canonical[name]
        self._by_canonical = by_canonical
        self.ambiguous: tuple[str, ...] = tuple(sorted(ambiguous))

    def resolve(self, name: str) -> ToolInfo | None:
        """The tool whose wire name or canonical name is ``name``."""
        return self._by_wire.get(name) or self._by_canonical.get(name)


class Toolbox:
    """The tools available for one turn, federated across servers (seeds 004 §Tool Federation).

    Made by :meth:`McpManager.open_turn` or :func:`open_toolbox`; valid inside that context only.

    Args:
        sessions: the started servers, in configuration order.
        settings: the result cap and the global per-call timeout.
        events: where warnings and events go.
        apply_allow_list: ``False`` offers every tool regardless of ``ServerConfig.tools``.
        reported: the tools left out that were already reported, shared by an episode's toolboxes
            (each is reported once per episode), and the other notes said once per episode (a cut
            description, a result that did not match its ``outputSchema``); ``None``: this
            toolbox's own.

    Attributes:
        tools: every offered tool, in server order then listing order.
        notes: the warnings the last building of the tool table logged (:class:`ToolNote`), in order.
        startup_seconds: how long starting the turn's servers took (set by the opener).
        teardown_seconds: how long closing them took (set when the context has been left).
    """

    def __init__(
        self,
        sessions: Sequence[ServerSession],
        settings: McpSettings,
        *,
        events: EventSink | None = None,
        apply_allow_list: bool = True,
        reported: set[tuple[str, str]] | None = None,
    ) -> None:
        self._settings = settings
        self._events = events if events is not None else NullSink()
        self._reported = reported if reported is not None else set()
        self._sessions = {session.name: session for session in sessions}
        self._apply_allow_list = apply_allow_list
        self.tools: tuple[ToolInfo, ...] = ()
        self.notes: tuple[ToolNote, ...] = ()
        self._rebuild()
        self.startup_seconds: float | None = None
        self.teardown_seconds: float | None = None

    def _rebuild(self) -> None:
        sessions = list(self._sessions.values())
        notes: list[ToolNote] = []
        self.tools = tuple(
            build_tool_infos(
                [(s.config, s.tools) for s in sessions],
                self._settings,
                events=self._events,
                apply_allow_list=self._apply_allow_list,
                left_out={s.name: s.left_out for s in sessions},
                reported=self._reported,
                notes=notes,
            )
        )
        self._output_schemas = {(s.name, tool.name): tool.output_schema for s in sessions for tool in s.tools}
        self._table = ToolTable(self.tools)
        say = _Notes(self._events, notes)
        for name in self._table.ambiguous:
            sharing = [(info.server, info.tool) for info in self.tools if info.name == name]
            say.warn(f"Tool name {name!r} is ambiguous; the LLM can still call it by wire name", *sharing)
        self.notes = tuple(notes)

    async def refresh_if_changed(self) -> bool:
        """List the tools again of every server that sent ``notifications/tools/list_changed``.

        The engine calls this before each LLM request of a turn. A server that fails to answer (or
        takes longer than ``server_startup_timeout_seconds``) keeps its previous list.

        Returns:
            Whether any server's list was listed again (the tool table is then rebuilt).
        """
        changed = [s for s in self._sessions.values() if s.notes is not None and s.notes.take_tools_changed()]
        for session in changed:
            await self._relist(session)
        if changed:
            self._rebuild()
        return bool(changed)

    async def _relist(self, session: ServerSession) -> None:
        limit = self._settings.server_startup_timeout_seconds
        try:
            with anyio.fail_after(limit):
                listing = await list_all_tools(session.client, offers_tools=session.offers_tools)
        except Exception as exc:  # noqa: BLE001 - a failed refresh keeps the old list, never ends the turn
            self._events.log(
                "WARNING",
                f"MCP server '{session.name}' changed its tool list but listing it again failed "
                f"({type(exc).__name__}: {exc}); keeping the previous list",
            )
            return
        session.tools, session.left_out, session.repairs = listing.tools, listing.left_out, listing.repairs
        report_repairs(session.name, listing, self._events)

    @property
    def servers(self) -> tuple[str, ...]:
        """Names of the servers whose sessions this toolbox uses."""
        return tuple(self._sessions)

    def session(self, server: str) -> ServerSession | None:
        """The live session of ``server``, if it is part of this toolbox."""
        return self._sessions.get(server)

    def openai_tools(self) -> list[dict[str, Any]]:
        """All tools as OpenAI tool definitions (``tools=`` of a chat completion; property 38)."""
        return [info.openai_schema() for info in self.tools]

    def resolve(self, name: str) -> ToolInfo | None:
        """Find a tool by wire name or canonical name (never by splitting the name; property 35)."""
        return self._table.resolve(name)

    def _unknown(self, name: str) -> ToolCallResult:
        names = [info.name for info in self.tools]
        available = ", ".join(names) or "none"
        if len(available) > MAX_AVAILABLE_CHARS:  # hundreds of tools: the start of the list, and a count
            cut = available[:MAX_AVAILABLE_CHARS].rsplit(", ", 1)[0]
            available = f"{cut}, … and {len(names) - cut.count(', ') - 1} more"
        guess = self._guess(name)
        meant = f" Did you mean {guess}?" if guess else ""
        return ToolCallResult(
            content=None,
            is_error=True,
            error_message=f"Unknown tool '{name}'.{meant} Available tools: {available}",
        )

    def _guess(self, name: str) -> str:
        """The tools ``name`` probably means, by wire name: another case, a tool's own name without its
        server (``echo`` for ``m.echo``), or a close spelling; ``""`` when none is close."""
        folded = name.casefold()
        found = [info for info in self.tools if folded in (info.wire_name.casefold(), info.name.casefold())]
        found = found or [info for info in self.tools if info.tool.casefold() == folded]
        if not found:
            close = difflib.get_close_matches(name, [info.wire_name for info in self.tools], n=3, cutoff=0.8)
            found = [info for info in self.tools if info.wire_name in close]
        return " or ".join(f"'{info.wire_name}'" for info in found[:3])

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any],
        *,
        timeout: float | None = None,  # noqa: ASYNC109 - the contract: per-tool default, scope inside
    ) -> ToolCallResult:
        """Call a tool and return its result; tool-level problems become error results.

        Args:
            name: wire or canonical name.
            arguments: the tool's arguments (a JSON object).
            timeout: seconds before the call is abandoned (default: the tool's
                :attr:`ToolInfo.timeout`; ``0`` or less: no limit). The SDK then sends
                ``notifications/cancelled``.

        Returns:
            The converted result; ``is_error`` for an unknown tool, a tool error, a dead server or
            a failed call; additionally ``timed_out`` when the timeout expired (Requirement 6.5).
        """
        info = self.resolve(name)
        if info is None:
            return self._unknown(name)
        if not isinstance(arguments, Mapping):
            return ToolCallResult(
                content=None, is_error=True, error_message="Tool call failed: arguments must be a JSON object"
            )
        if (bad := lone_surrogate(arguments)) is not None:  # no transport can encode it (stdio, HTTP)
            where, char = bad
            invalid = f"{where} holds {char!r}, a lone surrogate: not valid Unicode, so the call was not sent"
            return ToolCallResult(content=None, is_error=True, error_message=f"Tool call failed: {invalid}")
        session = self._sessions[info.server]
        if not session.alive:
            await anyio.lowlevel.checkpoint()  # gone because the turn is being cancelled: that wins
            return ToolCallResult(
                content=None, is_error=True, error_message=f"Tool call failed: {session.describe_death()}"
            )
        limit = info.timeout if timeout is None else timeout
        outcome: ToolCallResult | None = None
        with anyio.move_on_after(limit if limit > 0 else math.inf) as scope:
            outcome = await self._attempt(session, info, arguments)
        if outcome is _CONNECTION_CLOSED:
            return await self._died(session, info)
        if outcome is not None:
            return outcome
        assert scope.cancelled_caught
        return ToolCallResult(
            content=None,
            is_error=True,
            error_message=f"Tool call timed out after {_seconds(limit)}s",
            timed_out=True,
        )

    async def _attempt(
        self, session: ServerSession, info: ToolInfo, arguments: Mapping[str, Any]
    ) -> ToolCallResult:
        """One call (renewing an expired remote session once); :data:`_CONNECTION_CLOSED` if it closed."""
        progress = session.notes.progress_for(info.tool) if session.notes is not None else None
        try:
            raw = await _call_renewing(session, info.tool, dict(arguments), progress)
        except SdkMCPError as exc:
            if session.connection_lost(exc):  # not a server's own -32000 (JSON-RPC's server-error range)
                return _CONNECTION_CLOSED
            if session.failure is not None:
                message = session.describe_death()
            else:
                message = remote_call_error(exc, session.remote)
            return self._failed(message)
        except ValidationError as exc:  # the SDK refused the result: one line, not pydantic's report
            return self._failed(f"the server's result is not a valid MCP tool result: {result_problems(exc)}")
        except Exception as exc:  # noqa: BLE001
            # Anything else the SDK raises for this call (invalid result, schema mismatch...) is a
            # tool error for the LLM, not a reason to end the turn (seeds 000 §Error Handling);
            # the engine reports it (mcp_tool_error).
            return self._failed(f"{type(exc).__name__}: {exc}")
        await self._checked(session, info, raw)
        return convert_call_result(
            raw,
            max_bytes=self._settings.max_result_bytes,
            output_schema=self._output_schemas.get((info.server, info.tool)),
        )

    def _failed(self, message: str) -> ToolCallResult:
        """A failed call's error result, within ``max_result_bytes`` as any error result is.

        The message holds what the server said (a JSON-RPC error's message, any length, media
        included): it is shown as a tool's error text would be, base64 media as placeholders and cut
        to ``max_result_bytes`` with the usual marker.
        """
        prefix = "Tool call failed: "
        result = mcp_types.CallToolResult(
            content=[mcp_types.TextContent(type="text", text=message)], is_error=True
        )
        room = max(0, self._settings.max_result_bytes - len(prefix))
        said = convert_call_result(result, max_bytes=room).error_message
        return ToolCallResult(content=None, is_error=True, error_message=f"{prefix}{said}")

    async def _checked(self, session: ServerSession, info: ToolInfo, raw: mcp_types.CallToolResult) -> None:
        """Check a result against its tool's ``outputSchema``; say once per tool and episode when it does not.

        MCP asks clients to check (2025-06-18, "Output Schema": they SHOULD validate), and leaves open
        what then. The model reads the content blocks, not the structured content, and the tool has
        run (what it did is done): its result is shown as it is, and the episode log says what is
        wrong with it, where failing the call would hide the result and invite the model to run the
        tool again.
        """
        if raw.is_error:  # an error result need not match (the SDK does not check it either)
            return
        try:
            await session.client.validate_tool_result(info.tool, raw)  # may list the tools again
        except RuntimeError as exc:
            key = (info.server + _MISMATCH_NOTE, info.tool)
            if key in self._reported:
                return
            self._reported.add(key)
            self._events.log(
                "WARNING",
                f"MCP tool '{info.name}' {_schema_problem(exc)}; the model is shown the result as it is",
            )
        except Exception as exc:  # noqa: BLE001 - the listing it needed failed: the result stands unchecked
            self._events.log(
                "DEBUG", f"MCP tool '{info.name}': result not checked ({type(exc).__name__}: {exc})"
            )

    async def _died(self, session: ServerSession, info: ToolInfo) -> ToolCallResult:
        # A session closes under a call when its owner is cancelled (Ctrl-C, a run that stops), and
        # the call can be woken by the closing before the cancellation reaches it: a checkpoint lets
        # the cancellation win, instead of an error result that the caller would act on.
        await anyio.lowlevel.checkpoint()
        with anyio.move_on_after(DEATH_REPORT_GRACE):  # its exit status, or why its connection broke
            await session.wait_gone()
        if session.process is None or session.process.protocol_error is None:  # else that says why
            session.failure = session.failure or f"the connection closed during a call to {info.name}"
        self._events.emit(
            "mcp_server_died", server=session.name, tool=info.name, reason=session.describe_death()
        )
        return ToolCallResult(
            content=None, is_error=True, error_message=f"Tool call failed: {session.describe_death()}"
        )
