"""The commands in the C locale, a Latin-1 one, and a shell whose folder was removed, as users on many
machines run them.

In the C or POSIX locale without Python's coercion to UTF-8 (``LC_ALL=C PYTHONCOERCECLOCALE=0``,
or a system with no UTF-8 locale installed), Python names files in ASCII and writes stdout in ASCII
with ``surrogateescape``: a character that is not ASCII, in a path a settings file gives or in the
text printed, was a ``UnicodeEncodeError`` traceback. Each is one line now (Requirement 9.3's one
clear line for bad settings), or the character's escape in the output.

Real parts: the commands as processes (``python -m zorkmcp.cli``) with that environment, the
embedded ``thinking`` server as a real MCP subprocess, the real file system.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from zorkmcp._outputs import append_whole, check_output, write_error
from zorkmcp.errors import ConfigError

_LOCALE_VARIABLES = {"LANG", "LANGUAGE", "PYTHONUTF8", "PYTHONIOENCODING", "PYTHONCOERCECLOCALE"}


def _c_locale() -> dict[str, str]:
    """This environment in the C locale, as Python sees it when it does not coerce it to UTF-8."""
    kept = {
        key: value
        for key, value in os.environ.items()
        if key not in _LOCALE_VARIABLES and not key.startswith("LC_")
    }
    return kept | {"LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, cwd=cwd, env=_c_locale(), check=False, timeout=60
    )


def test_the_environment_is_the_c_locale_without_coercion(tmp_path: Path) -> None:
    done = _run(["-c", "import sys; print(sys.getfilesystemencoding(), sys.stdout.errors)"], tmp_path)
    assert done.stdout == b"ascii surrogateescape\n"


def test_print_line_writes_what_ascii_lacks_as_its_escape_and_a_name_s_byte_as_that_byte(
    tmp_path: Path,
) -> None:
    script = (
        "from zorkmcp._stdout import print_line; "
        "print_line('runs/bad\\udcffdir a\\u2026 caf\\xe9 \\U0001f600')"
    )
    done = _run(["-c", script], tmp_path)
    assert (done.returncode, done.stderr) == (0, b"")
    assert done.stdout == b"runs/bad\xffdir a\\u2026 caf\\xe9 \\U0001f600\n"


def test_tools_in_the_c_locale_prints_its_table_not_a_traceback(tmp_path: Path) -> None:
    # The thinking tool's description is cut with an ellipsis (U+2026), which ASCII lacks.
    config = {
        "mcpServers": {"thinking": {"command": sys.executable, "args": ["-m", "zorkmcp.servers.thinking"]}}
    }
    (tmp_path / "mcp_config.json").write_text(json.dumps(config))
    (tmp_path / "pyproject.toml").write_text("[tool.zorkgpt.mcp]\nenabled = true\n")
    done = _run(["-m", "zorkmcp.cli", "tools"], tmp_path)
    assert (done.returncode, done.stderr) == (0, b"")
    assert b"puzzle down (a locked door, a\\u2026 |" in done.stdout


def test_a_log_path_the_locale_cannot_name_is_one_line_before_anything_starts(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.zorkgpt.mcp]\nenabled = false\n"
        '[tool.zorkgpt.files]\njson_log_file = "logs/événements.jsonl"\n',
        encoding="utf-8",
    )
    done = _run(["-m", "zorkmcp.cli", "play", "--turns", "1"], tmp_path)
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr.decode("ascii") == (
        "zorkmcp play: configuration error (ConfigError): [tool.zorkgpt.files] json_log_file "
        "(logs/\\xe9v\\xe9nements.jsonl): \\xe9 (U+00E9) cannot be in a file name here: this system names "
        "files in ascii, from the locale (LC_ALL, LC_CTYPE, LANG); run it with a UTF-8 locale "
        f"(LC_ALL=C.UTF-8) or PYTHONUTF8=1, or set another path in {tmp_path}/pyproject.toml\n"
    )
    assert not (tmp_path / "logs").exists()


def test_an_eval_folder_the_locale_cannot_name_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "eval.toml").write_text(
        '[eval]\nepisodes = 1\nmax_turns = 1\nout = "runs/日本"\n\n[[arms]]\nname = "a"\nmcp = false\n',
        encoding="utf-8",
    )
    done = _run(["-m", "zorkmcp.cli", "eval", "eval.toml"], tmp_path)
    assert (done.returncode, done.stdout) == (2, b"")
    assert done.stderr.decode("ascii") == (
        "zorkmcp eval: ConfigError: eval.toml: eval.out: \\u65e5 (U+65E5) cannot be in a file name here: "
        "this system names files in ascii, from the locale (LC_ALL, LC_CTYPE, LANG); run it with a UTF-8 "
        "locale (LC_ALL=C.UTF-8) or PYTHONUTF8=1, or pass another --out\n"
    )
    assert not (tmp_path / "runs").exists()


def test_a_lone_surrogate_in_an_output_path_is_a_config_error() -> None:
    # JSON can hold one ("\ud800"); no file system encoding, UTF-8's surrogateescape neither, takes it.
    with pytest.raises(ConfigError) as caught:
        check_output(
            Path("logs/a\ud800.jsonl"), "--summary-json logs/a\ud800.jsonl", "pass another --summary-json"
        )
    assert str(caught.value) == (
        "--summary-json logs/a\ud800.jsonl: it holds a lone surrogate (U+D800), which no file name can; "
        "pass another --summary-json"
    )


def test_a_log_whose_current_folder_was_removed_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shell_folder = tmp_path / "project"
    (shell_folder / "logs").mkdir(parents=True)
    monkeypatch.chdir(shell_folder)
    (shell_folder / "logs").rmdir()
    shell_folder.rmdir()  # rm -rf of the folder the command runs in, while it runs
    with pytest.raises(FileNotFoundError) as failed:
        append_whole(Path("logs/zorkmcp_events.jsonl"), b"{}\n")
    assert failed.value.errno == errno.ENOENT
    error = write_error(Path("logs/zorkmcp_events.jsonl"), failed.value)
    assert str(error) == "logs/zorkmcp_events.jsonl: cannot be written (No such file or directory)"
    assert error.remedy == "cd to a folder that exists (the current folder was removed while the command ran)"
