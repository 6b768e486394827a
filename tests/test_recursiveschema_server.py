"""A real MCP server whose tools take recursive pydantic models: offered, and nested arguments reach it.

This module is also the server: ``python tests/test_recursiveschema_server.py`` runs the SDK's
``MCPServer`` over stdio with three tools whose input schemas refer to themselves, as the SDK
publishes them for pydantic models: ``tree`` (a node with ``children: list[Node]``), ``search`` (an
And/Or/Not/Leaf filter) and ``put`` (a JSON ``Value`` type alias). Each answers what it received,
so a test sees the arguments as the server validated them.

The server runs in a subprocess started by the engine: these tests run in real time (waiting for a
process to start has no virtual clock), with no sleeps.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Literal

from llm_server import LLMServer, content_reply, tool_call, tool_call_reply
from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel, Field, TypeAdapter
from typing_extensions import TypeAliasType

from zorkmcp.config import McpConfig, McpSettings, ServerConfig
from zorkmcp.engine import TurnOptions, run_turn
from zorkmcp.llm import open_llm_client
from zorkmcp.mcp import McpManager
from zorkmcp.observability import EventRecorder


class Node(BaseModel):
    name: str = Field(description="the node's label")
    children: list[Node] = []


class Leaf(BaseModel):
    field: str
    op: Literal["eq", "ne", "lt", "gt", "contains"]
    value: str | int | float


class And(BaseModel):
    and_: list[Filter] = Field(alias="and")


class Or(BaseModel):
    or_: list[Filter] = Field(alias="or")


class Not(BaseModel):
    not_: Filter = Field(alias="not")


Filter = And | Or | Not | Leaf
Value = TypeAliasType("Value", "str | int | float | bool | list[Value] | dict[str, Value] | None")

FILTERS: TypeAdapter[Any] = TypeAdapter(Filter)
server: MCPServer[Any] = MCPServer("rec")


@server.tool()
def tree(root: Node) -> dict[str, Any]:
    """Store a tree; answers the tree it received."""
    return {"root": root.model_dump(mode="json", by_alias=True, exclude_unset=True)}


@server.tool()
def search(filter: Filter, limit: int = 10) -> dict[str, Any]:
    """Search; answers the filter it received."""
    return {"filter": FILTERS.dump_python(filter, mode="json", by_alias=True, exclude_unset=True)}


@server.tool()
def put(key: str, value: Value) -> dict[str, Any]:
    """Store a value; answers the value it received."""
    return {"key": key, "value": value}


SERVER = ServerConfig(name="rec", command=sys.executable, args=(__file__,), timeout=30)
REPEATS = "(recursive; not spelled out again)."
TREE_PARAMETERS = {
    "properties": {
        "root": {
            "properties": {
                "name": {"description": "the node's label", "title": "Name", "type": "string"},
                "children": {
                    "items": {"type": "object", "description": f'Same structure as "Node" {REPEATS}'},
                    "title": "Children",
                    "type": "array",
                    "description": "(default: [])",
                },
            },
            "required": ["name"],
            "title": "Node",
            "type": "object",
        }
    },
    "required": ["root"],
    "title": "treeArguments",
    "type": "object",
}
LEAF = {
    "properties": {
        "field": {"title": "Field", "type": "string"},
        "op": {"enum": ["eq", "ne", "lt", "gt", "contains"], "title": "Op", "type": "string"},
        "value": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "number"}], "title": "Value"},
    },
    "required": ["field", "op", "value"],
    "title": "Leaf",
    "type": "object",
}
ANY_FILTER_AGAIN = [
    {"type": "object", "description": f'Same structure as "And" {REPEATS}'},
    {"type": "object", "description": f'Same structure as "Or" {REPEATS}'},
    {"type": "object", "description": f'Same structure as "Not" {REPEATS}'},
    LEAF,
]
SEARCH_PARAMETERS = {
    "properties": {
        "filter": {
            "anyOf": [
                {
                    "properties": {
                        "and": {"items": {"anyOf": ANY_FILTER_AGAIN}, "title": "And", "type": "array"}
                    },
                    "required": ["and"],
                    "title": "And",
                    "type": "object",
                },
                {
                    "properties": {
                        "or": {"items": {"anyOf": ANY_FILTER_AGAIN}, "title": "Or", "type": "array"}
                    },
                    "required": ["or"],
                    "title": "Or",
                    "type": "object",
                },
                {
                    "properties": {"not": {"anyOf": ANY_FILTER_AGAIN, "title": "Not"}},
                    "required": ["not"],
                    "title": "Not",
                    "type": "object",
                },
                LEAF,
            ],
            "title": "Filter",
        },
        "limit": {"title": "Limit", "type": "integer", "description": "(default: 10)"},
    },
    "required": ["filter"],
    "title": "searchArguments",
    "type": "object",
}
PUT_PARAMETERS = {
    "properties": {
        "key": {"title": "Key", "type": "string"},
        "value": {
            "anyOf": [
                {"type": "string"},
                {"type": "integer"},
                {"type": "number"},
                {"type": "boolean"},
                {"items": {"description": f'Same structure as "Value" {REPEATS}'}, "type": "array"},
                {"type": "object"},
            ],
            "title": "Value",
        },
    },
    "required": ["key", "value"],
    "title": "putArguments",
    "type": "object",
}

# Nested four levels deeper than the schemas spell out: the server checks what the cut leaves open.
DEEP_TREE = {
    "name": "a",
    "children": [
        {"name": "b", "children": [{"name": "c", "children": [{"name": "d", "children": [{"name": "e"}]}]}]},
        {"name": "f"},
    ],
}
DEEP_FILTER = {
    "and": [
        {"or": [{"field": "kind", "op": "eq", "value": "lamp"}, {"not": {"and": [{"or": []}]}}]},
        {"not": {"not": {"field": "weight", "op": "lt", "value": 2.5}}},
    ]
}
DEEP_VALUE = {"rooms": [["west", {"lit": True, "items": [1, 2.5, None, ["x", {"deep": []}]]}]]}


async def test_the_recursive_tools_are_offered_and_nested_arguments_reach_the_server() -> None:
    """Before: each of the three was left out ("recursive $ref"), and a call of it was an unknown tool."""
    events = EventRecorder()
    manager = McpManager(McpConfig(servers=(SERVER,)), McpSettings(enabled=True), events=events)
    async with manager.open_turn() as toolbox:
        offered = {info.name: info.parameters for info in toolbox.tools}
        tree_answer = await toolbox.call_tool("rec.tree", {"root": DEEP_TREE})
        search_answer = await toolbox.call_tool("rec__search", {"filter": DEEP_FILTER})
        put_answer = await toolbox.call_tool("rec.put", {"key": "map", "value": DEEP_VALUE})
    assert offered == {
        "rec.tree": TREE_PARAMETERS,
        "rec.search": SEARCH_PARAMETERS,
        "rec.put": PUT_PARAMETERS,
    }
    assert [len(json.dumps(p, separators=(",", ":"))) for p in offered.values()] == [406, 2556, 355]
    assert events.of_type("mcp_tool_excluded") == []
    for answer in (tree_answer, search_answer, put_answer):
        assert not answer.is_error, answer.error_message
    assert tree_answer.content == {"root": DEEP_TREE}
    assert search_answer.content == {"filter": DEEP_FILTER}
    assert put_answer.content == {"key": "map", "value": DEEP_VALUE}


async def test_a_model_calls_a_recursive_tool_and_the_server_gets_its_arguments_unchanged(
    llm_server: LLMServer,
) -> None:
    """The whole way: the schema in the request, the model's call, the server's answer in the next one."""
    llm_server.script(
        tool_call_reply(
            tool_call("rec__search", {"filter": DEEP_FILTER, "limit": 3}, id="s"),
            tool_call("rec__tree", {"root": DEEP_TREE}, id="t"),
        ),
        content_reply("done"),
    )
    manager = McpManager(McpConfig(servers=(SERVER,)), McpSettings(enabled=True))
    async with open_llm_client(base_url=llm_server.base_url, model="gpt-4o-test") as model:
        result = await run_turn(
            model,
            [{"role": "user", "content": "find the lamp"}],
            open_toolbox=manager.open_turn,
            options=TurnOptions(),
        )
    assert result.content == "done"
    first, second = llm_server.bodies
    offered = {tool["function"]["name"]: tool["function"]["parameters"] for tool in first["tools"]}
    assert offered == {
        "rec__tree": TREE_PARAMETERS,
        "rec__search": SEARCH_PARAMETERS,
        "rec__put": PUT_PARAMETERS,
    }
    answers = {m["tool_call_id"]: json.loads(m["content"]) for m in second["messages"] if m["role"] == "tool"}
    assert answers == {"s": {"content": {"filter": DEEP_FILTER}}, "t": {"content": {"root": DEEP_TREE}}}
    assert [(call.name, call.outcome, call.arguments) for call in result.tool_calls] == [
        ("rec.search", "ok", {"filter": DEEP_FILTER, "limit": 3}),
        ("rec.tree", "ok", {"root": DEEP_TREE}),
    ]


if __name__ == "__main__":
    server.run("stdio")
