"""A server whose command line Linux refuses (an argument over 128 KiB) is said in a few lines.

Before, the start-up error showed the whole command (an argument of 300 KB, on stderr) and only
``OSError: [Errno 7] Argument list too long``. Now each argument shown is cut at 1000 characters, and
the reason says how long the longest was and what Linux takes. Real parts: the command through
:func:`zorkmcp.cli.main`, which really tries to start the process.
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from zorkmcp.cli import main

if TYPE_CHECKING:
    from pathlib import Path

    import pytest


def test_an_argument_longer_than_linux_takes_is_said_briefly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    long = "x" * 300_000
    servers = {"big": {"command": sys.executable, "args": ["-c", "pass", long]}}
    (tmp_path / "mcp_config.json").write_text(json.dumps({"mcpServers": servers}))
    (tmp_path / "pyproject.toml").write_text("[tool.zorkgpt.mcp]\nenabled = true\n")
    config, pyproject = tmp_path / "mcp_config.json", tmp_path / "pyproject.toml"
    assert main(["tools", "--config", str(config), "--pyproject", str(pyproject)]) == 1
    err = capsys.readouterr().err
    assert len(err) < 3000
    lines = err.splitlines()
    assert lines[0] == (
        f"Failed to start MCP server 'big': OSError: [Errno 7] Argument list too long: {sys.executable!r} "
        "(its longest argument "
        "has 300000 bytes; Linux takes at most 131072 in one argument, and about 2 MiB for all of them and "
        "the environment: pass a long value in a file)"
    )
    assert lines[1] == f"Command: {sys.executable} -c pass '{'x' * 1000}…(300000 characters)'"
