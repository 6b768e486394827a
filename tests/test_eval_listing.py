"""A run's finished episodes are found by listing each arm's folder once, not by opening each planned file.

``collect_episodes`` tried to open every planned episode's record and ``files_outside`` made a path
for each: 14 s each for a plan of a million episodes, and a Ctrl-C's summary waited for them (18 s
to stop; 1.4 s now). The listing must find exactly the files :func:`episode_paths` names, no more.
"""

from __future__ import annotations

import json
import random
from typing import TYPE_CHECKING

from play_support import zork1_path
from report_data import episode_record

from zorkmcp.config import Settings
from zorkmcp.eval import ArmSpec, EvalPlan, collect_episodes
from zorkmcp.eval._runner import files_outside

if TYPE_CHECKING:
    from pathlib import Path


def plan_in(folder: Path, episodes: int = 3) -> EvalPlan:
    return EvalPlan(
        arms=(ArmSpec(name="mcp"), ArmSpec(name="no-mcp")),
        episodes=episodes,
        seed=12,
        max_turns=5,
        concurrency=2,
        game_path=zork1_path(),
        out=folder,
        settings=Settings(),
    )


def record(arm: str, seed: int) -> str:
    """A whole record of that episode (the report's test data)."""
    return json.dumps(episode_record(arm, seed, random.Random(seed), skill=0.5, calls=0.2))


def test_what_is_not_a_record_the_plan_names_is_outside_it(tmp_path: Path) -> None:
    for arm, name in [
        ("mcp", "seed-12.json"),  # the plan's
        ("no-mcp", "seed-14.json"),  # the plan's
        ("mcp", "seed-012.json"),  # not the name of seed 12
        ("mcp", "seed-\u0661\u0662.json"),  # Arabic-Indic digits: no seed's name
        ("mcp", "seed-15.json"),  # past the plan's seeds
        ("mcp", "seed-11.json"),  # before them
        ("other", "seed-12.json"),  # no arm of the plan
        ("mcp", "seed-+13.json"),
    ]:
        (tmp_path / "episodes" / arm).mkdir(parents=True, exist_ok=True)
        (tmp_path / "episodes" / arm / name).write_text("{}", encoding="utf-8")
    outside = sorted(str(path.relative_to(tmp_path)) for path in files_outside(plan_in(tmp_path)))
    assert outside == [
        "episodes/mcp/seed-+13.json",
        "episodes/mcp/seed-012.json",
        "episodes/mcp/seed-11.json",
        "episodes/mcp/seed-15.json",
        "episodes/mcp/seed-\u0661\u0662.json",
        "episodes/other/seed-12.json",
    ]


def test_the_plans_records_are_collected_seed_by_seed_in_the_arms_order(tmp_path: Path) -> None:
    for arm, seed in [("no-mcp", 14), ("mcp", 14), ("no-mcp", 12), ("mcp", 13), ("mcp", 15)]:
        folder = tmp_path / "episodes" / arm
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"seed-{seed}.json").write_text(record(arm, seed), encoding="utf-8")
    (tmp_path / "episodes" / "mcp" / "seed-012.json").write_text(record("mcp", 12), encoding="utf-8")
    (tmp_path / "episodes" / "mcp" / "seed-12.json").mkdir()  # no record: left out
    found = [(r["arm"], r["seed"]) for r in collect_episodes(plan_in(tmp_path))]
    assert found == [("no-mcp", 12), ("mcp", 13), ("mcp", 14), ("no-mcp", 14)]


def test_no_folder_yet_is_no_episode(tmp_path: Path) -> None:
    assert collect_episodes(plan_in(tmp_path / "not-made")) == []
    assert files_outside(plan_in(tmp_path / "not-made")) == []
