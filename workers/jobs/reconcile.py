"""The reconciler: what a crash left half-done, found and finished. One pass at a time.

Every worker runs it (``workers.runtime``): a pass when it starts, then one per
``BROWSERD_RECONCILE_INTERVAL`` across the whole fleet (``run_if_due``: the first worker to look in
an interval takes it), so a stack of API + workers recovers by itself, without ``browserd beat``
(which is for schedules only; the ``browserd.reconcile`` task still runs a pass when sent). A
Redis lock lets one pass run at once. A pass:

* sends again every ``running`` job whose heartbeat is older than ``BROWSERD_STALE_JOB_SECONDS``
  (its worker died, or its message was acknowledged without a result being recorded). The
  delivery's ``START`` script decides: a stale run is taken over as a new attempt (the attempt
  number fences the old run out), and a job whose attempts are spent ends ``worker_lost``;
* publishes every ``queued`` job older than ``BROWSERD_ORPHAN_JOB_SECONDS`` whose message is in
  no queue and in no worker's hands (the submitter died between recording and publishing, or the
  broker lost the message): so an idempotency key always ends up naming a job that runs. A
  duplicate message is harmless: ``START`` lets one delivery run the job;
  A tenant's orphan goes back to its fair dispatch (``tenants.dispatch``): parked, not published;
* releases tenants' parked messages whose turn came (``Dispatcher.release``), and forgets released
  jobs whose record expired without a final transition (``P tenant:{t}:inflight``);
* repairs batches whose submitter died mid-way (``total`` becomes the jobs actually recorded);
* publishes outbox entries left behind (``webhooks.outbox``), and trims index entries of expired records;
* deletes the artifact folders of those expired records (``artifacts``): artifacts live as long
  as their job's record, ``BROWSERD_RESULT_TTL``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from dataclasses import dataclass

from redis.asyncio.lock import Lock
from redis.exceptions import RedisError

from config import Settings, bind
from workers.jobs.artifacts.store import ArtifactStore
from workers.jobs.batches.bulk import Outgoing
from workers.jobs.batches.store import BatchStore
from workers.jobs.ids import ID_SHAPE
from workers.jobs.metrics import Reconciled, observe_reconciled, queue_keys
from workers.jobs.model.status import FINAL_STATES, JobStatus
from workers.jobs.queue.limits import queue_seconds
from workers.jobs.queue.names import QUEUES
from workers.jobs.queue.publish import send_job
from workers.jobs.queue.results import mark_retried
from workers.jobs.store.codec import JobLiveness, now
from workers.jobs.store.jobs import JobStore
from workers.jobs.tenants.dispatch import Dispatcher
from workers.jobs.tenants.quotas import Quotas
from workers.jobs.webhooks.outbox import Outbox

log = logging.getLogger("browserd.reconcile")

CHUNK = 500  # ids read per round trip
TRIM_ROUNDS = 20  # chunks of expired index entries trimmed per pass (the rest waits for the next)
OUTBOX_GRACE = 10.0  # seconds an outbox entry is left to the process that wrote it
LOCK_SECONDS = 10.0  # the pass lock's life, renewed every third of it while the pass runs
UNACKED = "unacked"  # kombu's Redis transport: messages delivered to a worker, not yet acknowledged
JOB_ID_IN_MESSAGE = re.compile(f"'({ID_SHAPE})'")  # the job id in a message's ``argsrepr``


@dataclass
class Report:
    resent_running: int = 0
    published_queued: int = 0
    released_parked: int = 0
    batches_repaired: int = 0
    webhooks_published: int = 0
    index_entries_trimmed: int = 0
    artifact_folders_deleted: int = 0


async def _keep(lock: Lock) -> None:
    """Renew ``lock`` until cancelled (the pass ended) or lost (this worker's loop was held past
    ``LOCK_SECONDS``: another pass may start, as after a crash; or Redis failed, which the pass
    itself then meets): never an exception left in a task nobody awaits."""
    while True:
        await asyncio.sleep(LOCK_SECONDS / 3)
        try:
            await lock.reacquire()
        except RedisError as exc:  # LockError (not ours any more) included
            log.warning("reconciler lock lost mid-pass: %s", exc)
            return


class Reconciler:
    def __init__(self, store: JobStore, settings: Settings) -> None:
        self.store = store
        self.keys = store.keys
        self.redis = store.redis
        self.settings = settings
        self.artifacts = ArtifactStore.from_settings(settings)
        self._deleted = 0  # artifact folders deleted by this pass
        self.dispatcher = Dispatcher(store, settings)

    async def run_if_due(self) -> Report | None:
        """A pass when none ran in this interval (``BROWSERD_RECONCILE_INTERVAL``) on any worker;
        None when another worker took this interval's pass or holds the lock."""
        interval_ms = max(1, int(self.settings.reconcile_interval * 1000))
        if not await self.redis.set(self.keys.reconciler_due, self.settings.reconcile_interval, nx=True, px=interval_ms):
            return None
        return await self.run_once()

    async def run_once(self) -> Report | None:
        """One pass; None when another pass holds the lock.

        The lock is redis-py's (``Lock``: its token checked in Lua on renewal and release), held
        ``LOCK_SECONDS`` and renewed while the pass runs, so the lock of a worker killed mid-pass
        is free again within ``LOCK_SECONDS``, however long passes take. (It was held for at least
        60 s, 4 intervals, without renewal: a worker killed during a pass held back every stale job's
        re-send that long: 2 of 11 runs of ``tests/queue/test_celery_view.py``'s re-send test.)"""
        lock = self.redis.lock(self.keys.reconciler_lock, timeout=LOCK_SECONDS, blocking=False,
                               thread_local=False, raise_on_release_error=False)
        if not await lock.acquire():
            return None
        renewal = asyncio.create_task(_keep(lock), name="reconciler-lock")
        try:
            t, self._deleted = now(), 0
            report = Report(
                resent_running=await self._resend_stale(t),
                published_queued=await self._publish_orphans(t),
                released_parked=await self._release(),
                batches_repaired=await self._repair_batches(t),
                webhooks_published=await Outbox(self.store).run_due(OUTBOX_GRACE, t),
                index_entries_trimmed=await self._trim_expired(t),
                artifact_folders_deleted=self._deleted,
            )
        finally:
            renewal.cancel()
            await lock.release()  # only if still ours (a pass that outlived its lock frees nothing)
        if any(vars(report).values()):
            log.info("reconciled: %s", vars(report))
        return report

    # --- running jobs nobody runs --------------------------------------------------------------

    async def _resend_stale(self, t: float) -> int:
        ids = await self.store.ids_in_state(JobStatus.running)
        limit = self.settings.stale_job_seconds
        sent = 0
        for job in await self.store.liveness(ids):
            if job is None or job.state is not JobStatus.running:
                continue
            beat = job.heartbeat_at or 0.0
            if t - beat < limit:
                continue
            resent = job.reconciled_at
            if resent and resent > beat and t - resent < limit:
                continue  # sent again recently and nobody has picked it up yet
            await self._send(job, retries=job.attempts)
            await self.store.mark_resent(job.job_id, t)
            reason = f"no heartbeat for {t - beat:.0f}s; sent again"
            await asyncio.to_thread(mark_retried, job.job_id, job.attempts, reason)
            with bind(job_id=job.job_id, attempt=job.attempts):
                log.warning("job %s: %s", job.job_id, reason)
            observe_reconciled(Reconciled.resent)
            sent += 1
        return sent

    # --- queued jobs with no message -------------------------------------------------------------

    async def _publish_orphans(self, t: float) -> int:
        candidates: list[JobLiveness] = []
        start = 0
        while True:  # oldest first (seq follows creation); stop at the first young one
            ids = await self.store.ids_in_state(JobStatus.queued, start, start + CHUNK - 1)
            young = False
            for job in await self.store.liveness(ids):
                if job is None or job.state is not JobStatus.queued:
                    continue
                created = job.created_at if job.created_at is not None else t
                if t - created < self.settings.orphan_job_seconds:
                    young = True
                    break
                candidates.append(job)
            if young or len(ids) < CHUNK:
                break
            start += CHUNK
        if not candidates:
            return 0
        in_flight = await self._in_flight() | await self.dispatcher.parked_ids()
        published = 0
        for job in candidates:
            if job.job_id not in in_flight:
                if job.tenant is not None:
                    timeout = self._limit(job)
                    await self.dispatcher.park(job.tenant, [Outgoing(job.job_id, job.priority, timeout)])
                else:
                    await self._send(job)
                with bind(job_id=job.job_id):
                    log.warning("job %s: queued with no message in the broker; published", job.job_id)
                observe_reconciled(Reconciled.republished)
                published += 1
        return published

    async def _in_flight(self) -> set[str]:
        """Job ids named by a message waiting in a queue or held, unacknowledged, by a worker."""
        found: set[str] = set()
        for queue in (key for name in QUEUES for key in queue_keys(name)):
            start = 0
            while True:
                messages = await self.redis.lrange(queue, start, start + CHUNK - 1)
                for message in messages:
                    found.update(JOB_ID_IN_MESSAGE.findall(message))
                if len(messages) < CHUNK:
                    break
                start += CHUNK
        async for _, message in self.redis.hscan_iter(UNACKED, count=CHUNK):
            found.update(JOB_ID_IN_MESSAGE.findall(message))
        return found

    # --- tenants' fair dispatch ------------------------------------------------------------------

    async def _release(self) -> int:
        """Forget released jobs whose record is gone, then release what is due."""
        for tenant in await self.redis.smembers(self.keys.tenants_pending):
            key = self.keys.tenant_inflight(tenant)
            ids = await self.redis.zrange(key, 0, -1)
            gone = [job_id for job_id, live in zip(ids, await self.store.liveness(ids)) if live is None]
            if gone:
                await self.redis.zrem(key, *gone)
        return await self.dispatcher.release()

    # --- batches whose submitter died ------------------------------------------------------------

    async def _repair_batches(self, t: float) -> int:
        batches = BatchStore(self.store)
        abandoned = await batches.abandoned(t - 2 * self.settings.result_ttl, t - self.settings.orphan_job_seconds)
        for batch_id, recorded in abandoned.items():
            await batches.repair(batch_id, recorded)
            with bind(batch_id=batch_id):
                log.warning("batch %s: its submitter died; total set to the %d jobs recorded", batch_id, recorded)
        return len(abandoned)

    # --- indexes of expired records --------------------------------------------------------------

    async def _trim_expired(self, t: float) -> int:
        trimmed = 0
        for _ in range(TRIM_ROUNDS):
            members = await self.redis.zrangebyscore(self.keys.expiring, "-inf", t, start=0, num=CHUNK)
            if not members or not await self._artifacts_deleted(members):
                break
            async with self.redis.pipeline(transaction=False) as pipe:
                for member in members:
                    self._drop(pipe, member)
                pipe.zrem(self.keys.expiring, *members)
                await pipe.execute()
            trimmed += len(members)
        return trimmed

    def _drop(self, pipe: object, member: str) -> None:
        kind, _, rest = member.partition(" ")
        if kind == "batch":
            pipe.zrem(self.keys.batches, rest)  # type: ignore[attr-defined]
            return
        job_id, _, rest = rest.partition(" ")
        _state, _, labels = rest.partition(" ")
        if labels.startswith("schedule="):  # a schedule's job (see ``expiring_member`` in ``job_prelude.lua``)
            schedule, _, labels = labels.removeprefix("schedule=").partition(" ")
            pipe.zrem(self.keys.schedule_jobs(schedule), job_id)  # type: ignore[attr-defined]
        pipe.zrem(self.keys.all_jobs, job_id)  # type: ignore[attr-defined]
        for state in FINAL_STATES:
            pipe.zrem(self.keys.state_index(state.value), job_id)  # type: ignore[attr-defined]
        try:
            parsed = json.loads(labels or "{}")
        except ValueError:
            parsed = {}
        for key, value in parsed.items():
            pipe.zrem(self.keys.label_index(key, str(value)), job_id)  # type: ignore[attr-defined]

    async def _artifacts_deleted(self, members: list[str]) -> bool:
        """Delete the artifact folders of the expired jobs among ``members`` first; False (the
        members stay, for the next pass) when the store fails."""
        jobs = [m.split(" ")[1] for m in members if m.startswith("job ")]
        if not jobs:
            return True
        try:
            self._deleted += await asyncio.to_thread(self.artifacts.delete_jobs, jobs)
            await Quotas(self.redis, self.keys).forget_artifacts(jobs)  # their tenants' max_artifact_bytes
        except Exception as exc:
            log.error("artifacts of %d expired jobs not deleted (tried again next pass): %s: %s", len(jobs),
                      type(exc).__name__, exc)
            return False
        return True

    # --- helpers -------------------------------------------------------------------------------

    def _limit(self, job: JobLiveness) -> float:
        """The soft limit of the job's message: its timeout and the time it may wait for humans."""
        return queue_seconds(job.timeout, job.allow_human, job.human_timeout, self.settings)

    async def _send(self, job: JobLiveness, retries: int = 0) -> None:
        await asyncio.to_thread(send_job, job.job_id, job.priority, self._limit(job), retries)
