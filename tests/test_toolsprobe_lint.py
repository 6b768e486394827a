"""``zorkmcp tools --lint`` says everything the engine does to a tool before the model sees it.

Probed as a user debugging servers would: a description longer than OpenAI's API takes (the
episode log warns that the model is offered it cut; ``--lint`` did not list it), ``tools/list``
entries left out before any schema is read (an ``inputSchema`` that is an array, an entry with no
name: warned of on stderr, missing from ``--lint`` and its count), and two tools of two servers
that share a canonical name (``--lint`` showed two identical headings).

Real parts: ``tests/servers/quirky.py`` as stdio server processes (every answer chosen here), the
command through :func:`zorkmcp.cli.main`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from zorkmcp._cli_lint import lint_report, render_lint_report
from zorkmcp.cli import main

if TYPE_CHECKING:
    import pytest

QUIRKY = Path(__file__).parent / "servers" / "quirky.py"
OBJECT = {"type": "object", "properties": {}}
LONG = "word " * 400  # 2000 characters: the model is offered the words that fit in 1024, and "…"
CUT_NOTE = (
    "description: 2000 characters, more than OpenAI's API takes (1024); the model is offered the first "
    "1019 of them and …"
)
CUT_WARNING = (
    "warning: MCP tool 'q.long': its description has 2000 characters, more than OpenAI's API takes "
    "(1024); the model is offered it cut to 1024\n"
)


def _server(tools: list[Any]) -> dict[str, Any]:
    return {"command": sys.executable, "args": ["-S", str(QUIRKY), json.dumps({"tools": tools})]}


def _tools(tmp_path: Path, servers: dict[str, Any], *flags: str) -> int:
    config = tmp_path / "mcp_config.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.zorkgpt.mcp]\nenabled = false\n")
    return main(["tools", *flags, "--config", str(config), "--pyproject", str(pyproject)])


DESCRIPTIONS = [
    {"name": "long", "description": LONG, "inputSchema": OBJECT},
    {"name": "fits", "description": "x" * 1024, "inputSchema": OBJECT},
]


def test_lint_lists_a_description_cut_for_the_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _tools(tmp_path, {"q": _server(DESCRIPTIONS)}, "--lint") == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "q.long: offered with 1 change(s)",
        f"  - {CUT_NOTE}",
        "q.fits: ok",
        "2 tool(s): 1 unchanged, 1 changed, 0 left out",
    ]
    assert err == CUT_WARNING


def test_lint_json_lists_a_description_cut_for_the_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _tools(tmp_path, {"q": _server(DESCRIPTIONS)}, "--lint", "--json") == 0
    out, err = capsys.readouterr()
    assert json.loads(out) == [
        {
            "tool": "q.long",
            "status": "changed",
            "changes": [CUT_NOTE],
            "excluded": None,
            "parameters": OBJECT,
            "server": "q",
            "wire_name": "q__long",
        },
        {
            "tool": "q.fits",
            "status": "ok",
            "changes": [],
            "excluded": None,
            "parameters": OBJECT,
            "server": "q",
            "wire_name": "q__fits",
        },
    ]
    assert err == CUT_WARNING


LISTING = [
    {"name": "plain", "inputSchema": OBJECT},
    {"name": "listy", "inputSchema": [1, 2]},
    {"description": "an entry with no name"},
]


def test_lint_lists_the_entries_left_out_of_a_listing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _tools(tmp_path, {"q": _server(LISTING)}, "--lint") == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "q.plain: ok",
        "q.listy: LEFT OUT: its inputSchema is a JSON array, not a schema object",
        "q.#3: LEFT OUT: entry #3 of tools/list has no name",
        "3 tool(s): 1 unchanged, 0 changed, 2 left out",
    ]
    assert err == (
        "warning: MCP tool 'q.listy' left out: its inputSchema is a JSON array, not a schema object\n"
        "warning: MCP tool 'q.#3' left out: entry #3 of tools/list has no name\n"
    )


def test_lint_json_lists_the_entries_left_out_of_a_listing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _tools(tmp_path, {"q": _server(LISTING)}, "--lint", "--json") == 0
    assert json.loads(capsys.readouterr().out)[1:] == [
        {
            "tool": "q.listy",
            "status": "excluded",
            "changes": [],
            "excluded": "its inputSchema is a JSON array, not a schema object",
            "parameters": None,
            "server": "q",
            "wire_name": None,
        },
        {
            "tool": "q.#3",
            "status": "excluded",
            "changes": [],
            "excluded": "entry #3 of tools/list has no name",
            "parameters": None,
            "server": "q",
            "wire_name": None,
        },
    ]


def test_lint_leaves_out_what_the_allow_list_leaves_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server = {**_server(LISTING), "tools": ["plain"]}
    assert _tools(tmp_path, {"q": server}, "--lint") == 0
    assert capsys.readouterr() == ("q.plain: ok\n1 tool(s): 1 unchanged, 0 changed, 0 left out\n", "")


# Server "x" has a tool "a.b", server "x.a" a tool "b": both are "x.a.b", told apart by wire name.
SHARED = {
    "x": _server([{"name": "a.b", "inputSchema": OBJECT}]),
    "x.a": _server([{"name": "b", "inputSchema": OBJECT}, {"name": "c", "inputSchema": OBJECT}]),
}
AMBIGUOUS = "warning: Tool name 'x.a.b' is ambiguous; the LLM can still call it by wire name\n"


def test_lint_tells_apart_two_tools_that_share_a_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _tools(tmp_path, SHARED, "--lint") == 0
    assert capsys.readouterr() == (
        "x.a.b (server 'x', wire name x__a_b): ok\n"
        "x.a.b (server 'x.a', wire name x_a__b): ok\n"
        "x.a.c: ok\n"
        "3 tool(s): 3 unchanged, 0 changed, 0 left out\n",
        AMBIGUOUS,
    )


def test_lint_json_tells_apart_two_tools_that_share_a_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _tools(tmp_path, SHARED, "--lint", "--json") == 0
    entry = {"status": "ok", "changes": [], "excluded": None, "parameters": OBJECT}
    assert json.loads(capsys.readouterr().out) == [
        {"tool": "x.a.b", **entry, "server": "x", "wire_name": "x__a_b"},
        {"tool": "x.a.b", **entry, "server": "x.a", "wire_name": "x_a__b"},
        {"tool": "x.a.c", **entry, "server": "x.a", "wire_name": "x_a__c"},
    ]


def test_lint_report_of_lint_tools() -> None:
    from zorkmcp._cli_lint import LintTool  # here: the tests above run (and fail) on code without it

    report = lint_report(
        [
            LintTool(name="s.t", schema=OBJECT, server="s", wire_name="s__t", description=LONG),
            LintTool(
                name="s.t", server="s", left_out="its inputSchema is a JSON string, not a schema object"
            ),
            LintTool(name="s.short", schema=OBJECT, description="x" * 1025),
            ("s.pair", OBJECT),
        ]
    )
    assert render_lint_report(report) == [
        "s.t (server 's', wire name s__t): offered with 1 change(s)",
        f"  - {CUT_NOTE}",
        "s.t (server 's'): LEFT OUT: its inputSchema is a JSON string, not a schema object",
        "s.short: offered with 1 change(s)",
        "  - description: 1025 characters, more than OpenAI's API takes (1024); the model is offered the "
        "first 1023 of them and …",
        "s.pair: ok",
        "4 tool(s): 1 unchanged, 2 changed, 1 left out",
    ]
