"""Properties 26–27: a failed start raises on the first turn; later it is retried once, then the
server is disabled for the episode — checked against a small model over random start outcomes."""

from __future__ import annotations

import trio
import trio.testing
from backends import AUTOJUMP_THRESHOLD
from hypothesis import given
from hypothesis import strategies as st
from scripted_servers import OUTCOMES

from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.errors import MCPServerStartupError
from zorkmcp.mcp import McpManager

NAMES = ("a", "b")
SERVERS = tuple(
    ServerConfig(name=name, type="inprocess", module=f"scripted_servers:create_{name}") for name in NAMES
)
TURNS = 4


def model(outcomes: dict[str, list[bool]]) -> list[tuple[bool, set[str], set[str]]]:
    """Per turn: (raised, disabled, running). Stops after a raising first turn."""
    queues = {name: list(outcomes[name]) for name in NAMES}
    disabled: set[str] = set()
    expected = []
    for turn in range(1, TURNS + 1):
        running: set[str] = set()
        failed_first = False
        for name in NAMES:
            if name in disabled:
                continue
            if queues[name].pop(0):
                running.add(name)
            elif turn == 1:
                failed_first = True
            elif queues[name].pop(0):
                running.add(name)
            else:
                disabled.add(name)
        if failed_first:
            expected.append((True, set(), set()))
            return expected
        expected.append((False, set(disabled), running))
    return expected


async def play(manager: McpManager) -> list[tuple[bool, set[str], set[str]]]:
    seen = []
    for _ in range(TURNS):
        try:
            async with manager.open_turn() as toolbox:
                running = set(toolbox.servers)
        except MCPServerStartupError:
            seen.append((True, set(), set()))
            return seen
        seen.append((False, {n for n in NAMES if manager.is_server_disabled(n)}, running))
    return seen


@given(
    outcomes=st.fixed_dictionaries(
        {name: st.lists(st.booleans(), min_size=2 * TURNS, max_size=2 * TURNS) for name in NAMES}
    )
)
def test_start_failures_follow_the_policy(outcomes: dict[str, list[bool]]) -> None:
    for name in NAMES:
        OUTCOMES[name] = list(outcomes[name])
    manager = McpManager(McpConfig(servers=SERVERS), McpSettings(enabled=True))
    seen = trio.run(play, manager, clock=trio.testing.MockClock(autojump_threshold=AUTOJUMP_THRESHOLD))
    expected = model(outcomes)
    assert seen == expected
    disabled_at_end = expected[-1][1]
    assert manager.is_disabled == (disabled_at_end == set(NAMES))
