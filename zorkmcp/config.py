"""Settings (``pyproject.toml`` ``[tool.zorkgpt.*]``) and MCP server configuration (``mcp_config.json``).

SHELL: the models below are the fixed public surface; loading and validation are being written.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from attrs import field, frozen

__all__ = [
    "DEFAULT_MAX_RESULT_BYTES",
    "FilesSettings",
    "LLMSettings",
    "McpConfig",
    "McpSettings",
    "OrchestratorSettings",
    "RetrySettings",
    "SamplingSettings",
    "ServerConfig",
    "Settings",
]

DEFAULT_MAX_RESULT_BYTES = 64 * 1024


@frozen(kw_only=True)
class McpSettings:
    """``[tool.zorkgpt.mcp]`` (seeds 000 §Configuration; Requirement 13 defaults)."""

    enabled: bool = False
    config_file: str = "mcp_config.json"
    max_tool_iterations: int = 20
    tool_call_timeout_seconds: float = 30
    server_startup_timeout_seconds: float = 10
    force_tool_support: bool = False
    max_result_bytes: int = DEFAULT_MAX_RESULT_BYTES
    turn_timeout_seconds: float | None = None


@frozen(kw_only=True)
class LLMSettings:
    """``[tool.zorkgpt.llm]``: where the agent's model lives."""

    client_base_url: str | None = None
    agent_model: str | None = None
    agent_base_url: str | None = None
    api_key_env: str | None = None


@frozen(kw_only=True)
class RetrySettings:
    """``[tool.zorkgpt.retry]``."""

    max_retries: int = 5
    initial_delay: float = 1.0
    max_delay: float = 60.0
    exponential_base: float = 2.0
    jitter_factor: float = 0.1
    timeout_seconds: float = 120.0
    retry_on_timeout: bool = True
    retry_on_rate_limit: bool = True
    retry_on_server_error: bool = True


@frozen(kw_only=True)
class SamplingSettings:
    """``[tool.zorkgpt.agent_sampling]``."""

    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    min_p: float | None = None
    max_tokens: int | None = None


@frozen(kw_only=True)
class FilesSettings:
    """``[tool.zorkgpt.files]``."""

    game_file_path: str | None = None
    json_log_file: str = "logs/zorkmcp_events.jsonl"
    episode_log_file: str = "logs/episode.log"


@frozen(kw_only=True)
class OrchestratorSettings:
    """``[tool.zorkgpt.orchestrator]``."""

    max_turns_per_episode: int = 500


@frozen(kw_only=True)
class Settings:
    """Everything read from one ``pyproject.toml``; ``Settings()`` is the embedded defaults."""

    mcp: McpSettings = field(factory=McpSettings)
    llm: LLMSettings = field(factory=LLMSettings)
    retry: RetrySettings = field(factory=RetrySettings)
    agent_sampling: SamplingSettings = field(factory=SamplingSettings)
    files: FilesSettings = field(factory=FilesSettings)
    orchestrator: OrchestratorSettings = field(factory=OrchestratorSettings)
    source: Path | None = None
    """The pyproject.toml these came from (``None`` for embedded defaults)."""


@frozen(kw_only=True)
class ServerConfig:
    """One entry of ``mcpServers`` (or ``servers``) in ``mcp_config.json``."""

    name: str
    type: Literal["stdio", "inprocess"] = "stdio"
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(factory=dict)
    cwd: str | None = None
    module: str | None = None
    """``package.module:factory`` for ``type = "inprocess"``."""
    disabled: bool = False
    lifecycle: Literal["per_turn", "per_episode"] = "per_turn"
    timeout: float | None = None
    """Seconds per tool call; overrides ``tool_call_timeout_seconds``."""
    tools: tuple[str, ...] | None = None
    """Allow-list of tool names; ``None`` offers every tool."""


@frozen(kw_only=True)
class McpConfig:
    """A whole ``mcp_config.json``: the servers in file order."""

    servers: tuple[ServerConfig, ...]
    source: Path | None = None

    @property
    def enabled_servers(self) -> tuple[ServerConfig, ...]:
        return tuple(s for s in self.servers if not s.disabled)
