"""A count of tokens is written one way wherever a person reads it: ``225,278 / 5,920``.

The live view and the report wrote ``24,510``, ``zorkmcp play``'s and ``zorkmcp eval``'s closing
tables ``24510``; a reader comparing them had to count digits.
"""

from __future__ import annotations

from zorkmcp._cli_eval import _summary_cells


def test_the_eval_table_writes_token_counts_with_thousands_separators() -> None:
    arm = {"episodes": 4, "failed": 0, "mean_score": 44.5, "se_score": 8.37, "win_rate": 0.0,
           "mean_moves": 39.0, "tool_calls_per_turn": 0.2,
           "prompt_tokens": 225278, "completion_tokens": 5920}  # fmt: skip
    assert _summary_cells(arm) == ["4", "0", "44.50 ± 8.37", "0%", "39.0", "0.20", "225,278 / 5,920"]


def test_unknown_token_counts_stay_a_dash() -> None:
    arm = {"episodes": 1, "failed": 1, "prompt_tokens": None, "completion_tokens": 12}
    assert _summary_cells(arm)[-1] == "– / 12"
