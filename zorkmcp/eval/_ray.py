"""Episodes as Ray tasks: each runs the same episode code under its own ``trio.run`` in a worker.

The driver keeps at most K tasks in flight (``ray.wait``), writes each result's files itself (so
``--resume`` and the report work the same as a local run) and, on Ctrl-C, cancels the tasks in
flight. A local Ray runtime the run started is shut down with it. Needs ``pip install
'zorkmcp[ray]'``; the workers of a cluster need zorkmcp and the story file at the same path.

Each task asks Ray for a share of a CPU small enough that K of them fit on the cluster at once
(:func:`place_episodes`). Ray's default, one CPU per task, ran only as many episodes as the cluster
has CPUs: ``--ray --concurrency 16`` on 2 cores played 2 at a time (16 episodes of 20 one-second
turns: 186 s, against 37 s with 0.125 CPU each). An episode waits for its model most of the time:
there, its worker took about 1.5 s of CPU to start (once: Ray keeps it for the next episode) and
under 20 ms per one-second turn.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import threading
from functools import partial
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

import anyio
import attrs

from ..errors import ConfigError, exception_leaves
from ._runner import EpisodeResult, endpoint_of, open_http_pools, play_episode, write_episode

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from pathlib import Path

    from anyio.abc import SocketStream

    from ._spec import EpisodeSpec

__all__ = [
    "RayPlacement",
    "cannot_join",
    "check_ray_address",
    "not_ray",
    "place_episodes",
    "play_in_worker",
    "play_on_ray",
]

LOCAL = "local"
"""``--ray`` without an address: start a local Ray runtime for the run."""

RESOURCE_UNITS: Final = 10_000
"""Ray counts a resource in ten-thousandths: a task's share of a CPU is a whole number of them."""


@attrs.frozen(kw_only=True)
class RayPlacement:
    """How the run's episodes fit on the Ray cluster as it is when the run starts."""

    nodes: int
    """Alive nodes."""
    cpus: float
    """Their CPUs, all together."""
    cpus_per_episode: float
    """What each episode's task asks Ray for (``num_cpus``)."""
    at_once: int
    """How many episodes that lets run at once (at most K); 0 when the cluster has no CPU yet."""

    def describe(self) -> str:
        """One line for the run's header."""
        nodes = f"{self.nodes} node{'s' if self.nodes != 1 else ''}"
        share = f"{self.cpus_per_episode:g} CPU"
        if self.at_once == 0:
            return f"Ray: no CPU on {nodes} yet; each episode asks for {share} and waits for one"
        cpus = f"{self.cpus:g} CPU{'s' if self.cpus != 1 else ''}"
        return f"Ray: {cpus} on {nodes}; each episode asks for {share}, so {self.at_once} run at once"


def place_episodes(node_cpus: Iterable[float], concurrency: int) -> RayPlacement:
    """The largest share of a CPU (at most 1) that lets ``concurrency`` episodes run at once on these nodes.

    A node holds ``floor(its CPUs ÷ share)`` episodes, counted in Ray's ten-thousandths of a CPU, so
    a share that fits on paper is never a ten-thousandth short. When even the smallest share Ray
    allows cannot fit them all, it is that share, and ``at_once`` says how many fit. A cluster with
    no CPU yet (an autoscaler that starts from zero) gets Ray's default, one CPU per episode, which
    asks the autoscaler for nodes.

    Args:
        node_cpus: the CPUs of each alive node.
        concurrency: K.
    """
    listed = list(node_cpus)
    units = [round(c * RESOURCE_UNITS) for c in listed if c > 0]

    def fit(share: int) -> int:
        return sum(u // share for u in units)

    if not units:
        return RayPlacement(nodes=len(listed), cpus=0.0, cpus_per_episode=1.0, at_once=0)
    wanted = min(concurrency, fit(1))
    low, high = 1, RESOURCE_UNITS  # fit(low) >= wanted; the largest such share is in [low, high]
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if fit(middle) >= wanted else (low, middle - 1)
    return RayPlacement(
        nodes=len(listed),
        cpus=sum(units) / RESOURCE_UNITS,
        cpus_per_episode=low / RESOURCE_UNITS,
        at_once=min(concurrency, fit(low)),
    )


ADDRESS_SECONDS: Final = 10.0
"""How long :func:`check_ray_address` waits for a connection, and then for the first answer."""

HTTP2_PREFACE: Final = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
"""A client's HTTP/2 connection preface and its (empty) SETTINGS frame: what a gRPC client sends first."""

_REMEDY: Final = (
    "check the address (the head's GCS port, 6379 unless ray start --port said otherwise, or "
    "ray://HOST:10001 for Ray Client; the dashboard's port, 8265, is for ray job submit), or start the "
    "cluster (ray start --head)"
)


def check_ray_address(address: str) -> None:
    """Before a run joins a cluster: does a Ray cluster answer at ``--ray HOST:PORT`` or ``ray://HOST:PORT``?

    Ray retries an address where nothing listens for minutes, three warnings a minute
    (``--ray 127.0.0.1:1`` was still retrying after 120 s), and so it does where something else
    listens: an HTTP server's port kept ``--ray HOST:PORT`` waiting past 40 s, and ``ray://HOST:PORT``
    failed after 31 s. One connection says so at once. Ray's GCS and its Ray Client server speak
    gRPC, so each answers an HTTP/2 connection preface with a SETTINGS frame (in 1–5 ms, measured on
    both); anything else there (an HTTP/1 server, an SSH server, a silent one) is not a cluster to
    join. A gRPC server that is not Ray's passes, and Ray then says what it makes of it. With
    ``RAY_USE_TLS`` on, the preface would need TLS first: the connection alone is checked. ``auto``
    is ``RAY_ADDRESS`` when that is set (checked the same way), else left to Ray, which fails at
    once when it finds no cluster on this machine.

    Raises:
        ConfigError: no Ray cluster answers there (one line: the address, why, what to do).
    """
    named = f"--ray {address}"
    if address == "auto":
        address = os.environ.get("RAY_ADDRESS", "")
        named = f"--ray auto (RAY_ADDRESS={address})"
    if address in ("", LOCAL, "auto"):
        return
    parts = urlsplit(address if "://" in address else f"//{address}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:  # a port that is not a number: Ray says what it makes of it
        return
    if host is None or port is None:
        return
    from .._bridge import run_trio

    tls = os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true")  # as Ray reads it
    why = run_trio(partial(not_ray, host, port, tls=tls))
    if why is not None:
        raise ConfigError(f"{named}: no Ray cluster answers at {host}:{port} ({why}); {_REMEDY}")


async def not_ray(host: str, port: int, *, tls: bool = False) -> str | None:
    """Why no Ray cluster answers at ``host:port``; ``None`` when one may (:func:`check_ray_address`)."""
    connected = False
    with anyio.move_on_after(ADDRESS_SECONDS):
        try:
            stream = await anyio.connect_tcp(host, port)
        except OSError as exc:
            return _reason(exc)
        connected = True
        async with stream:
            return None if tls else await _not_grpc(stream)
    if connected:
        return (
            f"something accepts connections there and said nothing within {ADDRESS_SECONDS:.0f} s; "
            "Ray answers at once"
        )
    return f"no connection within {ADDRESS_SECONDS:.0f} s"


async def _not_grpc(stream: SocketStream) -> str | None:
    """Send an HTTP/2 preface: ``None`` if a SETTINGS frame comes back, else what came instead."""
    answer = b""
    try:
        await stream.send(HTTP2_PREFACE)
        while len(answer) < 9:
            answer += await stream.receive()
    except (anyio.EndOfStream, anyio.BrokenResourceError):  # closed, or reset, by the peer
        pass
    if len(answer) >= 9 and answer[3] == 0x04 and answer[5:9] == bytes(4):  # SETTINGS, on the connection
        return None
    if not answer:
        return "something accepts connections there and closed this one without an answer; Ray speaks gRPC"
    first = answer.split(b"\n", 1)[0].strip()[:60].decode("ascii", "backslashreplace")
    return f'something else answers there: "{first}"; Ray speaks gRPC'


def _reason(exc: OSError) -> str:
    """``Type: message`` of what stopped a connection (anyio's "All connection attempts failed": the last)."""
    if exc.__cause__ is not None and isinstance(cause := exception_leaves(exc.__cause__)[-1], OSError):
        exc = cause
    if isinstance(exc.errno, int) and exc.errno > 0:  # not "Error connecting to (address): …"
        return f"{type(exc).__name__}: [Errno {exc.errno}] {os.strerror(exc.errno)}"
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def play_in_worker(spec: EpisodeSpec) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One episode in a Ray worker: its own trio loop and HTTP pool; returns the record and events."""
    from .._bridge import run_trio  # the project's trio loop, with its Ctrl-C contract

    async def main() -> EpisodeResult:
        url = endpoint_of(spec)
        async with open_http_pools([url] if url else [], concurrency=1) as pools:
            return await play_episode(spec, pools, runner="ray")

    result = run_trio(main)
    return result.record, result.events


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(
            f"--ray needs Ray, which is not installed ({exc}): pip install 'zorkmcp[ray]'"
        ) from None
    return ray


def play_on_ray(
    specs: list[EpisodeSpec],
    run_dir: Path,
    *,
    concurrency: int,
    address: str = LOCAL,
    on_start: Callable[[EpisodeSpec], None] | None = None,
    on_done: Callable[[dict[str, Any]], None] | None = None,
    on_placed: Callable[[RayPlacement], None] | None = None,
) -> None:
    """Play ``specs`` as Ray tasks, at most ``concurrency`` in flight; write their files here.

    Args:
        specs: the episodes.
        run_dir: the run's folder (on the driver).
        concurrency: K, the most tasks in flight.
        address: :data:`LOCAL` starts a local runtime (shut down at the end); otherwise the
            cluster to join (``auto``, ``ray://head:10001``).
        on_start: called when an episode is submitted.
        on_done: called with each record once its files are written.
        on_placed: called once connected, with how the episodes fit on the cluster.

    Raises:
        ConfigError: Ray is not installed, or the cluster cannot be joined.
        KeyboardInterrupt: Ctrl-C; the tasks in flight were cancelled first.
        RunWriteError: an episode's files cannot be written; the tasks in flight were cancelled first.
    """
    ray = _import_ray()
    if not specs:  # a resume with nothing left to play: no runtime to start, no cluster to join
        return
    started_here = not ray.is_initialized()
    # ray.init puts its own SIGTERM handler (sys.exit) in place of zorkmcp's (Ctrl-C's path, see
    # zorkmcp._signals); both stop signals get theirs back
    stops = {stop: signal.getsignal(stop) for stop in (signal.SIGTERM, signal.SIGHUP)}
    if started_here:
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        if address == LOCAL:  # the workers inherit this process's environment (PYTHONPATH, keys)
            # a runtime of the run's own, even beside a cluster on this machine (--ray auto joins that)
            ray.init(
                address="local", include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING
            )
        else:
            # Not through Ray Client: it would only pass it on to the head (its own INFO line, on this
            # side, comes either way)
            quiet = {} if address.startswith("ray://") else {"logging_level": logging.WARNING}
            try:
                ray.init(address=address, log_to_driver=False, **quiet)
            except (ConnectionError, ValueError, RuntimeError) as exc:  # no cluster, a bad address, versions
                raise cannot_join(address, exc) from None
    if threading.current_thread() is threading.main_thread():
        for stop, handler in stops.items():
            if callable(handler):
                signal.signal(stop, handler)
    try:
        placement = place_episodes(
            (node["Resources"].get("CPU", 0.0) for node in ray.nodes() if node["Alive"]),
            min(concurrency, len(specs)),
        )
        if on_placed is not None:
            on_placed(placement)
        task = ray.remote(max_retries=0, num_cpus=placement.cpus_per_episode)(play_in_worker)
        _drive(ray, task, specs, run_dir, concurrency, on_start, on_done)
    finally:
        if started_here:
            ray.shutdown()


_VERSIONS: Final = re.compile(
    r"started with:\s*Ray: (?P<ray>\S+)\s*Python: (?P<python>\S+).*started with:\s*Ray: (?P<my_ray>\S+)\s*"
    r"Python: (?P<my_python>\S+)",
    re.DOTALL,
)
"""Ray's "Version mismatch" message (a cluster's ``ray.init``, and Ray Client's own check)."""


def cannot_join(address: str, exc: Exception) -> ConfigError:
    """The one line for a cluster that ``ray.init`` could not join: Ray's reason, and what to do.

    Ray's own messages span lines. A version mismatch (a ``RuntimeError`` from this process's own
    check, on joining the GCS or through Ray Client) is six: its versions are picked out. Any other
    message is put on one line; Ray Client's "Initialization failure from server" carries the
    server's reason in it.
    """
    message = str(exc)
    if isinstance(exc, RuntimeError) and (versions := _VERSIONS.search(message)) is not None:
        cluster = f"Ray {versions['ray']} on Python {versions['python']}"
        here = f"Ray {versions['my_ray']} on Python {versions['my_python']}"
        return ConfigError(
            f"--ray {address}: Ray cannot join this cluster: it runs {cluster}, and this process {here}; "
            f"run zorkmcp with the cluster's versions (pip install 'ray[client]=={versions['ray']}' under "
            f"Python {versions['python']}), or join a cluster of this machine's"
        )
    remedy = "check the address, or start the cluster (ray start --head)"
    if message.startswith("Initialization failure from server"):  # connected: the head failed to start it
        remedy = "mend what the head says, then run the same command again"
    return ConfigError(
        f"--ray {address}: Ray cannot join this cluster ({type(exc).__name__}: {' '.join(message.split())}); "
        f"{remedy}"
    )


def _drive(
    ray: Any,
    task: Any,
    specs: list[EpisodeSpec],
    run_dir: Path,
    concurrency: int,
    on_start: Callable[[EpisodeSpec], None] | None,
    on_done: Callable[[dict[str, Any]], None] | None,
) -> None:
    queue = list(reversed(specs))
    in_flight: dict[Any, EpisodeSpec] = {}
    try:
        while queue or in_flight:
            while queue and len(in_flight) < concurrency:
                spec = queue.pop()
                if on_start is not None:
                    on_start(spec)
                in_flight[task.remote(spec)] = spec
            ready, _ = ray.wait(list(in_flight), num_returns=1)
            spec = in_flight.pop(ready[0])
            try:
                record, events = ray.get(ready[0])
            except ray.exceptions.RayError as exc:  # the worker died: the episode failed, the run goes on
                record, events = _failed(spec, exc), []
            write_episode(run_dir, EpisodeResult(record=record, events=events))
            if on_done is not None:
                on_done(record)
    except BaseException:  # Ctrl-C, or a file of the run that cannot be written: nothing runs on
        for ref in in_flight:
            ray.cancel(ref, force=True)
        raise


def _failed(spec: EpisodeSpec, exc: BaseException) -> dict[str, Any]:
    """The record of an episode whose Ray task failed before it could report.

    Its model is the one this machine would play, as a resume checks it (an empty name would stop
    ``--resume``: a model that is not the arm's).
    """
    first = (str(exc).strip().splitlines() or [""])[-1][:500]
    choice = spec.model_choice()
    return {
        "arm": spec.arm, "seed": spec.seed, "score": 0, "max_score": None, "moves": 0, "turns": 0,
        "victory": False, "game_over": False, "deaths": 0, "tool_calls": 0, "tool_errors": 0,
        "tool_timeouts": 0, "llm_requests": 0, "prompt_tokens": 0, "completion_tokens": 0,
        "wall_seconds": 0.0, "scores": [], "runner": "ray", "pid": None, "host": None,
        "model": choice.plays, "scripted": choice.scripted is not None, "mcp": spec.settings.mcp.enabled,
        "max_turns": spec.max_turns, "stopped": "error", "error": f"{type(exc).__name__}: {first}",
    }  # fmt: skip
