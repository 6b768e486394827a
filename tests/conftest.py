"""Shared test configuration."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
import trio.testing
from backends import AUTOJUMP_THRESHOLD
from hypothesis import HealthCheck, settings

from zorkmcp.game import PACKAGED_GAME

if TYPE_CHECKING:
    from pathlib import Path

# Property tests run at least 100 examples everywhere (the seeds' testing strategy, 001).
settings.register_profile(
    "ci",
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("ci")

# The loopback chat-completions server (tests/llm_server.py) as the `llm_server` fixture.
pytest_plugins = ["llm_server"]


@pytest.fixture(autouse=True)
def _no_openai_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    """``OPENAI_BASE_URL`` set on the machine would move every model the tests leave at its default."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.fixture
def zork1() -> Path:
    """The real Zork I (Microsoft's MIT release 119) that ships with the package: never missing."""
    return PACKAGED_GAME


@pytest.fixture
def autojump_clock() -> trio.testing.MockClock:
    """Virtual time (see :data:`backends.AUTOJUMP_THRESHOLD` for why the threshold is not zero)."""
    return trio.testing.MockClock(autojump_threshold=AUTOJUMP_THRESHOLD)
