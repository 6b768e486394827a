"""Tracing through the real Langfuse SDK (seeds 000 §Langfuse Integration, properties 31, 32).

``pip install "zorkmcp[langfuse]"`` takes any Langfuse from 3.0: early 3.x has only
``start_as_current_span``, 4.x and 5.x only ``start_as_current_observation``. A real turn runs
through a real Langfuse client whose host is a loopback HTTP server that records what it receives
(Langfuse sends OpenTelemetry's OTLP over HTTP); the spans must arrive, nested, with their attributes.
Skipped where Langfuse is not installed (CI installs ``.[dev,ray,langfuse]``: the newest Langfuse).
"""

from __future__ import annotations

import gzip
import inspect
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

import engine_servers
import pytest
import trio
from llm_server import LLMServer, content_reply, tool_call, tool_call_reply

from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.engine import TurnOptions, run_turn
from zorkmcp.llm import open_llm_client
from zorkmcp.mcp import McpManager
from zorkmcp.observability import LangfuseTracer

if TYPE_CHECKING:
    from collections.abc import Iterator

langfuse = pytest.importorskip("langfuse", reason='Langfuse is optional: pip install "zorkmcp[langfuse]"')
trace_service = pytest.importorskip("opentelemetry.proto.collector.trace.v1.trace_service_pb2")

PROBE = ServerConfig(name="p", type="inprocess", module="engine_servers:create_probe_server", timeout=5)
OPENING = [{"role": "system", "content": "play"}, {"role": "user", "content": "West of House"}]


@pytest.fixture(autouse=True)
def _reset_servers() -> None:
    engine_servers.reset_probe()


class Received:
    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.lock = threading.Lock()


@pytest.fixture
def langfuse_host() -> Iterator[tuple[str, Received]]:
    """A loopback HTTP server standing in for the Langfuse host: answers 200, keeps every request."""
    received = Received()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with received.lock:
                received.requests.append((self.path, dict(self.headers), body))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        def log_message(self, format: str, *args: Any) -> None:
            del format, args

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", received
    server.shutdown()
    server.server_close()
    thread.join()


def langfuse_client(host: str, public_key: str) -> Any:
    """A real client of the installed Langfuse, on a tracer provider of its own (not the global one,
    which the other tests use)."""
    from opentelemetry.sdk.trace import TracerProvider

    if "tracer_provider" not in inspect.signature(langfuse.Langfuse).parameters:
        pytest.skip(
            "this Langfuse makes its provider the global one (the span API is checked in a subprocess)"
        )
    return langfuse.Langfuse(
        public_key=public_key, secret_key="sk-lf-test", host=host, tracer_provider=TracerProvider()
    )


def plain(value: dict[str, Any]) -> Any:
    """An OTLP attribute value as Python (Langfuse JSON-encodes metadata values in some versions)."""
    if "boolValue" in value:
        return value["boolValue"]
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return value["doubleValue"]
    text = value.get("stringValue", "")
    try:
        return json.loads(text)
    except ValueError:
        return text


def exported(received: Received) -> list[dict[str, Any]]:
    """The Langfuse spans the host received: name, ids, and attributes, in the order they ended."""
    from google.protobuf.json_format import MessageToDict

    spans = []
    with received.lock:
        requests = list(received.requests)
    for path, headers, body in requests:
        assert path == "/api/public/otel/v1/traces"
        if headers.get("Content-Encoding") == "gzip":  # Langfuse 5 compresses by default
            body = gzip.decompress(body)
        message = trace_service.ExportTraceServiceRequest()
        message.ParseFromString(body)
        for resource in MessageToDict(message).get("resourceSpans", []):
            for scope in resource["scopeSpans"]:
                if scope["scope"]["name"] != "langfuse-sdk":
                    continue  # the MCP SDK's own spans, where Langfuse's provider is the global one
                for span in scope["spans"]:
                    attributes = {a["key"]: plain(a["value"]) for a in span.get("attributes", [])}
                    spans.append(
                        {
                            "name": span["name"],
                            "id": span["spanId"],
                            "parent": span.get("parentSpanId"),
                            "attributes": attributes,
                        }
                    )
    return spans


@pytest.mark.skipif(
    "tracer_provider" not in inspect.signature(langfuse.Langfuse).parameters,
    reason="this Langfuse makes its provider OpenTelemetry's global one, which other tests use "
    "(its span API is checked in a subprocess)",
)
async def test_a_turn_through_the_real_langfuse_sdk(
    llm_server: LLMServer, langfuse_host: tuple[str, Received]
) -> None:
    host, received = langfuse_host
    client = langfuse_client(host, "pk-lf-turn")
    llm_server.script(
        tool_call_reply(tool_call("p__ok", {"tag": "x"}), tool_call("p__fail", {"tag": "y"})),
        content_reply("done"),
    )
    mgr = McpManager(McpConfig(servers=(PROBE,)), McpSettings(enabled=True))
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o") as model:
        result = await run_turn(
            model,
            OPENING,
            open_toolbox=lambda: mgr.open_turn(),
            tracer=LangfuseTracer(client),
            options=TurnOptions(turn=4),
        )
    assert result.content == "done"
    await trio.to_thread.run_sync(client.flush)
    await trio.to_thread.run_sync(client.shutdown)
    ok, fail, session = exported(received)
    assert [span["name"] for span in (ok, fail, session)] == [
        "mcp-tool-p.ok",
        "mcp-tool-p.fail",
        "agent-tool-calling-session",
    ]
    assert session["parent"] is None
    assert (ok["parent"], fail["parent"]) == (session["id"], session["id"])
    meta = "langfuse.observation.metadata."
    assert {key: session["attributes"][meta + key] for key in ("turn", "tools_called", "final_action")} == {
        "turn": 4,
        "tools_called": 2,
        "final_action": "done",
    }
    assert (ok["attributes"][meta + "server_name"], fail["attributes"][meta + "is_error"]) == ("p", True)
    # seeds 000 §Langfuse Integration: the arguments are the input, the result the output
    assert ok["attributes"]["langfuse.observation.input"] == {"tag": "x"}
    assert ok["attributes"]["langfuse.observation.output"] == {"content": {"tag": "x", "seconds": 0.0}}
    assert ok["attributes"][meta + "timeout_seconds"] == 5
    assert session["attributes"][meta + "mcp_enabled"] is True
    assert fail["attributes"]["langfuse.observation.level"] == "ERROR"
    assert fail["attributes"]["langfuse.observation.status_message"] == "the tool call failed"
    for span in (ok, fail, session):
        assert "sk-lf-test" not in json.dumps(span)


SPANS_IN_A_PROCESS_OF_THEIR_OWN = """
import sys
from langfuse import get_client
from zorkmcp.observability import LangfuseTracer, open_tracer
tracer = open_tracer()
assert isinstance(tracer, LangfuseTracer), tracer
with tracer.span("agent-tool-calling-session", turn=1) as session:
    with tracer.span("mcp-tool-p.fail", tool_name="p.fail", input={"tag": "y"}) as call:
        call.update(is_error=True, timed_out=False)
    session.update(iterations_used=1)
get_client().flush()
print("flushed")
"""


def test_the_span_api_of_the_installed_langfuse(langfuse_host: tuple[str, Received]) -> None:
    """open_tracer() and LangfuseTracer with whichever Langfuse is installed (3.x, 4.x, 5.x), in a
    process of its own: the keys and the host come from the environment, as a user sets them."""
    host, received = langfuse_host
    env = {
        **os.environ,
        "LANGFUSE_PUBLIC_KEY": "pk-lf-process",
        "LANGFUSE_SECRET_KEY": "sk-lf-test",
        "LANGFUSE_HOST": host,  # 3.x
        "LANGFUSE_BASE_URL": host,  # 4.x, 5.x (LANGFUSE_HOST still works)
    }
    done = subprocess.run(
        [sys.executable, "-c", SPANS_IN_A_PROCESS_OF_THEIR_OWN],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    assert (done.returncode, done.stdout) == (0, "flushed\n"), done.stderr
    call, session = exported(received)
    assert (call["name"], session["name"]) == ("mcp-tool-p.fail", "agent-tool-calling-session")
    assert (session["parent"], call["parent"]) == (None, session["id"])
    meta = "langfuse.observation.metadata."
    assert call["attributes"][meta + "is_error"] is True
    assert session["attributes"][meta + "iterations_used"] == 1
