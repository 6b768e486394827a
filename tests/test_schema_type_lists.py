"""A ``type`` list of several types reaches the model as ``anyOf``, every type kept (Requirement 8.4).

Narrowing ``"type": ["integer", "string"]`` to its first type told the model it may never send a
string the server accepts (server-sequential-thinking's ``["boolean", "string"]`` fields, a lookup
by id or name). And ``"default": null`` is dropped, as the null alternative it goes with, without a
note that claims it went into the description.
"""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

import jsonschema
import mcp_types as types
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from mcp.server.lowlevel import Server

from zorkmcp._cli_lint import lint_report, render_lint_report
from zorkmcp.cli import main
from zorkmcp.mcp import SchemaTranslation, translate_schema

if TYPE_CHECKING:
    from pathlib import Path

EXAMPLES: list[tuple[str, dict[str, Any], dict[str, Any], tuple[str, ...]]] = [
    (
        "two types",
        {"type": "object", "properties": {"w": {"type": ["integer", "string"], "description": "id or name"}}},
        {
            "type": "object",
            "properties": {
                "w": {"anyOf": [{"type": "integer"}, {"type": "string"}], "description": "id or name"}
            },
        },
        ('$.properties.w: type list ["integer", "string"] written as anyOf, one schema per type',),
    ),
    (
        "each type takes its own keywords; title and description stay outside",
        {
            "type": "object",
            "properties": {
                "v": {
                    "type": ["array", "string", "number"],
                    "title": "V",
                    "items": {"type": "integer"},
                    "minItems": 1,
                    "minLength": 2,
                    "pattern": "^a",
                    "maximum": 9,
                }
            },
        },
        {
            "type": "object",
            "properties": {
                "v": {
                    "anyOf": [
                        {"type": "array", "items": {"type": "integer"}, "minItems": 1},
                        {"type": "string", "minLength": 2, "pattern": "^a"},
                        {"type": "number", "maximum": 9},
                    ],
                    "title": "V",
                }
            },
        },
        ('$.properties.v: type list ["array", "string", "number"] written as anyOf, one schema per type',),
    ),
    (
        "an object branch keeps properties and required; an array branch gets items {}",
        {
            "type": "object",
            "properties": {
                "f": {
                    "type": ["object", "array"],
                    "properties": {"a": {"type": "string"}},
                    "required": ["a"],
                }
            },
        },
        {
            "type": "object",
            "properties": {
                "f": {
                    "anyOf": [
                        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                        {"type": "array", "items": {}},
                    ]
                }
            },
        },
        (
            "$.properties.f: array without items: added items {}",
            '$.properties.f: type list ["object", "array"] written as anyOf, one schema per type',
        ),
    ),
    (
        "null among several types is dropped, as in anyOf",
        {"type": "object", "properties": {"n": {"type": ["integer", "null", "boolean"]}}},
        {"type": "object", "properties": {"n": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]}}},
        (
            '$.properties.n: dropped "null" from the type list (omit the argument instead)',
            '$.properties.n: type list ["integer", "boolean"] written as anyOf, one schema per type',
        ),
    ),
    (
        "enum values go to the branch of their type; a type no value has is dropped",
        {
            "type": "object",
            "properties": {
                "e": {"type": ["integer", "string", "boolean"], "enum": [1, "one", 2]},
                "s": {"type": ["integer", "string"], "enum": ["a", "b"], "description": "letters"},
            },
        },
        {
            "type": "object",
            "properties": {
                "e": {"anyOf": [{"type": "integer", "enum": [1, 2]}, {"type": "string", "enum": ["one"]}]},
                "s": {"type": "string", "enum": ["a", "b"], "description": "letters"},
            },
        },
        (
            '$.properties.e: dropped "boolean" from the type list ["integer", "string", "boolean"]: '
            "no enum value has that type",
            '$.properties.e: type list ["integer", "string", "boolean"] written as anyOf, '
            "one schema per type",
            '$.properties.s: dropped "integer" from the type list ["integer", "string"]: '
            "no enum value has that type",
        ),
    ),
    (
        "a keyword no listed type takes is dropped, with a note",
        {"type": "object", "properties": {"k": {"type": ["integer", "boolean"], "maxLength": 3}}},
        {"type": "object", "properties": {"k": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]}}},
        (
            '$.properties.k: dropped maxLength (no type of ["integer", "boolean"] it applies to)',
            '$.properties.k: type list ["integer", "boolean"] written as anyOf, one schema per type',
        ),
    ),
    (
        "inside anyOf the alternatives are spliced: no anyOf directly in an anyOf",
        {
            "type": "object",
            "properties": {"a": {"anyOf": [{"type": ["integer", "string"]}, {"type": "boolean"}]}},
        },
        {
            "type": "object",
            "properties": {"a": {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "boolean"}]}},
        },
        (
            '$.properties.a.anyOf[0]: type list ["integer", "string"] written as anyOf, one schema per type',
            "$.properties.a.anyOf[0]: spliced its anyOf alternatives into the enclosing anyOf",
        ),
    ),
    (
        "at the top level the arguments are an object",
        {"type": ["object", "string"], "properties": {"a": {"type": "string"}}, "minLength": 1},
        {"type": "object", "properties": {"a": {"type": "string"}}},
        (
            '$: kept "object" of the type list ["object", "string"] (the arguments are always an object)',
            '$: dropped minLength (no type of ["object", "string"] it applies to)',
        ),
    ),
    (
        "a type named twice",
        {"type": "object", "properties": {"t": {"type": ["string", "string"]}}},
        {"type": "object", "properties": {"t": {"type": "string"}}},
        ('$.properties.t: dropped repeated types from the type list ["string", "string"]',),
    ),
    (
        "default null is dropped, not moved into the description (pydantic's Optional[str] = None)",
        {
            "type": "object",
            "properties": {
                "q": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Q"},
                "d": {"type": "string", "default": None, "description": "kept as it is"},
            },
        },
        {
            "type": "object",
            "properties": {
                "q": {"type": "string", "title": "Q"},
                "d": {"type": "string", "description": "kept as it is"},
            },
        },
        (
            "$.properties.q: dropped default null (omit the argument instead)",
            "$.properties.q: dropped the null alternative (omit the argument instead)",
            "$.properties.d: dropped default null (omit the argument instead)",
        ),
    ),
]


@pytest.mark.parametrize(
    ("schema", "expected", "changes"), [e[1:] for e in EXAMPLES], ids=[e[0] for e in EXAMPLES]
)
def test_type_lists_and_null_defaults(
    schema: dict[str, Any], expected: dict[str, Any], changes: tuple[str, ...]
) -> None:
    before = copy.deepcopy(schema)
    assert translate_schema(schema) == SchemaTranslation(expected, changes)
    assert schema == before
    assert translate_schema(expected) == SchemaTranslation(expected, ())  # already portable: unchanged


def test_every_note_that_says_moved_into_the_description_is_true() -> None:
    """A change note that claims a default went into the description: the description then holds it."""
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "string", "default": None},
            "b": {"type": "integer", "default": 3, "description": "count"},
            "c": {"type": "boolean", "default": False},
        },
    }
    result = translate_schema(schema)
    assert result.parameters is not None
    moved = [c.split(":")[0].removeprefix("$.properties.") for c in result.changes if "moved default" in c]
    assert moved == ["b", "c"]
    assert [result.parameters["properties"][name]["description"] for name in moved] == [
        "count (default: 3)",
        "(default: false)",
    ]


# --- what the model may send: exactly what the server accepts -------------------------------------

NON_NULL = ["string", "integer", "number", "boolean", "array", "object"]
KEYWORDS = {
    "minLength": st.integers(0, 2),
    "maxLength": st.integers(1, 3),
    "pattern": st.sampled_from(["^a", "b$"]),
    "minimum": st.integers(-2, 2),
    "maximum": st.integers(-1, 3),
    "items": st.sampled_from([{"type": "integer"}, {"type": "string"}]),
    "minItems": st.integers(0, 2),
    "maxItems": st.integers(1, 3),
    "properties": st.just({"a": {"type": "integer"}}),
    "required": st.just(["a"]),
    "enum": st.lists(st.sampled_from([0, 1, 2.5, "a", "ab", True]), min_size=1, max_size=4, unique=True),
}


@st.composite
def type_lists(draw: st.DrawFn) -> dict[str, Any]:
    """A schema with a ``type`` list of 2–4 types (no ``null``) and keywords of any of them."""
    kinds = draw(st.lists(st.sampled_from(NON_NULL), min_size=2, max_size=4, unique=True))
    chosen = draw(st.lists(st.sampled_from(sorted(KEYWORDS)), max_size=4, unique=True))
    schema: dict[str, Any] = {"type": kinds}
    for key in chosen:
        schema[key] = draw(KEYWORDS[key])
    if "enum" in schema:  # an enum none of whose values has a listed type: a schema nothing satisfies
        assume(any(jsonschema.Draft202012Validator({"type": kinds}).is_valid(v) for v in schema["enum"]))
    return schema


VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from([2.5, "a", "ab", "ba", "abc", ""]),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b"]), inner, max_size=2)
    ),
    max_leaves=6,
)


@given(type_lists(), st.lists(VALUES, min_size=1, max_size=25))
def test_a_type_list_accepts_exactly_what_the_server_accepts(
    schema: dict[str, Any], values: list[Any]
) -> None:
    """Every value the original schema accepts, the translated one accepts, and only those (property 36)."""
    wrapped = {"type": "object", "properties": {"v": schema}, "required": ["v"]}
    result = translate_schema(wrapped)
    assert result.parameters is not None
    translated = jsonschema.Draft202012Validator(result.parameters)
    original = jsonschema.Draft202012Validator(wrapped)
    for value in values:
        document = {"v": value}
        assert translated.is_valid(document) == original.is_valid(document), (document, result.parameters)
    assert translate_schema(result.parameters) == SchemaTranslation(result.parameters, ())
    node = result.parameters["properties"]["v"]
    assert not isinstance(node.get("type"), list)
    assert all("anyOf" not in branch for branch in node.get("anyOf", []))


# --- zorkmcp tools --lint --------------------------------------------------------------------------

ODD_SCHEMA = {
    "type": "object",
    "properties": {
        "w": {"type": ["integer", "string"]},
        "q": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Q"},
    },
    "required": ["w"],
}


def create_odd_server() -> Server[Any]:
    """One tool, ``lookup``, taking an id or a name (``w``) and an optional ``q``; it echoes its arguments."""

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[types.Tool(name="lookup", input_schema=ODD_SCHEMA)])

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(params.arguments))]
        )

    return Server("odd", on_list_tools=list_tools, on_call_tool=call_tool)


def test_tools_lint_explains_the_type_list_and_the_null_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "mcp_config.json"
    module = "test_schema_type_lists:create_odd_server"
    config.write_text(json.dumps({"mcpServers": {"odd": {"type": "inprocess", "module": module}}}))
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text("[tool.zorkgpt.mcp]\nenabled = false\n")
    assert main(["tools", "--lint", "--config", str(config), "--pyproject", str(pyproject)]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "odd.lookup: offered with 3 change(s)",
        '  - $.properties.w: type list ["integer", "string"] written as anyOf, one schema per type',
        "  - $.properties.q: dropped default null (omit the argument instead)",
        "  - $.properties.q: dropped the null alternative (omit the argument instead)",
        "1 tool(s): 0 unchanged, 1 changed, 0 left out",
    ]
    assert err == ""
    assert main(["tools", "--json", "--config", str(config), "--pyproject", str(pyproject)]) == 0
    (tool,) = json.loads(capsys.readouterr().out)
    assert tool["parameters"] == {
        "type": "object",
        "properties": {
            "w": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "q": {"type": "string", "title": "Q"},
        },
        "required": ["w"],
    }
    # and the string the model may now send reaches the server
    assert (
        main(["call", "odd__lookup", '{"w": "lamp"}', "--config", str(config), "--pyproject", str(pyproject)])
        == 0
    )
    assert json.loads(capsys.readouterr().out) == {"content": {"w": "lamp"}}


def test_lint_report_of_a_type_list() -> None:
    report = lint_report(
        [("seq.think", {"type": "object", "properties": {"more": {"type": ["boolean", "string"]}}})]
    )
    assert render_lint_report(report) == [
        "seq.think: offered with 1 change(s)",
        '  - $.properties.more: type list ["boolean", "string"] written as anyOf, one schema per type',
        "1 tool(s): 0 unchanged, 1 changed, 0 left out",
    ]
