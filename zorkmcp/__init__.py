"""zorkmcp: a structured-concurrency engine for LLM agents that use MCP tools (trio first, asyncio too).

The public names below are imported lazily (PEP 562): ``python -m zorkmcp.servers.thinking`` runs
through this package on every per-turn spawn, and must not pay for importing trio, attrs or the MCP
SDK (about a second). ``from zorkmcp import run_turn`` works as usual.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # the turn engine
    "run_turn": "zorkmcp.engine",
    "run_tool_loop": "zorkmcp.engine",
    "TurnOptions": "zorkmcp.engine",
    "TurnResult": "zorkmcp.engine",
    "TurnTimings": "zorkmcp.engine",
    "ToolCallRecord": "zorkmcp.engine",
    "ToolSource": "zorkmcp.engine",
    "FORCE_FINAL_MESSAGE": "zorkmcp.engine",
    # the Zork agent
    "ZorkAgent": "zorkmcp.agent",
    "AgentAction": "zorkmcp.agent",
    "AgentResponse": "zorkmcp.agent",
    # MCP
    "McpManager": "zorkmcp.mcp",
    "EpisodeServers": "zorkmcp.mcp",
    "Toolbox": "zorkmcp.mcp",
    "ToolInfo": "zorkmcp.mcp",
    "ToolCallResult": "zorkmcp.mcp",
    "open_toolbox": "zorkmcp.mcp",
    # LLM
    "ChatModel": "zorkmcp.llm",
    "CompletionRequest": "zorkmcp.llm",
    "LLMClient": "zorkmcp.llm",
    "LLMResponse": "zorkmcp.llm",
    "ToolCall": "zorkmcp.llm",
    "FunctionCall": "zorkmcp.llm",
    "ScriptedModel": "zorkmcp.llm",
    "open_chat_model": "zorkmcp.llm",
    "open_llm_client": "zorkmcp.llm",
    "supports_tool_calling": "zorkmcp.llm",
    # configuration
    "Settings": "zorkmcp.config",
    "McpSettings": "zorkmcp.config",
    "McpConfig": "zorkmcp.config",
    "ServerConfig": "zorkmcp.config",
    # observability
    "EventRecorder": "zorkmcp.observability",
    "EventSink": "zorkmcp.observability",
    # errors
    "ZorkMCPError": "zorkmcp.errors",
    "MCPError": "zorkmcp.errors",
    "ConfigError": "zorkmcp.errors",
    "MCPServerStartupError": "zorkmcp.errors",
    "MCPToolCallError": "zorkmcp.errors",
    "ModelCompatibilityError": "zorkmcp.errors",
    "LLMError": "zorkmcp.errors",
    "GameError": "zorkmcp.errors",
}

__all__ = ["__version__", *sorted(_EXPORTS)]
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from .agent import AgentAction as AgentAction
    from .agent import AgentResponse as AgentResponse
    from .agent import ZorkAgent as ZorkAgent
    from .config import McpConfig as McpConfig
    from .config import McpSettings as McpSettings
    from .config import ServerConfig as ServerConfig
    from .config import Settings as Settings
    from .engine import FORCE_FINAL_MESSAGE as FORCE_FINAL_MESSAGE
    from .engine import ToolCallRecord as ToolCallRecord
    from .engine import ToolSource as ToolSource
    from .engine import TurnOptions as TurnOptions
    from .engine import TurnResult as TurnResult
    from .engine import TurnTimings as TurnTimings
    from .engine import run_tool_loop as run_tool_loop
    from .engine import run_turn as run_turn
    from .errors import ConfigError as ConfigError
    from .errors import GameError as GameError
    from .errors import LLMError as LLMError
    from .errors import MCPError as MCPError
    from .errors import MCPServerStartupError as MCPServerStartupError
    from .errors import MCPToolCallError as MCPToolCallError
    from .errors import ModelCompatibilityError as ModelCompatibilityError
    from .errors import ZorkMCPError as ZorkMCPError
    from .llm import ChatModel as ChatModel
    from .llm import CompletionRequest as CompletionRequest
    from .llm import FunctionCall as FunctionCall
    from .llm import LLMClient as LLMClient
    from .llm import LLMResponse as LLMResponse
    from .llm import ScriptedModel as ScriptedModel
    from .llm import ToolCall as ToolCall
    from .llm import open_chat_model as open_chat_model
    from .llm import open_llm_client as open_llm_client
    from .llm import supports_tool_calling as supports_tool_calling
    from .mcp import EpisodeServers as EpisodeServers
    from .mcp import McpManager as McpManager
    from .mcp import Toolbox as Toolbox
    from .mcp import ToolCallResult as ToolCallResult
    from .mcp import ToolInfo as ToolInfo
    from .mcp import open_toolbox as open_toolbox
    from .observability import EventRecorder as EventRecorder
    from .observability import EventSink as EventSink
