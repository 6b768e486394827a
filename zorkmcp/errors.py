"""The exception tree of zorkmcp.

Every error the package raises on purpose derives from :class:`ZorkMCPError`::

    ZorkMCPError
    ├── MCPError                    anything about MCP (the seeds' root, 000 §MCPError)
    │   ├── ConfigError             bad settings or mcp_config.json (names file and key/JSON path)
    │   ├── MCPServerStartupError   a server did not start (command, exit status, stderr tail)
    │   ├── MCPToolCallError        a tool call failed in a way the caller must see
    │   ├── SamplingError           a server's sampling request refused (zorkmcp.mcp; the server is told)
    │   └── ModelCompatibilityError the model cannot call tools (Requirement 12.5)
    ├── LLMError                    the chat-completions endpoint misbehaved
    │   ├── LLMHTTPError            non-2xx status
    │   ├── LLMResponseError        2xx, but not a usable completion (HTML, non-JSON, no choices)
    │   ├── LLMProviderError        a provider error object inside a 200
    │   ├── LLMTransportError       connect errors and timeouts, after retries ran out
    │   └── CassetteMismatchError   a replayed episode sent a request the cassette does not have next
    ├── CassetteError               a cassette file is missing, truncated or not a cassette
    ├── GameError                   the game file or the interpreter
    └── RunStopped                  a run cannot go on (says why, what to mend; --resume plays the rest)
        └── RunWriteError           ``zorkmcp eval`` or ``play`` cannot write a file of its run (names it)

Nurseries wrap what crosses them in exception groups; :func:`exception_leaves` lists what is inside.
"""

from __future__ import annotations

__all__ = [
    "CassetteError",
    "CassetteMismatchError",
    "ConfigError",
    "GameError",
    "LLMError",
    "LLMHTTPError",
    "LLMProviderError",
    "LLMResponseError",
    "LLMTransportError",
    "MCPError",
    "MCPServerStartupError",
    "MCPToolCallError",
    "ModelCompatibilityError",
    "RunStopped",
    "RunWriteError",
    "ZorkMCPError",
    "exception_leaves",
]


class ZorkMCPError(Exception):
    """Root of every error zorkmcp raises on purpose."""


class MCPError(ZorkMCPError):
    """Base exception for MCP-related errors (the seeds' ``MCPError``)."""


class ConfigError(MCPError):
    """Settings or ``mcp_config.json`` are unusable; the message names the file and the key."""


class MCPServerStartupError(MCPError):
    """An MCP server failed to start (spawn, initialize or list_tools).

    Attributes:
        server: the server's name in ``mcp_config.json``.
        command: the command line that was run.
        exit_status: the process's exit status if it exited, else ``None``.
        stderr_tail: the last lines the server wrote to stderr.
    """

    def __init__(
        self,
        message: str,
        *,
        server: str = "",
        command: str = "",
        exit_status: int | None = None,
        stderr_tail: tuple[str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.server = server
        self.command = command
        self.exit_status = exit_status
        self.stderr_tail = stderr_tail


class MCPToolCallError(MCPError):
    """Raised when a tool call fails in a way that cannot become an error result."""


class ModelCompatibilityError(MCPError):
    """The configured model does not support tool calling (Requirement 12.5)."""


class LLMError(ZorkMCPError):
    """The chat-completions endpoint did not give a usable answer.

    Attributes:
        status: the HTTP status, or ``None`` when no response arrived.
        provider_message: the provider's own error text, if it sent one.
        body_excerpt: the first few hundred characters of the body.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        provider_message: str | None = None,
        body_excerpt: str = "",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.provider_message = provider_message
        self.body_excerpt = body_excerpt


class LLMHTTPError(LLMError):
    """The endpoint answered with a non-2xx status."""


class LLMResponseError(LLMError):
    """A 2xx answer that is not a usable completion (HTML, not JSON, no ``choices``)."""


class LLMProviderError(LLMError):
    """A provider error object inside a 200 answer (OpenRouter does this)."""


class LLMTransportError(LLMError):
    """Connect errors and timeouts that outlived the retries."""


class CassetteMismatchError(LLMError):
    """During a replay the engine sent a request the cassette does not have next (names turn and field)."""


class CassetteError(ZorkMCPError):
    """A cassette file is missing, truncated, or not a zorkmcp cassette (the message names the file)."""


class GameError(ZorkMCPError):
    """The game file is missing or unreadable, or the interpreter failed."""


class RunStopped(ZorkMCPError):
    """A run cannot go on: ``zorkmcp eval`` stops it, keeps what finished and says how to play the rest.

    The message says why; :attr:`remedy` says what to mend first (``make room on its disk``, ``start
    the cluster again``).
    """

    def __init__(self, message: str, *, remedy: str = "mend the folder") -> None:
        super().__init__(message)
        self.remedy = remedy


class RunWriteError(RunStopped):
    """``zorkmcp eval`` or ``zorkmcp play`` cannot write a file of its run (an episode's record, a log,
    the cassette): a full disk, a folder that is gone or not writable.

    The message names the file and the system's reason (``runs/x/summary.json: cannot be written (No space
    left on device)``); :attr:`remedy` says what to do about that reason (``make room on its disk``).
    """


def exception_leaves(exc: BaseException) -> list[BaseException]:
    """The exceptions inside ``exc``, however deep its exception groups nest (``[exc]`` for a plain one)."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in exception_leaves(sub)]
    return [exc]
