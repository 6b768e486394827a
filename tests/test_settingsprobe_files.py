"""``pyproject.toml`` as a demanding user writes it: a slip in ``[tool.zorkgpt.mcp]``, a table under
another name (``[tool.zorkmcp]``), a path naming a folder or holding ``$HOME``, a key or a table written
twice, a Latin-1 comment, a folder where the file goes. Each is one line naming the file and the key,
and ``zorkmcp play`` exits 2 before anything starts (seeds 000 §Configuration Schema: fail fast)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
from play_support import offline_env

from zorkmcp.config import FilesSettings, McpSettings, Settings
from zorkmcp.errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path


def refused(tmp_path: Path, text: str | bytes) -> str:
    path = tmp_path / "pyproject.toml"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    with pytest.raises(ConfigError) as caught:
        Settings.load(path)
    return str(caught.value).replace(str(path), "pyproject.toml")


def play(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zorkmcp.cli", "play", "--quiet", "--turns", "1", *args],
        cwd=folder, env=offline_env(COLUMNS="400"), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


# --- [tool.zorkgpt.mcp]: every key is zorkmcp's, and a slip says what was meant -------------------


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("enable = true", "unknown key 'enable': did you mean 'enabled'?"),
        ("Enabled = true", "unknown key 'Enabled': did you mean 'enabled'?"),
        ("max-tool-iterations = 3", "unknown key 'max-tool-iterations': did you mean 'max_tool_iterations'?"),
        (
            "tool_call_timeout = 5",
            "unknown key 'tool_call_timeout': did you mean 'tool_call_timeout_seconds'?",
        ),
        (
            "temperature = 0.5",
            "temperature belongs in [tool.zorkgpt.agent_sampling], not here: move it there",
        ),
        ('agent_model = "m"', "agent_model belongs in [tool.zorkgpt.llm], not here: move it there"),
    ],
)
def test_a_slip_in_the_mcp_table_says_what_was_meant(tmp_path: Path, line: str, expected: str) -> None:
    # Before, each was "unknown key 'enable' (allowed: enabled, config_file, …)", no word of which.
    message = refused(tmp_path, f"[tool.zorkgpt.mcp]\nenabled = true\n{line}\n")
    assert message == f"{expected} (pyproject.toml [tool.zorkgpt.mcp])"


def test_a_slip_is_listed_with_the_table_s_other_problems(tmp_path: Path) -> None:
    message = refused(tmp_path, "[tool.zorkgpt.mcp]\nenabled = 1\nenable = true\nfoo = 2\n")
    assert message.splitlines() == [
        "3 problems in pyproject.toml [tool.zorkgpt.mcp]:",
        "  enabled must be true or false, got 1 (integer)",
        "  unknown key 'foo' (allowed: enabled, config_file, max_tool_iterations, tool_call_timeout_seconds, "
        "server_startup_timeout_seconds, force_tool_support, max_result_bytes, turn_timeout_seconds)",
        "  unknown key 'enable': did you mean 'enabled'?",
    ]


# --- a table meant for zorkmcp under another name -------------------------------------------------

_RENAME = "is not read: zorkmcp's settings are the [tool.zorkgpt.*] tables, as ZorkGPT's (mcp, llm, retry, "
_RENAME += "agent_sampling, files, orchestrator): rename"


@pytest.mark.parametrize(
    ("text", "written", "example"),
    [
        ("[tool.zorkmcp.mcp]\nenabled = false\n", "tool.zorkmcp", "[tool.zorkmcp.mcp] to [tool.zorkgpt.mcp]"),
        ("[tool.zorkmcp]\nx = 1\n", "tool.zorkmcp", "[tool.zorkmcp] to [tool.zorkgpt]"),
        ("[tool.zorgpt.llm]\nagent_model = 'm'\n", "tool.zorgpt", "[tool.zorgpt.llm] to [tool.zorkgpt.llm]"),
        ("[tool.ZorkGPT.mcp]\nenabled = false\n", "tool.ZorkGPT", "[tool.ZorkGPT.mcp] to [tool.zorkgpt.mcp]"),
        (
            "[tools.zorkgpt.mcp]\nenabled = false\n",
            "tools.zorkgpt",
            "[tools.zorkgpt.mcp] to [tool.zorkgpt.mcp]",
        ),
        ("[zorkgpt.mcp]\nenabled = false\n", "zorkgpt", "[zorkgpt.mcp] to [tool.zorkgpt.mcp]"),
        (
            "[tool.zorkgpt.mcp]\nenabled = true\n[tool.zorkmcp.llm]\nagent_model = 'm'\n",
            "tool.zorkmcp",
            "[tool.zorkmcp.llm] to [tool.zorkgpt.llm]",
        ),
    ],
)
def test_a_table_meant_for_zorkmcp_under_another_name_is_refused(
    tmp_path: Path, text: str, written: str, example: str
) -> None:
    # Before, the table was ignored: play ran with its embedded defaults (MCP on for enabled = false).
    assert refused(tmp_path, text) == f"[{written}] {_RENAME} {example} (pyproject.toml)"
    with pytest.raises(ConfigError, match=r"^\[.*\] is not read: "):
        Settings.from_pyproject(tmp_path / "pyproject.toml")


def test_other_tools_tables_are_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text("[tool.zorkburr]\nagent_model = 'm'\n[tool.ruff]\nline-length = 1\n[tool.zork]\nx = 1\n")
    assert Settings.load(path) == Settings.embedded()


def test_play_refuses_tool_zorkmcp_before_it_starts(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.zorkmcp.mcp]\nenabled = false\n")
    result = play(tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        f"zorkmcp play: configuration error (ConfigError): [tool.zorkmcp] {_RENAME} [tool.zorkmcp.mcp] to "
        "[tool.zorkgpt.mcp] (pyproject.toml)\n"
    )
    assert not (tmp_path / "logs").exists()


# --- paths: a file, as written ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '[tool.zorkgpt.files]\njson_log_file = "logs/"\n',
            "json_log_file must name a file, not a folder, got 'logs/' (string): write the file's name too "
            '(e.g. "logs/zorkmcp_events.jsonl") (pyproject.toml [tool.zorkgpt.files])',
        ),
        (
            '[tool.zorkgpt.files]\nepisode_log_file = "logs/.."\n',
            "episode_log_file must name a file, not a folder, got 'logs/..' (string): write the file's name "
            'too (e.g. "logs/episode.log") (pyproject.toml [tool.zorkgpt.files])',
        ),
        (
            '[tool.zorkgpt.files]\njson_log_file = "   "\n',
            'json_log_file must not be blank: name the file (e.g. "logs/zorkmcp_events.jsonl") '
            "(pyproject.toml [tool.zorkgpt.files])",
        ),
        (
            '[tool.zorkgpt.mcp]\nconfig_file = " "\n',
            'config_file must not be blank: name the file (e.g. "mcp_config.json") (pyproject.toml '
            "[tool.zorkgpt.mcp])",
        ),
        (
            '[tool.zorkgpt.files]\njson_log_file = "$HOME/logs/x.jsonl"\n',
            "json_log_file holds $HOME, but paths are taken as written (no environment "
            "variable is expanded, as in ZorkGPT): write the path itself (~/ is the home folder) "
            "(pyproject.toml [tool.zorkgpt.files])",
        ),
        (
            '[tool.zorkgpt.mcp]\nenabled = true\nconfig_file = "${CONFIG_DIR}/mcp.json"\n',
            "config_file holds ${CONFIG_DIR}, but paths are taken as written (no "
            "environment variable is expanded, as in ZorkGPT): write the path itself (~/ is the home folder) "
            "(pyproject.toml [tool.zorkgpt.mcp])",
        ),
        (
            '[tool.zorkgpt.files]\ngame_file_path = "%USERPROFILE%/zork1.z3"\n',
            "game_file_path holds %USERPROFILE%, but paths are taken as written (no "
            "environment variable is expanded, as in ZorkGPT): write the path itself (~/ is the home folder) "
            "(pyproject.toml [tool.zorkgpt.files])",
        ),
    ],
)
def test_a_path_that_names_no_file_is_refused(tmp_path: Path, text: str, expected: str) -> None:
    assert refused(tmp_path, text) == expected


def test_a_dollar_that_is_no_variable_is_part_of_the_name(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text('[tool.zorkgpt.files]\njson_log_file = "logs/price$.jsonl"\n')
    assert Settings.load(path).files.json_log_file == "logs/price$.jsonl"


def test_built_in_python_a_folder_is_no_log_file() -> None:
    with pytest.raises(ConfigError, match=r"^json_log_file must name a file, not a folder, got 'runs/' "):
        FilesSettings(json_log_file="runs/")
    with pytest.raises(ConfigError, match=r"^config_file must not be blank: "):
        McpSettings(config_file="\t")


def test_play_refuses_a_log_folder_before_it_starts(tmp_path: Path) -> None:
    # Before, the event log was written to a file called "logs", then the episode log (logs/episode.log)
    # failed with "File exists" after the episode began: exit 1.
    (tmp_path / "pyproject.toml").write_text('[tool.zorkgpt.files]\njson_log_file = "logs/"\n')
    result = play(tmp_path)
    assert result.returncode == 2
    assert result.stderr == (
        "zorkmcp play: configuration error (ConfigError): json_log_file must name a file, not a folder, got "
        "'logs/' (string): write the file's name too (e.g. \"logs/zorkmcp_events.jsonl\") (pyproject.toml "
        "[tool.zorkgpt.files])\n"
    )
    assert not (tmp_path / "logs").exists()


def test_play_does_not_make_a_folder_called_home(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.zorkgpt.files]\nepisode_log_file = "$HOME/episode.log"\n')
    result = play(tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith(
        "zorkmcp play: configuration error (ConfigError): episode_log_file holds $HOME"
    )
    assert sorted(os.listdir(tmp_path)) == ["pyproject.toml"]


# --- the file itself ------------------------------------------------------------------------------


def test_a_latin1_byte_is_found_by_its_line(tmp_path: Path) -> None:
    message = refused(tmp_path, b"[tool.zorkgpt.mcp]\nenabled = true  # caf\xe9\n")
    assert message == (
        "pyproject.toml is not valid UTF-8 (byte 40) at line 2, column 22 (0xe9): save it as UTF-8 "
        "(your editor's encoding menu)"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "[tool.zorkgpt.mcp]\nenabled = true\nenabled = false\n",
            "invalid TOML in pyproject.toml: Cannot overwrite a value (at line 3, column 16) (enabled is set "
            "twice in one table: keep one)",
        ),
        (
            "[tool.zorkgpt.mcp]\nenabled = true\n\n[tool.zorkgpt.mcp]\nmax_tool_iterations = 5\n",
            "invalid TOML in pyproject.toml: Cannot declare ('tool', 'zorkgpt', 'mcp') twice (at line 4, "
            "column 18) ([tool.zorkgpt.mcp] is written twice: merge the two into one)",
        ),
    ],
)
def test_a_key_or_table_written_twice_is_named(tmp_path: Path, text: str, expected: str) -> None:
    assert refused(tmp_path, text) == expected


def test_a_folder_called_pyproject_toml_says_so(tmp_path: Path) -> None:
    # Before: "cannot read pyproject.toml: Is a directory", and no word of what to do.
    (tmp_path / "pyproject.toml").mkdir()
    result = play(tmp_path)
    assert result.returncode == 2
    assert result.stderr == (
        "zorkmcp play: configuration error (ConfigError): pyproject.toml is a folder, not a settings file: "
        "give the pyproject.toml with --pyproject PATH\n"
    )


def test_a_tool_key_that_is_no_table_is_named_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text("tool = 3\n")
    with pytest.raises(ConfigError) as caught:
        Settings.from_pyproject(path)
    assert (
        str(caught.value)
        == f"tool must be a table ([tool.zorkgpt.mcp] and the like), got 3 (integer) ({path})"
    )
