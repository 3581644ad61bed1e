"""workers.jobs.model: what a job spec accepts and refuses, and the final states."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import FINAL_STATES, JobStatus


def test_final_states_are_the_three_a_job_never_leaves() -> None:
    assert {s.value for s in FINAL_STATES} == {"succeeded", "failed", "cancelled"}
    assert [s for s in JobStatus if s.finished] == sorted(FINAL_STATES, key=list(JobStatus).index)


@pytest.mark.parametrize(("fields", "message"), [
    ({}, "exactly one of 'task'"),
    ({"task": "a", "script": [{"wait": {}}]}, "exactly one of 'task'"),
    ({"script": []}, "at least one action"),
    ({"task": "a", "allowed_domains": ["https://x.com/"]}, "is not a domain name"),
    ({"task": "a", "labels": {str(i): "v" for i in range(21)}}, "at most 20 labels"),
    ({"task": "a", "options": {"max_steps": 0}}, "greater than or equal to 1"),
    ({"task": "a", "surprise": 1}, "Extra inputs are not permitted"),
])
def test_a_bad_spec_says_what_is_wrong(fields: dict, message: str) -> None:
    with pytest.raises(ValidationError) as caught:
        JobSpec(**fields)
    assert message in str(caught.value)


def test_domains_are_normalised() -> None:
    assert JobSpec(task="a", allowed_domains=[" .Example.COM "]).allowed_domains == ["example.com"]
