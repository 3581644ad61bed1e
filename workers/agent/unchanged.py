"""Incremental runs, the agent's side: a page unchanged since the schedule's last run is not read again.

The pipeline (``workers.pipeline.features.incremental``) hands a scheduled agent job an
``UnchangedCheck`` holding what the last run read on the same page for the same work. Once the
start URL is open, before any model call, ``reuse_unchanged`` fingerprints the page as the agent
would read it (``content_fingerprint``) and, when the fingerprint is the last run's, takes that
run's data and final answer with no LLM call, the way a recipe replays steps; one step records it
(``REUSE_ACTION``). The fingerprint is kept on the check either way, for the next run.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from typing import Any

from workers.agent.context import JobContext
from workers.agent.recorder import StepLog
from workers.jobs.model.result import ActionRecord, StepRecord
from workers.jobs.schedules.reads import PageRead

log = logging.getLogger("browserd.agent")

REUSE_ACTION = "reuse_unchanged"  # the action a reused page's one step records


@dataclass
class UnchangedCheck:
    """One job's incremental check: the last run's read of its page (None: no read yet), and what
    this run found (``fingerprint``; ``reused_from``: the job whose extraction it took)."""

    previous: PageRead | None
    fingerprint: str | None = None
    reused_from: str | None = None


def content_fingerprint(state: Any) -> str:
    """What the agent reads of a page, as a digest: its title, its readable text (every frame, the whole
    page, not only the viewport) and its element lines (the navigator's view, links and controls)."""
    body = f"{state.title}\n{state.text()}\n{state.fingerprint()}"
    return hashlib.sha256(body.encode("utf-8", "replace")).hexdigest()


async def reuse_unchanged(ctx: JobContext, steps: StepLog, check: UnchangedCheck) -> bool:
    """Fingerprint the page as opened; True when it is the last run's and its read was taken instead
    of running the agent (``ctx.data`` and ``ctx.final_answer`` set, one step recorded)."""
    state = await ctx.browser.capture()
    check.fingerprint = content_fingerprint(state)
    previous = check.previous
    if previous is None or previous.fingerprint != check.fingerprint:
        return False
    ctx.data, ctx.final_answer = previous.data, previous.final_answer
    check.reused_from = previous.job_id
    await steps.add(StepRecord(step=1, url=state.url, elements=len(state.elements), replayed=True, actions=[
        ActionRecord(name=REUSE_ACTION, params={"job": previous.job_id},
                     result=f"the page is unchanged since job {previous.job_id} read it: its extraction is reused, "
                            "with no model call")]))
    log.info("page %s unchanged since job %s: its extraction is reused", state.url, previous.job_id)
    return True
