"""Episodes as Ray tasks: each runs the same episode code under its own ``trio.run`` in a worker.

The driver keeps at most K tasks in flight (``ray.wait``), writes each result's files itself (so
``--resume`` and the report work the same as a local run) and, on Ctrl-C, cancels the tasks in
flight. A local Ray runtime the run started is shut down with it. Needs ``pip install
'zorkmcp[ray]'``; the workers of a cluster need zorkmcp and the story file at the same path.

No process of the run outlives it, as in a local run:

* A cancelled task gets ``KeyboardInterrupt`` in its worker, and its episode stops its servers the
  way a local run's does; only a task still running :data:`CANCEL_GRACE` seconds later has its worker
  killed. ``ray.cancel(force=True)`` at once killed every worker before its teardown: a server's
  children that had left its process group (``setsid``) ran on under PID 1.
* A worker that dies (killed, as the OOM killer does) takes its episode's teardown with it. Each
  episode's processes carry ``ZORKMCP_EPISODE=<token>`` (:data:`~zorkmcp.mcp._sweep.EPISODE_ENV_VAR`,
  a token per task), so the driver kills what such an episode left, found by the token in
  ``/proc``, as the session sweep does: at once for a worker that died mid-run (the run goes on),
  and at the end for the tasks it had to kill. That walk sees this machine only: on a cluster, a
  worker that dies on another node leaves its strays there, unless the nodes were started with
  ``RAY_kill_child_processes_on_worker_exit_with_raylet_subreaper=true`` (each raylet then kills
  what a dead worker started).
* Starting the local runtime is not stopped halfway (:func:`_stops_held`): a Ctrl-C or SIGTERM
  during ``ray.init`` left Ray's DashboardAgent and RuntimeEnvAgent running for a minute, SIGTERM
  ended the run with exit status 15 (``ray.init`` puts in a ``sys.exit`` handler of its own) and 1
  Ctrl-C in 8 crashed the process (exit status 139). Either now takes effect once Ray has started.

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
import secrets
import signal
import threading
import time
from contextlib import contextmanager, suppress
from functools import partial
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

import anyio
import attrs

from .._pidfds import wait_for_pidfds
from ..errors import ConfigError, RunStopped, exception_leaves
from ..mcp._sweep import EPISODE_ENV_VAR, kill_session_processes
from ._runner import (
    EpisodeResult,
    endpoint_of,
    open_http_pools,
    play_episode,
    unreported_record,
    write_episode,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Collection, Iterable, Iterator
    from pathlib import Path

    from anyio.abc import SocketStream

    from ._spec import EpisodeSpec

__all__ = [
    "RayClusterLost",
    "RayPlacement",
    "cannot_join",
    "check_ray_address",
    "check_ray_installed",
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
    join. A gRPC server that answers is asked for the cluster's id (:func:`_port_kind`): the GCS
    port given to Ray Client (``ray://head:6379``) had Ray Client give up after 32 s, with Ray's
    INFO line and a warning, and the Ray Client port given as a GCS address (``--ray head:10001``)
    failed after 22 s and 20 warning lines; either is one line at once, naming the address to give
    instead (a gRPC server that is not Ray's stops a GCS address the same way). What cannot tell (a
    cluster that wants a token, no answer in time) passes, and Ray then says what it makes of it.
    ``ray://HOST`` without a port goes to gRPC's default port, 443 (Ray Client's is 10001): that is
    checked, and the line says so (Ray retried there for 31 s). With ``RAY_USE_TLS`` on, the
    preface would need TLS first: the connection alone is checked. ``auto`` is ``RAY_ADDRESS`` when
    that is set (checked the same way), else left to Ray, which fails at once when it finds no
    cluster on this machine.

    Raises:
        ConfigError: no Ray cluster answers there (one line: the address, why, what to do).
    """
    named = f"--ray {address}"
    if address == "auto":
        address = os.environ.get("RAY_ADDRESS", "")
        named = f"--ray auto (RAY_ADDRESS={address})"
    if address in ("", LOCAL, "auto"):
        return
    client = address.startswith("ray://")
    parts = urlsplit(address if "://" in address else f"//{address}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:  # a port that is not a number: Ray says what it makes of it
        return
    if host is None:
        return
    if port is None:
        if not client:  # Ray says "Invalid address format" at once
            return
        port = GRPC_DEFAULT_PORT
        named += f" (no port: gRPC's default, {port}; Ray Client's is {RAY_CLIENT_PORT})"
    from .._bridge import run_trio

    tls = _tls()
    why = run_trio(partial(not_ray, host, port, tls=tls))
    if why is not None:
        raise ConfigError(f"{named}: no Ray cluster answers at {host}:{port} ({why}); {_REMEDY}")
    kind = None if tls else _port_kind(f"{host}:{port}")
    if client and kind == "gcs":
        raise ConfigError(
            f"{named}: {host}:{port} is a Ray cluster's GCS port, not its Ray Client server, which ray:// "
            f"needs (Ray Client would give up after 30 s); join the GCS as --ray {host}:{port}, or give "
            f"the Ray Client port, ray://{host}:{RAY_CLIENT_PORT} unless ray start --ray-client-server-port "
            "said otherwise"
        )
    if not client and kind == "other":
        raise ConfigError(
            f"{named}: a gRPC server answers at {host}:{port}, but not a Ray cluster's GCS (it does not "
            f"know {GCS_PROBE.strip('/').replace('/', '.')}; Ray would retry for 20 s); if it is the "
            f"cluster's Ray Client server, join it as --ray ray://{host}:{port}, else {_REMEDY}"
        )


GRPC_DEFAULT_PORT: Final = 443
"""Where gRPC (and so Ray Client) connects for an address without a port."""
RAY_CLIENT_PORT: Final = 10001
"""Ray Client's port unless ``ray start --ray-client-server-port`` says otherwise."""
GCS_PROBE: Final = "/ray.rpc.NodeInfoGcsService/GetClusterId"
"""A GCS method without side effects, with an empty request: what :func:`_port_kind` asks."""


def _port_kind(target: str) -> str | None:
    """What the gRPC server at ``host:port`` is: ``"gcs"``, ``"other"``, or ``None`` (cannot tell).

    It is asked for the cluster's id (:data:`GCS_PROBE`): a GCS answers it, and any other gRPC
    server (Ray Client's among them) says ``UNIMPLEMENTED``. Anything else (no answer within
    :data:`ADDRESS_SECONDS`, a token the cluster wants, no ``grpc`` module) cannot tell, and Ray
    goes on to say what it makes of the address.
    """
    try:
        import grpc  # type: ignore[import-untyped,unused-ignore]  # comes with Ray; no stubs
    except ImportError:  # pragma: no cover - Ray depends on it
        return None
    channel = grpc.insecure_channel(target)
    try:
        ask = channel.unary_unary(GCS_PROBE, request_serializer=None, response_deserializer=None)
        ask(b"", timeout=ADDRESS_SECONDS)
    except grpc.RpcError as exc:
        code = exc.code() if callable(getattr(exc, "code", None)) else None
        return "other" if code == grpc.StatusCode.UNIMPLEMENTED else None
    finally:
        channel.close()
    return "gcs"


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


def play_in_worker(
    spec: EpisodeSpec, marker: str | None = None
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One episode in a Ray worker: its own trio loop and HTTP pool; returns the record and events.

    ``ray.cancel`` raises ``KeyboardInterrupt`` in it: the episode stops its servers, and the task
    ends with ``TaskCancelledError``.

    Args:
        spec: the episode.
        marker: ``ZORKMCP_EPISODE`` in this process's environment while the episode plays, and so in
            every process it starts: what the driver finds them by if this worker dies.
    """
    from .._bridge import run_trio  # the project's trio loop, with its Ctrl-C contract

    async def main() -> EpisodeResult:
        url = endpoint_of(spec)
        async with open_http_pools([url] if url else [], concurrency=1) as pools:
            return await play_episode(spec, pools, runner="ray")

    if marker is not None:  # a worker plays one task at a time, and is kept for the next one
        os.environ[EPISODE_ENV_VAR] = marker
    try:
        result = run_trio(main)
    finally:
        if marker is not None:
            os.environ.pop(EPISODE_ENV_VAR, None)
    return result.record, result.events


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(f"{RAY_MISSING} ({exc})") from None
    return ray


RAY_MISSING: Final = "--ray needs Ray, which is not installed: pip install 'zorkmcp[ray]'"


def check_ray_installed() -> None:
    """Before a run with ``--ray`` checks its cluster's address: is Ray there at all? (Not imported.)

    Without it, a wrong address was told as "no Ray cluster answers", and a right one got as far as
    joining before the run said Ray was missing.

    Raises:
        ConfigError: Ray is not installed (:data:`RAY_MISSING`).
    """
    from importlib.util import find_spec

    if find_spec("ray") is None:
        raise ConfigError(RAY_MISSING)


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
        KeyboardInterrupt: Ctrl-C (SIGTERM, SIGHUP); the tasks in flight were stopped first
            (:func:`_cancel`), the local runtime shut down, and what killed workers left swept. One
            that comes while the local runtime starts takes effect once it has started.
        RunWriteError: an episode's files cannot be written; the tasks in flight were stopped first.
        RayClusterLost: the cluster went away mid-run (:class:`_Watch`); the episodes it took with it
            are not recorded, so ``--resume`` plays them.
    """
    ray = _import_ray()
    if not specs:  # a resume with nothing left to play: no runtime to start, no cluster to join
        return
    started_here = not ray.is_initialized()
    unfinished: set[str] = set()  # the markers of the episodes submitted and not reported
    try:
        if started_here:
            _start(ray, address)
        placement = place_episodes(
            (node["Resources"].get("CPU", 0.0) for node in ray.nodes() if node["Alive"]),
            min(concurrency, len(specs)),
        )
        if on_placed is not None:
            on_placed(placement)
        task = ray.remote(max_retries=0, num_cpus=placement.cpus_per_episode)(play_in_worker)
        watch = _Watch(address=address, gcs=_gcs_of(ray))
        _drive(ray, task, specs, run_dir, concurrency, on_start, on_done, unfinished, watch)
    finally:
        with _stops_held():
            if started_here:
                ray.shutdown()  # a task still running in the local runtime ends with its worker here
            _sweep_episodes(unfinished)  # ... and what its servers left, with those the driver killed


def _start(ray: Any, address: str) -> None:
    """``ray.init``: a local runtime of the run's own (:data:`LOCAL`), or the cluster at ``address``.

    Raises:
        ConfigError: the cluster cannot be joined (:func:`cannot_join`).
    """
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    with _sigterm_kept(ray):
        if address == LOCAL:  # the workers inherit this process's environment (PYTHONPATH, keys)
            # a runtime of the run's own, even beside a cluster on this machine (--ray auto joins that);
            # its processes start whole, and so shutdown ends them all
            with _stops_held():
                ray.init(
                    address="local",
                    include_dashboard=False,
                    log_to_driver=False,
                    logging_level=logging.WARNING,
                )
            return
        # Not through Ray Client: it would only pass it on to the head (its own INFO line, on this
        # side, comes either way)
        quiet = {} if address.startswith("ray://") else {"logging_level": logging.WARNING}
        for attempt in (1, 2):
            try:
                ray.init(address=address, log_to_driver=False, **quiet)
            except (ConnectionError, ValueError, RuntimeError) as exc:  # no cluster, a bad address, versions
                if attempt == 1 and _client_server_died(exc):
                    continue
                raise cannot_join(address, exc) from None
            return


def _client_server_died(exc: Exception) -> bool:
    """Whether Ray Client's head failed to start this driver's server, a race worth one more try.

    The head's proxier starts a server per client and reads its command line while it starts; one
    that has exited by then (a zombie) fails the connection with ``ConnectionAbortedError:
    Initialization failure from server: … psutil.ZombieProcess`` (Ray 2.x, seen once in a CI run of
    1784 tests and once by hand). A second connection gets a new server.
    """
    return isinstance(exc, ConnectionAbortedError) and "Initialization failure from server" in str(exc)


@contextmanager
def _sigterm_kept(ray: Any) -> Iterator[None]:
    """Within the block (``ray.init``), and after it, SIGTERM and SIGHUP keep the handlers zorkmcp put in.

    ``ray.init`` first puts in a SIGTERM handler of its own (``sys.exit``): a scheduler's stop would
    end the run with exit status 15, no summary and Ray's processes left behind, instead of taking
    Ctrl-C's path as zorkmcp's handler does (:mod:`zorkmcp._signals`). Where SIGTERM has a handler
    of Python's, Ray's helper that puts its own in (``ray._private.utils.set_sigterm_handler``, a
    private name: the SIGTERM test in ``tests/test_eval_ray.py`` fails if it moves) does nothing
    within the block, and whatever Ray put in otherwise is replaced by the one before once the block
    ends. At its default (a library caller's), Ray's stays: ``sys.exit`` shuts Ray down.
    """
    if threading.current_thread() is not threading.main_thread():  # Ray puts in none there either
        yield
        return
    before = {stop: signal.getsignal(stop) for stop in (signal.SIGTERM, signal.SIGHUP)}
    utils: Any = getattr(getattr(ray, "_private", None), "utils", None)
    ray_sets = getattr(utils, "set_sigterm_handler", None) if callable(before[signal.SIGTERM]) else None
    if ray_sets is not None:
        utils.set_sigterm_handler = _leave_sigterm
    try:
        yield
    finally:
        if ray_sets is not None:
            utils.set_sigterm_handler = ray_sets
        for stop, handler in before.items():
            if callable(handler):
                signal.signal(stop, handler)


def _leave_sigterm(handler: Any) -> None:
    """What ``ray._private.utils.set_sigterm_handler`` does under :func:`_sigterm_kept`: nothing."""
    del handler


_HELD: Final = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextmanager
def _stops_held() -> Iterator[None]:
    """Ctrl-C, SIGTERM and SIGHUP that come within the block take effect once it ends (in the main thread).

    For what must not stop halfway: starting the local runtime, stopping the run's tasks, shutting
    the runtime down and sweeping what killed episodes left (each bounded). A signal that comes is
    held, and raised again once the old handlers are back, each signal once, in the order they came
    (zorkmcp's handlers turn SIGTERM and SIGHUP into Ctrl-C): ``KeyboardInterrupt`` then comes out of
    the block.
    """
    if threading.current_thread() is not threading.main_thread():  # signals reach the main thread only
        yield
        return
    held: list[int] = []

    def hold(signum: int, frame: Any) -> None:
        del frame
        if signum not in held:
            held.append(signum)

    before = {stop: handler for stop in _HELD if (handler := signal.getsignal(stop)) is not None}
    for stop in before:  # a handler put in outside Python (None) is left alone
        signal.signal(stop, hold)
    try:
        yield
    finally:
        for stop, handler in before.items():
            if signal.getsignal(stop) is hold:  # one put in meanwhile (Ray's own) stays
                signal.signal(stop, handler)
        interrupted = False
        for signum in held:
            try:
                signal.raise_signal(signum)
            except KeyboardInterrupt:
                interrupted = True
        if interrupted:
            raise KeyboardInterrupt


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


CANCEL_GRACE: Final = 5.0
"""Seconds a cancelled task gets to stop its episode (its servers) before its worker is killed.

An episode's teardown ends its servers together, each within about 2.5 s
(:data:`~zorkmcp.mcp._stdio.WORST_CASE_TEARDOWN`, a server that ignores SIGTERM), then its zygote.
"""
KILLED_GRACE: Final = 2.0
"""Seconds Ray gets to report the tasks whose workers it was asked to kill."""
SWEEP_GRACE: Final = 1.0
"""Seconds the driver waits for the processes it killed by an episode's marker to be gone."""


class RayClusterLost(RunStopped):
    """The run's Ray cluster (or its own runtime) went away mid-run: the run cannot go on.

    It stops the run as a file that cannot be written does: every finished episode is kept, the
    summary covers them, the exit status is 1 and the last line says what to mend and how to play
    the rest (``--resume``). The message says which cluster and why.
    """


WATCH_SECONDS: Final = 5.0
"""With no result for this long, the driver checks that the cluster's GCS still answers (:class:`_Watch`)."""
LOST_SECONDS: Final = 20.0
"""How long the GCS may not answer before the run stops (Ray ends a driver whose GCS is gone at 60 s).

A GCS that comes back within it (a head restarted with GCS fault tolerance) lets the run go on.
"""


def _gcs_of(ray: Any) -> tuple[str, int] | None:
    """The GCS this driver is connected to; ``None`` through Ray Client (whose server is the driver)."""
    client: Any = getattr(getattr(getattr(ray, "util", None), "client", None), "ray", None)
    try:
        if client is not None and client.is_connected():
            return None
        host, _, port = str(ray.get_runtime_context().gcs_address).rpartition(":")
    except Exception:  # noqa: BLE001  not known: the run is not watched, as before
        return None
    return (host, int(port)) if host and port.isdigit() else None


@attrs.define
class _Watch:
    """Is the cluster still there? Its GCS, asked as :func:`check_ray_address` asks an address.

    When a cluster's head goes (``ray stop``, a crash, its machine), the episodes running on it
    fail with ``NodeDiedError``, the next ones never start, and Ray ended the driver 60 s later
    ("Failed to connect to GCS within 60 seconds … The program will terminate"): exit status 1, no
    summary, the episodes lost recorded as failed. Now the driver asks the GCS whenever a task fails
    and whenever :data:`WATCH_SECONDS` pass without a result; one that has not answered for
    :data:`LOST_SECONDS` stops the run (:class:`RayClusterLost`), and the episodes that failed
    while it did not answer are not recorded: ``--resume`` plays them. Through Ray Client the
    client's own connection tells (``ConnectionError``, after its reconnection grace).
    """

    address: str
    """``--ray``'s address (:data:`LOCAL` for the run's own runtime)."""
    gcs: tuple[str, int] | None
    """Its GCS (``None``: not watched)."""
    down_since: float | None = None
    """``time.monotonic()`` when the GCS was first found not answering (``None``: it answers)."""

    def answers(self) -> bool:
        """Whether the GCS answers now.

        Raises:
            RayClusterLost: it has not answered for :data:`LOST_SECONDS`.
        """
        if self.gcs is None:
            return True
        from .._bridge import run_trio

        host, port = self.gcs
        why = run_trio(partial(not_ray, host, port, tls=_tls()))
        if why is None:
            self.down_since = None
            return True
        now = time.monotonic()
        if self.down_since is None:
            self.down_since = now
        if now - self.down_since >= LOST_SECONDS:
            raise self.lost(f"its GCS has not answered for {LOST_SECONDS:.0f} s ({why})")
        return False

    def lost(self, why: str) -> RayClusterLost:
        """The error that stops the run, with ``why``."""
        if self.address == LOCAL:
            return RayClusterLost(
                f"the run's Ray runtime went away mid-run: {why}",
                remedy="see what ended it in Ray's logs (/tmp/ray/session_latest/logs)",
            )
        return RayClusterLost(
            f"the Ray cluster at {self.address} went away mid-run: {why}",
            remedy="start the cluster again (ray start --head)",
        )


def _tls() -> bool:
    return os.environ.get("RAY_USE_TLS", "0").lower() in ("1", "true")  # as Ray reads it


def _drive(
    ray: Any,
    task: Any,
    specs: list[EpisodeSpec],
    run_dir: Path,
    concurrency: int,
    on_start: Callable[[EpisodeSpec], None] | None,
    on_done: Callable[[dict[str, Any]], None] | None,
    unfinished: set[str],
    watch: _Watch | None = None,
) -> None:
    """Play ``specs``, at most ``concurrency`` at once; on any exception, stop the tasks in flight.

    ``unfinished`` holds the marker of each episode submitted and not yet reported: what is left in
    it when this returns or raises is for the caller to sweep (:func:`_sweep_episodes`). ``watch``
    checks the cluster is still there (:class:`_Watch`): while its GCS does not answer, no episode
    is submitted, and one that fails is taken back, to be played once it answers again.
    """
    watch = watch if watch is not None else _Watch(address=LOCAL, gcs=None)
    queue = list(reversed(specs))
    in_flight: dict[Any, tuple[EpisodeSpec, str, float]] = {}  # and when it was submitted
    node_died: Any = getattr(ray.exceptions, "NodeDiedError", ())
    taken_back: set[tuple[str, int]] = set()  # episodes whose node died under them once
    try:
        while queue or in_flight:
            while queue and len(in_flight) < concurrency and watch.down_since is None:
                spec = queue.pop()
                if on_start is not None:
                    on_start(spec)
                marker = secrets.token_hex(16)
                unfinished.add(marker)
                in_flight[task.remote(spec, marker)] = (spec, marker, time.monotonic())
            if not in_flight:  # every episode was taken back while the GCS does not answer
                time.sleep(WATCH_SECONDS)
                watch.answers()
                continue
            try:
                ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=WATCH_SECONDS)
            except ConnectionError as exc:  # Ray Client's connection to the cluster is gone
                raise watch.lost(f"{type(exc).__name__}: {exc}") from exc
            if not ready:
                watch.answers()
                continue
            spec, marker, submitted = in_flight.pop(ready[0])
            try:
                record, events = ray.get(ready[0])
            except ray.exceptions.RayError as exc:  # the worker died: the episode failed, the run goes on
                _sweep_episodes([marker])  # what its servers left (its teardown died with it)
                # ... unless its node died under it (the first time: not its fault; a head stopped
                # reports its node dead before its GCS goes) or the cluster went with it: it plays
                # again, on another node or once the GCS answers again, else --resume plays it
                again = isinstance(exc, node_died) and spec.key not in taken_back
                if not watch.answers() or again:
                    taken_back.add(spec.key)
                    unfinished.discard(marker)
                    queue.append(spec)
                    continue
                record, events = _failed(spec, exc, wall=time.monotonic() - submitted), []
            except ConnectionError as exc:
                raise watch.lost(f"{type(exc).__name__}: {exc}") from exc
            unfinished.discard(marker)
            write_episode(run_dir, EpisodeResult(record=record, events=events))
            if on_done is not None:
                on_done(record)
    except RayClusterLost:  # nothing to stop there: what this machine ran is swept by the caller
        raise
    except BaseException:  # Ctrl-C, or a file of the run that cannot be written: nothing runs on
        with _stops_held():
            _cancel(ray, list(in_flight))
        raise


def _cancel(ray: Any, refs: list[Any]) -> None:
    """Stop these tasks: each episode stops its own servers; a worker still busy after the grace is killed.

    What a killed worker's episode left is swept by its marker afterwards (:func:`_sweep_episodes`).
    """
    if not refs:
        return
    with suppress(ray.exceptions.RayError, ConnectionError):  # a cluster gone meanwhile: nothing to stop
        for ref in refs:
            ray.cancel(ref)  # KeyboardInterrupt in the worker; a task not started yet never starts
        _, running = ray.wait(refs, num_returns=len(refs), timeout=CANCEL_GRACE, fetch_local=False)
        for ref in running:
            ray.cancel(ref, force=True)
        if running:
            ray.wait(running, num_returns=len(running), timeout=KILLED_GRACE, fetch_local=False)


def _sweep_episodes(markers: Collection[str]) -> int:
    """Kill every process on this machine that carries one of these episodes' markers; how many.

    For episodes whose worker died or was killed before their teardown could run (Linux ``/proc``,
    as the session sweep, :func:`~zorkmcp.mcp._sweep.kill_session_processes`; elsewhere nothing).
    Waits up to :data:`SWEEP_GRACE` for them to be gone.
    """
    if not markers:
        return 0
    found = kill_session_processes(frozenset(markers), variable=EPISODE_ENV_VAR)
    pidfds = [pidfd for pinned in found.values() for pidfd in pinned]
    try:
        wait_for_pidfds(pidfds, SWEEP_GRACE)
    finally:
        for pidfd in pidfds:
            os.close(pidfd)
    return len(pidfds)


def _failed(spec: EpisodeSpec, exc: BaseException, *, wall: float = 0.0) -> dict[str, Any]:
    """The record of an episode whose Ray task failed before it could report (its worker died).

    The keys of a played episode's record (:func:`~zorkmcp.eval._runner.unreported_record`): what
    the driver knows, ``wall`` the seconds it was in flight; the tokens and the worker unknown.
    """
    first = (str(exc).strip().splitlines() or [""])[-1][:500]
    return unreported_record(spec, f"{type(exc).__name__}: {first}", runner="ray", wall=wall)
