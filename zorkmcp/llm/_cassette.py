"""Record an episode's model exchanges to a cassette, and replay them with no model and no network.

A cassette is a JSON-lines file: a versioned header (with the episode's turn limit, ``max_turns``),
then one line per chat completion — the request the engine sent (messages, tools, ``tool_choice``,
``response_format``, sampling, stop) and the reply it got, or the error the model raised instead
(``{"request": …, "error": {"type", "message", "status", "provider_message", "body_excerpt"}}``: a
:class:`~zorkmcp.errors.LLMError` after its retries, such as a request that did not fit the model's
context window, which the engine answers by asking again without the turn's tool calls, or the error
that ended the episode, a :class:`~zorkmcp.errors.ModelCompatibilityError` too: an endpoint that
refused the request's tools, with the fields of the endpoint's error). Neither API keys nor HTTP
headers are ever written: a :class:`~zorkmcp.llm.CompletionRequest` carries no key, and its
``extra_headers`` are left out (an error's text is the client's, which never holds the key).

* :class:`RecordingModel` wraps any :class:`~zorkmcp.llm.ChatModel` and appends each exchange as it
  happens (so an interrupted episode keeps what it recorded);
* :class:`ReplayModel` is itself a ``ChatModel``: it answers each request with the recorded reply
  (or raises the recorded error, of the same type, with the same message and fields), after
  checking that the request is the one recorded next. When it is not (other tools offered,
  another game text), it raises :class:`~zorkmcp.errors.CassetteMismatchError` naming the turn and
  what differs: the cassette's line, the message and its field, and an excerpt of both sides around
  the first character that differs. Other agents can test against recorded episodes the same way.
  Its :attr:`~ReplayModel.turn_limit` is the recorded episode's, so a replay ends where the episode
  did (a recording cut short by Ctrl-C, an error or a crash: the whole turns it holds).

A recording owns its cassette from its first exchange (or :meth:`RecordingModel.start`) until it is
closed: an exclusive lock (``flock``) on ``.NAME.lock`` beside the cassette, holding the recorder's
process id, so a second recording of the same file stops before it records anything
(:class:`~zorkmcp.errors.CassetteError` naming the file and the other process). The header is
written through a temporary file renamed over the cassette, and every exchange is appended to the
file written then, by its descriptor. The file is written from a worker thread, one append per
request, each whole or not at all (see :class:`RecordingModel`); reading happens once, before the
episode starts.

Where a turn starts and ends is read from the requests and the replies themselves, as the engine
makes them (:func:`zorkmcp.engine.run_turn`): a turn's first request ends with the turn's user
message; its forced final call also ends with a user message, the one that asks for the final
answer (:data:`zorkmcp.engine.FORCE_FINAL_MESSAGE`), whatever its ``response_format``; a turn ends
with an answer (a reply with content and no tool call), with its forced final call, with the
answer given as the one call to a tool it was not offered, or with an error after which the engine
does not ask again (every error but a request too large that still had tool calls or tools to leave
out: see :func:`_asked_again`). A cassette cut in the middle of a turn
(Ctrl-C, a crash or ``kill -9`` in the middle of a write: its last line incomplete) replays the
whole turns before the cut.
"""

from __future__ import annotations

import errno
import json
import os
import time
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.lowlevel
import anyio.to_thread
import attrs

from .._argtypes import MAX_SEED
from .._locks import LockHeldError, hold, let_go, make_folders, remove_empty
from .._outputs import append_whole, open_pipe, open_written, write_error, written_in_place
from ..errors import (
    CassetteError,
    CassetteMismatchError,
    LLMError,
    LLMHTTPError,
    LLMProviderError,
    LLMResponseError,
    LLMTransportError,
    ModelCompatibilityError,
)
from ._compat import too_large
from ._models import FunctionCall, LLMResponse, ToolCall
from ._scripted import SCRIPTED_MODEL_NAME

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from types import TracebackType

    from ._models import ChatModel, CompletionRequest

__all__ = [
    "CASSETTE_FORMAT",
    "CASSETTE_VERSION",
    "CassetteFile",
    "CassetteHeader",
    "RecordingModel",
    "ReplayModel",
]

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
            ToolCall(
                id=c["id"],
                type=c["type"],
                function=FunctionCall(name=c["function"]["name"], arguments=c["function"]["arguments"]),
            )
            for c in calls
        ),
        finish_reason=data.get("finish_reason"),
        text_beside_calls=data.get("text_beside_calls"),  # absent from older cassettes
        refusal=data.get("refusal"),  # these two as well
        reasoning=data.get("reasoning"),
    )


ModelError = LLMError | ModelCompatibilityError
"""What a model raises that a cassette records (and a replay raises again at the same request)."""

_ERRORS: dict[str, type[ModelError]] = {
    kind.__name__: kind
    for kind in (
        LLMError,
        LLMHTTPError,
        LLMResponseError,
        LLMProviderError,
        LLMTransportError,
        ModelCompatibilityError,
    )
}
"""The errors a cassette records, by the name its ``error.type`` gives."""


def _error_json(error: ModelError) -> dict[str, Any]:
    """The recorded form of a model's error: its type (the nearest of :data:`_ERRORS`), its message
    and its fields (for a :class:`~zorkmcp.errors.ModelCompatibilityError`, those of the endpoint's
    error it was raised from)."""
    kind = next(k for k in type(error).__mro__ if _ERRORS.get(k.__name__) is k)
    fields = error if isinstance(error, LLMError) else error.__cause__
    if not isinstance(fields, LLMError):
        fields = LLMError("")
    return {
        "type": kind.__name__,
        "message": str(error),
        "status": fields.status,
        "provider_message": fields.provider_message,
        "body_excerpt": fields.body_excerpt,
    }


def _error_of(data: Mapping[str, Any]) -> ModelError:
    """The recorded error, as the model raised it (its type, message and fields).

    A :class:`~zorkmcp.errors.ModelCompatibilityError` carries the message alone, and the endpoint's
    error (its status, provider message and body excerpt) as its ``__cause__``, as the client raises it.
    """
    kind = _ERRORS[str(data["type"])]
    status = data.get("status")
    fields: dict[str, Any] = {
        "status": status,
        "provider_message": data.get("provider_message"),
        "body_excerpt": str(data.get("body_excerpt") or ""),
    }
    if issubclass(kind, LLMError):
        return kind(str(data["message"]), **fields)
    error = kind(str(data["message"]))
    cause = LLMHTTPError if status is not None else LLMError
    error.__cause__ = cause(str(fields["provider_message"] or fields["body_excerpt"]), **fields)
    return error


def _normalized(value: Any) -> Any:
    """JSON round trip: tuples become lists, so a request compares equal to its recorded form."""
    return json.loads(json.dumps(value, default=str))


def lock_path(path: Path) -> Path:
    """The lock file a recording of ``path`` holds: ``.NAME.lock`` beside the file a link leads to."""
    target = Path(os.path.realpath(path))
    return target.with_name(f".{target.name}.lock")


class CassetteFile:
    """A cassette being recorded: held by this recording from :meth:`claim` to :meth:`close`.

    The claim is an exclusive lock on :func:`lock_path` (``.NAME.lock`` beside the cassette), which
    holds this process's id; the system lets it go when the process ends, however it ends. A second
    recording of the same cassette (another process, or another :class:`CassetteFile` in this one)
    is refused when it claims it. A cassette written in place (``/dev/null``, a named pipe) is not
    claimed: it is not a file of its own.

    The header is written by the first :meth:`append` (or :meth:`start`): through a temporary file
    renamed over ``path``, so a file that was there is left as it was until then. Every exchange is
    appended to the file written then, by its descriptor: never to whatever is at ``path`` later.
    Each exchange is appended whole or not at all; one that cannot be written (a full disk) cuts
    the file back to the end of the last whole turn.

    Args:
        path: the cassette.
        header: its first line (``scripted`` may still be filled in before it is written).
    """

    def __init__(self, path: Path, header: CassetteHeader) -> None:
        self.path = path
        self.header = header
        self._held: _Held | None = None
        self._closed = False
        self._turn_start: int | None = None  # the size of the cassette before this turn's first exchange
        self.started = False
        """Whether the header was written (:meth:`start`): ``False`` after a recording that ended before
        the model answered a request, which left whatever was at ``path`` as it was."""

    @property
    def claimed(self) -> bool:
        """Whether this recording holds the cassette (:meth:`claim` was called, :meth:`close` not yet)."""
        return self._held is not None

    def claim(self) -> None:
        """Hold the cassette for this recording; nothing is written to it yet.

        Raises:
            CassetteError: another recording holds it (the message names the file and the holder's
                process id), its lock file cannot be made beside it, or this recording was closed.
        """
        if self._held is not None:
            return
        if self._closed:
            raise CassetteError(f"{self.path}: this recording was closed; start another to record again")
        lock = lock_path(self.path)
        fd: int | None = None
        made: list[Path] = []
        pipe = _open_pipe(self.path)
        if pipe is None and not written_in_place(self.path):
            try:
                made = make_folders(lock.parent)
                fd = hold(lock)
            except LockHeldError as held:
                holder = f" (pid {held.holder})" if held.holder is not None else ""
                raise CassetteError(
                    f"{self.path}: another recording{holder} is writing to this cassette; wait for it "
                    "to end, or record to another file (nothing was played or recorded)"
                ) from None
            except OSError as exc:
                remove_empty(made)
                raise CassetteError(
                    f"{self.path}: its lock file {lock} cannot be made ({exc.strerror or exc}), so the "
                    "recording cannot hold the cassette; record to another folder"
                ) from exc
        self._held = _Held(lock, fd, made, pipe=pipe)
        weakref.finalize(self, self._held.release)  # a recording used without close(): at collection

    def start(self) -> None:
        """Claim the cassette (:meth:`claim`) and write the header (sync: before the episode's loop).

        Raises:
            CassetteError: another recording holds the cassette.
            RunWriteError: the header cannot be written; a file that was at ``path`` is left as it was.
        """
        self.claim()
        assert self._held is not None
        if self._held.written is not None:
            return
        header = json.dumps(self.header.to_json(), default=str) + "\n"
        try:
            if self._held.pipe is not None:  # a named pipe, opened when it was claimed
                append_whole(self._held.pipe, header.encode("utf-8"))
                self._held.written, self._held.pipe = self._held.pipe, None
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._held.written = open_written(self.path, header)
        except OSError as exc:
            raise write_error(self.path, exc) from exc
        self._turn_start, self.started = None, True

    def append(self, line: str, *, opens_turn: bool) -> None:
        """Append one exchange (sync: call it from a worker thread), whole or not at all.

        Raises:
            CassetteError: the cassette was not claimed yet, and another recording holds it.
            RunWriteError: it cannot be written; the cassette keeps the whole turns it held.
        """
        self.start()
        written = self._held.written if self._held is not None else None
        assert written is not None
        data = (line + "\n").encode("utf-8")
        try:  # a turn's later exchange that fails takes the turn's earlier ones with it
            before = append_whole(written, data, keep=None if opens_turn else self._turn_start)
        except OSError as exc:
            raise write_error(self.path, exc) from exc
        if opens_turn:
            self._turn_start = before

    def close(self) -> None:
        """Let the cassette go: close it and remove its lock file (what was recorded stays)."""
        held, self._held, self._closed = self._held, None, True
        if held is not None:
            held.release()

    def __enter__(self) -> CassetteFile:
        self.claim()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _open_pipe(path: Path) -> int | None:
    """A descriptor open for writing to ``path`` when it is a named pipe, else ``None``.

    Opened when the cassette is claimed, before anything starts, and without waiting: opening a
    pipe that no process reads would otherwise wait for a reader in a worker thread that Ctrl-C
    cannot stop, at the model's first answer.

    Raises:
        CassetteError: no process reads the pipe.
    """
    try:
        return open_pipe(path, os.O_WRONLY)  # not a pipe: the claim or the header write says what it is
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise CassetteError(
                f"{path}: a named pipe that no process reads, so the recording would wait for one; "
                f"start its reader first (cat {path} > cassette.jsonl &), or record to a file"
            ) from None
        raise CassetteError(f"{path}: the cassette cannot be opened ({exc.strerror or exc})") from None


@attrs.define
class _Held:
    """A claimed cassette: its lock (``None``: not locked), the folders made for it, and the
    descriptor of the file written (``None``: nothing written yet)."""

    lock: Path
    lock_fd: int | None
    made: list[Path]
    written: int | None = None
    pipe: int | None = None
    """A named pipe's descriptor, open for writing from the claim until the header goes to it."""

    def release(self) -> None:
        """Close the cassette and let its lock go (once); the folders made for it go if they stayed empty."""
        written, self.written = self.written, None
        if written is not None:
            os.close(written)
        pipe, self.pipe = self.pipe, None
        if pipe is not None:
            os.close(pipe)
        lock_fd, self.lock_fd = self.lock_fd, None
        let_go(self.lock, lock_fd)
        made, self.made = self.made, []
        remove_empty(made)


class RecordingModel:
    """A :class:`ChatModel` that passes every request to ``inner`` and appends the exchange to ``path``.

    The recording holds its cassette (:class:`CassetteFile`) from its first request (or :meth:`start`,
    or the start of a ``with`` block) until :meth:`close` (or the end of that block, or of the
    process): a second recording of the same file raises :class:`~zorkmcp.errors.CassetteError`
    before its model is asked anything. The cassette only ever holds whole turns: each exchange is
    appended whole or not at all, and when one cannot be written (a full disk) the file is cut back
    to the end of the last whole turn, so a replay plays the turns it holds
    (:attr:`ReplayModel.turns`), and the request fails.

    Args:
        inner: the model that answers.
        path: the cassette (created or replaced when the first request is recorded).
        header: written as the first line.
    """

    def __init__(self, inner: ChatModel, path: Path, header: CassetteHeader) -> None:
        self._inner = inner
        self._file = CassetteFile(path, header)
        self._held_back: list[tuple[str, bool]] = []
        self._fill_in_scripted()

    @classmethod
    def onto(cls, inner: ChatModel, cassette: CassetteFile) -> RecordingModel:
        """A recording onto a cassette its owner already claimed (and closes): one held from before
        the model exists, as ``zorkmcp play`` holds it from before the episode's servers start."""
        model = cls.__new__(cls)
        model._inner, model._file, model._held_back = inner, cassette, []
        model._fill_in_scripted()
        return model

    def _fill_in_scripted(self) -> None:
        header = self._file.header
        if header.scripted is None:
            self._file.header = attrs.evolve(header, scripted=self._inner.scripted)

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

    @property
    def cassette(self) -> CassetteFile:
        """The cassette it writes."""
        return self._file

    async def complete(self, request: CompletionRequest, /) -> LLMResponse:
        """The inner model's reply, once the exchange is on the cassette.

        An :class:`~zorkmcp.errors.LLMError` the inner model raises is recorded too (``"error"`` in
        place of ``"response"``), then raised, so a replay raises it at the same request: the engine
        goes on as it did (a request too large asked again without the turn's tool calls) or the
        episode ends with the same error. So is a :class:`~zorkmcp.errors.ModelCompatibilityError`
        (an endpoint that refused the request's tools: a replay ends there as the episode did, not as
        a recording cut short). Errors before the model's first answer are held back and written
        with it: an episode that ends before the model answers writes nothing.

        Raises:
            CassetteError: the first request, and another recording holds the cassette (the inner
                model was not asked).
            RunWriteError: the cassette cannot be written (the message names it and the reason); it
                keeps the whole turns it held.
        """
        if not self._file.claimed:
            await anyio.to_thread.run_sync(self._file.claim)
        recorded = request_json(request)
        opens = _opens_turn(recorded)
        try:
            response = await self._inner.complete(request)
        except CassetteMismatchError:
            raise
        except (LLMError, ModelCompatibilityError) as error:
            failed = json.dumps({"request": recorded, "error": _error_json(error)}, default=str)
            self._held_back.append((failed, opens))
            if self._file.started:
                await self._write()
            raise
        line = json.dumps({"request": recorded, "response": _response_json(response)}, default=str)
        self._held_back.append((line, opens))
        await self._write()
        return response

    async def _write(self) -> None:
        """Append the exchanges held back, in order (each whole or not at all)."""
        lines, self._held_back = self._held_back, []

        def append() -> None:
            for line, opens in lines:
                self._file.append(line, opens_turn=opens)

        await anyio.to_thread.run_sync(append)

    def start(self) -> None:
        """Claim the cassette and write the header (sync: call it before the episode's loop starts).

        Raises:
            CassetteError: another recording holds the cassette.
            RunWriteError: the header cannot be written; a file that was at ``path`` is left as it was.
        """
        self._file.start()

    def close(self) -> None:
        """Let the cassette go (what was recorded stays); a later request raises :class:`CassetteError`."""
        self._file.close()

    def __enter__(self) -> RecordingModel:
        self._file.claim()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


@attrs.frozen
class _Loaded:
    """A cassette as read: its header, its exchanges with their line numbers, and what was left out."""

    header: dict[str, Any]
    exchanges: list[tuple[int, dict[str, Any]]]
    incomplete_line: int | None
    """The line number of an incomplete last line (left out), else ``None``."""


def _load(path: Path) -> _Loaded:
    """The header and the exchanges, each with its line number in the file (blank lines are skipped).

    A last line that is incomplete (no newline, not JSON: a recording stopped in the middle of a
    write) is left out; any other line that is not JSON makes the file no cassette. Lines end at
    ``\n`` only (``\r\n`` too): a character that Python also takes as a line break (U+2028, U+0085,
    which JSON may hold raw inside a string, as ``jq`` writes it) is part of its line. A UTF-8 byte
    order mark (an editor's) is left out. Every exchange is checked before the replay starts, so a
    line mended by hand that holds no recorded exchange is named here, not met in the middle of the
    episode.
    """
    text = _read(path)
    lines = text.split("\n")
    if lines[-1] == "":  # the file ends with a newline (or is empty): no line after it
        lines.pop()
        unfinished = None
    else:
        unfinished = len(lines)
    incomplete: int | None = None
    records: list[tuple[int, Any]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():  # a blank line (a text editor's trailing newline) holds nothing
            continue
        try:
            records.append((number, json.loads(line)))
        except ValueError as exc:
            if number == unfinished and number > 1:  # cut in the middle of a write: those before are whole
                incomplete = number
                break
            if number == unfinished:
                raise CassetteError(
                    f"{path}: the cassette is truncated (its header, line 1, is incomplete); record it again"
                ) from None
            why = str(exc)
            if isinstance(exc, json.JSONDecodeError):  # ("Unterminated string starting at" ends so)
                why = f"{exc.msg.removesuffix(' at')} at column {exc.colno}"
            raise CassetteError(
                f"{path}: not a zorkmcp cassette (line {number} is not JSON: {why})"
            ) from None
    if not records:
        raise CassetteError(
            f"{path}: the file is empty, not a cassette (a recording writes its header with the model's "
            "first answer); record it again"
        )
    if not isinstance(records[0][1], dict) or records[0][1].get("format") != CASSETTE_FORMAT:
        raise CassetteError(
            f"{path}: not a zorkmcp cassette (no {CASSETTE_FORMAT!r} header on its first line)"
        )
    header = records[0][1]
    _check_header(path, header)
    exchanges = records[1:]
    for number, exchange in exchanges:
        if isinstance(exchange, dict) and exchange.get("format") == CASSETTE_FORMAT:
            raise CassetteError(
                f"{path}: line {number} is a second cassette header (two cassettes joined into one "
                "file?); replay each cassette from a file of its own"
            )
        wrong = _not_an_exchange(exchange)
        if wrong is not None:
            raise CassetteError(
                f"{path}: line {number} is not a recorded exchange ({wrong}); mend that line, or "
                "record the cassette again"
            )
    return _Loaded(header, exchanges, incomplete)


_GZIP_MAGIC = b"\x1f\x8b"
_BOM = "\ufeff"


def _read(path: Path) -> str:
    """The cassette's text (UTF-8, a byte order mark left out), or a :class:`CassetteError` saying
    in one line why it cannot be read and what to do."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise CassetteError(
            f"{path}: no such cassette file (record one with zorkmcp play --record FILE)"
        ) from None
    except IsADirectoryError:
        raise CassetteError(f"{path}: a folder, not a cassette file; pass the cassette file itself") from None
    except PermissionError as exc:
        raise CassetteError(
            f"{path}: the cassette cannot be read ({exc.strerror}); make it readable "
            f"(chmod u+r {path}) or replay a readable copy"
        ) from None
    except OSError as exc:
        raise CassetteError(f"{path}: the cassette cannot be read ({exc.strerror or exc})") from None
    if data.startswith(_GZIP_MAGIC):
        raise CassetteError(
            f"{path}: a gzip-compressed file, not a cassette as zorkmcp writes it; decompress it first "
            f"(gzip -dc {path} > cassette.jsonl) and replay that"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column = data[: exc.start].count(b"\n") + 1, exc.start - data.rfind(b"\n", 0, exc.start)
        raise CassetteError(
            f"{path}: not a zorkmcp cassette (line {line} is not UTF-8 text: byte "
            f"0x{data[exc.start]:02x} at column {column})"
        ) from None
    return text.removeprefix(_BOM)


def _check_header(path: Path, header: Mapping[str, Any]) -> None:
    """Refuse a header this zorkmcp cannot replay: another version, or a field of the wrong kind
    (the seed, the turn limit, the model, the settings), which would otherwise be dropped in silence
    or met by a server that does not start."""
    version = header.get("version")
    if version != CASSETTE_VERSION:
        newer = (
            " (written by a newer zorkmcp: upgrade zorkmcp to replay it)"
            if isinstance(version, int) and not isinstance(version, bool) and version > CASSETTE_VERSION
            else ""
        )
        raise CassetteError(
            f"{path}: cassette version {version!r}; this zorkmcp reads version {CASSETTE_VERSION}{newer}"
        )
    limit = header.get("max_turns")
    if limit is not None and not (_is_int(limit) and limit > 0):
        raise CassetteError(
            f"{path}: the header's max_turns is {limit!r}, not a number of turns; record the cassette again"
        )
    seed = header.get("seed")
    if seed is not None and not (_is_int(seed) and 0 <= seed <= MAX_SEED):
        raise CassetteError(
            f"{path}: the header's seed is {seed!r}, not a game seed (0 to {MAX_SEED}); set it to the "
            "seed the episode was recorded with"
        )
    model = header.get("model")
    if model is not None and not isinstance(model, str):
        raise CassetteError(f"{path}: the header's model is {model!r}, not a model's name; mend it")
    settings = header.get("settings")
    if settings is not None and not isinstance(settings, dict):
        raise CassetteError(
            f"{path}: the header's settings is {settings!r}, not an object; record the cassette again"
        )
    mcp = (settings or {}).get("mcp_enabled")
    if mcp is not None and not isinstance(mcp, bool):
        raise CassetteError(
            f"{path}: the header's settings.mcp_enabled is {mcp!r}, not true or false; mend it"
        )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _not_an_exchange(exchange: Any) -> str | None:
    """What keeps ``exchange`` (a line after the header) from being a recorded request and its reply,
    as a phrase naming the field (``its response's tool_calls[0].function.name is 5, not text``),
    else ``None``. The reply's fields are those :class:`~zorkmcp.llm.LLMResponse` can hold."""
    if not isinstance(exchange, dict):
        return f"it is {_shown(exchange)}, not an object"
    request, response = exchange.get("request", _ABSENT), exchange.get("response", _ABSENT)
    if not isinstance(request, dict):
        return (
            "it has no request" if request is _ABSENT else f"its request is {_shown(request)}, not an object"
        )
    if "error" in exchange:
        if response is not _ABSENT:
            return "it has both a response and an error; keep the one the model gave"
        return _not_a_request(request) or _not_an_error(exchange["error"])
    if not isinstance(response, dict):
        return (
            "it has no response"
            if response is _ABSENT
            else f"its response is {_shown(response)}, not an object"
        )
    wrong = _not_a_request(request)
    if wrong is not None:
        return wrong
    for key in ("content", "finish_reason", "text_beside_calls", "refusal", "reasoning", "model"):
        value = response.get(key)
        if value is not None and not isinstance(value, str):
            return f"its response's {key} is {_shown(value)}, not text or null"
    usage = response.get("usage")
    if usage is not None and not isinstance(usage, dict):
        return f"its response's usage is {_shown(usage)}, not an object or null"
    calls = response.get("tool_calls")
    if calls is None:
        return None
    if not isinstance(calls, list):
        return f"its response's tool_calls is {_shown(calls)}, not a list or null"
    for index, call in enumerate(calls):
        where = f"its response's tool_calls[{index}]"
        if not isinstance(call, dict):
            return f"{where} is {_shown(call)}, not an object"
        function = call.get("function")
        if not isinstance(function, dict):
            return f"{where}.function is {_shown(function)}, not an object"
        for name, value in (
            ("id", call.get("id", _ABSENT)),
            ("type", call.get("type", _ABSENT)),
            ("function.name", function.get("name", _ABSENT)),
            ("function.arguments", function.get("arguments", _ABSENT)),
        ):
            if value is _ABSENT:
                return f"{where} has no {name}"
            if not isinstance(value, str):
                return f"{where}.{name} is {_shown(value)}, not text"
    return None


def _not_a_request(request: Mapping[str, Any]) -> str | None:
    """What keeps a recorded request from being one (its messages, its tools), else ``None``."""
    messages = request.get("messages")
    if not (isinstance(messages, list) and messages and all(isinstance(m, dict) for m in messages)):
        return f"its request's messages is {_shown(messages)}, not a list of messages"
    tools = request.get("tools")
    if tools is not None and not (isinstance(tools, list) and all(isinstance(t, dict) for t in tools)):
        return f"its request's tools is {_shown(tools)}, not a list of tools or null"
    return None


def _not_an_error(error: Any) -> str | None:
    """What keeps a recorded error from being one the replay can raise, as a phrase naming the field."""
    if not isinstance(error, dict):
        return f"its error is {_shown(error)}, not an object"
    kind = error.get("type", _ABSENT)
    if kind not in _ERRORS:
        return f"its error's type is {_shown(kind)}, not one of {', '.join(_ERRORS)}"
    message = error.get("message", _ABSENT)
    if not isinstance(message, str):
        return f"its error's message is {_shown(message)}, not text"
    status = error.get("status")
    if status is not None and not _is_int(status):
        return f"its error's status is {_shown(status)}, not a number or null"
    for key in ("provider_message", "body_excerpt"):
        value = error.get(key)
        if value is not None and not isinstance(value, str):
            return f"its error's {key} is {_shown(value)}, not text or null"
    return None


def _asks_for_the_final_answer(message: Any) -> bool:
    """Whether ``message`` is the forced final call's user message: the request for the final answer
    (:data:`~zorkmcp.engine.FORCE_FINAL_MESSAGE`) on its own, or added to the turn's user message (a
    paragraph at the end of its text, or its last text part)."""
    from ..engine import FORCE_FINAL_MESSAGE  # (the engine imports this package)

    if not isinstance(message, dict) or message.get("role") != "user":
        return False
    content = message.get("content")
    if isinstance(content, str):
        return content == FORCE_FINAL_MESSAGE or content.endswith(f"\n\n{FORCE_FINAL_MESSAGE}")
    if isinstance(content, list) and content:
        last = content[-1]
        return (
            isinstance(last, dict) and last.get("type") == "text" and last.get("text") == FORCE_FINAL_MESSAGE
        )
    return False


def _last_message(request: Mapping[str, Any]) -> Any:
    messages = request.get("messages")
    return messages[-1] if isinstance(messages, list) and messages else None


def _opens_turn(request: Mapping[str, Any]) -> bool:
    """Whether a request (in its recorded form) is a turn's first: it ends with the turn's user message.

    The forced final call also ends with a user message: the one that asks for the final answer
    (:func:`_asks_for_the_final_answer`), whatever its ``response_format`` (``None`` too, as
    :class:`~zorkmcp.engine.TurnOptions` has it by default). A tool round ends with a tool result.
    """
    last = _last_message(request)
    return isinstance(last, dict) and last.get("role") == "user" and not _asks_for_the_final_answer(last)


def _asked_again(request: Mapping[str, Any], error: ModelError) -> bool:
    """Whether the engine asks again in the same turn after a request that failed with ``error``.

    It does only when the request was too large (:func:`~zorkmcp.llm._compat.too_large`: the model's
    context window, the account's tokens per minute) and had something to leave out: tools offered,
    or tool calls and their results (a request that ends with a tool result, or the forced final call
    as a message of its own after them). A request too large without them (the turn's opening
    messages, or the final call already asked without the turn's tool calls) ends the turn, and the
    episode, as every other error does (see :meth:`zorkmcp.engine._Loop.run`).
    """
    if not isinstance(error, LLMError) or too_large(error) is None:
        return False
    messages = request["messages"]
    last = messages[-1]
    if _asks_for_the_final_answer(last):
        from ..engine import FORCE_FINAL_MESSAGE  # (the engine imports this package)

        after_tools = len(messages) > 1 and messages[-2].get("role") == "tool"
        return last.get("content") == FORCE_FINAL_MESSAGE and after_tools
    return bool(request.get("tools")) or last.get("role") == "tool"


def _ends_turn(exchange: Mapping[str, Any]) -> bool:
    """Whether the engine's turn ends with this exchange (so the cassette holds that turn whole).

    It does with the forced final call, whatever its reply; with a reply that has content and no
    tool call (the answer); with a reply whose one call names a tool the request did not offer
    (the answer given as a call; see :mod:`zorkmcp.engine`); and with an error after which the engine
    does not ask again (:func:`_asked_again`: the episode ended on it). A reply with tool calls to run,
    or with neither content nor a call, is followed by another request of the same turn.
    """
    request = exchange["request"]
    if "error" in exchange:
        return not _asked_again(request, _error_of(exchange["error"]))
    response = exchange["response"]
    if _asks_for_the_final_answer(_last_message(request)):
        return True
    calls = response.get("tool_calls")
    if calls:
        offered = set(_tool_names(request.get("tools")))
        names = [c.get("function", {}).get("name") if isinstance(c, dict) else None for c in calls]
        return (
            len(names) == 1
            and isinstance(names[0], str)
            and names[0].removeprefix("functions.") not in offered
        )
    return bool(response.get("content"))


def _whole(exchanges: Sequence[tuple[int, dict[str, Any]]]) -> int:
    """How many of ``exchanges`` make whole turns: all but those of a last turn cut in the middle.

    A turn followed by another is whole; the last one is whole when its last exchange ends it
    (:func:`_ends_turn`). Exchanges before any turn's first request are left as they are.
    """
    if not exchanges or _ends_turn(exchanges[-1][1]):
        return len(exchanges)
    for index in range(len(exchanges) - 1, -1, -1):
        if _opens_turn(exchanges[index][1]["request"]):
            return index
    return len(exchanges)


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
    if _tool_names(recorded.get("tools")) != _tool_names(sent.get("tools")):
        return (
            f"the tools offered differ (the cassette has {_tool_names(recorded.get('tools'))}, "
            f"this run offers {_tool_names(sent.get('tools'))})"
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

    A cassette cut in the middle of a turn (Ctrl-C, a crash, ``kill -9``) replays the whole turns
    before the cut: the exchanges of the turn it cut (:attr:`left_out`) and an incomplete last line
    (:attr:`incomplete_line`) are left out.

    Args:
        path: the cassette.

    Raises:
        CassetteError: the file is missing or cannot be read, is not a cassette (gzip-compressed,
            not UTF-8, empty, of another version), its header has a field of the wrong kind (the
            seed, the turn limit, the settings), or a line before its last is not JSON or not a
            recorded exchange (named by its line number and the field; blank lines are skipped).
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        loaded = _load(path)
        self.header = loaded.header
        self.incomplete_line = loaded.incomplete_line
        """The line number of the cassette's last line when it is incomplete (left out), else ``None``."""
        whole = _whole(loaded.exchanges)
        self.left_out = len(loaded.exchanges) - whole
        """The exchanges of a last turn cut in the middle (not replayed)."""
        self._lines = [number for number, _ in loaded.exchanges[:whole]]
        self._exchanges = [exchange for _, exchange in loaded.exchanges[:whole]]
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
    def settings(self) -> Mapping[str, Any]:
        """The settings the header recorded (``mcp_enabled``, ``max_tool_iterations``,
        ``agent_sampling``, ``base_url``); empty when it recorded none."""
        settings = self.header.get("settings")
        return settings if isinstance(settings, dict) else {}

    @property
    def remaining(self) -> int:
        """Exchanges not yet replayed."""
        return len(self._exchanges) - self._position

    @property
    def turns(self) -> int:
        """The whole turns the cassette holds (the recorded requests that open a turn)."""
        return self._held

    @property
    def recorded_turn_limit(self) -> int | None:
        """The recorded episode's turn limit (the header's ``max_turns``; ``None``: an older cassette)."""
        limit = self.header.get("max_turns")
        return limit if isinstance(limit, int) else None

    @property
    def cut_short(self) -> bool:
        """Whether the cassette holds fewer turns than the recorded episode's limit.

        Its recording was stopped (Ctrl-C, an error, a crash) or the game ended before the limit.
        """
        limit = self.recorded_turn_limit
        return limit is not None and self.turns < limit

    @property
    def turn_limit(self) -> int:
        """The turns a replay plays: the recorded episode's limit, or the turns the cassette holds if fewer.

        A recorded episode that ran to its turn limit replays to it; one that ended with the game
        (victory, game over) ends the same way at the same turn; one stopped by Ctrl-C, an error or
        a crash (or a cassette whose header does not tell the limit: recorded by an older zorkmcp)
        replays the turns it recorded. At least 1: a cassette that holds no turn says so at the first.
        """
        limit = self.recorded_turn_limit
        return max(self.turns if limit is None else min(limit, self.turns), 1)

    async def complete(self, request: CompletionRequest, /) -> LLMResponse:
        """The recorded reply to ``request``, once it is checked to be the request recorded next.

        Raises:
            CassetteMismatchError: the request is not the one recorded next, or the cassette has no more.
            LLMError: the model raised this error there when the episode was recorded (the same type,
                message, status, provider message and body excerpt).
            ModelCompatibilityError: the endpoint refused the request's tools there (the same message).
        """
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
        if "error" in exchange:  # the model failed there: the same error, raised again
            raise _error_of(exchange["error"])
        return _response_of(exchange["response"])
