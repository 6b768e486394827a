"""One event stream: every event reaches the log files through ``get_action()`` and ``Bridge`` alike.

Also the episode's plain state that ``get_action()`` keeps between its ``trio.run`` calls (the
scripted model's place in its walkthrough, the turn number), and a ``Bridge`` whose memory stays flat
because the events are written out after every call. Called from plain synchronous test functions, as
an orchestrator calls them; the loopback LLM runs in a thread of its own (``get_action`` blocks).
"""

from __future__ import annotations

import json
import textwrap
from typing import TYPE_CHECKING, Any

import pytest
from llm_server import agent_reply, rate_limited
from test_bridge import llm_in_thread

import bridge

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


@pytest.fixture(autouse=True)
def _fresh_episode() -> Iterator[None]:
    bridge.reset()
    yield
    bridge.reset()


def project(folder: Path, llm: str = "") -> Path:
    """A pyproject without MCP whose logs go to ``folder/logs``; ``llm`` adds a [tool.zorkgpt.llm] table."""
    pyproject = folder / "pyproject.toml"
    pyproject.write_text(
        textwrap.dedent(f"""\
            {llm}
            [tool.zorkgpt.retry]
            max_retries = 2

            [tool.zorkgpt.files]
            json_log_file = "{folder / "logs" / "events.jsonl"}"
            episode_log_file = "{folder / "logs" / "episode.log"}"
            """)
    )
    return pyproject


def logged(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (folder / "logs" / "events.jsonl").read_text().splitlines()]


def test_llm_retry_reaches_the_event_log_through_get_action(tmp_path: Path) -> None:
    with llm_in_thread(rate_limited(retry_after=0), agent_reply("open mailbox")) as llm:
        table = f'[tool.zorkgpt.llm]\nclient_base_url = "{llm.base_url}"\nagent_model = "gpt-4o"\n'
        pyproject = project(tmp_path, table)
        step = bridge.get_action("West of House.", pyproject=pyproject)
    assert step["action"] == "open mailbox"
    (retry,) = [e for e in logged(tmp_path) if e["event_type"] == "llm_retry"]
    assert (retry["retry"], retry["max_retries"], retry["kind"], retry["status"]) == (1, 2, "rate_limit", 429)
    assert retry["turn"] == 1
    assert "retry 1/2 in 0.00s (Retry-After)" in (tmp_path / "logs" / "episode.log").read_text()


def test_llm_retry_reaches_the_event_log_through_bridge(tmp_path: Path) -> None:
    with llm_in_thread(agent_reply("north"), rate_limited(retry_after=0), agent_reply("south")) as llm:
        table = f'[tool.zorkgpt.llm]\nclient_base_url = "{llm.base_url}"\nagent_model = "gpt-4o"\n'
        with bridge.Bridge(pyproject=project(tmp_path, table)) as episode:
            actions = [episode.get_action("West of House.")["action"] for _ in range(2)]
            # Written out after each call: nothing waits in memory for the end of the episode.
            assert [e["turn"] for e in logged(tmp_path) if e["event_type"] == "llm_retry"] == [2]
            assert episode.recorder.events == []
    assert actions == ["north", "south"]


def test_get_action_keeps_the_scripted_models_place_and_says_so_once(tmp_path: Path) -> None:
    """No API key: the offline scripted model plays; its walkthrough goes on from call to call."""
    pyproject = project(tmp_path, '[tool.zorkgpt.llm]\napi_key_env = "ZORKMCP_TEST_NO_SUCH_KEY"\n')
    actions = [bridge.get_action("West of House.", pyproject=pyproject)["action"] for _ in range(3)]
    assert actions == ["open mailbox", "take leaflet", "read leaflet"]
    events = logged(tmp_path)
    assert [e["event_type"] for e in events].count("llm_offline_model") == 1
    assert sorted({e["turn"] for e in events if e["event_type"] == "mcp_session_complete"}) == [1, 2, 3]
    assert (tmp_path / "logs" / "episode.log").read_text().count("OFFLINE SCRIPTED MODEL") == 1

    bridge.reset()  # a new episode starts the walkthrough again
    assert bridge.get_action("West of House.", pyproject=pyproject)["action"] == "open mailbox"
    starts = [e for e in logged(tmp_path) if e["event_type"] == "llm_offline_model"]
    assert len(starts) == 2
    assert starts[0]["episode_id"] != starts[1]["episode_id"]


def test_a_long_bridge_episode_holds_no_events_in_memory(tmp_path: Path) -> None:
    pyproject = project(tmp_path, '[tool.zorkgpt.llm]\napi_key_env = "ZORKMCP_TEST_NO_SUCH_KEY"\n')
    with bridge.Bridge(pyproject=pyproject) as episode:
        for _ in range(40):
            episode.get_action("West of House.")
            assert episode.recorder.events == []
            assert episode.recorder.lines == []
        assert len(episode.recorder.recent) <= episode.recorder.limit
    completed = [e for e in logged(tmp_path) if e["event_type"] == "mcp_session_complete"]
    assert [e["turn"] for e in completed] == list(range(1, 41))
    lines = (tmp_path / "logs" / "episode.log").read_text().splitlines()
    episode_id = completed[0]["episode_id"]
    assert all(line.startswith(f"{episode_id} [") for line in lines)  # which episode said it
