"""The navigation gate: asked before every navigation the agent starts, able to hold it or refuse it.

The gate here is a plain implementation of the hook that records what it is asked and refuses one
path, as the worker's robots.txt check does, plugged into the pipeline as a feature of its own
after politeness; the worker's own gate (Redis, robots.txt) is tested end to end in
tests/queue/test_politeness.py.
"""

from __future__ import annotations

import asyncio

from tests.support.jobs import run_job
from workers.agent import URLBlocked
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import FailureCategory, JobStatus
from workers.pipeline import FEATURES, Feature, JobRun, LocalRecords


class RecordingGate:
    intercepts = True

    def __init__(self, refuse: str = "never", hold: float = 0.0) -> None:
        self.asked: list[str] = []
        self.answers: list[tuple[str, int]] = []
        self.refuse = refuse
        self.hold = hold

    async def before_navigation(self, url: str) -> None:
        self.asked.append(url)
        await asyncio.sleep(self.hold)
        if self.refuse in url:
            raise URLBlocked(url, "disallowed by the site's robots.txt for user-agent 'browserd'")

    async def after_response(self, url: str, status: int, retry_after: str | None) -> None:
        self.answers.append((url, status))


def gated(gate: RecordingGate) -> tuple[type[Feature], ...]:
    """The pipeline's features, then one that gives the job ``gate`` as its navigation gate."""

    class GivenGate(Feature):
        async def attach(self, run: JobRun) -> None:
            run.inputs.navigation_gate = gate

    return (*FEATURES, GivenGate)


async def test_every_navigation_the_agent_starts_asks_the_gate_first(pool, site):
    first, second, third = (site.url(f"agent/catalog.html?n={n}") for n in range(3))
    gate = RecordingGate()
    spec = JobSpec(start_url=first, script=[{"go_to_url": {"url": second}}, {"open_tab": {"url": third}},
                                            {"done": {"text": "ok"}}])
    async with pool.lease() as lease:
        result = await run_job(spec, lease, features=gated(gate))
    assert result.status == JobStatus.succeeded, result.error
    assert gate.asked == [first, second, third]


async def test_a_refused_start_url_fails_the_job_as_url_blocked_before_loading(pool, site):
    gate = RecordingGate(refuse="private")
    spec = JobSpec(start_url=site.url("agent/catalog.html?private=1"), script=[{"done": {"text": "never"}}])
    async with pool.lease() as lease:
        result = await run_job(spec, lease, features=gated(gate))
        opened = await lease.page.url()
    assert (result.status, result.category) == (JobStatus.failed, FailureCategory.url_blocked)
    assert "robots.txt" in (result.error or "") and "private=1" in (result.error or "")
    assert "catalog" not in opened, "the page was never requested"


async def test_a_cancel_ends_a_wait_at_the_gate(pool, site):
    gate = RecordingGate(hold=60)
    spec = JobSpec(start_url=site.url("agent/catalog.html"), script=[{"done": {"text": "never"}}])
    cancelled = False

    async def cancel_soon() -> None:
        nonlocal cancelled
        await asyncio.sleep(0.5)
        cancelled = True

    async with pool.lease() as lease:
        canceller = asyncio.ensure_future(cancel_soon())
        result = await asyncio.wait_for(run_job(spec, lease, features=gated(gate),
                                                records=LocalRecords(is_cancelled=lambda: cancelled)),
                                        30)
        await canceller
    assert result.status == JobStatus.cancelled


async def test_a_navigation_the_page_starts_itself_is_brought_to_the_gate(pool, site):
    start, moved = site.url("agent/autonav.html"), site.url("agent/catalog.html?auto=1")
    spec = JobSpec(script=[{"go_to_url": {"url": start}}, {"wait": {"seconds": 2}}, {"done": {"text": "ok"}}])
    gate = RecordingGate()
    async with pool.lease() as lease:
        result = await run_job(spec, lease, features=gated(gate))
        landed = await lease.page.url()
    assert result.status == JobStatus.succeeded, result.error
    assert gate.asked == [start, moved], "the agent's own navigation is asked once, the page's too"
    assert landed == moved

    refusing = RecordingGate(refuse="auto=1")
    async with pool.lease() as lease:
        refused = await run_job(spec, lease, features=gated(refusing))
        title = await lease.page.title()
    assert refusing.asked == [start, moved]
    assert title != "Kitchen catalog", "the refused navigation never loaded (Chrome shows its error page)"
    # a script stops at a blocked navigation, as at one the domain lists block
    assert (refused.status, refused.category) == (JobStatus.failed, FailureCategory.url_blocked), refused.error
    assert "robots.txt" in (refused.error or "") and moved in (refused.error or "")
