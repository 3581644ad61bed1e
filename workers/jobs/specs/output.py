"""Checking a job's data against its ``output_schema``: jsonschema, with a linear-time regex engine.

A user's schema runs inside a worker next to other tenants' jobs. jsonschema evaluates ``pattern``
and ``patternProperties`` with Python's ``re``, whose backtracking makes ``^(a+)+$`` on a long
answer take years, all of it holding the GIL, so one job could freeze every job of a worker and
ignore its own cancel and time limit. Here both keywords use RE2 (``google-re2``), which matches
in time linear in the input and refuses what it cannot do that way (backreferences, lookaround):
``check_schema`` reports such a pattern when the job is submitted, not when it runs.

No ``$ref`` is fetched: only references inside the schema resolve. A schema's size, depth, references
and branches are bounded when it is submitted (``schema_limits``); checking a result still runs off
the worker's event loop (``check_output``: a thread) and stops itself at ``SCHEMA_CHECK_SECONDS``
(every keyword looks at the deadline), so a slow check ends its job, not its worker.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Iterator
from typing import Any

import re2
from jsonschema import Draft202012Validator, ValidationError, validators
from jsonschema.exceptions import SchemaError

from config.messages import re2_reason
from workers.jobs.errors import SchemaCheckExpired
from workers.jobs.specs.schema_limits import SCHEMA_CHECK_SECONDS

MAX_PROBLEMS = 20  # problems reported per check; the first few say what is wrong
GRACE_SECONDS = 1.0  # past its deadline, the awaiting job stops waiting for a check that has not stopped

Keyword = Callable[[Any, Any, Any, dict[str, Any]], Any]


@functools.lru_cache(maxsize=256)
def _compiled(pattern: str) -> Any:
    return re2.compile(pattern)


def _pattern(validator: Any, pattern: str, instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not _compiled(pattern).search(instance):
        yield ValidationError(f"{instance!r:.80} does not match {pattern!r}")


def _pattern_properties(validator: Any, patterns: dict[str, Any], instance: Any,
                        schema: dict[str, Any]) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for name, value in instance.items():
            if _compiled(pattern).search(name):
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


def _passes(validator: Any, instance: Any, subschemas: list[Any]) -> Iterator[bool]:
    """Whether ``instance`` satisfies each subschema, stopping at each one's first error."""
    for index, subschema in enumerate(subschemas):
        yield next(validator.descend(instance, subschema, schema_path=index), None) is None


def _any_of(validator: Any, subschemas: list[Any], instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    """jsonschema's keeps every branch's errors (its ``context``), memory as large as the work, and
    the garbage collector's passes over them stall the worker's event loop; the message needs none."""
    if not any(_passes(validator, instance, subschemas)):
        yield ValidationError(f"{instance!r:.80} does not match any of the anyOf schemas")


def _one_of(validator: Any, subschemas: list[Any], instance: Any, schema: dict[str, Any]) -> Iterator[ValidationError]:
    if sum(_passes(validator, instance, subschemas)) != 1:
        yield ValidationError(f"{instance!r:.80} does not match exactly one of the oneOf schemas")


def _validator_for(schema: dict[str, Any]) -> type[Any]:
    base = validators.validator_for(schema, default=Draft202012Validator)
    return validators.extend(base, {"pattern": _pattern, "patternProperties": _pattern_properties,
                                    "anyOf": _any_of, "oneOf": _one_of})


def _patterns(schema: Any) -> Iterator[str]:
    """Every regular expression a schema holds (``pattern`` values, ``patternProperties`` keys)."""
    if isinstance(schema, dict):
        if isinstance(schema.get("pattern"), str):
            yield schema["pattern"]
        if isinstance(schema.get("patternProperties"), dict):
            yield from schema["patternProperties"]
        for value in schema.values():
            yield from _patterns(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _patterns(item)


def check_schema(schema: dict[str, Any]) -> list[str]:
    """Problems of the schema itself (an empty list: usable); checked when a job is submitted."""
    try:
        _validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "(root)"
        return [f"{where}: {exc.message}"]
    problems = []
    for pattern in _patterns(schema):
        try:
            _compiled(pattern)
        except re2.error as exc:
            problems.append(f"pattern {pattern!r}: not supported by the linear-time engine (RE2): {re2_reason(exc)}")
    return problems


def _until(keyword: Keyword, deadline: float, seconds: float) -> Keyword:
    """``keyword``, refusing to start past ``deadline`` (``SchemaCheckExpired``)."""
    def checked(validator: Any, value: Any, instance: Any, schema: dict[str, Any]) -> Any:
        if time.monotonic() > deadline:
            raise SchemaCheckExpired(seconds)
        return keyword(validator, value, instance, schema)
    return checked


def _validator_until(schema: dict[str, Any], seconds: float) -> type[Any]:
    """The schema's validator class, each keyword of which stops the check ``seconds`` from now."""
    base = _validator_for(schema)
    deadline = time.monotonic() + seconds
    return validators.extend(base, {name: _until(fn, deadline, seconds) for name, fn in base.VALIDATORS.items()})


def validate(value: Any, schema: dict[str, Any], seconds: float = SCHEMA_CHECK_SECONDS) -> list[str]:
    """Every problem found (up to ``MAX_PROBLEMS``), each naming its JSON path; empty means valid.
    Blocking: a job calls ``check_output``. Past ``seconds``, ``SchemaCheckExpired``."""
    validator = _validator_until(schema, seconds)(schema)
    problems: list[str] = []
    for error in sorted(validator.iter_errors(value), key=lambda e: list(map(str, e.path))):
        problems += [f"{error.json_path}: {message}" for message in _messages(error)]
        if len(problems) >= MAX_PROBLEMS:
            break
    return problems[:MAX_PROBLEMS]


async def check_output(value: Any, schema: dict[str, Any], seconds: float = SCHEMA_CHECK_SECONDS) -> list[str]:
    """``validate`` in a thread, so the worker's event loop (its heartbeat, its other jobs) runs
    meanwhile; ``SchemaCheckExpired`` when it takes longer than ``seconds``."""
    try:
        return await asyncio.wait_for(asyncio.to_thread(validate, value, schema, seconds), seconds + GRACE_SECONDS)
    except TimeoutError:  # one keyword ran long past the deadline; the thread stops at the next one
        raise SchemaCheckExpired(seconds) from None


_KINDS = (("null", type(None)), ("boolean", bool), ("integer", int), ("number", float), ("string", str),
          ("array", list), ("object", dict))


def _kind(value: Any) -> str:
    return next((name for name, kind in _KINDS if isinstance(value, kind)), type(value).__name__)


def _messages(error: ValidationError) -> list[str]:
    """Short messages in the words a model (and a user) reads in the job's error, per keyword."""
    keyword, want, value = error.validator, error.validator_value, error.instance
    if keyword == "type":
        return [f"expected {' or '.join(want if isinstance(want, list) else [want])}, got {_kind(value)}"]
    if keyword == "required":  # one error per missing name, which only its message names
        return [f"missing required property {error.message.removesuffix(' is a required property')}"]
    if keyword == "additionalProperties" and want is False:
        known = set(error.schema.get("properties", {}))
        patterns = list(error.schema.get("patternProperties", {}))
        return [f"unexpected property {name!r}" for name in value
                if name not in known and not any(_compiled(p).search(name) for p in patterns)]
    simple = {
        "enum": f"{value!r} is not one of {want!r}", "const": f"must be {want!r}",
        "minLength": f"shorter than {want} characters", "maxLength": f"longer than {want} characters",
        "pattern": f"does not match {want!r}", "minimum": f"less than {want}", "maximum": f"greater than {want}",
        "minItems": f"fewer than {want} items", "maxItems": f"more than {want} items",
        "anyOf": "does not match any of the anyOf schemas", "oneOf": "does not match exactly one of the oneOf schemas",
    }
    return [simple.get(str(keyword), error.message)]


def resolve_ref(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    """``schema`` itself, or what its local ``$ref`` (``#/$defs/...``) points to in ``root``."""
    ref = schema.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/"):
        return schema
    node: Any = root
    for part in ref[2:].split("/"):
        node = node.get(part, {}) if isinstance(node, dict) else {}
    return node if isinstance(node, dict) else {}
