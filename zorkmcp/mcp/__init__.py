"""The MCP layer: server sessions over stdio or in-process, the federated toolbox, the failure policy.

Everything here is owned through ``async with``::

    manager = McpManager(config, settings)            # plain object, lives for the episode
    async with manager.open_turn() as toolbox:        # servers start concurrently
        tools = toolbox.openai_tools()                # for the chat completion
        result = await toolbox.call_tool("thinking__think", {...})
    # every server process of the turn (and its children) is gone here
"""

from __future__ import annotations

from ._env import SECRET_MARKERS as SECRET_MARKERS
from ._env import build_server_env as build_server_env
from ._manager import EpisodeServers as EpisodeServers
from ._manager import McpManager as McpManager
from ._manager import open_toolbox as open_toolbox
from ._manager import open_zygotes as open_zygotes
from ._names import WIRE_NAME_PATTERN as WIRE_NAME_PATTERN
from ._names import assign_wire_names as assign_wire_names
from ._names import canonical_name as canonical_name
from ._results import ToolCallResult as ToolCallResult
from ._results import convert_call_result as convert_call_result
from ._sampling import ModelSampler as ModelSampler
from ._sampling import Sample as Sample
from ._sampling import Sampler as Sampler
from ._sampling import SamplingError as SamplingError
from ._schema import SchemaTranslation as SchemaTranslation
from ._schema import translate_schema as translate_schema
from ._session import ServerHandle as ServerHandle
from ._session import ServerSession as ServerSession
from ._session import open_server_session as open_server_session
from ._session import start_server as start_server
from ._stdio import ProcessInfo as ProcessInfo
from ._stdio import open_stdio_transport as open_stdio_transport
from ._tools import Toolbox as Toolbox
from ._tools import ToolInfo as ToolInfo
from ._tools import ToolTable as ToolTable
from ._tools import build_tool_infos as build_tool_infos
from ._zygote import ZygoteGroup as ZygoteGroup

__all__ = [
    "SECRET_MARKERS",
    "WIRE_NAME_PATTERN",
    "EpisodeServers",
    "McpManager",
    "ModelSampler",
    "ProcessInfo",
    "Sample",
    "Sampler",
    "SamplingError",
    "SchemaTranslation",
    "ServerHandle",
    "ServerSession",
    "ToolCallResult",
    "ToolInfo",
    "ToolTable",
    "Toolbox",
    "ZygoteGroup",
    "assign_wire_names",
    "build_server_env",
    "build_tool_infos",
    "canonical_name",
    "convert_call_result",
    "open_server_session",
    "open_stdio_transport",
    "open_toolbox",
    "open_zygotes",
    "start_server",
    "translate_schema",
]
