"""``zorkmcp call`` and ``zorkmcp tools`` as a demanding user types them.

The arguments from standard input (``-``), a JSON object the shell split into words, empty
arguments, single quotes where JSON takes double ones; JSON output when standard output's encoding
is not UTF-8 (``PYTHONIOENCODING=ascii``, a Latin-1 locale: ``é`` came out as ``\\xe9``, which no
JSON reader takes); a command missing from ``PATH`` for a server ``call SERVER.TOOL`` does not
start; a tool's bare name (``think`` for ``thinking.think``); a server of prompts only.

Real parts: ``tests/servers/quirky.py`` as stdio server processes (every answer chosen here), the
commands through :func:`zorkmcp.cli.main`, or as processes (``python -m zorkmcp.cli``) where
standard input or output must be real.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from zorkmcp.cli import main

QUIRKY = Path(__file__).parent / "servers" / "quirky.py"
OBJECT = {"type": "object", "properties": {}}
GUARD = 30  # seconds: a hang guard only
CAFE = {"result": {"content": [{"type": "text", "text": "café…"}]}}


def _server(spec: dict[str, Any]) -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-S", str(QUIRKY), json.dumps(spec)]}


ECHO = _server({"tools": [{"name": "echo", "inputSchema": OBJECT}], "answers": {}})
"""``q.echo`` answers ``{"pid", "calls", "arguments"}``: the arguments as the server got them."""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.zorkgpt.mcp]\nenabled = false\n")
    return tmp_path


def _configure(project: Path, servers: dict[str, Any]) -> None:
    (project / "mcp_config.json").write_text(json.dumps({"mcpServers": servers}))


def _main(project: Path, *args: str) -> int:
    config, pyproject = project / "mcp_config.json", project / "pyproject.toml"
    return main([*args, "--config", str(config), "--pyproject", str(pyproject)])


def _process(project: Path, *args: str, stdin: bytes = b"", **env: str) -> subprocess.CompletedProcess[bytes]:
    config, pyproject = project / "mcp_config.json", project / "pyproject.toml"
    return subprocess.run(
        [sys.executable, "-m", "zorkmcp.cli", *args, "--config", str(config), "--pyproject", str(pyproject)],
        input=stdin,
        capture_output=True,
        cwd=project,
        env={**os.environ, **env},
        timeout=GUARD,
        check=False,
    )


# --- the arguments ---------------------------------------------------------------------------------


def test_dash_reads_the_arguments_from_standard_input(project: Path) -> None:
    _configure(project, {"q": ECHO})
    done = _process(project, "call", "q.echo", "-", stdin=b'{"text": "it\'s, \\"quoted\\""}\n')
    assert (done.returncode, done.stderr) == (0, b"")
    assert json.loads(done.stdout)["content"]["arguments"] == {"text": 'it\'s, "quoted"'}


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        (
            b"",
            "configuration error: the arguments read from standard input are empty: pass one JSON object, "
            """such as '{"text": "hi"}', or no JSON-ARGS for {}\n""",
        ),
        (
            b"[1, 2]\n",
            "configuration error: the arguments read from standard input must be a JSON object, "
            "got '[1, 2]'\n",
        ),
        (
            b'{"text": "caf\xe9"}',
            "configuration error: the arguments read from standard input are not UTF-8 "
            "text (invalid continuation byte)\n",
        ),
    ],
)
def test_bad_arguments_on_standard_input_are_one_line(project: Path, stdin: bytes, message: str) -> None:
    _configure(project, {"q": ECHO})
    done = _process(project, "call", "q.echo", "-", stdin=stdin)
    assert (done.returncode, done.stdout, done.stderr.decode()) == (2, b"", message)


def test_a_json_object_the_shell_split_is_one_line_not_the_programs_usage(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # zorkmcp call q.echo {"text": "hi"}   (unquoted: bash passes {text: and hi})
    _configure(project, {"q": ECHO})
    assert _main(project, "call", "q.echo", "{text:", "hi}") == 2
    assert capsys.readouterr() == (
        "",
        "configuration error: JSON-ARGS is one argument, got 2 ({text: hi}): quote the JSON object for "
        """the shell, e.g. '{"text": "hi"}'\n""",
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            "",
            "the arguments are empty: pass one JSON object, such as "
            """'{"text": "hi"}', or no JSON-ARGS for {}""",
        ),
        (
            "{'text': 'hi'}",
            "the arguments are not valid JSON: Expecting property name enclosed in double quotes: line 1 "
            """column 2 (char 1); pass one JSON object, such as '{"text": "hi"}' (JSON strings and keys """
            "take double quotes), or - to read it from standard input",
        ),
    ],
)
def test_arguments_that_are_no_json_object_say_what_to_pass(
    project: Path, capsys: pytest.CaptureFixture[str], args: str, message: str
) -> None:
    _configure(project, {"q": ECHO})
    assert _main(project, "call", "q.echo", args) == 2
    assert capsys.readouterr() == ("", f"configuration error: {message}\n")


# --- output that is JSON whatever the terminal's encoding ------------------------------------------


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_call_prints_json_when_stdout_is_not_utf8(project: Path, encoding: str) -> None:
    _configure(
        project,
        {"q": _server({"tools": [{"name": "cafe", "inputSchema": OBJECT}], "answers": {"cafe": CAFE}})},
    )
    done = _process(project, "call", "q.cafe", PYTHONIOENCODING=encoding)
    assert (done.returncode, done.stderr) == (0, b"")
    assert json.loads(done.stdout) == {"content": "café…"}


def test_tools_json_is_json_when_stdout_is_not_utf8(project: Path) -> None:
    _configure(
        project, {"q": _server({"tools": [{"name": "cafe", "description": "Café…", "inputSchema": OBJECT}]})}
    )
    done = _process(project, "tools", "--json", PYTHONIOENCODING="ascii")
    assert (done.returncode, done.stderr) == (0, b"")
    assert [tool["description"] for tool in json.loads(done.stdout)] == ["Café…"]


def test_call_prints_non_ascii_as_it_is_on_utf8(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _configure(
        project,
        {"q": _server({"tools": [{"name": "cafe", "inputSchema": OBJECT}], "answers": {"cafe": CAFE}})},
    )
    assert _main(project, "call", "q.cafe") == 0
    assert capsys.readouterr() == ('{"content": "café…"}\n', "")


# --- which servers matter ---------------------------------------------------------------------------


def test_call_of_one_server_ignores_another_servers_missing_command(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _configure(project, {"q": ECHO, "node": {"command": "zorkmcp-no-such-command", "args": []}})
    assert _main(project, "call", "q.echo", '{"n": 1}') == 0
    out, err = capsys.readouterr()
    assert (json.loads(out)["content"]["arguments"], err) == ({"n": 1}, "")


MISSING = (
    "configuration error: $.mcpServers.node.command 'zorkmcp-no-such-command' was not found on PATH "
    "(or set \"disabled\": true on server 'node') ({config})\n"
)


@pytest.mark.parametrize("args", [["call", "node.x"], ["call", "typo.x"], ["tools"]])
def test_a_missing_command_of_a_server_that_would_start_is_still_a_configuration_error(
    project: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    _configure(project, {"q": ECHO, "node": {"command": "zorkmcp-no-such-command"}})
    assert _main(project, *args) == 2
    assert capsys.readouterr() == ("", MISSING.format(config=project / "mcp_config.json"))


# --- unknown tools that say why --------------------------------------------------------------------


def test_a_tools_bare_name_says_the_name_to_call(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _configure(project, {"q": ECHO})
    assert _main(project, "call", "echo") == 1
    assert json.loads(capsys.readouterr().out) == {
        "error": "Unknown tool 'echo': a tool is called by SERVER.TOOL; did you mean q.echo?",
        "content": None,
    }


def test_a_wire_name_without_its_hash_names_the_wire_names_to_call(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # servers "a.b" and "a_b", each with a tool "echo": both would be a_b__echo, so each gets a hash
    _configure(project, {"a.b": ECHO, "a_b": ECHO})
    assert _main(project, "call", "a_b__echo") == 1
    assert json.loads(capsys.readouterr().out) == {
        "error": "Unknown tool 'a_b__echo': a wire name that two tools share, or longer than 64 characters, "
        "ends in a hash; call one of them by its wire name: a_b__echo_d47d3f2e (server 'a.b'), "
        "a_b__echo_8054cc23 (server 'a_b')",
        "content": None,
    }


def test_a_server_of_prompts_only_says_it_has_no_tools(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _configure(project, {"q": ECHO, "p": _server({"capabilities": {"prompts": {}}})})
    assert _main(project, "call", "p.greet") == 1
    assert json.loads(capsys.readouterr().out) == {
        "error": "Unknown tool 'p.greet': MCP server 'p' offers no tools: its initialize answer declares no "
        "tools capability (a server of prompts or resources only). Available tools: none",
        "content": None,
    }


# --- the table and the help ------------------------------------------------------------------------


def test_the_table_of_one_tool_says_one_tool(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _configure(project, {"q": ECHO})
    assert _main(project, "tools") == 0
    assert capsys.readouterr().out.splitlines()[0].strip() == "1 MCP tool"


def _help(command: str, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    return " ".join(capsys.readouterr().out.split())


def test_help_says_what_the_commands_do(capsys: pytest.CaptureFixture[str]) -> None:
    call = _help("call", capsys)
    assert '\'{"text": "hi"}\' (default: {}); - reads it from standard input' in call
    assert "or an output that cannot be written, 2 for a configuration error or JSON-ARGS" in call
    tools = _help("tools", capsys)
    assert (
        "2 for a configuration error (a SERVER not in mcp_config.json, or disabled there, too), 130 "
        "interrupted (Ctrl-C), 141 when the reader of the output" in tools
    )
    assert (
        "usage: zorkmcp tools [-h] [--config PATH] [--pyproject PATH] [--json] [--lint] [SERVER ...]" in tools
    )
    assert "(its input schema, a description longer than OpenAI's API takes)" in tools
