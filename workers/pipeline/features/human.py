"""A job that may ask a human (``options.allow_human``): the agent's link to the job's record.

The agent's ``request_human`` (``workers.agent.human``) asks through ``StoreHumanLink``: one Lua call
marks the record waiting (``waiting_for_human``, the reason, until when; the job stays ``running``
and ``paused``), appends the event and owes the ``job.waiting_for_human`` webhook, which is sent at
once through the outbox (the reconciler sends it if this process dies first). The worker then reads
the record every ``POLL_SECONDS`` until a hand-back (``POST .../hand-back``, ``.../resume`` or an
``.../input``) clears it. The job's time budget moves by the wait (``TimeBudget.extend``); its
message's limits already hold the whole allowance (``queue.limits.queue_limit``).

A run without the shared store (``browserd run``) has no link: ``request_human`` tells the agent
nobody will come.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping

from config import Settings
from workers.jobs.queue.limits import human_allowance
from workers.jobs.secrets.sealing import unseal_json
from workers.jobs.store.human import HumanStore
from workers.jobs.store.jobs import JobStore
from workers.jobs.webhooks.outbox import Outbox
from workers.pipeline.feature import Feature
from workers.pipeline.run import JobRun

log = logging.getLogger("browserd.worker")


class HumanHelp(Feature):
    async def prepare(self, run: JobRun) -> None:
        store = self.services.store
        if store is None or not run.spec.options.allow_human:
            return
        run.inputs.human = StoreHumanLink(store, run, human_allowance(run.spec, self.settings), self.settings)


class StoreHumanLink:
    """``workers.agent.human.HumanLink`` on the job's record in Redis."""

    def __init__(self, store: JobStore, run: JobRun, allowance: float, settings: Settings) -> None:
        self.store, self.run, self.allowance, self.settings = store, run, allowance, settings
        self.human = HumanStore(store)
        self._opened: dict[str, tuple[str, str]] = {}  # name -> (sealed, opened): each value opened once

    async def ask(self, reason: str, seconds: float) -> None:
        run = self.run
        owed = await self.human.wait(run.job_id, run.attempt, reason, time.time() + seconds)
        run.paused = True  # as the ticker will read it: the pause gate after the hand-back waits for the ticker
        log.info("job %s waits for a human (%gs at most): %s", run.job_id, seconds, reason)
        if owed:
            try:
                await Outbox(self.store).run([owed])
            except Exception as exc:  # the entry stays owed: the reconciler sends it
                log.warning("job %s: the job.waiting_for_human webhook was not published: %s", run.job_id, exc)

    async def waiting(self) -> bool:
        still = bool(await self.store.redis.hexists(self.store.keys.job(self.run.job_id), "waiting_for_human"))
        if not still:
            self.run.paused = False  # handed back: the record's pause went with it
        return still

    async def inputs(self) -> Mapping[str, str]:
        sealed = await self.human.inputs(self.run.job_id)
        opened = {}
        for name, token in sealed.items():
            known = self._opened.get(name)
            if known is None or known[0] != token:
                known = self._opened[name] = (token, str(unseal_json(token, self.settings, "a pushed input")))
            opened[name] = known[1]
        return opened

    def extend(self, seconds: float) -> None:
        self.run.budget.extend(seconds)
