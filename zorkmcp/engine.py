"""The turn engine: one agent turn with MCP tools, inside one trio nursery. Knows nothing about Zork.

A turn (seeds 000 §3.2, with the departures in ``shared/seeds/README.md``)::

    async with mcp.open_turn(episode) as toolbox:         # per_turn servers start here
        loop ≤ max_tool_iterations:
            llm(messages, tools, tool_choice="auto")       # no response_format in the loop
            tool calls → run one after another, each under its own cancel scope;
                invalid JSON or a failing tool → an error result, the batch goes on;
                a timeout → a timeout result, and every remaining call of the batch is answered
                with "skipped: batch aborted after a timeout" (every tool_call_id must be answered,
                or real APIs reject the next request — the seeds' pseudo-code forgets this)
            content → done; neither → warning, done
        no content → the forced final call (tools=None, tool_choice=None, response_format=schema)
                                                            # leaving the block ends every server

:func:`run_turn` opens the toolbox itself; :func:`run_tool_loop` runs on a toolbox you opened.
"""

from __future__ import annotations

import json
import math
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import TYPE_CHECKING, Any, Literal, Protocol

import attrs
import trio

from .config import SamplingSettings
from .errors import ModelCompatibilityError
from .llm import supports_tool_calling
from .mcp import ToolCallResult
from .observability import EventSink, NullSink, OtelTracer, Tracer

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from .llm import ChatModel, LLMResponse
    from .mcp import ToolInfo

__all__ = [
    "FORCE_FINAL_MESSAGE",
    "SKIPPED_AFTER_TIMEOUT",
    "ToolCallRecord",
    "ToolSource",
    "TurnResult",
    "TurnTimings",
    "run_tool_loop",
    "run_turn",
]

FORCE_FINAL_MESSAGE = "Please provide your final action now without calling any more tools."
"""The user message of the forced final call (seeds 000 §3.2)."""

SKIPPED_AFTER_TIMEOUT = "skipped: batch aborted after a timeout"

Outcome = Literal["ok", "error", "timeout", "skipped", "invalid_arguments"]


class ToolSource(Protocol):
    """What the engine needs from a toolbox (``zorkmcp.mcp.Toolbox`` is one)."""

    @property
    def tools(self) -> Sequence[ToolInfo]: ...

    def openai_tools(self) -> list[dict[str, Any]]: ...

    def resolve(self, name: str) -> ToolInfo | None: ...

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> ToolCallResult: ...


@attrs.frozen(kw_only=True)
class ToolCallRecord:
    """One tool call of a turn, as it happened."""

    id: str
    name: str
    """Canonical ``server.tool`` name when the tool is known, else the name the model sent."""
    server: str | None
    arguments: Any
    """The parsed arguments, or the raw string when they were not valid JSON."""
    iteration: int
    duration: float
    """Seconds (on the trio clock)."""
    outcome: Outcome
    error_message: str | None = None
    result_preview: str | None = None
    """The first 200 characters of the result text (JSON for structured content) or of the error."""


def _preview(result: ToolCallResult) -> str:
    if result.is_error:
        return (result.error_message or "")[:200]
    content = result.content
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, default=str)
    return text[:200]


@attrs.frozen(kw_only=True)
class TurnTimings:
    """Where the turn's time went, in seconds on the trio clock."""

    startup: float = 0.0
    llm: float = 0.0
    tools: float = 0.0
    teardown: float = 0.0
    total: float = 0.0


@attrs.frozen(kw_only=True)
class TurnResult:
    """What a turn produced."""

    content: str | None
    """The final assistant content (``None`` when the model never gave any)."""
    messages: list[dict[str, Any]]
    """The whole message history, including the final assistant message."""
    iterations: int
    tool_calls: tuple[ToolCallRecord, ...]
    timings: TurnTimings
    forced_final: bool = False
    """Whether the forced final call (with ``response_format``) was made."""
    deadline_exceeded: bool = False
    finish_reason: str | None = None
    tools_offered: int = 0


@attrs.define
class _Clock:
    llm: float = 0.0
    tools: float = 0.0


@attrs.define
class _Loop:
    """Mutable state of one tool loop."""

    model: ChatModel
    messages: list[dict[str, Any]]
    toolbox: ToolSource | None
    final_response_format: Mapping[str, Any] | None
    max_tool_iterations: int
    sampling: SamplingSettings
    events: EventSink
    tracer: Tracer
    turn: int
    final_action_of: Callable[[str | None], str | None] | None
    iterations: int = 0
    records: list[ToolCallRecord] = attrs.Factory(list)
    clock: _Clock = attrs.Factory(_Clock)
    forced_final: bool = False
    last: LLMResponse | None = None

    async def _complete(self, **kwargs: Any) -> LLMResponse:
        start = trio.current_time()
        try:
            response = await self.model.complete(self.messages, **attrs.asdict(self.sampling), **kwargs)
        finally:
            self.clock.llm += trio.current_time() - start
        self.last = response
        return response

    def _record(self, **fields: Any) -> ToolCallRecord:
        record = ToolCallRecord(**fields)
        self.records.append(record)
        return record

    def _answer(self, call_id: str, result: ToolCallResult) -> None:
        # Requirement 11.5 / property 44: the result goes into history as the seeds'
        # ``json.dumps(result.to_dict())``. ASCII escapes keep it encodable: a lone surrogate (a tool
        # name or result echoing the model's "\ud800") would make the next request unsendable.
        content = json.dumps(result.to_dict(), default=str)
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": content})

    async def run(self) -> None:
        tools = self.toolbox.openai_tools() if self.toolbox is not None else []
        if tools:
            self.events.log(
                "INFO", f"Turn {self.turn}: MCP session started (max {self.max_tool_iterations} iterations)"
            )
        while self.iterations < self.max_tool_iterations:
            self.iterations += 1
            response = await self._complete(tools=tools or None, tool_choice="auto" if tools else None)
            if response.tool_calls:
                self.messages.append(
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "id": tc.id,
                                "type": tc.type,
                                "function": {"name": tc.function.name, "arguments": tc.function.arguments},
                            }
                            for tc in response.tool_calls
                        ],
                    }
                )
                aborted = False
                for tc in response.tool_calls:
                    if aborted:
                        self._answer(
                            tc.id,
                            ToolCallResult(content=None, is_error=True, error_message=SKIPPED_AFTER_TIMEOUT),
                        )
                        info = self.toolbox.resolve(tc.function.name) if self.toolbox else None
                        self._record(
                            id=tc.id,
                            name=info.name if info else tc.function.name,
                            server=info.server if info else None,
                            arguments=tc.function.arguments,
                            iteration=self.iterations,
                            duration=0.0,
                            outcome="skipped",
                            error_message=SKIPPED_AFTER_TIMEOUT,
                        )
                        continue
                    aborted = await self._run_call(tc.id, tc.function.name, tc.function.arguments)
                    if aborted:
                        self.events.log(
                            "INFO", f"Turn {self.turn}: Skipping remaining tools in batch after timeout"
                        )
                continue
            if response.content:
                break
            self.events.emit(
                "mcp_unexpected_state", finish_reason=response.finish_reason, iteration=self.iterations
            )
            self.events.log(
                "WARNING",
                f"Turn {self.turn} Iteration {self.iterations}: LLM returned no content and no tool_calls, "
                f"finish_reason={response.finish_reason}",
            )
            break

        if self.last is None or not self.last.content:
            self.events.emit("mcp_no_content", iterations=self.iterations)
            self.events.log(
                "WARNING",
                f"Turn {self.turn}: Agent exited tool loop without content after {self.iterations} "
                "iterations; forcing final action",
            )
            self.messages.append({"role": "user", "content": FORCE_FINAL_MESSAGE})
            self.forced_final = True
            await self._complete(tools=None, tool_choice=None, response_format=self.final_response_format)
        if self.last is not None and self.last.content:
            self.messages.append({"role": "assistant", "content": self.last.content})

    async def _run_call(self, call_id: str, name: str, raw_arguments: str) -> bool:
        """Run one tool call; return True when it timed out (the batch must be aborted)."""
        info = self.toolbox.resolve(name) if self.toolbox is not None else None
        canonical = info.name if info else name
        server = info.server if info else None
        prefix = f"Turn {self.turn} Iteration {self.iterations}"

        # Requirement 5.3: parse the JSON arguments before execution.
        try:
            arguments = json.loads(raw_arguments) if raw_arguments.strip() else {}
            if not isinstance(arguments, dict):
                raise TypeError(f"expected a JSON object, got {type(arguments).__name__}")
        except (ValueError, TypeError) as exc:
            message = f"Invalid tool arguments for {canonical}: {exc}"
            self.events.emit(
                "mcp_tool_error",
                tool_name=canonical,
                server_name=server,
                error=message,
                iteration=self.iterations,
            )
            self.events.log("WARNING", f"{prefix}: Tool call failed: {canonical} - {message}")
            self._answer(call_id, ToolCallResult(content=None, is_error=True, error_message=message))
            self._record(
                id=call_id,
                name=canonical,
                server=server,
                arguments=raw_arguments,
                iteration=self.iterations,
                duration=0.0,
                outcome="invalid_arguments",
                error_message=message,
            )
            return False

        self.events.emit(
            "mcp_tool_call",
            tool_name=canonical,
            server_name=server,
            arguments=arguments,
            iteration=self.iterations,
        )
        self.events.log("INFO", f"{prefix}: Agent calling tool {canonical}")
        self.events.log(
            "DEBUG", f"{prefix}: Tool arguments: {json.dumps(arguments, ensure_ascii=False)[:500]}"
        )

        start = trio.current_time()
        with self.tracer.span(
            f"mcp-tool-{canonical}", tool_name=canonical, server_name=server, input=arguments
        ) as span:
            if self.toolbox is not None:
                # The toolbox runs the call inside its own cancel scope with the tool's timeout.
                result = await self.toolbox.call_tool(name, arguments)
            else:
                # No tools were offered (MCP disabled) but the model called one anyway: every
                # tool_call_id must still be answered (property 3), so answer with an error.
                message = f"Unknown tool '{name}'. No tools are available"
                result = ToolCallResult(content=None, is_error=True, error_message=message)
            duration = trio.current_time() - start
            span.update(
                is_error=result.is_error, timed_out=result.timed_out, duration_ms=round(duration * 1000, 3)
            )
        self.clock.tools += duration

        if result.timed_out:
            outcome: Outcome = "timeout"
            self.events.emit(
                "mcp_tool_timeout",
                tool_name=canonical,
                server_name=server,
                iteration=self.iterations,
                error=result.error_message,
            )
            self.events.log("WARNING", f"{prefix}: Tool call timeout: {canonical}")
        elif result.is_error:
            outcome = "error"
            self.events.emit(
                "mcp_tool_error",
                tool_name=canonical,
                server_name=server,
                error=result.error_message,
                iteration=self.iterations,
            )
            self.events.log("WARNING", f"{prefix}: Tool call failed: {canonical} - {result.error_message}")
        else:
            outcome = "ok"
        self.events.emit(
            "mcp_tool_result",
            tool_name=canonical,
            server_name=server,
            result_type=type(result.content).__name__,
            result_length=len(str(result.content)),
            is_error=result.is_error,
            duration_ms=round(duration * 1000, 3),
            iteration=self.iterations,
        )
        self.events.log("INFO", f"{prefix}: Tool result received ({duration:.1f}s)")
        self._answer(call_id, result)
        self._record(
            id=call_id,
            name=canonical,
            server=server,
            arguments=arguments,
            iteration=self.iterations,
            duration=duration,
            outcome=outcome,
            error_message=result.error_message,
            result_preview=_preview(result),
        )
        return result.timed_out


def _check_model(model: ChatModel, toolbox: ToolSource | None, force_tool_support: bool) -> None:
    """Requirement 12.5: an incompatible model is an error before the first tool call."""
    if (
        toolbox is not None
        and toolbox.tools
        and not supports_tool_calling(model.model, force=force_tool_support)
    ):
        raise ModelCompatibilityError(
            f"Model '{model.model}' does not support tool calling.\n"
            "Please either:\n"
            "  1. Set mcp.enabled = false in pyproject.toml ([tool.zorkgpt.mcp] enabled = false), or\n"
            "  2. Use a compatible model (gpt-4, claude-3, etc.), or\n"
            "  3. Set force_tool_support = true in [tool.zorkgpt.mcp] if the detection is wrong"
        )


async def run_tool_loop(
    model: ChatModel,
    messages: Sequence[Mapping[str, Any]],
    toolbox: ToolSource | None,
    *,
    final_response_format: Mapping[str, Any] | None = None,
    max_tool_iterations: int = 20,
    sampling: SamplingSettings | None = None,
    events: EventSink | None = None,
    tracer: Tracer | None = None,
    turn: int = 0,
    force_tool_support: bool = False,
    final_action_of: Callable[[str | None], str | None] | None = None,
    deadline: float | None = None,
) -> TurnResult:
    """Run the tool-calling loop on a toolbox the caller opened.

    Args:
        model: the chat model (``zorkmcp.llm.LLMClient``, ``ScriptedModel`` or your own).
        messages: the opening messages (system/user); copied, never modified.
        toolbox: the tools offered to the model, or ``None`` for a turn without tools.
        final_response_format: the ``response_format`` of the forced final call (a JSON schema).
        max_tool_iterations: LLM calls with tools before the forced final call.
        sampling: sampling parameters for every call.
        events: where events and log lines go.
        tracer: span factory (OpenTelemetry by default).
        turn: the turn number, for logs.
        force_tool_support: skip the model-name compatibility check.
        final_action_of: maps the final content to a short action for the session-complete event.
        deadline: seconds for the whole loop; when it passes the loop stops and the result has
            ``deadline_exceeded=True`` and no content.

    Raises:
        ModelCompatibilityError: tools are offered to a model that cannot call them.
        LLMError: the model endpoint failed beyond its retries.
    """
    if max_tool_iterations < 1:
        raise ValueError(f"max_tool_iterations must be >= 1, got {max_tool_iterations}")
    _check_model(model, toolbox, force_tool_support)
    events = events if events is not None else NullSink()
    tracer = tracer if tracer is not None else OtelTracer()
    loop = _Loop(
        model=model,
        messages=[dict(m) for m in messages],
        toolbox=toolbox,
        final_response_format=final_response_format,
        max_tool_iterations=max_tool_iterations,
        sampling=sampling or SamplingSettings(),
        events=events,
        tracer=tracer,
        turn=turn,
        final_action_of=final_action_of,
    )
    start = trio.current_time()
    with tracer.span(
        "agent-tool-calling-session",
        turn=turn,
        max_iterations=max_tool_iterations,
        tools_offered=len(toolbox.tools) if toolbox else 0,
    ) as session_span:
        with trio.move_on_after(math.inf if deadline is None else deadline) as scope:
            await loop.run()
        content = loop.last.content if (loop.last is not None and not scope.cancelled_caught) else None
        final_action = final_action_of(content) if final_action_of is not None else None
        tools_used = sorted({r.name for r in loop.records if r.outcome != "skipped"})
        session_span.update(
            iterations_used=loop.iterations,
            tools_called=len(loop.records),
            final_action=final_action,
            deadline_exceeded=scope.cancelled_caught,
        )
    if scope.cancelled_caught:
        events.emit("turn_deadline_exceeded", deadline_seconds=deadline, iterations=loop.iterations)
        events.log("WARNING", f"Turn {turn}: turn deadline of {deadline}s exceeded")
    events.emit(
        "mcp_session_complete",
        iterations=loop.iterations,
        tool_calls_count=len(loop.records),
        tools_used=tools_used,
        final_action=final_action,
    )
    if toolbox is not None and toolbox.tools:
        events.log(
            "INFO",
            f"Turn {turn}: MCP session complete "
            f"({loop.iterations} iterations, {len(loop.records)} tool calls)",
        )
    return TurnResult(
        content=content,
        messages=loop.messages,
        iterations=loop.iterations,
        tool_calls=tuple(loop.records),
        timings=TurnTimings(llm=loop.clock.llm, tools=loop.clock.tools, total=trio.current_time() - start),
        forced_final=loop.forced_final,
        deadline_exceeded=scope.cancelled_caught,
        finish_reason=loop.last.finish_reason if loop.last is not None else None,
        tools_offered=len(toolbox.tools) if toolbox else 0,
    )


async def run_turn(
    model: ChatModel,
    messages: Sequence[Mapping[str, Any]],
    *,
    open_toolbox: Callable[[], AbstractAsyncContextManager[ToolSource]] | None = None,
    final_response_format: Mapping[str, Any] | None = None,
    max_tool_iterations: int = 20,
    sampling: SamplingSettings | None = None,
    events: EventSink | None = None,
    tracer: Tracer | None = None,
    turn: int = 0,
    force_tool_support: bool = False,
    final_action_of: Callable[[str | None], str | None] | None = None,
    deadline: float | None = None,
) -> TurnResult:
    """Run one whole turn: open the toolbox (servers start), run the loop, close it (servers end).

    ``open_toolbox`` is a zero-argument callable returning an async context manager, typically
    ``lambda: manager.open_turn(episode)`` for a ``zorkmcp.mcp.McpManager``; ``None`` runs the turn
    without tools. Everything the toolbox starts is owned by this task and is gone when this
    function returns or raises. The other arguments are those of :func:`run_tool_loop`; ``deadline``
    bounds the server start-up and the loop together.
    """
    start = trio.current_time()
    opener: AbstractAsyncContextManager[ToolSource | None] = (
        open_toolbox() if open_toolbox is not None else nullcontext(None)
    )
    end_of_deadline = math.inf if deadline is None else start + deadline
    async with opener as toolbox:
        ready = trio.current_time()
        result = await run_tool_loop(
            model,
            messages,
            toolbox,
            final_response_format=final_response_format,
            max_tool_iterations=max_tool_iterations,
            sampling=sampling,
            events=events,
            tracer=tracer,
            turn=turn,
            force_tool_support=force_tool_support,
            final_action_of=final_action_of,
            deadline=None if deadline is None else max(0.0, end_of_deadline - ready),
        )
        closing = trio.current_time()
    end = trio.current_time()
    timings = attrs.evolve(result.timings, startup=ready - start, teardown=end - closing, total=end - start)
    return attrs.evolve(result, timings=timings)
