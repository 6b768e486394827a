"""What a model endpoint that cannot be reached says, and which of those failures are tried again.

- A certificate that cannot be verified (a self-hosted vLLM behind a self-signed certificate) and an
  ``https://`` base URL to a plain-HTTP port fail at once: no retry can help. Before, both were tried
  six times over about 30 s and then said ``ConnectError: ConnectError``.
- The certificate's message says what to do with ``SSL_CERT_FILE``, and that the file replaces the
  system's CAs (a file holding only the self-signed certificate would fail every other host).
- Connection refused and an unknown host say so in words (the remote MCP servers' wording); they are
  still tried again (a local server may be starting up), as before.

The servers are real sockets on 127.0.0.1; retry waits run on the virtual clock.
"""

from __future__ import annotations

import re
import socket
from typing import TYPE_CHECKING, Any

import pytest
import trio
from tls_server import self_signed_certificate, serve_tls

from zorkmcp.config import RetrySettings
from zorkmcp.errors import LLMTransportError
from zorkmcp.llm import CompletionRequest, open_llm_client

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

USER = [{"role": "user", "content": "West of House"}]


@pytest.fixture(scope="module")
def tls_port(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    with serve_tls(tmp_path_factory.mktemp("tls")) as port:
        yield port


async def failure(base_url: str, retry: RetrySettings | None = None) -> tuple[str, float]:
    """The error a request to ``base_url`` ends with, and the (virtual) seconds it took."""
    settings = {"retry": retry} if retry is not None else {}
    async with open_llm_client(base_url=base_url, model="m", api_key="sk-test", **settings) as client:
        start = trio.current_time()
        with pytest.raises(LLMTransportError) as info:
            await client.complete(CompletionRequest(USER))
        return str(info.value), trio.current_time() - start


async def test_an_unverifiable_certificate_fails_at_once_and_says_what_to_do(
    tls_port: int, autojump_clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    base = f"https://127.0.0.1:{tls_port}/v1"
    message, took = await failure(base)
    assert re.fullmatch(
        re.escape(
            f"POST {base}/chat/completions failed: the TLS certificate of {base} could not be verified "
            "(self-signed certificate): set SSL_CERT_FILE to a PEM file holding its CA (or the self-signed "
            "certificate itself) and the CAs of the other hosts: it replaces the system's CAs, so start from "
        )
        + r"(a copy of /\S+|the system's CA certificates)",
        message,
    ), message
    assert took == 0.0  # no retry, no backoff


async def test_with_ssl_cert_file_set_the_message_names_the_file(
    tls_port: int, autojump_clock: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _, other = self_signed_certificate(tmp_path, "other")  # trusted, but not the server's
    monkeypatch.setenv("SSL_CERT_FILE", str(other))
    base = f"https://127.0.0.1:{tls_port}/v1"
    message, _ = await failure(base)
    assert message == (
        f"POST {base}/chat/completions failed: the TLS certificate of {base} could not be verified "
        f"(self-signed certificate): add its CA (or the self-signed certificate itself) to {other}, the PEM "
        "file SSL_CERT_FILE names"
    )


async def test_https_to_a_plain_http_server_fails_at_once(autojump_clock: Any) -> None:
    listener = trio.socket.socket()
    await listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]

    async def answer_in_plain_http() -> None:
        conn, _ = await listener.accept()
        with conn:
            await conn.recv(1024)  # the TLS client hello
            await conn.send(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

    with listener:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(answer_in_plain_http)
            base = f"https://127.0.0.1:{port}/v1"
            message, took = await failure(base)
    assert message == (
        f"POST {base}/chat/completions failed: TLS handshake with {base} failed (it does not speak TLS): "
        "use an http:// URL"
    )
    assert took == 0.0


def _refusing_port() -> int:
    with socket.socket() as sock:  # bound, never listening: connections are refused
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_connection_refused_is_said_in_words_and_still_retried(autojump_clock: Any) -> None:
    base = f"http://127.0.0.1:{_refusing_port()}/v1"
    message, took = await failure(base, RetrySettings(max_retries=2, jitter_factor=0))
    assert message == (
        f"POST {base}/chat/completions failed: cannot connect to {base} (connection refused, or the server "
        "is not running) (gave up after 3 attempts)"
    )
    assert took == 3.0  # waits of 1 s and 2 s


async def test_an_unknown_host_is_said_in_words() -> None:
    # No retry (max_retries 0), so no virtual clock: the name lookup runs in a real thread.
    message, _ = await failure("http://no-such-host.invalid/v1", RetrySettings(max_retries=0))
    assert message == (
        "POST http://no-such-host.invalid/v1/chat/completions failed: unknown host 'no-such-host.invalid' "
        "(check the URL)"
    )
