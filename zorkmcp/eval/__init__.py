"""``zorkmcp eval`` and ``zorkmcp report``: statistics of many seeded episodes, and pages that draw them.

- :func:`summarize`, :func:`write_summary_csv`: ``summary.json``'s object and ``summary.csv``.
- :func:`welch_interval`, :func:`t_quantile`: the 95% interval for a difference of mean scores.
- :func:`render_eval_report`, :func:`render_episode_report`: self-contained HTML pages.
"""

from __future__ import annotations

from ._report import render_episode_report as render_episode_report
from ._report import render_eval_report as render_eval_report
from ._results import ReportInputError as ReportInputError
from ._results import read_event_log as read_event_log
from ._results import read_run_episodes as read_run_episodes
from ._stats import summarize as summarize
from ._stats import t_quantile as t_quantile
from ._stats import welch_interval as welch_interval
from ._stats import write_summary_csv as write_summary_csv

__all__ = [
    "ReportInputError",
    "read_event_log",
    "read_run_episodes",
    "render_episode_report",
    "render_eval_report",
    "summarize",
    "t_quantile",
    "welch_interval",
    "write_summary_csv",
]
