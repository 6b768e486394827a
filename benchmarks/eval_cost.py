"""The eval process's own CPU per episode, one episode at a time: what each start and each turn costs it.

``python benchmarks/eval_cost.py PORT TURNS mcp|nomcp EPISODES`` plays ``EPISODES`` episodes of
``TURNS`` turns one after another (K = 1) with :func:`zorkmcp.eval.play_episodes`, against the
loopback model on ``PORT`` (``latency_llm.py 0``), after two episodes to warm up, and prints one JSON
object: the process's CPU (all its threads, not its children: the ``think`` servers a zygote forks
are left out) per episode, its wall time per episode and the median ``start_seconds``.

At K = 64 the eval process plays 64 starts and first turns on one core (the GIL), one after another:
with 1- and 5-turn episodes the difference gives the cost of a turn, and what is left of a 1-turn
episode the cost of its start and end.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import trio

from zorkmcp.config import Settings
from zorkmcp.eval import EpisodeSpec, play_episodes
from zorkmcp.game import PACKAGED_GAME

REPO = Path(__file__).resolve().parents[1]


def main(port: int, turns: int, mcp: bool, episodes: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="zorkmcp-eval-cost-") as name:  # its episodes: ~1 MB
        return _measure(Path(name), port, turns, mcp, episodes)


def _measure(folder: Path, port: int, turns: int, mcp: bool, episodes: int) -> dict[str, float]:
    pyproject = folder / "pyproject.toml"
    pyproject.write_text(
        f"[tool.zorkgpt.mcp]\nenabled = {'true' if mcp else 'false'}\n"
        f'config_file = "{REPO / "mcp_config.json"}"\n',
        encoding="utf-8",
    )
    settings = Settings.load(pyproject)

    def specs(seeds: range) -> list[EpisodeSpec]:
        return [
            EpisodeSpec(
                arm="a",
                seed=seed,
                max_turns=turns,
                game_path=PACKAGED_GAME,
                settings=settings,
                model="bench",
                base_url=f"http://127.0.0.1:{port}/v1",
            )
            for seed in seeds
        ]

    out = folder / "run"
    trio.run(partial(play_episodes, specs(range(2)), out, concurrency=1))  # imports, caches, the zygote
    cpu, wall = time.process_time(), time.perf_counter()
    trio.run(partial(play_episodes, specs(range(100, 100 + episodes)), out, concurrency=1))
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    records = [json.loads(p.read_text()) for p in (out / "episodes" / "a").glob("seed-1??.json")]
    return {
        "cpu_ms_per_episode": cpu * 1000 / episodes,
        "wall_ms_per_episode": wall * 1000 / episodes,
        "start_ms_p50": statistics.median(r["start_seconds"] for r in records) * 1000,
        "episodes": len(records),
        "errors": sum(1 for r in records if r.get("error")),
    }


if __name__ == "__main__":
    port, turns, mode, episodes = sys.argv[1:5]
    print(json.dumps(main(int(port), int(turns), mode == "mcp", int(episodes))))
