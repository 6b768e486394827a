"""Tool input schemas → the portable JSON Schema subset OpenAI-compatible endpoints accept.

An MCP server may publish any JSON Schema (any draft) as a tool's ``inputSchema``; the engine offers
it as ``{"type": "function", "function": {..., "parameters": <schema>}}``. One schema an endpoint
rejects fails every request of the turn, so each schema goes through :func:`translate_schema` first.
What endpoints reject, as reported in their trackers and docs:

- OpenAI: a top level that is not ``"type": "object"`` (or has no ``properties``), ``array schema
  missing items``, top-level ``oneOf``/``anyOf``/``allOf``/``enum``/``not``.
- Gemini (also through its OpenAI-compatible endpoint and OpenRouter): an OpenAPI 3.0 subset —
  ``Unknown name "$schema" / "additionalProperties" / "propertyNames" / "uniqueItems"``, ``format:
  only 'enum' and 'date-time' are supported for STRING type``, ``required`` names that are not in
  ``properties``, and (depending on the version) ``type`` arrays, ``const``, ``default``,
  ``examples``, ``$ref``/``$defs``; a declaration nested too deeply (``A FunctionDeclaration in
  the request exceeds the maximum allowed nesting depth``).
- Recursive ``$ref``: OpenAI documents it for strict Structured Outputs, but Gemini's
  ``parameters`` refuse every ``$ref`` (``Unknown name "$ref"``), the AI SDK's Google provider
  throws on a recursive one, and an endpoint that inlines ``$ref`` itself can fail on it (``Error
  resolving schema reference … RecursionError``). Inlined to a bounded depth, as Gemini does for
  its own structured output ("the recursion is unrolled to a finite depth"), it is taken everywhere.
- Anthropic through OpenRouter: top-level combinators.

The rules, chosen to keep what the model needs (types, descriptions, titles, ``required``, enums,
nested objects and arrays with their items) and nothing a strict endpoint refuses:

- No schema or ``{}`` → ``{"type": "object", "properties": {}}``; a non-object top level is *left
  out*, never wrapped (wrapping would change the arguments the server receives).
- Local ``$ref`` (``#``, ``#/$defs/…``, ``#/definitions/…``, any ``#/…`` pointer) is inlined;
  ``$schema``, ``$id``, ``$comment``, ``$defs`` go.
- A recursive ``$ref`` (one that leads back, directly or through others, to a structure it is in:
  a tree node with ``children: list[Node]``, an And/Or/Not filter, a JSON ``Value`` type) is cut
  after :data:`RECURSION_DEPTH` level: each structure of the cycle is spelled out once on the way
  in, and a ``$ref`` back into the cycle becomes a schema of the target's JSON type
  (``{"type": "object"}``, ``{}`` when it has several) described as ``Same structure as "Node"
  (recursive; not spelled out again).`` (a structure without a ``title`` gets that name as its
  title). The cut accepts everything the server accepts there (the server checks the deeper
  levels), and the arguments reach the server as the model sent them. One level because each more
  multiplies the schema by the number of recursive alternatives and nests it two or three levels
  deeper, measured on what the MCP SDK publishes for pydantic models (compact JSON, levels 1/2/3):
  a tree node 406/632/858 bytes, an And/Or/Not/Leaf filter 2.6/7.9/24 KB, a JSON ``Value``
  355/500/645 bytes.
- ``allOf`` is merged into one schema (branches that disagree leave the tool out); ``oneOf``
  becomes ``anyOf`` (an ``anyOf`` alternative that is itself only an ``anyOf`` is spliced in); a
  ``{"type": "null"}`` alternative and ``"null"`` in a ``type`` array are dropped (``Optional[X]`` →
  ``X``: the one form every endpoint accepts; a ``type`` array or a ``nullable`` flag each break one
  provider), and so is ``"default": null`` (the argument is omitted instead).
- A ``type`` array of several types becomes an ``anyOf`` of one schema per type, the form the
  translator keeps for ``oneOf``/``anyOf`` (narrowing it to one type would tell the model never to
  send the others, which the server accepts): each branch takes the keywords that apply to its type
  (``items``, ``minItems``/``maxItems`` to ``"array"``; ``properties``, ``required`` to
  ``"object"``; ``minLength``/``maxLength``, ``pattern``, ``format`` to ``"string"``;
  ``minimum``/``maximum`` to ``"number"`` and ``"integer"``) and the ``enum`` values of its type (a
  type none of them has is dropped); ``description`` and ``title`` stay beside the ``anyOf``. At the
  top level the arguments are always an object, so a ``type`` array there keeps ``"object"``.
- A top-level ``anyOf``/``oneOf`` of objects becomes one object: properties are the union,
  ``required`` the intersection, and the description lists the argument sets; anything else
  leaves the tool out.
- ``format`` is kept only when in :data:`ALLOWED_FORMATS` (``date-time``, the one format every
  endpoint takes); others go to the description, like ``default``; ``const`` becomes a one-value
  ``enum``; ``additionalProperties``, ``not``, ``examples`` and every other keyword outside the
  kept set (``type``, ``description``, ``title``, ``properties``, ``required``, ``items``,
  ``enum``, nested ``anyOf``, ``minimum``/``maximum``, ``minLength``/``maxLength``,
  ``minItems``/``maxItems``, ``pattern``) are dropped. Each change is noted with its JSON path.
  The result is for ordinary (non-``strict``) function calling: it does not add
  ``additionalProperties: false`` or make every property required.
- The work is bounded (:data:`MAX_DEPTH`, :data:`MAX_NODES` after inlining), so a hostile schema is
  left out with a reason instead of hanging or overflowing the stack; no JSON input raises.

The ideas are borrowed from the OpenAI Agents SDK (``ensure_strict_json_schema``: ``$ref``
inlining, the empty-schema default) and pydantic-ai (``GoogleJsonSchemaTransformer``: ``const`` →
``enum``, ``format`` moved into the description, ``$schema``/``examples`` dropped;
``JsonSchemaTransformer``: nullable ``anyOf`` simplification, recursive-ref detection), and the
bounded unrolling of recursive types from typia's LLM schemas (``IConfig.recursive``);
langchain-mcp-adapters hands ``inputSchema`` on as the tool's ``args_schema`` and leaves cleaning to
each chat-model integration. None of them fits as a dependency: each targets one provider (strict
OpenAI output or Gemini's native API), mutates in place or raises on what it cannot handle, and
reports no changes; here the target is the subset *all* OpenAI-compatible endpoints accept, and
every change must be explainable by ``zorkmcp tools --lint``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from attrs import field, frozen

from .._jsontypes import json_type_name

__all__ = [
    "ALLOWED_FORMATS",
    "MAX_DEPTH",
    "MAX_NODES",
    "RECURSION_DEPTH",
    "SchemaTranslation",
    "translate_schema",
]

ALLOWED_FORMATS = frozenset({"date-time"})
MAX_DEPTH = 32
MAX_NODES = 5000
RECURSION_DEPTH = 1
"""How many members of one ``$ref`` cycle are spelled out, one inside the other, before a ``$ref``
back into the cycle is cut (see the module docstring for why one)."""

_JSON_TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})
_NUMBERS = ("minimum", "maximum")
_COUNTS = ("minLength", "maxLength", "minItems", "maxItems")
_OBJECT_KEYS = frozenset({"type", "properties", "required", "description", "title"})
_TYPE_KEYWORDS: dict[str, frozenset[str]] = {
    "string": frozenset({"minLength", "maxLength", "pattern", "format"}),
    "integer": frozenset(_NUMBERS),
    "number": frozenset(_NUMBERS),
    "array": frozenset({"items", "minItems", "maxItems"}),
    "object": frozenset({"properties", "required"}),
}
"""The kept keywords that constrain only values of one JSON type: where each goes when a ``type``
array is split into one schema per type."""
_TYPED_KEYWORDS = frozenset().union(*_TYPE_KEYWORDS.values())
_SCALARS = (str, int, float, bool, type(None))
_EMPTY_OBJECT: dict[str, Any] = {"type": "object", "properties": {}}
_ALIAS_KEYS = frozenset({"description", "$comment", "default", "examples"})
"""Keys that do not make a schema more than an alias of the one ``$ref`` beside them."""


@frozen
class SchemaTranslation:
    """What :func:`translate_schema` made of one tool's input schema.

    Attributes:
        parameters: the schema to send as ``parameters``, or ``None`` when the tool must be left out.
        changes: one human-readable note per change, each starting with the JSON path it concerns.
        excluded: why the tool is left out, or ``None``.
    """

    parameters: dict[str, Any] | None
    changes: tuple[str, ...] = field(default=())
    excluded: str | None = None


class _Excluded(Exception):
    """Internal: the schema cannot be made portable; the message says why."""


def translate_schema(schema: Mapping[str, Any] | None) -> SchemaTranslation:
    """Translate a tool's input schema into the portable subset (see the module docstring).

    Args:
        schema: the tool's ``inputSchema`` as published by the server, or ``None``.

    Returns:
        The translated schema with the list of changes, or the reason the tool is left out.
        Never raises for JSON input (dicts, lists, strings, numbers, booleans, ``None``).
    """
    if schema is None or (isinstance(schema, Mapping) and not schema):
        what = "no input schema" if schema is None else "empty input schema"
        return SchemaTranslation(
            dict(_EMPTY_OBJECT, properties={}), (f"$: {what}; using an object with no properties",)
        )
    if not isinstance(schema, Mapping):
        return SchemaTranslation(
            None, (), f"$: input schema is a JSON {json_type_name(schema)}, expected an object"
        )
    try:
        translator = _Translator(schema)
    except _Excluded as exc:
        return SchemaTranslation(None, (), str(exc))
    try:
        parameters = translator.top()
    except _Excluded as exc:
        return SchemaTranslation(None, tuple(translator.changes), str(exc))
    except RecursionError:
        return SchemaTranslation(None, tuple(translator.changes), "$: schema nested too deeply")
    return SchemaTranslation(parameters, tuple(translator.changes))


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if key.isidentifier() else f"{path}[{json.dumps(key)}]"


def _scalar_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, _SCALARS) for item in value)


def _small_json(value: object) -> bool:
    """A scalar, or a list or object of scalars, short enough to show in a description."""
    if isinstance(value, _SCALARS):
        return True
    items = list(value.values()) if isinstance(value, Mapping) else value if isinstance(value, list) else None
    if items is None or len(items) > 8 or not all(isinstance(item, _SCALARS) for item in items):
        return False
    return not isinstance(value, Mapping) or all(isinstance(key, str) for key in value)


def _objectish(branch: Mapping[str, Any]) -> bool:
    return branch.get("type", "object") == "object" and set(branch) <= _OBJECT_KEYS


def _is_of_type(value: object, kind: str) -> bool:
    """Whether an ``enum`` value (a JSON scalar) is an instance of JSON type ``kind``."""
    if isinstance(value, bool):
        return kind == "boolean"
    if isinstance(value, int):
        return kind in ("integer", "number")
    if isinstance(value, float):
        return kind == "number" or (kind == "integer" and value.is_integer())
    if isinstance(value, str):
        return kind == "string"
    return value is None and kind == "null"


def _resolve(root: Mapping[str, Any], ref: str) -> object | None:
    """The target of a local JSON pointer (``#`` is the whole schema, ``#/…`` a part of it), or ``None``."""
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        return None
    current: object = root
    for raw in ref[2:].split("/"):
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(current, Mapping) and part in current:
            current = current[part]
        elif isinstance(current, list) and part.isdigit() and len(part) < 10 and int(part) < len(current):
            current = current[int(part)]
        else:
            return None
    return current


def _subschemas(schema: Mapping[str, Any]) -> list[object]:
    """The parts of ``schema`` translation goes into (where a ``$ref`` can be inlined)."""
    parts: list[object] = []
    properties = schema.get("properties")
    if isinstance(properties, Mapping):
        parts.extend(properties.values())
    items = schema.get("items")
    if isinstance(items, Mapping):
        parts.append(items)
    for key in ("anyOf", "oneOf", "allOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and not (key == "oneOf" and "anyOf" in schema):
            parts.extend(branches)
    return parts


@frozen
class _Recursion:
    """Where a schema refers to itself, found before translating it (:func:`_recursion`).

    Attributes:
        cycle: ``id`` of each (sub)schema on a cycle of ``$ref`` → the number of its cycle.
        entries: the ``id`` of each member of a cycle that a ``$ref`` from outside the cycle (or the
            root, when it is a member) leads into: spelled out there, so a ``$ref`` back to it from
            inside the cycle can say "the same structure" at once.
        names: ``id`` → how a cut ``$ref`` names the structure: its ``title``, else the last part of
            the first pointer to it; an alias (:func:`_alias_ref`) is named as what it stands for.
    """

    cycle: dict[int, int]
    entries: frozenset[int]
    names: dict[int, str]


def _recursion(root: Mapping[str, Any]) -> _Recursion:
    """Find the cycles of ``$ref`` in a schema.

    The graph: the root and every ``$ref`` target (objects), an edge from each to the targets of
    the ``$ref`` found in the parts translation goes into (:func:`_subschemas`) without going
    through another ``$ref``. A cycle is a strongly connected component with more than one member,
    or one member that refers to itself. The walk is bounded like the translation (:data:`MAX_NODES`).
    """
    names: dict[int, str] = {}
    aliases: dict[int, int] = {}
    edges: dict[int, list[int]] = {}
    pending: list[Mapping[str, Any]] = [root]
    budget = 4 * MAX_NODES
    while pending:
        start = pending.pop()
        alias = _alias_ref(start)
        aliased = _resolve(root, alias) if alias is not None else None
        if isinstance(aliased, Mapping):
            aliases[id(start)] = id(aliased)
        targets = edges[id(start)] = []
        seen: set[int] = set()
        stack: list[object] = [start]
        while stack:
            part = stack.pop()
            if not isinstance(part, Mapping) or id(part) in seen:
                continue
            seen.add(id(part))
            budget -= 1
            if budget < 0:
                raise _Excluded(f"$: schema has more than {MAX_NODES} parts (after inlining $ref)")
            ref = part.get("$ref")
            target = _resolve(root, ref) if isinstance(ref, str) else None
            if isinstance(ref, str) and isinstance(target, Mapping):
                targets.append(id(target))
                if id(target) not in edges and id(target) not in names:
                    title = target.get("title")
                    last = ref.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~")
                    names[id(target)] = title if isinstance(title, str) and title.strip() else last
                    pending.append(target)
            stack.extend(_subschemas(part))
    cycle = _strong_components(edges)
    entries = {id(root)} if id(root) in cycle else set()
    for source, targets in edges.items():
        entries.update(t for t in targets if t in cycle and cycle.get(source) != cycle[t])
    return _Recursion(cycle, frozenset(entries), _through_aliases(names, aliases))


def _alias_ref(schema: Mapping[str, Any]) -> str | None:
    """The ``$ref`` a schema only stands for, translated into that schema: ``{"$ref": r}``, or
    ``anyOf``/``oneOf``/``allOf`` of ``{"$ref": r}`` and nulls, with nothing else (no title)."""
    own = set(schema) - _ALIAS_KEYS
    if own == {"$ref"}:
        ref = schema["$ref"]
        return ref if isinstance(ref, str) else None
    if len(own) != 1 or (key := own.pop()) not in ("anyOf", "oneOf", "allOf"):
        return None
    branches = schema[key]
    if not isinstance(branches, list):
        return None
    refs = [b for b in branches if b != {"type": "null"}]
    if len(refs) != 1 or not isinstance(refs[0], Mapping) or set(refs[0]) != {"$ref"}:
        return None
    ref = refs[0]["$ref"]
    return ref if isinstance(ref, str) else None


def _through_aliases(names: dict[int, str], aliases: Mapping[int, int]) -> dict[int, str]:
    """Name an alias (a ``$ref`` with nothing of its own) as what it leads to: spelled out, it is
    that structure, with that structure's title (aliases of each other only: the first one's name)."""
    order = {key: index for index, key in enumerate(names)}
    named: dict[int, str] = {}
    for start, name in names.items():
        path = [start]
        while path[-1] in aliases and aliases[path[-1]] not in path:
            path.append(aliases[path[-1]])
        end = path[-1]
        if end in aliases:  # a loop of aliases: each of them has the same name
            end = min(path[path.index(aliases[end]) :], key=lambda key: order.get(key, len(order)))
        named[start] = names.get(end, name)
    return named


def _strong_components(edges: Mapping[int, list[int]]) -> dict[int, int]:
    """Tarjan's strongly connected components, without recursion: each vertex on a cycle → its
    component's number (a component of one vertex is a cycle when the vertex has an edge to itself)."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    on_stack: set[int] = set()
    stack: list[int] = []
    found: dict[int, int] = {}
    components = 0
    for start in edges:
        if start in index:
            continue
        work: list[tuple[int, int]] = [(start, 0)]
        while work:
            vertex, position = work.pop()
            if position == 0:
                index[vertex] = low[vertex] = len(index)
                stack.append(vertex)
                on_stack.add(vertex)
            successors = edges.get(vertex, [])
            if position < len(successors):
                work.append((vertex, position + 1))
                successor = successors[position]
                if successor not in index:
                    work.append((successor, 0))
                elif successor in on_stack:
                    low[vertex] = min(low[vertex], index[successor])
                continue
            if work:  # back in the vertex that led here: it reaches what this one reaches
                caller = work[-1][0]
                low[caller] = min(low[caller], low[vertex])
            if low[vertex] == index[vertex]:
                component: list[int] = []
                while not component or component[-1] != vertex:
                    component.append(stack.pop())
                    on_stack.discard(component[-1])
                if len(component) > 1 or vertex in successors:
                    found.update((member, components) for member in component)
                    components += 1
    return found


def _direct_kind(schema: object) -> str | None:
    """The one JSON type a schema says without looking through ``$ref`` (``properties``: object)."""
    if not isinstance(schema, Mapping):
        return None
    kind = schema.get("type")
    if isinstance(kind, str) and kind in _JSON_TYPES:
        return kind
    return "object" if kind is None and isinstance(schema.get("properties"), Mapping) else None


def _kind(root: Mapping[str, Any], target: Mapping[str, Any]) -> str | None:
    """The one JSON type (not ``null``) every value of ``target`` has, or ``None``: its own ``type``
    (or that of its ``$ref``), else the one type of all its ``anyOf``/``oneOf`` alternatives, each
    looked up through one ``$ref``."""

    def direct(schema: object) -> str | None:
        ref = schema.get("$ref") if isinstance(schema, Mapping) else None
        return _direct_kind(_resolve(root, ref) if isinstance(ref, str) else schema)

    if (kind := direct(target)) is not None:
        return kind
    kinds: set[str | None] = set()
    for key in ("anyOf", "oneOf"):
        branches = target.get(key)
        kinds.update(direct(branch) for branch in (branches if isinstance(branches, list) else ()))
    kinds.discard("null")
    return kinds.pop() if len(kinds) == 1 else None


class _Translator:
    """One translation: the root (for ``$ref``), the notes, the work budget."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.changes: list[str] = []
        self.nodes = 0
        self.recursion = _recursion(root)
        self.expanding: list[int] = []
        """The cycle of each recursive (sub)schema being translated, outermost first."""
        self.spelled = set(self.recursion.entries)
        """The recursive (sub)schemas spelled out (or sure to be: the entries of their cycles)."""

    def note(self, path: str, text: str) -> None:
        self.changes.append(f"{path}: {text}")

    def top(self) -> dict[str, Any]:
        out = self.node(self.root, "$", 0)
        if out is None:
            raise _Excluded("$: schema false accepts no arguments")
        if "anyOf" in out:
            out = self.union(out)
        kind = out.get("type")
        if kind is None and ("properties" in out or set(out) <= _OBJECT_KEYS):
            self.note("$", 'added "type": "object"')
            out["type"] = kind = "object"
        if kind != "object":
            shown = json.dumps(kind) if kind is not None else "no type"
            raise _Excluded(
                f"$: arguments must be a JSON object, the schema says {shown} "
                "(wrapping it would change what the server receives)"
            )
        if "enum" in out:
            del out["enum"]
            self.note("$", "dropped top-level enum")
        if "properties" not in out:
            out["properties"] = {}
            self.note("$", "added empty properties")
            self.required(out, out.pop("required", None), "$")
        return out

    def union(self, out: dict[str, Any]) -> dict[str, Any]:
        """A top-level ``anyOf`` of objects → one object: union of properties, ``required`` intersection."""
        branches: list[dict[str, Any]] = out.pop("anyOf")
        if not (_objectish(out) and all(_objectish(b) for b in branches)):
            raise _Excluded("$: top-level anyOf/oneOf has alternatives that are not objects")
        properties: dict[str, Any] = dict(out.get("properties", {}))
        for index, branch in enumerate(branches):
            for name, sub in branch.get("properties", {}).items():
                if name in properties and properties[name] != sub:
                    self.note(
                        _child("$.properties", name),
                        f"alternative {index} defines it differently; kept the first",
                    )
                properties.setdefault(name, sub)
        sets = [list(b.get("required", [])) or list(b.get("properties", {})) for b in branches]
        common = [name for name in sets[0] if all(name in s for s in sets[1:])] if sets else []
        required = list(out.get("required", []))
        required += [name for name in common if name not in required]
        shown = " | ".join("(" + ", ".join(s) + ")" for s in sets)
        text = f"Accepts one of these argument sets: {shown}."
        out["description"] = f"{out['description']} {text}" if "description" in out else text
        out.update(type="object", properties=properties)
        out.pop("required", None)
        if missing := [name for name in required if name not in properties]:
            self.note("$", f"dropped required names without a property: {', '.join(missing)}")
        if required := [name for name in required if name in properties]:
            out["required"] = required
        self.note("$", f"merged {len(branches)} top-level alternatives into one object")
        return out

    def node(
        self, schema: object, path: str, depth: int, recursive: Mapping[str, Any] | None = None
    ) -> dict[str, Any] | None:
        """Translate one (sub)schema; ``None`` means the schema is ``false`` (nothing is valid).

        ``recursive``: the member of a ``$ref`` cycle that ``schema`` spells out (the target of the
        ``$ref`` it was made from); a member reached without a ``$ref`` is found by itself.
        """
        if depth > MAX_DEPTH:
            raise _Excluded(f"{path}: nested deeper than {MAX_DEPTH} levels")
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise _Excluded(f"{path}: schema has more than {MAX_NODES} parts (after inlining $ref)")
        if schema is True:
            self.note(path, "boolean schema true written as {}")
            return {}
        if schema is False:
            return None
        if not isinstance(schema, Mapping):
            self.note(path, f"a JSON {json_type_name(schema)} is not a schema; accepting any value")
            return {}
        if recursive is None and id(schema) in self.recursion.cycle:
            recursive = schema
        if recursive is None:
            return self.dispatch(schema, path, depth)
        return self.spell(recursive, schema, path, depth)

    def dispatch(self, schema: Mapping[str, Any], path: str, depth: int) -> dict[str, Any] | None:
        if "$ref" in schema:
            return self.ref(schema, path, depth)
        if "allOf" in schema:
            return self.all_of(schema, path, depth)
        if "anyOf" in schema or "oneOf" in schema:
            return self.any_of(schema, path, depth)
        return self.keywords(schema, path, depth)

    def ref(self, schema: Mapping[str, Any], path: str, depth: int) -> dict[str, Any] | None:
        rest = {k: v for k, v in schema.items() if k != "$ref"}
        ref = schema["$ref"]
        target = _resolve(self.root, ref) if isinstance(ref, str) else None
        if target is None:
            self.note(path, f"dropped unresolvable $ref {json.dumps(ref) if isinstance(ref, str) else ref!r}")
            return self.node(rest, path, depth + 1)
        recursive = target if isinstance(target, Mapping) and id(target) in self.recursion.cycle else None
        if recursive is not None and self.cut_here(recursive):
            return self.cut(ref, recursive, rest, path, depth)
        self.note(path, f"inlined $ref {json.dumps(ref)}")
        merged: object = {**target, **rest} if isinstance(target, Mapping) else target
        if rest and not isinstance(target, Mapping):
            merged = dict(rest, allOf=[target])
        return self.node(merged, path, depth + 1, recursive)

    def cut_here(self, target: Mapping[str, Any]) -> bool:
        """Whether a ``$ref`` to ``target``, a member of a cycle, is cut here: the target is spelled
        out (or sure to be, :attr:`_Recursion.entries`), and :data:`RECURSION_DEPTH` members of its
        cycle are being spelled out around this place."""
        cycle = self.recursion.cycle[id(target)]
        return id(target) in self.spelled and self.expanding.count(cycle) >= RECURSION_DEPTH

    def spell(
        self, target: Mapping[str, Any], schema: Mapping[str, Any], path: str, depth: int
    ) -> dict[str, Any] | None:
        """Spell out ``schema``, the recursive ``target`` (with what sat beside the ``$ref`` to it);
        one without a ``title`` gets the name the places it repeats call it (:meth:`cut`)."""
        self.spelled.add(id(target))
        self.expanding.append(self.recursion.cycle[id(target)])
        try:
            out = self.dispatch(schema, path, depth)
        finally:
            self.expanding.pop()
        name = self.recursion.names.get(id(target))
        if out is not None and name is not None and "title" not in out:
            out["title"] = name
            self.note(path, f"added title {json.dumps(name)} (recursive: where it repeats, it is named)")
        return out

    def cut(
        self, ref: str, target: Mapping[str, Any], rest: Mapping[str, Any], path: str, depth: int
    ) -> dict[str, Any] | None:
        """A ``$ref`` back into a structure already spelled out around it (or beside it): a schema of
        its JSON type, ``{}`` when it has several, whose description names the structure."""
        out = self.node(rest, path, depth + 1)
        if out is None:
            return None
        kind = _kind(self.root, target)
        if kind is not None and "type" not in out and "anyOf" not in out:
            out["type"] = kind
            self.add_items(out, path)
        name = self.recursion.names.get(id(target))
        what = "the whole arguments object" if name is None else json.dumps(name, ensure_ascii=False)
        text = f"Same structure as {what} (recursive; not spelled out again)."
        said = out.get("description", "").rstrip()
        out["description"] = (
            f"{said} {text}" if said.endswith((".", "!", "?")) else f"{said}. {text}" if said else text
        )
        shown = json.dumps({k: v for k, v in out.items() if k != "description"})
        self.note(
            path,
            f"recursive $ref {json.dumps(ref)} not spelled out again: {shown}, "
            f"described as the same structure as {what}",
        )
        return out

    def all_of(self, schema: Mapping[str, Any], path: str, depth: int) -> dict[str, Any] | None:
        branches = schema["allOf"]
        rest = {k: v for k, v in schema.items() if k != "allOf"}
        merged = self.node(rest, path, depth + 1)
        if not isinstance(branches, list):
            self.note(path, "dropped allOf that is not a list")
            return merged
        for index, branch in enumerate(branches):
            translated = self.node(branch, f"{path}.allOf[{index}]", depth + 1)
            if translated is None or merged is None:
                return None
            merged = self.merge(merged, translated, path)
        self.note(path, f"merged allOf of {len(branches)}")
        return merged

    def any_of(self, schema: Mapping[str, Any], path: str, depth: int) -> dict[str, Any] | None:
        key = "anyOf" if "anyOf" in schema else "oneOf"
        if key == "oneOf":
            self.note(path, "oneOf written as anyOf")
        rest = {k: v for k, v in schema.items() if k not in ("anyOf", "oneOf")}
        if "anyOf" in schema and "oneOf" in schema:
            self.note(path, "dropped oneOf next to anyOf")
        outside = self.node(rest, path, depth + 1)
        alternatives = schema[key]
        if not isinstance(alternatives, list) or outside is None:
            self.note(path, f"dropped {key} that is not a list")
            return outside
        branches: list[dict[str, Any]] = []
        for index, branch in enumerate(alternatives):
            where = f"{path}.{key}[{index}]"
            translated = self.node(branch, where, depth + 1)
            if translated is not None and set(translated) == {"anyOf"}:
                self.note(where, "spliced its anyOf alternatives into the enclosing anyOf")
                nested: list[dict[str, Any]] = translated["anyOf"]
            else:
                nested = [translated] if translated is not None else []
            for alternative in nested:
                if alternative == {"type": "null"}:
                    self.note(path, "dropped the null alternative (omit the argument instead)")
                elif alternative not in branches:
                    branches.append(alternative)
        if not branches:
            return None if alternatives and all(b is False for b in alternatives) else outside
        if len(branches) == 1:
            return self.merge(outside, branches[0], path)
        return {"anyOf": branches, **{k: v for k, v in outside.items() if k != "anyOf"}}

    def merge(self, a: dict[str, Any], b: dict[str, Any], path: str) -> dict[str, Any]:
        """Both schemas at once (``allOf``); disagreement leaves the tool out."""
        out = dict(a)
        for key, value in b.items():
            if key not in out or out[key] == value:
                out[key] = value
            elif key == "properties":
                properties = dict(out[key])
                for name, sub in value.items():
                    old = properties.get(name)
                    properties[name] = (
                        sub if old is None else self.merge(old, sub, _child(f"{path}.properties", name))
                    )
                out[key] = properties
            elif key == "required":
                out[key] = out[key] + [name for name in value if name not in out[key]]
            elif key in ("description", "title"):
                out[key] = f"{out[key]} {value}" if key == "description" else out[key]
            else:
                raise _Excluded(f"{path}: allOf parts disagree about {key!r}")
        return out

    def keywords(self, schema: Mapping[str, Any], path: str, depth: int) -> dict[str, Any]:
        """A schema without ``$ref`` or combinators: keep the portable keywords."""
        out: dict[str, Any] = {}
        suffixes: list[str] = []
        for key, value in schema.items():
            if not isinstance(key, str):
                continue
            if key in ("description", "title", "pattern"):
                self.keep_string(out, key, value, path)
            elif key == "type":
                self.type_(out, value, path)
            elif key == "properties":
                self.properties(out, value, path, depth)
            elif key == "items":
                self.items(out, value, path, depth)
            elif key in ("enum", "const", "format", "default"):
                self.value_keyword(out, suffixes, key, value, path)
            elif key in _NUMBERS or key in _COUNTS:
                self.keep_number(out, key, value, path)
            elif key in ("$defs", "definitions"):
                self.note(path, f"dropped {key} (each $ref to them is inlined)")
            elif key != "required":
                self.note(path, f"dropped unsupported keyword {key!r}")
        self.required(out, schema.get("required"), path)
        if suffixes:
            text = " ".join(suffixes)
            out["description"] = f"{out['description']} {text}" if "description" in out else text
        if isinstance(out.get("type"), list):
            return self.split_types(out, path)
        self.add_items(out, path)
        return out

    def add_items(self, out: dict[str, Any], path: str) -> None:
        if out.get("type") == "array" and "items" not in out:
            out["items"] = {}
            self.note(path, "array without items: added items {}")

    def split_types(self, out: dict[str, Any], path: str) -> dict[str, Any]:
        """A schema whose ``type`` is a list of several types → ``anyOf`` of one schema per type.

        Each branch gets the keywords of its type (:data:`_TYPE_KEYWORDS`) and the ``enum`` values
        of its type; ``description`` and ``title`` stay outside. At the top level (``$``) the
        arguments are always an object: ``"object"`` is kept, alone.
        """
        kinds: list[str] = out.pop("type")
        shown = json.dumps(kinds)
        if path == "$" and "object" in kinds:
            self.note(path, f'kept "object" of the type list {shown} (the arguments are always an object)')
            kinds = ["object"]
        unused = sorted(
            key
            for key in out
            if key in _TYPED_KEYWORDS and not any(key in _TYPE_KEYWORDS.get(k, ()) for k in kinds)
        )
        for key in unused:
            del out[key]
            self.note(path, f"dropped {key} (no type of {shown} it applies to)")
        enum: list[Any] | None = out.pop("enum", None)
        shared = {key: value for key, value in out.items() if key not in _TYPED_KEYWORDS}
        branches: list[dict[str, Any]] = []
        for kind in kinds:
            branch = {"type": kind, **{k: v for k, v in out.items() if k in _TYPE_KEYWORDS.get(kind, ())}}
            if enum is not None:
                values = [value for value in enum if _is_of_type(value, kind)]
                if not values:
                    self.note(
                        path, f'dropped "{kind}" from the type list {shown}: no enum value has that type'
                    )
                    continue
                branch["enum"] = values
            self.add_items(branch, path)
            branches.append(branch)
        if not branches:  # no enum value has any of the types: nothing is valid, the enum says what was meant
            return {**shared, "enum": enum}
        if len(branches) == 1:  # the others were noted as they were dropped
            return {**shared, **branches[0]}
        self.note(path, f"type list {shown} written as anyOf, one schema per type")
        return {"anyOf": branches, **shared}

    def keep_string(self, out: dict[str, Any], key: str, value: object, path: str) -> None:
        if isinstance(value, str):
            out[key] = value
        else:
            self.note(path, f"dropped {key} that is a JSON {json_type_name(value)}, not a string")

    def keep_number(self, out: dict[str, Any], key: str, value: object, path: str) -> None:
        is_number = isinstance(value, int | float) and not isinstance(value, bool)
        if is_number and (key in _NUMBERS or (isinstance(value, int) and value >= 0)):
            out[key] = value
        else:
            self.note(path, f"dropped {key} {value!r} (not a valid number here)")

    def type_(self, out: dict[str, Any], value: object, path: str) -> None:
        names = [value] if isinstance(value, str) else value if isinstance(value, list) else []
        kept = [n for n in names if isinstance(n, str) and n in _JSON_TYPES]
        if len(kept) != len(names) or not names:
            self.note(path, f"dropped unknown type {value!r}")
        if len(set(kept)) < len(kept):
            kept = list(dict.fromkeys(kept))
            self.note(path, f"dropped repeated types from the type list {json.dumps(names)}")
        if len(kept) > 1 and "null" in kept:
            kept.remove("null")
            self.note(path, 'dropped "null" from the type list (omit the argument instead)')
        if len(kept) == 1:
            out["type"] = kept[0]
        elif kept:
            out["type"] = kept  # several: split into anyOf once every keyword is read (split_types)

    def properties(self, out: dict[str, Any], value: object, path: str, depth: int) -> None:
        if not isinstance(value, Mapping):
            self.note(path, f"dropped properties that is a JSON {json_type_name(value)}")
            return
        properties: dict[str, Any] = {}
        for name, sub in value.items():
            if not isinstance(name, str):
                continue
            where = _child(f"{path}.properties", name)
            translated = self.node(sub, where, depth + 1)
            if translated is None:
                self.note(where, "dropped property whose schema is false")
            else:
                properties[name] = translated
        out["properties"] = properties

    def items(self, out: dict[str, Any], value: object, path: str, depth: int) -> None:
        if isinstance(value, list):
            self.note(path, "dropped tuple-form items")
            return
        translated = self.node(value, f"{path}.items", depth + 1)
        if translated is None:
            self.note(path, "dropped items: false")
        else:
            out["items"] = translated

    def value_keyword(
        self, out: dict[str, Any], suffixes: list[str], key: str, value: object, path: str
    ) -> None:
        if key == "enum" and _scalar_list(value):
            self.nodes += len(value)  # type: ignore[arg-type]
            out["enum"] = list(value)  # type: ignore[call-overload]
        elif key == "const" and isinstance(value, _SCALARS):
            out.setdefault("enum", [value])
            self.note(path, f"const {json.dumps(value)} written as enum")
        elif key == "format" and isinstance(value, str) and value in ALLOWED_FORMATS:
            out["format"] = value
        elif key == "format" and isinstance(value, str):
            suffixes.append(f"(format: {value})")
            self.note(path, f"dropped unsupported format {value!r}")
        elif key == "default" and value is None:
            self.note(path, "dropped default null (omit the argument instead)")
        elif key == "default" and _small_json(value):
            suffixes.append(f"(default: {json.dumps(dict(value) if isinstance(value, Mapping) else value)})")
            self.note(path, "moved default into the description")
        elif key == "enum":
            self.note(path, "dropped enum that is not a list of strings, numbers, booleans or null")
        else:
            self.note(path, f"dropped {key} that is a JSON {json_type_name(value)}")

    def required(self, out: dict[str, Any], value: object, path: str) -> None:
        if value is None:
            return
        if not isinstance(value, list):
            self.note(path, f"dropped required that is a JSON {json_type_name(value)}")
            return
        names = list(dict.fromkeys(n for n in value if isinstance(n, str)))
        if "properties" in out:
            missing = [n for n in names if n not in out["properties"]]
            if missing:
                self.note(path, f"dropped required names without a property: {', '.join(missing)}")
            names = [n for n in names if n in out["properties"]]
        if names:
            out["required"] = names
