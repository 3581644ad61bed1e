"""Steering a job after it was submitted: pause, resume (a hand-back), values pushed to it, and
follow-up tasks in a kept session.

One path for every caller (the API, the web console): each returns what happened or raises
``SteerRefused`` saying, in words a user can act on, why the job cannot be steered that way now.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from config import Settings
from workers.jobs.errors import JobsError
from workers.jobs.model.spec import FollowUpRequest, InputRequest
from workers.jobs.secrets.sealing import seal_json
from workers.jobs.store.human import MAX_INPUTS, HumanStore
from workers.jobs.store.jobs import WORKER_FRESH_SECONDS, JobStore
from workers.jobs.store.outcomes import (
    FollowUpClaim,
    FollowUpOutcome,
    InputOutcome,
    PauseOutcome,
    InputResult,
    PauseResult,
    ResumeOutcome,
    ResumeResult,
)


class SteerRefusal(StrEnum):
    """Why a job cannot be steered: there is no such job, or its state does not allow it now."""

    missing = "missing"
    conflict = "conflict"


class SteerRefused(JobsError):
    """``reason``: ``missing`` or ``conflict``; ``message`` says why, in words a user can act on."""

    def __init__(self, reason: SteerRefusal, message: str) -> None:
        super().__init__(message)
        self.reason, self.message = reason, message


@dataclass(frozen=True)
class Steered:
    """``outcome``: paused | already (it was paused) | resumed | accepted | handed_back (an input)."""

    outcome: PauseOutcome | ResumeOutcome | InputOutcome


def _missing(job_id: str) -> SteerRefused:
    return SteerRefused(SteerRefusal.missing, f"no job with id {job_id!r}")


async def follow_up(store: JobStore, job_id: str, request: FollowUpRequest) -> FollowUpClaim:
    """Queue ``request.task`` for the worker holding the job's session; the job is running again."""
    claim = await store.follow_up(job_id, request, fresh_within=WORKER_FRESH_SECONDS)
    if claim.outcome is FollowUpOutcome.accepted:
        return claim
    if claim.outcome is FollowUpOutcome.missing:
        raise _missing(job_id)
    if claim.outcome is FollowUpOutcome.not_finished:
        raise SteerRefused(SteerRefusal.conflict, f"job {job_id} has not finished its current task; send the "
                           "follow-up once it has (a follow-up continues a finished task's session)")
    if claim.outcome is FollowUpOutcome.not_kept:
        raise SteerRefused(SteerRefusal.conflict, f"job {job_id} did not keep its session (submit it with "
                           "options.keep_session), so there is no browser to continue in; submit a new job")
    if claim.outcome is FollowUpOutcome.lost:
        raise SteerRefused(SteerRefusal.conflict, f"the worker holding job {job_id}'s session stopped answering; "
                           "the session is lost: submit a new job")
    note = await store.session_note(job_id)
    raise SteerRefused(SteerRefusal.conflict, f"job {job_id}'s session is closed ({note or 'its idle time passed'}); "
                       "submit a new job")


FINISHED = "job {id} already finished ({state}); there is nothing to {action}"
PAUSE_REFUSALS = {
    PauseOutcome.finished: FINISHED,
    PauseOutcome.not_running: "job {id} is {state}, not running: only a running job can be paused (a queued job "
                              "can be cancelled)",
}
RESUME_REFUSALS = {
    ResumeOutcome.finished: FINISHED,
    ResumeOutcome.not_paused: "job {id} is not paused (it is {state})",
}


HAND_BACK_REFUSALS = {
    ResumeOutcome.finished: FINISHED,
    ResumeOutcome.not_paused: "job {id} is not waiting for a human nor paused (it is {state}): there is nothing to "
                              "hand back",
}
INPUT_REFUSALS = {
    InputOutcome.finished: FINISHED,
    InputOutcome.not_running: "job {id} is {state}, not running: an input is read by a running job (send it once the "
                              "job started, e.g. when it waits for a human)",
    InputOutcome.full: f"job {{id}} holds {MAX_INPUTS} inputs already: send a new value under a name it has",
}


async def pause(store: JobStore, job_id: str) -> Steered:
    """Ask a running job to stop before its next step (``already`` when it was asked before)."""
    return _steered(job_id, "pause", await store.pause(job_id), PauseOutcome.missing, PAUSE_REFUSALS)


async def resume(store: JobStore, job_id: str) -> Steered:
    """Let a paused job go on with its next step."""
    return _steered(job_id, "resume", await store.resume(job_id), ResumeOutcome.missing, RESUME_REFUSALS)


async def hand_back(store: JobStore, job_id: str) -> Steered:
    """A human is done with a job that waited for one (``request_human``), or with a paused one: it goes on."""
    return _steered(job_id, "hand back", await store.resume(job_id), ResumeOutcome.missing, HAND_BACK_REFUSALS)


async def push_input(store: JobStore, job_id: str, request: InputRequest, settings: Settings) -> Steered:
    """Give a running job a value (sealed on its way to Redis); a job waiting for a human goes on with it."""
    sealed = seal_json(request.value.get_secret_value(), settings)
    done = await HumanStore(store).push_input(job_id, request.name, sealed)
    return _steered(job_id, "send", done, InputOutcome.missing, INPUT_REFUSALS)


def _steered(job_id: str, action: str, done: PauseResult | ResumeResult | InputResult,
             missing: PauseOutcome | ResumeOutcome | InputOutcome,
             refusals: Mapping[PauseOutcome, str] | Mapping[ResumeOutcome, str] | Mapping[InputOutcome, str]) -> Steered:
    if done.outcome is missing:
        raise _missing(job_id)
    refusal = refusals.get(done.outcome)  # type: ignore[call-overload]
    if refusal is not None:
        raise SteerRefused(SteerRefusal.conflict, refusal.format(id=job_id, state=done.state, action=action))
    return Steered(done.outcome)
