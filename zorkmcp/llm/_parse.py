"""Turning an HTTP answer into an :class:`LLMResponse` or an error that says what went wrong.

Every string that ends up in an error passes through a *scrubber* first, so the API key
never appears in a message or a body excerpt, even when a provider echoes it back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Any
from urllib.parse import urljoin

from attrs import frozen

from .._urls import safe_url
from ..errors import LLMHTTPError, LLMProviderError, LLMResponseError
from ._compat import PER_MINUTE_REMEDY, TOO_MANY_TOOLS_REMEDY, exceeds_token_rate, refuses_tool_count
from ._models import FunctionCall, LLMResponse, ToolCall
from ._text import is_json, relaxed_json_object, valid_text

__all__ = [
    "EXCERPT_CHARS",
    "GENERATION_FAILED",
    "INVALID_KEY",
    "QUOTA_EXHAUSTED",
    "QUOTA_REMEDY",
    "REDACTED",
    "STREAM_CUT",
    "TOO_LARGE_REMEDY",
    "KeyUse",
    "Scrubber",
    "body_retry_delay",
    "error_codes",
    "excerpt",
    "http_error",
    "make_scrubber",
    "parse_completion",
    "provider_words",
]

EXCERPT_CHARS = 300
"""The longest body excerpt an error carries."""

REDACTED = "[REDACTED]"

QUOTA_EXHAUSTED = "insufficient_quota"
"""OpenAI's ``code`` (and ``type``) of a 429 that no wait mends: the account has no credit left."""

GENERATION_FAILED = "tool_use_failed"
"""Groq's ``code`` of a 400 whose cause is the model's output (a tool call it could not parse)."""

INVALID_KEY = "invalid_api_key"
"""OpenAI's ``code`` of a 401 whose key is wrong (``Incorrect API key provided``); Groq and others copy it."""

QUOTA_REMEDY = "no wait mends a quota or credit that is used up: not retried"

TOO_LARGE_REMEDY = (
    "the request is larger than the endpoint, or a proxy in front of it, takes (nginx: 1 MiB unless "
    "client_max_body_size is raised); a smaller max_result_bytes in [tool.zorkgpt.mcp] keeps it smaller"
)

STREAM_CUT = (
    "the event stream (text/event-stream) ended before its answer did: no finish_reason and no "
    "data: [DONE] (the connection was closed early)"
)
"""What a streamed answer cut short says; the client retries it as a dropped connection."""

Scrubber = Callable[[str], str]


@frozen
class KeyUse:
    """What a 401 or a 403 says about authentication: which variable's key was sent, or why none was.

    The endpoint's answer depends on the host the key goes to (``OPENROUTER_API_KEY`` only to
    OpenRouter, ``OPENAI_API_KEY`` only elsewhere, ``api_key_env`` anywhere), so the settings' side
    (``key_use`` in ``zorkmcp.llm._select``) writes these once and the client adds the one its answer
    calls for.
    They name variables, never a key's value.

    Attributes:
        unauthorized: said after a 401 (the key was refused, or none was sent and why).
        forbidden: said after a 403 (the key is not allowed this request, or none was sent and why).
    """

    unauthorized: str
    forbidden: str

    @classmethod
    def given(cls) -> KeyUse:
        """For a client whose key (if any) was handed to it, not read from a named variable."""
        return cls("check the API key", "check the API key")

    def for_status(self, status: int | None) -> str | None:
        """The words for an answer of ``status``: ``None`` unless it is 401 or 403."""
        if status == 401:
            return self.unauthorized
        if status == 403:
            return self.forbidden
        return None


def make_scrubber(secrets: Iterable[str | None]) -> Scrubber:
    """A function that replaces every occurrence of each secret with ``[REDACTED]``.

    Args:
        secrets: the strings to hide (``None`` and empty strings are ignored).
    """
    hidden = sorted({s for s in secrets if s}, key=len, reverse=True)

    def scrub(text: str) -> str:
        for secret in hidden:
            text = text.replace(secret, REDACTED)
        return text

    return scrub


def excerpt(body: bytes | str, scrub: Scrubber) -> str:
    """The first :data:`EXCERPT_CHARS` characters of a body, scrubbed before it is cut."""
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    return scrub(text.strip())[:EXCERPT_CHARS]


def _looks_like_html(body: bytes, content_type: str) -> bool:
    head = body.lstrip()[:15].lower()
    return "html" in content_type.lower() or head.startswith((b"<!doctype", b"<html", b"<head", b"<body"))


def _html_hint(base_url: str) -> str:
    return (
        f"the endpoint returned HTML — is the base URL right? "
        f"(expected …/v1, e.g. https://openrouter.ai/api/v1; got {base_url})"
    )


def _loads(body: bytes) -> Any:
    try:
        return json.loads(body)
    except ValueError:  # JSONDecodeError and UnicodeDecodeError are both ValueErrors
        return None


def _error_text(error: Any) -> str | None:
    """The provider's own words from an ``error`` value (OpenAI, OpenRouter, vLLM shapes)."""
    if isinstance(error, str):
        return error or None
    if isinstance(error, dict):
        message = error.get("message")
        text = message if isinstance(message, str) and message else None
        metadata = error.get("metadata")
        raw = metadata.get("raw") if isinstance(metadata, dict) else None
        if isinstance(raw, str) and raw and raw != text:  # OpenRouter: the upstream's message
            text = f"{text} ({raw})" if text else raw
        if text is None:
            text = json.dumps(error)[:EXCERPT_CHARS]
        return text
    return None


def error_codes(body: bytes) -> frozenset[str]:
    """The ``code`` and ``type`` strings of an error body's ``error`` object (OpenAI's shape), if any.

    They tell errors of one status apart: OpenAI's 429 ``insufficient_quota`` (no credit left, unlike
    a rate limit) or Groq's 400 ``tool_use_failed`` (the model wrote a tool call its parser could not
    read, unlike a request that is wrong).
    """
    data = _unwrapped(_loads(body))
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return frozenset()
    return frozenset(value for key in ("code", "type") if isinstance(value := error.get(key), str) and value)


def _redirect_hint(location: str | None, url: str, base_url: str) -> str:
    """What a 3xx answer means for the base URL: the client does not follow redirects (a POST's body
    would not go with a 301 or 302), so the base URL should be where it leads."""
    if not location:
        return "a redirect without a Location (zorkmcp does not follow redirects: is the base URL right?)"
    try:
        target = safe_url(urljoin(url, location.strip()))
    except ValueError:  # urljoin refuses some (an unclosed IPv6 bracket): shown as it came
        target = safe_url(location.strip())
    suggested = target.rstrip("/").removesuffix("/chat/completions")
    said = f"a redirect to {target} (zorkmcp does not follow redirects)"
    if suggested != target and suggested.rstrip("/") != base_url.rstrip("/"):
        said += f" — set the base URL to {suggested}"
    return said


def _unwrapped(data: Any) -> Any:
    """An error body as one object: Gemini's OpenAI-compatible endpoint wraps its error in a list
    (``[{"error": {"code": 400, "message": …, "status": "INVALID_ARGUMENT"}}]``); its first item is read."""
    if isinstance(data, list) and data and isinstance(data[0], dict):
        return data[0]
    return data


_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)s\s*")
"""A protobuf ``Duration`` in JSON: seconds with an ``s`` (``"3s"``, ``"0.5s"``)."""


def body_retry_delay(body: bytes) -> float | None:
    """Seconds to wait that an error body names when no ``Retry-After`` header does: Google's
    ``RetryInfo`` (Gemini's OpenAI-compatible endpoint answers 429 with ``[{"error": {…, "details":
    [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "3s"}]}}]`` and no header).

    Returns:
        The wait in seconds, or ``None`` when the body names none (or is not JSON).
    """
    data = _unwrapped(_loads(body))
    error = data.get("error") if isinstance(data, dict) else None
    details = error.get("details") if isinstance(error, dict) else None
    for detail in details if isinstance(details, list) else ():
        if not isinstance(detail, dict) or not str(detail.get("@type", "")).endswith("google.rpc.RetryInfo"):
            continue
        delay = detail.get("retryDelay")
        match = _DURATION.fullmatch(delay) if isinstance(delay, str) else None
        if match is not None:
            return float(match[1])
    return None


def _provider_message(data: Any) -> str | None:
    data = _unwrapped(data)
    if not isinstance(data, dict):
        return None
    for key in ("error", "detail", "message"):
        text = _error_text(data.get(key))
        if text:
            return text
    return None


def provider_words(body: bytes, content_type: str, scrub: Scrubber) -> str | None:
    """The provider's own words in an error body (OpenAI's, OpenRouter's, vLLM's, Gemini's shapes),
    scrubbed and cut to :data:`EXCERPT_CHARS`; ``None`` for HTML or a body without them."""
    if _looks_like_html(body, content_type):
        return None
    words = _provider_message(_loads(body))
    return scrub(words)[:EXCERPT_CHARS] if words else None


def http_error(
    *,
    status: int,
    reason: str,
    body: bytes,
    content_type: str,
    url: str,
    base_url: str,
    scrub: Scrubber,
    location: str | None = None,
    key_use: KeyUse | None = None,
) -> LLMHTTPError:
    """Describe a non-2xx answer.

    An HTML page says the base URL is wrong only when it answers 404 or 405 (a web server, not the
    model's API, is there); with any other status it is an error page of a proxy or gateway in front
    of the endpoint (nginx's 413, Cloudflare's 403, a 502), which the base URL does not cause. A
    redirect names where it leads: the client does not follow it.

    Args:
        status: the HTTP status.
        reason: the reason phrase (may be empty).
        body: the raw body.
        content_type: the ``Content-Type`` header.
        url: the URL that was posted to.
        base_url: the configured base URL (for hints).
        scrub: hides the API key.
        location: the ``Location`` header (of a redirect), if any.
        key_use: what a 401 or 403 says about the key (which variable's was sent, or why none was);
            ``None``: "check the API key".

    Returns:
        The error to raise (the caller decides whether to retry first).
    """
    html = _looks_like_html(body, content_type)
    provider = provider_words(body, content_type, scrub)
    status_text = f"HTTP {status} {reason}".rstrip()
    if 300 <= status <= 399:
        detail = scrub(_redirect_hint(location, url, base_url))
    elif html and status in (404, 405):
        detail = _html_hint(base_url)
    elif html:
        detail = "an HTML error page (a proxy or gateway in the way?)"
    elif provider:
        detail = provider
    else:
        detail = excerpt(body, scrub)[:120] or "(empty body)"
    hint = ""
    if status in (401, 403):
        hint = f" — {(key_use or KeyUse.given()).for_status(status)}"
    elif status == 404 and not _looks_like_html(body, content_type):
        hint = f" — are the base URL ({base_url}) and the model name right?"
    elif status in (400, 422) and b"cache_control" in body:
        # Strict OpenAI-compatible endpoints reject the prompt-caching marker (Requirement 4.7).
        hint = (
            " — this endpoint does not accept cache_control: set cache_control = false in [tool.zorkgpt.llm]"
        )
    elif status in (400, 413, 422) and refuses_tool_count(provider or detail):
        hint = f" — {TOO_MANY_TOOLS_REMEDY}"  # OpenAI takes 128 tools; the engine offers them all
    elif status in (413, 429) and exceeds_token_rate(provider or detail):
        hint = f" — {PER_MINUTE_REMEDY}"  # OpenAI's 429, Groq's 413: Request too large … tokens per min
    elif status == 413:
        hint = f" — {TOO_LARGE_REMEDY}"
    elif status == 429 and QUOTA_EXHAUSTED in error_codes(body):
        hint = f" — {QUOTA_REMEDY}"
    return LLMHTTPError(
        f"POST {url} answered {status_text}: {detail}{hint}",
        status=status,
        provider_message=provider,
        body_excerpt=excerpt(body, scrub),
    )


def _content_text(raw: Any, where: str, fail: Callable[[str], LLMResponseError]) -> str | None:
    if raw is None or isinstance(raw, str):
        return raw
    if isinstance(raw, list):  # content parts: [{"type": "text", "text": "..."}]
        return "".join(
            part["text"] for part in raw if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    raise fail(f"{where}.content must be a string, a list of parts or null, got {type(raw).__name__}")


def _fresh_id(prefix: str, index: int, used: Collection[str]) -> str:
    """``<prefix>_<index>``, or with ``_2``, ``_3``… after it when a provider already used that id."""
    candidate = f"{prefix}_{index}"
    suffix = 2
    while candidate in used:
        candidate = f"{prefix}_{index}_{suffix}"
        suffix += 1
    return candidate


def _given_id(item: dict[str, Any]) -> str | None:
    """The provider's id of a tool call as :class:`ToolCall` stores it (a number as text), if any."""
    call_id = item.get("id")
    if isinstance(call_id, int) and not isinstance(call_id, bool):
        call_id = str(call_id)
    return valid_text(call_id) if isinstance(call_id, str) and call_id else None


def _tool_calls(
    raw: Any,
    where: str,
    fail: Callable[[str], LLMResponseError],
    id_prefix: str = "call",
    taken_ids: Collection[str] = (),
) -> tuple[ToolCall, ...] | None:
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise fail(f"{where}.tool_calls must be a list, got {type(raw).__name__}")
    calls: list[ToolCall] = []
    used = set(taken_ids)  # the ids given out so far
    # a fresh id avoids the provider's own ids in this answer too, so that a new one is always kept
    given = {call_id for item in raw if isinstance(item, dict) and (call_id := _given_id(item))}
    for index, item in enumerate(raw):
        here = f"{where}.tool_calls[{index}]"
        if not isinstance(item, dict):
            raise fail(f"{here} must be an object, got {type(item).__name__}")
        function = item.get("function")
        if not isinstance(function, dict):
            raise fail(f"{here} has no function object")
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise fail(f"{here}.function has no name")
        arguments = function.get("arguments")
        if arguments is None or arguments == "":
            arguments = "{}"
        elif not isinstance(arguments, str):  # some providers send an object
            arguments = json.dumps(arguments)
        elif not is_json(arguments):
            # single quotes, a trailing comma, Python's True/None (small local models): read as the
            # object it writes, so the call runs and the history holds JSON (vLLM reads it back)
            arguments = relaxed_json_object(arguments) or arguments
        call_id = _given_id(item)
        if call_id is None or call_id in used:
            # none, or one this conversation already holds (llama.cpp's "0" every answer, or twice
            # in one answer): strict endpoints reject a history with two calls of one id
            call_id = _fresh_id(id_prefix, index, used | given)
        used.add(call_id)
        kind = item.get("type")
        calls.append(
            ToolCall(
                id=call_id,
                type=kind if isinstance(kind, str) and kind else "function",
                function=FunctionCall(name=name, arguments=arguments),
            )
        )
    return tuple(calls) or None  # an empty list counts as none (property 12)


def _is_legacy_call(function_call: Any) -> bool:
    """Whether a message's ``function_call`` (OpenAI's single call before ``tool_calls``, which some
    servers and proxies still answer with, ``finish_reason: "function_call"``) names a function."""
    return (
        isinstance(function_call, dict)
        and isinstance(function_call.get("name"), str)
        and bool(function_call["name"])
    )


def _is_event_stream(body: bytes, content_type: str) -> bool:
    return "text/event-stream" in content_type.lower() or body.lstrip()[:5] == b"data:"


def _event_data(body: bytes) -> Iterator[str]:
    """The ``data`` of each server-sent event: its ``data:`` lines joined by newlines (WHATWG HTML)."""
    lines: list[str] = []
    for line in re.split(r"\r\n|\r|\n", body.decode("utf-8", errors="replace")):
        if not line:  # a blank line ends the event
            if lines:
                yield "\n".join(lines)
            lines = []
            continue
        field, _, value = line.partition(":")
        if field == "data":
            lines.append(value.removeprefix(" "))
    if lines:
        yield "\n".join(lines)


_ASIDES = ("refusal", "reasoning_content", "reasoning")
"""A message's text fields that are not its content (:attr:`~zorkmcp.llm.LLMResponse.refusal`,
:attr:`~zorkmcp.llm.LLMResponse.reasoning`), joined over a stream's deltas like the content."""


def _merge_legacy(piece: Any, legacy: dict[str, str]) -> None:
    """A stream's ``function_call`` delta (the legacy single call): its name once, its arguments joined."""
    if not isinstance(piece, dict):
        return
    name = piece.get("name")
    if isinstance(name, str) and name and not legacy.get("name"):
        legacy["name"] = name
    arguments = piece.get("arguments")
    if isinstance(arguments, str):
        legacy["arguments"] = legacy.get("arguments", "") + arguments
    elif arguments is not None:  # an object, whole
        legacy["arguments"] = json.dumps(arguments)


def _merge_delta(
    delta: dict[str, Any],
    text: list[str],
    calls: dict[int, dict[str, Any]],
    asides: dict[str, list[str]],
    legacy: dict[str, str],
) -> None:
    _merge_legacy(delta.get("function_call"), legacy)
    content = delta.get("content")
    if isinstance(content, str):
        text.append(content)
    elif isinstance(content, list):
        text.extend(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    for aside in _ASIDES:
        if isinstance(delta.get(aside), str):
            asides.setdefault(aside, []).append(delta[aside])
    pieces = delta.get("tool_calls")
    for position, piece in enumerate(pieces if isinstance(pieces, list) else ()):
        if not isinstance(piece, dict):
            continue
        index = piece.get("index")
        key = index if isinstance(index, int) and not isinstance(index, bool) else position
        call = calls.setdefault(key, {"type": "function", "function": {"name": "", "arguments": ""}})
        if piece.get("id") and "id" not in call:  # the first chunk of a call carries its id and name
            call["id"] = piece["id"]
        if isinstance(piece.get("type"), str) and piece["type"]:
            call["type"] = piece["type"]
        function = piece.get("function")
        if not isinstance(function, dict):
            continue
        name = function.get("name")
        if isinstance(name, str) and name and not call["function"]["name"]:
            call["function"]["name"] = name
        arguments = function.get("arguments")
        if isinstance(arguments, str):
            call["function"]["arguments"] += arguments
        elif arguments is not None:  # an object, whole
            call["function"]["arguments"] = json.dumps(arguments)


def _assembled(body: bytes, fail: Callable[[str], LLMResponseError]) -> dict[str, Any]:
    """A streamed answer (``text/event-stream``) as the one body a non-streamed answer would be.

    The deltas of choice 0 are joined: content in order, tool calls by their ``index`` (id, type and
    name from their first chunk, the arguments' pieces joined). The model, the last ``usage`` and the
    last ``finish_reason`` are kept; ``data: [DONE]`` ends it. An ``error`` chunk becomes the body's
    ``error``, so it is reported as a provider error like one inside a 200. A stream whose choice has
    no ``finish_reason`` and that ends without ``data: [DONE]`` was cut short (:data:`STREAM_CUT`): its
    text is not the whole answer.
    """
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    asides: dict[str, list[str]] = {}
    legacy: dict[str, str] = {}
    answer: dict[str, Any] = {}
    choice: dict[str, Any] | None = None
    done = False
    for data in _event_data(body):
        if data.strip() == "[DONE]":
            done = True
            break
        chunk = _loads(data.encode("utf-8", errors="replace"))
        if not isinstance(chunk, dict):
            raise fail(
                f"the event stream (text/event-stream) holds a chunk that is not a JSON object: {data[:80]!r}"
            )
        if chunk.get("error") is not None:
            return {"error": chunk["error"]}
        for key in ("model", "usage"):
            if chunk.get(key) is not None:
                answer[key] = chunk[key]
        parts = chunk.get("choices")
        for part in parts if isinstance(parts, list) else ():
            if not isinstance(part, dict) or part.get("index", 0) != 0:
                continue
            if part.get("error") is not None:
                return {"error": part["error"]}
            choice = choice if choice is not None else {"index": 0, "finish_reason": None}
            if isinstance(part.get("finish_reason"), str):
                choice["finish_reason"] = part["finish_reason"]
            delta = part.get("delta", part.get("message"))
            if isinstance(delta, dict):
                _merge_delta(delta, text, calls, asides, legacy)
    if choice is not None and choice["finish_reason"] is None and not done:
        raise fail(STREAM_CUT)
    if choice is not None:
        message: dict[str, Any] = {"role": "assistant", "content": "".join(text) if text else None}
        message.update((key, "".join(pieces)) for key, pieces in asides.items())
        if calls:
            message["tool_calls"] = [calls[key] for key in sorted(calls)]
        if legacy:
            message["function_call"] = legacy
        choice["message"] = message
    answer["choices"] = [choice] if choice is not None else []
    return answer


def parse_completion(
    *,
    status: int,
    body: bytes,
    content_type: str,
    url: str,
    base_url: str,
    model: str,
    scrub: Scrubber,
    id_prefix: str = "call",
    taken_ids: Collection[str] = (),
    key_use: KeyUse | None = None,
) -> LLMResponse:
    """Parse a 2xx chat-completions answer (seeds 000 §2.3; properties 11 and 12).

    A streamed answer (``text/event-stream``, from a server that streams although the request said
    ``"stream": false``) is assembled from its deltas first. An empty ``choices`` list (what some
    providers send when they filter the answer) is an empty answer, as a choice without a message is:
    neither content nor tool calls (the engine's Requirement 5.10 handles it). A choice without a
    ``message`` that holds a ``delta`` (one stream chunk as the body) or a ``text`` string (a text
    completion's shape, which some proxies answer chat requests with) is read from that instead.
    A message without tool calls whose legacy ``function_call`` names a function (OpenAI's single call
    before ``tool_calls``, ``finish_reason: "function_call"``) holds that one call, under a fresh id.
    A tool call's arguments that are not JSON but a literal object in Python's or JavaScript's
    notation (``{'tag': 'map'}``, a trailing comma, ``None``) become that object's JSON text
    (:func:`~zorkmcp.llm._text.relaxed_json_object`); other text that is not JSON is kept as sent.

    Args:
        status: the HTTP status (2xx).
        body: the raw body.
        content_type: the ``Content-Type`` header.
        url: the URL that was posted to.
        base_url: the configured base URL (for hints).
        model: the model that was asked (used when the answer names none).
        scrub: hides the API key.
        id_prefix: a tool call whose id is missing, or already taken, gets ``<id_prefix>_<index>``
            (with ``_2``, ``_3``… after it if a provider used that too); the client makes the prefix
            unique per answer.
        taken_ids: the tool call ids the conversation already holds; with them, ids never repeat
            within a conversation (a provider's id that is new is kept).
        key_use: what a provider error of code 401 or 403 adds about the key.

    Returns:
        The response; with tool calls its ``content`` is ``None``.

    Raises:
        LLMResponseError: HTML, an empty body, not JSON (its excerpt quoted), no ``choices``, or a
            malformed message or stream chunk.
        LLMProviderError: an ``error`` object inside the answer (OpenRouter does this, in a stream
            too); its ``status`` is the provider's numeric code when it gave one.
    """
    body_excerpt = excerpt(body, scrub)

    def fail(detail: str) -> LLMResponseError:
        return LLMResponseError(
            scrub(f"POST {url} answered HTTP {status}, but {detail}"),
            status=status,
            body_excerpt=body_excerpt,
        )

    if _looks_like_html(body, content_type):
        raise fail(_html_hint(base_url))
    if _is_event_stream(body, content_type):
        data = _assembled(body, fail)
    else:
        data = _loads(body)
        if data is None and not body.strip():
            raise fail("the body is empty")
        if data is None and body.strip() != b"null":
            raise fail(f"the body is not JSON: {body_excerpt[:120]!r}")
    if not isinstance(data, dict):
        raise fail(f"the body is JSON {type(data).__name__}, not an object")
    if data.get("error") is not None:
        raise _provider_error(data["error"], status, url, body_excerpt, scrub, key_use)
    choices = data.get("choices")
    if not isinstance(choices, list):
        raise fail("the answer has no choices" if choices is None else "choices is not a list")
    choice = choices[0] if choices else {}  # none: the provider gave no answer (filtered)
    if not isinstance(choice, dict):
        raise fail(f"choices[0] is {type(choice).__name__}, not an object")
    if choice.get("error") is not None:
        raise _provider_error(choice["error"], status, url, body_excerpt, scrub, key_use)
    message = choice.get("message")
    if message is None:  # a chunk sent as the whole body, or a text completion's choice (some proxies)
        delta, text_choice = choice.get("delta"), choice.get("text")
        if isinstance(delta, dict):
            message = delta
        else:
            message = {"content": text_choice} if isinstance(text_choice, str) else {}
    if not isinstance(message, dict):
        raise fail(f"choices[0].message is {type(message).__name__}, not an object")
    raw_calls = message.get("tool_calls")
    if not raw_calls and _is_legacy_call(message.get("function_call")):
        raw_calls = [{"type": "function", "function": message["function_call"]}]  # no id: a fresh one
    tool_calls = _tool_calls(raw_calls, "choices[0].message", fail, id_prefix, taken_ids)
    text = _content_text(message.get("content"), "choices[0].message", fail)
    content = None if tool_calls else text
    beside = text if tool_calls and text and text.strip() else None
    usage = data.get("usage")
    answered_by = data.get("model")
    finish_reason = choice.get("finish_reason")
    refusal = message.get("refusal")
    reasoning = next((message[key] for key in _ASIDES[1:] if isinstance(message.get(key), str)), None)
    return LLMResponse(
        content=content,
        model=answered_by if isinstance(answered_by, str) and answered_by else model,
        usage=(
            {k: v for k, v in usage.items() if isinstance(v, int) and not isinstance(v, bool)}
            if isinstance(usage, dict)
            else None
        ),
        tool_calls=tool_calls,
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
        text_beside_calls=beside,
        refusal=refusal if isinstance(refusal, str) and refusal.strip() else None,
        reasoning=reasoning if reasoning is not None and reasoning.strip() else None,
    )


def _provider_error(
    error: Any, status: int, url: str, body_excerpt: str, scrub: Scrubber, key_use: KeyUse | None = None
) -> LLMProviderError:
    code = error.get("code") if isinstance(error, dict) else None
    numeric = code if isinstance(code, int) and not isinstance(code, bool) else None
    message = _error_text(error)
    message = scrub(message)[:EXCERPT_CHARS] if message else None
    code_text = f" (code {code})" if code is not None else ""
    said = key_use.for_status(numeric) if key_use is not None else None  # OpenRouter's 401 in a stream
    hint = f" — {said}" if said else ""
    return LLMProviderError(
        scrub(
            f"POST {url} answered HTTP {status} with a provider error{code_text}: "
            f"{message or '(no message)'}{hint}"
        ),
        status=numeric if numeric is not None else status,
        provider_message=message,
        body_excerpt=body_excerpt,
    )
