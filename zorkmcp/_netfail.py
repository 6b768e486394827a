"""Why a connection to an HTTP server failed, in words a user can act on.

Shared by the model client (:mod:`zorkmcp.llm`) and the remote MCP servers (:mod:`zorkmcp.mcp._remote`).
httpx keeps the reason of a failed connect only as a cause (its own text says ``ConnectError`` or "all
attempts to connect … failed"), so the reason is read from the cause chain: a TLS failure, the
environment's proxy, an unknown host, or nothing listening.
"""

from __future__ import annotations

import os
import re
import ssl
import urllib.request
from typing import TYPE_CHECKING, Final

from ._urls import host_of, safe_url, split_url

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["environment_proxy", "explain_connect", "explain_tls", "ssl_error", "tls_is_permanent"]

_UNKNOWN_HOST: Final = re.compile(
    r"name or service not known|nodename nor servname|name resolution|getaddrinfo", re.I
)


def ssl_error(leaf: BaseException) -> ssl.SSLError | None:
    """The TLS failure behind a connect error (httpx keeps it only as a cause; the text is empty)."""
    seen: BaseException | None = leaf
    for _ in range(8):  # httpx2 → httpcore2 → the backend's stream error → ssl
        if seen is None or isinstance(seen, ssl.SSLError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def tls_is_permanent(error: ssl.SSLError) -> bool:
    """Whether trying again cannot help: a certificate that cannot be verified, or a peer that does not
    speak TLS (an ``https://`` URL to a plain-HTTP port)."""
    return isinstance(error, ssl.SSLCertVerificationError) or error.reason == "WRONG_VERSION_NUMBER"


def explain_tls(error: ssl.SSLError, url: str) -> str:
    """A TLS failure of ``url`` (shown as it is), and what to do about it.

    ``SSL_CERT_FILE`` replaces the system's CAs for every HTTPS connection of the process (the model's
    and every remote server's): the advice says so, and names the file to start from, since a file
    holding only a self-signed certificate would fail every other host.
    """
    if isinstance(error, ssl.SSLCertVerificationError):
        why = error.verify_message or error.reason or "unknown reason"
        trusted = os.environ.get("SSL_CERT_FILE")
        if trusted:
            advice = (
                f"add its CA (or the self-signed certificate itself) to {trusted}, the PEM file "
                "SSL_CERT_FILE names"
            )
        else:
            system = ssl.get_default_verify_paths().openssl_cafile
            start = f"a copy of {system}" if os.path.isfile(system) else "the system's CA certificates"
            advice = (
                "set SSL_CERT_FILE to a PEM file holding its CA (or the self-signed certificate itself) "
                f"and the CAs of the other hosts: it replaces the system's CAs, so start from {start}"
            )
        return f"the TLS certificate of {url} could not be verified ({why}): {advice}"
    if error.reason == "WRONG_VERSION_NUMBER":
        return f"TLS handshake with {url} failed (it does not speak TLS): use an http:// URL"
    return f"TLS handshake with {url} failed ({error.reason or error})"


def explain_connect(leaf: BaseException, url: str) -> str:
    """Why a connect to ``url`` (shown as it is) failed: TLS, the proxy, an unknown host, or refused."""
    if (tls := ssl_error(leaf)) is not None:
        return explain_tls(tls, url)
    if (proxy := environment_proxy(url)) is not None:
        return (
            f"cannot connect to the proxy {safe_url(proxy)} for {url} (HTTPS_PROXY, HTTP_PROXY or "
            "ALL_PROXY: is it running? a host in NO_PROXY is reached directly)"
        )
    if _UNKNOWN_HOST.search(str(leaf)):
        return f"unknown host {host_of(url) or url!r} (check the URL)"
    return f"cannot connect to {url} (connection refused, or the server is not running)"


def _is_local(host: str) -> bool:
    return host in ("localhost", "::1") or host.endswith(".localhost") or host.startswith("127.")


def _exempt(host: str, no_proxy: str) -> bool:
    """Whether ``NO_PROXY`` exempts ``host`` (curl's rules: ``*``, a name and its subdomains, ``.name``)."""
    for entry in no_proxy.split(","):
        name = entry.strip().lower().removeprefix("*").lstrip(".")
        if entry.strip() == "*" or (name and (host == name or host.endswith("." + name))):
            return True
    return False


def environment_proxy(url: str, proxies: Mapping[str, str] | None = None) -> str | None:
    """The proxy ``HTTP_PROXY``/``HTTPS_PROXY``/``ALL_PROXY`` name for ``url``, unless ``NO_PROXY`` or a
    host on this machine (``localhost``, ``127.*``, ``::1``: never through a proxy, as the model
    client does) exempts it; ``None`` to connect directly.

    Args:
        url: the endpoint.
        proxies: ``urllib.request.getproxies_environment()`` (read now when not given).
    """
    if proxies is None:
        proxies = urllib.request.getproxies_environment()
    scheme, host = split_url(url)[0].lower(), host_of(url).lower()
    proxy = proxies.get(scheme) or proxies.get("all")
    if not proxy or not host or _is_local(host) or _exempt(host, proxies.get("no", "")):
        return None
    return proxy if "://" in proxy else f"http://{proxy}"
