"""MCP sampling: a server asks the client's model for a completion (``sampling/createMessage``).

A server whose ``mcp_config.json`` entry says ``"sampling": true`` is told that the client can sample
(the ``sampling`` client capability) when its :class:`~zorkmcp.mcp.McpManager` was given a
*sampler*; its requests are then answered with the episode's own model. The pieces, from the model
to the wire:

* :class:`Sampler`: what an episode gives its MCP layer, anything that turns the request's
  parameters into a :class:`Sample`; :class:`ModelSampler` is the one of a
  :class:`~zorkmcp.llm.ChatModel` (the conversion rules are on it).
* :class:`SamplingPolicy`: what the manager hands its sessions: the sampler and the episode's turn
  counter, for the per-turn limit.
* :class:`ServerSampling`: one session's answerer (its ``sampling_callback``). A request is answered
  only while a ``tools/call`` to that server is in flight (the :class:`~._session.Wire` tells it
  when one starts and ends), so it runs inside the tool call it belongs to: when that call ends (its
  answer, or its timeout or cancellation, which sends ``notifications/cancelled``) any sampling
  still running is cancelled, the model request with it. At most :data:`MAX_SAMPLES_PER_TURN`
  requests are answered per server and turn; the rest get an error answer (and one warning).

Every request is an ``mcp_sampling`` event (``server``, ``tool``, ``model``, ``prompt_tokens``,
``completion_tokens``, ``duration_ms``, ``error``) and an INFO line of the episode log, also one the
MCP SDK answers itself before zorkmcp sees it (params its types refuse, such as no ``maxTokens``:
``-32602``; the :class:`~._session.Wire` shows :class:`ServerSampling` each request and answer). A
request that is not answered gets a JSON-RPC error the server sees, never invented text.

Elicitation (``elicitation/create``) is not declared: an autonomous agent has no human to ask.
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from typing import TYPE_CHECKING, Any, Final, Protocol

import anyio
import anyio.lowlevel
import mcp_types
from attrs import field, frozen
from mcp.shared.dispatcher import coerce_request_id
from pydantic import ValidationError

from zorkmcp.config import SamplingSettings
from zorkmcp.errors import (
    LLMError,
    LLMHTTPError,
    LLMProviderError,
    LLMResponseError,
    LLMTransportError,
    MCPError,
)
from zorkmcp.llm import CompletionRequest, MeteredModel, RecordingModel, ReplayModel

from ._names import canonical_name

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping
    from contextlib import AbstractAsyncContextManager

    from mcp.client.session import ClientRequestContext
    from mcp_types import RequestId

    from zorkmcp.llm import ChatModel, LLMResponse
    from zorkmcp.observability import EventSink

__all__ = [
    "MAX_SAMPLES_PER_TURN",
    "MAX_SAMPLING_TOKENS",
    "ModelSampler",
    "Sample",
    "Sampler",
    "SamplingError",
    "SamplingPolicy",
    "ServerSampling",
    "completion_request",
]

MAX_SAMPLING_TOKENS: Final = 4096
"""The most tokens a sampling request may have the model write: a larger ``maxTokens`` is cut to it
(a server's request spends the episode's tokens; the agent's own answers are far shorter)."""

MAX_SAMPLES_PER_TURN: Final = 8
"""The most sampling requests answered per server and turn; more get an error answer."""

SCRIPTED_REFUSAL: Final = "sampling needs a model endpoint; the offline scripted model cannot answer it"
REPLAY_REFUSAL: Final = "sampling needs a model endpoint; a replayed cassette cannot answer it"
RECORDING_REFUSAL: Final = (
    "sampling is off while a cassette is recorded: its replay could not answer the request the same way"
)
NO_TOOL_CALL: Final = "zorkmcp answers sampling/createMessage only during a tool call to this server"
_ENDED: Final = "cancelled: the tool call it belongs to ended (its timeout, or the turn was cancelled)"
_WITHDRAWN: Final = "cancelled: the server withdrew the request, or the session closed"
_NO_TOOLS: Final = "but zorkmcp does not sample with tools (it declares no sampling.tools capability)"
_METHOD: Final = "sampling/createMessage"
_MAX_PROBLEMS: Final = 3
"""The most validation problems an SDK-refused request's event names (the rest are counted)."""

_STOP_REASONS: Final = {"stop": "endTurn", "length": "maxTokens"}
"""The MCP ``stopReason`` of the chat-completions ``finish_reason`` values that have one; any other
reason (``content_filter``, …) is passed on as the provider named it (``stopReason`` is any string),
and none reported is none sent (it is optional: "if known")."""


class SamplingError(MCPError):
    """Why a sampling request is answered with an error; the message is what the server is told.

    Attributes:
        model: the model that was asked (or would have been), if known.
        code: the JSON-RPC error code (``-32600`` invalid request: refused by policy, as the SDK
            refuses a client without sampling; ``-32602`` invalid params: the request's own fields,
            as the SDK answers params its types refuse and the MCP specification's sampling section
            names for tool content; ``-32603`` internal error: the model failed).
        detail: what the episode's log and ``mcp_sampling`` event say instead of the message, when
            the server is told less (a model failure: its endpoint's URL and the provider's words
            are the user's, not the server's).
    """

    def __init__(
        self,
        message: str,
        *,
        model: str | None = None,
        code: int = mcp_types.INVALID_REQUEST,
        detail: str | None = None,
    ) -> None:
        super().__init__(message)
        self.model = model
        self.code = code
        self.detail = detail


@frozen(kw_only=True)
class Sample:
    """A sampling request answered: the result for the server and what it cost.

    Attributes:
        result: the ``sampling/createMessage`` result (``result.model`` names the model).
        prompt_tokens: as the model's answer reported it (``None``: not reported).
        completion_tokens: likewise.
    """

    result: mcp_types.CreateMessageResult
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class Sampler(Protocol):
    """Answers a server's ``sampling/createMessage`` (what :class:`~zorkmcp.mcp.McpManager` takes)."""

    async def sample(self, params: mcp_types.CreateMessageRequestParams, /) -> Sample:
        """Ask the model.

        Raises:
            SamplingError: the request is refused or the model failed (the server gets the message).
        """
        ...


def _invalid(message: str) -> SamplingError:
    """A request whose own fields zorkmcp cannot answer: JSON-RPC invalid params."""
    return SamplingError(message, code=mcp_types.INVALID_PARAMS)


def _block_text(block: Any) -> str:
    """One content block of a sampling message as text: never an image's or a sound's base64.

    Raises:
        SamplingError: a ``tool_use`` or ``tool_result`` block (sampling with tools is not declared:
            shown as a placeholder, the model would answer a conversation it cannot read).
    """
    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
        return f"[{block.type}: {block.mime_type}, {len(block.data)} bytes of base64 not shown]"
    raise _invalid(f"a message holds {block.type} content, {_NO_TOOLS}")


def completion_request(params: mcp_types.CreateMessageRequestParams) -> CompletionRequest:
    """The chat completion a ``sampling/createMessage`` asks for.

    ``systemPrompt`` is a system message first; each message keeps its role, its text blocks their
    text (several blocks: one per line), and an image or audio block becomes a placeholder such as
    ``[image: image/png, 1234 bytes of base64 not shown]``. ``maxTokens`` is sent as ``max_tokens``,
    cut to :data:`MAX_SAMPLING_TOKENS`; ``temperature`` and ``stopSequences`` when given. The
    server's ``includeContext`` (no other server's context is shared) and ``modelPreferences`` (the
    episode has one model) are ignored, and so is ``metadata``.

    Raises:
        SamplingError: (``-32602`` invalid params) the request offers tools or a ``toolChoice``, or
            a message holds ``tool_use`` or ``tool_result`` content (the ``sampling.tools``
            capability is not declared); it has no message, a ``maxTokens`` below 1 or a
            ``temperature`` outside 0 to 2.
    """
    if params.tools or params.tool_choice is not None:
        raise _invalid(f"the request sets tools or toolChoice, {_NO_TOOLS}")
    if not params.messages:
        raise _invalid("the request has no messages")
    if params.max_tokens < 1:
        raise _invalid(f"maxTokens must be at least 1, got {params.max_tokens}")
    temperature = params.temperature
    if temperature is not None and not 0 <= temperature <= 2:
        raise _invalid(f"temperature must be between 0 and 2, got {temperature}")
    messages: list[Mapping[str, Any]] = []
    if params.system_prompt:
        messages.append({"role": "system", "content": params.system_prompt})
    for message in params.messages:
        blocks = message.content if isinstance(message.content, list) else [message.content]
        messages.append({"role": message.role, "content": "\n".join(_block_text(b) for b in blocks)})
    return CompletionRequest(
        messages,
        sampling=SamplingSettings(
            temperature=temperature, max_tokens=min(params.max_tokens, MAX_SAMPLING_TOKENS)
        ),
        stop=tuple(params.stop_sequences) if params.stop_sequences else None,
    )


def _refusal(model: ChatModel) -> str | None:
    """Why ``model`` cannot answer a sampling request (``None``: it can); a metered model is the model
    it counts for."""
    while isinstance(model, MeteredModel):
        model = model.wrapped
    if isinstance(model, ReplayModel):
        return REPLAY_REFUSAL
    if isinstance(model, RecordingModel):
        return RECORDING_REFUSAL
    if model.scripted:
        return SCRIPTED_REFUSAL
    return None


def _stop_reason(finish_reason: str | None) -> str | None:
    """The ``stopReason`` of a chat completion's ``finish_reason`` (see :data:`_STOP_REASONS`)."""
    if finish_reason is None:
        return None
    return _STOP_REASONS.get(finish_reason, finish_reason)


def _sample(response: LLMResponse) -> Sample:
    if response.tool_calls:
        raise SamplingError(
            "the model answered with tool calls instead of text",
            model=response.model,
            code=mcp_types.INTERNAL_ERROR,
        )
    if not response.content:
        raise SamplingError(
            "the model answered with no text", model=response.model, code=mcp_types.INTERNAL_ERROR
        )
    usage = response.usage or {}
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    result = mcp_types.CreateMessageResult(
        role="assistant",
        content=mcp_types.TextContent(type="text", text=response.content),
        model=response.model,
        stop_reason=_stop_reason(response.finish_reason),
    )
    return Sample(
        result=result,
        prompt_tokens=prompt if isinstance(prompt, int) else None,
        completion_tokens=completion if isinstance(completion, int) else None,
    )


class ModelSampler:
    """The :class:`Sampler` of an episode's chat model (see :func:`completion_request` for the request).

    The answer is ``CreateMessageResult(role="assistant", content=TextContent(...), model=<the model
    that answered>, stopReason=...)``: ``"endTurn"`` for a ``finish_reason`` of ``"stop"``,
    ``"maxTokens"`` for ``"length"``, any other reason as the provider named it (``"content_filter"``:
    the text was cut, not finished), none when none was reported.
    Refused, with the reason as the server's error: the offline scripted model (it plays a
    walkthrough and cannot answer a question), a replayed cassette, and a recording one (its replay
    could not answer the same way); a model that answers with tool calls or no text.

    Args:
        model: the episode's model. A wrapper that counts tokens (``zorkmcp eval``'s) counts these too.
    """

    def __init__(self, model: ChatModel) -> None:
        def opened() -> AbstractAsyncContextManager[ChatModel]:
            return nullcontext(model)  # open already: its owner closes it

        self._open: Callable[[], AbstractAsyncContextManager[ChatModel]] = opened
        self._live: ChatModel | None = None

    @classmethod
    def opening(cls, open_model: Callable[[], AbstractAsyncContextManager[ChatModel]]) -> ModelSampler:
        """A sampler for an owner whose model is not open yet when its MCP layer is made (``bridge``:
        the model is opened per call or per episode): requests go to the model :meth:`using` names,
        and only outside it does each open one of its own.

        Args:
            open_model: opens the episode's model (the ``chat_model`` factory of ``bridge``).
        """
        sampler = cls.__new__(cls)
        sampler._open = open_model
        sampler._live = None
        return sampler

    @contextmanager
    def using(self, model: ChatModel) -> Iterator[None]:
        """Within it, requests go to ``model``, open already (its owner closes it): the episode's own
        connection to its endpoint, not a client opened per request (with its own TCP and TLS start)."""
        self._live = model
        try:
            yield
        finally:
            self._live = None

    async def sample(self, params: mcp_types.CreateMessageRequestParams, /) -> Sample:
        """Ask the model (see the class).

        Raises:
            SamplingError: refused (see the class), or the model failed (an ``LLMError``).
        """
        request = completion_request(params)
        if self._live is not None:
            return await self._ask(self._live, request)
        async with self._open() as model:
            return await self._ask(model, request)

    @staticmethod
    async def _ask(model: ChatModel, request: CompletionRequest) -> Sample:
        if (refusal := _refusal(model)) is not None:
            raise SamplingError(refusal, model=model.model)
        try:
            response = await model.complete(request)
        except LLMError as exc:
            raise SamplingError(
                f"the model request failed ({_failure_kind(exc)})",
                model=model.model,
                code=mcp_types.INTERNAL_ERROR,
                detail=f"the model request failed: {exc}",
            ) from exc
        return _sample(response)


def _failure_kind(exc: LLMError) -> str:
    """What a server is told of a failed model request: its kind, not the endpoint's URL or words.

    A remote MCP server is someone else's: the model's URL (an internal host, a deployment's name)
    and the provider's message (it may echo part of the API key) stay in the user's log.
    """
    if isinstance(exc, LLMHTTPError) and exc.status is not None:
        return f"HTTP {exc.status}"
    if isinstance(exc, LLMTransportError):
        return "the model's endpoint could not be reached, or did not answer in time"
    if isinstance(exc, LLMProviderError):
        return "the provider reported an error"
    if isinstance(exc, LLMResponseError):
        return "the model's answer could not be read"
    return type(exc).__name__


def _no_turns() -> int:
    return 0


@frozen
class SamplingPolicy:
    """How the sessions of one :class:`~zorkmcp.mcp.McpManager` reach its sampler.

    Attributes:
        sampler: answers the requests.
        turn: the episode's turn number now; the limit of :data:`MAX_SAMPLES_PER_TURN` starts again
            when it changes (constant by default: the limit is then per session).
    """

    sampler: Sampler
    turn: Callable[[], int] = field(default=_no_turns, kw_only=True)

    def for_server(self, server: str, events: EventSink) -> ServerSampling:
        """The answerer of one session of ``server``."""
        return ServerSampling(server, self.sampler, events, turn=self.turn)


class ServerSampling:
    """Answers one session's ``sampling/createMessage`` requests (see the module docstring).

    Args:
        server: the server's name in ``mcp_config.json``.
        sampler: what answers.
        events: where ``mcp_sampling``, the log lines and the warning go.
        turn: the episode's turn number now.
    """

    def __init__(self, server: str, sampler: Sampler, events: EventSink, *, turn: Callable[[], int]) -> None:
        self.server = server
        self._sampler = sampler
        self._events = events
        self._turn = turn
        self._calls: dict[RequestId, str | None] = {}
        """The ``tools/call`` requests in flight: request id → tool name (as the server knows it)."""
        self._running: set[anyio.CancelScope] = set()
        self._counted_turn: int | None = None
        self._answered = 0
        self._warned = False
        self._received: dict[RequestId, _Received] = {}
        """The ``sampling/createMessage`` requests read whose answer :meth:`answer` has not taken on:
        the ones the SDK answers itself (:meth:`answer_sent` reports them)."""

    def __repr__(self) -> str:
        return (
            f"ServerSampling(server={self.server!r}, calls={len(self._calls)}, running={len(self._running)})"
        )

    def call_started(self, request_id: RequestId, tool: str | None) -> None:
        """A ``tools/call`` was sent (by the :class:`~._session.Wire`)."""
        self._calls[request_id] = tool

    def call_ended(self, request_id: RequestId) -> None:
        """A request was answered or cancelled; once no tool call is in flight, sampling still running
        is cancelled (a request of another id is none of ours: ignored)."""
        if request_id not in self._calls:
            return
        del self._calls[request_id]
        if self._calls:
            return
        for scope in self._running:
            scope.cancel()

    def new_connection(self) -> None:
        """The session speaks over a new connection (a remote session renewed): no call is in flight."""
        self._calls.clear()
        self._received.clear()
        for scope in self._running:
            scope.cancel()

    def request_received(self, message: mcp_types.JSONRPCRequest) -> None:
        """A request of the server was read (by the :class:`~._session.Wire`), before the SDK checks it."""
        if message.method != _METHOD:
            return
        self._received[coerce_request_id(message.id)] = _Received(
            start=anyio.current_time(), tool=self._tool(), params=message.params
        )

    def answer_sent(self, message: mcp_types.JSONRPCResponse | mcp_types.JSONRPCError) -> None:
        """An answer to a request of the server is being sent (by the :class:`~._session.Wire`).

        A sampling request :meth:`answer` never saw was answered by the SDK itself (its params refused,
        the session closing before the request was handed on): it is reported as one not answered,
        with what is wrong with its params when the SDK refused them (its answer says no more).
        """
        if message.id is None:  # an answer to a message that could not be read: no request of ours
            return
        received = self._received.pop(coerce_request_id(message.id), None)
        if received is None or not isinstance(message, mcp_types.JSONRPCError):
            return
        error = message.error
        reason = f"refused by the MCP SDK before zorkmcp saw it: {error.code} {error.message}"
        if error.code == mcp_types.INVALID_PARAMS and (problems := _problems(received.params)):
            reason = f"{reason} ({problems})"
        self._report(received.start, received.tool, SamplingError(reason, code=error.code))

    def _tool(self) -> str | None:
        """The canonical name of the tool call in flight (``None``: none, or several)."""
        tools = set(self._calls.values())
        if len(tools) != 1:
            return None
        (tool,) = tools
        return canonical_name(self.server, tool) if tool is not None else None

    def _admit(self) -> str | None:
        """Why a request is refused before the model is asked (``None``: it is not; it is counted)."""
        if not self._calls:
            return NO_TOOL_CALL
        turn = self._turn()
        if turn != self._counted_turn:
            self._counted_turn, self._answered, self._warned = turn, 0, False
        if self._answered >= MAX_SAMPLES_PER_TURN:
            if not self._warned:
                self._warned = True
                when = f"Turn {turn}: " if turn > 0 else ""  # 0: no turns are counted (``open_toolbox``)
                self._events.log(
                    "WARNING",
                    f"{when}MCP server '{self.server}' asked for more than {MAX_SAMPLES_PER_TURN} "
                    "samplings in one turn; the rest of this turn's are refused",
                )
            return f"at most {MAX_SAMPLES_PER_TURN} sampling requests per server and turn are answered"
        self._answered += 1
        return None

    async def answer(
        self, context: ClientRequestContext, params: mcp_types.CreateMessageRequestParams
    ) -> mcp_types.CreateMessageResult | mcp_types.ErrorData:
        """``ClientSession(sampling_callback=...)``: the model's answer, or an error for the server."""
        self._received.pop(coerce_request_id(context.request_id), None)  # reported here
        start = anyio.current_time()
        tool = self._tool()
        refusal = self._admit()
        if refusal is not None:
            self._report(start, tool, SamplingError(refusal))
            await anyio.lowlevel.checkpoint()
            return mcp_types.ErrorData(code=mcp_types.INVALID_REQUEST, message=refusal)
        outcome: Sample | SamplingError = SamplingError(_WITHDRAWN)  # if cancelled from outside
        scope = anyio.CancelScope()
        self._running.add(scope)
        try:
            with scope:
                outcome = await self._ask(params)
            if scope.cancelled_caught:
                outcome = SamplingError(_ENDED)
        finally:
            self._running.discard(scope)
            self._report(start, tool, outcome)
        if isinstance(outcome, SamplingError):
            return mcp_types.ErrorData(code=outcome.code, message=str(outcome))
        return outcome.result

    async def _ask(self, params: mcp_types.CreateMessageRequestParams) -> Sample | SamplingError:
        try:
            return await self._sampler.sample(params)
        except SamplingError as exc:
            return exc
        except Exception as exc:  # noqa: BLE001 - a server's request must not end the turn; it is told why
            return SamplingError(
                "the client failed to answer",
                code=mcp_types.INTERNAL_ERROR,
                detail=f"{type(exc).__name__}: {exc}",
            )

    def _report(self, start: float, tool: str | None, outcome: Sample | SamplingError) -> None:
        seconds = anyio.current_time() - start
        model: str | None
        error: str | None
        if isinstance(outcome, Sample):
            model, error = outcome.result.model, None
            prompt, completion = outcome.prompt_tokens, outcome.completion_tokens
        else:
            model, prompt, completion = outcome.model, None, None
            error = outcome.detail if outcome.detail is not None else str(outcome)
        self._events.emit(
            "mcp_sampling",
            server=self.server,
            tool=tool,
            model=model,
            prompt_tokens=prompt,
            completion_tokens=completion,
            duration_ms=round(seconds * 1000, 1),
            error=error,
        )
        during = f" during {tool}" if tool is not None else ""
        if error is None:
            tokens = f"{_count(prompt)} prompt + {_count(completion)} completion tokens"
            message = (
                f"MCP server '{self.server}' sampled the model {model}{during}: {tokens}, {seconds:.1f}s"
            )
        else:
            message = f"MCP server '{self.server}' asked for sampling{during}; not answered: {error}"
        self._events.log("INFO", message)


def _count(tokens: int | None) -> str:
    return "?" if tokens is None else str(tokens)


@frozen
class _Received:
    """A sampling request as read: when, during which tool call, and its params as sent."""

    start: float
    tool: str | None
    params: Mapping[str, Any] | None


def _problems(params: Mapping[str, Any] | None) -> str:
    """What is wrong with a request's params, as the MCP types see it (``""``: nothing they refuse),
    e.g. ``maxTokens: Field required; includeContext: Input should be 'none', 'thisServer' or
    'allServers'``."""
    try:
        mcp_types.CreateMessageRequestParams.model_validate(params if params is not None else {})
    except ValidationError as exc:
        found = exc.errors(include_url=False)
        said = [f"{'.'.join(str(part) for part in e['loc']) or 'params'}: {e['msg']}" for e in found]
        more = len(said) - _MAX_PROBLEMS
        return "; ".join(said[:_MAX_PROBLEMS]) + (f"; {more} more" if more > 0 else "")
    return ""
