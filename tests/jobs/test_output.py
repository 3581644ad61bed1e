"""workers.jobs.specs.output: output schemas checked by jsonschema, patterns by a linear-time engine."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from workers.jobs.specs.output import check_schema, validate

ROOT = Path(__file__).resolve().parents[2]

SCHEMA = {"type": "object", "required": ["name", "price"], "additionalProperties": False,
          "properties": {"name": {"type": "string", "minLength": 1}, "price": {"type": "number", "minimum": 0},
                         "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}}}}


def test_valid_data_has_no_problems() -> None:
    assert validate({"name": "mug", "price": 4.5, "tags": ["blue"]}, SCHEMA) == []


def test_each_problem_names_its_path() -> None:
    problems = validate({"price": -1, "tags": ["Blue"], "extra": 1}, SCHEMA)
    assert "$: missing required property 'name'" in problems
    assert any(p.startswith("$.price: ") for p in problems)
    assert any(p.startswith("$.tags[0]: ") and "does not match" in p for p in problems)
    assert "$: unexpected property 'extra'" in problems


def test_a_catastrophic_pattern_runs_in_linear_time() -> None:
    """``^(a+)+$`` against 50,000 a's and a b: Python's re would hold the GIL for ages (and a worker
    with it). Checked in a subprocess, so a regression fails this test instead of hanging the run."""
    probe = ("from workers.jobs.specs.output import validate\n"
             "schema = {'type': 'object', 'properties': {'answer': {'type': 'string', 'pattern': '^(a+)+$'}}}\n"
             "print(validate({'answer': 'a' * 50_000 + 'b'}, schema))\n")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert "does not match" in out.stdout, out.stderr


def test_pattern_properties_use_the_same_engine() -> None:
    schema = {"type": "object", "patternProperties": {"^x_": {"type": "integer"}}}
    assert validate({"x_a": 1, "y": "s"}, schema) == []
    assert validate({"x_a": "one"}, schema)[0].startswith("$.x_a: ")


def test_schemas_the_engine_cannot_run_are_named() -> None:
    assert check_schema(SCHEMA) == []
    assert "RE2" in check_schema({"type": "string", "pattern": "(?=a)b"})[0]
    assert check_schema({"type": 5})
