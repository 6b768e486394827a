"""A TLS server on 127.0.0.1 with a self-signed certificate, for tests of what a TLS failure says.

It completes the handshake (when the client accepts the certificate) and answers nothing after it.
The certificate is made with the ``openssl`` command, as a user makes one for a local server.
"""

from __future__ import annotations

import socket
import ssl
import subprocess
import threading
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


def self_signed_certificate(folder: Path, name: str = "server") -> tuple[Path, Path]:
    """A key and a self-signed certificate for 127.0.0.1 in ``folder``: ``(key, certificate)``."""
    key, cert = folder / f"{name}-key.pem", folder / f"{name}-cert.pem"
    request = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1"]
    names = ["-addext", "subjectAltName=IP:127.0.0.1"]
    subprocess.run(
        ["openssl", *request, *names, "-keyout", str(key), "-out", str(cert)],
        check=True,
        capture_output=True,
    )
    return key, cert


@contextmanager
def serve_tls(folder: Path) -> Iterator[int]:
    """Serve TLS with a fresh self-signed certificate (made in ``folder``); yields the port."""
    key, cert = self_signed_certificate(folder)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            with conn, suppress(OSError), context.wrap_socket(conn, server_side=True) as tls:
                tls.recv(1)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        listener.close()  # the daemon thread may stay in accept(): it ends with the process
