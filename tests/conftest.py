"""Shared test configuration."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

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
