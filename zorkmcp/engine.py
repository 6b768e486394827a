"""The turn engine: one agent turn with MCP tools, in one task group (a nursery on trio). No Zork here.

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
            the only call names no tool and carries the answer (below) → that answer, done
        no content → the forced final call (tools=None, tool_choice=None, response_format=schema);
            no content but a call carrying the answer → its arguments are the answer;
            else text beside the (stray) calls → that text is the answer
                                                            # leaving the block ends every server

A call *carries the answer* when its arguments are a JSON object and its name is the answer
schema's (``final_response_format["json_schema"]["name"]``, e.g. ``AgentResponse``, also with
gpt-oss's ``functions.`` prefix) or the object holds every key that schema requires: some providers
implement ``response_format`` through a tool call and leak it, and some models answer that way
inside the loop. Such a call is the answer, not a tool call: it is not executed, not recorded in
:attr:`TurnResult.tool_calls`, and the history holds its arguments as the assistant's content.

Two spellings from the wild are mended: a tool name with gpt-oss's ``functions.`` prefix
(``functions.zork__inventory``) resolves to the tool that the rest names, and arguments encoded
twice (a JSON string holding a JSON object) are decoded once more.

:func:`run_turn` opens the toolbox itself; :func:`run_tool_loop` runs on a toolbox you opened. Both
take a :class:`TurnOptions` and are written on anyio: they work under ``trio.run`` (the project's
runtime) and under ``asyncio.run`` alike.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager, nullcontext
from typing import TYPE_CHECKING, Any, Literal, Protocol

import anyio
import attrs

from ._jsontypes import json_kind
from .config import SamplingSettings
from .errors import LLMError, ModelCompatibilityError
from .llm import CompletionRequest, supports_tool_calling
from .llm._compat import CONTEXT_REMEDY, PER_MINUTE_REMEDY, finish_reason_said, too_large
from .llm._text import is_json, quoted_excerpt
from .mcp import ToolCallResult
from .observability import EventSink, NullSink, OtelTracer, Tracer

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from .llm import ChatModel, LLMResponse, ToolCall
    from .mcp import ToolInfo

__all__ = [
    "CONTEXT_TRIMMED_MESSAGE",
    "FORCE_FINAL_MESSAGE",
    "PER_MINUTE_TRIMMED_MESSAGE",
    "PREVIEW_CHARS",
    "SKIPPED_AFTER_TIMEOUT",
    "ToolCallRecord",
    "ToolSource",
    "TurnOptions",
    "TurnResult",
    "TurnTimings",
    "run_tool_loop",
    "run_turn",
]

FORCE_FINAL_MESSAGE = "Please provide your final action now without calling any more tools."
"""The user message of the forced final call (seeds 000 §3.2, Requirement 5.7).

Appended as its own user message after a tool result; when the history already ends with a user
message (the model answered nothing at all), it is added to that message instead (a paragraph of
its text, or a last text part when its content is a list of parts), so that roles keep alternating:
strict chat templates (Mistral, Gemma) reject two user messages in a row.
"""

CONTEXT_TRIMMED_MESSAGE = (
    "Your tool calls of this turn and their results no longer fit in your context window, so they were "
    "left out, and no tools are offered for the rest of this turn."
)
"""What the turn's user message says before :data:`FORCE_FINAL_MESSAGE` when the model's context window
was exceeded and the final answer is asked for without the turn's tool calls (see :func:`run_turn`)."""

PER_MINUTE_TRIMMED_MESSAGE = (
    "Your tool calls of this turn and their results made the request larger than the endpoint accepts "
    "in a minute (its tokens-per-minute limit), so they were left out, and no tools are offered for the "
    "rest of this turn."
)
"""What the turn's user message says instead of :data:`CONTEXT_TRIMMED_MESSAGE` when the request was
larger than the account's tokens-per-minute limit (OpenAI's 429, Groq's 413 ``Request too large … on
tokens per min``), not the model's context window."""

_FUNCTIONS_PREFIX = "functions."
"""The namespace gpt-oss-style models put before a tool's name (``functions.zork__inventory``)."""

SKIPPED_AFTER_TIMEOUT = "skipped: batch aborted after a timeout"
PREVIEW_CHARS = 200
"""Length of :attr:`ToolCallRecord.result_preview` (for the live view and the transcript)."""

Outcome = Literal["ok", "error", "timeout", "skipped", "invalid_arguments"]


class ToolSource(Protocol):
    """What the engine needs from a toolbox (``zorkmcp.mcp.Toolbox`` is one).

    Optional: ``async def refresh_if_changed(self) -> bool``, awaited before each LLM request; when
    it returns ``True`` the tools are read again (a server changed its tool list).
    """

    @property
    def tools(self) -> Sequence[ToolInfo]: ...

    def openai_tools(self) -> list[dict[str, Any]]: ...

    def resolve(self, name: str) -> ToolInfo | None: ...

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> ToolCallResult: ...


def _shown(value: object) -> str:
    """``'5' (str)``: a value as an error message shows it, shortened, with its type."""
    text = repr(value)
    return f"{text[:57] + '...' if len(text) > 60 else text} ({type(value).__name__})"


def _count(low: int) -> Callable[[object, attrs.Attribute[Any], object], None]:
    """attrs validator: an integer (not a ``bool``) ``>= low``."""

    def check(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        rule = f"{attribute.name} must be an int >= {low}"
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{rule}, got {_shown(value)}")
        if value < low:
            raise ValueError(f"{rule}, got {value!r}")

    return check


def _seconds(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """attrs validator: ``None`` or a finite number (not a ``bool``) ``> 0``."""
    rule = f"{attribute.name} must be None or a finite number of seconds > 0"
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{rule}, got {_shown(value)}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{rule}, got {value!r}")


def _mapping(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    """attrs validator: ``None`` or a mapping."""
    if value is not None and not isinstance(value, Mapping):
        rule = f"{attribute.name} must be None or a mapping (a response_format)"
        raise TypeError(f"{rule}, got {_shown(value)}")


@attrs.frozen(kw_only=True)
class TurnOptions:
    """How one turn runs; a small frozen value (``attrs.evolve`` to change a field).

    Attributes:
        final_response_format: the ``response_format`` of the forced final call (a JSON schema
            mapping), or ``None``. Its ``json_schema`` name and required keys also tell a tool call
            that carries the answer (module docstring); with ``None`` no call is taken for one.
        max_tool_iterations: LLM calls with tools before the forced final call (an int >= 1).
        sampling: sampling parameters for every call.
        force_tool_support: skip the model-name compatibility check (Requirement 12.5).
        deadline: seconds for the whole turn (server start-up and the loop together), a finite
            number > 0, or ``None`` for no deadline; when it passes the start-up or the loop stops
            and the result has ``deadline_exceeded=True`` and no content.
        turn: the turn number, for events and logs (an int >= 0).
        parse_answer: parses the final content (``None`` when there is none) once; the result is
            :attr:`TurnResult.answer`, and its ``action`` attribute, when it has one, is the
            ``final_action`` of ``mcp_session_complete``.

    Raises:
        TypeError: a field has the wrong type (``deadline="5"``, ``max_tool_iterations=2.5``).
        ValueError: a number is out of range (``deadline=-1`` or ``nan``, ``max_tool_iterations=0``).
    """

    final_response_format: Mapping[str, Any] | None = attrs.field(default=None, validator=_mapping)
    max_tool_iterations: int = attrs.field(default=20, validator=_count(1))
    sampling: SamplingSettings = attrs.field(factory=SamplingSettings)
    force_tool_support: bool = False
    deadline: float | None = attrs.field(default=None, validator=_seconds)
    turn: int = attrs.field(default=0, validator=_count(0))
    parse_answer: Callable[[str | None], Any] | None = None


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
    """Seconds (on the event loop's clock)."""
    outcome: Outcome
    error_message: str | None = None
    result_preview: str | None = None
    """The first :data:`PREVIEW_CHARS` characters of the result (or of the error)."""


@attrs.frozen(kw_only=True)
class TurnTimings:
    """Where the turn's time went, in seconds on the event loop's clock."""

    startup: float = 0.0
    llm: float = 0.0
    tools: float = 0.0
    teardown: float = 0.0
    total: float = 0.0


@attrs.frozen(kw_only=True)
class TurnResult:
    """What a turn produced."""

    content: str | None
    """The final answer's text: the assistant's content, or the arguments of a tool call that
    carried the answer (module docstring); ``None`` when the model gave neither."""
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
    answer: Any = None
    """What :attr:`TurnOptions.parse_answer` made of the content (``None`` without a parser)."""
    usage: dict[str, int] = attrs.field(factory=dict)
    """Token counts summed over the turn's LLM calls (``prompt_tokens``, ``completion_tokens``, …)."""
    llm_requests: int = 0
    refusal: str | None = None
    """The refusal the last response sent instead of content (:attr:`LLMResponse.refusal`)."""
    reasoning: str | None = None
    """The reasoning the last response sent apart from its content (:attr:`LLMResponse.reasoning`)."""
    context_exceeded: bool = False
    """A request did not fit the model's context window (or was larger than the account's tokens per
    minute), and the final answer was asked for with the turn's opening messages only, without its tool
    calls and tools (``llm_context_exceeded``, whose ``limit`` says which)."""


def _preview(result: ToolCallResult) -> str:
    if result.is_error:
        return (result.error_message or "")[:PREVIEW_CHARS]
    content = result.content
    text = content if isinstance(content, str) else json.dumps(content, ensure_ascii=False, default=str)
    return text[:PREVIEW_CHARS]


def _decode_arguments(raw: str) -> tuple[Any, str]:
    """The JSON value of a tool call's arguments, and the JSON text it was read from.

    Empty arguments are ``{}``. A JSON string whose text is itself a JSON object (arguments
    encoded twice, ``"\\"{}\\""``) is decoded once more; the text is then that inner string.

    Raises:
        ValueError: not JSON.
    """
    text = raw if raw.strip() else "{}"
    value = json.loads(text)
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            inner = json.loads(value)
        except ValueError:
            return value, text
        if isinstance(inner, dict):
            return inner, value
    return value, text


def _history_arguments(call: ToolCall) -> str:
    """A call's arguments as the history sends them back: as the model wrote them when they are JSON
    (or empty), else ``{}``.

    vLLM reads every call of the history back as JSON and answers HTTP 400 to one that is not, so
    a call cut short at ``max_tokens`` (``{"tag": "ma``) ended the episode at the next request. The
    call's error result, which follows it, still quotes what the model sent.
    """
    raw = call.function.arguments
    return raw if not raw.strip() or is_json(raw) else "{}"


_QUOTED_ARGUMENTS = 200
"""How much of arguments that are not JSON the call's error result quotes (the history holds ``{}``)."""


WARNED_ERROR_CHARS = 1000
"""The most of a failed call's error its warning line shows (the event and the model's result hold up
to ``max_result_bytes`` of it)."""


def _warned(error: str) -> str:
    """A failed call's error as its warning shows it: without a second ``Tool call failed:`` (the line
    says it once), cut at :data:`WARNED_ERROR_CHARS` with how much more there was."""
    error = error.removeprefix("Tool call failed: ")
    if len(error) <= WARNED_ERROR_CHARS:
        return error
    return f"{error[:WARNED_ERROR_CHARS]}… ({len(error) - WARNED_ERROR_CHARS} more characters)"


def _parse_arguments(raw: str) -> dict[str, Any]:
    """Requirement 5.3: the JSON arguments are parsed before execution (see :func:`_decode_arguments`).

    Raises:
        ValueError: not JSON, or not a JSON object.
    """
    arguments, _ = _decode_arguments(raw)
    if arguments is None:  # "null": no arguments, as an empty string is
        return {}
    if not isinstance(arguments, dict):
        raise ValueError(f"expected a JSON object, got {json_kind(arguments)}")
    return arguments


def _answer_schema(response_format: Mapping[str, Any] | None) -> tuple[str | None, frozenset[str]]:
    """The answer schema's name and required keys, from a ``json_schema`` response_format."""
    spec = response_format.get("json_schema") if response_format is not None else None
    if not isinstance(spec, Mapping):
        return None, frozenset()
    name = spec.get("name")
    schema = spec.get("schema")
    required = schema.get("required") if isinstance(schema, Mapping) else None
    keys = frozenset(k for k in required if isinstance(k, str)) if isinstance(required, list) else frozenset()
    return (name if isinstance(name, str) and name else None), keys


def _carried_answer(call: ToolCall, response_format: Mapping[str, Any] | None) -> str | None:
    """The answer's JSON text when ``call`` carries the answer (see the module docstring), else ``None``."""
    name, required = _answer_schema(response_format)
    if name is None and not required:
        return None
    try:
        value, text = _decode_arguments(call.function.arguments)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    if call.function.name.removeprefix(_FUNCTIONS_PREFIX) == name or (required and required <= value.keys()):
        return text
    return None


def _with_final_request(message: Mapping[str, Any], *texts: str) -> dict[str, Any] | None:
    """``message`` (a user message) with ``texts`` and :data:`FORCE_FINAL_MESSAGE` added to its content.

    ``None`` when its content is neither text nor a list of parts. The parts already there are kept
    as they are (a ``cache_control`` marker on one keeps the cached prefix); a new text part is added
    for each text, :data:`FORCE_FINAL_MESSAGE` last.
    """
    added = [*texts, FORCE_FINAL_MESSAGE]
    content = message.get("content")
    if content is None or isinstance(content, str):
        return {**message, "content": "\n\n".join([content, *added] if content else added)}
    if isinstance(content, list):
        return {**message, "content": [*content, *({"type": "text", "text": text} for text in added)]}
    return None


def _context_error(error: LLMError) -> LLMError:
    """The error of a request that was too large even without the turn's tool calls and tools: the
    endpoint's, with what to do (:data:`~zorkmcp.llm._compat.CONTEXT_REMEDY`, or for the account's
    tokens per minute :data:`~zorkmcp.llm._compat.PER_MINUTE_REMEDY`, which the client's message of an
    HTTP error already ends with)."""
    remedy = CONTEXT_REMEDY if too_large(error) == "context window" else PER_MINUTE_REMEDY
    if str(error).endswith(remedy):
        return error
    return type(error)(
        f"{error} — {remedy}",
        status=error.status,
        provider_message=error.provider_message,
        body_excerpt=error.body_excerpt,
    )


@attrs.define
class _Call:
    """One tool call on its way through the loop: what the model asked for and what came of it."""

    id: str
    name: str
    canonical: str
    server: str | None
    raw_arguments: str
    timeout: float | None = None
    """The tool's per-call timeout (``None``: no such tool)."""
    arguments: Any = None
    result: ToolCallResult | None = None
    outcome: Outcome = "ok"
    duration: float = 0.0
    cut: bool = False
    """The response that made the call stopped at its token limit (``finish_reason`` ``length``)."""


@attrs.define
class _Loop:
    """Mutable state of one tool loop."""

    model: ChatModel
    messages: list[dict[str, Any]]
    toolbox: ToolSource | None
    options: TurnOptions
    events: EventSink
    tracer: Tracer
    iterations: int = 0
    records: list[ToolCallRecord] = attrs.Factory(list)
    llm_seconds: float = 0.0
    tool_seconds: float = 0.0
    usage: dict[str, int] = attrs.Factory(dict)
    requests: int = 0
    forced_final: bool = False
    last: LLMResponse | None = None
    content: str | None = None
    """The final answer's text: the content, or the arguments of a call carrying the answer."""
    opening: list[dict[str, Any]] = attrs.Factory(list)
    """The turn's opening messages, as they came (what a request that exceeded the context keeps)."""
    trimmed: bool = False
    """The model's context window was exceeded and the final answer asked for with only :attr:`opening`."""
    note: tuple[str, ...] = ()
    """What the forced final call tells the model before asking (:data:`CONTEXT_TRIMMED_MESSAGE` or
    :data:`PER_MINUTE_TRIMMED_MESSAGE`)."""

    def __attrs_post_init__(self) -> None:
        self.opening = [dict(m) for m in self.messages]

    @property
    def prefix(self) -> str:
        return f"Turn {self.options.turn} Iteration {self.iterations}"

    async def _complete(self, **fields: Any) -> LLMResponse:
        request = CompletionRequest(self.messages, sampling=self.options.sampling, **fields)
        start = anyio.current_time()
        try:
            response = await self.model.complete(request)
        finally:
            self.llm_seconds += anyio.current_time() - start
        self.requests += 1
        for key, value in (response.usage or {}).items():
            if isinstance(value, int):
                self.usage[key] = self.usage.get(key, 0) + value
        self.last = response
        return response

    async def run(self) -> None:
        tools = self.toolbox.openai_tools() if self.toolbox is not None else []
        if tools:
            limit = self.options.max_tool_iterations
            self.events.log("INFO", f"Turn {self.options.turn}: MCP session started (max {limit} iterations)")
        while self.iterations < self.options.max_tool_iterations:
            self.iterations += 1
            refresh = getattr(self.toolbox, "refresh_if_changed", None)  # optional: a changed tool list
            if refresh is not None and await refresh() and self.toolbox is not None:
                tools = self.toolbox.openai_tools()
            try:
                response = await self._complete(tools=tools or None, tool_choice="auto" if tools else None)
            except LLMError as error:
                if too_large(error) is None:  # the context window, or tokens per minute
                    raise
                if not (tools or len(self.messages) > len(self.opening)):
                    raise _context_error(error) from error  # nothing to leave out: the opening does not fit
                self._trim(error, kept=len(self.messages), tools=len(tools))
                break
            if response.tool_calls:
                self.content = self._answer_in_loop(response.tool_calls)
                if self.content is not None:
                    break
                await self._run_batch(response)
                continue
            if not response.content:
                self._unexpected(response)
            self.content = response.content
            break
        if not self.content:
            await self._force_final()
        if self.content:
            self.messages.append({"role": "assistant", "content": self.content})

    def _resolve(self, name: str) -> tuple[ToolInfo | None, str]:
        """The tool ``name`` names and the name to call it by; gpt-oss's ``functions.`` prefix is dropped
        when the name names no tool and the rest does."""
        if self.toolbox is None:
            return None, name
        info = self.toolbox.resolve(name)
        if info is None and name.startswith(_FUNCTIONS_PREFIX):
            rest = name.removeprefix(_FUNCTIONS_PREFIX)
            stripped = self.toolbox.resolve(rest)
            if stripped is not None:
                return stripped, rest
        return info, name

    def _answer_in_loop(self, calls: Sequence[ToolCall]) -> str | None:
        """The answer, when the response's only call names no tool and carries the answer."""
        if len(calls) != 1 or self._resolve(calls[0].function.name)[0] is not None:
            return None
        answer = _carried_answer(calls[0], self.options.final_response_format)
        if answer is not None:
            self.events.log(
                "INFO",
                f"{self.prefix}: The model answered through a call to '{calls[0].function.name}' "
                "(no such tool); its arguments are the final answer",
            )
        return answer

    def _unexpected(self, response: LLMResponse) -> None:
        self.events.emit(
            "mcp_unexpected_state", finish_reason=response.finish_reason, iteration=self.iterations
        )
        refused = f"; it refused: {quoted_excerpt(response.refusal)}" if response.refusal else ""
        if not refused and response.reasoning:  # a reasoning model that did not get to its answer
            refused = (
                f"; it sent only its reasoning ({len(response.reasoning)} characters): "
                f"{quoted_excerpt(response.reasoning)}"
            )
        reason = response.finish_reason
        meant = ""
        if reason is not None and reason != "stop":
            meant = f" ({finish_reason_said(reason, self.options.sampling.max_tokens)})"
        self.events.log(
            "WARNING",
            f"{self.prefix}: LLM returned no content and no tool_calls, "
            f"finish_reason={reason}{meant}{refused}",
        )

    def _trim(self, error: LLMError, *, kept: int, tools: int) -> None:
        """The request was too large (the model's context window, the account's tokens per minute:
        ``limit`` in the event): the turn goes on with only its opening messages, and no tools, to the
        forced final call (once a turn; an event and a warning say so).

        ``kept``: the messages of the turn's history before the request (its tool calls are those after
        the opening messages); ``tools``: how many tools the request offered."""
        dropped = kept - len(self.opening)
        self.messages[:] = [dict(m) for m in self.opening]
        self.trimmed = True
        limit = too_large(error) or "context window"
        trimmed = CONTEXT_TRIMMED_MESSAGE if limit == "context window" else PER_MINUTE_TRIMMED_MESSAGE
        self.note = (trimmed,) if dropped else ()
        said = error.provider_message or str(error)
        self.events.emit(
            "llm_context_exceeded",
            iteration=self.iterations,
            dropped_messages=dropped,
            dropped_tools=tools,
            error=said,
            limit=limit,
        )
        left = [f"its tool calls and their results ({dropped} messages)"] if dropped else []
        left += [f"the {tools} tool{'s' * (tools != 1)} offered"] if tools else []
        what = (
            "did not fit the model's context window"
            if limit == "context window"
            else "is larger than the account's tokens-per-minute limit"
        )
        self.events.log(
            "WARNING",
            f"{self.prefix}: the request {what} ({said}); the final answer "
            f"is asked for with the turn's opening messages only, without {' and '.join(left)}",
        )

    async def _force_final(self) -> None:
        if not self.trimmed:
            self.events.emit("mcp_no_content", iterations=self.iterations)
            self.events.log(
                "WARNING",
                f"Turn {self.options.turn}: Agent exited tool loop without content after {self.iterations} "
                "iterations; forcing final action",
            )
        before = len(self.messages)
        note, self.note = self.note, ()
        last = self.messages[-1] if self.messages else None
        merged = _with_final_request(last, *note) if last is not None and last.get("role") == "user" else None
        if merged is not None:  # roles keep alternating (see FORCE_FINAL_MESSAGE)
            self.messages[-1] = merged
        else:
            self.messages.append({"role": "user", "content": "\n\n".join([*note, FORCE_FINAL_MESSAGE])})
        self.forced_final = True
        try:
            response = await self._complete(response_format=self.options.final_response_format)
        except LLMError as error:
            # The history of a long tool loop no longer fits: once a turn, ask again without it.
            if too_large(error) is None:
                raise
            if self.trimmed or before <= len(self.opening):
                raise _context_error(error) from error
            self._trim(error, kept=before, tools=0)
            await self._force_final()
            return
        self.content = response.content
        if not response.content and response.tool_calls:
            # No tools were offered: a call here is the answer leaking through the provider's
            # tool-based response_format, or nothing usable.
            for call in response.tool_calls:
                answer = _carried_answer(call, self.options.final_response_format)
                if answer is not None:
                    self.events.log(
                        "INFO",
                        f"Turn {self.options.turn}: The forced final answer came as a call to "
                        f"'{call.function.name}'; its arguments are the final answer",
                    )
                    self.content = answer
                    break
            else:
                if response.text_beside_calls:
                    # No tools were offered: text beside a stray call (some vLLM builds) is the answer.
                    self.events.log(
                        "INFO",
                        f"Turn {self.options.turn}: The forced final answer came as text beside a call "
                        f"to '{response.tool_calls[0].function.name}' (no tools were offered); the text is "
                        "the final answer",
                    )
                    self.content = response.text_beside_calls

    async def _run_batch(self, response: LLMResponse) -> None:
        """Run the calls one after another; after a timeout every remaining call is skipped."""
        assert response.tool_calls is not None
        self.messages.append(
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": tc.id,
                        "type": tc.type,
                        "function": {"name": tc.function.name, "arguments": _history_arguments(tc)},
                    }
                    for tc in response.tool_calls
                ],
            }
        )
        aborted = False
        for tc in response.tool_calls:
            info, name = self._resolve(tc.function.name)
            call = _Call(
                id=tc.id,
                name=name,
                canonical=info.name if info else tc.function.name,
                server=info.server if info else None,
                raw_arguments=tc.function.arguments,
                timeout=info.timeout if info else None,
                cut=response.finish_reason == "length",
            )
            if aborted:
                call.outcome = "skipped"
                call.result = ToolCallResult(content=None, is_error=True, error_message=SKIPPED_AFTER_TIMEOUT)
            else:
                await self._execute(call)
            self._finish(call)
            if call.outcome == "timeout" and not aborted:
                aborted = True
                self.events.log(
                    "INFO", f"Turn {self.options.turn}: Skipping remaining tools in batch after timeout"
                )

    async def _execute(self, call: _Call) -> None:
        """Parse the arguments and run the call; fills in ``result``, ``outcome`` and ``duration``."""
        try:
            call.arguments = _parse_arguments(call.raw_arguments)
        except ValueError as exc:
            message = f"Invalid tool arguments for {call.canonical}: {exc}"
            if call.cut:  # the reply stopped at its token limit: the arguments were cut short
                message += (
                    "; your reply was cut off at its token limit (finish_reason 'length') before these "
                    "arguments ended: call the tool again with shorter arguments"
                )
            raw = call.raw_arguments
            if raw.strip() and not is_json(raw):  # the history sends {} back for them: say what they were
                shown = raw if len(raw) <= _QUOTED_ARGUMENTS else raw[: _QUOTED_ARGUMENTS - 1] + "…"
                message += f"; the arguments as sent: {json.dumps(shown, ensure_ascii=False)}"
            call.arguments, call.outcome = call.raw_arguments, "invalid_arguments"
            call.result = ToolCallResult(content=None, is_error=True, error_message=message)
            return
        self.events.emit(
            "mcp_tool_call",
            tool_name=call.canonical,
            server_name=call.server,
            arguments=call.arguments,
            iteration=self.iterations,
        )
        self.events.log("INFO", f"{self.prefix}: Agent calling tool {call.canonical}")
        shown = json.dumps(call.arguments, ensure_ascii=False)[:500]
        self.events.log("DEBUG", f"{self.prefix}: Tool arguments: {shown}")
        start = anyio.current_time()
        with self.tracer.span(
            f"mcp-tool-{call.canonical}",
            tool_name=call.canonical,
            server_name=call.server,
            timeout_seconds=call.timeout,
            input=call.arguments,
        ) as span:
            call.result = await self._call(call)
            call.duration = anyio.current_time() - start
            span.update(
                output=call.result.to_dict(),
                is_error=call.result.is_error,
                timed_out=call.result.timed_out,
                duration_ms=round(call.duration * 1000, 3),
            )
        self.tool_seconds += call.duration
        call.outcome = "timeout" if call.result.timed_out else "error" if call.result.is_error else "ok"

    async def _call(self, call: _Call) -> ToolCallResult:
        if self.toolbox is not None:
            # The toolbox runs the call inside its own cancel scope with the tool's timeout.
            return await self.toolbox.call_tool(call.name, call.arguments)
        # No tools were offered (MCP disabled) but the model called one anyway: every
        # tool_call_id must still be answered (property 3), so answer with an error.
        message = f"Unknown tool '{call.name}'. No tools are available"
        return ToolCallResult(content=None, is_error=True, error_message=message)

    def _finish(self, call: _Call) -> None:
        """The one path every outcome takes: event, episode-log line, the answer, the record."""
        result = call.result
        assert result is not None
        where = {"tool_name": call.canonical, "server_name": call.server, "iteration": self.iterations}
        if call.outcome == "timeout":
            self.events.emit("mcp_tool_timeout", **where, error=result.error_message)
            self.events.log("WARNING", f"{self.prefix}: Tool call timeout: {call.canonical}")
        elif call.outcome in ("error", "invalid_arguments"):
            self.events.emit("mcp_tool_error", **where, error=result.error_message)
            cut = call.outcome == "invalid_arguments" and call.cut
            said = f" ({finish_reason_said('length', self.options.sampling.max_tokens)})" if cut else ""
            error = _warned(result.error_message or "")
            self.events.log("WARNING", f"{self.prefix}: Tool call failed: {call.canonical} - {error}{said}")
        if call.outcome in ("ok", "error", "timeout"):
            self.events.emit(
                "mcp_tool_result",
                **where,
                result_type=type(result.content).__name__,
                result_length=len(str(result.content)),
                is_error=result.is_error,
                duration_ms=round(call.duration * 1000, 3),
            )
            self.events.log("INFO", f"{self.prefix}: Tool result received ({call.duration:.1f}s)")
        # Requirement 11.5 / property 44: the result goes into history as the seeds'
        # ``json.dumps(result.to_dict())``. ASCII escapes keep it encodable: a lone surrogate (a tool
        # name or result echoing the model's "\ud800") would make the next request unsendable.
        content = json.dumps(result.to_dict(), default=str)
        self.messages.append({"role": "tool", "tool_call_id": call.id, "content": content})
        self.records.append(
            ToolCallRecord(
                id=call.id,
                name=call.canonical,
                server=call.server,
                arguments=call.arguments if call.arguments is not None else call.raw_arguments,
                iteration=self.iterations,
                duration=call.duration,
                outcome=call.outcome,
                error_message=result.error_message,
                result_preview=_preview(result),
            )
        )


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


def _final_action(answer: Any, content: str | None) -> str | None:
    action = getattr(answer, "action", None)
    if isinstance(action, str):
        return action
    return None if content is None else content[:100]


async def run_tool_loop(
    model: ChatModel,
    messages: Sequence[Mapping[str, Any]],
    toolbox: ToolSource | None,
    options: TurnOptions | None = None,
    *,
    events: EventSink | None = None,
    tracer: Tracer | None = None,
) -> TurnResult:
    """Run the tool-calling loop on a toolbox the caller opened.

    Args:
        model: the chat model (``zorkmcp.llm.LLMClient``, ``ScriptedModel`` or your own).
        messages: the opening messages (system/user); copied, never modified.
        toolbox: the tools offered to the model, or ``None`` for a turn without tools.
        options: how the turn runs (default :class:`TurnOptions`); ``options.deadline`` counts from now.
        events: where events and log lines go.
        tracer: span factory (OpenTelemetry by default).

    Raises:
        ModelCompatibilityError: tools are offered to a model that cannot call them.
        LLMError: the model endpoint failed beyond its retries.
    """
    options = options if options is not None else TurnOptions()
    _check_model(model, toolbox, options.force_tool_support)
    loop = _new_loop(model, messages, toolbox, options, events, tracer)
    deadline = math.inf if options.deadline is None else anyio.current_time() + options.deadline
    return await _session(loop, deadline)


def _new_loop(
    model: ChatModel,
    messages: Sequence[Mapping[str, Any]],
    toolbox: ToolSource | None,
    options: TurnOptions,
    events: EventSink | None,
    tracer: Tracer | None,
) -> _Loop:
    return _Loop(
        model=model,
        messages=[dict(m) for m in messages],
        toolbox=toolbox,
        options=options,
        events=events if events is not None else NullSink(),
        tracer=tracer if tracer is not None else OtelTracer(),
    )


async def _session(loop: _Loop, deadline: float, *, expired: bool = False) -> TurnResult:
    """Run ``loop`` until the absolute ``deadline`` (event-loop clock) and report the session.

    ``expired``: the turn's deadline passed before the loop could start (during the server
    start-up); the loop does not run and the result is that of a deadline exceeded.
    """
    options = loop.options
    start = anyio.current_time()
    offered = len(loop.toolbox.tools) if loop.toolbox else 0
    limit = options.max_tool_iterations
    with loop.tracer.span(
        "agent-tool-calling-session",
        turn=options.turn,
        mcp_enabled=loop.toolbox is not None,
        max_iterations=limit,
        tools_offered=offered,
    ) as session_span:
        exceeded = expired
        if not expired:
            with anyio.CancelScope(deadline=deadline) as scope:
                await loop.run()
            exceeded = scope.cancelled_caught
        content = None if exceeded else loop.content
        answer = options.parse_answer(content) if options.parse_answer is not None else None
        final_action = _final_action(answer, content)
        session_span.update(
            iterations_used=loop.iterations,
            tools_called=len(loop.records),
            final_action=final_action,
            deadline_exceeded=exceeded,
        )
    _report_session(loop, offered, final_action, deadline_exceeded=exceeded, during_startup=expired)
    return TurnResult(
        content=content,
        messages=loop.messages,
        iterations=loop.iterations,
        tool_calls=tuple(loop.records),
        timings=TurnTimings(
            llm=loop.llm_seconds, tools=loop.tool_seconds, total=anyio.current_time() - start
        ),
        forced_final=loop.forced_final,
        deadline_exceeded=exceeded,
        finish_reason=loop.last.finish_reason if loop.last is not None else None,
        tools_offered=offered,
        answer=answer,
        usage=loop.usage,
        llm_requests=loop.requests,
        refusal=loop.last.refusal if loop.last is not None else None,
        reasoning=loop.last.reasoning if loop.last is not None else None,
        context_exceeded=loop.trimmed,
    )


def _report_session(
    loop: _Loop, offered: int, final_action: str | None, *, deadline_exceeded: bool, during_startup: bool
) -> None:
    events, turn, deadline = loop.events, loop.options.turn, loop.options.deadline
    if deadline_exceeded:
        events.emit("turn_deadline_exceeded", deadline_seconds=deadline, iterations=loop.iterations)
        where = " during the MCP server start-up" if during_startup else ""
        events.log("WARNING", f"Turn {turn}: turn deadline of {deadline}s exceeded{where}")
    events.emit(
        "mcp_session_complete",
        iterations=loop.iterations,
        tool_calls_count=len(loop.records),
        tools_used=sorted({r.name for r in loop.records if r.outcome != "skipped"}),
        final_action=final_action,
    )
    if offered:
        events.log(
            "INFO",
            f"Turn {turn}: MCP session complete "
            f"({loop.iterations} iterations, {len(loop.records)} tool calls)",
        )


async def run_turn(
    model: ChatModel,
    messages: Sequence[Mapping[str, Any]],
    *,
    open_toolbox: Callable[[], AbstractAsyncContextManager[ToolSource]] | None = None,
    options: TurnOptions | None = None,
    events: EventSink | None = None,
    tracer: Tracer | None = None,
) -> TurnResult:
    """Run one whole turn: open the toolbox (servers start), run the loop, close it (servers end).

    ``open_toolbox`` is a zero-argument callable returning an async context manager, typically
    ``lambda: manager.open_turn(episode)`` for a ``zorkmcp.mcp.McpManager``; ``None`` runs the turn
    without tools. Everything the toolbox starts is owned by this task and is gone when this
    function returns or raises — also when the caller cancels it (a host's ``asyncio.wait_for``,
    ``trio.move_on_after``). ``options.deadline`` bounds the server start-up and the loop together:
    when it passes during the start-up, the start is cancelled (the servers being started are
    stopped; it is no failed start of theirs) and the result is that of a deadline exceeded in the
    loop, with no iterations.

    Args:
        model: the chat model.
        messages: the opening messages; copied, never modified.
        open_toolbox: opens the turn's tools.
        options: how the turn runs (default :class:`TurnOptions`).
        events: where events and log lines go.
        tracer: span factory (OpenTelemetry by default).

    Raises:
        MCPServerStartupError: a server did not start (on the first turn; see ``McpManager``).
        ModelCompatibilityError: tools are offered to a model that cannot call them.
        LLMError: the model endpoint failed beyond its retries.
    """
    options = options if options is not None else TurnOptions()
    start = anyio.current_time()
    deadline = math.inf if options.deadline is None else start + options.deadline
    opener: AbstractAsyncContextManager[ToolSource | None] = (
        open_toolbox() if open_toolbox is not None else nullcontext(None)
    )
    result: TurnResult | None = None
    ready: float | None = None
    closing: float | None = None
    # One scope around the whole toolbox (its nursery lives inside): the deadline cancels the
    # start-up. Once the tools are ready the deadline moves to the loop, which reports it itself.
    with anyio.CancelScope(deadline=deadline) as startup:
        async with opener as toolbox:
            ready = anyio.current_time()
            startup.deadline = math.inf
            if not startup.cancel_called:  # else the deadline passed as the tools became ready
                _check_model(model, toolbox, options.force_tool_support)
                loop = _new_loop(model, messages, toolbox, options, events, tracer)
                result = await _session(loop, deadline)
            closing = anyio.current_time()
    end = anyio.current_time()
    if result is None:  # the deadline passed during the start-up: no loop ran
        if ready is None:  # cut short by the deadline; what followed it was teardown
            ready = closing = min(deadline, end)
        loop = _new_loop(model, messages, None, options, events, tracer)
        result = await _session(loop, deadline, expired=True)
    assert ready is not None
    assert closing is not None
    timings = attrs.evolve(result.timings, startup=ready - start, teardown=end - closing, total=end - start)
    return attrs.evolve(result, timings=timings)
