"""A recursive input schema is offered: each structure of a ``$ref`` cycle spelled out once, the
``$ref`` back into it cut to a schema of its JSON type that names it (it used to leave the tool out).

The schemas are what the MCP SDK's ``MCPServer`` publishes for pydantic models (see
tests/test_recursiveschema_server.py, where a real server takes them) and hand-written ones for
what other generators do (``#`` for the root, pointers into ``properties``, no titles).
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import jsonschema
from hypothesis import given
from hypothesis import strategies as st

from zorkmcp._cli_lint import lint_report, render_lint_report
from zorkmcp.mcp import SchemaTranslation, translate_schema
from zorkmcp.mcp._schema import MAX_DEPTH, RECURSION_DEPTH

REPEATS = "(recursive; not spelled out again)."

# What MCPServer publishes for ``def tree(root: Node)``, ``class Node(BaseModel): name: str =
# Field(description="the node's label"); children: list[Node] = []``.
TREE: dict[str, Any] = {
    "$defs": {
        "Node": {
            "properties": {
                "name": {"description": "the node's label", "title": "Name", "type": "string"},
                "children": {
                    "default": [],
                    "items": {"$ref": "#/$defs/Node"},
                    "title": "Children",
                    "type": "array",
                },
            },
            "required": ["name"],
            "title": "Node",
            "type": "object",
        }
    },
    "properties": {"root": {"$ref": "#/$defs/Node"}},
    "required": ["root"],
    "title": "treeArguments",
    "type": "object",
}
TREE_OUT = {
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
            "title": "Node",
            "type": "object",
            "required": ["name"],
        }
    },
    "title": "treeArguments",
    "type": "object",
    "required": ["root"],
}

# ``Filter = And | Or | Not | Leaf`` with ``And.and_: list[Filter]``, ``Or.or_: list[Filter]``,
# ``Not.not_: Filter`` (aliases "and", "or", "not"), ``def search(filter: Filter, limit: int = 10)``.
_ANY_FILTER = {
    "anyOf": [
        {"$ref": "#/$defs/And"},
        {"$ref": "#/$defs/Or"},
        {"$ref": "#/$defs/Not"},
        {"$ref": "#/$defs/Leaf"},
    ]
}
SEARCH: dict[str, Any] = {
    "$defs": {
        "And": {
            "properties": {"and": {"items": _ANY_FILTER, "title": "And", "type": "array"}},
            "required": ["and"],
            "title": "And",
            "type": "object",
        },
        "Leaf": {
            "properties": {
                "field": {"title": "Field", "type": "string"},
                "op": {"enum": ["eq", "ne", "lt", "gt", "contains"], "title": "Op", "type": "string"},
                "value": {
                    "anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "number"}],
                    "title": "Value",
                },
            },
            "required": ["field", "op", "value"],
            "title": "Leaf",
            "type": "object",
        },
        "Not": {
            "properties": {"not": {**_ANY_FILTER, "title": "Not"}},
            "required": ["not"],
            "title": "Not",
            "type": "object",
        },
        "Or": {
            "properties": {"or": {"items": _ANY_FILTER, "title": "Or", "type": "array"}},
            "required": ["or"],
            "title": "Or",
            "type": "object",
        },
    },
    "properties": {
        "filter": {**_ANY_FILTER, "title": "Filter"},
        "limit": {"default": 10, "title": "Limit", "type": "integer"},
    },
    "required": ["filter"],
    "title": "searchArguments",
    "type": "object",
}

# ``Value = TypeAliasType("Value", "str | int | float | bool | None | list[Value] | dict[str, Value]")``
VALUE: dict[str, Any] = {
    "$defs": {
        "Value": {
            "anyOf": [
                {"type": "string"},
                {"type": "integer"},
                {"type": "number"},
                {"type": "boolean"},
                {"items": {"$ref": "#/$defs/Value"}, "type": "array"},
                {"additionalProperties": {"$ref": "#/$defs/Value"}, "type": "object"},
                {"type": "null"},
            ]
        }
    },
    "properties": {"key": {"title": "Key", "type": "string"}, "value": {"$ref": "#/$defs/Value"}},
    "required": ["key", "value"],
    "title": "putArguments",
    "type": "object",
}


def _size(schema: Any) -> int:
    return len(json.dumps(schema, separators=(",", ":")))


def test_a_pydantic_tree_is_spelled_out_once_and_lint_says_where_it_was_cut() -> None:
    before = copy.deepcopy(TREE)
    result = translate_schema(TREE)
    assert result == SchemaTranslation(
        TREE_OUT,
        (
            "$: dropped $defs (each $ref to them is inlined)",
            '$.properties.root: inlined $ref "#/$defs/Node"',
            "$.properties.root.properties.children: moved default into the description",
            '$.properties.root.properties.children.items: recursive $ref "#/$defs/Node" not spelled out '
            'again: {"type": "object"}, described as the same structure as "Node"',
        ),
    )
    assert TREE == before
    assert translate_schema(TREE_OUT) == SchemaTranslation(TREE_OUT, ())  # in the portable subset
    assert render_lint_report(lint_report([("rec.tree", TREE)]))[:1] == ["rec.tree: offered with 4 change(s)"]


def test_an_and_or_not_filter_spells_each_alternative_once() -> None:
    result = translate_schema(SEARCH)
    assert result.excluded is None
    assert result.parameters is not None
    leaf = {
        "properties": {
            "field": {"title": "Field", "type": "string"},
            "op": {"enum": ["eq", "ne", "lt", "gt", "contains"], "title": "Op", "type": "string"},
            "value": {
                "anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "number"}],
                "title": "Value",
            },
        },
        "title": "Leaf",
        "type": "object",
        "required": ["field", "op", "value"],
    }
    again = [
        {"type": "object", "description": f'Same structure as "And" {REPEATS}'},
        {"type": "object", "description": f'Same structure as "Or" {REPEATS}'},
        {"type": "object", "description": f'Same structure as "Not" {REPEATS}'},
        leaf,
    ]
    assert result.parameters["properties"]["filter"] == {
        "anyOf": [
            {
                "properties": {"and": {"items": {"anyOf": again}, "title": "And", "type": "array"}},
                "title": "And",
                "type": "object",
                "required": ["and"],
            },
            {
                "properties": {"or": {"items": {"anyOf": again}, "title": "Or", "type": "array"}},
                "title": "Or",
                "type": "object",
                "required": ["or"],
            },
            {
                "properties": {"not": {"anyOf": again, "title": "Not"}},
                "title": "Not",
                "type": "object",
                "required": ["not"],
            },
            leaf,
        ],
        "title": "Filter",
    }
    cuts = [change for change in result.changes if "not spelled out again" in change]
    assert len(cuts) == 9  # three recursive alternatives, each cut inside each of the three


def test_a_json_value_type_cuts_to_any_value() -> None:
    result = translate_schema(VALUE)
    assert result.parameters == {
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
        "title": "putArguments",
        "type": "object",
        "required": ["key", "value"],
    }
    assert (
        '$.properties.value: added title "Value" (recursive: where it repeats, it is named)' in result.changes
    )


def test_the_sizes_that_chose_one_level() -> None:
    """Compact JSON bytes the model is sent, at the chosen depth: each far under what a tool list
    carries (server-everything's largest tool: about 1 KB)."""
    assert RECURSION_DEPTH == 1
    sizes = {
        name: _size(translate_schema(schema).parameters)
        for name, schema in [("tree", TREE), ("search", SEARCH), ("value", VALUE)]
    }
    assert sizes == {"tree": 406, "search": 2556, "value": 355}


def test_mutual_recursion_without_titles_spells_each_member_once_and_names_it() -> None:
    """``A`` refers to ``B``, ``B`` back to ``A``: ``B`` (reached only through ``A``) is spelled out
    inside ``A`` and the ``$ref`` back to ``A`` is cut; each gets a title so the cut can name it."""
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/definitions/A"}},
        "definitions": {
            "A": {
                "type": "object",
                "properties": {"b": {"$ref": "#/definitions/B"}, "n": {"type": "string"}},
            },
            "B": {
                "type": "object",
                "properties": {"a": {"$ref": "#/definitions/A"}, "m": {"type": "integer"}},
            },
        },
    }
    assert translate_schema(schema).parameters == {
        "type": "object",
        "properties": {
            "a": {
                "type": "object",
                "properties": {
                    "b": {
                        "type": "object",
                        "properties": {
                            "a": {"type": "object", "description": f'Same structure as "A" {REPEATS}'},
                            "m": {"type": "integer"},
                        },
                        "title": "B",
                    },
                    "n": {"type": "string"},
                },
                "title": "A",
            }
        },
    }


def test_the_root_a_pointer_into_properties_and_a_description_at_the_cut() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "parent": {"$ref": "#", "description": "the enclosing one"},
            "path": {"$ref": "#/properties/steps"},
            "steps": {
                "type": "array",
                "items": {"anyOf": [{"type": "string"}, {"$ref": "#/properties/steps"}]},
            },
        },
    }
    assert translate_schema(schema).parameters == {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "parent": {
                "description": f"the enclosing one. Same structure as the whole arguments object {REPEATS}",
                "type": "object",
            },
            "path": {
                "type": "array",
                "items": {
                    "anyOf": [
                        {"type": "string"},
                        {"type": "array", "items": {}, "description": f'Same structure as "steps" {REPEATS}'},
                    ]
                },
                "title": "steps",
            },
            "steps": {
                "type": "array",
                "items": {
                    "anyOf": [
                        {"type": "string"},
                        {"type": "array", "items": {}, "description": f'Same structure as "steps" {REPEATS}'},
                    ]
                },
                "title": "steps",
            },
        },
    }


def test_two_separate_cycles_are_each_spelled_out() -> None:
    """A tree whose labels are expressions: being inside the tree does not cut the expression."""
    schema = {
        "type": "object",
        "properties": {"tree": {"$ref": "#/$defs/T"}},
        "$defs": {
            "T": {
                "type": "object",
                "title": "Nœud",
                "properties": {
                    "kids": {"type": "array", "items": {"$ref": "#/$defs/T"}},
                    "label": {"$ref": "#/$defs/E"},
                },
            },
            "E": {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"$ref": "#/$defs/E"}}]},
        },
    }
    assert translate_schema(schema).parameters == {
        "type": "object",
        "properties": {
            "tree": {
                "type": "object",
                "title": "Nœud",
                "properties": {
                    "kids": {
                        "type": "array",
                        "items": {"type": "object", "description": f'Same structure as "Nœud" {REPEATS}'},
                    },
                    "label": {
                        "anyOf": [
                            {"type": "integer"},
                            {"type": "array", "items": {"description": f'Same structure as "E" {REPEATS}'}},
                        ],
                        "title": "E",
                    },
                },
            }
        },
    }


def test_many_structures_that_refer_to_each_other_stay_bounded() -> None:
    """Twelve structures, each with a property for every one: each spelled out once (12 x 12 cuts),
    not once per path (12! paths)."""
    names = [f"S{i}" for i in range(12)]
    defs = {
        name: {
            "type": "object",
            "properties": {other.lower(): {"$ref": f"#/$defs/{other}"} for other in names},
        }
        for name in names
    }
    schema = {"type": "object", "properties": {"s": {"$ref": "#/$defs/S0"}}, "$defs": defs}
    result = translate_schema(schema)
    assert result.excluded is None
    changes = " ".join(result.changes)
    assert changes.count("inlined $ref") == 12
    assert changes.count("not spelled out again") == 12 * 12 - 11
    assert _size(result.parameters) < 20_000


def test_a_long_chain_of_structures_is_still_bounded_by_depth() -> None:
    """Each structure reached only through the one before: spelled out inside it, as deep as
    :data:`MAX_DEPTH` allows; a longer chain leaves the tool out with the reason, as before."""
    defs = {
        f"C{i}": {"type": "object", "properties": {"next": {"$ref": f"#/$defs/C{i + 1}"}}} for i in range(40)
    }
    defs["C40"] = {"type": "object", "properties": {"first": {"$ref": "#/$defs/C0"}}}
    result = translate_schema({"type": "object", "properties": {"c": {"$ref": "#/$defs/C0"}}, "$defs": defs})
    assert result.parameters is None
    assert result.excluded is not None
    assert result.excluded.endswith(f"nested deeper than {MAX_DEPTH} levels")


# --- properties ------------------------------------------------------------------------------------

LABELS = st.sampled_from(["lamp", "sword", "leaflet", "ü"])


def _trees(depth: int) -> st.SearchStrategy[dict[str, Any]]:
    leaf = st.fixed_dictionaries({"name": LABELS})
    if depth == 0:
        return leaf
    below = _trees(depth - 1)
    return leaf | st.fixed_dictionaries({"name": LABELS, "children": st.lists(below, max_size=3)})


def _filters(depth: int) -> st.SearchStrategy[dict[str, Any]]:
    leaf = st.fixed_dictionaries(
        {
            "field": LABELS,
            "op": st.sampled_from(["eq", "ne", "lt", "gt", "contains"]),
            "value": LABELS | st.integers(-3, 3) | st.floats(-1, 1),
        }
    )
    if depth == 0:
        return leaf
    below = _filters(depth - 1)
    return (
        leaf
        | st.fixed_dictionaries({"and": st.lists(below, max_size=3)})
        | st.fixed_dictionaries({"or": st.lists(below, max_size=3)})
        | st.fixed_dictionaries({"not": below})
    )


VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | LABELS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(LABELS, inner, max_size=3),
    max_leaves=20,
)


def _accepted(schema: dict[str, Any], document: Any) -> None:
    translated = translate_schema(schema).parameters
    assert translated is not None
    assert jsonschema.Draft202012Validator(schema).is_valid(document)
    assert jsonschema.Draft202012Validator(translated).is_valid(document)


@given(_trees(6))
def test_any_tree_the_server_takes_the_translation_takes(tree: dict[str, Any]) -> None:
    _accepted(TREE, {"root": tree})


@given(_filters(5))
def test_any_filter_the_server_takes_the_translation_takes(search: dict[str, Any]) -> None:
    _accepted(SEARCH, {"filter": search})


@given(VALUES.filter(lambda value: value is not None))
def test_any_json_value_the_server_takes_the_translation_takes(value: Any) -> None:
    _accepted(VALUE, {"key": "k", "value": value})


NAMES = st.sampled_from(["A", "B", "C"])
_REFS = NAMES.map(lambda name: f"#/$defs/{name}") | st.just("#")


def _recursive_schema(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    properties = st.dictionaries(st.sampled_from(["p", "q", "r"]), inner, min_size=1, max_size=3)
    return (
        properties.map(lambda p: {"type": "object", "properties": p})
        | inner.map(lambda i: {"type": "array", "items": i})
        | st.lists(inner, min_size=1, max_size=3).map(lambda branches: {"anyOf": branches})
    )


PARTS = st.recursive(
    st.fixed_dictionaries({"$ref": _REFS}) | st.just({"type": "string"}), _recursive_schema, max_leaves=10
)
SAYS = re.compile(r'Same structure as "([^"]*)"')


def _strings(node: Any, key: str) -> list[str]:
    """Every ``key`` (``title``, ``description``) of a translated schema and its parts."""
    if isinstance(node, dict):
        own = [node[key]] if isinstance(node.get(key), str) else []
        return own + [s for value in node.values() for s in _strings(value, key)]
    if isinstance(node, list):
        return [s for value in node for s in _strings(value, key)]
    return []


@given(st.dictionaries(st.sampled_from(["p", "q"]), PARTS, min_size=1), st.dictionaries(NAMES, PARTS))
def test_a_recursive_schema_is_never_left_out_for_it_and_each_cut_names_what_is_spelled_out(
    properties: dict[str, Any], defs: dict[str, Any]
) -> None:
    schema = {"type": "object", "properties": properties, "$defs": defs}
    result = translate_schema(schema)
    if result.parameters is None:  # only for size (hostile nesting), never for the recursion itself
        assert result.excluded is not None
        assert "recursive" not in result.excluded
        return
    assert translate_schema(copy.deepcopy(result.parameters)) == SchemaTranslation(result.parameters, ())
    assert "$ref" not in json.dumps(result.parameters)
    named = {name for text in _strings(result.parameters, "description") for name in SAYS.findall(text)}
    assert named <= set(_strings(result.parameters, "title"))


def test_a_top_level_union_never_leaves_an_empty_required() -> None:
    """Found by the invariants above: ``required`` names of no property beside a top-level
    ``anyOf`` became ``"required": []``, which a second translation dropped (not a fixed point)."""
    schema = {
        "type": "object",
        "required": ["id"],
        "anyOf": [{"properties": {"a": {"type": "string"}}}, {"properties": {"b": {"type": "integer"}}}],
    }
    expected = {
        "type": "object",
        "description": "Accepts one of these argument sets: (a) | (b).",
        "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
    }
    assert translate_schema(schema) == SchemaTranslation(
        expected,
        (
            "$: dropped required names without a property: id",
            "$: merged 2 top-level alternatives into one object",
        ),
    )
    assert translate_schema(expected) == SchemaTranslation(expected, ())
