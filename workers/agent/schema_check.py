"""A small JSON-schema check for job output (jsonschema is not a dependency).

Covers what output schemas use in practice: type, properties, required, additionalProperties,
items, enum, const, string/number/array bounds, pattern, anyOf/oneOf/allOf, and local ``$ref``
into ``$defs``/``definitions``. Unknown keywords are ignored, as JSON Schema itself does.
"""

from __future__ import annotations

import re
from typing import Any

_TYPES: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool)
    or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def validate(value: Any, schema: dict[str, Any]) -> list[str]:
    """Every problem found, each naming its JSON path; an empty list means valid."""
    return validate_in(value, schema, schema)


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return schema
    node: Any = root
    for part in ref[2:].split("/"):
        node = node.get(part, {}) if isinstance(node, dict) else {}
    return node if isinstance(node, dict) else {}


def _check(value: Any, schema: Any, path: str, root: dict[str, Any], out: list[str]) -> None:
    if schema is False:
        out.append(f"{path}: no value is allowed here")
        return
    if not isinstance(schema, dict):
        return
    schema = _resolve(schema, root)
    if not _check_type(value, schema, path, out):
        return
    _check_values(value, schema, path, out)
    _check_combinators(value, schema, path, root, out)
    if isinstance(value, dict):
        _check_object(value, schema, path, root, out)
    elif isinstance(value, list):
        _check_array(value, schema, path, root, out)


def _check_type(value: Any, schema: dict[str, Any], path: str, out: list[str]) -> bool:
    wanted = schema.get("type")
    if wanted is None:
        return True
    names = wanted if isinstance(wanted, list) else [wanted]
    if any(_TYPES.get(name, lambda v: True)(value) for name in names):
        return True
    out.append(f"{path}: expected {' or '.join(names)}, got {_kind(value)}")
    return False


def _check_values(value: Any, schema: dict[str, Any], path: str, out: list[str]) -> None:
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{path}: {value!r} is not one of {schema['enum']!r}")
    if "const" in schema and value != schema["const"]:
        out.append(f"{path}: must be {schema['const']!r}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            out.append(f"{path}: shorter than {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            out.append(f"{path}: longer than {schema['maxLength']} characters")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            out.append(f"{path}: does not match {schema['pattern']!r}")
    elif _TYPES["number"](value):
        if "minimum" in schema and value < schema["minimum"]:
            out.append(f"{path}: less than {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            out.append(f"{path}: greater than {schema['maximum']}")


def _check_combinators(value: Any, schema: dict[str, Any], path: str, root: dict[str, Any], out: list[str]) -> None:
    for sub in schema.get("allOf", []):
        _check(value, sub, path, root, out)
    for key, need_one in (("anyOf", False), ("oneOf", True)):
        if key not in schema:
            continue
        passing = sum(1 for sub in schema[key] if not validate_in(value, sub, root))
        if passing == 0 or (need_one and passing > 1):
            out.append(f"{path}: does not match {'exactly one' if need_one else 'any'} of the {key} schemas")


def validate_in(value: Any, schema: Any, root: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    _check(value, schema, "$", root, problems)
    return problems


def _check_object(value: dict[str, Any], schema: dict[str, Any], path: str, root: dict[str, Any],
                  out: list[str]) -> None:
    props = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in value:
            out.append(f"{path}: missing required property {name!r}")
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        if name in props:
            _check(item, props[name], f"{path}.{name}", root, out)
        elif extra is False:
            out.append(f"{path}: unexpected property {name!r}")
        else:
            _check(item, extra, f"{path}.{name}", root, out)


def _check_array(value: list[Any], schema: dict[str, Any], path: str, root: dict[str, Any], out: list[str]) -> None:
    if len(value) < schema.get("minItems", 0):
        out.append(f"{path}: fewer than {schema['minItems']} items")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        out.append(f"{path}: more than {schema['maxItems']} items")
    items = schema.get("items")
    if isinstance(items, dict):
        for i, item in enumerate(value):
            _check(item, items, f"{path}[{i}]", root, out)


def _kind(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _TYPES[name](value):
            return name
    return type(value).__name__
