"""The sync boundary: ``get_action()`` (one ``trio.run`` per call) and ``Bridge`` (one loop per episode)."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, ExitStack, asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeVar

import attrs
import trio
from anyio.from_thread import BlockingPortal, start_blocking_portal

from zorkmcp.agent import AgentAction, ZorkAgent
from zorkmcp.config import McpConfig, Settings
from zorkmcp.llm import ChatModel, open_chat_model
from zorkmcp.mcp import EpisodeServers, McpManager, ToolCallResult
from zorkmcp.observability import EventRecorder, LogFiles, Tracer, open_tracer

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["Bridge", "EpisodeSetup", "get_action", "reset"]

T = TypeVar("T")
ChatModelFactory = Callable[[], AbstractAsyncContextManager[ChatModel]]


def _refuse_inside_event_loop(what: str) -> None:
    """Properties 39–40: no nested event loops. Fail loudly instead of deadlocking."""
    running: str | None = None
    try:
        trio.lowlevel.current_trio_token()
    except RuntimeError:
        pass
    else:
        running = "a trio event loop"
    if running is None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            running = "an asyncio event loop"
    if running is not None:
        raise RuntimeError(
            f"{what} blocks and starts its own trio loop, but it was called while {running} is running in "
            "this thread. Use bridge.Bridge (it runs one trio loop in a background thread for the whole "
            "episode; call Bridge.get_action from a worker thread, e.g. trio.to_thread.run_sync), or await "
            "zorkmcp.ZorkAgent.generate_action directly from async code."
        )


@attrs.define
class EpisodeSetup:
    """Everything an episode needs that is not an async resource; survives across ``trio.run`` calls.

    Args:
        settings: the ``[tool.zorkgpt.*]`` settings (default: ``pyproject.toml`` in the current folder).
        servers: the MCP servers to run; default: ``mcp_config.json`` when ``[tool.zorkgpt.mcp]
            enabled`` is true, none otherwise (the config file is then not read, Requirement 2.5).
        agent_tools: whether the agent is offered the servers' tools (default: ``settings.mcp.enabled``).
        chat_model: a factory for the chat model; default :func:`zorkmcp.llm.open_chat_model`.
        recorder: where events and episode-log lines are collected.
    """

    settings: Settings
    servers: McpConfig | None
    agent_tools: bool
    chat_model: ChatModelFactory
    recorder: EventRecorder
    tracer: Tracer
    manager: McpManager | None
    episode_id: str
    turn: int = 0

    @classmethod
    def create(
        cls,
        settings: Settings | None = None,
        *,
        pyproject: Path | None = None,
        servers: McpConfig | None = None,
        agent_tools: bool | None = None,
        chat_model: ChatModelFactory | None = None,
        recorder: EventRecorder | None = None,
        episode_id: str | None = None,
        model: str | None = None,
        base_url: str | None = None,
        walkthrough: Sequence[str] | None = None,
    ) -> EpisodeSetup:
        """Load what is not given. Configuration errors surface here, before any turn (fail fast).

        Raises:
            ConfigError: bad settings or ``mcp_config.json`` (an ``MCPError``, Requirement 9.3).
        """
        settings = settings if settings is not None else Settings.from_pyproject(pyproject)
        if servers is None and settings.mcp.enabled:
            servers = McpConfig.from_file(settings.mcp_config_path())
        episode_id = episode_id or f"episode-{uuid.uuid4().hex[:12]}"
        recorder = recorder if recorder is not None else EventRecorder()
        recorder.context.setdefault("episode_id", episode_id)
        manager = McpManager(servers, settings.mcp, events=recorder) if servers is not None else None
        if chat_model is None:

            def chat_model() -> AbstractAsyncContextManager[ChatModel]:
                return open_chat_model(
                    settings, model_override=model, base_url_override=base_url, walkthrough=walkthrough
                )

        return cls(
            settings=settings,
            servers=servers,
            agent_tools=settings.mcp.enabled if agent_tools is None else agent_tools,
            chat_model=chat_model,
            recorder=recorder,
            tracer=open_tracer(),
            manager=manager,
            episode_id=episode_id,
        )

    def agent(self, model: ChatModel) -> ZorkAgent:
        return ZorkAgent(
            model=model,
            settings=self.settings.mcp,
            mcp=self.manager if self.agent_tools else None,
            sampling=self.settings.agent_sampling,
            events=self.recorder,
            tracer=self.tracer,
        )

    def next_turn(self) -> int:
        self.turn += 1
        self.recorder.context["turn"] = self.turn
        return self.turn


async def _cold_turn(setup: EpisodeSetup, game_state_text: str, relevant_memories: str | None) -> AgentAction:
    """One whole turn inside one ``trio.run``: model client, servers and tools live only for it."""
    turn = setup.next_turn()
    async with setup.chat_model() as model:
        return await setup.agent(model).generate_action(game_state_text, relevant_memories, turn=turn)


_DEFAULT: dict[Path | None, EpisodeSetup] = {}
_DEFAULT_LOCK = threading.Lock()


def reset() -> None:
    """Forget the state ``get_action()`` keeps between calls (turn count, disabled servers): a new episode."""
    with _DEFAULT_LOCK:
        _DEFAULT.clear()


def get_action(
    game_state_text: str,
    relevant_memories: str | None = None,
    *,
    pyproject: Path | None = None,
) -> dict[str, str | None]:
    """Choose the next action; blocks while the turn runs inside exactly one ``trio.run`` (property 39).

    Every MCP server is started for this call and is gone when it returns (or raises, or is
    interrupted with Ctrl-C: the ``KeyboardInterrupt`` is re-raised after the servers are stopped).
    Nothing async survives between calls; the episode's plain state (turn number, servers disabled
    after repeated failures) does, per ``pyproject`` — :func:`reset` starts a new episode. The turn's
    events and episode-log lines are appended to ``[tool.zorkgpt.files]`` ``json_log_file`` and
    ``episode_log_file`` when the call returns.
    For per_episode servers and HTTP keep-alive across turns, use :class:`Bridge`.

    Returns:
        ``{"action": str, "reasoning": str, "new_objective": str | None}``.

    Raises:
        RuntimeError: called while an event loop is running in this thread.
        ConfigError: bad settings or ``mcp_config.json``.
        MCPServerStartupError: a server failed to start on the first turn (Requirement 6.1).
        ModelCompatibilityError: the model cannot call tools (Requirement 12.5).
    """
    _refuse_inside_event_loop("bridge.get_action()")
    key = pyproject.resolve() if pyproject is not None else None
    with _DEFAULT_LOCK:
        setup = _DEFAULT.get(key)
        if setup is None:
            setup = _DEFAULT[key] = EpisodeSetup.create(pyproject=pyproject)
    try:
        # Ctrl-C goes to the turn's own task at its next checkpoint, which cancels the turn and
        # stops its servers. Unrestricted, trio raises KeyboardInterrupt in whichever task is
        # running: in a server's stdio writer it only looks like a dead server, and the turn
        # carries on (one more LLM request) before the interrupt surfaces inside a group.
        action = trio.run(
            _cold_turn,
            setup,
            game_state_text,
            relevant_memories,
            restrict_keyboard_interrupt_to_checkpoints=True,
        )
    except BaseExceptionGroup as group:
        if group.subgroup(KeyboardInterrupt) is None:
            raise
        raise KeyboardInterrupt from group  # the contract: Ctrl-C comes out as KeyboardInterrupt
    finally:
        # The turn's events and episode-log lines go to [tool.zorkgpt.files] (sync I/O, after the loop).
        files = setup.settings.files
        LogFiles(json_log=Path(files.json_log_file), episode_log=Path(files.episode_log_file)).write(
            *setup.recorder.drain()
        )
    return action.as_dict()


@attrs.define
class _Live:
    """The async resources of a running Bridge, owned by one task in the portal's loop."""

    model: ChatModel
    agent: ZorkAgent
    episode: EpisodeServers | None


class Bridge:
    """One trio loop in a background thread for a whole episode (anyio's blocking portal).

    ``per_episode`` servers and the model's HTTP keep-alive survive between turns; ``get_action`` has
    the contract of :func:`bridge.get_action`. Leaving the ``with`` block closes everything; an
    exception or Ctrl-C in the block first cancels the turn in flight.

    Example::

        with Bridge() as bridge:
            for state in game:
                step = bridge.get_action(state.text, state.memories)

    Args are those of :meth:`EpisodeSetup.create`.
    """

    def __init__(self, settings: Settings | None = None, **options: Any) -> None:
        self.setup = EpisodeSetup.create(settings, **options)
        self.last: AgentAction | None = None
        self._stack: ExitStack | None = None
        self._portal: BlockingPortal | None = None
        self._live: _Live | None = None

    @property
    def recorder(self) -> EventRecorder:
        return self.setup.recorder

    @property
    def model(self) -> ChatModel:
        """The episode's chat model (open while the bridge is)."""
        if self._live is None:
            raise RuntimeError("Bridge is not open: use it as `with Bridge() as bridge:`")
        return self._live.model

    @asynccontextmanager
    async def _episode(self) -> Any:
        setup = self.setup
        async with setup.chat_model() as model:
            if setup.manager is not None:
                async with setup.manager.open_episode() as episode:
                    yield _Live(model=model, agent=setup.agent(model), episode=episode)
            else:
                yield _Live(model=model, agent=setup.agent(model), episode=None)

    def __enter__(self) -> Self:
        _refuse_inside_event_loop("bridge.Bridge")
        with ExitStack() as stack:
            portal = stack.enter_context(start_blocking_portal(backend="trio", name="zorkmcp-bridge"))
            self._live = stack.enter_context(portal.wrap_async_context_manager(self._episode()))
            self._portal = portal
            self._stack = stack.pop_all()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        stack, self._stack, self._portal, self._live = self._stack, None, None, None
        if stack is not None:
            stack.__exit__(exc_type, exc, tb)

    def _run(self, func: Callable[[], Awaitable[T]]) -> T:
        portal, live = self._portal, self._live
        if portal is None or live is None:
            raise RuntimeError("Bridge is not open: use it as `with Bridge() as bridge:`")
        finished = threading.Event()

        async def task() -> T:
            try:
                return await func()
            finally:
                finished.set()

        future = portal.start_task_soon(task)
        try:
            return future.result()
        except BaseException:
            # Ctrl-C (or any exception) in the calling thread: cancel the turn in flight and wait for
            # its cleanup, so that no server outlives the call. A second Ctrl-C stops the wait.
            future.cancel()
            finished.wait()
            raise

    def get_action(self, game_state_text: str, relevant_memories: str | None = None) -> dict[str, str | None]:
        """Choose the next action (same contract as :func:`bridge.get_action`)."""
        live = self._live
        turn = self.setup.next_turn()

        async def run() -> AgentAction:
            assert live is not None
            return await live.agent.generate_action(
                game_state_text, relevant_memories, episode=live.episode, turn=turn
            )

        self.last = self._run(run)
        return self.last.as_dict()

    def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolCallResult:
        """Call any tool of the episode's per_episode servers from the synchronous side (e.g. the game's
        ``play_action``, which the agent is not offered)."""
        live = self._live

        async def run() -> ToolCallResult:
            if live is None or live.episode is None:
                raise RuntimeError("this Bridge has no per_episode MCP servers")
            return await live.episode.call_tool(name, dict(arguments or {}))

        return self._run(run)
