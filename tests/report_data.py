"""Realistic report inputs: a Zork I event log and an eval run folder (2 arms x 5 seeds), built in code."""

from __future__ import annotations

import json
import random
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pathlib import Path

# (action, location, points gained, game text)
OPENING: list[tuple[str, str, int, str]] = [
    ("open mailbox", "West of House", 0, "Opening the small mailbox reveals a leaflet."),
    ("take leaflet", "West of House", 0, "Taken."),
    (
        "read leaflet",
        "West of House",
        0,
        '"WELCOME TO ZORK!\n\nZORK is a game of adventure, danger, and low cunning."',
    ),
    ("north", "North of House", 0, "North of House\nYou are facing the north side of a white house."),
    ("north", "Forest Path", 0, "Forest Path\nThis is a path winding through a dimly lit forest."),
    ("climb tree", "Up a Tree", 0, "Up a Tree\nBeside you on the branch is a small bird's nest."),
    ("take egg", "Up a Tree", 5, "Taken."),
    ("down", "Forest Path", 0, "Forest Path"),
    ("south", "North of House", 0, "North of House"),
    (
        "east",
        "Behind House",
        0,
        "Behind House\nIn one corner of the house there is a small window which is slightly ajar.",
    ),
    ("open window", "Behind House", 0, "With great effort, you open the window far enough to allow entry."),
    (
        "west",
        "Kitchen",
        10,
        "Kitchen\nYou are in the kitchen of the white house. A table seems to have been used recently.",
    ),
    ("take sack", "Kitchen", 0, "Taken."),
    ("west", "Living Room", 0, "Living Room\nYou are in the living room. There is a doorway to the east."),
    ("take lamp", "Living Room", 0, "Taken."),
    ("take sword", "Living Room", 0, "Taken."),
    (
        "move rug",
        "Living Room",
        0,
        "With a great effort, the rug is moved to one side of the room, revealing a trap door.",
    ),
    (
        "open trap door",
        "Living Room",
        0,
        "The door reluctantly opens to reveal a rickety staircase descending into darkness.",
    ),
    ("turn on lamp", "Living Room", 0, "The brass lantern is now on."),
    (
        "down",
        "Cellar",
        25,
        "Cellar\nYou are in a dark and damp cellar with a narrow passageway leading north.",
    ),
    (
        "north",
        "The Troll Room",
        0,
        "The Troll Room\nA nasty-looking troll, brandishing a bloody axe, blocks all passages.",
    ),
    ("kill troll with sword", "The Troll Room", 0, "The troll is knocked out!"),
    ("kill troll with sword", "The Troll Room", 0, "The unconscious troll cannot defend himself: He dies."),
    ("east", "East-West Passage", 5, "East-West Passage\nThis is a narrow east-west passageway."),
    ("east", "Round Room", 0, "Round Room\nThis is a circular stone room with passages in all directions."),
    (
        "southeast",
        "Engravings Cave",
        0,
        "Engravings Cave\nYou have entered a low cave with passages leading northwest and east.",
    ),
    ("east", "Dome Room", 0, "Dome Room\nYou are at the periphery of a large dome."),
    ("tie rope to railing", "Dome Room", 0, "You don't have the rope."),
    ("west", "Engravings Cave", 0, "Engravings Cave"),
    ("northwest", "Round Room", 0, "Round Room"),
]

REASONS = [
    "The mailbox is the obvious first thing to check; leaflets usually give hints.",
    "I should explore north to see what else surrounds the house.",
    "Trees often hide items in Zork; climbing may reveal something valuable.",
    "The window is ajar; opening it should let me enter the house.",
    "A light source is essential before going underground.",
    "The rug looks suspicious <script>alert('x')</script>; moving it may reveal a passage.",
    "The troll blocks every exit; I have the sword, so I should fight.",
]


def _tools(turn: int, rng: random.Random) -> list[dict[str, Any]]:
    calls = []
    for k in range(rng.choice([0, 1, 1, 2, 2, 3])):
        name, outcome = ("thinking.think", "ok") if k % 2 == 0 else ("thinking.recall", "ok")
        if turn == 21 and k == 0:
            outcome = "timeout"
        calls.append(
            {
                "name": name,
                "server": "thinking",
                "arguments": json.dumps({"thought": f"Turn {turn}: weigh the exits and the inventory"})[:80],
                "result": "Thought recorded." if outcome == "ok" else "",
                "duration_ms": round(rng.uniform(3, 900), 1),
                "outcome": outcome,
            }
        )
    return calls


def episode_events(episode_id: str = "ep-7f3a", seed: int = 3) -> list[dict[str, Any]]:
    """One ~30-turn Zork I episode with MCP tool calls, as the event log records it."""
    rng = random.Random(seed)
    base = {"timestamp": "2026-11-23T08:00:00Z", "episode_id": episode_id}
    events: list[dict[str, Any]] = [
        {
            **base,
            "event_type": "episode_start",
            "turn": 0,
            "game": "zork1",
            "game_file": "zork1.z5",
            "seed": seed,
            "max_turns": 30,
            "mcp_enabled": True,
            "model": "qwen3-30b-a3b",
            "scripted": False,
            "max_score": 350,
        }
    ]
    score = total_calls = 0
    for turn, (action, location, points, text) in enumerate(OPENING, start=1):
        score += points
        tools = _tools(turn, rng)
        total_calls += len(tools)
        events.append(
            {
                **base,
                "event_type": "turn_complete",
                "turn": turn,
                "action": action,
                "location": location,
                "score": score,
                "moves": turn,
                "tool_calls": len(tools),
                "game_over": False,
                "victory": False,
                "game_error": None,
                "observation": text,
                "reasoning": f"{REASONS[(turn - 1) // 5 % len(REASONS)]} Next: {action}.",
                "new_objective": "find a light source" if turn == 12 else None,
                "tools": tools,
            }
        )
        if turn == 10:
            events.append({**base, "event_type": "mcp_tool_call", "turn": turn, "tool_name": "think"})
    events.append(
        {
            **base,
            "event_type": "episode_complete",
            "turn": len(OPENING),
            "stopped": "max_turns",
            "error": None,
            "score": score,
            "max_score": 350,
            "moves": len(OPENING),
            "turns": len(OPENING),
            "victory": False,
            "game_over": False,
            "tool_calls": total_calls,
            "model": "qwen3-30b-a3b",
            "scripted": False,
        }
    )
    return events


def write_events(path: Path, events: list[dict[str, Any]], bad_lines: int = 0) -> Path:
    lines = [json.dumps(e) for e in events] + ["{not json"] * bad_lines
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _curve(rng: random.Random, turns: int, skill: float) -> list[int]:
    gains = [(5, 0.35), (10, 0.45), (25, 0.6), (5, 0.7), (10, 0.85)]
    scores, score = [], 0
    for turn in range(1, turns + 1):
        for points, at in gains:
            if abs(turn / turns - at * rng.uniform(0.8, 1.2)) < 0.02 and rng.random() < skill:
                score += points
        scores.append(score)
    return scores


def episode_record(arm: str, seed: int, rng: random.Random, skill: float, calls: float) -> dict[str, Any]:
    turns = rng.choice([40, 40, 40, 34]) if arm else 40
    scores = _curve(rng, turns, skill)
    tool_calls = round(turns * calls * rng.uniform(0.7, 1.3))
    return {
        "arm": arm,
        "seed": seed,
        "score": scores[-1],
        "max_score": 350,
        "moves": turns + rng.randint(0, 3),
        "turns": turns,
        "victory": False,
        "game_over": turns < 40,
        "deaths": 1 if turns < 40 else 0,
        "tool_calls": tool_calls,
        "tool_errors": rng.choice([0, 0, 1]) if calls else 0,
        "tool_timeouts": rng.choice([0, 0, 0, 1]) if calls else 0,
        "llm_requests": turns + tool_calls,
        "prompt_tokens": (turns + tool_calls) * rng.randint(1400, 1900),
        "completion_tokens": (turns + tool_calls) * rng.randint(60, 140),
        "wall_seconds": round(turns * rng.uniform(2.5, 4.0) * (1.6 if calls else 1.0), 1),
        "scores": scores,
        "runner": "local",
        "pid": 4242,
        "model": "qwen3-30b-a3b",
        "scripted": False,
        "servers": ["thinking"] if arm == "mcp" else [],
    }


def write_run(run_dir: Path, seeds: int = 5, failed: bool = True) -> list[dict[str, Any]]:
    """An eval run folder: arms ``mcp`` and ``no-mcp`` x ``seeds`` seeds, one failed episode."""
    rng = random.Random(11)
    records = []
    for arm, skill, calls in (("mcp", 0.9, 1.4), ("no-mcp", 0.6, 0.0)):
        folder = run_dir / "episodes" / arm
        folder.mkdir(parents=True, exist_ok=True)
        for seed in range(1, seeds + 1):
            record = episode_record(arm, seed, rng, skill, calls)
            if failed and arm == "no-mcp" and seed == seeds:
                record["error"] = "LLMTransportError: connect timeout after 3 retries"
            (folder / f"seed-{seed}.json").write_text(json.dumps(record), encoding="utf-8")
            write_events(folder / f"seed-{seed}.events.jsonl", episode_events(f"{arm}-s{seed}", seed))
            records.append(record)
    return records


def fail_episode(run_dir: Path, arm: str, seed: int, error: str, turns: int = 0) -> None:
    """Rewrite one record of a :func:`write_run` folder as ``zorkmcp eval`` leaves a failed episode."""
    path = run_dir / "episodes" / arm / f"seed-{seed}.json"
    record = json.loads(path.read_text(encoding="utf-8"))
    scores = record["scores"][:turns]
    record.update(
        error=error,
        stopped="error",
        turns=turns,
        moves=turns,
        scores=scores,
        score=scores[-1] if scores else 0,
        game_over=False,
    )
    path.write_text(json.dumps(record), encoding="utf-8")


def short_record(arm: str, seed: int, score: int, **extra: Any) -> dict[str, Any]:
    """An episode record as zorkmcp eval writes it, of three turns and no tools; ``extra`` overrides."""
    return {
        "arm": arm,
        "seed": seed,
        "score": score,
        "max_score": 350,
        "moves": 3,
        "turns": 3,
        "victory": False,
        "game_over": False,
        "deaths": 0,
        "tool_calls": 0,
        "scores": [0, 0, score],
        "model": "m",
        "scripted": True,
        "servers": [],
    } | extra
