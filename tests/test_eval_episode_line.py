"""The line an eval prints per finished episode when stdout is not a terminal (a log, CI): an
episode's error keeps what to do, which comes last, and a longer one is cut at a word."""

from __future__ import annotations

from zorkmcp._cli_eval import episode_line

RECORD = {
    "arm": "a",
    "seed": 12,
    "score": 0,
    "max_score": 350,
    "turns": 1,
    "moves": 0,
    "tool_calls": 0,
    "deaths": 0,
    "wall_seconds": 0.25,
}

NO_KEY = (
    "LLMHTTPError: POST http://127.0.0.1:4000/v1/chat/completions answered HTTP 401 Unauthorized: "
    "Authentication Error, No api key passed in. — no API key was sent to http://127.0.0.1:4000/v1: "
    "OPENROUTER_API_KEY is set but only sent to OpenRouter; export this endpoint's key as OPENAI_API_KEY, "
    'or set api_key_env = "OPENROUTER_API_KEY" in [tool.zorkgpt.llm] (or the arm\'s api_key_env)'
)


def test_an_errors_remedy_is_on_the_episodes_line() -> None:
    # It was cut at 300 characters, mid-word: `api_key_env = \"OPENROUTER_API_`.
    line = episode_line({**RECORD, "error": NO_KEY})
    assert line == (
        "arm=a seed=12 score=0/350 turns=1 moves=0 tool_calls=0 deaths=0 seconds=0.2 error="
        '"LLMHTTPError: POST http://127.0.0.1:4000/v1/chat/completions answered HTTP 401 Unauthorized: '
        "Authentication Error, No api key passed in. — no API key was sent to http://127.0.0.1:4000/v1: "
        "OPENROUTER_API_KEY is set but only sent to OpenRouter; export this endpoint's key as "
        'OPENAI_API_KEY, or set api_key_env = \\"OPENROUTER_API_KEY\\" in [tool.zorkgpt.llm] '
        "(or the arm's api_key_env)\""
    )


def test_a_longer_error_is_cut_at_a_word() -> None:
    line = episode_line({**RECORD, "error": "word " * 300})
    shown = line.split(' error="', 1)[1]
    assert shown == "word " * 199 + 'word…"'
