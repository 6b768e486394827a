"""Tool input schemas on their way to the LLM: translated (a recursive one cut after one level);
``tools --lint`` says how. Left out with an event: tests/test_tool_count.py, and below for task-only tools.

The server is a real in-process SDK server (tests/schema_servers.py) over the SDK's memory transport.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import trio
import trio.testing
from servers.helpers import RecordingSink

from zorkmcp._cli_mcp import cmd_tools
from zorkmcp.config import McpSettings, ServerConfig
from zorkmcp.mcp import open_toolbox

if TYPE_CHECKING:
    from pathlib import Path

    import pytest

SERVER = ServerConfig(name="s", type="inprocess", module="schema_servers:create_schema_server")
REPEATS = 'Same structure as "Node" (recursive; not spelled out again).'
TREE = {
    "type": "object",
    "properties": {
        "node": {
            "type": "object",
            "properties": {"next": {"type": "object", "description": REPEATS}},
            "title": "Node",
        }
    },
}
TREE_CHANGES = [
    '$.properties.node: inlined $ref "#/$defs/Node"',
    '$.properties.node.properties.next: recursive $ref "#/$defs/Node" not spelled out again: '
    '{"type": "object"}, described as the same structure as "Node"',
    '$.properties.node: added title "Node" (recursive: where it repeats, it is named)',
    "$: dropped $defs (each $ref to them is inlined)",
]


async def _offered(sink: RecordingSink) -> tuple[list[dict[str, object]], str, str]:
    async with open_toolbox([SERVER], McpSettings(), events=sink) as toolbox:
        result = await toolbox.call_tool("s.optional", {"count": 2})
        tree = await toolbox.call_tool("s.tree", {"node": {"next": {"next": {"next": {}}}}})
        assert not tree.is_error, tree.error_message
        return toolbox.openai_tools(), str(result.content), str(tree.content)


def test_each_schema_is_translated_and_a_recursive_one_offered_cut_after_one_level() -> None:
    sink = RecordingSink()
    tools, answer, tree = trio.run(_offered, sink, clock=trio.testing.MockClock(autojump_threshold=0))
    names = [tool["function"]["name"] for tool in tools]  # type: ignore[index]
    assert names == ["s__plain", "s__optional", "s__tree"]
    assert [tool["function"]["parameters"] for tool in tools] == [  # type: ignore[index]
        {"type": "object", "properties": {"text": {"type": "string", "description": "what to say"}}},
        {"type": "object", "properties": {"count": {"type": "integer"}}},
        TREE,
    ]
    assert (answer, tree) == ("optional", "tree")
    assert [fields for event, fields in sink.events if event == "mcp_tool_excluded"] == []
    assert [line for level, line in sink.lines if level == "WARNING"] == []


def _config(tmp_path: Path) -> tuple[Path, Path]:
    config = tmp_path / "mcp_config.json"
    config.write_text(json.dumps({"mcpServers": {"s": {"type": "inprocess", "module": SERVER.module}}}))
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.zorkgpt.mcp]\nenabled = false\n")
    return config, pyproject


def test_tools_lint_says_what_changed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config, pyproject = _config(tmp_path)
    assert cmd_tools(config, pyproject, as_json=False, lint=True) == 0
    assert capsys.readouterr().out.splitlines() == [
        "s.plain: ok",
        "s.optional: offered with 2 change(s)",
        "  - $: dropped unsupported keyword '$schema'",
        "  - $.properties.count: dropped the null alternative (omit the argument instead)",
        "s.tree: offered with 4 change(s)",
        *(f"  - {change}" for change in TREE_CHANGES),
        "3 tool(s): 1 unchanged, 2 changed, 0 left out",
    ]


def test_tools_lint_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config, pyproject = _config(tmp_path)
    assert cmd_tools(config, pyproject, as_json=True, lint=True) == 0
    report = json.loads(capsys.readouterr().out)
    assert [(entry["tool"], entry["status"]) for entry in report] == [
        ("s.plain", "ok"),
        ("s.optional", "changed"),
        ("s.tree", "changed"),
    ]
    assert report[2] == {
        "tool": "s.tree",
        "status": "changed",
        "changes": TREE_CHANGES,
        "excluded": None,
        "parameters": TREE,
        "server": "s",
        "wire_name": "s__tree",
    }


TASK_REASON = 'it runs only as a task (execution.taskSupport "required"), and zorkmcp calls tools directly'


def test_a_tool_that_runs_only_as_a_task_is_left_out_and_lint_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Offered, every call of it failed (-32601): server-everything's ``simulate-research-query``."""
    tasks = ServerConfig(name="t", type="inprocess", module="schema_servers:create_task_server")
    sink = RecordingSink()

    async def offered() -> list[str]:
        async with open_toolbox([tasks], McpSettings(), events=sink) as toolbox:
            return [info.name for info in toolbox.tools]

    assert trio.run(offered, clock=trio.testing.MockClock(autojump_threshold=0)) == ["t.quick"]
    excluded = [fields for event, fields in sink.events if event == "mcp_tool_excluded"]
    assert excluded == [{"server": "t", "tool": "research", "reason": TASK_REASON}]

    config = tmp_path / "mcp_config.json"
    config.write_text(json.dumps({"mcpServers": {"t": {"type": "inprocess", "module": tasks.module}}}))
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.zorkgpt.mcp]\nenabled = false\n")
    assert cmd_tools(config, pyproject, as_json=False, lint=True) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "t.quick: ok",
        f"t.research: LEFT OUT: {TASK_REASON}",
        "2 tool(s): 1 unchanged, 0 changed, 1 left out",
    ]
    assert err == f"warning: MCP tool 't.research' left out: {TASK_REASON} (zorkmcp tools --lint explains)\n"
