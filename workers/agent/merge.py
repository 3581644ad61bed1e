"""Merging what several extractions found into one value of the job's output schema.

Each ``extract_content`` call (and each chunk of a long page) yields a value of the schema; a
paginated crawl yields one per page. They are merged, guided by the schema: objects property by
property, arrays concatenated and de-duplicated, other values by the latest one that is not null
(a later, more specific page refines an earlier one; null never erases a value).

De-duplication of array items: by the key named in the array schema's ``x-key`` (a property name
or a list of them; items with the same key are merged into the first), by the whole item when the
schema says ``uniqueItems``, and otherwise only of objects that are equal in every field (the same
record read twice, as when the model extracts the same page again).
"""

from __future__ import annotations

import json
from typing import Any

from workers.jobs.specs.output import resolve_ref as resolve

KEY = "x-key"


def merge(values: list[Any], schema: Any, root: Any = None) -> Any:
    """One value from ``values`` (oldest first) as ``schema`` describes it; None when all are None."""
    root = schema if root is None else root
    schema = resolve(schema if isinstance(schema, dict) else {}, root if isinstance(root, dict) else {})
    present = [v for v in values if v is not None]
    if not present:
        return None
    if all(isinstance(v, dict) for v in present):
        return _merge_objects(present, schema, root)
    if all(isinstance(v, list) for v in present):
        items = [item for v in present for item in v]
        return dedupe(items, schema, root)
    return present[-1]


def _merge_objects(values: list[dict[str, Any]], schema: dict[str, Any], root: Any) -> dict[str, Any]:
    props = schema.get("properties", {})
    extra = schema.get("additionalProperties", {})
    names = list(dict.fromkeys(name for v in values for name in v))
    merged = {}
    for name in names:
        value = merge([v[name] for v in values if name in v], props.get(name, extra), root)
        if value is not None or all(v.get(name) is None for v in values):
            merged[name] = value
    return merged


def dedupe(items: list[Any], schema: dict[str, Any], root: Any) -> list[Any]:
    """``items`` without repeats, in first-seen order (see the module's doc for what is a repeat)."""
    fields = key_fields(schema.get(KEY))
    item_schema = schema.get("items") if isinstance(schema.get("items"), dict) else {}
    kept: list[Any] = []
    where: dict[str, int] = {}
    for item in items:
        key = _identity(item, fields, bool(schema.get("uniqueItems")))
        if key is None:
            kept.append(item)
        elif key not in where:
            where[key] = len(kept)
            kept.append(item)
        elif fields:
            kept[where[key]] = merge([kept[where[key]], item], item_schema, root)
    return kept


def key_fields(value: Any) -> list[str] | None:
    """The property names of an ``x-key`` (one name or a list of them); anything else names none."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return value
    return None


def _identity(item: Any, fields: list[str] | None, unique: bool) -> str | None:
    """What makes two items the same one, or None when repeats of this item are kept."""
    if fields and isinstance(item, dict):
        key = [item.get(f) for f in fields]
        return None if all(k is None for k in key) else json.dumps(key, sort_keys=True, default=str)
    if unique or isinstance(item, dict):
        return json.dumps(item, sort_keys=True, default=str)
    return None


def without_extensions(schema: Any) -> Any:
    """``schema`` without browserd's ``x-`` keywords, for a model's function parameters."""
    if isinstance(schema, list):
        return [without_extensions(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key.startswith("x-"):
            continue
        named = key in ("properties", "$defs", "definitions") and isinstance(value, dict)
        out[key] = {n: without_extensions(v) for n, v in value.items()} if named else without_extensions(value)
    return out
