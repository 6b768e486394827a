"""Record an episode's model exchanges to a cassette, and replay them with no model and no network.

A cassette is a JSON-lines file: a versioned header (with the episode's turn limit, ``max_turns``),
then one line per chat completion — the request the engine sent (messages, tools, ``tool_choice``,
``response_format``, sampling, stop) and the reply it got. Neither API keys nor HTTP headers are
ever written: a :class:`~zorkmcp.llm.CompletionRequest` carries no key, and its ``extra_headers``
are left out.

* :class:`RecordingModel` wraps any :class:`~zorkmcp.llm.ChatModel` and appends each exchange as it
  happens (so an interrupted episode keeps what it recorded);
* :class:`ReplayModel` is itself a ``ChatModel``: it answers each request with the recorded reply,
  after checking that the request is the one recorded next. When it is not (other tools offered,
  another game text), it raises :class:`~zorkmcp.errors.CassetteMismatchError` naming the turn and
  what differs. Other agents can test against recorded episodes the same way. Its
  :attr:`~ReplayModel.turn_limit` is the recorded episode's, so a replay ends where the episode did.

The file is written from a worker thread, one append per request, each whole or not at all (see
:class:`RecordingModel`); reading happens once, before the episode starts.
"""

from __future__ import annotations

import json
import time
from typing import TYPE_CHECKING, Any

import anyio.lowlevel
import anyio.to_thread
import attrs

from .._outputs import append_whole, write_atomically, write_error
from ..errors import CassetteError, CassetteMismatchError
from ._models import FunctionCall, LLMResponse, ToolCall

if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    from ._models import ChatModel, CompletionRequest

__all__ = ["CASSETTE_FORMAT", "CASSETTE_VERSION", "CassetteHeader", "RecordingModel", "ReplayModel"]

CASSETTE_FORMAT = "zorkmcp-cassette"
CASSETTE_VERSION = 1


@attrs.frozen(kw_only=True)
class CassetteHeader:
    """The first line of a cassette: what was played, by which model, with which settings.

    ``max_turns`` is the episode's turn limit (``None``: not told); a replay plays up to it.
    """

    model: str
    game: str | None = None
    game_md5: str | None = None
    seed: int | None = None
    max_turns: int | None = None
    settings: Mapping[str, Any] = attrs.field(factory=dict)
    created: float = attrs.field(factory=time.time)

    def to_json(self) -> dict[str, Any]:
        return {"format": CASSETTE_FORMAT, "version": CASSETTE_VERSION, **attrs.asdict(self)}


def request_json(request: CompletionRequest) -> dict[str, Any]:
    """The recorded form of a request: everything the model sees, no headers."""
    stop = request.stop
    return {
        "messages": [dict(m) for m in request.messages],
        "tools": None if request.tools is None else [dict(t) for t in request.tools],
        "tool_choice": request.tool_choice,
        "response_format": request.response_format,
        "sampling": attrs.asdict(request.sampling),
        "stop": stop if stop is None or isinstance(stop, str) else list(stop),
    }


def _response_json(response: LLMResponse) -> dict[str, Any]:
    return attrs.asdict(response)


def _response_of(data: Mapping[str, Any]) -> LLMResponse:
    calls = data.get("tool_calls")
    return LLMResponse(
        content=data.get("content"),
        model=str(data.get("model", "")),
        usage=data.get("usage"),
        tool_calls=None
        if calls is None
        else tuple(
            ToolCall(id=c["id"], type=c["type"], function=FunctionCall(**c["function"])) for c in calls
        ),
        finish_reason=data.get("finish_reason"),
    )


def _normalized(value: Any) -> Any:
    """JSON round trip: tuples become lists, so a request compares equal to its recorded form."""
    return json.loads(json.dumps(value, default=str))


class RecordingModel:
    """A :class:`ChatModel` that passes every request to ``inner`` and appends the exchange to ``path``.

    The cassette only ever holds whole turns: each exchange is appended whole or not at all, and when
    one cannot be written (a full disk) the file is cut back to the end of the last whole turn, so a
    replay plays the turns it holds (:attr:`ReplayModel.turns`), and the request fails.

    Args:
        inner: the model that answers.
        path: the cassette (created or replaced when the first request is recorded).
        header: written as the first line.
    """

    def __init__(self, inner: ChatModel, path: Path, header: CassetteHeader) -> None:
        self._inner = inner
        self._path = path
        self._header = header
        self._started = False
        self._turn_start: int | None = None  # the size of the cassette before this turn's first exchange

    @property
    def model(self) -> str:
        return self._inner.model

    @property
    def scripted(self) -> bool:
        return self._inner.scripted

    @property
    def inner(self) -> ChatModel:
        """The model that answers."""
        return self._inner

    async def complete(self, request: CompletionRequest, /) -> LLMResponse:
        """The inner model's reply, once the exchange is on the cassette.

        Raises:
            RunWriteError: the cassette cannot be written (the message names it and the reason); it
                keeps the whole turns it held.
        """
        response = await self._inner.complete(request)
        recorded = request_json(request)
        line = json.dumps({"request": recorded, "response": _response_json(response)}, default=str)
        await anyio.to_thread.run_sync(self._append, line, _opens_turn(recorded))
        return response

    def start(self) -> None:
        """Write the header (sync: call it before the episode's loop starts).

        Raises:
            RunWriteError: the header cannot be written; a file that was at ``path`` is left as it was.
        """
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(self._path, json.dumps(self._header.to_json(), default=str) + "\n")
        except OSError as exc:
            raise write_error(self._path, exc) from exc
        self._started, self._turn_start = True, None

    def _append(self, line: str, opens_turn: bool) -> None:
        if not self._started:
            self.start()
        try:  # a turn's later exchange that fails takes the turn's earlier ones with it
            before = append_whole(
                self._path, (line + "\n").encode("utf-8"), keep=None if opens_turn else self._turn_start
            )
        except OSError as exc:
            raise write_error(self._path, exc) from exc
        if opens_turn:
            self._turn_start = before


def _load(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CassetteError(
            f"{path}: no such cassette file (record one with zorkmcp play --record FILE)"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CassetteError(f"{path}: cannot read the cassette: {exc}") from None
    lines = text.splitlines()
    if not text.endswith("\n") and lines:
        raise CassetteError(f"{path}: the cassette is truncated (its last line is incomplete)")
    try:
        records = [json.loads(line) for line in lines]
    except ValueError as exc:
        raise CassetteError(f"{path}: not a zorkmcp cassette (a line is not JSON: {exc})") from None
    if not records or not isinstance(records[0], dict) or records[0].get("format") != CASSETTE_FORMAT:
        raise CassetteError(
            f"{path}: not a zorkmcp cassette (no {CASSETTE_FORMAT!r} header on its first line)"
        )
    header = records[0]
    if header.get("version") != CASSETTE_VERSION:
        raise CassetteError(
            f"{path}: cassette version {header.get('version')!r}; "
            f"this zorkmcp reads version {CASSETTE_VERSION}"
        )
    limit = header.get("max_turns")
    if limit is not None and not (isinstance(limit, int) and not isinstance(limit, bool) and limit > 0):
        raise CassetteError(
            f"{path}: the header's max_turns is {limit!r}, not a number of turns; record the cassette again"
        )
    exchanges = records[1:]
    for number, exchange in enumerate(exchanges, start=2):
        if not (isinstance(exchange, dict) and isinstance(exchange.get("request"), dict)):
            raise CassetteError(f"{path}: line {number} is not a recorded exchange")
        if not isinstance(exchange.get("response"), dict):
            raise CassetteError(f"{path}: line {number} is not a recorded exchange")
    return header, exchanges


def _opens_turn(request: Mapping[str, Any]) -> bool:
    """Whether a request (in its recorded form) is a turn's first: it ends with the turn's user message.

    The forced final call also ends with a user message, but it has a ``response_format``.
    """
    messages = request.get("messages")
    last = messages[-1] if isinstance(messages, list) and messages else None
    return isinstance(last, dict) and last.get("role") == "user" and request.get("response_format") is None


def _tool_names(tools: Any) -> list[str]:
    return [str(t.get("function", {}).get("name")) for t in tools or ()]


def _difference(recorded: Mapping[str, Any], sent: Mapping[str, Any]) -> str:
    """One phrase saying what differs between the recorded request and the one the engine sent."""
    if _tool_names(recorded["tools"]) != _tool_names(sent["tools"]):
        return (
            f"the tools offered differ (the cassette has {_tool_names(recorded['tools'])}, "
            f"this run offers {_tool_names(sent['tools'])})"
        )
    old, new = recorded["messages"], sent["messages"]
    for index, (a, b) in enumerate(zip(old, new, strict=False)):
        if a != b:
            shown = json.dumps(b.get("content"), ensure_ascii=False)[:160]
            return f"message {index} ({b.get('role')}) differs; this run sent {shown}"
    if len(old) != len(new):
        return f"the cassette has {len(old)} messages, this run sent {len(new)}"
    for key in ("tools", "tool_choice", "response_format", "sampling", "stop"):
        if recorded.get(key) != sent.get(key):
            return f"{key} differs"
    return "the request differs"


class ReplayModel:
    """A :class:`ChatModel` that answers from a cassette: no model, no network.

    Args:
        path: the cassette.

    Raises:
        CassetteError: the file is missing, truncated or not a cassette.
    """

    scripted = True

    def __init__(self, path: Path) -> None:
        self.path = path
        self.header, self._exchanges = _load(path)
        self._position = 0
        self._turns = 0
        self._held = sum(_opens_turn(exchange["request"]) for exchange in self._exchanges)

    @property
    def model(self) -> str:
        return str(self.header.get("model", "replay"))

    @property
    def remaining(self) -> int:
        """Exchanges not yet replayed."""
        return len(self._exchanges) - self._position

    @property
    def turns(self) -> int:
        """The turns the cassette holds (the recorded requests that open a turn)."""
        return self._held

    @property
    def turn_limit(self) -> int:
        """The recorded episode's turn limit (the header's ``max_turns``): a replay plays up to it.

        A cassette whose header does not tell it (recorded by an older zorkmcp): the turns it holds.
        A recorded episode that ran to its end stopped at its turn limit or when the game was over;
        either way the replay then ends at the same turn, the same way. (One stopped by Ctrl-C or
        an error replays the turns it recorded.)
        """
        limit = self.header.get("max_turns")
        return limit if isinstance(limit, int) else max(self.turns, 1)

    async def complete(self, request: CompletionRequest, /) -> LLMResponse:
        await anyio.lowlevel.checkpoint()
        sent = _normalized(request_json(request))
        opens = _opens_turn(sent)
        if opens:
            self._turns += 1
        where = f"cassette {self.path}, turn {self._turns} (request {self._position + 1})"
        if self._position >= len(self._exchanges):
            if opens:
                held = f"{self.turns} turn{'' if self.turns == 1 else 's'}"
                raise CassetteMismatchError(
                    f"{where}: the cassette holds {held} and this run asked for one more; "
                    f"replay at most {held} (--turns {self.turns})"
                )
            raise CassetteMismatchError(
                f"{where}: the cassette has no more requests; this run asked for another"
            )
        exchange = self._exchanges[self._position]
        recorded = _normalized(exchange["request"])
        if recorded != sent:
            raise CassetteMismatchError(
                f"{where}: the engine sent a request the cassette does not have next: "
                f"{_difference(recorded, sent)}"
            )
        self._position += 1
        return _response_of(exchange["response"])
