"""``request_human``: the agent asks a person for what it cannot or should not do alone (a captcha, a
second factor, a confirmation the task requires). The action only marks the request and ends the
step's sequence; the job waits for the human before its next step (``workers.agent.human``).
"""

from __future__ import annotations

from workers.agent.actions.registry import action
from workers.agent.context import ActionResult, JobContext
from workers.agent.errors import ActionError
from workers.jobs.model.actions import RequestHuman

FORBIDDEN = ("this job may not ask a human (options.allow_human is false): nobody will come. Do not wait; if the "
             "task cannot be done without one, end with done, success false, saying what the page asks for "
             "(a captcha or bot wall: blocked_by_site; a sign-in the task gives no credentials for: login_required)")


@action("request_human", RequestHuman, "Ask a human to do what you cannot (solve a captcha, give a second factor's "
        "code, confirm what the task requires); the job waits until they hand it back. Give the reason they see")
async def request_human(ctx: JobContext, p: RequestHuman) -> ActionResult:
    gate = ctx.pause.human
    if not gate.allowed:
        raise ActionError(FORBIDDEN, action="request_human")
    gate.request(ctx.secrets.scrub(p.reason))
    return ActionResult(f"asked a human: {p.reason}; the job waits for them before the next step", stop=True)
