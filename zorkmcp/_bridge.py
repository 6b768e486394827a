"""The sync boundary: ``get_action()`` (one ``trio.run`` per call) and ``Bridge`` (one loop per episode).

This is where the project chooses trio as its runtime: ``trio.run`` per call, or anyio's blocking
portal with ``backend="trio"`` for an episode. Both report through the episode's one
:class:`~zorkmcp.observability.EventRecorder` and append what it holds to ``[tool.zorkgpt.files]``
after every call, so memory stays flat however long the episode is.
"""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
import threading
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, ExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Self, TypedDict, TypeVar

import attrs
import trio
from anyio.from_thread import BlockingPortal, start_blocking_portal

from .agent import AgentAction, ZorkAgent
from .config import McpConfig, Settings, check_settings_file
from .errors import ConfigError, RunWriteError
from .llm import ChatModel, MeteredModel, ModelChoice, ModelUse
from .llm._select import check_base_url
from .mcp import EpisodeServers, McpManager, ModelSampler, ToolCallResult
from .observability import EventRecorder, LogFiles, Tracer, open_tracer

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import TracebackType

__all__ = ["Action", "Bridge", "EpisodeSetup", "get_action", "reset", "run_trio"]

T = TypeVar("T")
ChatModelFactory = Callable[[], AbstractAsyncContextManager[ChatModel]]
_log = logging.getLogger("zorkmcp.bridge")


class Action(TypedDict):
    """What :func:`get_action` returns (the seeds' contract)."""

    action: str
    """A non-empty, single-line game command."""
    reasoning: str
    new_objective: str | None


def _action(agent_action: AgentAction) -> Action:
    return {
        "action": agent_action.action,
        "reasoning": agent_action.reasoning,
        "new_objective": agent_action.new_objective,
    }


def _settings_file(pyproject: str | os.PathLike[str] | None) -> Path | None:
    """A settings file given by name must be there (without one, ``./pyproject.toml`` or the defaults)."""
    if pyproject is None:
        return None
    if not isinstance(pyproject, (str, os.PathLike)):
        raise TypeError(f"pyproject must be a path (str or pathlib.Path), got {type(pyproject).__name__}")
    path = Path(pyproject)
    remedy = " (leave pyproject out for ./pyproject.toml)"
    check_settings_file(path, given=f"pyproject={str(path)!r}", remedy=remedy)
    return path


def _check_text(name: str, value: object, *, optional: bool = False) -> None:
    if isinstance(value, str) or (optional and value is None):
        return
    expected = "a str or None" if optional else "a str"
    raise TypeError(f"{name} must be {expected}, got {type(value).__name__}")


def _check_arguments(servers: object, model: object, base_url: object) -> None:
    """The arguments of :meth:`EpisodeSetup.create` that would otherwise fail at the first turn."""
    if servers is not None and not isinstance(servers, McpConfig):
        raise TypeError(
            f"servers must be a zorkmcp.McpConfig or None, got {type(servers).__name__} (build one with "
            "McpConfig.from_dict(...), McpConfig.from_file(path) or McpConfig(servers=[ServerConfig(...)]))"
        )
    _check_text("model", model, optional=True)
    if isinstance(model, str) and not model.strip():  # it would be sent as it is
        raise ConfigError("model is blank: give the model's name, or leave model out")
    _check_text("base_url", base_url, optional=True)
    if isinstance(base_url, str):  # also "" (ModelChoice reads it as no override) and with a chat_model
        check_base_url(base_url)


def _episode_id(given: str | None, recorder: EventRecorder) -> str:
    """The episode's id, the one its events carry: ``given``, else the recorder's (its context's
    ``episode_id``), else a new one; the recorder's context is set to it."""
    known = recorder.context.get("episode_id")
    if given:
        episode_id = given
    elif isinstance(known, str) and known:
        episode_id = known
    else:
        episode_id = f"episode-{uuid.uuid4().hex[:12]}"
    recorder.set_context(episode_id=episode_id)
    return episode_id


def _tool_call(name: object, arguments: object) -> None:
    """The arguments of :meth:`Bridge.call_tool`: a tool name, and a mapping of JSON values by name."""
    if not isinstance(name, str):
        raise TypeError(
            f'name must be a tool name, a str such as "game.play_action", got {type(name).__name__}'
        )
    if arguments is None:
        return
    if not isinstance(arguments, Mapping):
        raise TypeError(
            "arguments must be a dict of the tool's arguments by name (JSON values) or None, "
            f"got {type(arguments).__name__}"
        )
    for key in arguments:
        if not isinstance(key, str):
            raise TypeError(f"arguments must have str keys (the arguments' names), got {key!r}")


def _loop_running_here() -> str | None:
    """The event loop running in this thread, in words (``"a trio event loop"``), or ``None``."""
    try:
        trio.lowlevel.current_trio_token()
    except RuntimeError:
        pass
    else:
        return "a trio event loop"
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return None
    return "an asyncio event loop"


_WORKER_THREAD: Final = (
    "Call it from a worker thread (asyncio.to_thread, trio.to_thread.run_sync): "
    "bridge.Bridge runs one trio loop in a background thread for a whole episode, so enter it and "
    "call its get_action there; or await zorkmcp.ZorkAgent.generate_action directly from async code."
)


def _refuse_inside_event_loop(what: str, *, advice: str = _WORKER_THREAD) -> None:
    """Properties 39–40: no nested event loops. Fail loudly instead of deadlocking."""
    running = _loop_running_here()
    if running is not None:
        raise RuntimeError(
            f"{what} blocks and starts its own trio loop, but it was called while {running} is running in "
            f"this thread. {advice}"
        )


def check_walkthrough(value: object, *, what: str = "walkthrough") -> None:
    """The offline scripted model's commands: a list (any sequence) of str, or ``None``.

    Raises:
        TypeError: a str (it would be played letter by letter), or not a sequence of str.
    """
    if value is None:
        return
    if isinstance(value, str):
        raise TypeError(f"{what} must be a list of commands, got a str: write [{value!r}]")
    if not isinstance(value, Sequence) or not all(isinstance(command, str) for command in value):
        raise TypeError(
            f"{what} must be a list of commands (str), such as ['north', 'open mailbox'], got {value!r:.80}"
        )


def _refuse_blocking_in_loop(what: str, loop_thread: int | None) -> None:
    """A call of an open :class:`Bridge` that would wait for its turn: never from a running loop.

    From the Bridge's own loop thread (an event listener, a chat model, a callback of the turn) the
    call would wait for itself forever; from a thread running another loop it would stall that loop
    for the whole turn (asyncio) or fail deep inside anyio (trio).
    """
    if loop_thread is not None and threading.get_ident() == loop_thread:
        raise RuntimeError(
            f"{what} was called from the Bridge's own loop thread (an event listener, a chat model or "
            "another callback of a turn): it would wait for itself forever. Call it from the thread "
            "that drives the episode"
        )
    running = _loop_running_here()
    if running is not None:
        raise RuntimeError(
            f"{what} blocks until the Bridge's loop thread has done it, but it was called while {running} "
            "is running in this thread, which it would stall. Call it from a worker thread "
            "(asyncio.to_thread, trio.to_thread.run_sync), or await zorkmcp.ZorkAgent.generate_action "
            "directly from async code"
        )


def run_trio(func: Callable[..., Awaitable[T]], *args: Any) -> T:
    """``trio.run(func, *args)`` with the Ctrl-C contract of the sync boundary.

    Ctrl-C goes to the running task at its next checkpoint, which cancels the work and stops its
    servers (unrestricted, trio raises ``KeyboardInterrupt`` in whichever task runs: in a server's
    stdio writer it only looks like a dead server). A ``KeyboardInterrupt`` that comes out inside an
    exception group is re-raised as a plain ``KeyboardInterrupt``.
    """
    try:
        return trio.run(func, *args, restrict_keyboard_interrupt_to_checkpoints=True)
    except BaseExceptionGroup as group:
        if group.subgroup(KeyboardInterrupt) is None:
            raise
        raise KeyboardInterrupt from group


_FROM_SETTINGS: Any = object()


@attrs.define
class EpisodeSetup:
    """Everything an episode needs that is not an async resource; survives across ``trio.run`` calls.

    The episode's plain state lives here: the turn number, the servers disabled after repeated
    failures (in the :class:`~zorkmcp.mcp.McpManager`), what the model answered (``model_use``), and
    the chat model's choice — the offline scripted model is one object for the whole episode, so its
    place in the walkthrough survives between ``get_action()`` calls.

    Args:
        settings: the ``[tool.zorkgpt.*]`` settings (default: ``pyproject.toml`` in the current folder).
        servers: the MCP servers to run; default: ``mcp_config.json`` when ``[tool.zorkgpt.mcp]
            enabled`` is true, none otherwise (the config file is then not read, Requirement 2.5).
        agent_tools: whether the agent is offered the servers' tools (default: ``settings.mcp.enabled``).
        chat_model: a factory for the chat model; default: the model the settings choose
            (:class:`~zorkmcp.llm.ModelChoice`).
        recorder: the episode's one event sink.
        episode_id: the id the episode's events carry (their context's ``episode_id``); default: the
            one ``recorder``'s context already holds, else a new ``episode-<12 hex digits>``.
        log_files: where :meth:`flush` appends events and episode-log lines; default
            ``[tool.zorkgpt.files]``; ``None`` writes nothing (the caller drains the recorder).
    """

    settings: Settings
    servers: McpConfig | None
    agent_tools: bool
    chat_model: ChatModelFactory
    recorder: EventRecorder
    tracer: Tracer
    manager: McpManager | None
    sampler: ModelSampler
    """Answers the servers' sampling requests: with the model open for the turn or the episode
    (``sampler.using``), so they share its connection to the endpoint."""
    episode_id: str
    log_files: LogFiles | None = None
    turn: int = 0
    model_use: ModelUse = attrs.Factory(ModelUse)
    """The completions the episode's model answered and their tokens, over all its turns: the agent's
    requests and the servers' sampling requests alike (:meth:`metered`)."""
    lock: threading.Lock = attrs.field(factory=threading.Lock, repr=False, eq=False)
    """Held for a whole turn: turns of one episode run one after another (a turn's events carry its
    number, which a second thread's turn would change under it)."""

    @classmethod
    def create(
        cls,
        settings: Settings | None = None,
        *,
        pyproject: str | os.PathLike[str] | None = None,
        servers: McpConfig | None = None,
        agent_tools: bool | None = None,
        chat_model: ChatModelFactory | None = None,
        recorder: EventRecorder | None = None,
        episode_id: str | None = None,
        model: str | None = None,
        base_url: str | None = None,
        walkthrough: Sequence[str] | None = None,
        log_files: LogFiles | None = _FROM_SETTINGS,
    ) -> EpisodeSetup:
        """Load what is not given. Configuration errors surface here, before any turn (fail fast).

        Without ``settings``, ``pyproject`` (default ``./pyproject.toml``) is read; a file without
        ``[tool.zorkgpt.mcp] enabled = true`` runs without MCP servers (Requirement 13). When no API key
        is found the offline scripted model plays: that is said once, as a warning of the
        ``zorkmcp.bridge`` logger, unless ``walkthrough`` asked for it.

        Raises:
            ConfigError: bad settings or ``mcp_config.json`` (an ``MCPError``, Requirement 9.3), a
                ``pyproject`` that is not there, a blank ``model``, or a ``base_url`` the HTTP client
                cannot use (``localhost:8080/v1`` without ``http://``), with or without an API key.
            TypeError: ``settings`` is not a :class:`~zorkmcp.config.Settings` (a path goes in
                ``pyproject``), ``servers`` not a :class:`~zorkmcp.config.McpConfig`, ``model``,
                ``base_url`` or ``episode_id`` not a str, ``walkthrough`` not a list of str (one str
                would be played letter by letter).
        """
        if settings is not None and not isinstance(settings, Settings):
            raise TypeError(
                f"settings must be a zorkmcp.config.Settings, got {type(settings).__name__} "
                "(pass a settings file as pyproject=...)"
            )
        _check_arguments(servers, model, base_url)
        _check_text("episode_id", episode_id, optional=True)
        check_walkthrough(walkthrough)
        settings = settings if settings is not None else Settings.from_pyproject(_settings_file(pyproject))
        if servers is None and settings.mcp.enabled:
            servers = McpConfig.from_file(settings.mcp_config_path())
        recorder = recorder if recorder is not None else EventRecorder()
        episode_id = _episode_id(episode_id, recorder)
        if chat_model is None:
            choice = ModelChoice.from_settings(
                settings, model_override=model, base_url_override=base_url, walkthrough=walkthrough
            )
            choice.announce(recorder)  # once per episode
            if choice.notice is not None and walkthrough is None:  # a walkthrough given asks for it
                _log.warning("%s", choice.notice)  # else only the episode log would say so

            def chat_model() -> AbstractAsyncContextManager[ChatModel]:
                return choice.open(recorder)

        # the model is not open yet (it is per call, or per episode): a turn lends it (sampler.using)
        sampler = ModelSampler.opening(chat_model)
        manager = (
            McpManager(servers, settings.mcp, events=recorder, sampler=sampler)
            if servers is not None
            else None
        )

        if log_files is _FROM_SETTINGS:
            files = settings.files
            log_files = LogFiles(json_log=Path(files.json_log_file), episode_log=Path(files.episode_log_file))
        return cls(
            settings=settings,
            servers=servers,
            agent_tools=settings.mcp.enabled if agent_tools is None else agent_tools,
            chat_model=chat_model,
            recorder=recorder,
            tracer=open_tracer(),
            manager=manager,
            sampler=sampler,
            episode_id=episode_id,
            log_files=log_files,
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

    @contextmanager
    def metered(self, model: ChatModel) -> Iterator[ChatModel]:
        """Within it, ``model`` (open) answers the turn or the episode: the agent is to be given the
        model it yields, and the servers' sampling requests go to it (``sampler.using``); every
        completion either answers counts in :attr:`model_use`.
        """
        metered = MeteredModel(model, self.model_use)
        with self.sampler.using(metered):  # a cassette under it is still refused for what it is
            yield metered

    def next_turn(self) -> int:
        self.turn += 1
        self.recorder.set_context(turn=self.turn)
        return self.turn

    def flush(self, *, quiet: bool = False) -> None:
        """Append what the recorder holds to the log files (sync I/O: call it outside the loop).

        Args:
            quiet: another exception is on its way out (Ctrl-C, a failed turn): a log that cannot be
                written does not replace it; the lines it could not take stay held for the next flush.

        Raises:
            RunWriteError: a log cannot be written (unless ``quiet``).
        """
        if self.log_files is None:
            return
        try:
            self.log_files.write(*self.recorder.drain())
        except RunWriteError:
            if not quiet:
                raise


async def _cold_turn(setup: EpisodeSetup, game_state_text: str, relevant_memories: str | None) -> AgentAction:
    """One whole turn inside one ``trio.run``: model client, servers and tools live only for it."""
    turn = setup.next_turn()
    async with setup.chat_model() as opened:
        with setup.metered(opened) as model:
            return await setup.agent(model).generate_action(game_state_text, relevant_memories, turn=turn)


_DEFAULT: dict[Path | None, EpisodeSetup] = {}
_DEFAULT_LOCK = threading.Lock()


def reset() -> None:
    """Forget the episode ``get_action()`` keeps between calls: the next call starts a new one."""
    with _DEFAULT_LOCK:
        _DEFAULT.clear()


def get_action(
    game_state_text: str,
    relevant_memories: str | None = None,
    *,
    pyproject: str | os.PathLike[str] | None = None,
) -> Action:
    """Choose the next action; blocks while the turn runs inside exactly one ``trio.run`` (property 39).

    Every MCP server is started for this call and is gone when it returns (or raises, or is
    interrupted with Ctrl-C: the ``KeyboardInterrupt`` is re-raised after the servers are stopped).
    Nothing async survives between calls; the episode's plain state (turn number, servers disabled
    after repeated failures, the offline scripted model's place in its walkthrough) does, per
    ``pyproject`` — :func:`reset` starts a new episode. The turn's events and episode-log lines are
    appended to ``[tool.zorkgpt.files]`` ``json_log_file`` and ``episode_log_file`` when the call
    returns. For per_episode servers and HTTP keep-alive across turns, use :class:`Bridge`.

    Returns:
        ``{"action": str, "reasoning": str, "new_objective": str | None}``.

    Raises:
        RuntimeError: called while an event loop is running in this thread.
        TypeError: ``game_state_text`` is not a str, or ``relevant_memories`` not a str or ``None``.
        ConfigError: bad settings or ``mcp_config.json``, or a ``pyproject`` that is not there.
        MCPServerStartupError: a server failed to start on the first turn (Requirement 6.1).
        ModelCompatibilityError: the model cannot call tools (Requirement 12.5).
    """
    _refuse_inside_event_loop("bridge.get_action()")
    _check_text("game_state_text", game_state_text)
    _check_text("relevant_memories", relevant_memories, optional=True)
    path = _settings_file(pyproject)
    key = path.resolve() if path is not None else None
    with _DEFAULT_LOCK:
        setup = _DEFAULT.get(key)
        if setup is None:
            setup = _DEFAULT[key] = EpisodeSetup.create(pyproject=path)
    with setup.lock:  # one turn at a time per episode, whichever thread calls
        try:
            action = run_trio(_cold_turn, setup, game_state_text, relevant_memories)
        except BaseException:
            setup.flush(quiet=True)
            raise
        setup.flush()
    return _action(action)


@attrs.define
class _Live:
    """The async resources of a running Bridge, owned by one task in the portal's loop."""

    model: ChatModel
    """The episode's chat model as it was opened (the agent's is it metered: ``setup.metered``)."""
    agent: ZorkAgent
    episode: EpisodeServers | None
    thread: int
    """The loop thread's ident: a call from it would wait for itself."""


_OPEN: set[Bridge] = set()
"""The Bridges open in this process, closed at interpreter exit if their ``with`` block never ended."""
_OPEN_LOCK = threading.Lock()


@atexit.register
def _close_left_open() -> None:
    """A Bridge entered without ``with`` and never closed: stop its servers before the interpreter goes.

    Its loop thread is a daemon, killed at exit with no cleanup: a server's children that outlive
    their parent's end (a process group of their own) would be left running under PID 1.
    """
    with _OPEN_LOCK:
        left = [bridge for bridge in _OPEN if bridge._pid == os.getpid()]
    for bridge in left:
        _log.warning(
            "bridge.Bridge (%s) was still open at exit: zorkmcp closed it and stopped its servers "
            "(use `with Bridge() as bridge:`, or call bridge.close())",
            bridge.setup.episode_id,
        )
        try:
            bridge.close()
        except Exception:  # noqa: BLE001 - one Bridge's failure must not leave the others open
            _log.exception("closing bridge.Bridge (%s) at exit failed", bridge.setup.episode_id)


def _forget_in_child() -> None:
    """After ``fork``: the child has neither the loop threads nor the servers of the parent's Bridges.

    Each open Bridge's portal is marked stopped, which is what anyio's ``start_blocking_portal`` sees
    when its loop has ended: leaving it (the child's ``with`` block, its garbage collection at exit)
    then returns at once instead of waiting forever for a loop that does not run here.
    """
    global _OPEN_LOCK  # another thread of the parent may have held it: none runs here
    _OPEN_LOCK = threading.Lock()
    for bridge in _OPEN:
        bridge._state_lock = threading.Lock()
        if bridge._portal is not None:
            bridge._portal._event_loop_thread_id = None  # anyio's "this portal is not running"


os.register_at_fork(after_in_child=_forget_in_child)


_CLOSED: Final = (
    "this Bridge is closed: its episode ended when its with block was left (or close() was called); "
    "create a new Bridge for a new episode"
)


class Bridge:
    """One trio loop in a background thread for a whole episode (anyio's blocking portal).

    ``per_episode`` servers and the model's HTTP keep-alive survive between turns; ``get_action`` has
    the contract of :func:`bridge.get_action`. A Bridge is one episode, entered once: leaving the
    ``with`` block (or :meth:`close`) closes everything, and entering it again raises a
    ``RuntimeError`` (create a new Bridge for a new episode). An exception or Ctrl-C in the block
    first cancels the turn in flight, and so does leaving it while another thread's turn runs (that
    thread gets a ``RuntimeError``). After every call the episode's events go to the log files
    (``log_files``, default ``[tool.zorkgpt.files]``), so memory stays flat over any number of turns.
    A Bridge still open at interpreter exit is closed then, with a warning of the ``zorkmcp.bridge``
    logger.

    Example::

        with Bridge() as bridge:
            for state in game:
                step = bridge.get_action(state.text, state.memories)

    Args are those of :meth:`EpisodeSetup.create`.
    """

    _prewarm: bool = True
    """Whether the episode starts each ``per_turn`` server's next session ahead of its turn
    (``McpManager.open_episode(prewarm=)``): always; ``benchmarks/bench_play_turn.py`` sets it false
    on its own Bridges to measure a turn without it, through this very code."""

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        pyproject: str | os.PathLike[str] | None = None,
        servers: McpConfig | None = None,
        agent_tools: bool | None = None,
        chat_model: ChatModelFactory | None = None,
        recorder: EventRecorder | None = None,
        episode_id: str | None = None,
        model: str | None = None,
        base_url: str | None = None,
        walkthrough: Sequence[str] | None = None,
        log_files: LogFiles | None = _FROM_SETTINGS,
    ) -> None:
        self.setup = EpisodeSetup.create(
            settings,
            pyproject=pyproject,
            servers=servers,
            agent_tools=agent_tools,
            chat_model=chat_model,
            recorder=recorder,
            episode_id=episode_id,
            model=model,
            base_url=base_url,
            walkthrough=walkthrough,
            log_files=log_files,
        )
        self.last: AgentAction | None = None
        self._stack: ExitStack | None = None
        self._portal: BlockingPortal | None = None
        self._live: _Live | None = None
        self._pid: int | None = None
        """The process that opened it (a forked child has neither its loop thread nor its servers)."""
        self._in_flight: set[trio.CancelScope] = set()
        """The calls running in the loop (only the loop thread touches it)."""
        self._closing = False
        """Set in the loop when the ``with`` block is left: a call that starts after it is cancelled."""
        self._closed = False
        """It was open and has been closed: its episode has ended, it is not entered again."""
        self._entering = False
        """A thread is entering it (its loop and servers are starting)."""
        self._state_lock = threading.Lock()
        """Held while entering decides whether it may (two threads entering at once: one opens it)."""

    @property
    def recorder(self) -> EventRecorder:
        return self.setup.recorder

    @property
    def model(self) -> ChatModel:
        """The episode's chat model (open while the bridge is)."""
        return self._open_live("Bridge.model").model

    def _open_live(self, what: str) -> _Live:
        """The running episode, for a call made where it can be reached.

        Raises:
            RuntimeError: the Bridge is not open, or was opened in the parent of this forked process.
        """
        live = self._live
        if live is None:
            raise RuntimeError(self._not_open())
        if self._pid != os.getpid():
            raise RuntimeError(
                f"{what}: this Bridge was opened in process {self._pid}, and this is a forked child "
                f"(process {os.getpid()}), where its loop thread and servers do not run: open a new "
                "Bridge in the child"
            )
        return live

    @asynccontextmanager
    async def _episode(self) -> Any:
        setup, thread = self.setup, threading.get_ident()
        async with setup.chat_model() as opened:
            with setup.metered(opened) as model:
                if setup.manager is not None:
                    async with setup.manager.open_episode(prewarm=self._prewarm) as episode:
                        yield _Live(model=opened, agent=setup.agent(model), episode=episode, thread=thread)
                else:
                    yield _Live(model=opened, agent=setup.agent(model), episode=None, thread=thread)

    def __enter__(self) -> Self:
        """Open the episode: start its loop thread, its model and its ``per_episode`` servers.

        Raises:
            RuntimeError: it is open already (or being opened by another thread), or it was closed:
                a Bridge is one episode, entered once; an event loop runs in this thread.
        """
        _refuse_inside_event_loop("bridge.Bridge")
        with self._state_lock:
            if self._closed:
                raise RuntimeError(_CLOSED)
            if self._stack is not None or self._entering:
                raise RuntimeError(
                    "this Bridge is already open: enter it once (a new Bridge is a new episode)"
                )
            self._entering = True
        try:
            with ExitStack() as stack:
                portal = stack.enter_context(start_blocking_portal(backend="trio", name="zorkmcp-bridge"))
                self._live = stack.enter_context(portal.wrap_async_context_manager(self._episode()))
                self._portal = portal
                self._pid = os.getpid()
                self._stack = stack.pop_all()
        finally:
            self._entering = False  # failed to open (a server, the model, Ctrl-C): it may be entered again
        with _OPEN_LOCK:
            _OPEN.add(self)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._live is not None and threading.get_ident() == self._live.thread:
            raise RuntimeError(
                "a Bridge cannot be closed from its own loop thread (an event listener, a chat model or "
                "another callback of a turn): it would wait for itself forever. Close it from the thread "
                "that drives the episode"
            )
        stack, portal = self._stack, self._portal
        self._stack, self._portal, self._live = None, None, None
        if stack is not None:
            self._closed = True
        with _OPEN_LOCK:
            _OPEN.discard(self)
        if stack is not None and self._pid != os.getpid():
            # A forked child leaving the block: the loop thread and the servers are the parent's,
            # which closes them; here they are only forgotten (touching them would wait forever).
            stack.pop_all()
            return
        try:
            if portal is not None:  # another thread's turn: cancelled, not left to run on dead servers
                portal.call(self._cancel_in_flight)
            if stack is not None:
                stack.__exit__(exc_type, exc, tb)
        except BaseException:
            self.setup.flush(quiet=True)
            raise
        self.setup.flush(quiet=exc_type is not None)

    def close(self) -> None:
        """Close the episode, as leaving the ``with`` block does; closing a closed Bridge does nothing,
        and entering it again raises ``RuntimeError`` (a new Bridge is a new episode).

        For a Bridge entered without ``with`` (``bridge.__enter__()`` kept in an object): its servers
        are stopped and its loop thread ends.
        """
        self.__exit__(None, None, None)

    def _not_open(self) -> str:
        """Why a call finds no episode: the Bridge was closed, or never opened."""
        return _CLOSED if self._closed else "Bridge is not open: use it as `with Bridge() as bridge:`"

    def _cancel_in_flight(self) -> None:
        """In the loop: cancel the calls other threads wait for, and those not started yet."""
        self._closing = True
        for scope in self._in_flight:
            scope.cancel()

    def _run(self, func: Callable[[], Awaitable[T]]) -> T:
        portal = self._portal
        if portal is None:
            raise RuntimeError(self._not_open())
        finished = threading.Event()

        async def task() -> T:
            try:
                with trio.CancelScope() as scope:
                    if self._closing:
                        scope.cancel()
                    self._in_flight.add(scope)
                    try:
                        return await func()
                    finally:
                        self._in_flight.discard(scope)
                raise RuntimeError(  # the scope caught the cancellation of the with block's exit
                    "the Bridge was closed (its with block left in another thread) while this call ran: "
                    "the call was cancelled"
                )
            finally:
                finished.set()

        future = portal.start_task_soon(task)
        try:
            result = future.result()
        except BaseException:
            # Ctrl-C (or any exception) in the calling thread: cancel the turn in flight and wait for
            # its cleanup, so that no server outlives the call. A second Ctrl-C stops the wait.
            try:
                future.cancel()
                finished.wait()
            finally:
                self.setup.flush(quiet=True)  # a full disk does not turn Ctrl-C into another error
            raise
        self.setup.flush()
        return result

    def get_action(self, game_state_text: str, relevant_memories: str | None = None) -> Action:
        """Choose the next action (same contract as :func:`bridge.get_action`).

        Calls from several threads take turns: one turn at a time, in the order they get the lock.

        Raises:
            RuntimeError: the Bridge is not open; it was opened in the parent of this forked process;
                the call comes from a thread running an event loop, the Bridge's own loop thread
                included (an event listener); the ``with`` block was left in another thread while
                the turn ran (the turn is cancelled).
        """
        _check_text("game_state_text", game_state_text)
        _check_text("relevant_memories", relevant_memories, optional=True)
        what = "Bridge.get_action()"
        _refuse_blocking_in_loop(what, self._live.thread if self._live is not None else None)
        self._open_live(what)  # before the lock, which a thread of a forked child's parent may hold
        with self.setup.lock:
            live = self._open_live(what)
            turn = self.setup.next_turn()

            async def run() -> AgentAction:
                return await live.agent.generate_action(
                    game_state_text, relevant_memories, episode=live.episode, turn=turn
                )

            self.last = self._run(run)
            return _action(self.last)

    def call_tool(self, name: str, arguments: Mapping[str, Any] | None = None) -> ToolCallResult:
        """Call any tool of the episode's per_episode servers from the synchronous side (e.g. the game's
        ``play_action``, which the agent is not offered).

        Args:
            name: the tool, as ``server.tool`` (or the wire name ``server__tool``).
            arguments: the tool's arguments by name (JSON values); ``None`` for none.

        Raises:
            TypeError: ``name`` is not a str, or ``arguments`` not a mapping with str keys.
        """
        _tool_call(name, arguments)
        _refuse_blocking_in_loop("Bridge.call_tool()", self._live.thread if self._live is not None else None)
        if self._live is not None:
            self._open_live("Bridge.call_tool()")
        live = self._live
        server = self._per_turn_server(name)
        if server is not None:
            return ToolCallResult(
                content=None,
                is_error=True,
                error_message=f"Tool {name!r} belongs to MCP server {server!r}, which is per_turn: its "
                "tools are offered to the agent in each turn; Bridge.call_tool reaches the per_episode "
                "servers only",
            )

        async def run() -> ToolCallResult:
            if live is None or live.episode is None:
                raise RuntimeError("this Bridge has no per_episode MCP servers")
            return await live.episode.call_tool(name, dict(arguments or {}))

        with self.setup.lock:  # not inside another thread's turn: its events carry that turn's number
            self._open_live("Bridge.call_tool()")
            return self._run(run)

    def _per_turn_server(self, name: str) -> str | None:
        """The ``per_turn`` server a tool name points at (``server.tool`` or ``server__tool``), if any."""
        servers = self.setup.servers.enabled_servers if self.setup.servers is not None else ()
        for server in servers:
            if server.lifecycle == "per_turn" and name.startswith((f"{server.name}.", f"{server.name}__")):
                return server.name
        return None
