"""Batches: many jobs submitted at once, counted together, cancelled together, read back as JSONL.

A batch is a hash ``P batch:{id}`` (``store.keys``) plus the list ``P batch:{id}:jobs`` of its job
ids. Its counters (``queued``, ``running``, ``retrying``, ``succeeded``, ``failed``,
``cancelled``) are not written here: every job of the batch carries a ``batch`` field, and the
job store's transition scripts move one unit from the old state's counter to the new one's inside
the same Lua call that changes the job, so the counters cannot drift from the jobs.

A batch completes once ``succeeded + failed + cancelled == total``: the Lua call that finishes its
last job marks it finished and records its webhook in the outbox (``finalize`` in
``job_prelude.lua``), in the same atomic step, so a process dying right after cannot leave a batch
at done == total but running.

The batch hash's fields are read and written here (and by those scripts) only: ``id``, ``total``,
``created_at``, ``schedule``, ``webhook_url``, ``crawl`` (the crawl whose pages it holds, set by
``crawls.store``), the six counters, ``duplicates`` (items whose
idempotency key named an existing job), ``cancel_requested``, ``submitted`` (``1`` once every
message was published, ``repaired`` when the reconciler fixed ``total``), ``finished_at``, and
``counted`` (its completion was counted in the metrics), ``cost_usd`` (its jobs' LLM cost, ``add_cost``),
``max_cost_usd`` and ``budget_stopped`` (its cost reached it: its queued jobs were cancelled).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from workers.jobs.artifacts.names import ArtifactError, offloaded_name
from workers.jobs.batches.models import BatchCounts, BatchRecord, BatchState, ResultLine
from workers.jobs.ids import is_id, new_id
from workers.jobs.model.status import JobStatus
from workers.jobs.store.codec import JobEnd
from workers.jobs.store.jobs import ID_ARG, JobStore
from workers.jobs.store.outcomes import CancelOutcome
from workers.jobs.store.scripts import source

if TYPE_CHECKING:  # the caller hands in its artifact store; batches never open one (fsspec) themselves
    from workers.jobs.artifacts.store import ArtifactStore

COUNTERS = tuple(s.value for s in JobStatus)
READ_CHUNK = 500  # job records read per round trip when streaming results or cancelling
CREATE_CHUNK = 500  # jobs created per script call (keeps each call to a few milliseconds of Redis time)
PIPELINE_CALLS = 4  # script calls per round trip: 2,000 jobs; the next 2,000 are built meanwhile
EXPIRED = "the job record expired (BROWSERD_RESULT_TTL)"


@dataclass(frozen=True)
class _Round:
    """One round trip's jobs: the id each gets (unless its idempotency key names an existing job)
    and its ``job_create.lua`` arguments as JSON."""

    job_ids: list[str]
    argvs: list[str]


@dataclass(frozen=True)
class _Owner:
    """Whose jobs a batch's are: the batch, its schedule, its tenant, and the quota admission
    they were reserved under (``tenants.quotas``)."""

    batch_id: str
    schedule_id: str | None
    tenant: str | None
    admission: str | None = None


@dataclass(frozen=True)
class BatchCreated:
    """What ``BatchStore.create`` recorded: the batch, its job ids in order, and which of them are new
    (False: an idempotency key named an existing job, which is neither counted nor awaited)."""

    batch_id: str
    job_ids: list[str]
    created: list[bool]


def record_of(raw: dict[str, str]) -> BatchRecord | None:
    """The batch a hash holds; None when it holds none (expired)."""
    if not raw.get("id"):
        return None
    counts = BatchCounts(**{k: max(0, int(raw.get(k) or 0)) for k in COUNTERS})
    total = int(raw.get("total") or 0)
    done = counts.succeeded + counts.failed + counts.cancelled
    finished = raw.get("finished_at")
    cancelling = raw.get("cancel_requested") == "1"
    return BatchRecord(
        id=raw["id"],
        state=BatchState.completed if finished else (BatchState.cancelling if cancelling else BatchState.running),
        total=total,
        counts=counts,
        done=done,
        progress=round(done / total, 4) if total else 1.0,
        schedule_id=raw.get("schedule") or None,
        tenant=raw.get("tenant") or None,
        duplicates=int(raw.get("duplicates") or 0),
        cost_usd=round(float(raw.get("cost_usd") or 0), 6),
        max_cost_usd=float(raw["max_cost_usd"]) if raw.get("max_cost_usd") else None,
        budget_stopped=raw.get("budget_stopped") == "1",
        cancel_requested=cancelling,
        webhook_url=raw.get("webhook_url") or None,
        created_at=datetime.fromtimestamp(float(raw["created_at"]), UTC),
        finished_at=datetime.fromtimestamp(float(finished), UTC) if finished else None,
    )


class BatchStore:
    """Batch records next to the job store they count (same Redis, same key prefix)."""

    def __init__(self, jobs: JobStore) -> None:
        self.jobs = jobs
        self.redis = jobs.redis
        self.keys = jobs.keys
        self._complete = self.redis.register_script(source("batch_complete"))
        self._create_many = self.redis.register_script(source("batch_create_many",
                                                              CREATE_ONE=source("job_create")))

    async def create(self, specs: list[Any], max_steps: list[int], *, schedule_id: str | None = None,
                     webhook_url: str | None = None, tenant: str | None = None,
                     max_cost_usd: float | None = None, admission: str | None = None) -> BatchCreated:
        """Record a batch and its queued jobs (``tenant``'s, or the operator's; ``admission``: the
        token of the quota reservation they were admitted under, which each job's creation counts off).

        The batch hash (with its ``total``) is written before the jobs, so the counters the jobs'
        creation bumps never see a batch without its size.
        """
        batch_id = new_id()
        bkey = self.keys.batch(batch_id)
        created_at = datetime.now(UTC).timestamp()
        fields = {"id": batch_id, "total": len(specs), "created_at": repr(created_at),
                  "schedule": schedule_id or "", "webhook_url": webhook_url or "", "tenant": tenant or "",
                  "max_cost_usd": repr(max_cost_usd) if max_cost_usd is not None else ""}
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hset(bkey, mapping=fields)
            pipe.zadd(self.keys.batches, {batch_id: created_at})
            if schedule_id:
                pipe.zadd(self.keys.schedule_runs(schedule_id), {batch_id: created_at})
            await pipe.execute()
        owner = _Owner(batch_id, schedule_id, tenant, admission)
        step = CREATE_CHUNK * PIPELINE_CALLS

        def round_of(group: int) -> asyncio.Future[_Round]:  # CPU: in a thread, off the event loop
            return asyncio.ensure_future(asyncio.to_thread(self._round, specs[group:group + step],
                                                           max_steps[group:group + step], owner))

        job_ids: list[str] = []
        created = [True] * len(specs)
        upcoming = round_of(0)
        try:
            for group in range(0, len(specs), step):  # a few round trips, each packed while the loop stays free
                packed = await upcoming
                if group + step < len(specs):  # the next round's arguments are built while Redis runs this one's
                    upcoming = round_of(group + step)
                job_ids += packed.job_ids
                async with self.redis.pipeline(transaction=False) as pipe:
                    for start in range(0, len(packed.argvs), CREATE_CHUNK):
                        await self._create_many(keys=[bkey, self.keys.batch_jobs(batch_id)],
                                                args=packed.argvs[start:start + CREATE_CHUNK], client=pipe)
                    for n, reply in enumerate(await pipe.execute()):  # only the items that made no job
                        first = group + n * CREATE_CHUNK - 1  # the reply's places count from 1
                        for place, existing in zip(reply[0::2], reply[1::2], strict=True):
                            job_ids[first + int(place)], created[first + int(place)] = existing, False
        finally:
            upcoming.cancel()  # Redis failed mid-way: the next round is not wanted (done already: no-op)
        if not all(created):  # an existing job is not this batch's: it is neither counted nor awaited
            await self.complete_if_done(batch_id)
        return BatchCreated(batch_id, job_ids, created)

    def _round(self, specs: list[Any], max_steps: list[int], owner: _Owner) -> _Round:
        packed = _Round([], [])
        for spec, steps in zip(specs, max_steps, strict=True):
            args = self.jobs.create_args(spec, max_steps=steps, batch=owner.batch_id, schedule=owner.schedule_id,
                                         tenant=owner.tenant, admission=owner.admission)
            packed.job_ids.append(args[ID_ARG])
            packed.argvs.append(json.dumps(args))
        return packed

    async def add_cost(self, batch_id: str, usd: float) -> bool:
        """A job's LLM cost joins its batch's ``cost_usd`` (nothing for a batch whose record expired).
        True when this made the batch reach its ``max_cost_usd``: the batch stops starting jobs
        (``stop_starting``), once."""
        key = self.keys.batch(batch_id)
        if usd <= 0 or not is_id(batch_id) or not await self.redis.exists(key):
            return False
        total = float(await self.redis.hincrbyfloat(key, "cost_usd", usd))
        cap = await self.redis.hget(key, "max_cost_usd")
        if not cap or total < float(cap):
            return False
        return bool(await self.redis.hsetnx(key, "budget_stopped", "1"))

    async def stop_starting(self, batch_id: str) -> int:
        """Cancel the batch's queued jobs (its running ones go on); how many. A job starting in the
        same instant may get the cancel as a running one, and stop before its next action."""
        job_ids = await self.job_ids(batch_id)
        stopped = 0
        for start in range(0, len(job_ids), READ_CHUNK):
            chunk = job_ids[start:start + READ_CHUNK]
            queued = [job.job_id for job in await self.jobs.liveness(chunk)
                      if job is not None and job.state is JobStatus.queued]
            results = await self.jobs.cancel_many(queued) if queued else []
            stopped += sum(result.outcome is CancelOutcome.cancelled for result in results)
        return stopped

    async def mark_submitted(self, batch_id: str) -> None:
        """Every message of the batch was published; until then the reconciler may repair it."""
        await self.redis.hset(self.keys.batch(batch_id), "submitted", "1")

    async def get(self, batch_id: str) -> BatchRecord | None:
        if not is_id(batch_id):
            return None
        return record_of(await self.redis.hgetall(self.keys.batch(batch_id)))

    async def job_ids(self, batch_id: str) -> list[str]:
        return await self.redis.lrange(self.keys.batch_jobs(batch_id), 0, -1)

    async def complete_if_done(self, batch_id: str) -> bool:
        """Mark the batch finished if every job is (owing its webhook); True for the one caller that did it."""
        args = [self.keys.prefix, batch_id, repr(datetime.now(UTC).timestamp()), self.jobs.result_ttl]
        return bool(await self._complete(keys=[], args=args))

    async def claim_completion_count(self, batch_id: str) -> int:
        """For the one caller that may count this batch's completion in the metrics (the batch is
        finished and nobody claimed the count before: ``HSETNX counted``), which finish it is (1; a
        crawl's batch resumed after its cancel finishes again: 2, ...); 0 for everyone else."""
        key = self.keys.batch(batch_id)
        finished, finishes = await self.redis.hmget(key, ["finished_at", "finishes"])
        if not finished or not await self.redis.hsetnx(key, "counted", "1"):
            return 0
        return int(finishes or 1)

    async def abandoned(self, created_from: float, created_to: float) -> dict[str, int]:
        """Batches created in that window whose submitter never marked them submitted and that did not
        finish: batch id -> the jobs actually recorded (every recorded job counts in one state)."""
        ids = await self.redis.zrangebyscore(self.keys.batches, created_from, created_to)
        fields = ("id", "submitted", "finished_at", *COUNTERS)
        async with self.redis.pipeline(transaction=False) as pipe:
            for batch_id in ids:
                pipe.hmget(self.keys.batch(batch_id), fields)
            rows = await pipe.execute() if ids else []
        return {batch_id: sum(int(c or 0) for c in counts)
                for batch_id, (exists, submitted, finished, *counts) in zip(ids, rows)
                if exists and not submitted and not finished}

    async def repair(self, batch_id: str, recorded: int) -> None:
        """Its submitter died: the batch is the ``recorded`` jobs it has (and completes if they are done)."""
        await self.redis.hset(self.keys.batch(batch_id), mapping={"total": recorded, "submitted": "repaired"})
        await self.complete_if_done(batch_id)

    async def cancel(self, batch_id: str) -> list[str]:
        """Cancel every unfinished job; returns the queued jobs cancelled outright.

        Running jobs get their cancel flag and stop before their next action.
        """
        await self.redis.hset(self.keys.batch(batch_id), "cancel_requested", "1")
        job_ids = await self.job_ids(batch_id)
        cancelled: list[str] = []
        for start in range(0, len(job_ids), READ_CHUNK):
            chunk = job_ids[start:start + READ_CHUNK]
            results = await self.jobs.cancel_many(chunk)
            cancelled += [job_id for job_id, result in zip(chunk, results) if result.outcome is CancelOutcome.cancelled]
        return cancelled

    async def results(self, batch_id: str, artifacts: ArtifactStore | None = None) -> AsyncIterator[ResultLine]:
        """One line per job, in submission order: id, status, final_answer, data, error, category, labels.
        With ``artifacts``, a result too large for its record is read back from the store."""
        job_ids = await self.job_ids(batch_id)
        for start in range(0, len(job_ids), READ_CHUNK):
            for line in await self.lines(job_ids[start:start + READ_CHUNK], artifacts):
                yield line

    async def lines(self, job_ids: list[str], artifacts: ArtifactStore | None = None) -> list[ResultLine]:
        """The results lines of these jobs (of one batch), in this order: one round trip for their ends."""
        found = []
        for job_id, end in zip(job_ids, await self.jobs.ends(job_ids, with_result=True)):
            line = result_line(job_id, end)
            if artifacts is not None and line.result_artifact is not None:
                line = await _inlined(line, artifacts, line.result_artifact)
            found.append(line)
        return found

    async def job_ids_from(self, batch_id: str, start: int, count: int) -> list[str]:
        """``count`` of the batch's job ids from position ``start`` (in submission order)."""
        return await self.redis.lrange(self.keys.batch_jobs(batch_id), start, start + count - 1)

    async def recent(self, limit: int = 50, before: float | None = None, tenant: str | None = None) -> list[BatchRecord]:
        """Batches newest first, created before ``before`` (epoch seconds) when given; ``tenant``:
        only that tenant's (None: everyone's)."""
        top = f"({before!r}" if before is not None else "+inf"
        found: list[BatchRecord] = []
        while len(found) < limit:
            page = await self.redis.zrevrangebyscore(self.keys.batches, top, "-inf", start=0, num=limit, withscores=True)
            if not page:
                break
            records = [await self.get(batch_id) for batch_id, _ in page]
            gone = [batch_id for (batch_id, _), record in zip(page, records) if record is None]
            if gone:  # expired with their results
                await self.redis.zrem(self.keys.batches, *gone)
            found += [r for r in records if r is not None and (tenant is None or r.tenant == tenant)]
            top = f"({page[-1][1]!r}"
        return found[:limit]

    async def for_schedule(self, schedule_id: str, limit: int = 50) -> list[BatchRecord]:
        """The schedule's runs, newest first (runs whose record expired are dropped)."""
        key = self.keys.schedule_runs(schedule_id)
        ids = await self.redis.zrevrange(key, 0, limit - 1)
        records = [await self.get(batch_id) for batch_id in ids]
        gone = [batch_id for batch_id, record in zip(ids, records) if record is None]
        if gone:
            await self.redis.zrem(key, *gone)
        return [r for r in records if r is not None]


def result_line(job_id: str, end: JobEnd | None) -> ResultLine:
    """A job's line in its batch's results (``end`` read with its result; None: the record expired)."""
    if end is None:
        return ResultLine(id=job_id, status="expired", error=EXPIRED)
    head = end.head
    return ResultLine(
        id=job_id,
        status=end.state.value,
        final_answer=head.final_answer,
        data=head.data,
        error=end.error or head.error,
        category=end.category.value if end.category else None,
        labels=end.labels,
        cost_usd=head.cost_usd,
        reused_from=head.reused_from,
        result_artifact=head.result_artifact,
    )


async def _inlined(line: ResultLine, artifacts: ArtifactStore, link: str) -> ResultLine:
    """``line`` with the final answer and data of its job's ``result.json`` at ``link`` (as it was, if that is gone)."""
    try:
        stored = json.loads(await asyncio.to_thread(artifacts.job(line.id).read, offloaded_name(link)))
    except ArtifactError:
        return line
    return line.model_copy(update={"final_answer": stored.get("final_answer"), "data": stored.get("data")})
