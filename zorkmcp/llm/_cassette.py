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
  what differs: the cassette's line, the message and its field, and an excerpt of both sides around
  the first character that differs. Other agents can test against recorded episodes the same way.
  Its :attr:`~ReplayModel.turn_limit` is the recorded episode's, so a replay ends where the episode
  did (a recording cut short by Ctrl-C or an error: the turns it holds).

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
from ._scripted import SCRIPTED_MODEL_NAME

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
    ``scripted``: whether the model calls no LLM (``None``: :class:`RecordingModel` fills it in from
    the model it wraps).
    """

    model: str
    scripted: bool | None = None
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
        text_beside_calls=data.get("text_beside_calls"),  # absent from older cassettes
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
        self._header = (
            header if header.scripted is not None else attrs.evolve(header, scripted=inner.scripted)
        )
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


def _load(path: Path) -> tuple[dict[str, Any], list[tuple[int, dict[str, Any]]]]:
    """The header and the exchanges, each with its line number in the file (blank lines are skipped)."""
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
    records: list[tuple[int, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():  # a blank line (a text editor's trailing newline) holds nothing
            continue
        try:
            records.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise CassetteError(
                f"{path}: not a zorkmcp cassette (line {number} is not JSON: {exc.msg} at column {exc.colno})"
            ) from None
        except ValueError as exc:  # (a number too long to read)
            raise CassetteError(
                f"{path}: not a zorkmcp cassette (line {number} is not JSON: {exc})"
            ) from None
    if not records or not isinstance(records[0][1], dict) or records[0][1].get("format") != CASSETTE_FORMAT:
        raise CassetteError(
            f"{path}: not a zorkmcp cassette (no {CASSETTE_FORMAT!r} header on its first line)"
        )
    header = records[0][1]
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
    for number, exchange in exchanges:
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


_EXCERPT = 40  # characters shown on either side of the first difference
_ABSENT = object()


def _shown(value: Any) -> str:
    if value is _ABSENT:
        return "nothing"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 2 * _EXCERPT else text[: 2 * _EXCERPT] + "…"


def _excerpt(text: str, at: int) -> str:
    """``text`` around character ``at``, as a JSON string (newlines shown as ``\\n``), ``…`` where cut."""
    start, end = max(at - _EXCERPT, 0), at + _EXCERPT
    return (
        ("…" if start > 0 else "")
        + json.dumps(text[start:end], ensure_ascii=False)
        + ("…" if end < len(text) else "")
    )


def _first_difference(old: Any, new: Any, path: str = "") -> tuple[str, str] | None:
    """Where ``old`` and ``new`` first differ (a path: ``tool_calls[0].function.arguments``), and how."""
    if old == new:
        return None
    if isinstance(old, dict) and isinstance(new, dict):
        for key in [*old, *(k for k in new if k not in old)]:
            a, b = old.get(key, _ABSENT), new.get(key, _ABSENT)
            if a is _ABSENT or b is _ABSENT:
                return f"{path}.{key}" if path else str(key), (
                    f"differs: the cassette has {_shown(a)}, this run sent {_shown(b)}"
                )
            found = _first_difference(a, b, f"{path}.{key}" if path else str(key))
            if found is not None:
                return found
    if isinstance(old, list) and isinstance(new, list):
        for index, (a, b) in enumerate(zip(old, new, strict=False)):
            found = _first_difference(a, b, f"{path}[{index}]")
            if found is not None:
                return found
        return path, f"differs: the cassette has {len(old)} items, this run sent {len(new)}"
    if isinstance(old, str) and isinstance(new, str):
        at = next(
            (i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), min(len(old), len(new))
        )
        return path, (
            f"differs at character {at} (of {len(old)} on the cassette, {len(new)} in this run): "
            f"the cassette has {_excerpt(old, at)}, this run sent {_excerpt(new, at)}"
        )
    return path, f"differs: the cassette has {_shown(old)}, this run sent {_shown(new)}"


def _difference(recorded: Mapping[str, Any], sent: Mapping[str, Any]) -> str:
    """One phrase saying what differs between the recorded request and the one the engine sent.

    The message and its field, and for text an excerpt of both sides around the first character
    that differs, with its offset.
    """
    if _tool_names(recorded["tools"]) != _tool_names(sent["tools"]):
        return (
            f"the tools offered differ (the cassette has {_tool_names(recorded['tools'])}, "
            f"this run offers {_tool_names(sent['tools'])})"
        )
    old, new = recorded["messages"], sent["messages"]
    for index, (a, b) in enumerate(zip(old, new, strict=False)):
        found = _first_difference(a, b)
        if found is not None:
            field, how = found
            role = b.get("role") if isinstance(b, dict) else None
            return f"message {index} ({role}), its {field or 'whole'}, {how}"
    if len(old) != len(new):
        return f"the cassette has {len(old)} messages, this run sent {len(new)}"
    found = _first_difference(
        {k: v for k, v in recorded.items() if k != "messages"},
        {k: v for k, v in sent.items() if k != "messages"},
    )
    if found is not None:
        return f"{found[0]} {found[1]}"
    return "the request differs"


class ReplayModel:
    """A :class:`ChatModel` that answers from a cassette: no model, no network.

    Its :attr:`model` and :attr:`scripted` are the recorded model's: a replay reproduces that
    model's episode (a cassette whose header does not say whether it was scripted: the offline
    scripted model's name says it).

    Args:
        path: the cassette.

    Raises:
        CassetteError: the file is missing, truncated or not a cassette (a bad line is named by its
            line number; blank lines are skipped).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.header, exchanges = _load(path)
        self._lines = [number for number, _ in exchanges]
        self._exchanges = [exchange for _, exchange in exchanges]
        self._position = 0
        self._turns = 0
        self._held = sum(_opens_turn(exchange["request"]) for exchange in self._exchanges)

    @property
    def model(self) -> str:
        """The recorded model's name (the header's ``model``)."""
        return str(self.header.get("model", "replay"))

    @property
    def scripted(self) -> bool:
        """Whether the recorded model called no LLM (the offline scripted model)."""
        scripted = self.header.get("scripted")
        return scripted if isinstance(scripted, bool) else self.model == SCRIPTED_MODEL_NAME

    @property
    def remaining(self) -> int:
        """Exchanges not yet replayed."""
        return len(self._exchanges) - self._position

    @property
    def turns(self) -> int:
        """The turns the cassette holds (the recorded requests that open a turn)."""
        return self._held

    @property
    def recorded_turn_limit(self) -> int | None:
        """The recorded episode's turn limit (the header's ``max_turns``; ``None``: an older cassette)."""
        limit = self.header.get("max_turns")
        return limit if isinstance(limit, int) else None

    @property
    def cut_short(self) -> bool:
        """Whether the cassette holds fewer turns than the recorded episode's limit.

        Its recording was stopped (Ctrl-C, an error) or the game ended before the limit.
        """
        limit = self.recorded_turn_limit
        return limit is not None and self.turns < limit

    @property
    def turn_limit(self) -> int:
        """The turns a replay plays: the recorded episode's limit, or the turns the cassette holds if fewer.

        A recorded episode that ran to its turn limit replays to it; one that ended with the game
        (victory, game over) ends the same way at the same turn; one stopped by Ctrl-C or an error
        (or a cassette whose header does not tell the limit: recorded by an older zorkmcp) replays
        the turns it recorded. At least 1: a cassette that holds no turn says so at the first.
        """
        limit = self.recorded_turn_limit
        return max(self.turns if limit is None else min(limit, self.turns), 1)

    async def complete(self, request: CompletionRequest, /) -> LLMResponse:
        await anyio.lowlevel.checkpoint()
        sent = _normalized(request_json(request))
        opens = _opens_turn(sent)
        if opens:
            self._turns += 1
        if self._position >= len(self._exchanges):
            where = f"cassette {self.path}, turn {self._turns}"
            if self.turns == 0:
                raise CassetteMismatchError(
                    f"{where}: the cassette holds no turn (its recording stopped before the model's "
                    "first answer); there is nothing to replay"
                )
            if opens:
                held = f"{self.turns} turn{'' if self.turns == 1 else 's'}"
                raise CassetteMismatchError(
                    f"{where}: the cassette holds {held} and this run asked for one more; "
                    f"replay at most {held} (--turns {self.turns})"
                )
            raise CassetteMismatchError(
                f"{where}: the cassette has no more requests (its last is on line {self._lines[-1]}); "
                "this run asked for another"
            )
        exchange = self._exchanges[self._position]
        recorded = _normalized(exchange["request"])
        if recorded != sent:
            raise CassetteMismatchError(
                f"cassette {self.path} line {self._lines[self._position]}, turn {self._turns}: the engine "
                f"sent a request the cassette does not have there: {_difference(recorded, sent)}"
            )
        self._position += 1
        return _response_of(exchange["response"])
