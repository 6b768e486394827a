"""The README's code is true to the code: its engine example runs against a real loopback LLM."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import trio
from llm_server import LLMServer, Step, content_reply, serve_llm, tool_call, tool_call_reply

if TYPE_CHECKING:
    from collections.abc import Iterator

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)


@contextmanager
def llm_in_thread(*steps: Step) -> Iterator[LLMServer]:
    """The loopback chat-completions server in its own trio loop, for code that runs its own ``trio.run``."""
    ready = threading.Event()
    box: dict[str, object] = {}

    async def run() -> None:
        async with serve_llm(*steps) as server:
            box["server"], box["token"], box["stop"] = (
                server,
                trio.lowlevel.current_trio_token(),
                trio.Event(),
            )
            ready.set()
            stop = box["stop"]
            assert isinstance(stop, trio.Event)
            await stop.wait()

    thread = threading.Thread(target=trio.run, args=(run,), daemon=True)
    thread.start()
    ready.wait()
    server, token, stop = box["server"], box["token"], box["stop"]
    assert isinstance(server, LLMServer)
    assert isinstance(token, trio.lowlevel.TrioToken)
    assert isinstance(stop, trio.Event)
    try:
        yield server
    finally:
        token.run_sync_soon(stop.set)
        thread.join()


def run_example(example: str, server: LLMServer, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "example.py"
    script.write_text(example.replace("http://127.0.0.1:11434/v1", server.base_url), encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )


def test_asyncio_engine_example_runs(tmp_path: Path) -> None:
    (example,) = [block for block in python_blocks() if "asyncio.run(main())" in block]
    thought = {
        "thought": "Pack food first.",
        "thoughtNumber": 1,
        "totalThoughts": 1,
        "nextThoughtNeeded": False,
    }
    with llm_in_thread(
        tool_call_reply(tool_call("thinking__think", thought)),
        content_reply(json.dumps({"summary": "food, blanket, park"})),
    ) as server:
        done = run_example(example, server, tmp_path)
    assert done.returncode == 0, done.stderr
    assert '{"summary": "food, blanket, park"} 2 TurnTimings(' in done.stdout
    assert re.search(r"^thinking\.think ok \d+\.\d ms$", done.stdout, re.MULTILINE), done.stdout
    first = server.requests[0].json
    assert [t["function"]["name"] for t in first["tools"]] == ["thinking__think"]
    assert first["model"] == "llama3.1"


def test_trio_engine_example_runs(tmp_path: Path) -> None:
    (example,) = [block for block in python_blocks() if "trio.run(main)" in block]
    with llm_in_thread(content_reply("Blue."), content_reply("A pear.")) as server:
        done = run_example(example, server, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["Name a colour. -> Blue.", "Name a fruit. -> A pear."]
    assert [[m["content"] for m in r.json["messages"]] for r in server.requests] == [
        ["Name a colour."],
        ["Name a fruit."],
    ]


def test_bridge_example_names_real_api() -> None:
    (example,) = [block for block in python_blocks() if "with Bridge() as bridge" in block]
    namespace: dict[str, object] = {}
    exec(example.split("\n\nwith ")[0], namespace)  # the imports only: a Bridge needs a configured project
    assert callable(namespace["Bridge"])
