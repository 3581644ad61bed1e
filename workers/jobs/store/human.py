"""The record's side of a job asking a human for help (``request_human``) and of values pushed to a
running job (``POST /v1/jobs/{id}/input``): Lua scripts on the job's hash, like the rest of the store.

A waiting job is a running job with ``paused`` set and ``waiting_for_human`` holding the agent's
reason, so everything that keeps a running job alive (heartbeats, the reconciler, cancel) keeps it
alive while it waits, and a resume (or an input) hands it back. Pushed values are sealed with
BROWSERD_SECRETS_KEY before they reach Redis: the record, its events and its listings never hold one.
"""

from __future__ import annotations

import json

from workers.jobs.ids import is_id
from workers.jobs.store.jobs import JobStore
from workers.jobs.store.outcomes import InputOutcome, InputResult, state_of
from workers.jobs.store.scripts import source

HUMAN_KIND = "human"  # the outbox entry's kind of a job.waiting_for_human webhook (``job_human_wait.lua``)
HUMAN_EVENT = "job.waiting_for_human"
MAX_INPUTS = 16  # values one job holds (the same name again replaces its value)


class HumanStore:
    def __init__(self, store: JobStore) -> None:
        self.store = store
        self._wait = store.redis.register_script(source("job_human_wait"))
        self._input = store.redis.register_script(source("job_input"))

    async def wait(self, job_id: str, attempt: int, reason: str, until: float) -> str | None:
        """The run asks a human (``until``: epoch seconds): the delivery id of the webhook it owes ('' for
        none), or None once the run no longer owns the job."""
        owed = await self._wait(keys=[], args=self.store._argv(job_id, attempt, reason, repr(until)))
        return None if owed == 0 else str(owed)

    async def push_input(self, job_id: str, name: str, sealed: str) -> InputResult:
        """Keep ``sealed`` (a value sealed with the secrets key) as the running job's input ``name``."""
        if not is_id(job_id):
            return InputResult(InputOutcome.missing, "")
        outcome, state = await self._input(keys=[], args=self.store._argv(job_id, name, sealed, MAX_INPUTS))
        return InputResult(InputOutcome(outcome), state_of(state))

    async def inputs(self, job_id: str) -> dict[str, str]:
        """The job's pushed inputs, still sealed: name -> sealed value."""
        raw = await self.store.redis.hget(self.store.keys.job(job_id), "inputs")
        return dict(json.loads(raw)) if raw else {}
