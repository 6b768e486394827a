"""``ToolCallResult`` (seeds 000 §Data Structures) and its conversion from the SDK's ``CallToolResult``.

How a ``CallToolResult`` becomes ``ToolCallResult.content``, what the model is shown:

* The ``content`` blocks are the result. The MCP specification gives ``content`` to the model and
  ``structuredContent`` to programs (a tool that returns ``structuredContent`` SHOULD also return it
  serialised in a text block), and OpenAI's Agents SDK shows ``content`` unless told otherwise. So a
  text that says more than the structure ("It is 21 degrees and sunny; bring sunglasses." beside
  ``{"temp": 21}``) is what the model reads, and an image sent both ways is a placeholder, never
  base64. Each block becomes one value; one block is the content itself, several a list:

  - text → the string, except that a text which parses as a JSON **object or array** becomes the
    parsed value, so the model sees structure instead of an escaped string inside the
    ``{"content": ...}`` envelope. Scalars (``"42"``, ``"true"``) stay text, unless the structured
    content says they are that value (below).
  - image / audio → a short placeholder ``"[image: image/png, 1234 bytes]"`` (never the base64).
  - embedded resource → ``{"type": "resource", "uri": ..., "text": ...}`` for text, and a
    ``"[binary: mime, N bytes]"`` placeholder instead of the text for blobs, except a blob whose
    MIME type is textual (``text/*``, JSON, XML, YAML...; :func:`_textual`) and whose bytes are
    UTF-8 text without control characters: that is shown as its ``"text"`` (server-everything's
    ``text/plain`` blob resources say "Resource 2: This is a base64 blob", not ``[binary: …]``).
  - resource link → ``{"type": "resource_link", "uri": ..., "name": ...}`` (+ description, mime type).
* Blocks whose ``annotations.audience`` names only the user (``["user"]``: no ``"assistant"``) are left
  out, unless every block is; then all are kept, since a result must say something. A missing or
  empty audience is everyone's.
* ``structuredContent`` is the content only when there is no content block. The SDK's ``MCPServer``
  wraps a non-object return value as ``{"result": value}`` with an output schema whose only property
  is ``result``; such a wrapper is unwrapped, so a tool returning ``"hello"`` gives ``"hello"``, not
  ``{"result": "hello"}``.
* When the structured content only restates the text blocks, the text's JSON types are kept: one text
  block whose JSON is the structured content (or the unwrapped value), or one block per item of an
  unwrapped list (as ``MCPServer`` writes a list), gives the parsed values, so a tool returning ``5``
  gives ``5``, not ``"5"``, and one returning ``[0, 2]`` gives ``[0, 2]``, not ``["0", "2"]``. Nothing
  the text did not say is shown.
* Base64 media never reaches the model as text. Inside structured content and inside JSON parsed from
  a text block, an object shaped like an MCP image or audio block (``{"type": "image", "data": ...,
  "mimeType": ...}``) becomes its placeholder, and the ``blob`` of an object shaped like blob resource
  contents (``{"uri": ..., "blob": ...}``) becomes ``"[binary: mime, N bytes]"``. A string that is
  wholly a base64 ``data:`` URI, or wholly base64 (at least :data:`SNIFF_MIN_CHARS` characters) whose
  bytes start with the signature of a common media or archive format (PNG, JPEG, GIF, WebP, TIFF, WAV,
  Ogg, FLAC, MP3, PDF, ZIP, gzip), becomes the placeholder for its type wherever it is: a text block
  (also one that is that string written as JSON, in quotes), a resource's text, a string inside JSON.
  Prose that mentions a data URI stays as it is.
* ``is_error`` results become ``is_error=True`` with the kept text blocks joined as ``error_message``
  (each as sent, but with the placeholders above). The message already says what the text blocks
  said, so ``content`` holds only the rest, by the same rules: the other blocks (an image's
  placeholder, a resource), the structured content when there is no block, else ``None``. The
  model reads each text once: ``{"error": "city not found", "content": null}``, not the text twice.

Results whose JSON form is larger than ``max_result_bytes`` are cut to that many UTF-8 bytes of their
JSON text (or of the string itself) followed by ``…[truncated N bytes]``; the content is then a string.
Placeholders are made before the cut, so media never spends the budget. An error's message is cut
first, and its content gets what the message left of the budget: the error as a whole stays within
``max_result_bytes`` (and the markers).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from decimal import Decimal
from typing import Any

import mcp_types
from attrs import define

__all__ = [
    "SNIFF_MIN_CHARS",
    "TRUNCATION_MARKER",
    "ToolCallResult",
    "convert_call_result",
    "truncate_content",
]

TRUNCATION_MARKER = "…[truncated {n} bytes]"
SNIFF_MIN_CHARS = 64
"""Bare base64 strings shorter than this are left alone (too short to be media worth hiding)."""

_OCTET_STREAM = "application/octet-stream"
_DATA_URI = re.compile(
    r"\s*data:(?P<mime>[\w.+-]+/[\w.+-]+)?(?:;[\w.+-]+=[^;,]*)*;base64,(?P<data>[A-Za-z0-9+/=_\-\s]*)",
    re.IGNORECASE,
)
_BASE64 = re.compile(r"[A-Za-z0-9+/_\-\s]+={0,2}\s*")
_WHITESPACE = re.compile(r"\s+")
_SIGNATURES: tuple[tuple[str, tuple[tuple[int, bytes], ...]], ...] = (
    ("image/png", ((0, b"\x89PNG\r\n\x1a\n"),)),
    ("image/jpeg", ((0, b"\xff\xd8\xff"),)),
    ("image/gif", ((0, b"GIF87a"),)),
    ("image/gif", ((0, b"GIF89a"),)),
    ("image/webp", ((0, b"RIFF"), (8, b"WEBP"))),
    ("image/tiff", ((0, b"II*\x00"),)),
    ("image/tiff", ((0, b"MM\x00*"),)),
    ("audio/wav", ((0, b"RIFF"), (8, b"WAVE"))),
    ("audio/ogg", ((0, b"OggS"),)),
    ("audio/flac", ((0, b"fLaC"),)),
    ("audio/mpeg", ((0, b"ID3"),)),
    ("application/pdf", ((0, b"%PDF-"),)),
    ("application/zip", ((0, b"PK\x03\x04"),)),
    ("application/gzip", ((0, b"\x1f\x8b\x08"),)),
)
_TEXTUAL_TYPES = frozenset(
    {
        "application/json",
        "application/xml",
        "application/javascript",
        "application/ecmascript",
        "application/x-javascript",
        "application/x-ndjson",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
        "application/x-sh",
        "application/sql",
        "application/graphql",
        "application/csv",
    }
)
_UNPRINTABLE = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f]")
"""Control characters text does not hold (tab, newline, form feed and carriage return are text)."""
_NOTHING = object()
"""Not a value: a text that is not JSON, or text blocks the structured content does not restate."""


@define
class ToolCallResult:
    """Result from an MCP tool call (seeds 000 §Data Structures; properties 41–43).

    Attributes:
        content: the tool's result: a string, a JSON value, or a list of them; of an error, what
            ``error_message`` does not say (an image's placeholder, a resource), else ``None``.
        is_error: whether the call failed (tool error, server crash, timeout, unknown tool).
        error_message: what went wrong, for the LLM and the logs.
        timed_out: the failure was the per-call timeout (lets the caller abort the batch,
            Requirement 6.5); not part of :meth:`to_dict`.
    """

    content: Any
    is_error: bool = False
    error_message: str | None = None
    timed_out: bool = False

    def to_dict(self) -> dict[str, Any]:
        """Convert to the seeds' dictionary for the ``role: "tool"`` message (property 43)."""
        if self.is_error:
            return {"error": self.error_message, "content": self.content}
        return {"content": self.content}


# --- base64 media: sizes, types, placeholders ------------------------------------------------------


def _b64_size(data: str) -> int:
    stripped = _WHITESPACE.sub("", data)
    return max(0, len(stripped) * 3 // 4 - stripped[-2:].count("="))


def _sniff(data: str) -> str | None:
    """The media type whose signature the base64 ``data`` starts with, if any."""
    head = _WHITESPACE.sub("", data[:64])[:24].translate(str.maketrans("-_", "+/"))
    try:
        start = base64.b64decode(head[: len(head) // 4 * 4], validate=True)
    except (binascii.Error, ValueError):
        return None
    for mime, parts in _SIGNATURES:
        if all(start[at : at + len(magic)] == magic for at, magic in parts):
            return mime
    return None


def _placeholder(mime: str | None, data: str, *, kind: str | None = None) -> str:
    """``"[image: image/png, N bytes]"``; ``kind`` from the type when not given (image, audio, binary)."""
    mime = mime or _sniff(data) or _OCTET_STREAM
    if kind is None:
        kind = next((k for k in ("image", "audio") if mime.lower().startswith(f"{k}/")), "binary")
    return f"[{kind}: {mime}, {_b64_size(data)} bytes]"


def _scrub_text(text: str) -> str:
    """``text`` unless it is wholly base64 media (a data URI, or base64 with a known signature)."""
    if text[:64].lstrip()[:5].lower() == "data:":
        uri = _DATA_URI.fullmatch(text)
        if uri is not None:
            return _placeholder(uri["mime"], uri["data"])
    if len(text) >= SNIFF_MIN_CHARS and (mime := _sniff(text)) is not None and _BASE64.fullmatch(text):
        return _placeholder(mime, text)
    return text


def _text_field(value: dict[str, Any], *names: str) -> str | None:
    found = next((value[name] for name in names if isinstance(value.get(name), str)), None)
    return found or None


def _media_object(value: dict[str, Any]) -> str | None:
    """The placeholder of an object shaped like an MCP image or audio block, else None."""
    kind, data = value.get("type"), value.get("data")
    if kind in ("image", "audio") and isinstance(data, str):
        return _placeholder(_text_field(value, "mimeType", "mime_type"), data, kind=kind)
    return None


def _scrub(value: Any) -> Any:
    """``value`` (a JSON value) with every piece of base64 media replaced by its placeholder.

    A loop, not recursion: JSON nested a thousand deep, which ``json.loads`` accepts, must not
    overflow the stack.
    """
    top: list[Any] = [None]
    work: list[tuple[Any, Any, Any]] = [(value, top, 0)]  # (source, container of the copy, key)
    while work:
        source, into, key = work.pop()
        if isinstance(source, str):
            into[key] = _scrub_text(source)
        elif isinstance(source, list):
            items: list[Any] = [None] * len(source)
            into[key] = items
            work.extend((item, items, index) for index, item in enumerate(source))
        elif isinstance(source, dict):
            if (media := _media_object(source)) is not None:
                into[key] = media
                continue
            copy = dict.fromkeys(source)
            into[key] = copy
            blob = source.get("blob")
            if isinstance(blob, str) and "uri" in source:  # MCP blob resource contents
                mime = _text_field(source, "mimeType", "mime_type")
                copy["blob"] = _placeholder(mime, blob, kind="binary")
                work.extend((item, copy, name) for name, item in source.items() if name != "blob")
            else:
                work.extend((item, copy, name) for name, item in source.items())
        else:
            into[key] = source
    return top[0]


# --- content blocks --------------------------------------------------------------------------------


def _for_model(block: mcp_types.ContentBlock) -> bool:
    """Whether the block's audience includes the assistant (no audience: everyone's)."""
    annotations = block.annotations
    audience = annotations.audience if annotations is not None else None
    return not audience or "assistant" in audience


MAX_JSON_DEPTH = 512
"""Text whose JSON nests deeper stays text. Python 3.11's parser gives up near 1000 levels (a
``RecursionError``), 3.13's takes thousands: what a tool's result becomes must not depend on which
Python runs, nor hand on a value deeper than the code after it (events, caps) can walk."""


class _Inexact(ValueError):
    """A number in the text that a Python float would change (:func:`_exact_float`)."""


def _exact_float(text: str) -> float:
    """``json.loads``'s ``parse_float``: the number, unless as a float it would say something else.

    ``1e400`` would become ``Infinity`` (not JSON) and ``12345678901234567890.12`` lose its last
    digits: sent back to the model as JSON, the tool's result would not be what the server said, so
    such text stays text.
    """
    value = float(text)
    if repr(value) == text:  # most numbers: written as Python writes them back, nothing to compare
        return value
    if not math.isfinite(value) or Decimal(text) != Decimal(repr(value)):
        raise _Inexact(text)
    return value


def _not_json(name: str) -> Any:
    """``json.loads``'s ``parse_constant``: ``NaN`` and ``Infinity`` are Python's, not JSON's."""
    raise _Inexact(name)


def _parse_json(text: str) -> Any:
    try:
        value = json.loads(text, parse_float=_exact_float, parse_constant=_not_json)
    except (ValueError, RecursionError):
        return _NOTHING
    return _NOTHING if _deeper_than(value, MAX_JSON_DEPTH) else value


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` (parsed JSON) nests objects and arrays more than ``limit`` deep (no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _text_value(text: str) -> Any:
    first = text.lstrip()[:1]
    if first in ("{", "["):
        value = _parse_json(text)
        if isinstance(value, dict | list):
            return _scrub(value)
    elif first == '"' and isinstance(value := _parse_json(text), str):  # media as a JSON string
        scrubbed = _scrub_text(value)
        return text if scrubbed == value else scrubbed
    return _scrub_text(text)


def _textual(mime: str | None) -> bool:
    """Whether ``mime`` names text: ``text/*``, JSON, XML, YAML and the like (parameters ignored)."""
    if not mime:
        return False
    essence = mime.split(";", 1)[0].strip().lower()
    return (
        essence.startswith("text/")
        or essence in _TEXTUAL_TYPES
        or essence.endswith(("+json", "+xml", "+yaml"))
    )


def _blob_text(mime: str | None, blob: str) -> str | None:
    """A blob's text when its MIME type says text and its bytes are UTF-8 text, else ``None``."""
    if not _textual(mime):
        return None
    try:
        data = base64.b64decode(_WHITESPACE.sub("", blob).translate(str.maketrans("-_", "+/")), validate=True)
        text = data.decode("utf-8")
    except (binascii.Error, ValueError):  # not base64, or not UTF-8 (UnicodeDecodeError)
        return None
    return None if _UNPRINTABLE.search(text) else text


def _block_value(block: mcp_types.ContentBlock) -> Any:
    if isinstance(block, mcp_types.TextContent):
        return _text_value(block.text)
    if isinstance(block, mcp_types.ImageContent):
        return _placeholder(block.mime_type, block.data, kind="image")
    if isinstance(block, mcp_types.AudioContent):
        return _placeholder(block.mime_type, block.data, kind="audio")
    if isinstance(block, mcp_types.EmbeddedResource):
        resource = block.resource
        value: dict[str, Any] = {"type": "resource", "uri": str(resource.uri)}
        if resource.mime_type:
            value["mime_type"] = resource.mime_type
        if isinstance(resource, mcp_types.TextResourceContents):
            value["text"] = _scrub_text(resource.text)
        elif (decoded := _blob_text(resource.mime_type, resource.blob)) is not None:
            value["text"] = _scrub_text(decoded)
        else:
            value["blob"] = _placeholder(resource.mime_type, resource.blob, kind="binary")
        return value
    if isinstance(block, mcp_types.ResourceLink):
        link: dict[str, Any] = {"type": "resource_link", "uri": str(block.uri), "name": block.name}
        if block.description:
            link["description"] = block.description
        if block.mime_type:
            link["mime_type"] = block.mime_type
        return link
    return f"[unsupported content block: {getattr(block, 'type', type(block).__name__)}]"  # pragma: no cover


# --- structured content ----------------------------------------------------------------------------


def _is_result_wrapper(structured: Any, output_schema: dict[str, Any] | None) -> bool:
    if output_schema is None or not isinstance(structured, dict) or set(structured) != {"result"}:
        return False
    properties = output_schema.get("properties")
    return isinstance(properties, dict) and set(properties) == {"result"}


def _same_json(a: Any, b: Any) -> bool:
    """Equal as JSON (``1`` is not ``true``, ``"1"`` is not ``1``)."""
    try:
        return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        return False


def _restated(blocks: list[mcp_types.ContentBlock], structured: Any, unwrapped: Any) -> Any:
    """The text blocks' JSON values when ``structured`` only restates them, else :data:`_NOTHING`."""
    texts = [block.text for block in blocks if isinstance(block, mcp_types.TextContent)]
    if len(texts) != len(blocks):
        return _NOTHING
    parsed = [_parse_json(text) for text in texts]
    if any(value is _NOTHING for value in parsed):
        return _NOTHING
    if len(parsed) == 1 and (_same_json(parsed[0], structured) or _same_json(parsed[0], unwrapped)):
        return parsed[0]
    if isinstance(unwrapped, list) and _same_json(parsed, unwrapped):
        return parsed
    return _NOTHING


# --- the conversion --------------------------------------------------------------------------------


def _json_text(content: Any) -> str:
    return json.dumps(content, ensure_ascii=False, default=str)


def truncate_content(content: Any, max_bytes: int) -> Any:
    """Cut ``content`` whose JSON form exceeds ``max_bytes`` UTF-8 bytes, with a visible marker.

    Args:
        content: a converted result.
        max_bytes: the cap (``McpSettings.max_result_bytes``).

    Returns:
        ``content`` unchanged when small enough, else a string: the first ``max_bytes`` bytes of the
        string (or of its JSON text), cut on a character boundary, plus ``…[truncated N bytes]``.
    """
    text = content if isinstance(content, str) else _json_text(content)
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return content
    kept = data[:max_bytes].decode("utf-8", "ignore")
    dropped = len(data) - len(kept.encode("utf-8", "surrogatepass"))
    return kept + TRUNCATION_MARKER.format(n=dropped)


def _content(
    blocks: list[mcp_types.ContentBlock], structured: Any, output_schema: dict[str, Any] | None
) -> Any:
    unwrapped = structured["result"] if _is_result_wrapper(structured, output_schema) else structured
    if not blocks:
        return "" if structured is None else _scrub(unwrapped)
    if structured is not None and (restated := _restated(blocks, structured, unwrapped)) is not _NOTHING:
        return _scrub(restated)
    values = [_block_value(block) for block in blocks]
    return values[0] if len(values) == 1 else values


def _message_part(text: str) -> str:
    """An error block's text as sent, unless base64 media in it became placeholders."""
    value = _text_value(text)
    if isinstance(value, str):
        return value
    return text if _same_json(value, _parse_json(text)) else _json_text(value)


def convert_call_result(
    result: mcp_types.CallToolResult,
    *,
    max_bytes: int,
    output_schema: dict[str, Any] | None = None,
) -> ToolCallResult:
    """Turn the SDK's ``CallToolResult`` into a :class:`ToolCallResult` (see the module docstring).

    Args:
        result: what ``ClientSession.call_tool`` returned.
        max_bytes: results larger than this are truncated.
        output_schema: the tool's declared output schema (to recognise ``{"result": ...}`` wrappers).
    """
    blocks = [block for block in result.content if _for_model(block)] or list(result.content)
    if not result.is_error:
        return ToolCallResult(
            content=truncate_content(_content(blocks, result.structured_content, output_schema), max_bytes)
        )
    texts = [_message_part(block.text) for block in blocks if isinstance(block, mcp_types.TextContent)]
    message = "\n".join(texts).strip() or "The tool reported an error without a message"
    message = truncate_content(message, max_bytes)
    rest: list[mcp_types.ContentBlock] = [b for b in blocks if not isinstance(b, mcp_types.TextContent)]
    content: Any = None  # the message says what the text blocks said
    if rest or (not blocks and result.structured_content is not None):
        left = max(0, max_bytes - len(message.encode("utf-8", "surrogatepass")))
        content = truncate_content(_content(rest, result.structured_content, output_schema), left)
    return ToolCallResult(content=content, is_error=True, error_message=message)
