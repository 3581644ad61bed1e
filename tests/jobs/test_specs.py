"""workers.jobs.specs: checking submitted specs and batch bodies, with typed errors naming fields."""

from __future__ import annotations

import pytest

from config import Settings
from workers.jobs.errors import SpecError
from workers.jobs.model.spec import JobSpec
from workers.jobs.specs.batch_body import BatchRequest
from workers.jobs.specs.checks import check_spec, max_steps_of, validate_jobs

SETTINGS = Settings(visibility_timeout=3600, max_steps=42)


def test_max_steps_is_the_script_length_or_the_agent_budget() -> None:
    assert max_steps_of(JobSpec(script=[{"wait": {}}, {"done": {}}]), SETTINGS) == 2
    assert max_steps_of(JobSpec(task="a"), SETTINGS) == 42
    assert max_steps_of(JobSpec(task="a", options={"max_steps": 7}), SETTINGS) == 7


def test_a_timeout_longer_than_the_queue_can_honour_is_refused() -> None:
    with pytest.raises(SpecError) as caught:
        check_spec(JobSpec(task="a", timeout=3599), SETTINGS)
    assert caught.value.problems[0].field == "timeout" and "at most 3594" in caught.value.summary


def test_script_actions_are_checked_and_filled_in() -> None:
    spec = check_spec(JobSpec(script=[{"wait": {}}]), SETTINGS)
    assert spec.script == [{"wait": {"intent": "", "seconds": 3.0}}]
    with pytest.raises(SpecError) as caught:
        check_spec(JobSpec(script=[{"fly": {}}]), SETTINGS)
    assert caught.value.problems[0].field == "script" and "unknown action 'fly'" in caught.value.summary


def test_an_output_schema_the_engine_cannot_run_is_refused_at_submission() -> None:
    with pytest.raises(SpecError) as caught:
        check_spec(JobSpec(task="a", output_schema={"type": "string", "pattern": "(a)\\1"}), SETTINGS)
    assert caught.value.problems[0].field == "output_schema" and "RE2" in caught.value.summary
    with pytest.raises(SpecError) as caught:
        check_spec(JobSpec(task="a", output_schema={"type": "strng"}), SETTINGS)
    assert caught.value.problems[0].field == "output_schema"


def test_a_bad_batch_item_is_named_by_index_and_field() -> None:
    with pytest.raises(SpecError) as caught:
        validate_jobs(BatchRequest(jobs=[{"task": "a"}, {"task": "b", "options": {"max_steps": 0}}]), SETTINGS)
    assert [p.field for p in caught.value.problems] == ["jobs[1].options.max_steps"]
    with pytest.raises(SpecError) as caught:
        validate_jobs(BatchRequest(jobs=[{"script": [{"fly": {}}]}]), SETTINGS)
    assert caught.value.problems[0].field == "jobs[0].script"
    assert caught.value.summary.startswith("jobs[0]: script: ")
