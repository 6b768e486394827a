"""Tool input schemas → the portable subset: literal before/after examples and properties.

The real schemas are copied from the tool lists of ``@modelcontextprotocol/server-everything``,
``server-filesystem`` and ``server-sequential-thinking`` (their ``tools/list`` over stdio) and from
what the SDK's ``MCPServer`` generates for pydantic arguments.
"""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from zorkmcp._cli_lint import lint_report, render_lint_report
from zorkmcp.mcp import SchemaTranslation, translate_schema
from zorkmcp.mcp._schema import ALLOWED_FORMATS, MAX_DEPTH

if TYPE_CHECKING:
    from collections.abc import Iterator

DRAFT7 = "http://json-schema.org/draft-07/schema#"

SEQUENTIAL_THINKING: dict[str, Any] = {
    "$schema": DRAFT7,
    "type": "object",
    "properties": {
        "thought": {"type": "string", "description": "Your current thinking step"},
        "nextThoughtNeeded": {
            "description": "Whether another thought step is needed",
            "type": ["boolean", "string"],
        },
        "thoughtNumber": {
            "type": "integer",
            "minimum": 1,
            "maximum": 9007199254740991,
            "description": "Number",
        },
        "branchId": {"description": "Branch identifier", "type": "string"},
    },
    "required": ["thought", "nextThoughtNeeded", "thoughtNumber"],
}

EDIT_FILE: dict[str, Any] = {
    "$schema": DRAFT7,
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "edits": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "oldText": {"type": "string", "description": "Text to search for - must match exactly"},
                    "newText": {"type": "string", "description": "Text to replace with"},
                },
                "required": ["oldText", "newText"],
            },
        },
        "dryRun": {
            "default": False,
            "description": "Preview changes using git-style diff format",
            "type": "boolean",
        },
    },
    "required": ["path", "edits"],
}

GZIP_FILE: dict[str, Any] = {
    "$schema": DRAFT7,
    "type": "object",
    "properties": {
        "name": {"default": "README.md.gz", "type": "string", "description": "Name of the output file"},
        "data": {"type": "string", "format": "uri", "description": "URL or data URI of the file content"},
        "outputType": {"default": "resourceLink", "type": "string", "enum": ["resourceLink", "resource"]},
    },
}

DIRECTORY_TREE: dict[str, Any] = {
    "$schema": DRAFT7,
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "excludePatterns": {"default": [], "type": "array", "items": {"type": "string"}},
    },
    "required": ["path"],
}

# What the SDK's MCPServer publishes for
# ``def move(pos: Pos, note: str | None = None, steps: list[Pos] | None = None)``.
MCPSERVER_MOVE: dict[str, Any] = {
    "$defs": {
        "Pos": {
            "properties": {
                "x": {"title": "X", "type": "integer"},
                "y": {"default": 0, "title": "Y", "type": "integer"},
            },
            "required": ["x"],
            "title": "Pos",
            "type": "object",
        }
    },
    "properties": {
        "pos": {"$ref": "#/$defs/Pos"},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None, "title": "Note"},
        "steps": {
            "anyOf": [{"items": {"$ref": "#/$defs/Pos"}, "type": "array"}, {"type": "null"}],
            "default": None,
            "title": "Steps",
        },
    },
    "required": ["pos"],
    "title": "moveArguments",
    "type": "object",
}

POS_OUT = {
    "properties": {
        "x": {"title": "X", "type": "integer"},
        "y": {"title": "Y", "type": "integer", "description": "(default: 0)"},
    },
    "required": ["x"],
    "title": "Pos",
    "type": "object",
}

EXAMPLES: list[tuple[str, Any, dict[str, Any]]] = [
    ("no schema", None, {"type": "object", "properties": {}}),
    ("empty schema", {}, {"type": "object", "properties": {}}),
    ("only $schema", {"$schema": DRAFT7}, {"type": "object", "properties": {}}),
    (
        "properties without type",
        {"properties": {"a": {"type": "string"}}},
        {"type": "object", "properties": {"a": {"type": "string"}}},
    ),
    (
        "sequential thinking",
        SEQUENTIAL_THINKING,
        {
            "type": "object",
            "properties": {
                "thought": {"type": "string", "description": "Your current thinking step"},
                "nextThoughtNeeded": {  # a type list keeps every type (Requirement 8.4)
                    "description": "Whether another thought step is needed",
                    "anyOf": [{"type": "boolean"}, {"type": "string"}],
                },
                "thoughtNumber": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 9007199254740991,
                    "description": "Number",
                },
                "branchId": {"description": "Branch identifier", "type": "string"},
            },
            "required": ["thought", "nextThoughtNeeded", "thoughtNumber"],
        },
    ),
    (
        "filesystem edit_file",
        EDIT_FILE,
        {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "edits": EDIT_FILE["properties"]["edits"],
                "dryRun": {
                    "description": "Preview changes using git-style diff format (default: false)",
                    "type": "boolean",
                },
            },
            "required": ["path", "edits"],
        },
    ),
    (
        "everything gzip-file-as-resource",
        GZIP_FILE,
        {
            "type": "object",
            "properties": {
                "name": {
                    "type": "string",
                    "description": 'Name of the output file (default: "README.md.gz")',
                },
                "data": {
                    "type": "string",
                    "description": "URL or data URI of the file content (format: uri)",
                },
                "outputType": {
                    "type": "string",
                    "enum": ["resourceLink", "resource"],
                    "description": '(default: "resourceLink")',
                },
            },
        },
    ),
    (
        "filesystem directory_tree",
        DIRECTORY_TREE,
        {
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "excludePatterns": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "(default: [])",
                },
            },
            "required": ["path"],
        },
    ),
    (
        "MCPServer pydantic arguments",
        MCPSERVER_MOVE,
        {
            "properties": {
                "pos": POS_OUT,
                "note": {"title": "Note", "type": "string"},
                "steps": {"title": "Steps", "type": "array", "items": POS_OUT},
            },
            "required": ["pos"],
            "title": "moveArguments",
            "type": "object",
        },
    ),
    (
        "definitions (draft 7) and a pointer into properties",
        {
            "type": "object",
            "definitions": {"when": {"type": "string", "format": "date-time"}},
            "properties": {"at": {"$ref": "#/definitions/when"}, "until": {"$ref": "#/properties/at"}},
        },
        {
            "type": "object",
            "properties": {
                "at": {"type": "string", "format": "date-time"},
                "until": {"type": "string", "format": "date-time"},
            },
        },
    ),
    (
        "$ref with sibling description",
        {
            "type": "object",
            "$defs": {"D": {"type": "string", "description": "old"}},
            "properties": {"d": {"$ref": "#/$defs/D", "description": "new"}},
        },
        {"type": "object", "properties": {"d": {"type": "string", "description": "new"}}},
    ),
    (
        "unresolvable and remote $ref",
        {
            "type": "object",
            "properties": {
                "a": {"$ref": "#/$defs/Nope", "description": "A"},
                "b": {"$ref": "https://x/y.json"},
            },
        },
        {"type": "object", "properties": {"a": {"description": "A"}, "b": {}}},
    ),
    (
        "$id, $comment, additionalProperties, propertyNames, uniqueItems, examples",
        {
            "$id": "urn:x",
            "$comment": "c",
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "m": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "propertyNames": {"pattern": "^a"},
                },
                "l": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True, "examples": [[1]]},
            },
        },
        {
            "type": "object",
            "properties": {"m": {"type": "object"}, "l": {"type": "array", "items": {"type": "integer"}}},
        },
    ),
    (
        "top-level anyOf of objects",
        {
            "description": "Find things.",
            "anyOf": [
                {
                    "type": "object",
                    "properties": {"path": {"type": "string"}, "deep": {"type": "boolean"}},
                    "required": ["path"],
                },
                {
                    "type": "object",
                    "properties": {"path": {"type": "string"}, "glob": {"type": "string"}},
                    "required": ["path", "glob"],
                },
            ],
        },
        {
            "description": "Find things. Accepts one of these argument sets: (path) | (path, glob).",
            "type": "object",
            "properties": {
                "path": {"type": "string"},
                "deep": {"type": "boolean"},
                "glob": {"type": "string"},
            },
            "required": ["path"],
        },
    ),
    (
        "top-level oneOf of required-only branches next to properties",
        {
            "type": "object",
            "properties": {"id": {"type": "string"}, "name": {"type": "string"}},
            "oneOf": [{"required": ["id"]}, {"required": ["name"]}],
        },
        {
            "description": "Accepts one of these argument sets: (id) | (name).",
            "type": "object",
            "properties": {"id": {"type": "string"}, "name": {"type": "string"}},
        },
    ),
    (
        "top-level allOf of objects",
        {
            "allOf": [
                {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
                {"properties": {"b": {"type": "integer", "minimum": 0}}, "required": ["b"]},
            ]
        },
        {
            "type": "object",
            "properties": {"a": {"type": "string"}, "b": {"type": "integer", "minimum": 0}},
            "required": ["a", "b"],
        },
    ),
    (
        "nested oneOf becomes anyOf; const becomes enum",
        {
            "type": "object",
            "properties": {
                "v": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
                "k": {"const": "fixed", "type": "string"},
            },
        },
        {
            "type": "object",
            "properties": {
                "v": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
                "k": {"type": "string", "enum": ["fixed"]},
            },
        },
    ),
    (
        "array without items, false property, required names without a property",
        {
            "type": "object",
            "properties": {"xs": {"type": "array"}, "gone": False, "t": True},
            "required": ["xs", "gone", "ghost", "xs"],
        },
        {"type": "object", "properties": {"xs": {"type": "array", "items": {}}, "t": {}}, "required": ["xs"]},
    ),
    (
        "nullable type list and unknown type names",
        {
            "type": ["object", "null"],
            "properties": {"n": {"type": ["null", "number"]}, "w": {"type": "float"}},
        },
        {"type": "object", "properties": {"n": {"type": "number"}, "w": {}}},
    ),
    (
        "recursive $ref: spelled out once, then an object that names it",
        {
            "$defs": {
                "N": {
                    "type": "object",
                    "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/N"}}},
                }
            },
            "type": "object",
            "properties": {"n": {"$ref": "#/$defs/N"}},
        },
        {
            "type": "object",
            "properties": {
                "n": {
                    "type": "object",
                    "properties": {
                        "kids": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "description": 'Same structure as "N" (recursive; not spelled out again).',
                            },
                        }
                    },
                    "title": "N",
                }
            },
        },
    ),
    (
        "root $ref",
        {"type": "object", "properties": {"self": {"$ref": "#"}}},
        {
            "type": "object",
            "properties": {
                "self": {
                    "type": "object",
                    "description": "Same structure as the whole arguments object "
                    "(recursive; not spelled out again).",
                }
            },
        },
    ),
]


@pytest.mark.parametrize(("schema", "expected"), [e[1:] for e in EXAMPLES], ids=[e[0] for e in EXAMPLES])
def test_translation_examples(schema: Any, expected: dict[str, Any]) -> None:
    before = copy.deepcopy(schema)
    result = translate_schema(schema)
    assert result.excluded is None
    assert result.parameters == expected
    assert schema == before  # the input is never mutated
    assert translate_schema(result.parameters) == SchemaTranslation(expected, ())


EXCLUDED: list[tuple[str, Any, str]] = [
    ("a list", [], "$: input schema is a JSON array, expected an object"),
    (
        "a string type",
        {"type": "string"},
        '$: arguments must be a JSON object, the schema says "string" (wrapping',
    ),
    ("false", {"$ref": "#/$defs/F", "$defs": {"F": False}}, "$: schema false accepts no arguments"),
    (
        "top-level anyOf with a non-object",
        {"anyOf": [{"type": "object", "properties": {}}, {"type": "string"}]},
        "$: top-level anyOf/oneOf has alternatives that are not objects",
    ),
    (
        "allOf that disagrees",
        {"type": "object", "properties": {"a": {"allOf": [{"type": "string"}, {"type": "integer"}]}}},
        "$.properties.a: allOf parts disagree about 'type'",
    ),
]


@pytest.mark.parametrize(("schema", "reason"), [e[1:] for e in EXCLUDED], ids=[e[0] for e in EXCLUDED])
def test_excluded_examples(schema: Any, reason: str) -> None:
    result = translate_schema(schema)
    assert result.parameters is None
    assert result.excluded is not None
    assert result.excluded.startswith(reason)


def test_change_notes_name_the_json_path() -> None:
    assert translate_schema(GZIP_FILE).changes == (
        "$: dropped unsupported keyword '$schema'",
        "$.properties.name: moved default into the description",
        "$.properties.data: dropped unsupported format 'uri'",
        "$.properties.outputType: moved default into the description",
    )
    assert translate_schema(MCPSERVER_MOVE).changes[:3] == (
        "$: dropped $defs (each $ref to them is inlined)",
        '$.properties.pos: inlined $ref "#/$defs/Pos"',
        "$.properties.pos.properties.y: moved default into the description",
    )
    assert translate_schema(
        {"type": "object", "properties": {"a b": {"format": "uri-reference"}}}
    ).changes == ("$.properties[\"a b\"]: dropped unsupported format 'uri-reference'",)


def test_deep_schema_is_left_out_not_a_crash() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(10_000):
        schema = {"type": "object", "properties": {"a": schema}}
    result = translate_schema(schema)
    assert result.parameters is None
    assert (
        result.excluded
        == "$" + ".properties.a" * (MAX_DEPTH + 1) + f": nested deeper than {MAX_DEPTH} levels"
    )


def test_exponential_ref_expansion_is_bounded() -> None:
    defs = {"L0": {"type": "string"}}
    for level in range(1, 15):  # 2**14 leaves, 28 levels deep
        below = {"$ref": f"#/$defs/L{level - 1}"}
        defs[f"L{level}"] = {"type": "object", "properties": {"a": below, "b": below}}
    result = translate_schema({"$defs": defs, "type": "object", "properties": {"x": {"$ref": "#/$defs/L14"}}})
    assert result.parameters is None
    assert result.excluded is not None
    assert "schema has more than 5000 parts (after inlining $ref)" in result.excluded


def test_cyclic_python_input_is_bounded() -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {}}
    schema["properties"]["me"] = schema
    result = translate_schema(schema)
    assert result.excluded is not None
    assert result.excluded.endswith(f"nested deeper than {MAX_DEPTH} levels")


def test_lint_report_and_its_text() -> None:
    report = lint_report(
        [
            ("fs.list_allowed_directories", {"type": "object", "properties": {}}),
            ("fs.directory_tree", DIRECTORY_TREE),
            ("calc.square", {"type": "number"}),
        ]
    )
    assert [(e["tool"], e["status"]) for e in report] == [
        ("fs.list_allowed_directories", "ok"),
        ("fs.directory_tree", "changed"),
        ("calc.square", "excluded"),
    ]
    assert report[2]["parameters"] is None
    json.dumps(report)
    assert render_lint_report(report) == [
        "fs.list_allowed_directories: ok",
        "fs.directory_tree: offered with 2 change(s)",
        "  - $: dropped unsupported keyword '$schema'",
        "  - $.properties.excludePatterns: moved default into the description",
        'calc.square: LEFT OUT: $: arguments must be a JSON object, the schema says "number" '
        "(wrapping it would change what the server receives)",
        "3 tool(s): 1 unchanged, 1 changed, 1 left out",
    ]


# --- properties --------------------------------------------------------------------------------

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=4)
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=30,
)
KEYWORDS = st.sampled_from(
    [
        "type",
        "properties",
        "required",
        "items",
        "enum",
        "const",
        "format",
        "default",
        "description",
        "title",
        "$ref",
        "$defs",
        "definitions",
        "$schema",
        "$id",
        "anyOf",
        "oneOf",
        "allOf",
        "not",
        "additionalProperties",
        "minimum",
        "maxLength",
        "pattern",
        "examples",
        "nullable",
    ]
)
TYPES = st.sampled_from(["string", "integer", "number", "boolean", "object", "array", "null"])
REFS = st.sampled_from(
    ["#/$defs/A", "#/$defs/B", "#/definitions/A", "#", "#/properties/p", "#/nope", "http://x"]
)


def _schema_like(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    value = st.one_of(
        TYPES,
        st.lists(TYPES, max_size=3),
        st.dictionaries(st.sampled_from(["p", "q", "A", "B"]), inner, max_size=3),
        st.lists(inner, max_size=3),
        st.lists(st.sampled_from(["p", "q", "r"]), max_size=3),
        REFS,
        st.sampled_from(["date-time", "uri", "email"]),
        JSON,
    )
    return st.dictionaries(KEYWORDS, value, max_size=5)


SCHEMAS = st.recursive(st.booleans() | st.just({}), _schema_like, max_leaves=25)


def _schemas(node: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every (sub)schema of a translated schema: itself, its properties, items and anyOf branches."""
    yield node
    items = [node["items"]] if "items" in node else []
    for sub in [*node.get("properties", {}).values(), *node.get("anyOf", []), *items]:
        yield from _schemas(sub)


def _check_invariants(schema: Any) -> None:
    result = translate_schema(schema)
    for change in result.changes:
        assert change.startswith("$")
    if result.parameters is None:
        assert isinstance(result.excluded, str)
        assert result.excluded.startswith("$")
        return
    params = result.parameters
    assert result.excluded is None
    assert params["type"] == "object"
    assert isinstance(params["properties"], dict)
    assert not {"anyOf", "oneOf", "allOf", "not", "enum"} & set(params)
    json.dumps(params)
    for node in _schemas(params):
        assert not {
            "$ref",
            "$defs",
            "definitions",
            "$schema",
            "$id",
            "$comment",
            "oneOf",
            "allOf",
            "not",
        } & set(node)
        assert not {"additionalProperties", "default", "const", "examples", "nullable"} & set(node)
        assert node.get("format", "date-time") in ALLOWED_FORMATS
        assert not isinstance(node.get("type"), list)
    again = translate_schema(copy.deepcopy(params))
    assert again == SchemaTranslation(params, ())


@given(JSON)
def test_any_json_never_raises_and_is_idempotent(document: Any) -> None:
    _check_invariants(document)


@given(SCHEMAS, st.dictionaries(st.sampled_from(["A", "B"]), SCHEMAS, max_size=2))
def test_generated_schemas_translate_to_the_portable_subset(schema: Any, defs: dict[str, Any]) -> None:
    if isinstance(schema, dict):
        schema = {**schema, "$defs": defs, "definitions": defs}
    _check_invariants(schema)


# Schemas built only from what translation keeps or can express exactly (no union): a document the
# translated schema accepts is one the original accepts.
LEAVES = st.one_of(
    st.fixed_dictionaries({"type": st.sampled_from(["string", "integer", "boolean", "number"])}),
    st.fixed_dictionaries(
        {
            "type": st.just("string"),
            "enum": st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, unique=True),
        }
    ),
    st.fixed_dictionaries(
        {"type": st.just("string"), "format": st.sampled_from(["uri", "date-time"]), "default": st.just("a")}
    ),
    st.fixed_dictionaries({"type": st.just("integer"), "minimum": st.integers(-2, 2), "title": st.just("T")}),
    st.fixed_dictionaries({"const": st.sampled_from(["a", 1, True])}),
    st.fixed_dictionaries({"$ref": st.just("#/$defs/Leaf")}),
    st.fixed_dictionaries({"anyOf": st.just([{"type": "integer"}, {"type": "null"}])}),
)


def _object(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    props = st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, min_size=1, max_size=3)
    obj = props.flatmap(
        lambda p: st.fixed_dictionaries(
            {
                "type": st.just("object"),
                "properties": st.just(p),
                "required": st.lists(st.sampled_from(sorted(p)), unique=True),
            }
        )
    )
    return (
        obj
        | st.fixed_dictionaries({"type": st.just("array"), "items": inner})
        | st.fixed_dictionaries({"allOf": st.lists(obj, min_size=1, max_size=2)})
    )


SIMPLE = st.recursive(LEAVES, _object, max_leaves=8)
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.sampled_from(["a", "b", "z"]),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "c", "d"]), inner, max_size=4)
    ),
    max_leaves=12,
)


@given(SIMPLE.filter(lambda s: s.get("type") == "object"), st.lists(VALUES, min_size=1, max_size=20))
def test_translation_keeps_meaning_on_simple_schemas(schema: dict[str, Any], documents: list[Any]) -> None:
    schema = {**schema, "$defs": {"Leaf": {"type": "string", "maxLength": 2}}}
    result = translate_schema(schema)
    if result.parameters is None:  # allOf parts with contradictory types: left out, correctly
        assert result.excluded is not None
        assert "allOf parts disagree about" in result.excluded
        return
    translated = jsonschema.Draft202012Validator(result.parameters)
    original = jsonschema.Draft202012Validator(schema)
    for document in documents:
        if translated.is_valid(document):
            assert original.is_valid(document), document
