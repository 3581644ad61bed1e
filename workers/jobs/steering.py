"""Steering a job after it was submitted: pause, resume, and follow-up tasks in a kept session.

One path for every caller (the API, the web console): each returns what happened or raises
``SteerRefused`` saying, in words a user can act on, why the job cannot be steered that way now.
"""

from __future__ import annotations

from dataclasses import dataclass

from workers.jobs.errors import JobsError
from workers.jobs.models import FollowUpRequest
from workers.jobs.store import WORKER_FRESH_SECONDS, FollowUpClaim, JobStore


class SteerRefused(JobsError):
    """``missing`` (no such job) or ``conflict`` (the job's state does not allow it); ``message`` says why."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason, self.message = reason, message


@dataclass(frozen=True)
class Steered:
    """``outcome``: paused | already (it was paused) | resumed."""

    outcome: str


def _missing(job_id: str) -> SteerRefused:
    return SteerRefused("missing", f"no job with id {job_id!r}")


async def follow_up(store: JobStore, job_id: str, request: FollowUpRequest) -> FollowUpClaim:
    """Queue ``request.task`` for the worker holding the job's session; the job is running again."""
    claim = await store.follow_up(job_id, request, fresh_within=WORKER_FRESH_SECONDS)
    if claim.outcome == "accepted":
        return claim
    if claim.outcome == "missing":
        raise _missing(job_id)
    if claim.outcome == "not_finished":
        raise SteerRefused("conflict", f"job {job_id} has not finished its current task; send the follow-up "
                           "once it has (a follow-up continues a finished task's session)")
    if claim.outcome == "not_kept":
        raise SteerRefused("conflict", f"job {job_id} did not keep its session (submit it with "
                           "options.keep_session), so there is no browser to continue in; submit a new job")
    if claim.outcome == "lost":
        raise SteerRefused("conflict", f"the worker holding job {job_id}'s session stopped answering; the session "
                           "is lost: submit a new job")
    note = await store.redis.hget(store.keys.job(job_id), "session_note")
    raise SteerRefused("conflict", f"job {job_id}'s session is closed ({note or 'its idle time passed'}); "
                       "submit a new job")


REFUSALS = {
    "finished": "job {id} already finished ({state}); there is nothing to {action}",
    "not_running": "job {id} is {state}, not running: only a running job can be paused (a queued job can be "
                   "cancelled)",
    "not_paused": "job {id} is not paused (it is {state})",
}


async def pause(store: JobStore, job_id: str) -> Steered:
    """Ask a running job to stop before its next step (``already`` when it was asked before)."""
    return _steered(job_id, "pause", *await store.pause(job_id))


async def resume(store: JobStore, job_id: str) -> Steered:
    """Let a paused job go on with its next step."""
    return _steered(job_id, "resume", *await store.resume(job_id))


def _steered(job_id: str, action: str, outcome: str, state: str) -> Steered:
    if outcome == "missing":
        raise _missing(job_id)
    if outcome in REFUSALS:
        raise SteerRefused("conflict", REFUSALS[outcome].format(id=job_id, state=state, action=action))
    return Steered(outcome)
