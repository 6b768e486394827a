"""Settings (``pyproject.toml`` ``[tool.zorkgpt.*]``) and MCP server configuration (``mcp_config.json``).

One module per concern:

* ``_settings``: the ``[tool.zorkgpt.*]`` sections and the embedded defaults of ``zorkmcp play``;
* ``_servers``: the ``mcp_config.json`` format (and VS Code's and Cursor's), with ``${VAR}`` expansion;
* ``_convert``: the strict cattrs converter, the range validators and the error lines;
* ``_checks``: whether a stdio server's command is on ``PATH`` and its ``cwd`` exists.

Every problem is a :class:`~zorkmcp.errors.ConfigError` whose message names the file and the key.
The classes built in Python check their values as well (``McpSettings(enabled="yes")``, two servers
with one name in ``McpConfig``): a ``ConfigError`` naming the attribute. Paths may be given as a
``str`` or any ``os.PathLike``.
"""

from __future__ import annotations

from ._servers import REMOTE_TYPES as REMOTE_TYPES
from ._servers import McpConfig as McpConfig
from ._servers import RemoteKind as RemoteKind
from ._servers import ServerConfig as ServerConfig
from ._servers import remote_kind as remote_kind
from ._settings import DEFAULT_MAX_RESULT_BYTES as DEFAULT_MAX_RESULT_BYTES
from ._settings import EMBEDDED_MCP_CONFIG as EMBEDDED_MCP_CONFIG
from ._settings import MAX_SECONDS as MAX_SECONDS
from ._settings import FilesSettings as FilesSettings
from ._settings import LLMSettings as LLMSettings
from ._settings import McpSettings as McpSettings
from ._settings import OrchestratorSettings as OrchestratorSettings
from ._settings import RetrySettings as RetrySettings
from ._settings import SamplingSettings as SamplingSettings
from ._settings import Settings as Settings
from ._settings import check_settings_file as check_settings_file

__all__ = [
    "DEFAULT_MAX_RESULT_BYTES",
    "EMBEDDED_MCP_CONFIG",
    "MAX_SECONDS",
    "REMOTE_TYPES",
    "FilesSettings",
    "LLMSettings",
    "McpConfig",
    "McpSettings",
    "OrchestratorSettings",
    "RemoteKind",
    "RetrySettings",
    "SamplingSettings",
    "ServerConfig",
    "Settings",
    "check_settings_file",
    "remote_kind",
]
