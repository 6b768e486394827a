"""An event listener that raises: removed and said once, never the engine's failure.

``EventRecorder`` listeners are called from whichever task reports, the MCP layer's background
tasks included (a ``Bridge``'s prewarmed servers start and stop there). A listener's exception must
neither break the episode nor vanish. A real ``Bridge`` with a real stdio MCP server and the
loopback LLM server in a thread of its own.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import pytest
from llm_server import agent_reply
from test_bridge import llm_in_thread, misbehaving_server, write_config

import bridge
from zorkmcp.observability import EventRecorder

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@pytest.fixture(autouse=True)
def _fresh_episode() -> Iterator[None]:
    bridge.reset()
    yield
    bridge.reset()


class Raising:
    """A listener that raises ``ValueError`` on one event type (and keeps what it was told)."""

    def __init__(self, event_type: str) -> None:
        self.event_type = event_type
        self.seen: list[str] = []

    def emit(self, event_type: str, /, **fields: Any) -> None:
        del fields
        self.seen.append(event_type)
        if event_type == self.event_type:
            raise ValueError("listener boom")

    def log(self, level: str, message: str, /) -> None:
        del level, message


class Keeping:
    """A well-behaved listener: keeps the event types and log lines it is told."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.lines: list[str] = []

    def emit(self, event_type: str, /, **fields: Any) -> None:
        del fields
        self.events.append(event_type)

    def log(self, level: str, message: str, /) -> None:
        self.lines.append(f"[{level}] {message}")


def report(event_type: str) -> str:
    return (
        f"event listener test_listener_faults.Raising raised ValueError: listener boom on the event "
        f"'{event_type}'; it was removed and gets no more events (a listener must not raise)"
    )


@pytest.mark.parametrize("event_type", ["mcp_server_started", "mcp_server_stopped"])
def test_a_listener_that_raises_in_a_bridge_is_removed_and_said_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, event_type: str
) -> None:
    # mcp_server_started: a prewarmed spare's start (it broke the spare's task: the turn failed, the
    # next found the episode's task group closed); mcp_server_stopped: a used session closed in the
    # background after its turn (the exception was lost).
    raising, keeping = Raising(event_type), Keeping()
    recorder = EventRecorder()
    recorder.add_listener(raising)
    recorder.add_listener(keeping)
    caplog.set_level(logging.ERROR, logger="zorkmcp.observability")
    with llm_in_thread(agent_reply("north"), agent_reply("south"), agent_reply("east")) as llm:
        pyproject = write_config(tmp_path, llm.base_url, {"bad": misbehaving_server()})
        with bridge.Bridge(pyproject=pyproject, recorder=recorder) as episode:
            actions = [episode.get_action("West of House.")["action"] for _ in range(3)]
    assert actions == ["north", "south", "east"]
    assert raising.seen.count(event_type) == 1  # removed after it raised: told nothing more
    assert raising.seen[-1] == event_type
    # The others got that event, and every other one, and the report.
    assert sorted(keeping.events) == sorted(e["event_type"] for e in recorder.recent)
    assert keeping.events.count("mcp_session_complete") == 3
    assert keeping.events.count(event_type) >= 3  # one per turn (and the spare no turn took, if it started)
    assert keeping.lines.count(f"[ERROR] {report(event_type)}") == 1
    episode_log = (tmp_path / "logs" / "episode.log").read_text()
    assert episode_log.count(f"[ERROR] {report(event_type)}\n") == 1
    [record] = caplog.records
    assert (record.name, record.levelname, record.getMessage()) == (
        "zorkmcp.observability",
        "ERROR",
        report(event_type),
    )
    assert record.exc_info is not None
    assert repr(record.exc_info[1]) == "ValueError('listener boom')"


def test_a_listener_that_raises_on_a_line_is_removed_and_the_others_hear_why() -> None:
    # An Exception: removed and said; a KeyboardInterrupt is no fault of a listener's: it goes through.
    class RaisingOnLines(Keeping):
        def log(self, level: str, message: str, /) -> None:
            super().log(level, message)
            raise OSError(28, "No space left on device")

    class Interrupted(Keeping):
        def emit(self, event_type: str, /, **fields: Any) -> None:
            super().emit(event_type, **fields)
            raise KeyboardInterrupt

    raising, keeping = RaisingOnLines(), Keeping()
    recorder = EventRecorder(context={"episode_id": "ep-1"})
    recorder.add_listener(raising)
    recorder.add_listener(keeping)
    recorder.log("WARNING", "careful")
    recorder.log("INFO", "after")
    recorder.emit("mcp_no_content", iterations=1)
    said = (
        "event listener test_listener_faults.test_a_listener_that_raises_on_a_line_is_removed_and_the_"
        "others_hear_why.<locals>.RaisingOnLines raised OSError: [Errno 28] No space left on device on an "
        "episode-log line (WARNING); it was removed and gets no more events (a listener must not raise)"
    )
    assert raising.lines == ["[WARNING] careful"]
    assert raising.events == []
    assert keeping.lines == ["[WARNING] careful", f"[ERROR] {said}", "[INFO] after"]
    assert keeping.events == ["mcp_no_content"]
    assert recorder.lines == ["[WARNING] careful", f"[ERROR] {said}", "[INFO] after"]

    interrupted = Interrupted()
    recorder.add_listener(interrupted)
    with pytest.raises(KeyboardInterrupt):
        recorder.emit("mcp_no_content", iterations=2)
    assert [e["iterations"] for e in recorder.events] == [1, 2]  # stored before the listeners ran
    with pytest.raises(KeyboardInterrupt):  # still a listener: nothing was said, nothing removed
        recorder.emit("mcp_no_content", iterations=3)
    assert interrupted.events == ["mcp_no_content", "mcp_no_content"]
    assert len(recorder.lines) == 3
