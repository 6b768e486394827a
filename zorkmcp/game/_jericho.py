"""Real Zork through Jericho: :class:`ZorkGame`, a synchronous adapter over ``jericho.FrotzEnv``.

Two kinds of story file:

* **Supported games** (Jericho knows the file's md5, e.g. the classic ``zork1.z5``): score, moves,
  location, inventory and victory come from Jericho's own API.
* **Unsupported version 1-3 games**, above all Microsoft's MIT release of Zork I
  (``zork1.z3``, release 119): Jericho runs the text but reports nothing else, and every
  observation starts with a status line. The adapter reads the score, the moves and the location
  from the status-line globals, the inventory from the object tree (:mod:`._zmachine`), and strips
  the status line.

When the game is over (decided here, the same way for both kinds):

* ``died``: the step's text has Zork's ``****  You have died  ****``. Zork I takes 10 points and
  reincarnates the player twice, so a death alone does **not** end the game (Jericho's game-over
  flag fires on every death; it is not used for ``done``).
* ``done`` (GAME OVER): the game itself ended and asks "(Type RESTART, RESTORE, or QUIT)": after
  the third death, dying while already dead, or winning. Nothing more can be played; ``step``
  raises :class:`~zorkmcp.errors.GameError` until :meth:`ZorkGame.reset`.
* ``victory``: the game ended with the winning ending: for Zork I, entering the Stone Barrow
  (the ending text headed "Inside the Barrow", normally with 350 of 350 points: each death on the
  way costs 10; the location stays "Stone Barrow", as the game ends before moving you); for a
  supported game, Jericho's ``victory()``; for another known game, ending with the maximum score.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import warnings
import weakref
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from attrs import frozen

from .._argtypes import MAX_SEED
from ..errors import GameError
from ._actions import validate_action
from ._zmachine import StoryMemory, check_story_bytes

if TYPE_CHECKING:
    from collections.abc import Mapping
    from types import TracebackType

__all__ = [
    "StepResult",
    "ZorkGame",
    "check_game_file",
    "strip_status_line",
    "walkthrough",
]

# The first line of every observation of an unsupported v1-3 game: the status line, showing the
# location, score and moves from *before* the command, e.g.
# "> West of House              Score: 0                Moves: 0              ".
_STATUS_LINE = re.compile(
    r"\A[ \t]*>?[ \t]*[^\n]*?[ \t]{2,}"
    r"(?:Score:[ \t]*-?\d+[ \t]+Moves:[ \t]*-?\d+|Time:[ \t]*\d+:\d+[^\n]*?)[ \t]*(?:\n|\Z)"
)
_DEATH = re.compile(r"\*+\s*You have died\s*\*+")
_GAME_ENDED = re.compile(
    r"\(Type RESTART, RESTORE,? or QUIT\)|Would you like to restart the game", re.IGNORECASE
)
_OPENING = threading.Lock()
IDLE_INTERPRETERS = 64
"""Most interpreters of ended games kept for the next games (:data:`_IDLE`)."""
_IDLE: deque[Any] = deque(maxlen=IDLE_INTERPRETERS)
"""``FrotzEnv`` objects of games that were closed or collected, for :meth:`ZorkGame.open` to reuse.

A new ``FrotzEnv`` copies Jericho's interpreter library into a temporary folder and loads it (``dlopen``),
and unloads it again when it is collected: about 2 ms of CPU, most of a game's start and end; loading a
story into an idle one costs 0.25 ms. Each interpreter is given back once, by the game that held it, when
it is closed or collected (:func:`weakref.finalize`), and taken by one game; ``append`` and ``pop`` of a
deque are atomic, so a give-back from the garbage collector in any thread needs no lock. An idle one holds
about 0.8 MB; the oldest is dropped (and freed) beyond :data:`IDLE_INTERPRETERS`."""
SPARE_DESCRIPTORS = 8
"""File descriptors that must be free before the interpreter opens a game
(:func:`_check_spare_descriptors`)."""


def _reloaded(story_path: str, story: bytes, seed: int | None) -> Any | None:
    """An idle interpreter (:data:`_IDLE`) with the story loaded afresh, or ``None`` when none is idle.

    ``load`` then does what ``FrotzEnv(story_path, seed=seed)`` does after loading the library: it
    sets the seed the same way and runs the interpreter's setup (after ``close``, as ``reset`` does).
    Jericho's ``load`` reuses what it read of a path before (the bytes, the bindings, whether the game
    is supported: its private ``_cache``); that is kept only when it holds this path alone with the
    very bytes checked, else emptied so that ``load`` reads and identifies the file again.
    """
    try:
        env = _IDLE.pop()
    except IndexError:
        return None
    cache = getattr(env, "_cache", None)
    if not isinstance(cache, dict):  # not the Jericho this was written for: a fresh FrotzEnv instead
        return None
    known = cache.get(story_path)
    if not (len(cache) == 1 and isinstance(known, tuple) and known and known[0] == story):
        cache.clear()
    env.close()
    env.load(story_path, seed=seed)
    return env


def _last_text(env: Any) -> str | None:
    """The interpreter's last text (setup's or the last step's), as ``FrotzEnv.reset`` decodes it.

    ``get_state()`` ends with it (Jericho 3.x: the "narrative" the state restores); ``None`` when this
    Jericho's state has no such text, and the caller resets the game instead.
    """
    narrative = env.get_state()[-1]
    return narrative.decode("cp1252") if isinstance(narrative, bytes) else None


def _check_spare_descriptors(story_path: Path) -> None:
    """Fail with a :class:`GameError` when the process has no file descriptors to spare.

    Jericho's interpreter opens the story file itself (C ``fopen``) and ends the whole process with
    ``Fatal error: Cannot open story file`` when it cannot: a ``zorkmcp eval`` out of open files
    lost its summary that way. :data:`SPARE_DESCRIPTORS` are opened and closed again just before, so
    that the shortage is an episode's error here instead. (Another thread may still take the last
    ones in between; this makes the crash rare, not impossible.)
    """
    held: list[int] = []
    try:
        for _ in range(SPARE_DESCRIPTORS):
            held.append(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
    except OSError as exc:
        raise GameError(
            f"{story_path.name} cannot be opened: {exc.strerror or exc} (the interpreter needs a few file "
            "descriptors: allow more open files, ulimit -n, or run fewer episodes at once, --concurrency)"
        ) from None
    finally:
        for fd in held:
            os.close(fd)


_PLAYER_NAMES = ("cretin", "adventurer", "yourself", "you", "player", "me")


@frozen
class _Profile:
    """What the adapter knows about a game that Jericho does not."""

    name: str
    title: str
    max_score: int | None
    victory_heading: str | None = None
    """A line of the winning ending's text (the game ends before it updates the location)."""


# Recognised by the banner the game prints on start (any release).
_PROFILES = (
    _Profile("zork1", "ZORK I: The Great Underground Empire", 350, "Inside the Barrow"),
    _Profile("zork2", "ZORK II: The Wizard of Frobozz", 400),
    _Profile("zork3", "ZORK III: The Dungeon Master", 7),
)


@frozen
class StepResult:
    """What one action did.

    Attributes:
        observation: the game's text, status line removed.
        score: the score after the action.
        moves: the move counter after the action.
        reward: points gained by the action (negative when Zork took some, e.g. on a death).
        location: the name of the player's location after the action.
        done: the game has ended (GAME OVER); nothing more can be played.
        victory: the game ended with the winning ending.
        died: the player died during this action (Zork I may reincarnate; see ``done``).
    """

    observation: str
    score: int
    moves: int
    reward: int
    location: str
    done: bool
    victory: bool
    died: bool


def strip_status_line(text: str) -> str:
    """Remove a leading status line and surrounding blank lines from an observation.

    Args:
        text: raw interpreter output.

    Returns:
        The game's own text.
    """
    text = _STATUS_LINE.sub("", text, count=1)
    return re.sub(r"\A(?:[ \t]*\n)+", "", text).rstrip()


def walkthrough(game: str = "zork1") -> list[str]:
    """Jericho's walkthrough for ``game``: the actions that win it (for Zork I, 396 of them).

    With the MIT ``zork1.z3`` it reaches 350 of 350 points with seed 12 (also 26, 32, 46, 54, 63,
    102, …); other seeds may let the thief or a grue interfere.

    Args:
        game: a game name as Jericho's bindings spell it (``"zork1"``, ``"zork2"``, …).

    Returns:
        The actions in order.

    Raises:
        GameError: Jericho has no walkthrough for that name.
    """
    bindings = _bindings_by_name(game)
    text = str(bindings.get("walkthrough", ""))
    if not text:
        raise GameError(f"Jericho has no walkthrough for {game!r}")
    return text.split("/")


def _bindings_by_name(game: str) -> Mapping[str, Any]:
    from jericho import defines

    for bindings in defines.BINDINGS_DICT.values():
        if bindings.get("name") == game:
            result: Mapping[str, Any] = bindings
            return result
    raise GameError(f"Jericho has no walkthrough for {game!r} (it knows no game of that name)")


def preload() -> None:
    """Import Jericho now (it is imported on first use, as it costs about 55 ms of CPU: numpy)."""
    import jericho  # noqa: F401
    from jericho import defines  # noqa: F401


def check_game_file(path: str | os.PathLike[str]) -> None:
    """Check that a story file can be played, without starting an interpreter (a few milliseconds).

    :meth:`ZorkGame.open` makes the same checks; a program that hands the file to another process
    (``zorkmcp play`` starts the game server) calls this first to fail early with a clear message.

    Args:
        path: the story file.

    Raises:
        GameError: the file is missing, unreadable, not a sound story file, or an unsupported
            version 4+ story; the message says how to pass another one.
    """
    _checked_story(Path(path).expanduser())


_SOUND_STORIES: dict[Path, bytes] = {}
"""The last bytes of each story file that passed :func:`_checked_story`. The checksum sums every
byte in Python (0.4 ms for zork1.z3, a fifth of opening a game); ``zorkmcp eval`` opens the same file
for every episode, and comparing the bytes read with these costs microseconds. The file is still read
at every open: an edited file is checked again. Equal bytes are answered with the object kept here,
so that the games of one file share it (and its hash, see :data:`_LAYOUTS`)."""

_LAYOUTS: dict[tuple[bytes, bytes], tuple[int, int]] = {}
"""(story, dynamic memory at the start) → (object count, player object) of an unsupported game.

Both are pure functions of the memory snapshot (:meth:`ZorkGame._find_player`), and finding them
walks the object table and the globals in Python (0.16 ms, as much as the rest of opening a game
from a loaded interpreter). Zork I's memory at the start is the same whatever the seed: one entry.
Bounded by :data:`_LAYOUTS_LIMIT` (emptied when full)."""
_LAYOUTS_LIMIT = 64


def _checked_story(story_path: Path) -> bytes:
    try:
        str(story_path).encode("utf-8")
    except UnicodeEncodeError:  # a byte Python kept as a surrogate: Jericho encodes the path as UTF-8
        shown = str(story_path).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        raise GameError(
            f"game file {shown}: its path is not valid UTF-8, which the interpreter (Jericho) needs; "
            "rename the file or its folder, or copy it to a path that is"
        ) from None
    try:
        story = story_path.read_bytes()
    except FileNotFoundError:
        raise GameError(
            f"game file not found: {story_path}. Pass a Z-machine story file such as zork1.z3 "
            "(--game PATH, GAME=..., or game_file_path in [tool.zorkgpt.files])"
        ) from None
    except OSError as exc:
        raise GameError(f"cannot read game file {story_path}: {exc.strerror or exc}") from exc
    known = _SOUND_STORIES.get(story_path)
    if known == story:  # these very bytes passed below already
        return known
    try:
        header = check_story_bytes(story, str(story_path))
    except ValueError as exc:
        raise GameError(f"{exc}. Pass a Z-machine story file such as zork1.z3") from None

    if header.version <= 3:  # playable whether Jericho knows it or not: no need to import Jericho (numpy)
        _SOUND_STORIES[story_path] = story
        return story
    from jericho import defines

    if hashlib.md5(story, usedforsecurity=False).hexdigest() not in defines.BINDINGS_DICT:
        # a later version must be a game Jericho supports; checked before frotz runs the story
        raise GameError(
            f"{story_path} is a version {header.version} story that Jericho does not support; "
            "only version 1-3 stories (such as zork1.z3) or games Jericho supports can be played"
        )
    _SOUND_STORIES[story_path] = story
    return story


class ZorkGame:
    """One running game: a synchronous adapter over ``jericho.FrotzEnv``.

    Open one with :meth:`open`. Jericho is fast (a step takes tens of microseconds) and keeps a
    private copy of the interpreter per instance, so several games can run in one process; a game
    that is closed or collected leaves its interpreter to the next game opened (:data:`_IDLE`).
    A ``ZorkGame`` is not thread-safe: call it from one thread at a time.

    What the game reports of the machine (score, moves, location, inventory) is read from it once
    after each change (a step, a reset) and kept until the next.
    """

    def __init__(
        self, env: Any, *, path: Path, story: bytes, seed: int | None, started: str | None = None
    ) -> None:
        """Wrap a started ``FrotzEnv``; use :meth:`open` instead of calling this.

        ``started`` is the raw opening text when ``env`` is at the start of the game with the right
        seed already (a fresh ``FrotzEnv`` is); else (``None``) the game is reset here.
        """
        self._env = env
        self._give_back: weakref.finalize[Any, ZorkGame] | None = None
        """Hands the interpreter to :data:`_IDLE` once, when the game is closed or collected."""
        self.path = path
        """The story file."""
        self.seed = seed
        """The RNG seed given to Jericho (``None``: Jericho's default, see :meth:`open`)."""
        self._story = story
        self.supported: bool = bool(env.is_fully_supported)
        """Jericho supports this file natively (its md5 is in Jericho's bindings)."""
        self._player = 0
        self._object_count = 0
        self._profile: _Profile | None = None
        self.name: str = path.stem
        """The game's name: ``zork1`` for any release of Zork I, else the file's stem."""
        self.max_score: int | None = None
        """The most points the game gives (350 for Zork I); ``None`` when unknown."""
        self._observation = ""
        self._intro = ""
        self._done = False
        self._victory = False
        self._died = False
        self._last_score = 0
        self._status_now: tuple[int, int, str] | None = None
        """Score, moves and location of the machine as it is; ``None`` until read (:meth:`_forget`)."""
        self._memory_now: StoryMemory | None = None
        """The memory snapshot of the machine as it is; ``None`` until read (:meth:`_forget`)."""
        if started is None:
            self.reset()
        else:
            self._start(started)

    # -- opening and closing ----------------------------------------------------------------

    @classmethod
    def open(cls, path: str | os.PathLike[str], *, seed: int | None = None) -> ZorkGame:
        """Load a story file and start the game.

        Args:
            path: the story file (``.z3``, ``.z5``, …).
            seed: the interpreter's RNG seed, so that runs are reproducible. ``None`` keeps
                Jericho's default: the walkthrough's seed for a supported game, else a seed taken
                from the clock (runs differ).

        Returns:
            The game, reset to its first move.

        Raises:
            GameError: the file is missing, unreadable or not a sound story file, the seed is not
                an integer from 0 to :data:`~zorkmcp._argtypes.MAX_SEED`, or the game is an
                unsupported version 4+ story (the adapter reads the status-line globals of versions
                1-3 only).
        """
        story_path = Path(path).expanduser()
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise GameError(f"seed must be a non-negative integer, got {seed!r}")
        if seed is not None and seed > MAX_SEED:
            raise GameError(f"seed must be at most {MAX_SEED} (2**31 - 1: the interpreter's int), got {seed}")
        story = _checked_story(story_path)

        from jericho import FrotzEnv, UnsupportedGameWarning

        # catch_warnings swaps process-wide state: games opened in several threads at once (the
        # in-process game servers of ``zorkmcp eval``) take turns here.
        with _OPENING, warnings.catch_warnings():
            # The z3 is unsupported on purpose: this adapter supplies what Jericho lacks.
            warnings.simplefilter("ignore", UnsupportedGameWarning)
            _check_spare_descriptors(story_path)
            env = _reloaded(str(story_path), story, seed)
            if env is None:
                env = FrotzEnv(str(story_path), seed=seed)
        if seed == 0:
            env._seed = 0  # Jericho's seed() reads 0 as "no seed" (`seed or default`)
            game = cls(env, path=story_path, story=story, seed=seed)  # reset() starts it with seed 0
        else:
            # FrotzEnv() and load() have just run the interpreter's setup with this very seed: the game
            # stands at its start, as after reset() (same memory, stack, PC and RNG), and setup's text
            # is the interpreter's last text. Resetting would run setup a second time for nothing.
            game = cls(env, path=story_path, story=story, seed=seed, started=_last_text(env))
        game._give_back = weakref.finalize(game, _IDLE.append, env)
        game._give_back.atexit = False  # nothing to hand over when the process ends
        return game

    def close(self) -> None:
        """Free the interpreter (the next game opened may reuse it). The game cannot be used afterwards."""
        self._env = None
        self._forget()
        if self._give_back is not None:
            self._give_back()  # once: a finalizer runs at most once, here or when the game is collected

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<ZorkGame {self.name} {str(self.path)!r} seed={self.seed} moves={self.moves}>"

    # -- playing --------------------------------------------------------------------------------

    def reset(self) -> str:
        """Start the game again from the beginning (with the same seed).

        Returns:
            The game's opening text.
        """
        env = self._live_env()
        self._forget()
        raw, _info = env.reset()
        return self._start(raw)

    def _start(self, raw: str) -> str:
        """Take in the game's start, whose raw opening text is ``raw``."""
        env = self._live_env()
        self._intro = self._observation = strip_status_line(raw)
        self._done = self._victory = self._died = False
        if self.supported:
            self.name = str(env.bindings.get("name", self.path.stem))
            self.max_score = int(env.get_max_score())
            self._profile = next((p for p in _PROFILES if p.name == self.name), None)
        else:
            self._profile = next((p for p in _PROFILES if p.title in raw), None)
            if self._profile is not None:
                self.name = self._profile.name
                self.max_score = self._profile.max_score
            memory = self._memory()
            key = (self._story, memory.dynamic)
            layout = _LAYOUTS.get(key)
            if layout is None:
                self._object_count = memory.object_count()
                layout = (self._object_count, self._find_player(memory))
                if len(_LAYOUTS) >= _LAYOUTS_LIMIT:
                    _LAYOUTS.clear()
                _LAYOUTS[key] = layout
            self._object_count, self._player = layout
        self._last_score = self.score
        return self._intro

    def step(self, action: str) -> StepResult:
        """Play one action.

        Args:
            action: a command such as ``"north"`` or ``"take lamp"``.

        Returns:
            What the action did.

        Raises:
            ActionError: the action is empty, too long, has control or non-ASCII characters, or
                is an interpreter command the adapter refuses (save, restore, restart, quit,
                script).
            GameError: the game is already over.
        """
        text = validate_action(action)
        if self._done:
            raise GameError(
                f"the game is over (score {self.score}, {self.moves} moves); "
                "no more actions can be played in this game"
            )
        env = self._live_env()
        self._forget()
        raw, _reward, _jericho_done, _info = env.step(text)
        self._observation = strip_status_line(raw)
        self._died = bool(_DEATH.search(raw))
        ended = bool(_GAME_ENDED.search(raw))
        score, moves, location = self._status()
        if self.supported:
            self._victory = bool(env.victory())
        elif ended and self._profile is not None:
            if self._profile.victory_heading is not None:
                self._victory = self._profile.victory_heading in self._observation.splitlines()
            else:
                self._victory = self._profile.max_score is not None and score >= self._profile.max_score
        self._done = ended or self._victory
        reward, self._last_score = score - self._last_score, score
        return StepResult(
            observation=self._observation,
            score=score,
            moves=moves,
            reward=reward,
            location=location,
            done=self._done,
            victory=self._victory,
            died=self._died,
        )

    # -- state ------------------------------------------------------------------------------------

    @property
    def intro(self) -> str:
        """The game's opening text (banner and first room)."""
        return self._intro

    @property
    def observation(self) -> str:
        """The text of the last action (the opening text before any)."""
        return self._observation

    @property
    def score(self) -> int:
        """The current score."""
        return self._status()[0]

    @property
    def moves(self) -> int:
        """The move counter."""
        return self._status()[1]

    @property
    def location(self) -> str:
        """The name of the player's location (``"West of House"``)."""
        return self._status()[2]

    @property
    def inventory(self) -> list[str]:
        """Names of what the player carries, in the game's order (latest taken first)."""
        env = self._live_env()
        if self.supported:
            return [str(item.name) for item in env.get_inventory()]
        if not self._player:
            return []
        memory = self._memory()
        return [memory.name(item) for item in memory.children(self._player)]

    @property
    def done(self) -> bool:
        """The game has ended (GAME OVER)."""
        return self._done

    @property
    def victory(self) -> bool:
        """The game ended with the winning ending."""
        return self._victory

    @property
    def died(self) -> bool:
        """The player died during the last action."""
        return self._died

    # -- internals --------------------------------------------------------------------------------

    def _live_env(self) -> Any:
        if self._env is None:
            raise GameError(f"the game {self.path} was closed")
        return self._env

    def _forget(self) -> None:
        """Drop what was read of the machine: called before anything that changes it."""
        self._status_now = self._memory_now = None

    def _status(self) -> tuple[int, int, str]:
        """Score, moves and location, read in one go, once per state of the machine."""
        env = self._live_env()
        status = self._status_now
        if status is None:
            status = self._status_now = self._read_status(env)
        return status

    def _read_status(self, env: Any) -> tuple[int, int, str]:
        if self.supported:
            room = env.get_player_location()
            location = str(room.name) if room is not None else "Unknown"
            return int(env.get_score()), int(env.get_moves()), location
        # Z-machine Standard §8.2.2: global 0 is the location object, 1 the score, 2 the moves
        memory = self._memory()
        here = memory.global_word(0)
        location = memory.name(here) if 1 <= here <= self._object_count else ""
        return memory.global_signed(1), memory.global_word(2), location or "Unknown"

    def _memory(self) -> StoryMemory:
        """The memory snapshot, read once per state of the machine (the whole state is copied)."""
        env = self._live_env()
        memory = self._memory_now
        if memory is None:
            memory = self._memory_now = StoryMemory(self._story, bytes(env.get_state()[0]))
        return memory

    def _find_player(self, memory: StoryMemory) -> int:
        """The player object: held by a global and sitting in the starting room.

        Zork I's player is the object named "cretin" (global 39 of release 119, like ZIL's
        ``WINNER``); other games get the first such object with a player-like name.
        """
        count = self._object_count
        here = memory.global_word(0)
        candidates: dict[str, int] = {}
        for index in range(240):
            value = memory.global_word(index)
            if 1 <= value <= count and value != here and memory.parent(value) == here:
                candidates.setdefault(memory.name(value).lower(), value)
        return next((candidates[name] for name in _PLAYER_NAMES if name in candidates), 0)
