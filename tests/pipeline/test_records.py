"""``LocalRecords`` (``workers/pipeline/records.py``): a job's record in this process, as
``browserd run``, the benches and the agent tests keep it. (``StoreRecords``, a worker's, is
exercised end to end by the worker tests in tests/queue; the store beneath it by tests/jobs.)"""

from __future__ import annotations

from config import load_settings
from tests.pipeline.stages import NoBrowsers
from workers.agent import AgentEvent, JobInputs
from workers.agent.events import Actor, ExecutionState
from workers.jobs.budget import TimeBudget
from workers.jobs.model.record import AGENT_EVENT
from workers.jobs.model.result import ActionRecord, JobResult, StepRecord
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import JobStatus
from workers.jobs.store.outcomes import Claim, ClaimOutcome
from workers.pipeline import Delivered, JobRun, LocalRecords, Pipeline, Services

CLAIM = {"worker": "local", "max_attempts": 3, "stale_after": 10.0}


async def test_a_job_is_claimed_once_to_run_and_then_is_finished() -> None:
    records = LocalRecords()
    spec = JobSpec(task="read the price")
    job_id = records.add(spec)
    assert len(job_id) == 32 and records.add(spec, "mine") == "mine"
    assert await records.claim(job_id, **CLAIM) == Claim(ClaimOutcome.run, 1)
    assert await records.spec(job_id) == spec
    run = JobRun(job_id, 1, spec, TimeBudget(10), JobInputs(spec=spec, settings=load_settings()))
    result = JobResult(status=JobStatus.succeeded, final_answer="39.90")
    assert await records.finish(run, result) is True
    assert records.results[job_id] == result
    assert await records.claim(job_id, **CLAIM) == Claim(ClaimOutcome.finished, 1)


async def test_an_unknown_job_is_missing() -> None:
    records = LocalRecords()
    assert await records.claim("0" * 32, **CLAIM) == Claim(ClaimOutcome.missing, 0)
    assert await records.spec("0" * 32) is None


async def test_a_second_delivery_of_a_finished_job_does_not_run_it_again() -> None:
    records = LocalRecords()
    job_id = records.add(JobSpec(task="read the price"))
    first = JobResult(status=JobStatus.succeeded, final_answer="39.90")
    records.results[job_id] = first
    browsers = NoBrowsers()
    pipeline = Pipeline(records, browsers, Services(settings=load_settings(), records=records), [])
    assert await pipeline.deliver(job_id) == Delivered(ClaimOutcome.finished, None)
    assert await pipeline.deliver("f" * 32) == Delivered(ClaimOutcome.missing, None)
    assert records.results == {job_id: first} and browsers.asked == 0


async def test_steps_and_agent_events_reach_the_listeners_and_other_events_do_not() -> None:
    steps: list[StepRecord] = []
    events: list[AgentEvent] = []

    async def on_step(step: StepRecord) -> None:
        steps.append(step)

    async def on_event(event: AgentEvent) -> None:
        events.append(event)

    records = LocalRecords(on_step=on_step, on_event=on_event)
    step = StepRecord(step=1, url="http://shop.test/", actions=[ActionRecord(name="click_element", index=3)])
    assert await records.progress("j", 1, step=step) is True
    assert await records.progress("j", 1, first_command_at=12.5) is True
    event = AgentEvent(actor=Actor.navigator, state=ExecutionState.TASK_START, step=1, max_steps=12)
    assert await records.event("j", 1, AGENT_EVENT, event.model_dump_json()) is True
    assert await records.event("j", 1, "politeness_wait", '{"domain": "shop.test"}') is True
    assert steps == [step] and events == [event]


async def test_the_owners_cancel_is_read_directly_and_there_are_no_flags_to_poll() -> None:
    asked = []
    records = LocalRecords(is_cancelled=lambda: bool(asked))
    cancel = records.owner_cancel()
    assert cancel is not None and cancel() is False
    asked.append("ctrl-c")
    assert cancel() is True
    assert await records.flags(["j"]) == {} and await records.heartbeat([]) is None
    assert LocalRecords().owner_cancel() is None
