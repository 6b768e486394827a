"""HTTP URLs the user gives (a remote MCP server's ``url``, a model's base URL): can the HTTP client
use one (:func:`url_problem`), and how messages show one (:func:`safe_url`).

Both take any string without raising: ``urllib.parse.urlsplit`` raises on some (``http://[::1/``,
a port of ``99999`` when asked for it), and these run on what is wrong. Standard library only (the
commands check their settings before they import the engine); :func:`url_problem` imports the HTTP
client last, for what only it can tell.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["MODEL_URL_EXAMPLE", "host_of", "safe_url", "split_url", "url_problem"]

_URL_PARTS: Final = re.compile(r"(?:([^:/?#]+):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?", re.S)
"""RFC 3986 appendix B: matches every string."""
_SCHEME: Final = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
MODEL_URL_EXAMPLE: Final = "http://127.0.0.1:11434/v1"
"""The model endpoint a message about an unusable base URL shows as an example (Ollama's)."""


def split_url(url: str) -> tuple[str, str | None, str, str, str]:
    """Scheme, authority (``None``: no ``//``), path, query and fragment; ``""`` for what is absent."""
    match = _URL_PARTS.fullmatch(url)
    assert match is not None  # every group is optional
    scheme, authority, path, query, fragment = match.groups()
    return scheme or "", authority, path, query or "", fragment or ""


def host_of(url: str) -> str:
    """The host of ``url`` (without user info, port or IPv6 brackets); ``""`` if it has none."""
    host_port = (split_url(url)[1] or "").rpartition("@")[2]
    if host_port.startswith("["):
        return host_port[1:].partition("]")[0]
    return host_port.partition(":")[0]


def safe_url(url: str) -> str:
    """``url`` for messages: without user info, query string or fragment (they may hold secrets).

    The scheme and host are lower-cased; spaces, line breaks and other unprintable characters are
    percent-encoded, so the text stays on one line.
    """
    scheme, authority, path, _, _ = split_url(url)
    shown = f"{scheme.lower()}:" if scheme else ""
    if authority is not None:
        shown += "//" + authority.rpartition("@")[2].lower()
    shown += path
    return "".join(_printable(c) for c in shown)


def _printable(char: str) -> str:
    """``char``, or its UTF-8 bytes percent-encoded if it is a space, a line break or a control."""
    if char.isprintable() and not char.isspace():
        return char
    return "".join(f"%{byte:02X}" for byte in char.encode("utf-8", "surrogatepass"))


def url_problem(url: str, *, example: str) -> str | None:
    """What makes ``url`` unusable for the HTTP client, as the end of a sentence naming it; or ``None``.

    The rules: an ``http``/``https`` scheme, a host, a port (if any) from 1 to 65535, and what the
    HTTP client itself refuses (control characters, a bad IP address or IDNA name, a URL over 64 KiB).
    The text quotes no user info, query or fragment (they may hold secrets): only the scheme, the
    port's digits and the client's reason, which names at most the host.

    Args:
        url: the URL (``${VAR}`` already expanded).
        example: a URL of the kind expected, for the message (``https://example.com/mcp``).
    """
    if url != url.strip():
        return "has spaces or line breaks at its start or end (remove them)"
    scheme, authority, _, _, _ = split_url(url)
    rule = "must be an http:// or https:// URL with a host"
    write = f'(write e.g. "{example}")'
    if scheme.lower() not in ("http", "https"):
        if scheme and authority is not None and _SCHEME.fullmatch(scheme):
            return f"{rule}, got {scheme}://… {write}"
        return f"{rule}, got no http:// or https:// at its start {write}"
    host_port = "" if authority is None else authority.rpartition("@")[2]
    if host_port.startswith("["):
        write_ipv6 = f'(write e.g. "http://[::1]:8000{split_url(example)[2]}")'
        host, bracket, after = host_port.partition("]")
        if not bracket:
            return f'has "[" but no "]" around its IPv6 host {write_ipv6}'
        host += bracket
        colon, port = after[:1], after[1:]
        if after and colon != ":":
            return f"has more than a port after its IPv6 host {write_ipv6}"
    else:
        host, _, port = host_port.partition(":")
    if not host:
        return f'{rule}, got no host after "{scheme.lower()}://" {write}'
    if any(c.isspace() for c in host):
        return "has a space in its host name (remove it)"
    if port:
        port_rule = (
            "a port must be a number from 1 to 65535 (correct it, or leave it out for the "
            "default: 80 for http://, 443 for https://)"
        )
        if not (port.isascii() and port.isdigit()):
            return f"has a port that is not a number: {port_rule}"
        significant = port.lstrip("0")
        if not significant or len(significant) > 5 or int(significant) > 65535:
            shown = port if len(port) <= 12 else f"{port[:12]}…"
            return f"has port {shown}: {port_rule}"
    import httpx2  # the client the MCP SDK and the model client send with: imported only here

    try:
        httpx2.URL(url)
    except httpx2.InvalidURL as exc:
        return f"is not a URL the HTTP client accepts ({str(exc).rstrip('.')}): correct it"
    return None
