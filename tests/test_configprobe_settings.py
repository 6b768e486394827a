"""``pyproject.toml`` as users write it: slips in the sections shared with ZorkGPT, a key pasted where its
variable's name goes, Python and YAML habits in TOML, a file from PowerShell or the servers' JSON."""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
from play_support import offline_env

from zorkmcp.config import LLMSettings, Settings
from zorkmcp.errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path

KEY = "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"
"""Not a real key: the shape of OpenRouter's."""


def load(tmp_path: Path, text: str) -> Settings:
    path = tmp_path / "pyproject.toml"
    path.write_text(text)
    return Settings.load(path)


def refused(tmp_path: Path, text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        load(tmp_path, text)
    return str(caught.value)


def play(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zorkmcp.cli", "play", "--quiet", "--turns", "1", *args],
        cwd=folder, env=offline_env(COLUMNS="400"), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


# --- api_key_env: a variable's name, never the key ------------------------------------------------


def test_a_key_pasted_into_api_key_env_is_refused_and_never_shown(tmp_path: Path) -> None:
    # Before, the offline model's notice said "set sk-or-v1-…" on the terminal and in episode.log.
    (tmp_path / "pyproject.toml").write_text(f'[tool.zorkgpt.llm]\napi_key_env = "{KEY}"\n')
    result = play(tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        "zorkmcp play: configuration error (ConfigError): api_key_env must name the environment variable "
        "that holds the API key, not hold the key (its value is not shown): export the key, e.g. "
        'MY_KEY_VARIABLE=…, and write api_key_env = "MY_KEY_VARIABLE" (pyproject.toml [tool.zorkgpt.llm])\n'
    )
    assert not (tmp_path / "logs").exists()


def test_a_groq_style_key_in_api_key_env_is_not_shown_either(tmp_path: Path) -> None:
    # gsk_… is made of a variable name's letters: its mixed case and digits give it away.
    message = refused(tmp_path, '[tool.zorkgpt.llm]\napi_key_env = "gsk_Q1w2E3r4T5y6U7i8O9p0AsDfGhJkL"\n')
    assert "gsk_" not in message
    assert message.startswith("api_key_env must name the environment variable that holds the API key, not")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            "",
            "api_key_env must not be blank: name the environment variable that holds the API key (e.g. "
            '"MY_KEY_VARIABLE"), or leave the key out to read OPENROUTER_API_KEY for OpenRouter and '
            "OPENAI_API_KEY for any other endpoint",
        ),
        (
            "MY KEY",
            "api_key_env must be the name of an environment variable (letters, digits and _, not starting "
            "with a digit, e.g. \"MY_KEY_VARIABLE\"), got 'MY KEY' (string)",
        ),
        (
            "$GROQ_API_KEY",
            "api_key_env must be the name of an environment variable (letters, digits and _, not starting "
            "with a digit, e.g. \"MY_KEY_VARIABLE\"), got '$GROQ_API_KEY' (string)",
        ),
    ],
)
def test_api_key_env_must_be_a_variable_name(tmp_path: Path, value: str, expected: str) -> None:
    # Before: "" read the default variables instead, and the others were looked up and never found.
    message = refused(tmp_path, f'[tool.zorkgpt.llm]\napi_key_env = "{value}"\n')
    assert message == f"{expected} ({tmp_path}/pyproject.toml [tool.zorkgpt.llm])"


def test_a_variable_name_is_taken_as_it_is(tmp_path: Path) -> None:
    settings = load(tmp_path, '[tool.zorkgpt.llm]\napi_key_env = "GROQ_API_KEY"\n')
    assert settings.llm.api_key_env == "GROQ_API_KEY"
    assert LLMSettings(api_key_env="_my_key2").api_key_env == "_my_key2"
    assert LLMSettings(api_key_env="MyCompanyOpenAIKey2024").api_key_env == "MyCompanyOpenAIKey2024"


def test_built_in_python_the_key_is_not_shown_either() -> None:
    with pytest.raises(ConfigError) as caught:
        LLMSettings(api_key_env=KEY)
    assert KEY not in str(caught.value)
    assert str(caught.value).startswith("api_key_env must name the environment variable that holds the API")


# --- blank values that used to mean the default silently -------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '[tool.zorkgpt.llm]\nagent_model = ""\n',
            'agent_model must not be blank: name the model (e.g. "openai/gpt-4o-mini"), or leave the key '
            "out for the default model ({file} [tool.zorkgpt.llm])",
        ),
        (
            '[tool.zorkgpt.llm]\nagent_model = "  "\n',
            'agent_model must not be blank: name the model (e.g. "openai/gpt-4o-mini"), or leave the key '
            "out for the default model ({file} [tool.zorkgpt.llm])",
        ),
        (
            '[tool.zorkgpt.files]\ngame_file_path = ""\n',
            "game_file_path must not be blank: give the story file, or leave the key out to play the Zork I "
            "that ships with the package ({file} [tool.zorkgpt.files])",
        ),
    ],
)
def test_a_blank_model_or_story_file_is_refused(tmp_path: Path, text: str, expected: str) -> None:
    # Before: "" played the default model (or the packaged Zork I), "  " was sent as the model's name.
    assert refused(tmp_path, text) == expected.format(file=tmp_path / "pyproject.toml")


# --- slips in the sections shared with ZorkGPT ------------------------------------------------------

LLM_READS = (
    "zorkmcp reads client_base_url, agent_model, agent_base_url, api_key_env, cache_control here and "
    "leaves other keys to ZorkGPT"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '[tool.zorkgpt.llm]\nagent_modle = "gpt-4o"\n',
            f"unknown key 'agent_modle': did you mean 'agent_model'? ({LLM_READS}) "
            "({file} [tool.zorkgpt.llm])",
        ),
        (
            '[tool.zorkgpt.llm]\nAgent-Model = "gpt-4o"\n',
            f"unknown key 'Agent-Model': did you mean 'agent_model'? ({LLM_READS}) "
            "({file} [tool.zorkgpt.llm])",
        ),
        (
            '[tool.zorkgpt.llm]\nmodel = "gpt-4o"\n',
            f"unknown key 'model': zorkmcp's name for it is 'agent_model' ({LLM_READS}) "
            "({file} [tool.zorkgpt.llm])",
        ),
        (
            "[tool.zorkgpt.llm]\ntemperature = 0.2\n",
            "temperature belongs in [tool.zorkgpt.agent_sampling], not here: move it there "
            "({file} [tool.zorkgpt.llm])",
        ),
        (
            f'[tool.zorkgpt.llm]\napi_key = "{KEY}"\n',
            "api_key: zorkmcp reads no API key from a file (it would end up in version control): export it "
            "as OPENROUTER_API_KEY (sent only to OpenRouter) or OPENAI_API_KEY (sent to any other endpoint), "
            "or name its variable with api_key_env, and remove this key ({file} [tool.zorkgpt.llm])",
        ),
        (
            "[tool.zorkgpt.agent_sampling]\ntemprature = 0.2\n",
            "unknown key 'temprature': did you mean 'temperature'? (zorkmcp reads temperature, top_p, top_k, "
            "min_p, max_tokens here and leaves other keys to ZorkGPT) ({file} [tool.zorkgpt.agent_sampling])",
        ),
        (
            "[tool.zorkgpt.agent_sampling]\ntop-p = 0.9\n",
            "unknown key 'top-p': did you mean 'top_p'? (zorkmcp reads temperature, top_p, top_k, min_p, "
            "max_tokens here and leaves other keys to ZorkGPT) ({file} [tool.zorkgpt.agent_sampling])",
        ),
        (
            "[tool.zorkgpt.retry]\nmax_retrys = 2\n",
            "unknown key 'max_retrys': did you mean 'max_retries'? (zorkmcp reads max_retries, "
            "initial_delay, max_delay, exponential_base, jitter_factor, timeout_seconds, retry_on_timeout, "
            "retry_on_rate_limit, retry_on_server_error here and leaves other keys to ZorkGPT) "
            "({file} [tool.zorkgpt.retry])",
        ),
        (
            "[tool.zorkgpt.orchestrator]\nmax_turns = 50\n",
            "unknown key 'max_turns': zorkmcp's name for it is 'max_turns_per_episode' (zorkmcp reads "
            "max_turns_per_episode here and leaves other keys to ZorkGPT) "
            "({file} [tool.zorkgpt.orchestrator])",
        ),
        (
            "[tool.zorkgpt.mpc]\nenabled = true\n",
            "[tool.zorkgpt.mpc] is not a section zorkmcp reads: did you mean [tool.zorkgpt.mcp]? (it reads "
            "mcp, llm, retry, agent_sampling, files, orchestrator) ({file} [tool.zorkgpt])",
        ),
        (
            "[tool.zorkgpt.MCP]\nenabled = true\n",
            "[tool.zorkgpt.MCP] is not a section zorkmcp reads: did you mean [tool.zorkgpt.mcp]? (it reads "
            "mcp, llm, retry, agent_sampling, files, orchestrator) ({file} [tool.zorkgpt])",
        ),
        (
            "[tool.zorkgpt]\nenabled = true\n",
            "enabled belongs in [tool.zorkgpt.mcp], not in [tool.zorkgpt] itself: move it there "
            "({file} [tool.zorkgpt])",
        ),
    ],
)
def test_a_slip_in_a_shared_section_is_named_not_ignored(tmp_path: Path, text: str, expected: str) -> None:
    # Before, each of these loaded: the episode ran with the default model, no sampling, 5 retries,
    # 500 turns, MCP off, as if the line were not there.
    assert refused(tmp_path, text) == expected.format(file=tmp_path / "pyproject.toml")


def test_several_slips_are_listed_together(tmp_path: Path) -> None:
    message = refused(tmp_path, '[tool.zorkgpt.llm]\nagent_modle = "x"\nmax_tokens = 10\n')
    assert message.splitlines() == [
        f"2 problems in {tmp_path}/pyproject.toml [tool.zorkgpt.llm]:",
        f"  unknown key 'agent_modle': did you mean 'agent_model'? ({LLM_READS})",
        "  max_tokens belongs in [tool.zorkgpt.agent_sampling], not here: move it there",
    ]


def test_play_names_the_slip_and_exits_2(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.zorkgpt.agent_sampling]\ntemprature = 0.2\n")
    result = play(tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        "zorkmcp play: configuration error (ConfigError): unknown key 'temprature': did you mean "
        "'temperature'? (zorkmcp reads temperature, top_p, top_k, min_p, max_tokens here and leaves other "
        "keys to ZorkGPT) (pyproject.toml [tool.zorkgpt.agent_sampling])\n"
    )


ZORKGPT_PYPROJECT = """
[tool.zorkgpt.llm]
client_base_url = "https://openrouter.ai/api/v1"
agent_model = "qwen/qwen3-30b-a3b"
info_ext_model = "gemma-3-12b-it-qat"
critic_model = "gemma-3-12b-it-qat"
analysis_model = "qwen/qwen3-30b-a3b:free"
memory_model = "qwen/qwq-32b"
condensation_model = "qwen/qwq-32b"
info_ext_base_url = "http://oracle.nord:1234/v1"
critic_base_url = "http://oracle.nord:1234/v1"
analysis_base_url = "https://api.openai.com/v1"
memory_base_url = "https://api.openai.com/v1"
condensation_base_url = "https://api.openai.com/v1"

[tool.zorkgpt.retry]
max_retries = 5
initial_delay = 1.0
max_delay = 60.0
exponential_base = 2.0
jitter_factor = 0.1
retry_on_timeout = true
retry_on_rate_limit = true
retry_on_server_error = true
timeout_seconds = 120.0
circuit_breaker_enabled = true
circuit_breaker_failure_threshold = 10
circuit_breaker_recovery_timeout = 300.0
circuit_breaker_success_threshold = 3

[tool.zorkgpt.agent_sampling]
temperature = 0.6
top_p = 0.95
top_k = 20
min_p = 0.0

[tool.zorkgpt.critic_sampling]
temperature = 0.2
max_tokens = 100

[tool.zorkgpt.extractor_sampling]
temperature = 0.1
max_tokens = 400

[tool.zorkgpt.analysis_sampling]
temperature = 0.3
max_tokens = 5000

[tool.zorkgpt.gameplay]
turn_delay_seconds = 30.0
turn_window_size = 100
zork_game_workdir = "game_files"

[tool.zorkgpt.logging]
enable_prompt_logging = false

[tool.zorkgpt.orchestrator]
max_turns_per_episode = 5000
knowledge_update_interval = 100
map_update_interval = 10
objective_update_interval = 25
enable_state_export = true
max_context_tokens = 40000
context_overflow_threshold = 0.6

[tool.zorkgpt.files]
episode_log_file = "zork_episode_log.txt"
json_log_file = "zork_episode_log.jsonl"
state_export_file = "current_state.json"
map_state_file = "map_state.json"
knowledge_file = "knowledgebase.md"

[tool.zorkgpt.aws]
s3_key_prefix = "zorkgpt/"
"""


def test_zorkgpt_s_own_pyproject_still_loads(tmp_path: Path) -> None:
    # ZorkGPT's keys are alike ours (critic_base_url, episode_log_file...) but no slip of them.
    settings = load(tmp_path, ZORKGPT_PYPROJECT)
    assert (settings.llm.agent_model, settings.orchestrator.max_turns_per_episode) == (
        "qwen/qwen3-30b-a3b",
        5000,
    )
    assert (settings.agent_sampling.temperature, settings.agent_sampling.max_tokens) == (0.6, None)
    assert settings.files.json_log_file == "zork_episode_log.jsonl"


# --- TOML as Python, YAML and PowerShell write it ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[tool.zorkgpt.mcp]\nenabled = True\n",
            "Invalid value (at line 2, column 11) (TOML's booleans are lowercase: true or false)",
        ),
        (
            "[tool.zorkgpt.mcp]\nenabled = yes\n",
            "Invalid value (at line 2, column 11) (TOML's booleans are true and false)",
        ),
        (
            "[tool.zorkgpt.mcp]\nenabled = ture\n",
            "Invalid value (at line 2, column 11) (did you mean true?)",
        ),
        (
            "[tool.zorkgpt.llm]\napi_key_env = None\n",
            "Invalid value (at line 2, column 15) (TOML has no null: leave the key out)",
        ),
        (
            "[tool.zorkgpt.llm]\nagent_model = openai/gpt-4o-mini   # the agent\n",
            'Invalid value (at line 2, column 15) (a string needs quotes: "openai/gpt-4o-mini")',
        ),
    ],
)
def test_invalid_toml_says_what_to_write(tmp_path: Path, text: str, expected: str) -> None:
    assert refused(tmp_path, text) == f"invalid TOML in {tmp_path}/pyproject.toml: {expected}"


def test_an_unquoted_key_in_invalid_toml_is_not_shown(tmp_path: Path) -> None:
    message = refused(tmp_path, f"[tool.zorkgpt.llm]\napi_key_env = {KEY}\n")
    assert message == (
        f"invalid TOML in {tmp_path}/pyproject.toml: Invalid value (at line 2, column 15) (a string needs "
        "quotes; the value is not shown)"
    )


def test_a_json_file_given_as_the_pyproject_says_where_it_goes(tmp_path: Path) -> None:
    (tmp_path / "mcp_config.json").write_text('{"mcpServers": {"t": {"command": "python3"}}}\n')
    result = play(tmp_path, "--pyproject", "mcp_config.json")
    assert result.returncode == 2
    assert result.stderr == (
        "zorkmcp play: configuration error (ConfigError): invalid TOML in mcp_config.json: Invalid "
        "statement (at line 1, column 1) (it looks like JSON: this is where the pyproject.toml goes; name "
        "an mcp_config.json with config_file in its [tool.zorkgpt.mcp], or with --config for zorkmcp tools "
        "and call)\n"
    )


def test_a_utf16_pyproject_says_it_is_utf16(tmp_path: Path) -> None:
    # Windows PowerShell 5: Set-Content/Out-File/">" write UTF-16 with its byte order mark.
    path = tmp_path / "pyproject.toml"
    path.write_bytes("[tool.zorkgpt.mcp]\nenabled = true\n".encode("utf-16"))
    with pytest.raises(ConfigError) as caught:
        Settings.load(path)
    assert str(caught.value) == (
        f"{path} is UTF-16 (Windows PowerShell's > and Out-File write it), not UTF-8: save it as UTF-8 "
        "(Out-File -Encoding utf8, or your editor's encoding menu)"
    )
