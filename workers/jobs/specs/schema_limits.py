"""Bounds on an ``output_schema``, checked when a job is submitted: how big, how deep, which ``$ref``s,
and how many subschemas one value of the result could be checked against.

A schema runs inside a worker next to other tenants' jobs, and checking a result against it is
CPU work that holds the GIL. ``$ref`` lets a small schema stand for an exponentially larger one: 27
``$defs``, each ``anyOf`` two ``$ref``s to the next, is 2^26 branches to check one value against
(a worker stalled for minutes, its heartbeat stale, other jobs waiting), and ``{"$ref": "#"}``
never ends (RecursionError). So a schema is measured as the validator would walk it, through its
references, and refused with ``SchemaTooComplex`` naming the limit it passed:

* ``bytes``, ``nodes``, ``depth``: the document's size, its number of JSON values, its nesting;
* ``ref``: a ``$ref`` must be a JSON pointer inside the schema (``#`` or ``#/...``) that resolves;
  no ``$dynamicRef``/``$recursiveRef``, and no ``$id`` below the root (it would re-base them);
* ``recursion``: no ``$ref`` may lead back to a schema it is in (no recursive schemas);
* ``branches``: the most subschemas one value of the result could be checked against, counted
  through ``$ref``s: ``anyOf``/``oneOf``/``allOf``/``not``/``if``... add up at one value and multiply
  down the levels (the worst-case branch product), ``properties`` of one object take the largest.

With these, checking is at most ``MAX_SCHEMA_BRANCHES`` subschemas per value of the result, which is
itself bounded (``BROWSERD_MAX_RESULT_BYTES``); a check that still runs past
``SCHEMA_CHECK_SECONDS`` (a huge result against a wide schema) ends the job (``output.check_output``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any
from urllib.parse import unquote

from workers.jobs.errors import FieldProblem, SpecError

MAX_SCHEMA_BYTES = 65_536  # the schema as compact JSON
MAX_SCHEMA_NODES = 5_000  # JSON values in the schema document (objects, arrays, strings, numbers...)
MAX_SCHEMA_DEPTH = 32  # objects and arrays nested in each other
MAX_SCHEMA_BRANCHES = 1_000  # subschemas one value of the result may be checked against
SCHEMA_CHECK_SECONDS = 10.0  # checking one result against its schema, off the worker's event loop

FIELD = "output_schema"

# Keywords whose subschemas apply to the value itself (they add up), and to its members (the
# largest of properties/items, plus every pattern). Whatever else a schema holds is not a schema
# unless a $ref points at it.
IN_PLACE_LISTS = ("allOf", "anyOf", "oneOf", "extends", "type", "disallow")  # the last three: draft 3
IN_PLACE_ONE = ("not", "if", "then", "else", "extends")
IN_PLACE_MAPS = ("dependentSchemas", "dependencies")
MEMBER_ONE_OF = ("properties",)  # one member matches one name
MEMBER_EACH = ("patternProperties",)  # a member may match every pattern
MEMBER_SINGLE = ("additionalProperties", "unevaluatedProperties", "propertyNames", "additionalItems", "contains",
                 "unevaluatedItems")
ITEM_LISTS = ("prefixItems", "items")  # items: a schema, or (older drafts) one per position
DYNAMIC_REFS = ("$dynamicRef", "$recursiveRef")
OLD_DRAFTS = ("draft-03", "draft-04")  # whose identifier keyword is "id", not "$id"


class SchemaLimit(StrEnum):
    """Which bound a refused schema passed; the API names it (``fields[].limit``)."""

    bytes = "bytes"
    nodes = "nodes"
    depth = "depth"
    ref = "ref"
    recursion = "recursion"
    branches = "branches"


class SchemaTooComplex(SpecError):
    """An output schema past one of the bounds; ``limit`` says which, the message by how much."""

    def __init__(self, limit: SchemaLimit, message: str, field: str = FIELD) -> None:
        self.limit, self.detail = limit, message
        super().__init__([FieldProblem(field, f"{message} (schema limit '{limit.value}')", limit=limit.value)])

    def within(self, prefix: str) -> SpecError:
        """The same refusal inside a batch (``jobs[3].output_schema``), still naming its limit."""
        return SchemaTooComplex(self.limit, self.detail, f"{prefix}.{self.problems[0].field}")


def check_limits(schema: Any) -> None:
    """Raise ``SchemaTooComplex`` when ``schema`` passes a bound (see the module's doc)."""
    _check_shape(schema)
    size = len(json.dumps(schema, separators=(",", ":"), ensure_ascii=False, default=str).encode())
    if size > MAX_SCHEMA_BYTES:
        raise SchemaTooComplex(SchemaLimit.bytes, f"{size:,} bytes of JSON; at most {MAX_SCHEMA_BYTES:,}")
    branches = _Walk(schema).branches()
    if branches > MAX_SCHEMA_BRANCHES:
        shown = f"{branches:,}" if branches < 10**15 else f"about 10^{len(str(branches)) - 1}"
        raise SchemaTooComplex(SchemaLimit.branches, f"one value of the result could be checked against {shown} "
                               f"subschemas (anyOf/oneOf/allOf multiplied through $ref); at most "
                               f"{MAX_SCHEMA_BRANCHES:,}")


def _check_shape(schema: Any) -> None:
    """Nesting and node count, without recursion (a deep document must not blow Python's stack);
    and, anywhere in it (to be safe, data in ``default`` or ``enum`` too), no keyword that would make
    a ``$ref`` resolve elsewhere than ``_Walk`` resolves it."""
    ids = ("$id", "id") if isinstance(schema, dict) and any(d in str(schema.get("$schema", "")) for d in OLD_DRAFTS) \
        else ("$id",)
    stack: list[tuple[Any, int]] = [(schema, 1)]
    nodes = 0
    while stack:
        node, depth = stack.pop()
        nodes += 1
        if nodes > MAX_SCHEMA_NODES:
            raise SchemaTooComplex(SchemaLimit.nodes, f"more than {MAX_SCHEMA_NODES:,} JSON values")
        if isinstance(node, (dict, list)):
            if depth > MAX_SCHEMA_DEPTH:
                raise SchemaTooComplex(SchemaLimit.depth, f"objects and arrays nested more than {MAX_SCHEMA_DEPTH} "
                                       "deep")
            stack.extend((child, depth + 1) for child in (node.values() if isinstance(node, dict) else node))
        if isinstance(node, dict):
            _check_keywords(node, ids if node is not schema else ())


def _check_keywords(node: dict[str, Any], ids: tuple[str, ...]) -> None:
    for keyword in DYNAMIC_REFS:
        if keyword in node:
            raise SchemaTooComplex(SchemaLimit.ref, f"{keyword} is not supported; use $ref to '#/$defs/...'")
    for keyword in ids:
        if isinstance(node.get(keyword), str):
            raise SchemaTooComplex(SchemaLimit.ref, f"{keyword!r} below the schema's root is not supported (it "
                                   "changes what the references in it point to)")


@dataclass
class _Edges:
    """A schema's subschemas: those checked against the value itself, and groups of those checked
    against its members (``largest`` of one group, ``every`` one of another)."""

    in_place: list[Any]
    largest: list[Any]
    every: list[Any]
    refs: dict[int, str]  # id of a subschema reached by $ref -> the $ref, to name it


@dataclass
class _Frame:
    """A subschema on the walk's path: its edges, the $ref it was reached by, the children left."""

    node: dict[str, Any]
    edges: _Edges
    ref: str | None
    left: Iterator[Any]


class _Walk:
    """The schema as the validator walks it, through $ref; ``branches`` is the bound, computed
    once per subschema (memoised), depth-first without recursion, refusing cycles."""

    def __init__(self, root: Any) -> None:
        self.root = root

    def branches(self) -> int:
        if not isinstance(self.root, dict):
            return 1
        done: dict[int, int] = {}
        on_path: dict[int, int] = {}  # id -> position in the path
        path = [self._frame(self.root, None)]
        on_path[id(self.root)] = 0
        while path:
            frame = path[-1]
            child = next(frame.left, None)
            if child is None:
                done[id(frame.node)] = self._count(frame.edges, done)
                del on_path[id(path.pop().node)]
            elif id(child) in on_path:
                refs = [f.ref for f in path[on_path[id(child)] + 1:]] + [frame.edges.refs.get(id(child))]
                shown = next((r for r in refs if r), "#")
                raise SchemaTooComplex(SchemaLimit.recursion, f"$ref {shown!r} leads back to a schema it is in; "
                                       "recursive schemas are not supported")
            elif id(child) not in done:
                on_path[id(child)] = len(path)
                path.append(self._frame(child, frame.edges.refs.get(id(child))))
        return done[id(self.root)]

    def _frame(self, node: dict[str, Any], ref: str | None) -> _Frame:
        edges = self._edges(node)
        children = (c for c in (*edges.in_place, *edges.largest, *edges.every) if isinstance(c, dict))
        return _Frame(node, edges, ref, children)

    @staticmethod
    def _count(edges: _Edges, done: dict[int, int]) -> int:
        def of(child: Any) -> int:
            return done[id(child)] if isinstance(child, dict) else 1

        return (1 + sum(map(of, edges.in_place)) + max(map(of, edges.largest), default=0)
                + sum(map(of, edges.every)))

    def _edges(self, node: dict[str, Any]) -> _Edges:
        edges = _Edges([], [], [], {})
        if "$ref" in node:
            target = self._resolve(node["$ref"])
            edges.in_place.append(target)
            edges.refs[id(target)] = node["$ref"]
        for keyword in IN_PLACE_LISTS:
            edges.in_place += _schemas(node.get(keyword), listed=True)
        for keyword in IN_PLACE_ONE:
            edges.in_place += _schemas(node.get(keyword))
        for keyword in IN_PLACE_MAPS:
            edges.in_place += _schemas(node.get(keyword), mapped=True)
        for keyword in MEMBER_ONE_OF:
            edges.largest += _schemas(node.get(keyword), mapped=True)
        for keyword in ITEM_LISTS:
            edges.largest += _schemas(node.get(keyword), listed=True) + _schemas(node.get(keyword))
        for keyword in MEMBER_EACH:
            edges.every += _schemas(node.get(keyword), mapped=True)
        for keyword in MEMBER_SINGLE:
            edges.every += _schemas(node.get(keyword))
        return edges

    def _resolve(self, ref: Any) -> Any:
        """What a local ``$ref`` points to (``#``, ``#/$defs/a``, with ``~0``/``~1`` and %-escapes)."""
        if not isinstance(ref, str) or not (ref == "#" or ref.startswith("#/")):
            raise SchemaTooComplex(SchemaLimit.ref, f"$ref {ref!r}: only references inside the schema ('#/$defs/"
                                   "...') are supported")
        node = self.root
        for part in ref[2:].split("/") if ref != "#" else []:
            key = unquote(part).replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and key in node:
                node = node[key]
            elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            else:
                raise SchemaTooComplex(SchemaLimit.ref, f"$ref {ref!r} points to nothing in the schema")
        if not isinstance(node, (dict, bool)):
            raise SchemaTooComplex(SchemaLimit.ref, f"$ref {ref!r} points to something that is not a schema")
        return node


def _schemas(value: Any, *, listed: bool = False, mapped: bool = False) -> list[Any]:
    """The subschemas a keyword's value holds: itself, its items, or its values."""
    if listed:
        return [v for v in value if isinstance(v, (dict, bool))] if isinstance(value, list) else []
    if mapped:
        return [v for v in value.values() if isinstance(v, (dict, bool))] if isinstance(value, dict) else []
    return [value] if isinstance(value, (dict, bool)) else []
