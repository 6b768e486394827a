"""``zorkmcp eval`` and ``zorkmcp report``: many seeded episodes per arm, at once, on one machine or
on Ray; their statistics, and pages that draw them.

- :class:`EvalPlan`, :class:`ArmSpec`, :func:`load_eval_file`: what to play (the TOML file and flags).
- :func:`run_eval`: play it and write ``episodes/<arm>/seed-<N>.json``, ``summary.json``,
  ``summary.csv`` and ``report.html`` (on Ray, :class:`RayPlacement` says how the episodes fit);
  :func:`resumable_episodes`: what ``--resume`` keeps; :func:`check_endpoints`: stop before a run
  whose model endpoint cannot be reached.
- :func:`play_episode` / :func:`play_episodes`: one episode, or many in one task group.
- :func:`summarize`, :func:`write_summary_csv`: ``summary.json``'s object and ``summary.csv``.
- :func:`welch_interval`, :func:`paired_interval`, :func:`t_quantile`: the 95% intervals for a
  difference of mean scores (two samples, or seed by seed); :func:`comparison_reading`: what they
  say, in words.
- :func:`render_eval_report`, :func:`render_episode_report`: self-contained HTML pages.

The names are imported lazily (PEP 562), as the root package's are: reading an eval file must not
pay for the engine and the MCP SDK (``zorkmcp eval bad.toml`` answered in 0.82 s, now 0.12 s).
``from zorkmcp.eval import run_eval`` works as usual.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

_EXPORTS: dict[str, str] = {
    "RayPlacement": "zorkmcp.eval._ray",
    "check_endpoints": "zorkmcp.eval._reach",
    "render_episode_report": "zorkmcp.eval._report",
    "render_eval_report": "zorkmcp.eval._report",
    "ReportInputError": "zorkmcp.eval._results",
    "read_event_log": "zorkmcp.eval._results",
    "read_run_episodes": "zorkmcp.eval._results",
    "EpisodeResult": "zorkmcp.eval._runner",
    "EvalOutcome": "zorkmcp.eval._runner",
    "Progress": "zorkmcp.eval._runner",
    "collect_episodes": "zorkmcp.eval._runner",
    "episode_paths": "zorkmcp.eval._runner",
    "play_episode": "zorkmcp.eval._runner",
    "play_episodes": "zorkmcp.eval._runner",
    "read_episode": "zorkmcp.eval._runner",
    "resumable_episodes": "zorkmcp.eval._runner",
    "run_eval": "zorkmcp.eval._runner",
    "write_episode": "zorkmcp.eval._runner",
    "ArmSpec": "zorkmcp.eval._spec",
    "EpisodeSpec": "zorkmcp.eval._spec",
    "EvalFile": "zorkmcp.eval._spec",
    "EvalPlan": "zorkmcp.eval._spec",
    "load_eval_file": "zorkmcp.eval._spec",
    "comparison_reading": "zorkmcp.eval._stats",
    "paired_interval": "zorkmcp.eval._stats",
    "summarize": "zorkmcp.eval._stats",
    "t_quantile": "zorkmcp.eval._stats",
    "welch_interval": "zorkmcp.eval._stats",
    "write_summary_csv": "zorkmcp.eval._stats",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from ._ray import RayPlacement as RayPlacement
    from ._reach import check_endpoints as check_endpoints
    from ._report import render_episode_report as render_episode_report
    from ._report import render_eval_report as render_eval_report
    from ._results import ReportInputError as ReportInputError
    from ._results import read_event_log as read_event_log
    from ._results import read_run_episodes as read_run_episodes
    from ._runner import EpisodeResult as EpisodeResult
    from ._runner import EvalOutcome as EvalOutcome
    from ._runner import Progress as Progress
    from ._runner import collect_episodes as collect_episodes
    from ._runner import episode_paths as episode_paths
    from ._runner import play_episode as play_episode
    from ._runner import play_episodes as play_episodes
    from ._runner import read_episode as read_episode
    from ._runner import resumable_episodes as resumable_episodes
    from ._runner import run_eval as run_eval
    from ._runner import write_episode as write_episode
    from ._spec import ArmSpec as ArmSpec
    from ._spec import EpisodeSpec as EpisodeSpec
    from ._spec import EvalFile as EvalFile
    from ._spec import EvalPlan as EvalPlan
    from ._spec import load_eval_file as load_eval_file
    from ._stats import comparison_reading as comparison_reading
    from ._stats import paired_interval as paired_interval
    from ._stats import summarize as summarize
    from ._stats import t_quantile as t_quantile
    from ._stats import welch_interval as welch_interval
    from ._stats import write_summary_csv as write_summary_csv
