"""Tool input schemas on their way to the LLM: translated, or left out with an event; ``tools --lint``.

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
TREE_REASON = '$.properties.node.properties.next: recursive $ref "#/$defs/Node"'


async def _offered(sink: RecordingSink) -> tuple[list[dict[str, object]], str]:
    async with open_toolbox([SERVER], McpSettings(), events=sink) as toolbox:
        result = await toolbox.call_tool("s.optional", {"count": 2})
        tree = await toolbox.call_tool("s.tree", {})
        assert tree.is_error
        assert tree.error_message is not None
        assert tree.error_message.startswith("Unknown tool 's.tree'. Available tools: s.plain, s.optional")
        return toolbox.openai_tools(), str(result.content)


def test_a_schema_is_translated_or_its_tool_left_out_with_an_event() -> None:
    sink = RecordingSink()
    tools, answer = trio.run(_offered, sink, clock=trio.testing.MockClock(autojump_threshold=0))
    assert [tool["function"]["name"] for tool in tools] == ["s__plain", "s__optional"]  # type: ignore[index]
    assert [tool["function"]["parameters"] for tool in tools] == [  # type: ignore[index]
        {"type": "object", "properties": {"text": {"type": "string", "description": "what to say"}}},
        {"type": "object", "properties": {"count": {"type": "integer"}}},
    ]
    assert answer == "optional"
    excluded = [fields for event, fields in sink.events if event == "mcp_tool_excluded"]
    assert excluded == [{"server": "s", "tool": "tree", "reason": TREE_REASON}]
    assert (
        "WARNING",
        f"MCP tool 's.tree' left out: {TREE_REASON} (zorkmcp tools --lint explains)",
    ) in sink.lines


def _config(tmp_path: Path) -> tuple[Path, Path]:
    config = tmp_path / "mcp_config.json"
    config.write_text(json.dumps({"mcpServers": {"s": {"type": "inprocess", "module": SERVER.module}}}))
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.zorkgpt.mcp]\nenabled = false\n")
    return config, pyproject


def test_tools_lint_says_what_changed_and_what_was_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config, pyproject = _config(tmp_path)
    assert cmd_tools(config, pyproject, as_json=False, lint=True) == 0
    assert capsys.readouterr().out.splitlines() == [
        "s.plain: ok",
        "s.optional: offered with 2 change(s)",
        "  - $: dropped unsupported keyword '$schema'",
        "  - $.properties.count: dropped the null alternative (omit the argument instead)",
        f"s.tree: LEFT OUT: {TREE_REASON}",
        '  - $.properties.node: inlined $ref "#/$defs/Node"',
        "3 tool(s): 1 unchanged, 1 changed, 1 left out",
    ]


def test_tools_lint_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config, pyproject = _config(tmp_path)
    assert cmd_tools(config, pyproject, as_json=True, lint=True) == 0
    report = json.loads(capsys.readouterr().out)
    assert [(entry["tool"], entry["status"]) for entry in report] == [
        ("s.plain", "ok"),
        ("s.optional", "changed"),
        ("s.tree", "excluded"),
    ]
    assert report[2]["excluded"] == TREE_REASON
    assert report[2]["parameters"] is None


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
