"""Real OpenAI-compatible servers (issue 24): message shapes every common server takes, each output
method, max_tokens and cut answers, the step limit, and every served call counted.

The stand-in runs in strict mode (its default): it refuses what llama.cpp's server refuses (a null
content beside tool calls, a non-string assistant turn) and top-level fields OpenAI's API does not
have, so a job that passes here sends nothing those servers reject.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from pydantic import ValidationError

from langchain_core.messages import HumanMessage, SystemMessage

from config import load_settings
from tests.agent.scripted import EXTRACTOR, NAVIGATOR, PLANNER, act, plan, run
from tests.support.jobs import llms_of
from tests.support.llm_server import Reply, offered_tool
from workers.agent import RetryPolicy
from workers.agent.allowance import LlmAllowance, use_allowance
from workers.agent.errors import LLMBudgetSpent
from workers.agent.executor import CUT_BY_THE_JOB
from workers.agent.llm import ToolSpec, call_structured
from workers.jobs.errors import SpecError
from workers.jobs.model.spec import AgentOptions, JobSpec, ModelParams
from workers.jobs.specs.checks import check_spec
from workers.jobs.model.status import FailureCategory, JobStatus

METHODS = ("tools", "json_schema", "json_object", "text")
TOOL = ToolSpec("Answer", "an answer", {"type": "object", "properties": {"n": {"type": "integer"}}})


def settings_for(llm, **extra):
    return load_settings(llm_base_url=llm.base_url, openai_api_key="test-key", max_steps=6, job_timeout=120,
                         **extra)


async def wait_for(condition) -> None:
    """Until ``condition()`` holds (the stand-in's threads notice a closed connection on their own)."""
    for _ in range(200):
        if condition():
            return
        await asyncio.sleep(0.05)


def test_strict_stand_in_refuses_what_llama_cpp_refuses(llm):
    """The stand-in's strict mode: null content beside tool calls (what langchain-openai sent for the
    example answer), a list as an assistant turn's content, an unknown top-level field."""
    url = f"{llm.base_url}/chat/completions"
    call = {"id": "1", "type": "function", "function": {"name": "AgentOutput", "arguments": "{}"}}
    bodies = [
        {"model": "m", "messages": [{"role": "user", "content": "hi"},
                                    {"role": "assistant", "content": None, "tool_calls": [call]}]},
        {"model": "m", "messages": [{"role": "assistant", "content": [{"type": "text", "text": "x"}]}]},
        {"model": "m", "messages": [{"role": "user", "content": "hi"}], "grammar": "root ::= x"},
    ]
    statuses = [httpx.post(url, json=body).status_code for body in bodies]
    assert statuses == [400, 400, 400]
    assert "null beside tool_calls" in llm.refused[0]
    assert "assistant turn" in llm.refused[1] and "grammar" in llm.refused[2]


@pytest.mark.parametrize("method", METHODS)
async def test_every_output_method_runs_a_job_against_the_strict_stand_in(pool, site, llm, method):
    settings = settings_for(llm, navigator_output=method, planner_output=method)
    llm.add(PLANNER, plan(), plan(done=True, final_answer="Steel Kettle 1.7l"))
    llm.add(NAVIGATOR, act({"scroll_down": {}}), act({"done": {"text": "Steel Kettle 1.7l"}}))
    result, _, _ = await run(pool, settings, task="Name the first product listed", start_url=site.url("agent/catalog.html"))
    assert result.status == JobStatus.succeeded, result.error
    assert result.final_answer == "Steel Kettle 1.7l" and llm.refused == []
    for request in llm.requests:
        assert all(isinstance(m["content"], (str, list)) and "tool_calls" not in m for m in request["messages"])
        assert request["max_tokens"] == 2048 and "max_completion_tokens" not in request
        assert ("tools" in request) == (method == "tools")
        kind = (request.get("response_format") or {}).get("type")
        assert kind == {"tools": None, "text": None}.get(method, method)
        if method in ("json_object", "text"):
            assert '"AgentOutput" answer' in request["messages"][0]["content"] or \
                '"PlannerOutput" answer' in request["messages"][0]["content"]
    last = llm.requests_for(PLANNER)[-1]["messages"]
    answers = [m["content"] for m in last if m["role"] == "assistant" and not m["content"].startswith("<plan>")]
    assert '"done"' in answers[-1]  # the navigator's past answer: an assistant text turn with its JSON


async def test_max_tokens_per_role_from_settings_and_job(pool, site, llm):
    settings = settings_for(llm, navigator_max_tokens=300, planner_max_tokens=700)
    options = {"model_params": {"planner": {"max_tokens": 500}, "navigator": {"max_tokens": 5000}}}
    llm.add(PLANNER, plan(), plan(done=True, final_answer="ok"))
    llm.add(NAVIGATOR, act({"done": {"text": "ok"}}))
    result, _, _ = await run(pool, settings, task="Look", start_url=site.url("agent/catalog.html"), options=options)
    assert result.status == JobStatus.succeeded, result.error
    assert {r["max_tokens"] for r in llm.requests_for(PLANNER)} == {500}  # a job may lower its cap
    assert llm.requests_for(NAVIGATOR)[0]["max_tokens"] == 300  # but not raise it past the operator's


@pytest.mark.parametrize(("params", "field"), [({"max_tokens": 0}, "max_tokens"), ({"max_tokens": "a"}, "max_tokens"),
                                               ({"output": "xml"}, "output"), ({"output": 1}, "output")])
def test_job_output_settings_are_validated(params, field):
    with pytest.raises(ValidationError, match=field):
        ModelParams(**params)
    with pytest.raises(ValidationError, match=f"model_params.navigator.{field}"):
        AgentOptions(model_params={"navigator": params})


CUT = '{"current_state": {"evaluation_previous_goal": "Success - the page is op'


@pytest.mark.parametrize(("finish", "method"), [("length", "tools"), ("tool_calls", "tools"),
                                               ("length", "json_schema"), ("length", "json_object"),
                                               ("length", "text"), ("stop", "text")])
async def test_answers_cut_at_max_tokens_say_so(pool, site, llm, finish, method):
    """finish_reason "length" with every method, or (llama.cpp) "tool_calls"/"stop" with broken JSON
    as long as the cap."""
    settings = settings_for(llm, navigator_max_tokens=64, navigator_output=method)
    llm.add(PLANNER, plan())
    llm.add(NAVIGATOR, *[Reply.tool(CUT, usage=(100, 64), finish=finish) for _ in range(3)])
    result, _, _ = await run(pool, settings, task="Name the first product listed", start_url=site.url("agent/catalog.html"),
                             options={"max_failures": 3})
    assert result.status == JobStatus.failed
    assert result.category == FailureCategory.llm_truncated
    assert "answer was cut at max_tokens (64)" in result.error
    told = llm.requests_for(NAVIGATOR)[-1]["messages"][-1]["content"]
    assert "cut at max_tokens (64)" in told  # the model read why its answer was refused
    assert result.totals.llm_calls == llm.served.calls == 4  # the cut answers were paid for


async def test_a_hung_model_fails_its_step_and_max_failures_counts_it(pool, site, llm):
    """The step limit fires (it used to end the whole job as ``timeout`` with the job's limit), the
    steps are recorded, and the abandoned requests are closed: the server sees each client leave."""
    settings = settings_for(llm, step_timeout=2, llm_timeout=60)
    llm.add(PLANNER, plan(), plan())
    llm.add(NAVIGATOR, Reply.hang(60), Reply.hang(60))
    result, _, _ = await run(pool, settings, task="Name the first product listed", start_url=site.url("agent/catalog.html"),
                             options={"max_failures": 2, "planning_interval": 1})
    assert result.status == JobStatus.failed, result
    assert result.category == FailureCategory.llm_timeout
    assert "2 consecutive failures" in result.error
    assert "navigator model 'gpt-4o-mini' gave no answer within the step's limit of 2s" in result.error
    assert [bool(s.error) for s in result.steps] == [True, True]
    second = llm.requests_for(NAVIGATOR)[1]["messages"]
    assert sum("[Current state starts here]" in m["content"] for m in second) == 1  # the cut step's state went
    assert result.totals.llm_calls == 2 == llm.served.calls  # the two plans; the hung calls served nothing
    await wait_for(lambda: llm.disconnects == 2)
    assert llm.disconnects == 2


async def test_a_call_past_its_timeout_is_closed_and_retried(llm):
    """BROWSERD_LLM_TIMEOUT: the client gives up on the call and closes its connection (the server
    sees it leave, so it can stop generating), then retries."""
    settings = settings_for(llm, llm_timeout=0.5)
    llm.add("Answer", Reply.hang(30), Reply.tool({"n": 1}))
    reply = await call_structured(llms_of(settings).navigator, [SystemMessage("s"), HumanMessage("q")], TOOL,
                                  role="navigator", retry=RetryPolicy(attempts=2, base_delay=0.01))
    assert (reply.data, reply.attempts) == ({"n": 1}, 2)
    await wait_for(lambda: llm.disconnects == 1)
    assert llm.disconnects == 1


async def test_retries_stop_at_the_steps_deadline(pool, site, llm):
    """A retry that the step's limit would cut is not started: the step fails as llm_timeout at once."""
    settings = settings_for(llm, step_timeout=3)
    llm.add(PLANNER, Reply.error(503, "overloaded", retry_after=10))
    result, _, _ = await run(pool, settings, task="Name the first product listed", start_url=site.url("agent/catalog.html"),
                             options={"max_failures": 1})
    assert result.category == FailureCategory.llm_timeout, result.error
    assert "planner model" in result.error and "within the step's limit of 3s" in result.error
    assert "HTTP 503" in result.error and len(llm.requests) == 1


async def test_a_model_that_keeps_failing_ends_the_job_llm_error_saying_so(pool, site, llm):
    """5xx after every retry: the job ends at once, ``llm_error``, its message naming the model, the
    server's status and how many attempts were made; the step is kept."""
    settings = settings_for(llm)
    llm.add(PLANNER, *[Reply.error(503, "overloaded") for _ in range(4)])
    result, _, _ = await run(pool, settings, task="Name the first product listed",
                             start_url=site.url("agent/catalog.html"))
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.llm_error), result.error
    assert result.error == "planner model 'gpt-4o-mini' (HTTP 503): overloaded (no answer after 4 attempts)"
    assert len(llm.requests) == 4 and [s.error for s in result.steps] == [result.error]


async def test_every_served_call_is_counted_usable_or_not(pool, site, llm):
    settings = settings_for(llm)
    llm.add(PLANNER, plan(), plan(done=True, final_answer="Steel Kettle 1.7l"))
    llm.add(NAVIGATOR, Reply.text("I will scroll now.", usage=(900, 11)),
            Reply.text('{"current_state": ', usage=(950, 13)),
            act({"done": {"text": "Steel Kettle 1.7l"}}))
    result, _, _ = await run(pool, settings, task="Name the first product listed", start_url=site.url("agent/catalog.html"),
                             options={"max_failures": 3})
    assert result.status == JobStatus.succeeded, result.error
    served = llm.served
    assert served.calls == 5
    assert (result.totals.llm_calls, result.totals.input_tokens, result.totals.output_tokens) == (
        served.calls, served.prompt_tokens, served.completion_tokens)


async def test_a_step_the_jobs_time_limit_cuts_is_kept_with_its_calls(pool, site, llm):
    """The job's own limit stops a step whose plan was served and whose navigator hangs: the job
    ends ``timeout`` naming its own limit, and the step is kept with the plan's tokens (they were
    served and are paid for; the totals used to count the call and drop its tokens)."""
    settings = settings_for(llm, step_timeout=60, llm_timeout=60)
    costly = plan()
    costly.usage = (700, 30)
    llm.add(PLANNER, costly)
    llm.add(NAVIGATOR, Reply.hang(60))
    result, _, _ = await run(pool, settings, task="Name the first product listed",
                             start_url=site.url("agent/catalog.html"), timeout=4)
    assert (result.status, result.category, result.error) == (JobStatus.failed, FailureCategory.timeout,
                                                              "job timed out after 4s")
    assert [s.error for s in result.steps] == [CUT_BY_THE_JOB]
    served = llm.served
    assert (result.totals.llm_calls, result.totals.input_tokens, result.totals.output_tokens) == (
        served.calls, served.prompt_tokens, served.completion_tokens) == (1, 700, 30)
    await wait_for(lambda: llm.disconnects == 1)
    assert llm.disconnects == 1  # the hung navigator call was closed


async def test_an_extraction_the_step_limit_cuts_is_charged_for_the_part_served(pool, site, llm):
    """A long page is read in two extractor calls; the step's limit stops the second: the step
    fails ``llm_timeout`` and carries the first call's tokens (they were pending in the action)."""
    settings = settings_for(llm, step_timeout=12, llm_timeout=60)
    llm.add(PLANNER, plan())
    llm.add(NAVIGATOR, act({"extract_content": {"goal": "every part"}}))
    llm.add(EXTRACTOR, Reply.tool({"content": "parts SKU-10000 to SKU-10599"}, usage=(20_000, 40)), Reply.hang(60))
    result, _, _ = await run(pool, settings, task="List every part", start_url=site.url("agent/long.html"),
                             options={"max_failures": 1})
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.llm_timeout), result.error
    assert "the extractor model" in result.error and "step's limit of 12s" in result.error
    served = llm.served
    assert served.calls == 3 and len(llm.requests_for(EXTRACTOR)) == 2
    assert (result.totals.llm_calls, result.totals.input_tokens, result.totals.output_tokens) == (
        served.calls, served.prompt_tokens, served.completion_tokens)
    assert result.steps[0].input_tokens == served.prompt_tokens


async def test_the_jobs_llm_time_budget_stops_the_call_under_way_and_closes_it(llm):
    """max_llm_seconds: the call still waiting when the job's seconds run out is cancelled, its
    connection closed (the server sees the client leave, so it can stop generating), and no retry starts."""
    llm.add("Answer", Reply.tool({"n": 1}, delay=0.3, usage=(500, 20)), Reply.hang(30), Reply.tool({"n": 2}))
    model = llms_of(settings_for(llm)).navigator
    budget = LlmAllowance(max_seconds=1.5, seconds_from="options.max_llm_seconds")
    with use_allowance(budget):
        first = await call_structured(model, [SystemMessage("s"), HumanMessage("q")], TOOL, role="navigator")
        assert first.data == {"n": 1}
        with pytest.raises(LLMBudgetSpent, match=r"LLM time budget is spent: .* of 1.5s \(options.max_llm_seconds\); "
                                                 r"the navigator call was stopped waiting for its answer"):
            await call_structured(model, [SystemMessage("s"), HumanMessage("q")], TOOL, role="navigator",
                                  retry=RetryPolicy(attempts=3, base_delay=0.01))
    await wait_for(lambda: llm.disconnects == 1)
    assert llm.disconnects == 1 and len(llm.requests) == 2  # the hung call closed, no retry sent
    assert budget.tokens == 520


async def test_the_jobs_token_budget_refuses_the_next_call(llm):
    """max_tokens_total counts every served call's tokens, in and out; once spent no call starts."""
    llm.add("Answer", Reply.tool({"n": 1}, usage=(900, 150)), Reply.tool({"n": 2}))
    model = llms_of(settings_for(llm)).navigator
    with use_allowance(LlmAllowance(max_tokens=1000)):
        await call_structured(model, [SystemMessage("s"), HumanMessage("q")], TOOL, role="planner")
        with pytest.raises(LLMBudgetSpent, match=r"token budget is spent: 1050 tokens used of 1000 "
                                                 r"\(BROWSERD_MAX_TOKENS_TOTAL\); the planner call was not made"):
            await call_structured(model, [SystemMessage("s"), HumanMessage("q")], TOOL, role="planner")
    assert len(llm.requests) == 1


async def test_a_job_past_its_token_budget_ends_llm_budget_with_its_steps(pool, site, llm):
    """The job's option (below the setting) ends it at once, category llm_budget, every call counted."""
    settings = settings_for(llm, max_tokens_total=50_000)
    def costly(request):
        reply = plan() if offered_tool(request) == PLANNER else act({"next_page": {"intent": "look"}})
        reply.usage = (2000, 100)
        return reply

    llm.responder = costly
    result, _, _ = await run(pool, settings, task="Name the first product listed",
                             start_url=site.url("agent/catalog.html"), options={"max_tokens_total": 5000})
    assert result.status == JobStatus.failed
    assert result.category == FailureCategory.llm_budget
    assert "token budget is spent: 6300 tokens used of 5000 (options.max_tokens_total)" in result.error, result.error
    assert result.totals.llm_calls == llm.served.calls == 3
    assert result.totals.input_tokens + result.totals.output_tokens == 6300


def test_a_jobs_llm_budget_above_the_operators_is_refused():
    settings = load_settings(max_tokens_total=100_000, max_llm_seconds=60)
    for options, field in (({"max_tokens_total": 200_000}, "options.max_tokens_total"),
                           ({"max_llm_seconds": 61}, "options.max_llm_seconds")):
        with pytest.raises(SpecError, match="BROWSERD_MAX") as caught:
            check_spec(JobSpec(task="t", options=options), settings)
        assert caught.value.problems[0].field == field
    for bad in ({"max_tokens_total": 10}, {"max_llm_seconds": 0}, {"max_tokens_total": "lots"}):
        with pytest.raises(ValidationError):
            AgentOptions(**bad)
    spec = check_spec(JobSpec(task="t", options={"max_tokens_total": 5000, "max_llm_seconds": 30}), settings)
    assert (spec.options.max_tokens_total, spec.options.max_llm_seconds) == (5000, 30)
