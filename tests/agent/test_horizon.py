"""The rolling-horizon strategy on fixture pages: plans of a few actions, replanning at the end of
the horizon, on a failed step and when the page changes under the plan; same outcomes and events."""

from __future__ import annotations

from tests.agent.scripted import last_state, run
from tests.support.llm_server import Reply
from workers.jobs.model.status import FailureCategory, JobStatus

HORIZON = "HorizonPlan"
OPTIONS = {"strategy": "rolling_horizon", "horizon": 3}


def horizon(*steps, done=False, final_answer="", outcome="complete") -> Reply:
    return Reply.tool({"observation": "scripted", "done": done, "final_answer": final_answer, "outcome": outcome,
                       "steps": list(steps)})


def reasons(llm) -> list[str]:
    return [line.removeprefix("Replanning: ") for r in llm.requests_for(HORIZON)
            for line in last_state(r).splitlines() if line.startswith("Replanning: ")]


async def test_a_two_page_form_in_horizons_of_three(pool, site, llm, settings):
    llm.add(HORIZON,
            horizon({"input_text": {"index": 1, "text": "Ada"}}, {"input_text": {"index": 2, "text": "Lovelace"}},
                    {"click_element": {"intent": "next page", "index": 3}}),
            horizon({"input_text": {"index": 1, "text": "ada@example.com"}},
                    {"select_dropdown_option": {"index": 2, "text": "Pro (10 EUR)"}}, {"click_element": {"index": 3}},
                    {"click_element": {"index": 4}}),  # one more than the horizon: cut
            horizon({"click_element": {"index": 4}}, {"done": {"text": "Signed up."}}),
            horizon(done=True, final_answer="Signed up Ada Lovelace on the Pro plan."))
    events = []

    async def on_event(event):
        events.append(event)

    result, text, url = await run(pool, settings, task="Sign up as Ada Lovelace, ada@example.com, Pro plan",
                                  start_url=site.url("agent/form1.html"), options=OPTIONS, _on_event=on_event)
    assert result.status == JobStatus.succeeded, result.error
    trace = [(e.actor.value, e.state.value, e.step) for e in events]
    assert trace[:8] == [("system", "task.start", 0), ("navigator", "step.start", 1), ("planner", "step.start", 1),
                         ("planner", "step.ok", 1), ("planner", "next_steps", 1), ("navigator", "act.start", 1),
                         ("navigator", "act.ok", 1), ("navigator", "step.ok", 1)]
    assert '"click_element": {"intent": "next page", "index": 3}' in events[4].details
    assert trace[-3:] == [("planner", "final_answer", 8), ("navigator", "step.ok", 8), ("system", "task.ok", 8)]
    assert result.final_answer == "Signed up Ada Lovelace on the Pro plan."
    assert "form-done.html" in url and "accepted" in text
    assert [[a.name for a in s.actions] for s in result.steps] == [
        ["input_text"], ["input_text"], ["click_element"], ["input_text"], ["select_dropdown_option"],
        ["click_element"], ["click_element"], []]  # the submit opened another page: done was not run
    assert reasons(llm) == ["the task starts", "the plan's actions have all run", "the plan's actions have all run",
                            "the page changed under the plan"]
    assert result.totals.llm_calls == 4 and llm.requests_for("AgentOutput") == []
    assert result.steps[0].plan["steps"][2] == {"click_element": {"intent": "next page", "index": 3}}


async def test_a_failed_step_and_a_changed_page_cut_the_plan(pool, site, llm, settings):
    llm.add(HORIZON,
            horizon({"click_element": {"index": 99}}, {"input_text": {"index": 1, "text": "never typed"}}),
            horizon({"input_text": {"index": 1, "text": "Ada"}}, {"input_text": {"index": 2, "text": "L"}}),
            horizon({"click_element": {"index": 3}}, {"input_text": {"index": 1, "text": "never typed either"}}),
            horizon(done=True, final_answer="on page 2", outcome="incomplete"))
    result, _, url = await run(pool, settings, task="Go to page 2", start_url=site.url("agent/form1.html"),
                               options=OPTIONS)
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.incomplete)
    assert url.endswith("form2.html?first=Ada&last=L")
    assert reasons(llm) == ["the task starts", "an action failed", "the plan's actions have all run",
                            "the page changed under the plan"]
    assert [[(a.name, a.ok) for a in s.actions] for s in result.steps] == [
        [("click_element", False)], [("input_text", True)], [("input_text", True)], [("click_element", True)], []]
    assert "element 99 no longer exists" in last_state(llm.requests_for(HORIZON)[1])


async def test_an_unusable_plan_counts_as_a_failure(pool, site, llm, settings):
    llm.add(HORIZON, horizon(), horizon({"fly": {}}))
    result, _, _ = await run(pool, settings, task="anything", start_url=site.url("agent/form1.html"),
                             options={**OPTIONS, "max_failures": 2})
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.max_failures)
    assert [s.error.split(":")[0] for s in result.steps] == ["the plan has no steps and the task is not done",
                                                             "invalid plan"]
