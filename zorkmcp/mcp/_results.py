"""``ToolCallResult`` (seeds 000 §Data Structures) and its conversion from the SDK's ``CallToolResult``.

How a ``CallToolResult`` becomes ``ToolCallResult.content``:

* ``structured_content``, when the server sent it, is the content (it is the machine-readable form
  the server meant; its text blocks are usually the same data serialised). The SDK's ``MCPServer``
  wraps a non-object return value as ``{"result": value}`` with an output schema whose only
  property is ``result``; such a wrapper is unwrapped, so a tool returning ``"hello"`` gives
  ``"hello"``, not ``{"result": "hello"}``.
* Otherwise each content block becomes one value and a single block is the content itself, several
  blocks a list, no block the empty string:

  - text → the string, except that a text which parses as a JSON **object or array** becomes the
    parsed value, so the LLM sees structure instead of an escaped string inside the
    ``{"content": ...}`` envelope. Scalars (``"42"``, ``"true"``) stay text.
  - image / audio → a short placeholder ``"[image: image/png, 1234 bytes]"`` (never the base64).
  - embedded resource → ``{"type": "resource", "uri": ..., "text": ...}`` for text, and a
    ``"[binary: mime, N bytes]"`` placeholder instead of the text for blobs.
  - resource link → ``{"type": "resource_link", "uri": ..., "name": ...}`` (+ description, mime type).
* ``is_error`` results become ``is_error=True`` with the text blocks joined as ``error_message``.

Results whose JSON form is larger than ``max_result_bytes`` are cut to that many UTF-8 bytes of their
JSON text (or of the string itself) followed by ``…[truncated N bytes]``; the content is then a string.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types
from attrs import define

__all__ = [
    "TRUNCATION_MARKER",
    "ToolCallResult",
    "convert_call_result",
    "truncate_content",
]

TRUNCATION_MARKER = "…[truncated {n} bytes]"


@define
class ToolCallResult:
    """Result from an MCP tool call (seeds 000 §Data Structures; properties 41–43).

    Attributes:
        content: the tool's result: a string, a JSON value, or a list of them.
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


def _b64_size(data: str) -> int:
    stripped = data.strip()
    return max(0, len(stripped) * 3 // 4 - stripped[-2:].count("="))


def _text_value(text: str) -> Any:
    candidate = text.strip()
    if candidate[:1] in ("{", "["):
        try:
            value = json.loads(candidate)
        except ValueError:
            return text
        if isinstance(value, dict | list):
            return value
    return text


def _block_value(block: mcp_types.ContentBlock) -> Any:
    if isinstance(block, mcp_types.TextContent):
        return _text_value(block.text)
    if isinstance(block, mcp_types.ImageContent):
        return f"[image: {block.mime_type}, {_b64_size(block.data)} bytes]"
    if isinstance(block, mcp_types.AudioContent):
        return f"[audio: {block.mime_type}, {_b64_size(block.data)} bytes]"
    if isinstance(block, mcp_types.EmbeddedResource):
        resource = block.resource
        value: dict[str, Any] = {"type": "resource", "uri": str(resource.uri)}
        if resource.mime_type:
            value["mime_type"] = resource.mime_type
        if isinstance(resource, mcp_types.TextResourceContents):
            value["text"] = resource.text
        else:
            mime = resource.mime_type or "application/octet-stream"
            value["blob"] = f"[binary: {mime}, {_b64_size(resource.blob)} bytes]"
        return value
    if isinstance(block, mcp_types.ResourceLink):
        link: dict[str, Any] = {"type": "resource_link", "uri": str(block.uri), "name": block.name}
        if block.description:
            link["description"] = block.description
        if block.mime_type:
            link["mime_type"] = block.mime_type
        return link
    return f"[unsupported content block: {getattr(block, 'type', type(block).__name__)}]"  # pragma: no cover


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


def _is_result_wrapper(structured: dict[str, Any], output_schema: dict[str, Any] | None) -> bool:
    if output_schema is None or set(structured) != {"result"}:
        return False
    properties = output_schema.get("properties")
    return isinstance(properties, dict) and set(properties) == {"result"}


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
    values = [_block_value(block) for block in result.content]
    structured = result.structured_content
    if structured is not None and not result.is_error:
        content: Any = structured["result"] if _is_result_wrapper(structured, output_schema) else structured
    elif len(values) == 1:
        content = values[0]
    elif values:
        content = values
    else:
        content = ""
    content = truncate_content(content, max_bytes)
    if result.is_error:
        texts = [block.text for block in result.content if isinstance(block, mcp_types.TextContent)]
        message = "\n".join(texts).strip() or "The tool reported an error without a message"
        if len(message.encode("utf-8", "surrogatepass")) > max_bytes:
            message = truncate_content(message, max_bytes)
        return ToolCallResult(content=content, is_error=True, error_message=message)
    return ToolCallResult(content=content)
