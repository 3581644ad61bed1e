"""Output schemas are bounded when submitted (workers.jobs.specs.schema_limits), and checking a result
runs off the event loop and stops itself at a deadline (workers.jobs.specs.output.check_output).

Issue 22, finding 5: 27 ``$defs`` each ``anyOf`` two ``$ref``s to the next was accepted and, at the
job's end, froze its worker for minutes; ``{"$ref": "#"}`` was accepted and failed as an internal
RecursionError.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from config import Settings
from tests.support.schemas import anyof_bomb
from workers.agent.failures import failure
from workers.jobs.errors import SchemaCheckExpired
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import FailureCategory
from workers.jobs.specs.batch_body import BatchRequest
from workers.jobs.specs.checks import check_spec, validate_jobs
from workers.jobs.specs.output import check_output, validate
from workers.jobs.specs.schema_limits import (
    MAX_SCHEMA_BRANCHES,
    MAX_SCHEMA_DEPTH,
    MAX_SCHEMA_NODES,
    SchemaLimit,
    SchemaTooComplex,
    check_limits,
)

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = Settings(_env_file=None)


def nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


NORMAL = {  # definitions used in several places, anyOf, arrays of objects: an ordinary schema
    "type": "object", "required": ["people"],
    "$defs": {
        "address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
                    "required": ["city"]},
        "person": {"type": "object", "properties": {
            "name": {"type": "string"}, "home": {"$ref": "#/$defs/address"},
            "work": {"anyOf": [{"$ref": "#/$defs/address"}, {"type": "null"}]},
            "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}}}},
    },
    "properties": {"people": {"type": "array", "items": {"$ref": "#/$defs/person"}},
                   "owner": {"$ref": "#/$defs/person"}},
}


def refused(schema: Any) -> SchemaTooComplex:
    with pytest.raises(SchemaTooComplex) as caught:
        check_spec(JobSpec(task="a", output_schema=schema), SETTINGS)
    assert caught.value.problems[0].field == "output_schema"
    assert caught.value.problems[0].limit == caught.value.limit.value
    return caught.value


def test_the_anyof_bomb_is_refused_naming_the_branches_limit() -> None:
    error = refused(anyof_bomb())
    assert error.limit is SchemaLimit.branches
    assert f"at most {MAX_SCHEMA_BRANCHES:,}" in error.summary and "'branches'" in error.summary


def test_a_schema_that_refers_to_itself_is_refused_as_recursive() -> None:
    assert refused({"$ref": "#"}).limit is SchemaLimit.recursion
    error = refused({"$defs": {"a": {"items": {"$ref": "#/$defs/b"}}, "b": {"properties": {"x": {"$ref": "#/$defs/a"}}}},
                     "$ref": "#/$defs/a"})
    assert error.limit is SchemaLimit.recursion and "recursive" in error.summary


def test_deep_nesting_is_refused_without_recursion() -> None:
    assert refused(nested(MAX_SCHEMA_DEPTH)).limit is SchemaLimit.depth
    check_limits(nested(MAX_SCHEMA_DEPTH // 2 - 1))
    very: dict[str, Any] = {}
    for _ in range(50_000):  # deeper than Python's recursion limit: measured, not walked recursively
        very = {"not": very}
    assert refused(very).limit is SchemaLimit.depth


def test_size_is_bounded() -> None:
    wide = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(MAX_SCHEMA_NODES)}}
    assert refused(wide).limit is SchemaLimit.nodes
    assert refused({"type": "string", "description": "x" * 70_000}).limit is SchemaLimit.bytes


def test_references_must_resolve_inside_the_schema() -> None:
    assert "only references inside" in refused({"$ref": "https://example.com/s.json"}).summary
    assert "points to nothing" in refused({"$ref": "#/$defs/missing"}).summary
    assert refused({"$defs": {"a": {"$id": "https://example.com/a", "type": "string"}}}).limit is SchemaLimit.ref
    assert refused({"$dynamicRef": "#node"}).limit is SchemaLimit.ref


def test_a_normal_schema_with_definitions_is_accepted_and_still_checks() -> None:
    spec = check_spec(JobSpec(task="a", output_schema=NORMAL), SETTINGS)
    assert spec.output_schema == NORMAL
    check_limits({"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}] * 20}}})
    assert validate({"people": [{"name": "Ann", "home": {"city": "Oslo"}}]}, NORMAL) == []
    assert validate({"people": [{"home": {}}]}, NORMAL) == ["$.people[0].home: missing required property 'city'"]


def test_a_batch_names_the_job_and_the_limit_of_its_schema() -> None:
    request = BatchRequest(jobs=[{"task": "a"}, {"task": "b"}], defaults={"output_schema": anyof_bomb()})
    with pytest.raises(SchemaTooComplex) as caught:
        validate_jobs(request, SETTINGS)
    assert caught.value.problems[0].field == "jobs[0].output_schema" and caught.value.limit is SchemaLimit.branches


# --- checking a result: off the loop, with a deadline -------------------------------------------

def _slow_case() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Within every limit (about 400 branches), yet each item of a long list fails all 200
    alternatives: minutes of checking, on a result far below BROWSERD_MAX_RESULT_BYTES."""
    def branch(i: int) -> dict[str, Any]:
        return {"type": "object", "required": [f"k{i}", "name"],
                "properties": {f"k{i}": {"type": "integer"}, "name": {"type": "string", "maxLength": 3}}}
    schema = {"type": "array", "items": {"anyOf": [branch(i) for i in range(200)]}}
    return schema, [{"name": "too long", "k0": -1} for _ in range(3_000)]


def test_a_slow_check_stops_itself_at_its_deadline() -> None:
    """In a subprocess, so a check that does not stop fails this test instead of hanging the run."""
    probe = ("import json, sys\n"
             "from workers.jobs.specs.schema_limits import check_limits\n"
             "from workers.jobs.specs.output import validate\n"
             "from workers.jobs.errors import SchemaCheckExpired\n"
             "schema, data = json.load(sys.stdin)\n"
             "check_limits(schema)\n"
             "try:\n    validate(data, schema, seconds=0.5)\nexcept SchemaCheckExpired as exc:\n    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, input=json.dumps(_slow_case()), capture_output=True,
                         text=True, timeout=60)
    assert "took longer than 0.5s" in out.stdout, out.stderr


async def test_a_slow_check_fails_the_job_while_the_event_loop_goes_on() -> None:
    schema, data = _slow_case()
    ticks = 0

    async def heartbeat() -> None:  # stands for the worker's heartbeat and its other jobs
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    beating = asyncio.create_task(heartbeat())
    try:
        with pytest.raises(SchemaCheckExpired) as caught:
            await check_output(data, schema, seconds=0.5)
    finally:
        beating.cancel()
    assert ticks > 1  # the loop ran other work while the result was being checked
    result = failure(caught.value)
    assert result.category is FailureCategory.invalid_output
    assert result.error is not None and "output schema took longer than 0.5s" in result.error


async def test_a_quick_check_answers_as_before() -> None:
    assert await check_output({"people": []}, NORMAL) == []
    assert await check_output({}, NORMAL) == ["$: missing required property 'people'"]
