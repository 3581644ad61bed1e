"""A success must be shown, not said (issue 24): the models' claim of done is checked against what
the run recorded, and a claim it does not show ends ``unverified``, never ``succeeded``.

Each adversary of tests/support/adversaries.py drives a real job on the fixture shop's search page
(real Chromium, the real ChatOpenAI client, a scripted endpoint); on the old code every one of
them but the looping one ended ``succeeded``.
"""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from config import load_settings
from tests.agent.scripted import NAVIGATOR, PLANNER, act, plan, run
from tests.support.adversaries import (
    SEARCH_ANSWER,
    SEARCH_TASK,
    ClaimsAtOnce,
    FalseQuote,
    Loops,
    Refuses,
    SearchOracle,
    WrongAction,
    planner,
)
from tests.support.llm_server import Reply
from workers.agent.planner import PlannerOutput
from workers.agent.validator import MAX_QUOTES, DoneClaim, Sightings, judge
from workers.jobs.model.actions import Done
from workers.jobs.model.locators import Locator
from workers.jobs.model.result import ActionRecord
from workers.jobs.model.status import FailureCategory, JobStatus

UNVERIFIED = (JobStatus.failed, FailureCategory.unverified)


async def search_job(pool, site, settings, **options):
    return await run(pool, settings, task=SEARCH_TASK, start_url=site.url("agent/search.html"), options=options)


async def test_the_honest_answer_is_accepted_and_says_why(pool, site, llm, settings):
    llm.responder = SearchOracle()
    result, page, _ = await search_job(pool, site, settings)
    assert result.status == JobStatus.succeeded, result.error
    assert result.final_answer == SEARCH_ANSWER and "24.50 EUR" in page
    assert result.verification.accepted and result.verification.rejections == 0
    assert {"evidence_seen", "actions_ran", "figures_seen"} <= set(result.verification.checks)
    assert result.steps[-1].verification == result.verification


async def test_done_at_once_with_a_template_answer_is_unverified(pool, site, llm, settings):
    llm.responder = ClaimsAtOnce()
    result, page, _ = await search_job(pool, site, settings)
    assert (result.status, result.category) == UNVERIFIED
    assert "template, filler or refusal" in result.error and "3 claims refused" in result.error
    assert all(a.name == "done" for s in result.steps for a in s.actions) and "24.50" not in page
    assert not result.verification.accepted and result.verification.rejections == 2


async def test_the_refusal_is_told_to_the_agent_which_goes_on(pool, site, llm, settings):
    """A refused claim is not the end: the agent hears why, acts, and its honest answer is accepted."""
    llm.add(PLANNER, planner(True, "The price is 19.99 EUR."))
    llm.responder = SearchOracle()
    result, _, _ = await search_job(pool, site, settings)
    assert result.status == JobStatus.succeeded, result.error
    assert result.steps[0].verification.reason == "the answer's figures 19.99 are on no page the agent saw"
    assert result.verification.accepted and result.verification.rejections == 1
    navigator_saw = str(llm.requests_for(NAVIGATOR)[0]["messages"])
    assert "browserd refused the claim that the task is done" in navigator_saw


async def test_done_after_a_wrong_action_is_unverified(pool, site, llm, settings):
    llm.responder = WrongAction()
    result, _, _ = await search_job(pool, site, settings)
    assert (result.status, result.category) == UNVERIFIED
    assert result.totals.actions >= 1
    assert "no action that ran touched it" in result.error


async def test_a_quote_that_is_on_no_page_is_unverified(pool, site, llm, settings):
    llm.responder = FalseQuote(SearchOracle())
    result, page, _ = await search_job(pool, site, settings)
    assert (result.status, result.category) == UNVERIFIED
    assert "24.50 EUR" in page, "the work was done; the answer was made up"
    assert "'Order total: 7731' is on no page the agent saw" in result.error


async def test_a_refusal_as_the_answer_is_unverified(pool, site, llm, settings):
    llm.responder = Refuses()
    result, _, _ = await search_job(pool, site, settings)
    assert (result.status, result.category) == UNVERIFIED
    assert result.final_answer == Refuses.ANSWER


async def test_a_loop_that_claims_done_is_not_a_success(pool, site, llm, settings):
    llm.responder = Loops()
    result, _, _ = await search_job(pool, site, settings, max_steps=8, planning_interval=1)
    assert (result.status, result.category) == UNVERIFIED


async def test_an_empty_done_is_not_a_success(pool, site, llm, settings):
    llm.add(PLANNER, plan(), plan(done=True), plan(done=True), plan(done=True))
    llm.responder = lambda request: act({"done": {}})
    result, _, _ = await run(pool, settings, task="Open the product page", start_url=site.url("agent/catalog.html"))
    assert (result.status, result.category) == UNVERIFIED
    assert "the final answer is empty" in result.error


async def test_done_with_next_steps_still_filled_is_refused(pool, site, llm, settings):
    llm.add(PLANNER, planner(True, "Steel Kettle 1.7l", next_steps="open the kettle page"))
    llm.responder = lambda request: act({"wait": {"seconds": 0}})
    result, _, _ = await run(pool, settings, task="Which product is first?", start_url=site.url("agent/catalog.html"),
                             options={"max_steps": 1})
    assert (result.status, result.category) == UNVERIFIED
    assert "next_steps still lists work" in result.error


async def test_an_answer_on_the_first_page_needs_no_action(pool, site, llm, settings):
    """A question whose answer is already on the start page: quoted, it is accepted at step 1."""
    llm.add(PLANNER, planner(True, "Kettle 1.7l", evidence=["Steel Kettle 1.7l"]))
    result, _, _ = await run(pool, settings, task="What is the first product called?",
                             start_url=site.url("agent/catalog.html"))
    assert result.status == JobStatus.succeeded, result.error
    assert result.totals.actions == 0 and "evidence_seen" in result.verification.checks


async def test_a_script_job_is_not_checked(pool, site, settings):
    result, _, _ = await run(pool, settings, start_url=site.url("agent/catalog.html"),
                             script=[{"done": {"text": "anything at all"}}])
    assert result.status == JobStatus.succeeded and result.verification is None


# --- the checks alone -------------------------------------------------------------------------

def seen(*pages: str) -> Sightings:
    sightings = Sightings()
    for page in pages:
        sightings.saw("http://shop.test/", "Shop", "", page, [])
    return sightings


def claim(task: str, answer: str, evidence: list[str] | None = None, actions: list[ActionRecord] | None = None,
          next_steps: str = "") -> DoneClaim:
    return DoneClaim(task, answer, evidence or [], next_steps, actions or [], extracted=False)


def test_quotes_match_whatever_the_case_spacing_and_punctuation() -> None:
    page = seen("## Red Toaster 2-slot\n   *24.50*   EUR")
    verdict = judge(claim("What does the toaster cost?", "24.50", ["red toaster 2-slot 24.50 eur"]), page)
    assert verdict.accepted and "evidence_seen" in verdict.checks


def test_the_issue_24_answers_are_refused() -> None:
    page = seen("Search products  Search")
    task = "Type blue mug into the search box, press Search, and tell me the price shown"
    for answer in ("Please make sure that this code has been completed before it can be sent to the server.",
                   "The complete answer (250) to the task.", "", "I don't know."):
        assert not judge(claim(task, answer), page).accepted, answer
    assert "no action ran" in judge(claim(task, "The price is shown."), page).reason


def test_a_task_that_only_acts_is_shown_by_its_actions() -> None:
    click = ActionRecord(name="click_element", params={"index": 3})
    verdict = judge(claim("Click the button", "Clicked.", actions=[click]), seen("Click me"))
    assert verdict.accepted and verdict.checks[-1] == "actions_ran"


MOVIES = "Search for drama movies directed by Smith from year 1999."


def test_a_task_that_asks_for_values_is_not_done_by_a_click_on_submit() -> None:
    """bench.honesty's last false successes (multi-orderings): the wrong_action and loops adversaries
    clicked Submit with every box empty; the task names no element, so no target could be missed."""
    page = seen("Genre Director Year Submit")
    submit = ActionRecord(name="click_element", params={"index": 5}, locator=Locator(tag="button", text="Submit"))
    for clicks in ([submit], [submit] * 4):
        verdict = judge(claim(MOVIES, "Finished: everything the task asked is done.", actions=clicks), page)
        assert not verdict.accepted and "no action typed, chose or uploaded anything" in verdict.reason
    for pressed in ("Enter", "Tab Enter", "Control+a"):
        keys = ActionRecord(name="send_keys", params={"keys": pressed})
        assert not judge(claim(MOVIES, "Done.", actions=[submit, keys]), page).accepted, pressed
    empty = ActionRecord(name="input_text", params={"index": 1, "text": "  "})
    assert not judge(claim(MOVIES, "Done.", actions=[empty, submit]), page).accepted
    elsewhere = ActionRecord(name="go_to_url", params={"url": "http://shop.test/?page=2"})
    assert not judge(claim(MOVIES, "Done.", actions=[elsewhere, submit]), page).accepted


def test_values_typed_chosen_uploaded_or_searched_do_it_whatever_they_are() -> None:
    """Which value is not asked: an honest run types what it read or computed, or a secret."""
    page = seen("Genre Director Year Submit")
    submit = ActionRecord(name="click_element", params={"index": 5})
    entries = [ActionRecord(name="input_text", params={"index": 1, "text": "Smith"}),
               ActionRecord(name="input_text", params={"index": 1, "text": "<secret>pw</secret>"}),
               ActionRecord(name="send_keys", params={"keys": "Smith"}),
               ActionRecord(name="select_dropdown_option", params={"index": 2, "text": "Drama"}),
               ActionRecord(name="upload_file", params={"index": 3, "files": ["cv.pdf"]}),
               ActionRecord(name="search", params={"query": "drama movies Smith"}),
               ActionRecord(name="go_to_url", params={"url": "http://movies.test/find?genre=drama&year=1999"})]
    for entry in entries:
        verdict = judge(claim(MOVIES, "Done.", actions=[entry, submit]), page)
        assert verdict.accepted and verdict.checks[-2:] == ["actions_ran", "values_entered"], entry
    for task in ("Solve the math problem and type your answer into the textbox.", "Enter the value of Color into "
                 "the text field and press Submit.", "Fill in the form", "Use the textbox to enter the code"):
        typed = ActionRecord(name="input_text", params={"index": 1, "text": "42"})
        assert not judge(claim(task, "Done.", actions=[submit]), page).accepted, task
        assert judge(claim(task, "Done.", actions=[typed, submit]), page).accepted, task


def test_a_task_that_asks_no_value_is_done_by_clicks() -> None:
    """Checking boxes, choosing a tab, pressing a key: clicks do these (no value to type)."""
    page = seen("nDJ Submit Tab #2")
    click = ActionRecord(name="click_element", params={"index": 2})
    for task in ("Select nDJ and click Submit.", "Click on Tab #2.", "Press the Enter key", "Sign in",
                 "Subscribe to the newsletter", "Focus into the textbox."):
        assert judge(claim(task, "Done.", actions=[click]), page).accepted, task


def test_a_question_answered_by_its_quotes_needs_no_typing() -> None:
    """'Search for the kettle and tell me its price': following a link to it is as good, the quote shows it."""
    page = seen("Kettle 1.7l 19.99 EUR")
    link = ActionRecord(name="click_element", params={"index": 4})
    task = "Search for the kettle and tell me its price"
    assert judge(claim(task, "19.99 EUR", ["Kettle 1.7l 19.99 EUR"], [link]), page).accepted
    assert not judge(claim(task, "19.99 EUR", [], [link]), page).accepted


def test_evidence_in_any_shape_a_model_writes_it() -> None:
    """One string is one quote, null is none; anything else is an unusable answer, not a crash."""
    assert PlannerOutput.model_validate({"done": True, "evidence": "24.50 EUR"}).evidence == ["24.50 EUR"]
    assert PlannerOutput.model_validate({"done": True, "evidence": None}).evidence == []
    assert Done.model_validate({"text": "x", "evidence": ["a", 7]}).evidence == ["a", "7"]
    with pytest.raises(ValidationError):
        PlannerOutput.model_validate({"done": True, "evidence": {"quote": "x"}})


def test_a_flood_of_quotes_is_read_only_in_part() -> None:
    quotes = ["Click me"] * MAX_QUOTES + ["not on the page"]
    verdict = judge(claim("What does the button say?", "Click me", quotes), seen("Click me"))
    assert verdict.accepted


async def test_a_rolling_horizon_claim_is_checked_too(pool, site, llm, settings):
    """The horizon planner's done is refused the same way, told why, and the job ends unverified."""
    llm.responder = lambda request: Reply.tool({"observation": "x", "done": True, "outcome": "complete",
                                                "final_answer": "The price is 19.99 EUR.", "steps": []})
    result, _, _ = await run(pool, settings, task=SEARCH_TASK, start_url=site.url("agent/search.html"),
                             options={"strategy": "rolling_horizon"})
    assert (result.status, result.category) == UNVERIFIED
    assert "figures 19.99" in result.error and all(s.error is None for s in result.steps[:-1])
    assert "Replanning: browserd refused the claim of done" in str(llm.requests[1]["messages"])


async def test_the_validator_model_is_asked_after_the_checks_and_its_no_gives_another_step(pool, site, llm):
    """BROWSERD_VALIDATOR_MODEL: asked only about a claim the checks passed; its "no" is told to the
    agent, which goes on, and its "yes" is recorded with the checks."""
    settings = load_settings(llm_base_url=llm.base_url, openai_api_key="test-key", max_steps=12, job_timeout=120,
                             validator_model="judge-model")
    llm.responder = SearchOracle()
    llm.add("ValidatorOutput", Reply.tool({"is_valid": False, "reason": "the answer does not name the toaster's slots"}),
            Reply.tool({"is_valid": True, "reason": "the price is on the page"}))
    result, page, _ = await search_job(pool, site, settings)
    assert result.status == JobStatus.succeeded, result.error
    assert result.final_answer == SEARCH_ANSWER and "24.50 EUR" in page
    assert result.verification.accepted and result.verification.rejections == 1
    assert result.verification.checks[-1] == "validator_model"
    asked = llm.requests_for("ValidatorOutput")
    assert len(asked) == 2 and {r["model"] for r in asked} == {"judge-model"}
    assert "Red Toaster 2-slot 24.50 EUR" in str(asked[0]["messages"])  # the page and the evidence were shown
    told = [r for r in llm.requests if "does not name the toaster" in str(r["messages"])]
    assert told, "the agent never read the validator model's reason"
    assert result.totals.llm_calls == llm.served.calls  # the validator's calls are counted


async def test_the_validator_model_is_not_asked_about_what_the_checks_refuse(pool, site, llm):
    settings = load_settings(llm_base_url=llm.base_url, openai_api_key="test-key", max_steps=12, job_timeout=120,
                             validator_model="judge-model")
    llm.responder = ClaimsAtOnce()
    result, _, _ = await search_job(pool, site, settings)
    assert (result.status, result.category) == UNVERIFIED
    assert llm.requests_for("ValidatorOutput") == []
