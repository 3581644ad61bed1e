"""Secrets bound to domains (a job's ``secret_domains``, a credential set's ``domains``): typed only
into a frame whose host is on them, checked at the moment of typing, in the top frame and in an
iframe, in real Chromium; elsewhere nothing is typed and the job ends ``secret_domain_refused``.
``*.test`` names are 127.0.0.1 (tests.conftest.TEST_NAMES): shop.test is the secret's site, evil.test
is not, both served by the same fixture server."""

from __future__ import annotations

import re

from tests.agent.scripted import NAVIGATOR, PLANNER, act, last_state, plan, run
from workers.jobs.model.status import FailureCategory, JobStatus

VALUE = "hunter22-secret-value"


def _index(state: str) -> int:
    found = re.search(r"\[(\d+)\]<input", state)
    assert found, state
    return int(found.group(1))


async def _sign_in(pool, settings, llm, start_url: str):
    """A scripted agent types the bound secret into the page's (or the iframe's) password field."""
    def navigator(request):
        state = last_state(request)
        return act({"input_text": {"index": _index(state), "text": "<secret>pw</secret>"}},
                   {"done": {"text": "typed", "evidence": ["Sign in"]}})

    llm.add(PLANNER, plan(), plan(done=True, final_answer="typed"))
    llm.responder = navigator
    return await run(pool, settings, task="Sign in", start_url=start_url, secrets={"pw": VALUE},
                     secret_domains=["shop.test"], allowed_networks=["127.0.0.1/32"])



async def test_a_bound_secret_is_typed_on_its_own_domain(pool, site, llm, settings):
    result, _, _ = await _sign_in(pool, settings, llm, f"http://shop.test:{site.port}/secrets/login.html")
    assert result.category != FailureCategory.secret_domain_refused, result.error
    typed = result.steps[0].actions[0]
    assert typed.name == "input_text" and typed.ok, typed.error


async def test_a_bound_secret_is_refused_in_a_foreign_top_frame(pool, site, llm, settings):
    result, _, _ = await _sign_in(pool, settings, llm, f"http://evil.test:{site.port}/secrets/login.html")
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.secret_domain_refused), result.error
    assert "may be typed only on shop.test; refused on http://evil.test:" in result.error
    assert VALUE not in result.model_dump_json()


async def test_a_bound_secret_is_refused_in_a_foreign_iframe_of_its_own_site(pool, site, llm, settings):
    page = f"http://shop.test:{site.port}/secrets/framed.html?frame=evil.test"
    result, _, _ = await _sign_in(pool, settings, llm, page)
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.secret_domain_refused), result.error
    assert "refused on http://evil.test:" in result.error  # the iframe's address, not the top page's


async def test_a_bound_secret_is_typed_in_its_sites_iframe_on_a_foreign_page(pool, site, llm, settings):
    page = f"http://evil.test:{site.port}/secrets/framed.html?frame=shop.test"
    result, _, _ = await _sign_in(pool, settings, llm, page)
    assert result.category != FailureCategory.secret_domain_refused, result.error
    typed = result.steps[0].actions[0]
    assert typed.name == "input_text" and typed.ok, typed.error


async def test_a_page_that_hands_the_focus_to_a_foreign_frame_gets_nothing_typed(pool, site, llm, settings):
    """Hostile page: the bound secret's own site moves the focus into evil.test's frame as soon as
    the password field takes it; the field no longer holds the focus when the secret would be typed."""
    page = f"http://shop.test:{site.port}/secrets/steal.html?frame=evil.test"
    result, _, _ = await _sign_in(pool, settings, llm, page)
    typed = result.steps[0].actions[0]
    assert typed.name == "input_text" and not typed.ok
    assert "lost the focus before the secret was typed" in (typed.error or "")
    assert VALUE not in result.model_dump_json()
