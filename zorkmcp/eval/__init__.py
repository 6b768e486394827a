"""``zorkmcp eval``: many seeded episodes per arm, at once, on one machine or on Ray.

- :class:`EvalPlan`, :class:`ArmSpec`, :func:`load_eval_file`: what to play (the TOML file and flags).
- :func:`run_eval`: play it and write ``episodes/<arm>/seed-<N>.json``, ``summary.json``,
  ``summary.csv`` and ``report.html``.
- :func:`play_episode` / :func:`play_episodes`: one episode, or many in one task group.
"""

from __future__ import annotations

from ._runner import EpisodeResult as EpisodeResult
from ._runner import EvalOutcome as EvalOutcome
from ._runner import Progress as Progress
from ._runner import collect_episodes as collect_episodes
from ._runner import episode_paths as episode_paths
from ._runner import play_episode as play_episode
from ._runner import play_episodes as play_episodes
from ._runner import read_episode as read_episode
from ._runner import run_eval as run_eval
from ._runner import write_episode as write_episode
from ._spec import ArmSpec as ArmSpec
from ._spec import EpisodeSpec as EpisodeSpec
from ._spec import EvalFile as EvalFile
from ._spec import EvalPlan as EvalPlan
from ._spec import load_eval_file as load_eval_file

__all__ = [
    "ArmSpec",
    "EpisodeResult",
    "EpisodeSpec",
    "EvalFile",
    "EvalOutcome",
    "EvalPlan",
    "Progress",
    "collect_episodes",
    "episode_paths",
    "load_eval_file",
    "play_episode",
    "play_episodes",
    "read_episode",
    "run_eval",
    "write_episode",
]
