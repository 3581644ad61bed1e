"""Batch bodies read as they arrive (``StreamedBatch``): the same jobs and the same refusals as a
body read whole, however the body is cut into chunks, and nothing of a refused batch kept."""

from __future__ import annotations

import json
import random

import pytest

from config import Settings
from workers.jobs.errors import SpecError
from workers.jobs.specs.batch_body import parse_body
from workers.jobs.specs.checks import validate_jobs
from workers.jobs.specs.streamed import CheckedBatch, StreamedBatch
from workers.jobs.tenants.models import QuotaExceeded, TenantLimits
from workers.jobs.tenants.quotas import check_batch_size

SETTINGS = Settings(webhook_allowed_networks="127.0.0.1/32")
SPEC = {"task": "find it", "labels": {"a": "1"}}
HEADER = {"defaults": {"timeout": 30, "labels": {"team": "x"}}, "webhook_url": "http://127.0.0.1/h",
          "max_cost_usd": 2}


def jsonl(*items: object) -> bytes:
    return ("\n".join(json.dumps(item) for item in items) + "\n").encode()


def streamed(body: bytes, seed: int = 0, **kwargs: object) -> CheckedBatch:
    """``body`` fed in random cuts (some mid-line, some one byte long)."""
    reader = StreamedBatch(SETTINGS, **kwargs)  # type: ignore[arg-type]
    rng, at = random.Random(seed), 0
    while at < len(body):
        step = rng.choice([1, 2, 7, 64, 1000])
        reader.feed(body[at:at + step])
        at += step
    return reader.finish()


def whole(body: bytes) -> CheckedBatch:
    request = parse_body(body)
    return CheckedBatch(validate_jobs(request, SETTINGS), request.webhook_url, request.max_cost_usd)


@pytest.mark.parametrize("body", [
    jsonl(HEADER, SPEC, {"script": [{"done": {"text": "x"}}], "labels": {"n": "2"}}),
    jsonl(SPEC, SPEC) + b"\n\n",
    b"\r\n" + jsonl(HEADER, SPEC).replace(b"\n", b"\r\n"),
    json.dumps({"task": "one job, no newline"}).encode(),
    json.dumps([SPEC, SPEC], indent=2).encode(),  # a JSON array, over many lines: read whole
    json.dumps({"jobs": [SPEC], **HEADER}, indent=2).encode(),  # an object with jobs: read whole
    json.dumps({"jobs": [SPEC], **HEADER}).encode(),
])
def test_streamed_reads_every_form_as_the_whole_body_does(body: bytes) -> None:
    expected = whole(body)
    for seed in range(4):
        got = streamed(body, seed)
        assert [s.model_dump() for s in got.specs] == [s.model_dump() for s in expected.specs]
        assert (got.webhook_url, got.max_cost_usd) == (expected.webhook_url, expected.max_cost_usd)


@pytest.mark.parametrize(("body", "field"), [
    (b"", "body"),
    (b"\n \n", "body"),
    (b'{"task": "a"}\n{"task": ', "line 2"),
    (jsonl(SPEC, {"task": "b", "options": {"max_steps": 0}}, SPEC), "jobs[1].options.max_steps"),
    (jsonl(HEADER, SPEC, {"script": [{"fly": {}}]}), "jobs[1].script"),
    (jsonl({"defaults": [1]}, SPEC), "defaults"),
    (jsonl({"defaults": {}, "mode": "fast"}, SPEC), "mode"),
    (jsonl({"defaults": {}, "webhook_url": "http://10.0.0.1/h"}, SPEC), "webhook_url"),
    (jsonl(SPEC, 5), "jobs[1]"),
])
def test_streamed_refusals_name_the_same_field(body: bytes, field: str) -> None:
    with pytest.raises(SpecError) as whole_refusal:
        whole(body)
    with pytest.raises(SpecError) as caught:
        streamed(body, 3)
    assert caught.value.problems[0].field == whole_refusal.value.problems[0].field == field


def test_a_header_alone_is_a_batch_of_no_jobs() -> None:
    """(Read whole, one line is one JSON value: the header was taken for a job with an unknown field.)"""
    with pytest.raises(SpecError) as caught:
        streamed(jsonl({"defaults": {}}))
    assert caught.value.problems[0].field == "jobs"


def test_a_tenants_batch_size_is_answered_before_a_bad_line_and_nothing_is_kept() -> None:
    limits = TenantLimits(max_batch_size=3)

    def size(jobs: int) -> None:
        check_batch_size("t1", limits, jobs)

    reader = StreamedBatch(SETTINGS, None, size, max_jobs=3)
    reader.feed(jsonl(SPEC, {"task": ""}, *[SPEC] * 50))
    assert reader.specs == [] and reader.jobs == 52
    with pytest.raises(QuotaExceeded, match="a batch of 52 jobs"):
        reader.finish()
    reader = StreamedBatch(SETTINGS, None, size, max_jobs=3)
    reader.feed(jsonl(SPEC, SPEC, SPEC))
    assert len(reader.finish().specs) == 3
