"""Batch bodies and the progress bar, without a deployment."""

from __future__ import annotations

import io
import json

import pytest

from config import Settings
from daemon.api.errors import from_spec_error
from daemon.cli.progress import ProgressBar, describe
from workers.jobs.errors import SpecError
from workers.jobs.specs.batch_body import merged, parse_body
from workers.jobs.specs.checks import validate_jobs


def test_every_body_form_gives_the_same_jobs() -> None:
    spec = {"task": "find it", "labels": {"a": "1"}}
    defaults = {"timeout": 30, "labels": {"team": "x"}}
    as_object = parse_body(json.dumps({"jobs": [spec], "defaults": defaults, "webhook_url": "http://127.0.0.1/h"}).encode())
    as_jsonl = parse_body((json.dumps({"defaults": defaults, "webhook_url": "http://127.0.0.1/h"}) + "\n"
                           + json.dumps(spec) + "\n\n").encode())
    assert as_object == as_jsonl
    assert parse_body(json.dumps([spec]).encode()).jobs == [spec]
    jobs = validate_jobs(as_jsonl, Settings(webhook_allowed_networks="127.0.0.1/32"))  # a loopback receiver, opened
    with pytest.raises(SpecError, match="loopback"):
        validate_jobs(as_jsonl, Settings())
    assert jobs[0].timeout == 30 and jobs[0].labels == {"team": "x", "a": "1"}


def test_item_wins_over_defaults_key_by_key() -> None:
    out = merged({"options": {"max_steps": 5, "max_failures": 2}, "priority": "low"},
                 {"options": {"max_steps": 9}, "priority": "high"})
    assert out == {"options": {"max_steps": 9, "max_failures": 2}, "priority": "high"}


@pytest.mark.parametrize(("body", "field"), [
    (b"", "body"),
    (b"[]", "jobs"),
    (b'{"jobs": [], "extra": 1}', "extra"),
    (b'{"jobs": [{"task": "a"}], "webhook_url": "not a url"}', "webhook_url"),
    (b"[" * 100_000, "body"),
])
def test_unusable_bodies_are_refused_by_field(body: bytes, field: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_body(body)
    refused = from_spec_error(caught.value)  # what the API answers
    assert refused.status == 422 and refused.fields and refused.fields[0].field == field


def test_progress_plain_lines_when_not_a_terminal() -> None:
    out = io.StringIO()
    clock = iter([0.0, 1.0, 2.0, 10.0]).__next__
    bar = ProgressBar(out, clock=clock)
    record = {"total": 10, "done": 0, "counts": {"running": 2, "failed": 0, "cancelled": 0}}
    bar.update(record)
    bar.update({**record, "done": 4, "counts": {"running": 2, "failed": 1, "cancelled": 0}})
    bar.update({**record, "done": 10, "counts": {"running": 0, "failed": 1, "cancelled": 0}}, final=True)
    bar.close()
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("progress: 0/10") and lines[-1].startswith("progress: 10/10")
    assert "fails 1" in lines[-1] and "\r" not in out.getvalue()
    shown = describe({**record, "done": 5}, elapsed=5.0)
    bar_text, figures = shown.bar, shown.figures
    assert bar_text.count("#") == 14 and "1.0 jobs/s" in figures and "ETA 5s" in figures
