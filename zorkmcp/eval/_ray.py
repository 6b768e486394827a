"""Episodes as Ray tasks: each runs the same episode code under its own ``trio.run`` in a worker.

The driver keeps at most K tasks in flight (``ray.wait``), writes each result's files itself (so
``--resume`` and the report work the same as a local run) and, on Ctrl-C, cancels the tasks in
flight. A local Ray runtime the run started is shut down with it. Needs ``pip install
'zorkmcp[ray]'``; the workers of a cluster need zorkmcp and the story file at the same path.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ._runner import EpisodeResult, endpoint_of, open_http_pools, play_episode, write_episode

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from ._spec import EpisodeSpec

__all__ = ["play_in_worker", "play_on_ray"]

LOCAL = "local"
"""``--ray`` without an address: start a local Ray runtime for the run."""


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

    Raises:
        ConfigError: Ray is not installed.
        KeyboardInterrupt: Ctrl-C; the tasks in flight were cancelled first.
    """
    ray = _import_ray()
    started_here = not ray.is_initialized()
    if started_here:
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        if address == LOCAL:  # the workers inherit this process's environment (PYTHONPATH, keys)
            ray.init(include_dashboard=False, log_to_driver=False)
        else:
            ray.init(address=address, log_to_driver=False)
    try:
        _drive(ray, specs, run_dir, concurrency, on_start, on_done)
    finally:
        if started_here:
            ray.shutdown()


def _drive(
    ray: Any,
    specs: list[EpisodeSpec],
    run_dir: Path,
    concurrency: int,
    on_start: Callable[[EpisodeSpec], None] | None,
    on_done: Callable[[dict[str, Any]], None] | None,
) -> None:
    task = ray.remote(max_retries=0)(play_in_worker)
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
    except KeyboardInterrupt:
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
        "wall_seconds": 0.0, "scores": [], "runner": "ray", "pid": None,
        "model": choice.plays, "scripted": choice.scripted is not None, "mcp": spec.settings.mcp.enabled,
        "max_turns": spec.max_turns, "stopped": "error", "error": f"{type(exc).__name__}: {first}",
    }  # fmt: skip
