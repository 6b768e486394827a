"""A Langfuse host that does not take the spans: one line, and an exit that does not wait for it.

With Langfuse's keys set, spans go to ``LANGFUSE_HOST`` through OpenTelemetry's OTLP/HTTP exporter,
which logs each batch it could not send (Python prints those warnings on stderr, one or three per
batch) and, at exit, retried an unreachable host for its whole timeout (5 s) before the process
could end. Now the failure is said once, in one line naming the host, the reason and what to check,
and the exit waits for the last spans at most 5 s (``LANGFUSE_TIMEOUT`` seconds when set), not at all
once the host has failed.

Real parts: the installed Langfuse SDK, real loopback servers (one answering HTTP 200 or 401, one
that accepts connections, reads and never answers, a port nobody listens on), and ``zorkmcp play``
itself, the offline scripted model on real Zork. Skipped where Langfuse is not installed.
"""

from __future__ import annotations

import inspect
import logging
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import pytest
from play_support import offline_env, zork1_path

from zorkmcp.observability import LangfuseTracer

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

langfuse = pytest.importorskip("langfuse", reason='Langfuse is optional: pip install "zorkmcp[langfuse]"')

SAFETY_TIMEOUT = 60  # seconds; only reached when something hangs (never a wall-clock assertion)
TRACES = "/api/public/otel/v1/traces"


class Host:
    """A loopback HTTP server standing in for Langfuse: answers ``status`` to every POST, counts them."""

    def __init__(self, status: int) -> None:
        self.paths: list[str] = []
        lock = threading.Lock()
        paths = self.paths

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with lock:
                    paths.append(self.path)
                self.send_response(status)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, format: str, *args: Any) -> None:
                del format, args

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def host_401() -> Iterator[Host]:
    host = Host(401)
    thread = threading.Thread(target=host.server.serve_forever, daemon=True)
    thread.start()
    yield host
    host.server.shutdown()
    host.server.server_close()
    thread.join()


@pytest.fixture
def host_200() -> Iterator[Host]:
    host = Host(200)
    thread = threading.Thread(target=host.server.serve_forever, daemon=True)
    thread.start()
    yield host
    host.server.shutdown()
    host.server.server_close()
    thread.join()


class Silent:
    """A real TCP server on 127.0.0.1 that accepts, reads what it is sent and never answers."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.received = bytearray()
        self.connections: list[socket.socket] = []
        self.lock = threading.Condition()
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:  # closed: the test is over
                return
            with self.lock:
                self.connections.append(connection)
            reader = threading.Thread(target=self._read, args=(connection,), daemon=True)
            self.threads.append(reader)
            reader.start()

    def _read(self, connection: socket.socket) -> None:
        try:
            while data := connection.recv(65536):
                with self.lock:
                    self.received += data
                    self.lock.notify_all()
        except OSError:
            return

    def close(self) -> None:
        self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        with self.lock:
            for connection in self.connections:
                connection.close()


@pytest.fixture
def silent_host() -> Iterator[Silent]:
    silent = Silent()
    yield silent
    silent.close()
    for thread in silent.threads:
        thread.join(timeout=5)


@pytest.fixture
def refused_url() -> str:
    """A loopback port nobody listens on (it was bound a moment ago, then closed)."""
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def langfuse_env(host: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in offline_env().items() if not k.startswith("LANGFUSE_")}
    env.update(extra)
    env.update(LANGFUSE_PUBLIC_KEY="pk-lf-probe", LANGFUSE_SECRET_KEY="sk-lf-probe", LANGFUSE_HOST=host)
    return env


SPANS_THEN_EXIT = """
import sys
from langfuse import get_client
from zorkmcp.observability import LangfuseTracer, open_tracer
tracer = open_tracer()
assert isinstance(tracer, LangfuseTracer), tracer
for turn in range(1, int(sys.argv[1]) + 1):
    with tracer.span("agent-tool-calling-session", turn=turn) as session:
        session.update(iterations_used=1)
    if turn < int(sys.argv[1]):
        get_client().flush()  # a batch sent during the run, as every few seconds of a long episode
"""


def run_spans(env: dict[str, str], batches: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SPANS_THEN_EXIT, str(batches)],
        capture_output=True, text=True, env=env, timeout=SAFETY_TIMEOUT, check=False,
    )  # fmt: skip


def test_zorkmcp_play_with_a_host_that_never_answers_exits_with_one_line(
    tmp_path: Path, silent_host: Silent
) -> None:
    # real-time: the exit's wait (LANGFUSE_TIMEOUT, 1 s) for a real server that never answers is what
    # is under test
    done = subprocess.run(
        [sys.executable, "-m", "zorkmcp.cli", "play", "--game", str(zork1_path()), "--turns", "2"],
        cwd=tmp_path, env=langfuse_env(silent_host.url, LANGFUSE_TIMEOUT="1"), capture_output=True, text=True,
        timeout=SAFETY_TIMEOUT, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stderr == (
        f"tracing: the traces could not be delivered to Langfuse at {silent_host.url} (no answer within "
        "1 s at exit); check LANGFUSE_HOST, or set LANGFUSE_TIMEOUT to wait longer\n"
    )
    with silent_host.lock:
        silent_host.lock.wait_for(lambda: b"\r\n" in silent_host.received, timeout=SAFETY_TIMEOUT)
        request = bytes(silent_host.received)
    assert request.startswith(f"POST {TRACES} HTTP/1.1\r\n".encode())  # the spans were offered


def test_a_port_nobody_listens_on_is_said_once_without_the_retries(refused_url: str) -> None:
    done = run_spans(langfuse_env(refused_url), batches=1)
    assert (done.returncode, done.stdout) == (0, ""), done.stderr
    assert done.stderr == (
        f"tracing: the traces could not be delivered to Langfuse at {refused_url} (connection refused); "
        "check LANGFUSE_HOST\n"
    )


def test_wrong_keys_are_one_line_not_one_per_batch(host_401: Host) -> None:
    done = run_spans(langfuse_env(host_401.url), batches=3)
    assert (done.returncode, done.stdout) == (0, ""), done.stderr
    assert host_401.paths == [TRACES, TRACES, TRACES]  # three batches, each refused
    assert done.stderr == (
        f"tracing: the traces could not be delivered to Langfuse at {host_401.url} (HTTP 401 Unauthorized); "
        "check LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY\n"
    )


def test_a_host_that_takes_the_spans_gets_them_at_exit_and_nothing_is_said(host_200: Host) -> None:
    done = run_spans(langfuse_env(host_200.url), batches=1)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    assert host_200.paths == [TRACES]  # the exit sent the last batch (no flush in the script)


def test_the_base_url_variable_is_the_one_to_check_when_it_names_the_host(refused_url: str) -> None:
    done = run_spans(langfuse_env("http://unused.invalid", LANGFUSE_BASE_URL=refused_url), batches=1)
    assert done.stderr == (
        f"tracing: the traces could not be delivered to Langfuse at {refused_url} (connection refused); "
        "check LANGFUSE_BASE_URL\n"
    )


# -- the bound of the wait, in process (no waiting: the wait is given, and recorded) -----------------


def real_client(host: str) -> Any:
    """A real client of the installed Langfuse on a tracer provider of its own; its key is new (Langfuse
    keeps one set of resources, its host included, per public key and process)."""
    from opentelemetry.sdk.trace import TracerProvider

    if "tracer_provider" not in inspect.signature(langfuse.Langfuse).parameters:
        pytest.skip("this Langfuse makes its provider the global one (checked in a subprocess above)")
    return langfuse.Langfuse(
        public_key=f"pk-lf-{host}", secret_key="sk-lf-bound", host=host, tracer_provider=TracerProvider()
    )


@pytest.mark.parametrize(("env", "bound"), [({}, 5.0), ({"LANGFUSE_TIMEOUT": "3"}, 3.0)])
def test_the_exit_waits_for_the_send_at_most_its_bound(
    host_200: Host, env: dict[str, str], bound: float, caplog: pytest.LogCaptureFixture
) -> None:
    from zorkmcp.observability import _LangfuseDelivery

    client = real_client(host_200.url)
    with LangfuseTracer(client).span("agent-tool-calling-session", turn=1):
        pass
    delivery = _LangfuseDelivery(client, env)
    asked: list[float] = []

    def wait(seconds: float) -> bool:
        asked.append(seconds)
        return delivery._settled.wait(SAFETY_TIMEOUT)  # the send's own end, however long it takes

    delivery.at_exit(wait)
    assert asked == [bound]
    assert host_200.paths == [TRACES]
    assert (delivery.said, caplog.messages) == (None, [])


def test_a_send_not_done_within_the_bound_is_said_and_left(
    host_200: Host, caplog: pytest.LogCaptureFixture
) -> None:
    from zorkmcp.observability import _LangfuseDelivery

    client = real_client(host_200.url)
    delivery = _LangfuseDelivery(client, {"LANGFUSE_TIMEOUT": "2"})
    delivery.at_exit(lambda seconds: False)  # the bound passed before the send ended
    line = (
        f"tracing: the traces could not be delivered to Langfuse at {host_200.url} (no answer within 2 s "
        "at exit); check LANGFUSE_HOST, or set LANGFUSE_TIMEOUT to wait longer"
    )
    assert (delivery.said, caplog.messages) == (line, [line])
    assert delivery._settled.wait(SAFETY_TIMEOUT)  # the send goes on in its thread, and ends


def test_the_exporter_s_records_stop_at_the_one_line(
    host_401: Host, caplog: pytest.LogCaptureFixture
) -> None:
    from zorkmcp.observability import _EXPORTER_LOGGER, _LangfuseDelivery

    client = real_client(host_401.url)
    delivery = _LangfuseDelivery(client, {})
    exporter_log = logging.getLogger(_EXPORTER_LOGGER)
    exporter_log.addFilter(delivery.filter)
    try:
        tracer = LangfuseTracer(client)
        for turn in (1, 2):
            with tracer.span("agent-tool-calling-session", turn=turn):
                pass
            client.flush()
    finally:
        exporter_log.removeFilter(delivery.filter)
        client.shutdown()
    assert host_401.paths == [TRACES, TRACES]
    line = (
        f"tracing: the traces could not be delivered to Langfuse at {host_401.url} (HTTP 401 Unauthorized); "
        "check LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY"
    )
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        ("zorkmcp.observability", "WARNING", line)
    ]


@pytest.mark.parametrize(
    ("message", "said"),
    [
        (
            "Transient error HTTPConnectionPool(host='127.0.0.1', port=9): Max retries exceeded with url: "
            "/api/public/otel/v1/traces (Caused by NewConnectionError(\"HTTPConnection(host='127.0.0.1', "
            'port=9): Failed to establish a new connection: [Errno 111] Connection refused")) encountered '
            "while exporting spans batch, retrying in 1.09s.",
            ("connection refused", None),
        ),
        (
            "Transient error HTTPConnectionPool(host='langfuse.invalid', port=80): Max retries exceeded "
            'with url: /api/public/otel/v1/traces (Caused by NameResolutionError("HTTPConnection(host='
            "'langfuse.invalid', port=80): Failed to resolve 'langfuse.invalid' ([Errno -2] Name or "
            'service not known)")) encountered while exporting spans batch, retrying in 0.98s.',
            ("the host name could not be resolved", None),
        ),
        (
            "Transient error Service Unavailable encountered while exporting spans batch, retrying in 1.02s.",
            ("Service Unavailable", None),
        ),
        (
            "Failed to export spans batch due to timeout, max retries or shutdown.",
            ("no answer in time", None),
        ),
        (
            "Failed to export spans batch code: 401, reason: Unauthorized",
            ("HTTP 401 Unauthorized", "check LANGFUSE_PUBLIC_KEY and LANGFUSE_SECRET_KEY"),
        ),
        ("Failed to export batch code: 404, reason: Not Found", ("HTTP 404 Not Found", None)),
        (
            "Failed to export spans batch code: 413, reason: Payload Too Large",
            ("HTTP 413 Payload Too Large", "the spans it refused were dropped"),
        ),
        ("Shutdown in progress, aborting retry.", None),
        ("Exporter already shutdown, ignoring batch", None),
    ],
)
def test_an_exporter_record_in_words(message: str, said: tuple[str, str | None] | None) -> None:
    from zorkmcp.observability import _delivery_problem

    assert _delivery_problem(message) == said
