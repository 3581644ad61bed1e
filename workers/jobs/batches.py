"""Batches: many jobs submitted at once, counted together, cancelled together, read back as JSONL.

A batch is a hash ``P batch:{id}`` (``keys``) plus the list ``P batch:{id}:jobs`` of its job
ids. Its counters (``queued``, ``running``, ``retrying``, ``succeeded``, ``failed``,
``cancelled``) are not written here: every job of the batch carries a ``batch`` field, and the
job store's transition scripts move one unit from the old state's counter to the new one's inside
the same Lua call that changes the job, so the counters cannot drift from the jobs.

A batch completes once ``succeeded + failed + cancelled == total``: the Lua call that finishes its
last job marks it finished and records its webhook in the outbox (``lua.finalize``), in the same
atomic step, so a process dying right after cannot leave a batch at done == total but running.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

import workers.jobs.lua as lua
from workers.jobs.artifacts import ArtifactError, ArtifactStore, offloaded_name
from workers.jobs.keys import is_id, new_id
from workers.jobs.models import JobStatus
from workers.jobs.store import JobStore

COUNTERS = tuple(s.value for s in JobStatus)
READ_CHUNK = 500  # job records read per round trip when streaming results or cancelling
CREATE_CHUNK = 500  # jobs created per script call (keeps each call to a few milliseconds of Redis time)

# The job store's own CREATE script, run once per job inside one call: ``ARGV[i]`` is the JSON
# array of job i's arguments, which becomes that run's ``ARGV``. Same code as ``JobStore.create``
# (so a batch job is recorded exactly like a single one), without a round trip per job. Each id
# joins the batch's list (``KEYS[2]``) in the same call, and an item whose idempotency key named an
# existing job leaves the batch's ``total`` (``KEYS[1]``): the batch is consistent after every call,
# even if the process submitting it dies between two.
CREATE_MANY = (
    "local function create_one(ARGV)\n" + lua.CREATE + "\nend\n"
    + "local out = {}\n"
    + "for i = 1, #ARGV do\n"
    + "  local reply = create_one(cjson.decode(ARGV[i]))\n"
    + "  redis.call('RPUSH', KEYS[2], reply[1])\n"
    + "  if tonumber(reply[2]) == 0 then\n"
    + "    redis.call('HINCRBY', KEYS[1], 'total', -1)\n    redis.call('HINCRBY', KEYS[1], 'duplicates', 1)\n"
    + "  end\n"
    + "  out[#out + 1] = reply[1]\n  out[#out + 1] = reply[2]\n"
    + "end\nreturn out\n"
)


class BatchCounts(BaseModel):
    queued: int = 0
    running: int = 0
    retrying: int = 0
    succeeded: int = 0
    failed: int = 0
    cancelled: int = 0


class BatchRecord(BaseModel):
    """A batch's size, counters and progress."""

    id: str
    state: str = Field(description="running | completed (every job finished) | cancelling.")
    total: int = Field(description="Jobs in the batch.")
    counts: BatchCounts
    done: int = Field(description="Jobs that finished: succeeded + failed + cancelled.")
    progress: float = Field(description="done / total, from 0 to 1.")
    schedule_id: str | None = Field(None, description="The schedule whose run this batch is.")
    duplicates: int = Field(0, description="Items whose idempotency key named an existing job (not counted).")
    cancel_requested: bool = False
    webhook_url: str | None = None
    created_at: datetime
    finished_at: datetime | None = None

    @classmethod
    def from_hash(cls, raw: dict[str, str]) -> BatchRecord:
        counts = BatchCounts(**{k: max(0, int(raw.get(k) or 0)) for k in COUNTERS})
        total = int(raw.get("total") or 0)
        done = counts.succeeded + counts.failed + counts.cancelled
        finished = raw.get("finished_at")
        cancelling = raw.get("cancel_requested") == "1"
        return cls(
            id=raw["id"],
            state="completed" if finished else ("cancelling" if cancelling else "running"),
            total=total,
            counts=counts,
            done=done,
            progress=round(done / total, 4) if total else 1.0,
            schedule_id=raw.get("schedule") or None,
            duplicates=int(raw.get("duplicates") or 0),
            cancel_requested=cancelling,
            webhook_url=raw.get("webhook_url") or None,
            created_at=datetime.fromtimestamp(float(raw["created_at"]), UTC),
            finished_at=datetime.fromtimestamp(float(finished), UTC) if finished else None,
        )

    @property
    def finished(self) -> bool:
        return self.finished_at is not None


class BatchStore:
    """Batch records next to the job store they count (same Redis, same key prefix)."""

    def __init__(self, jobs: JobStore) -> None:
        self.jobs = jobs
        self.redis = jobs.redis
        self._complete = self.redis.register_script(lua.COMPLETE_BATCH)
        self._create_many = self.redis.register_script(CREATE_MANY)

    async def create(self, specs: list[Any], max_steps: list[int], *, schedule_id: str | None = None,
                     webhook_url: str | None = None) -> tuple[str, list[str], list[bool]]:
        """Record a batch and its queued jobs; returns (batch id, job ids, created flags).

        The batch hash (with its ``total``) is written before the jobs, so the counters the jobs'
        creation bumps never see a batch without its size.
        """
        batch_id = new_id()
        keys = self.jobs.keys
        bkey = keys.batch(batch_id)
        created_at = datetime.now(UTC).timestamp()
        fields = {"id": batch_id, "total": len(specs), "created_at": repr(created_at),
                  "schedule": schedule_id or "", "webhook_url": webhook_url or ""}
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.hset(bkey, mapping=fields)
            pipe.zadd(keys.batches, {batch_id: created_at})
            if schedule_id:
                pipe.zadd(keys.schedule_runs(schedule_id), {batch_id: created_at})
            await pipe.execute()
        extra = {"batch": batch_id, **({"schedule": schedule_id} if schedule_id else {})}
        argvs = [json.dumps(self.jobs.create_args(spec, max_steps=steps, extra=extra))
                 for spec, steps in zip(specs, max_steps)]
        flat: list[Any] = []
        async with self.redis.pipeline(transaction=False) as pipe:
            for start in range(0, len(argvs), CREATE_CHUNK):
                await self._create_many(keys=[bkey, keys.batch_jobs(batch_id)],
                                        args=argvs[start:start + CREATE_CHUNK], client=pipe)
            for reply in await pipe.execute():
                flat += reply
        job_ids = flat[0::2]
        created = [bool(int(flag)) for flag in flat[1::2]]
        if not all(created):  # an existing job is not this batch's: it is neither counted nor awaited
            await self.complete_if_done(batch_id)
        return batch_id, job_ids, created

    async def mark_submitted(self, batch_id: str) -> None:
        """Every message of the batch was published; until then the reconciler may repair it."""
        await self.redis.hset(self.jobs.keys.batch(batch_id), "submitted", "1")

    async def get(self, batch_id: str) -> BatchRecord | None:
        if not is_id(batch_id):
            return None
        raw = await self.redis.hgetall(self.jobs.keys.batch(batch_id))
        return BatchRecord.from_hash(raw) if raw.get("id") else None

    async def job_ids(self, batch_id: str) -> list[str]:
        return await self.redis.lrange(self.jobs.keys.batch_jobs(batch_id), 0, -1)

    async def complete_if_done(self, batch_id: str) -> bool:
        """Mark the batch finished if every job is (owing its webhook); True for the one caller that did it."""
        args = [self.jobs.keys.prefix, batch_id, repr(datetime.now(UTC).timestamp()), self.jobs.result_ttl]
        return bool(await self._complete(keys=[], args=args))

    async def cancel(self, batch_id: str) -> list[str]:
        """Cancel every unfinished job; returns the queued jobs cancelled outright.

        Running jobs get their cancel flag and stop before their next action.
        """
        await self.redis.hset(self.jobs.keys.batch(batch_id), "cancel_requested", "1")
        job_ids = await self.job_ids(batch_id)
        cancelled: list[str] = []
        for start in range(0, len(job_ids), READ_CHUNK):
            chunk = job_ids[start:start + READ_CHUNK]
            async with self.redis.pipeline(transaction=False) as pipe:
                for job_id in chunk:
                    await self.jobs.cancel_in(pipe, job_id)
                outcomes = await pipe.execute()
            cancelled += [job_id for job_id, (outcome, _) in zip(chunk, outcomes) if outcome == "cancelled"]
        return cancelled

    async def results(self, batch_id: str, artifacts: ArtifactStore | None = None) -> AsyncIterator[ResultLine]:
        """One line per job, in submission order: id, status, final_answer, data, error, category, labels.
        With ``artifacts``, a result too large for its record is read back from the store."""
        job_ids = await self.job_ids(batch_id)
        fields = ("state", "result", "error", "category", "labels")
        for start in range(0, len(job_ids), READ_CHUNK):
            chunk = job_ids[start:start + READ_CHUNK]
            async with self.redis.pipeline(transaction=False) as pipe:
                for job_id in chunk:
                    pipe.hmget(self.jobs.keys.job(job_id), fields)
                rows = await pipe.execute()
            for job_id, (state, result, error, category, labels) in zip(chunk, rows):
                line = result_line(job_id, state, result, error, category, labels)
                if artifacts is not None and line.result_artifact is not None:
                    line = await _inlined(line, artifacts, line.result_artifact)
                yield line

    async def recent(self, limit: int = 50, before: float | None = None) -> list[BatchRecord]:
        """Batches newest first, created before ``before`` (epoch seconds) when given."""
        top = f"({before!r}" if before is not None else "+inf"
        ids = await self.redis.zrevrangebyscore(self.jobs.keys.batches, top, "-inf", start=0, num=limit)
        records = [await self.get(batch_id) for batch_id in ids]
        gone = [batch_id for batch_id, record in zip(ids, records) if record is None]
        if gone:  # expired with their results
            await self.redis.zrem(self.jobs.keys.batches, *gone)
        return [r for r in records if r is not None]

    async def for_schedule(self, schedule_id: str, limit: int = 50) -> list[BatchRecord]:
        """The schedule's runs, newest first (runs whose record expired are dropped)."""
        key = self.jobs.keys.schedule_runs(schedule_id)
        ids = await self.redis.zrevrange(key, 0, limit - 1)
        records = [await self.get(batch_id) for batch_id in ids]
        gone = [batch_id for batch_id, record in zip(ids, records) if record is None]
        if gone:
            await self.redis.zrem(key, *gone)
        return [r for r in records if r is not None]


class ResultLine(BaseModel):
    """One job's outcome in a batch's results (``GET /v1/batches/{id}/results``, one per line)."""

    id: str
    status: str = Field(description="The job's state, or 'expired' once its record is gone.")
    final_answer: str | None = None
    data: Any = None
    error: str | None = None
    category: str | None = None
    labels: dict[str, str] = Field(default_factory=dict, description="The job's labels, to join on.")
    result_artifact: str | None = Field(None, description="Where a result too large for the record is stored "
                                        "(final_answer and data are read back from it here).")


def result_line(job_id: str, state: str | None, result: str | None, error: str | None,
                category: str | None, labels: str | None = None) -> ResultLine:
    parsed = json.loads(result) if result else {}
    return ResultLine(
        id=job_id,
        status=state or "expired",
        final_answer=parsed.get("final_answer"),
        data=parsed.get("data"),
        error=error or parsed.get("error") or (None if state else "the job record expired (BROWSERD_RESULT_TTL)"),
        category=category or None,
        labels=json.loads(labels) if labels else {},
        result_artifact=parsed.get("result_artifact"),
    )


async def _inlined(line: ResultLine, artifacts: ArtifactStore, link: str) -> ResultLine:
    """``line`` with the final answer and data of its job's ``result.json`` at ``link`` (as it was, if that is gone)."""
    try:
        stored = json.loads(await asyncio.to_thread(artifacts.job(line.id).read, offloaded_name(link)))
    except ArtifactError:
        return line
    return line.model_copy(update={"final_answer": stored.get("final_answer"), "data": stored.get("data")})
