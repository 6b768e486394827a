"""``zorkmcp call`` speaks of the tool it calls; ``zorkmcp tools --lint`` lists the listing's repairs.

One real stdio server (``tests/servers/quirky.py``) lists four tools: ``good``; ``long``, whose
description is cut for the model; ``arr``, left out for its array input schema; ``out``, whose
``outputSchema`` is not an object schema, so the engine drops it at listing (a repair). Calling
``good`` used to repeat the warnings about ``long`` and ``arr`` on every call; now they are one
``note:`` line that says where to read them, and a warning about the tool called is still shown.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from zorkmcp._cli_mcp import cmd_call, cmd_tools

QUIRKY = Path(__file__).parent / "servers" / "quirky.py"
TOOLS = [
    {"name": "good", "inputSchema": {"type": "object", "properties": {}}},
    {"name": "long", "description": "word " * 400, "inputSchema": {"type": "object", "properties": {}}},
    {"name": "arr", "inputSchema": {"type": "array", "items": {}}},
    {
        "name": "out",
        "inputSchema": {"type": "object", "properties": {}},
        "outputSchema": {"type": "array"},
    },
]
DROPPED = (
    "dropped its outputSchema (type: Input should be 'object' (got \"array\")): its structured "
    "results are not checked against a schema"
)
LONG = (
    "warning: MCP tool 'q.long': its description has 2000 characters, more than OpenAI's API takes (1024); "
    "the model is offered it cut to 1024\n"
)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    config = tmp_path / "mcp_config.json"
    server = {"command": sys.executable, "args": ["-S", str(QUIRKY), json.dumps({"tools": TOOLS})]}
    config.write_text(json.dumps({"mcpServers": {"q": server}}))
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.zorkgpt.mcp]\nenabled = false\n")
    return config, pyproject


def _lint(config: Path, pyproject: Path) -> str:
    """The command the notes point to: ``call`` started only server ``q``, so ``tools`` lists only it."""
    return shlex.join(
        ["zorkmcp", "tools", "--lint", "--config", str(config), "--pyproject", str(pyproject), "q"]
    )


def test_a_call_counts_the_warnings_about_other_tools(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    config, pyproject = files
    assert cmd_call("q.good", "{}", config, pyproject, None) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["content"]["calls"] == 1
    assert err == f"note: 2 warnings about other tools not shown ({_lint(config, pyproject)} shows them)\n"


def test_a_call_shows_the_warning_about_its_own_tool(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    config, pyproject = files
    assert cmd_call("q__long", "{}", config, pyproject, None) == 0  # by its wire name too
    _, err = capsys.readouterr()
    assert (
        err == LONG + f"note: 1 warning about other tools not shown ({_lint(config, pyproject)} shows them)\n"
    )


def test_a_call_of_a_tool_left_out_shows_why(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    config, pyproject = files
    assert cmd_call("q.arr", "{}", config, pyproject, None) == 1
    out, err = capsys.readouterr()
    assert json.loads(out) == {  # the result says why, not only stderr
        "error": "Unknown tool 'q.arr': MCP server 'q' lists it, but zorkmcp leaves it out: $: arguments "
        'must be a JSON object, the schema says "array" (wrapping it would change what the server '
        f"receives) ({_lint(config, pyproject)} explains)",
        "content": None,
    }
    assert err == (
        "warning: MCP tool 'q.arr' left out: $: arguments must be a JSON object, the schema says \"array\" "
        "(wrapping it would change what the server receives) (zorkmcp tools --lint explains)\n"
        f"note: 1 warning about other tools not shown ({_lint(config, pyproject)} shows them)\n"
    )


def test_lint_lists_the_repairs_of_the_listing(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    config, pyproject = files
    assert cmd_tools(config, pyproject, as_json=True, lint=True) == 0
    out, err = capsys.readouterr()
    report = {entry["tool"]: entry for entry in json.loads(out)}
    assert report["q.out"] == {
        "tool": "q.out",
        "status": "changed",
        "changes": [DROPPED],
        "excluded": None,
        "parameters": {"type": "object", "properties": {}},
        "server": "q",
        "wire_name": "q__out",
    }
    assert report["q.good"]["status"] == "ok"
    # `tools` itself still shows every warning, as zorkmcp play does
    assert err == (
        "warning: MCP tool 'q.arr' left out: $: arguments must be a JSON object, the schema says \"array\" "
        "(wrapping it would change what the server receives) (zorkmcp tools --lint explains)\n" + LONG
    )
    assert cmd_tools(config, pyproject, as_json=False, lint=True) == 0
    out, _ = capsys.readouterr()
    assert (f"q.out: offered with 1 change(s)\n  - {DROPPED}\n") in out


def test_a_call_of_a_name_only_the_allow_list_has_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "mcp_config.json"
    spec = json.dumps({"tools": TOOLS[:1]})
    server = {"command": sys.executable, "args": ["-S", str(QUIRKY), spec], "tools": ["good", "ghost"]}
    config.write_text(json.dumps({"mcpServers": {"q": server}}))
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.zorkgpt.mcp]\nenabled = false\n")
    assert cmd_call("q.ghost", "{}", config, pyproject, None) == 1
    out, err = capsys.readouterr()
    assert json.loads(out) == {
        "error": "Unknown tool 'q.ghost': MCP server 'q' has no tool of that name (its 'tools' allow-list in "
        "mcp_config.json names it). Available tools: q.good",
        "content": None,
    }
    assert err == "warning: MCP server 'q' has no tools named ghost (from its 'tools' allow-list)\n"
