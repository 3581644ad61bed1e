"""The agent loop end to end: real ChatOpenAI client → scripted endpoint, real Chromium, fixture sites."""

from __future__ import annotations

import threading
import time
from urllib.parse import quote

from tests.agent.scripted import EXTRACTOR, NAVIGATOR, PLANNER, act, last_state, plan, run
from tests.support.llm_server import Reply
from workers.jobs.model.status import FailureCategory, JobStatus


async def test_multi_page_form(pool, site, llm, settings):
    llm.add(PLANNER, plan(), plan(done=True, final_answer="Signed up Ada Lovelace on the Pro plan."))
    llm.add(NAVIGATOR,
            act({"input_text": {"intent": "first name", "index": 1, "text": "Ada"}},
                {"input_text": {"intent": "last name", "index": 2, "text": "Lovelace"}},
                {"click_element": {"intent": "next page", "index": 3}},
                {"input_text": {"intent": "must not run: the page changed", "index": 1, "text": "oops"}}),
            act({"input_text": {"index": 1, "text": "ada@example.com"}},
                {"select_dropdown_option": {"index": 2, "text": "Pro (10 EUR)"}},
                {"click_element": {"index": 3}},
                {"click_element": {"index": 4}}),
            act({"done": {"text": "Signed up.", "success": True}}))
    result, text, url = await run(pool, settings, task="Sign up as Ada Lovelace, ada@example.com, Pro plan",
                                  start_url=site.url("agent/form1.html"))
    assert result.status == JobStatus.succeeded, result.error
    assert result.final_answer == "Signed up Ada Lovelace on the Pro plan."
    assert "form-done.html" in url
    for expected in ("Ada Lovelace", "ada@example.com", "pro", "accepted"):
        assert expected in text
    first, second = result.steps[0], result.steps[1]
    assert [a.name for a in first.actions] == ["input_text", "input_text", "click_element"]
    assert first.actions[2].result == "clicked [3] 'Next'"
    assert first.plan["done"] is False and first.input_tokens == 200 and first.llm_seconds > 0
    assert all(a.ok for a in second.actions) and second.url.endswith(("form2.html?first=Ada&last=Lovelace"))
    nav = llm.requests_for(NAVIGATOR)
    assert "the remaining 1 actions were not run" in last_state(nav[1])
    assert "Action result 3/4: clicked [3] 'Next'" in last_state(nav[1])
    assert "selected 'Pro (10 EUR)'" in last_state(nav[2])
    assert len(result.steps) == 4 and result.steps[3].actions == [] and result.steps[3].plan["done"] is True
    assert result.totals.llm_calls == 5 and result.totals.input_tokens == 500


async def test_search_and_open_result_across_two_tabs(pool, site, llm, settings):
    llm.add(PLANNER, plan(), plan(), plan(done=True, final_answer="The Red Toaster costs 24.50 EUR."))
    llm.add(NAVIGATOR,
            act({"input_text": {"index": 1, "text": "toaster"}}, {"send_keys": {"keys": "Enter"}}),
            act({"click_element": {"intent": "open the toaster", "index": 1}}),
            act({"switch_tab": {"tab_id": 0}}),
            act({"switch_tab": {"tab_id": 1}}, {"done": {"text": "not run: the tab changed"}}),
            act({"done": {"text": "24.50 EUR"}}))
    result, text, url = await run(pool, settings, task="Find the price of the red toaster",
                                  start_url=site.url("agent/search.html"))
    assert result.status == JobStatus.succeeded, result.error
    assert result.final_answer == "The Red Toaster costs 24.50 EUR."
    assert "product.html?p=toaster" in url and "Red Toaster 2-slot" in text
    nav = [last_state(r) for r in llm.requests_for(NAVIGATOR)]
    assert "results.html?q=toaster" in nav[1] and "Red Toaster 2-slot" in nav[1]
    assert "opened tab 1" in nav[2] and "Current tab: {id: 1, url: " + site.url("agent/product.html?p=toaster") in nav[2]
    assert "- {id: 0, url: " + site.url("agent/results.html?q=toaster") in nav[2]
    assert "Current tab: {id: 0," in nav[3] and "- {id: 1," in nav[3]
    assert "the current tab changed after action 1/2" in nav[4]


async def test_dropdown(pool, site, llm, settings):
    llm.add(PLANNER, plan(), plan(done=True, final_answer="France chosen"))
    llm.add(NAVIGATOR,
            act({"get_dropdown_options": {"index": 1}}),
            act({"select_dropdown_option": {"index": 1, "text": "France"}}),
            act({"done": {"text": "ok"}}))
    result, text, _ = await run(pool, settings, task="Ship to France", start_url=site.url("agent/dropdown.html"))
    assert result.status == JobStatus.succeeded, result.error
    assert "Ships to FR" in text
    second = last_state(llm.requests_for(NAVIGATOR)[1])
    assert "0: text='Select a country'\n1: text='Germany'\n2: text='France'" in second


async def test_extraction_into_the_output_schema(pool, site, llm, settings):
    schema = {"type": "object", "required": ["items"], "properties": {"items": {"type": "array", "items": {
        "type": "object", "required": ["name", "price"],
        "properties": {"name": {"type": "string"}, "price": {"type": "number"}}}}}}
    items = [{"name": "Steel Kettle 1.7l", "price": 39.9}, {"name": "Red Toaster 2-slot", "price": 24.5},
             {"name": "Coffee Grinder Pro", "price": 79.0}]
    llm.add(PLANNER, plan(), plan(done=True, final_answer="3 products"))
    llm.add(NAVIGATOR, act({"extract_content": {"goal": "every product with its price"}}), act({"done": {"text": "x"}}))
    llm.add(EXTRACTOR, Reply.tool({"items": items}))
    result, _, _ = await run(pool, settings, task="List the products and prices", output_schema=schema,
                             start_url=site.url("agent/catalog.html"))
    assert result.status == JobStatus.succeeded, result.error
    assert result.data == {"items": items}
    request = llm.requests_for(EXTRACTOR)[0]
    assert request["tools"][0]["function"]["parameters"] == schema
    page = request["messages"][-1]["content"]
    assert "untrusted_content_" in page and "Coffee Grinder Pro" in page and "Prices include VAT" in page
    assert result.steps[0].input_tokens == 300  # planner + navigator + extractor


async def test_extracted_data_must_match_the_schema(pool, site, llm, settings):
    schema = {"type": "object", "required": ["price"], "properties": {"price": {"type": "number"}}}
    llm.add(PLANNER, plan(), plan(done=True, final_answer="done"))
    llm.add(NAVIGATOR, act({"extract_content": {"goal": "price"}}), act({"done": {"text": "x"}}))
    llm.add(EXTRACTOR, Reply.tool({"price": "cheap"}))
    result, _, _ = await run(pool, settings, task="price?", output_schema=schema, start_url=site.url("agent/catalog.html"))
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.invalid_output)
    assert "$.price: expected number, got string" in result.error


async def test_the_planner_confirms_done_not_the_navigator(pool, site, llm, settings):
    llm.add(PLANNER, plan(),
            plan(done=False, next_steps="The item is not in the cart yet: click Add to cart."),
            plan(done=True, final_answer="The kettle is in the cart."))
    llm.add(NAVIGATOR,
            act({"done": {"text": "Found the kettle."}}),
            act({"click_element": {"index": 1}}),
            act({"done": {"text": "Added."}}))
    result, text, _ = await run(pool, settings, task="Put the kettle in the cart",
                                start_url=site.url("agent/product.html?p=kettle"))
    assert result.status == JobStatus.succeeded, result.error
    assert result.final_answer == "The kettle is in the cart."
    assert "In cart: 1" in text
    assert [s.plan["done"] if s.plan else None for s in result.steps] == [False, False, None, True]
    second = llm.requests_for(NAVIGATOR)[1]
    plans = [m["content"] for m in second["messages"] if m["role"] == "assistant" and "<plan>" in (m["content"] or "")]
    assert "click Add to cart" in plans[-1]


async def test_the_sequence_stops_when_new_elements_appear(pool, site, llm, settings):
    llm.add(PLANNER, plan(), plan(done=True, final_answer="ok"))
    llm.add(NAVIGATOR,
            act({"click_element": {"index": 1}}, {"input_text": {"index": 2, "text": "me@example.com"}}),
            act({"done": {"text": "ok"}}))
    result, _, _ = await run(pool, settings, task="subscribe", start_url=site.url("agent/reveal.html"))
    assert result.status == JobStatus.succeeded, result.error
    assert [a.name for a in result.steps[0].actions] == ["click_element"]
    assert "new elements appeared after action 1/2" in last_state(llm.requests_for(NAVIGATOR)[1])


# --- failure paths ---------------------------------------------------------------------------

async def test_garbage_replies_until_max_failures(pool, site, llm, settings):
    llm.add(PLANNER, plan())
    llm.add(NAVIGATOR, Reply.text("I will click the button now."), Reply.tool({"current_state": {}}),
            Reply.tool({"action": [{"fly_away": {}}]}))
    result, _, _ = await run(pool, settings, task="anything", start_url=site.url("agent/dropdown.html"))
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.max_failures)
    assert [s.error.split(":")[0] for s in result.steps] == [
        "the answer holds no JSON object", "the answer has no 'action' list", "invalid action"]
    assert "unknown action 'fly_away'" in result.error
    assert "Invalid model output" in last_state(llm.requests_for(NAVIGATOR)[1])


async def test_401_ends_the_job_at_once(pool, site, llm, settings):
    llm.add(None, Reply.error(401, "Incorrect API key provided"))
    result, _, _ = await run(pool, settings, task="anything", start_url=site.url("agent/dropdown.html"))
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.llm_auth)
    assert "Incorrect API key provided" in result.error and "HTTP 401" in result.error
    assert len(llm.requests) == 1 and len(result.steps) == 1


async def test_rate_limit_then_success(pool, site, llm, settings):
    llm.add(PLANNER, Reply.error(429, "rate limited", retry_after=0), plan(), plan(done=True, final_answer="ok"))
    llm.add(NAVIGATOR, Reply.error(503, retry_after=0), act({"done": {"text": "ok"}}))
    result, _, _ = await run(pool, settings, task="anything", start_url=site.url("agent/dropdown.html"))
    assert result.status == JobStatus.succeeded, result.error
    assert len(llm.requests) == 5 and result.totals.llm_calls == 3


async def test_max_steps(pool, site, llm, settings):
    llm.add(PLANNER, plan())
    llm.responder = lambda request: act({"wait": {"seconds": 0}})
    result, _, _ = await run(pool, settings, task="wait forever", start_url=site.url("agent/dropdown.html"),
                             options={"max_steps": 2})
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.max_steps)
    assert len(result.steps) == 2 and all(s.actions[0].ok for s in result.steps)


async def test_a_link_to_a_denied_domain_ends_the_job(pool, site, denied_site, llm, settings):
    target = quote(denied_site.url("agent/secret.html"), safe="")
    llm.add(PLANNER, plan())
    llm.add(NAVIGATOR, act({"click_element": {"intent": "read the secret", "index": 1}}))
    result, _, _ = await run(pool, settings, task="read the secret", denied_domains=["localhost"],
                             start_url=site.url(f"agent/firewall.html?fetch=1&target={target}"))
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.url_blocked)
    assert result.error == (f"blocked: {denied_site.url('agent/secret.html')}: domain not allowed: localhost is on "
                            "the job's denied_domains (localhost); open it by dropping --deny localhost (job field "
                            "denied_domains)")
    assert result.steps[0].actions[0].error == result.error
    assert denied_site.paths == []


async def test_cancel_during_the_llm_call(pool, site, llm, settings):
    asked = threading.Event()

    def slow_navigator(request):
        asked.set()
        return act({"wait": {"seconds": 0}}, delay=60)

    llm.add(PLANNER, plan())
    llm.responder = slow_navigator
    result, _, _ = await run(pool, settings, task="anything", start_url=site.url("agent/dropdown.html"),
                             _cancel=asked.is_set)
    assert result.status == JobStatus.cancelled
    assert result.category is None and "navigator call" in result.error
    assert result.steps[0].error == result.error


async def test_cancel_between_actions(pool, site, llm, settings):
    answered: list[float] = []

    def navigator(request):
        answered.append(time.monotonic())
        return act({"scroll_to_bottom": {}}, {"wait": {"seconds": 30}}, {"scroll_to_top": {}})

    llm.add(PLANNER, plan())
    llm.responder = navigator
    result, _, _ = await run(pool, settings, task="anything", start_url=site.url("agent/catalog.html"),
                             _cancel=lambda: bool(answered) and time.monotonic() > answered[0] + 1.0)
    assert result.status == JobStatus.cancelled
    actions = result.steps[0].actions
    assert [(a.name, a.ok) for a in actions] == [("scroll_to_bottom", True), ("wait", False)]
    assert actions[1].error == "cancelled while waiting"
    assert len(answered) == 1


async def test_job_timeout(pool, site, llm, settings):
    llm.add(PLANNER, plan())
    llm.add(NAVIGATOR, act({"wait": {"seconds": 0}}, delay=30))
    result, _, _ = await run(pool, settings, task="anything", start_url=site.url("agent/dropdown.html"), timeout=2)
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.timeout)
    assert result.error == "job timed out after 2s"


async def test_actions_in_a_cross_origin_iframe(pool, site, denied_site, llm, settings):
    inner = quote(denied_site.url("agent/inner.html"), safe="")  # localhost: another site, its own process
    llm.add(PLANNER, plan(), plan(done=True, final_answer="subscribed"))
    seen: list[str] = []

    def navigator(request):
        state = last_state(request)
        seen.append(state)
        if len(seen) == 1:
            return act({"wait": {"seconds": 0.5}})  # let the frame load
        if len(seen) == 2:
            idx = {name: int(line.split("]")[0].split("[")[-1]) for line in state.splitlines()
                   for name in ("<input", "<select", "<button") if name in line}
            return act({"input_text": {"index": idx["<input"], "text": "ada@example.com"}},
                       {"select_dropdown_option": {"index": idx["<select"], "text": "Weekly"}},
                       {"click_element": {"index": idx["<button"]}})
        return act({"done": {"text": "ok"}})

    llm.responder = navigator
    result, text, _ = await run(pool, settings, task="subscribe", start_url=site.url(f"agent/outer.html?inner={inner}"))
    assert result.status == JobStatus.succeeded, result.error
    assert "received: ada@example.com Weekly" in text
    assert all(a.ok for s in result.steps for a in s.actions)


async def test_each_step_carries_the_navigators_evaluation_memory_and_goal(pool, site, llm, settings):
    llm.add(PLANNER, plan(), plan(done=True, final_answer="Signed up."))
    llm.add(NAVIGATOR,
            act({"input_text": {"index": 1, "text": "Ada"}}, evaluation="Unknown - the task starts",
                memory="0 of 2 names typed", goal="type the first name"),
            act({"done": {"text": "Signed up."}}, evaluation="Success - the name is in",
                memory="1 of 2 names typed", goal="finish"))
    result, _, _ = await run(pool, settings, task="Type Ada", start_url=site.url("agent/form1.html"))
    assert result.status == JobStatus.succeeded, result.error
    brains = [s.brain.model_dump() if s.brain else None for s in result.steps]
    assert brains == [
        {"evaluation_previous_goal": "Unknown - the task starts", "memory": "0 of 2 names typed",
         "next_goal": "type the first name"},
        {"evaluation_previous_goal": "Success - the name is in", "memory": "1 of 2 names typed",
         "next_goal": "finish"},
        None,  # the planner's confirmation step: the navigator was not asked
    ]


async def test_a_secret_in_the_navigators_memory_is_hidden(pool, site, llm, settings):
    password = "hunter2-brain-secret"
    llm.add(PLANNER, plan(), plan(done=True, final_answer="ok"))
    llm.add(NAVIGATOR,
            act({"input_text": {"index": 1, "text": "<secret>pw</secret>"}}, memory=f"the password is {password}",
                evaluation=f"typed {password}?", goal=f"check that {password} was accepted"),
            act({"done": {"text": "ok"}}))
    seen = []

    async def on_event(event):
        seen.append(event)

    result, _, _ = await run(pool, settings, task="Type the password", start_url=site.url("agent/form1.html"),
                             secrets={"pw": password}, _on_event=on_event)
    assert result.status == JobStatus.succeeded, result.error
    brain = result.steps[0].brain
    assert brain.memory == "the password is <secret>pw</secret>"
    assert brain.evaluation_previous_goal == "typed <secret>pw</secret>?"
    assert brain.next_goal == "check that <secret>pw</secret> was accepted"
    assert password not in result.model_dump_json() and password not in repr(seen)
