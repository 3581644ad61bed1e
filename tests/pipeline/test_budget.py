"""One time budget per run (``workers/jobs/budget.py``): its lines, and the waits it ends.

Budgets here start in the past (``started``) rather than waiting for time to pass, so each line is
checked without sleeping (the bounds leave seconds for a loaded machine); a wait that runs into a
deadline checks when it ended, never how fast.
"""

from __future__ import annotations

import asyncio

import pytest

from workers.jobs.budget import SOFT_LIMIT_SLACK, TimeBudget


async def test_a_new_budget_has_its_whole_limit_ahead() -> None:
    now = asyncio.get_running_loop().time()
    budget = TimeBudget(30)
    assert now <= budget.started <= asyncio.get_running_loop().time()
    assert budget.deadline == budget.started + 30 and budget.backstop == budget.deadline + SOFT_LIMIT_SLACK
    assert 25 < budget.remaining() <= 30 and 0 <= budget.spent() < 5 and not budget.expired()


async def test_time_spent_comes_off_what_remains() -> None:
    budget = TimeBudget(30, started=asyncio.get_running_loop().time() - 20)
    assert 20 <= budget.spent() < 25 and 5 < budget.remaining() <= 10 and not budget.expired()


async def test_past_its_deadline_a_budget_is_expired_and_has_nothing_left() -> None:
    budget = TimeBudget(30, started=asyncio.get_running_loop().time() - 45)
    assert budget.expired() and budget.remaining() == 0.0 and budget.spent() >= 45


async def test_a_wait_within_the_deadline_ends_there() -> None:
    loop = asyncio.get_running_loop()
    budget = TimeBudget(10, started=loop.time() - 9.9)  # 0.1 s left
    with pytest.raises(TimeoutError):
        async with budget.until_deadline():
            await asyncio.Event().wait()  # nothing ever comes: only the deadline ends this
    assert loop.time() >= budget.deadline and budget.expired()


async def test_a_wait_that_finishes_in_time_is_not_cut() -> None:
    budget = TimeBudget(10)
    async with budget.until_deadline():
        await asyncio.sleep(0)
    async with budget.until_backstop():
        await asyncio.sleep(0)


async def test_the_backstop_allows_the_slack_past_the_deadline_and_no_more() -> None:
    loop = asyncio.get_running_loop()
    budget = TimeBudget(10, started=loop.time() - 10 - SOFT_LIMIT_SLACK + 0.1)  # past the deadline, 0.1 s of slack left
    assert budget.expired()
    with pytest.raises(TimeoutError):
        async with budget.until_backstop():
            await asyncio.Event().wait()
    assert loop.time() >= budget.backstop
