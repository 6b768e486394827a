"""Section 3: the sync boundary — ``trio.run`` per call against a call into a long-lived loop.

* no-op: ``trio.run(noop)`` vs ``portal.call(noop)`` on an anyio blocking portal with the trio
  backend (what ``bridge.Bridge`` runs its episode in);
* a small turn: one whole agent turn with the offline scripted model and no MCP servers
  (messages, the tool loop, the model's answer, parsing), either as ``bridge.get_action()`` runs it
  (a fresh ``trio.run`` that opens the chat model) or through a real ``bridge.Bridge.get_action``.

All four interleaved, order rotated every round. Times are the caller's view (``perf_counter``
around the blocking call).
"""

from __future__ import annotations

import time
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import trio
from _benchlib import Report, Section, Stats, run_interleaved, setting
from anyio.from_thread import start_blocking_portal

from bridge import Bridge, EpisodeSetup
from zorkmcp.config import Settings
from zorkmcp.llm import ScriptedModel

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from zorkmcp.agent import AgentAction

CALLS = setting("ZORKMCP_BENCH_CALLS")
WARMUP = 10
STATE = "West of House\nYou are standing in an open field west of a white house, with a boarded front door."
LABELS = {
    "trio_run_noop": "trio.run(noop)",
    "portal_noop": "portal.call(noop)  [anyio, trio backend]",
    "trio_run_turn": "small turn: get_action()-style trio.run",
    "bridge_turn": "small turn: Bridge.get_action (portal)",
}


@asynccontextmanager
async def _scripted() -> AsyncIterator[ScriptedModel]:
    yield ScriptedModel(["open mailbox"] * 10_000, tool_every=0)


async def _noop() -> None:
    pass


async def _cold_turn(setup: EpisodeSetup) -> AgentAction:
    """``bridge.get_action()``'s body: the model is opened for the call (no MCP servers here)."""
    turn = setup.next_turn()
    async with setup.chat_model() as model:
        return await setup.agent(model).generate_action(STATE, None, turn=turn)


def _timed(run: Callable[[], object], after: Callable[[], object] | None = None) -> Callable[[], float]:
    def sample() -> float:
        start = time.perf_counter()
        run()
        elapsed = (time.perf_counter() - start) * 1000
        if after is not None:
            after()
        return elapsed

    return sample


def test_sync_boundary(report: Report) -> None:
    began = time.perf_counter()
    settings = Settings()
    setup = EpisodeSetup.create(settings, agent_tools=False, chat_model=_scripted, log_files=None)
    with (
        start_blocking_portal(backend="trio") as portal,
        Bridge(settings, agent_tools=False, chat_model=_scripted, log_files=None) as bridge,
    ):
        variants = {
            "trio_run_noop": _timed(lambda: trio.run(_noop)),
            "portal_noop": _timed(lambda: portal.call(_noop)),
            "trio_run_turn": _timed(lambda: trio.run(_cold_turn, setup), setup.recorder.drain),
            "bridge_turn": _timed(lambda: bridge.get_action(STATE), bridge.recorder.drain),
        }
        samples = run_interleaved(variants, CALLS, warmup=WARMUP)
    section = Section(
        number=3,
        title=f"Sync boundary: trio.run per call vs Bridge's portal ({CALLS} calls each, interleaved; ms)",
        columns=["call", "p50", "p95", "mean", "vs trio.run p50"],
    )
    figures: dict[str, Any] = {"calls": CALLS, "warmup": WARMUP, "variants": {}}
    pairs = {"trio_run_noop": "trio_run_noop", "portal_noop": "trio_run_noop"}
    pairs |= {"trio_run_turn": "trio_run_turn", "bridge_turn": "trio_run_turn"}
    for name, label in LABELS.items():
        stats = Stats.of(samples[name])
        reference = Stats.of(samples[pairs[name]])
        figures["variants"][name] = {"label": label, **stats.as_json(samples[name])}
        section.rows.append(
            [
                label,
                f"{stats.p50:.3f}",
                f"{stats.p95:.3f}",
                f"{stats.mean:.3f}",
                f"{stats.p50 - reference.p50:+.3f}",
            ]
        )
    section.notes = [
        "small turn: build messages, one scripted-model completion, parse the JSON action (no MCP "
        "servers, no network); the trio.run form also opens the chat model, as get_action() does."
    ]
    section.figures = figures
    section.seconds = time.perf_counter() - began
    report.add(section)
