"""Nanobrowser's execution events, reported through the listener given to run_job."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from tests.agent.scripted import NAVIGATOR, PLANNER, act, plan, run
from tests.support.jobs import run_job
from tests.support.llm_server import Reply
from workers.agent import AgentEvent
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import JobStatus
from workers.pipeline import LocalRecords


class Recorder:
    def __init__(self) -> None:
        self.events: list[AgentEvent] = []

    async def __call__(self, event: AgentEvent) -> None:
        self.events.append(event)

    def trace(self) -> list[tuple[str, str, int]]:
        return [(e.actor.value, e.state.value, e.step) for e in self.events]


async def test_a_job_reports_task_step_and_action_events(pool, site, llm, settings):
    events = Recorder()
    llm.add(PLANNER, plan(next_steps="Pick France"), plan(done=True, final_answer="France chosen"))
    llm.add(NAVIGATOR, act({"select_dropdown_option": {"intent": "ship to France", "index": 1, "text": "France"}}),
            act({"done": {"text": "ok"}}))
    started = datetime.now(UTC)
    result, _, _ = await run(pool, settings, task="Ship to France", start_url=site.url("agent/dropdown.html"),
                             _on_event=events)
    assert result.status == JobStatus.succeeded, result.error
    assert events.trace() == [
        ("system", "task.start", 0),
        ("navigator", "step.start", 1),
        ("planner", "step.start", 1), ("planner", "step.ok", 1), ("planner", "next_steps", 1),
        ("navigator", "act.start", 1), ("navigator", "act.ok", 1),
        ("navigator", "step.ok", 1),
        ("navigator", "step.start", 2),
        ("navigator", "act.start", 2), ("navigator", "act.ok", 2),
        ("navigator", "step.ok", 2),
        ("navigator", "step.start", 3),
        ("planner", "step.start", 3), ("planner", "step.ok", 3), ("planner", "final_answer", 3),
        ("navigator", "step.ok", 3),
        ("system", "task.ok", 3),
    ]
    by_state = {e.state.value: e for e in events.events}
    assert by_state["task.start"].details == "Ship to France"
    assert by_state["next_steps"].details == "Pick France"
    assert by_state["final_answer"].details == "France chosen" and by_state["task.ok"].details == "France chosen"
    first_act = events.events[5]
    assert (first_act.action, first_act.details) == ("select_dropdown_option", "ship to France")
    assert "selected 'France'" in events.events[6].details
    assert all(e.max_steps == 12 for e in events.events)
    stamps = [e.timestamp for e in events.events]
    assert stamps == sorted(stamps) and stamps[0] >= started
    assert json.loads(json.dumps(events.events[0].model_dump(mode="json")))["state"] == "task.start"


async def test_failures_are_reported_as_they_happen(pool, site, llm, settings):
    events = Recorder()
    llm.add(PLANNER, plan(), Reply.text("no idea"), plan(done=True, final_answer="Sign in first.",
                                                          outcome="login_required"))
    wall = act({"done": {"text": "sign-in wall", "success": False, "reason": "login_required"}})
    llm.add(NAVIGATOR, act({"click_element": {"index": 99}}), wall, wall)  # asked again after the bad plan
    result, _, _ = await run(pool, settings, task="My orders", start_url=site.url("agent/login.html"),
                             options={"planning_interval": 2}, _on_event=events)
    assert result.category == "login_required"
    trace = events.trace()
    assert ("navigator", "act.fail", 1) in trace and ("navigator", "step.fail", 1) in trace
    assert ("planner", "step.fail", 3) in trace  # the planner's unusable answer
    assert trace[-3:] == [("planner", "final_answer", 4), ("navigator", "step.fail", 4), ("system", "task.fail", 4)]
    assert events.events[-1].details == f"login_required: {result.error}"
    assert "element 99" in next(e.details for e in events.events if e.state.value == "act.fail")


async def test_a_cancelled_job_ends_with_task_cancel(pool, site, llm, settings):
    events = Recorder()
    llm.add(PLANNER, plan())
    llm.add(NAVIGATOR, act({"wait": {"seconds": 0}}))
    result, _, _ = await run(pool, settings, task="anything", start_url=site.url("agent/dropdown.html"),
                             _cancel=lambda: any(e.state.value == "act.ok" for e in events.events), _on_event=events)
    assert result.status == JobStatus.cancelled
    assert events.trace()[-2:] == [("navigator", "step.ok", 1), ("system", "task.cancel", 1)]  # before step 2


async def test_a_failing_listener_does_not_change_the_job(pool, site, llm, settings):
    async def broken(event):
        raise RuntimeError("listener bug")

    llm.add(PLANNER, plan(done=True, final_answer="42", web_task=False))
    result, _, _ = await run(pool, settings, task="What is 6 times 7?", _on_event=broken)
    assert result.status == JobStatus.succeeded and result.final_answer == "42"


async def test_a_script_reports_its_steps_as_the_system(pool, site):
    events = Recorder()
    spec = JobSpec(start_url=site.url("agent/catalog.html"),
                   script=[{"scroll_to_bottom": {}}, {"done": {"text": "read"}}])
    async with pool.lease() as lease:
        result = await run_job(spec, lease, records=LocalRecords(on_event=events))
    assert result.status == JobStatus.succeeded
    assert events.trace() == [
        ("system", "task.start", 0),
        ("system", "step.start", 1), ("system", "act.start", 1), ("system", "act.ok", 1), ("system", "step.ok", 1),
        ("system", "step.start", 2), ("system", "act.start", 2), ("system", "act.ok", 2), ("system", "step.ok", 2),
        ("system", "task.ok", 2),
    ]
    assert events.events[0].details == "script of 2 actions" and events.events[0].max_steps == 2
