"""What an eval run plays: the TOML file (``[eval]`` and ``[[arms]]``) and the command-line flags.

An *arm* is one configuration of the agent (model, endpoint, tools on or off, sampling); every arm
plays the same seeds. The file is read and checked before anything starts: an unknown key, a value
of the wrong type or a duplicate arm name is one :class:`~zorkmcp.errors.ConfigError` naming the
file and the key. Flags override the file.

Example::

    [eval]
    episodes = 20
    seed = 12
    max_turns = 100
    concurrency = 16

    [[arms]]
    name = "mcp"
    mcp = true

    [[arms]]
    name = "no-mcp"
    mcp = false
"""

from __future__ import annotations

import hashlib
import json
import re
import tomllib
from collections.abc import Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, overload

import attrs
from attrs import field, frozen
from cattrs import Converter, transform_error
from cattrs.errors import BaseValidationError, ForbiddenExtraKeysError

from .._argtypes import MAX_SEED
from .._locks import LockHeldError, hold, let_go, make_folders, remove_empty
from .._outputs import check_output
from .._urls import url_problem
from ..config import LLMSettings
from ..config._convert import Problem, show
from ..errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator

    from ..config import McpConfig, ServerConfig, Settings
    from ..llm import ModelChoice

__all__ = [
    "DEFAULT_CONCURRENCY",
    "DEFAULT_EPISODES",
    "MAX_EPISODES",
    "MAX_TURNS",
    "RUN_LOCK",
    "ArmSpec",
    "EpisodeSpec",
    "EpisodeSpecs",
    "EvalFile",
    "EvalPlan",
    "EvalTable",
    "arm_setup",
    "check_run_folder",
    "claim_run_folder",
    "load_eval_file",
    "setup_clash",
]

DEFAULT_EPISODES = 10
DEFAULT_CONCURRENCY = 4
MAX_EPISODES: Final = 1_000_000
"""The most episodes an arm plays in one run. Each is two files in one folder (``episodes/<arm>/``:
ext4 holds about ten million in one, then says it is full), and the run reads every record back for
its summary (a few kB each). A run of 10⁸, a slip of the keyboard, filled 5 GB with its plan in a
minute before anything was shown."""
MAX_TURNS: Final = 1_000_000
"""The most turns an episode plays (``--turns``, ``max_turns``), as ``[tool.zorkgpt.orchestrator]
max_turns_per_episode`` allows. A record keeps its limit, and a record whose numbers are not exact
(past 2**53) is no record: ``--turns 99999999999999999999`` played and wrote episodes that the
summary, the report and ``--resume`` then could not read (no score, exit 0, every resume played
them again)."""
_ARM_NAME: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_DEVICE: Final = re.compile(r"(?:CON|PRN|AUX|NUL|COM[0-9]|LPT[0-9])(?:\..*)?", re.IGNORECASE)
"""The names Windows keeps for its devices (``CON``, ``nul.txt`` too): no folder can have them there."""


class _Problem(ValueError):
    """A value the file may not hold; ``key``: the key it is of, which the message starts with."""

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


def _positive(_: Any, attribute: attrs.Attribute[Any], value: int | None) -> None:
    if value is not None and value < 1:
        raise _Problem(f"{attribute.name} must be >= 1, got {value}", attribute.name)


def _turns(inst: Any, attribute: attrs.Attribute[Any], value: int | None) -> None:
    _positive(inst, attribute, value)
    if value is not None and value > MAX_TURNS:  # as [tool.zorkgpt.orchestrator] max_turns_per_episode
        raise _Problem(f"{attribute.name} must be <= {MAX_TURNS}, got {value}", attribute.name)


def _seed(_: Any, attribute: attrs.Attribute[Any], value: int | None) -> None:
    if value is not None and not 0 <= value <= MAX_SEED:
        raise _Problem(
            f"{attribute.name} must be from 0 to {MAX_SEED} (2**31 - 1), got {value}", attribute.name
        )


def _not_blank(_: Any, attribute: attrs.Attribute[Any], value: str | None) -> None:
    if value is not None and not value.strip():  # "" would be the eval file's folder, unasked
        raise _Problem(
            f"{attribute.name} is empty: give the run's folder, or leave it out for runs/<timestamp>",
            attribute.name,
        )


def _a_file(_: Any, attribute: attrs.Attribute[Any], value: str | None) -> None:
    """A file's path: blank is none (relative to the eval file's folder, it would be that folder)."""
    if value is not None and not value.strip():
        raise _Problem(
            f"{attribute.name} is empty: give the arm's mcp_config.json, or leave the key out", attribute.name
        )


def _named(_: Any, attribute: attrs.Attribute[Any], value: str | None) -> None:
    """A model or a variable name: blank is none (it would be sent, or read, as it is)."""
    if value is not None and not value.strip():
        what = (
            "the model's name"
            if attribute.name == "model"
            else "the name of the variable that holds the API key"
        )
        raise _Problem(f"{attribute.name} is blank: give {what}, or leave the key out", attribute.name)
    if attribute.name == "api_key_env" and value is not None:
        try:  # the rule of [tool.zorkgpt.llm]: a variable's name, and a key pasted there is never shown
            LLMSettings(api_key_env=value)
        except Problem as exc:
            raise _Problem(str(exc), attribute.name) from None


def _arm_name(_: Any, attribute: attrs.Attribute[Any], value: str) -> None:
    """A name that is a folder's on Linux, macOS and Windows alike (a run's folder is copied, shared)."""
    if not _ARM_NAME.fullmatch(value):
        raise _Problem(
            f"name must be 1-64 letters, digits, '.', '_' or '-' (ASCII, the first a letter or digit: it "
            f"names a folder), got {_shown(value)}{_long(value)}",
            "name",
        )
    if value.endswith("."):  # Windows drops it: "v1." would be v1's folder
        raise _Problem(
            f"name must not end with '.' (it names a folder, and Windows drops a trailing '.': it would "
            f"be {value.rstrip('.')!r}), got {value!r}",
            "name",
        )
    if _DEVICE.fullmatch(value):
        raise _Problem(
            f"name must not be a device name of Windows (CON, PRN, AUX, NUL, COM0-9, LPT0-9, with or "
            f"without an extension), where no folder can have it, got {value!r}",
            "name",
        )


def _long(name: str) -> str:
    """`` (300 characters)``, said of a name too long for a folder (its first 40 are shown)."""
    return f" ({len(name)} characters)" if len(name) > 64 else ""


def _http_url(_: Any, attribute: attrs.Attribute[Any], value: str | None) -> None:
    if value is not None and (problem := url_problem(value, example="https://openrouter.ai/api/v1")):
        raise _Problem(f"{attribute.name} {problem}", attribute.name)


def _sampling(_: Any, attribute: attrs.Attribute[Any], value: float | None) -> None:
    """The ranges of ``[tool.zorkgpt.agent_sampling]`` (checked here, when the file is read)."""
    from ..config import SamplingSettings

    if value is not None:
        try:
            values: dict[str, Any] = {attribute.name: value}
            SamplingSettings(**values)
        except ValueError as exc:  # its rule, in its words: "temperature must be <= 2, got 3.0"
            raise _Problem(str(exc), attribute.name) from None


def _environ_base_url() -> str | None:
    """``OPENAI_BASE_URL`` in this process (``None``: unset or blank), read once where a plan is made."""
    from ..llm._select import environ_base_url

    return environ_base_url()


@frozen(kw_only=True)
class ArmSpec:
    """One arm: a configuration of the agent; ``None`` keeps what ``zorkmcp play`` would use.

    Attributes:
        name: the arm's name (also its folder under ``episodes/``).
        model: the model name.
        base_url: the OpenAI-compatible endpoint.
        mcp: whether the agent has the reasoning servers and tools.
        mcp_config: the ``mcp_config.json`` to use (relative: to the eval file's folder).
        api_key_env: the environment variable holding the API key.
    """

    name: str = field(validator=_arm_name)
    model: str | None = field(default=None, validator=_named)
    base_url: str | None = field(default=None, validator=_http_url)
    mcp: bool | None = None
    mcp_config: str | None = field(default=None, validator=_a_file)
    api_key_env: str | None = field(default=None, validator=_named)
    temperature: float | None = field(default=None, validator=_sampling)
    top_p: float | None = field(default=None, validator=_sampling)
    top_k: int | None = field(default=None, validator=_sampling)
    min_p: float | None = field(default=None, validator=_sampling)
    max_tokens: int | None = field(default=None, validator=[_positive, _sampling])

    def settings_for(self, base: Settings) -> Settings:
        """The settings an episode of this arm runs with: ``base`` with this arm's values."""
        sampling = {
            key: getattr(self, key)
            for key in ("temperature", "top_p", "top_k", "min_p", "max_tokens")
            if getattr(self, key) is not None
        }
        mcp = base.mcp
        if self.mcp is not None:
            mcp = attrs.evolve(mcp, enabled=self.mcp)
        if self.mcp_config is not None:
            mcp = attrs.evolve(mcp, config_file=self.mcp_config)
        llm = base.llm if self.api_key_env is None else attrs.evolve(base.llm, api_key_env=self.api_key_env)
        return attrs.evolve(
            base, mcp=mcp, llm=llm, agent_sampling=attrs.evolve(base.agent_sampling, **sampling)
        )


@frozen(kw_only=True)
class EvalTable:
    """The ``[eval]`` table; ``None`` leaves the value to the flags or the defaults."""

    episodes: int | None = field(default=None, validator=_positive)
    seed: int | None = field(default=None, validator=_seed)
    max_turns: int | None = field(default=None, validator=_turns)
    concurrency: int | None = field(default=None, validator=_positive)
    game: str | None = None
    out: str | None = field(default=None, validator=_not_blank)


@frozen(kw_only=True)
class EvalFile:
    """An eval file: ``[eval]`` and ``[[arms]]`` (paths in it already made absolute)."""

    eval: EvalTable = field(factory=EvalTable)
    arms: list[ArmSpec] = field(factory=list)


@frozen(kw_only=True)
class EpisodeSpec:
    """One episode to play: everything a process (or a Ray worker) needs, picklable."""

    arm: str
    seed: int
    max_turns: int
    game_path: Path
    settings: Settings
    model: str | None = None
    base_url: str | None = None
    game_server: ServerConfig | None = None
    """The game's MCP server; default: the game server seeded with :attr:`seed`, in the playing process."""
    openai_base_url: str | None = field(factory=_environ_base_url, repr=False)  # it may hold user info
    """``OPENAI_BASE_URL`` where the spec was made (the driver; ``None``: unset): the base URL when
    neither :attr:`base_url` nor the settings give one. A Ray worker plays against the endpoint the
    run announced, whatever its own environment says; the API key is still read where the episode plays."""

    @property
    def key(self) -> tuple[str, int]:
        """``(arm, seed)``: names the episode's files."""
        return (self.arm, self.seed)

    def model_choice(self, walkthrough: Sequence[str] | None = None) -> ModelChoice:
        """The episode's model, as this process's settings and environment choose it (its API key).

        Args:
            walkthrough: the commands for the offline scripted model, should it play.
        """
        from ..llm import BASE_URL_ENV, ModelChoice

        return ModelChoice.from_settings(
            self.settings,
            model_override=self.model,
            base_url_override=self.base_url,
            walkthrough=walkthrough,
            base_url_environ={BASE_URL_ENV: self.openai_base_url} if self.openai_base_url else {},
        )


@frozen(kw_only=True)
class EvalPlan:
    """The whole run: the arms, the seeds and where the files go."""

    arms: tuple[ArmSpec, ...]
    episodes: int
    seed: int
    max_turns: int
    concurrency: int
    game_path: Path
    out: Path
    settings: Settings
    openai_base_url: str | None = field(factory=_environ_base_url, repr=False)  # it may hold user info
    """``OPENAI_BASE_URL`` where the plan was made (``None``: unset), for every episode's spec
    (:attr:`EpisodeSpec.openai_base_url`)."""

    @property
    def seeds(self) -> range:
        """``seed … seed + episodes - 1``."""
        return range(self.seed, self.seed + self.episodes)

    def specs(self) -> EpisodeSpecs:
        """Every episode, seed by seed, the arms interleaved (so a stopped run has all arms).

        A sequence that makes each episode's spec when it is asked for: a run lists its episodes
        more than once (its plan, what is left of it, what finished), and a list of a million
        episodes took 3.5 s and 200 MB to make each time. An arm's episodes share one (frozen)
        settings object.
        """
        return EpisodeSpecs(self)


class EpisodeSpecs(Sequence[EpisodeSpec]):
    """The episodes of a plan (:meth:`EvalPlan.specs`): seed by seed, the arms in the plan's order.

    Each spec is made when it is asked for; indexing, slicing (a list), ``len`` and ``reversed``
    cost no more than the specs they give.
    """

    __slots__ = ("_arms", "_plan", "_settings")

    def __init__(self, plan: EvalPlan) -> None:
        self._plan = plan
        self._arms = plan.arms
        self._settings = {arm.name: arm.settings_for(plan.settings) for arm in plan.arms}

    def __len__(self) -> int:
        return len(self._arms) * self._plan.episodes

    @overload
    def __getitem__(self, index: int) -> EpisodeSpec: ...

    @overload
    def __getitem__(self, index: slice) -> list[EpisodeSpec]: ...

    def __getitem__(self, index: int | slice) -> EpisodeSpec | list[EpisodeSpec]:
        if isinstance(index, slice):
            return [self._spec(i) for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError(f"episode {index} of {len(self)}")
        return self._spec(index)

    def __iter__(self) -> Iterator[EpisodeSpec]:
        return (self._spec(i) for i in range(len(self)))

    def _spec(self, index: int) -> EpisodeSpec:
        seed, which = divmod(index, len(self._arms))
        arm, plan = self._arms[which], self._plan
        return EpisodeSpec(
            arm=arm.name,
            seed=plan.seed + seed,
            max_turns=plan.max_turns,
            game_path=plan.game_path,
            settings=self._settings[arm.name],
            model=arm.model,
            base_url=arm.base_url,
            openai_base_url=plan.openai_base_url,
        )


def _strict(kind: type, check: Any, expected: str) -> Any:
    def structure(value: object, _: type) -> Any:
        if not check(value):
            raise _Problem(f"must be {expected}, got {show(value)}")  # as the settings file says it
        return kind(value)

    return structure


def _converter() -> Converter:
    converter = Converter(forbid_extra_keys=True, detailed_validation=True)
    converter.register_structure_hook(str, _strict(str, lambda v: isinstance(v, str), "a string"))
    converter.register_structure_hook(bool, _strict(bool, lambda v: isinstance(v, bool), "true or false"))
    is_int = lambda v: isinstance(v, int) and not isinstance(v, bool)  # noqa: E731
    converter.register_structure_hook(int, _strict(int, is_int, "an integer"))
    is_number = lambda v: isinstance(v, int | float) and not isinstance(v, bool)  # noqa: E731
    converter.register_structure_hook(float, _strict(float, is_number, "a number"))
    return converter


_CONVERTER: Final = _converter()


_KEYED: Final = "\x00"
"""Starts a message of :func:`_format` that starts with its key (a value an attrs validator refused:
cattrs places it at the table, ``$.eval``), to be named as the others are, ``eval.episodes``."""


def _format(exc: BaseException, type_: type | None) -> str:
    if isinstance(exc, _Problem) and exc.key is not None and str(exc).startswith(f"{exc.key} "):
        return f"{_KEYED}{exc}"
    if isinstance(exc, ForbiddenExtraKeysError):
        allowed = ", ".join(a.name for a in attrs.fields(exc.cl))
        return f"has unknown key {', '.join(sorted(exc.extra_fields))} (allowed: {allowed})"
    if isinstance(exc, _Problem | ValueError | TypeError):
        return str(exc)
    if isinstance(exc, KeyError):
        return "is required"
    return f"is invalid ({type(exc).__name__}: {exc})"


def load_eval_file(path: Path) -> EvalFile:
    """Read and check an eval file (relative ``game``, ``out`` and ``mcp_config``: to its folder).

    Raises:
        ConfigError: unreadable, not TOML, an unknown key, a wrong type, a duplicate arm name.
    """
    try:
        data = tomllib.loads(
            path.read_text(encoding="utf-8-sig")
        )  # a BOM (Notepad writes one) is no statement
    except OSError as exc:
        raise ConfigError(f"cannot read the eval file {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(_not_utf8(path, exc)) from None
    except tomllib.TOMLDecodeError as exc:
        if path.suffix.lower() == ".json":  # an mcp_config.json given where the eval file goes
            raise ConfigError(
                f"the eval file {path} is JSON, not TOML: an eval file is TOML, with [eval] and [[arms]] "
                "tables; an mcp_config.json is named by an arm's mcp_config key (or [tool.zorkgpt.mcp] "
                "config_file)"
            ) from exc
        raise ConfigError(f"invalid TOML in the eval file {path}: {exc}") from exc
    if "tool" in data and not {"eval", "arms"} & data.keys():  # a pyproject.toml: its settings
        raise ConfigError(
            f"{path} holds [tool…] tables and no [eval] or [[arms]]: it is a settings file, not an eval "
            f"file; pass it as --pyproject {path} (an eval file holds [eval] and [[arms]] tables)"
        )
    _check_tables(path, data)
    try:
        parsed = _CONVERTER.structure(data, EvalFile)
    except (BaseValidationError, _Problem) as exc:
        lines = transform_error(exc, path="$", format_exception=_format)
        message, _, where = lines[0].rpartition(" @ $")
        key = where.lstrip(".")
        if message.startswith(_KEYED):  # "episodes must be >= 1" @ $.eval: eval.episodes
            name, _, message = message.removeprefix(_KEYED).partition(" ")
            key = f"{key}.{name}" if key else name
        key = key or "the top level"
        raise ConfigError(f"{path}: {key} {message} (fix the key in the eval file)") from None
    names = [arm.name for arm in parsed.arms]
    folded = [name.casefold() for name in names]
    for later, name in enumerate(names):
        first = folded.index(folded[later])
        if first == later:
            continue
        if names[first] == name:
            raise ConfigError(
                f"{path}: arms[{first}].name and arms[{later}].name are both {name!r}; each arm names a "
                "folder of the run, so names must differ (fix the key in the eval file)"
            )
        # episodes/<arm>/ would be one folder on macOS and Windows: one arm's files over the other's
        raise ConfigError(
            f"{path}: arms[{first}].name {names[first]!r} and arms[{later}].name {name!r} differ only in "
            "case, and each names a folder of the run; names must differ in more than case (fix the key "
            "in the eval file)"
        )
    return _absolute(parsed, path.parent)


def _not_utf8(path: Path, exc: UnicodeDecodeError) -> str:
    """Why an eval file is no TOML: it is not UTF-8 (TOML's only encoding), in one line with the fix."""
    head = exc.object[:2]
    if head in (b"\xff\xfe", b"\xfe\xff"):  # Windows PowerShell's `>` and Out-File write UTF-16
        return (
            f"the eval file {path} is UTF-16 text, and TOML is UTF-8; save it as UTF-8 (in PowerShell: "
            "Out-File -Encoding utf8)"
        )
    before = exc.object[: exc.start]
    line, column = before.count(b"\n") + 1, exc.start - (before.rfind(b"\n") + 1) + 1
    return (
        f"the eval file {path} is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} on line {line}, "
        f"column {column}), and TOML is UTF-8; save it as UTF-8"
    )


def _check_tables(path: Path, data: dict[str, Any]) -> None:
    """``[eval]`` is one table and ``[[arms]]`` an array of tables: anything else in one line.

    cattrs would take a string for a list of its characters (``arms = "mcp"``: three arms) and say
    ``'str' object has no attribute 'keys'`` of the first.
    """
    arms, table = data.get("arms"), data.get("eval")
    if isinstance(arms, dict):
        raise ConfigError(
            f"{path}: arms is one table ([arms]); write each arm as [[arms]], an array of tables"
        )
    if isinstance(table, list):
        raise ConfigError(f"{path}: eval is an array of tables ([[eval]]); write it as one table, [eval]")
    if table is not None and not isinstance(table, dict):
        raise ConfigError(
            f"{path}: eval must be a table ([eval] with episodes, seed, …), got {_shown(table)} "
            "(fix the key in the eval file)"
        )
    if arms is not None and not isinstance(arms, list):
        raise ConfigError(
            f"{path}: arms must be an array of tables ([[arms]] with name, model, …, one per arm), got "
            f"{_shown(arms)} (fix the key in the eval file)"
        )
    if arms == []:  # written out, it says "no arm": the one arm zorkmcp play would use was played instead
        raise ConfigError(
            f"{path}: arms is empty (arms = []), so the file plays no arm; write one [[arms]] table per "
            "arm (name, model, …), or leave arms out for the one arm zorkmcp play would use (fix the key "
            "in the eval file)"
        )
    for index, arm in enumerate(arms or []):
        if not isinstance(arm, dict):
            raise ConfigError(
                f"{path}: arms[{index}] must be a table ([[arms]] with name, model, …), got "
                f"{_shown(arm)} (fix the key in the eval file)"
            )


def _shown(value: object) -> str:
    """A TOML value as the message shows it: its repr, cut to 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _game(value: str | None, base: Path) -> str | None:
    """``[eval] game`` as ``--game`` would take it, with the eval file's folder for the working folder.

    A path with a folder in it is relative to the eval file's folder. A bare name is a file there
    when there is one, else a game's name (``zork1``), or a story file's (``zork1.z3``), looked up in
    the games folders as ``--game zork1.z3`` is: the same file plays wherever the run is started
    from (``game = "zork1.z3"`` played from the eval file's folder and from nowhere else).
    """
    if value is None:
        return None
    from ..game._paths import default_games_dirs

    candidate = Path(value).expanduser()
    if candidate.is_absolute():
        return str(candidate)
    here = base / candidate
    if "/" in value or here.is_file():
        return str(here)
    if candidate.suffix == "":
        return value  # a game's name, e.g. zork1 (or "": --game's message says it is empty)
    for folder in default_games_dirs():
        if (folder / value).is_file():
            return str(folder / value)
    return str(here)  # none: "game file not found: <the eval file's folder>/zork9.z5"


def _absolute(parsed: EvalFile, base: Path) -> EvalFile:
    table = attrs.evolve(parsed.eval, game=_game(parsed.eval.game, base))
    if table.out is not None and not Path(table.out).expanduser().is_absolute():
        table = attrs.evolve(table, out=str(base / table.out))
    arms = [
        attrs.evolve(arm, mcp_config=str((base / Path(arm.mcp_config).expanduser()).resolve()))
        if arm.mcp_config is not None
        else arm
        for arm in parsed.arms
    ]
    return EvalFile(eval=table, arms=arms)


def _is_summary_json(path: Path) -> bool:
    try:
        summary = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return False
    return isinstance(summary, dict) and {"arms", "comparisons"} <= summary.keys()


def _opens_with(marker: bytes, *, within: int = 0) -> Callable[[Path], bool]:
    """Whether a file holds ``marker`` in its first ``within`` bytes and the marker's own."""

    def check(path: Path) -> bool:
        try:
            with path.open("rb") as f:
                return marker in f.read(within + len(marker))
        except OSError:
            return False

    return check


_RUN_FILES: Final[dict[str, Callable[[Path], bool]]] = {
    "summary.json": _is_summary_json,
    "summary.csv": _opens_with(b"arm,seed,score,"),
    "report.html": _opens_with(b"<title>zorkmcp ", within=200),  # a run's, or an episode's page
}
"""The files a run writes at the top of its folder, and how to tell that a run wrote one (its keys,
its header, its title). A page zorkmcp drew can be drawn again from the files it was drawn from; any
other file of these names is the user's, not the run's to replace."""


def check_run_folder(out: Path, named: str, *, resuming: bool, claims: ExitStack | None = None) -> None:
    """Before anything starts: can the run's folder be made and written to, without losing a run?

    A path the folder cannot be made at would otherwise be found when the first episode ends, with
    an episode played for nothing. A folder another ``zorkmcp eval`` is writing to is its run's
    until it ends (:func:`claim_run_folder`): two runs would play every episode twice and write
    over each other's files. A folder that already holds finished episodes is another run's:
    without ``--resume`` its episodes would be played again and their files replaced (with a real
    model, paid for twice). A ``summary.json``, ``summary.csv`` or ``report.html`` in it that
    zorkmcp did not write (a ``pytest-html`` page, ``--out .`` in a project) is the user's: the run
    would replace it.

    Args:
        out: the run's folder.
        named: how the user gave it, for the message (``--out runs/x``, ``eval.toml: out``).
        resuming: ``--resume`` or ``--retry-failed``: the folder's episodes are this run's.
        claims: where the claim on the folder is kept (:func:`claim_run_folder`) until the run
            ends; ``None``: the folder is not claimed (a plan that is only looked at).

    Raises:
        ConfigError: a part of the path is a file, the folder (or the one it would be made in) is
            not writable, another run is writing to it, it holds a file of a run's name that zorkmcp
            did not write, or, unless ``resuming``, it holds finished episodes.
    """
    check_output(out, named, "pass another --out", folder=True, what="the run's folder")
    if claims is not None:
        claims.enter_context(claim_run_folder(out, named))
    if not resuming and (found := sorted(out.glob("episodes/*/seed-*.json"))):
        raise ConfigError(
            f"{named}: {out} already holds {len(found)} episode file(s) of a run, such as {found[0]}; "
            "to go on with that run pass --resume, else pass another --out (nothing was played or replaced)"
        )
    for name, is_the_runs in _RUN_FILES.items():
        path = out / name
        if path.is_file() and not is_the_runs(path):
            raise ConfigError(
                f"{named}: {path} is not a file zorkmcp wrote, and the run would replace it (a run "
                f"writes {', '.join(_RUN_FILES)} in its folder); move it, or pass another --out "
                "(nothing was played or replaced)"
            )


RUN_LOCK: Final = ".zorkmcp-eval.lock"
"""The file in a run's folder that the run holding the folder keeps locked (``flock``), holding its
process id. It is removed when the run ends; one a killed run left is not held by anyone."""


@contextmanager
def claim_run_folder(out: Path, named: str) -> Iterator[None]:
    """Hold the run's folder for this process until the context is left; make it, if missing.

    The claim is an exclusive ``flock`` on :data:`RUN_LOCK` in the folder: the system lets it go
    when the process ends, however it ends (``kill -9`` too), so a claim is never left stale. On
    leaving, the lock file is removed, and the folders made here too if the run wrote nothing in
    them (a cluster that could not be joined leaves no folder).

    Args:
        out: the run's folder.
        named: how the user gave it, for the message (``--out runs/x``, ``eval.toml: out``).

    Raises:
        ConfigError: another process holds the folder (the message names its process id), or the
            folder cannot be made.
    """
    made = _make_folders(out, named)
    try:
        fd = _lock(out / RUN_LOCK, named, out)
    except BaseException:
        remove_empty(made)
        raise
    try:
        yield
    finally:
        let_go(out / RUN_LOCK, fd)  # removed while still held: a run waiting on it takes a fresh one
        remove_empty(made)


def _make_folders(out: Path, named: str) -> list[Path]:
    """Make ``out`` and the folders above it that are missing; the ones made here, outermost first."""
    try:
        return make_folders(out)
    except OSError as exc:
        raise ConfigError(
            f"{named}: the run's folder {out} cannot be made ({exc.strerror or exc}); pass another --out"
        ) from exc


def _lock(path: Path, named: str, out: Path) -> int | None:
    """Lock ``path`` (made if missing) and write this process's id in it; its descriptor.

    ``None`` on a file system that does not lock files (the run goes on unclaimed, as before).
    """
    try:
        return hold(path)
    except LockHeldError as held:
        pid = f" (pid {held.holder})" if held.holder is not None else ""
        raise ConfigError(
            f"{named}: another zorkmcp eval{pid} is writing to {out}; wait for it to end, or pass "
            "another --out (nothing was played or replaced)"
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"{named}: {path} cannot be opened ({exc.strerror or exc}), so the run cannot hold its "
            "folder; pass another --out"
        ) from exc


# -- what an arm plays with: a record's ``setup``, and what a resume compares -------------------------

AGENT_SETTINGS: Final = (
    "max_tool_iterations",
    "tool_call_timeout_seconds",
    "server_startup_timeout_seconds",
    "max_result_bytes",
    "force_tool_support",
    "turn_timeout_seconds",
)
"""The ``[tool.zorkgpt.mcp]`` settings that change how an arm with tools plays, kept as they are in a
record's ``setup.agent`` (numbers and booleans: no secret). An arm without tools keeps only
:data:`_AGENT_WITHOUT_TOOLS`: the others change nothing in it."""

_AGENT_WITHOUT_TOOLS: Final = ("turn_timeout_seconds",)

SERVER_SHOWN: Final = ("type", "module", "lifecycle", "timeout", "tools", "sampling")
"""A server's settings a record keeps as they are: none holds a secret, none is expanded from ``${VAR}``."""

SERVER_DIGESTED: Final = ("command", "args", "env", "cwd", "url", "headers", "roots")
"""A server's settings a record keeps only as a digest (:func:`digest`): they may hold a token
(``env`` values, ``headers``, an ``--api-key`` argument, a URL's query), and ``${VAR}`` in them is
expanded from the environment of the process that reads ``mcp_config.json``."""


def digest(value: Any) -> str | None:
    """The first 16 hex digits of the SHA-256 of ``value`` as canonical JSON; ``None`` for nothing
    (``None``, ``""``, an empty list or mapping): a record tells two values apart without holding them."""
    if value is None or (isinstance(value, str | list | dict) and not value):
        return None
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _server_setup(server: ServerConfig) -> dict[str, Any]:
    shown = {
        "type": server.type,
        "module": server.module,
        "lifecycle": server.lifecycle,
        "timeout": server.timeout,
        "tools": list(server.tools) if server.tools is not None else None,
        "sampling": server.sampling,
    }
    digested = {
        "command": digest(server.command),
        "args": digest(list(server.args)),
        "env": digest(dict(server.env)),
        "cwd": digest(server.cwd),
        "url": digest(server.url),
        "headers": digest(dict(server.headers)),
        "roots": digest(list(server.roots)) if server.roots is not None else None,
    }
    return shown | digested


def arm_setup(settings: Settings, reasoning: McpConfig | None) -> dict[str, Any]:
    """What an episode of an arm plays with beyond its model, sampling and turns: a record's ``setup``.

    ``agent``: the settings of :data:`AGENT_SETTINGS` (only ``turn_timeout_seconds`` without tools);
    ``servers``: per enabled reasoning server, its :data:`SERVER_SHOWN` settings as they are and its
    :data:`SERVER_DIGESTED` ones as digests (never a secret in clear); ``fingerprint``: the digest of
    both, one value to tell two setups apart.

    Args:
        settings: the arm's settings.
        reasoning: the arm's reasoning servers (its ``mcp_config.json``, read), ``None`` without tools.
    """
    keys = AGENT_SETTINGS if reasoning is not None else _AGENT_WITHOUT_TOOLS
    agent = {key: getattr(settings.mcp, key) for key in keys}
    servers = (
        {s.name: _server_setup(s) for s in sorted(reasoning.enabled_servers, key=lambda s: s.name)}
        if reasoning is not None
        else {}
    )
    return {"fingerprint": digest({"agent": agent, "servers": servers}), "agent": agent, "servers": servers}


def setup_clash(
    recorded: dict[str, Any], planned: dict[str, Any], *, arm: str, source: Path | None, cluster: bool
) -> str | None:
    """How a record's ``setup`` differs from the one the run would play (``None``: it does not).

    Only what both have is compared (a record of an older zorkmcp has less). On a Ray cluster
    (``cluster``) a server's :data:`SERVER_DIGESTED` settings are not compared: each worker expands
    ``${VAR}`` in them from its own environment.

    Args:
        recorded: the record's ``setup``.
        planned: :func:`arm_setup` of the run's arm.
        arm: the arm's name, for the message.
        source: the arm's ``mcp_config.json``, for the message.
        cluster: the episodes play on a Ray cluster.

    Returns:
        ``max_tool_iterations is 20 but this run's arm mcp has 5 ([tool.zorkgpt.mcp] max_tool_iterations)``,
        or ``server 'thinking' of this run's arm mcp has other args (…)``: what differs, where it is set.
    """
    agent, planned_agent = recorded.get("agent") or {}, planned["agent"]
    for key in AGENT_SETTINGS:
        if key in agent and key in planned_agent and agent[key] != planned_agent[key]:
            return (
                f"{key} is {json.dumps(agent[key])} but this run's arm {arm} has "
                f"{json.dumps(planned_agent[key])} ([tool.zorkgpt.mcp] {key} in the settings file)"
            )
    fields = SERVER_SHOWN if cluster else (*SERVER_SHOWN, *SERVER_DIGESTED)
    servers = recorded.get("servers") or {}
    for name, now in planned["servers"].items():
        then = servers.get(name)
        if not isinstance(then, dict):
            continue
        differ = [key for key in fields if key in then and key in now and then[key] != now[key]]
        if differ:
            which = differ[0] if len(differ) == 1 else f"{', '.join(differ[:-1])} and {differ[-1]}"
            where = f"{source}, the arm's mcp_config.json" if source is not None else "the arm's servers"
            return (
                f"server {name!r} of this run's arm {arm} has other {which} than the episode played with "
                f"({where})"
            )
    return None
