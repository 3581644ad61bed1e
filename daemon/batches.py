"""Batches: many jobs submitted at once, counted together, cancelled together, read back as JSONL.

A batch is a hash ``P batch:{id}`` (``daemon.keys``) plus the list ``P batch:{id}:jobs`` of its job
ids. Its counters (``queued``, ``running``, ``retrying``, ``succeeded``, ``failed``,
``cancelled``) are not written here: every job of the batch carries a ``batch`` field, and the
job store's transition scripts move one unit from the old state's counter to the new one's inside
the same Lua call that changes the job, so the counters cannot drift from the jobs.

A batch completes once ``succeeded + failed + cancelled == total``; ``complete_if_done`` (a Lua
script) marks it finished exactly once, however many processes race to see the last job end, so
its webhook is sent once.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, Field

from daemon import lua
from daemon.store import JobStore
from workers.models import JobStatus

BATCH_ID = re.compile(r"^[0-9a-f]{32}$")
COUNTERS = tuple(s.value for s in JobStatus)
FINAL = ("succeeded", "failed", "cancelled")
READ_CHUNK = 500  # job records read per round trip when streaming results or cancelling
CREATE_CHUNK = 500  # jobs created per script call (keeps each call to a few milliseconds of Redis time)

# The job store's own CREATE script, run once per job inside one call: ``ARGV[i]`` is the JSON
# array of job i's arguments, which becomes that run's ``ARGV``. Same code as ``JobStore.create``
# (so a batch job is recorded exactly like a single one), without a round trip per job.
CREATE_MANY = (
    "local function create_one(ARGV)\n" + lua.CREATE + "\nend\n"
    + "local out = {}\n"
    + "for i = 1, #ARGV do\n"
    + "  local reply = create_one(cjson.decode(ARGV[i]))\n"
    + "  out[#out + 1] = reply[1]\n  out[#out + 1] = reply[2]\n"
    + "end\nreturn out\n"
)

# KEYS[1] = batch hash, KEYS[2] = its job list; ARGV[1] = now, ARGV[2] = ttl.
# Returns 1 to the one caller that finished the batch, else 0.
COMPLETE = r"""
local h = redis.call('HMGET', KEYS[1], 'total', 'succeeded', 'failed', 'cancelled', 'finished_at')
if not h[1] or h[5] then return 0 end
local done = (tonumber(h[2]) or 0) + (tonumber(h[3]) or 0) + (tonumber(h[4]) or 0)
if done < tonumber(h[1]) then return 0 end
redis.call('HSET', KEYS[1], 'finished_at', ARGV[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[2])
return 1
"""


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


def jobs_key(store: JobStore, batch_id: str) -> str:
    return store.keys.batch(batch_id) + ":jobs"


def schedule_runs_key(store: JobStore, schedule_id: str) -> str:
    return f"{store.keys.prefix}schedule:{schedule_id}:runs"


class BatchStore:
    """Batch records next to the job store they count (same Redis, same key prefix)."""

    def __init__(self, jobs: JobStore) -> None:
        self.jobs = jobs
        self.redis = jobs.redis
        self._complete = self.redis.register_script(COMPLETE)
        self._create_many = self.redis.register_script(CREATE_MANY)

    async def create(self, specs: list[Any], max_steps: list[int], *, schedule_id: str | None = None,
                     webhook_url: str | None = None) -> tuple[str, list[str], list[bool]]:
        """Record a batch and its queued jobs; returns (batch id, job ids, created flags).

        The batch hash (with its ``total``) is written before the jobs, so the counters the jobs'
        creation bumps never see a batch without its size.
        """
        batch_id = uuid.uuid4().hex
        bkey = self.jobs.keys.batch(batch_id)
        created_at = datetime.now(UTC).timestamp()
        fields = {"id": batch_id, "total": len(specs), "created_at": repr(created_at),
                  "schedule": schedule_id or "", "webhook_url": webhook_url or ""}
        await self.redis.hset(bkey, mapping=fields)
        extra = {"batch": batch_id}
        argvs = [json.dumps(self.jobs.create_args(spec, max_steps=steps, extra=extra))
                 for spec, steps in zip(specs, max_steps)]
        flat: list[Any] = []
        async with self.redis.pipeline(transaction=False) as pipe:
            for start in range(0, len(argvs), CREATE_CHUNK):
                await self._create_many(keys=[], args=argvs[start:start + CREATE_CHUNK], client=pipe)
            for reply in await pipe.execute():
                flat += reply
        job_ids = flat[0::2]
        created = [bool(int(flag)) for flag in flat[1::2]]
        duplicates = created.count(False)
        async with self.redis.pipeline(transaction=False) as pipe:
            if job_ids:
                pipe.rpush(jobs_key(self.jobs, batch_id), *job_ids)
            if duplicates:  # an existing job is not this batch's: it is neither counted nor awaited
                pipe.hincrby(bkey, "total", -duplicates)
                pipe.hset(bkey, "duplicates", duplicates)
            pipe.zadd(f"{self.jobs.keys.prefix}batches", {batch_id: created_at})
            if schedule_id:
                pipe.zadd(schedule_runs_key(self.jobs, schedule_id), {batch_id: created_at})
            await pipe.execute()
        if duplicates:
            await self.complete_if_done(batch_id)
        return batch_id, job_ids, created

    async def get(self, batch_id: str) -> BatchRecord | None:
        if not BATCH_ID.match(batch_id):
            return None
        raw = await self.redis.hgetall(self.jobs.keys.batch(batch_id))
        return BatchRecord.from_hash(raw) if raw.get("id") else None

    async def job_ids(self, batch_id: str) -> list[str]:
        return await self.redis.lrange(jobs_key(self.jobs, batch_id), 0, -1)

    async def complete_if_done(self, batch_id: str) -> bool:
        """Mark the batch finished if every job is; True for the one caller that did it."""
        keys = [self.jobs.keys.batch(batch_id), jobs_key(self.jobs, batch_id)]
        now = repr(datetime.now(UTC).timestamp())
        return bool(await self._complete(keys=keys, args=[now, self.jobs.result_ttl]))

    async def cancel(self, batch_id: str) -> int:
        """Cancel every unfinished job; returns how many queued jobs were cancelled outright.

        Running jobs get their cancel flag and stop before their next action.
        """
        await self.redis.hset(self.jobs.keys.batch(batch_id), "cancel_requested", "1")
        job_ids = await self.job_ids(batch_id)
        cancelled = 0
        for start in range(0, len(job_ids), READ_CHUNK):
            async with self.redis.pipeline(transaction=False) as pipe:
                for job_id in job_ids[start:start + READ_CHUNK]:
                    await self.jobs.cancel_in(pipe, job_id)
                outcomes = await pipe.execute()
            cancelled += sum(1 for outcome, _ in outcomes if outcome == "cancelled")
        return cancelled

    async def results(self, batch_id: str) -> AsyncIterator[dict[str, Any]]:
        """One dict per job, in submission order: id, status, final_answer, data, error, category."""
        job_ids = await self.job_ids(batch_id)
        fields = ("state", "result", "error", "category")
        for start in range(0, len(job_ids), READ_CHUNK):
            chunk = job_ids[start:start + READ_CHUNK]
            async with self.redis.pipeline(transaction=False) as pipe:
                for job_id in chunk:
                    pipe.hmget(self.jobs.keys.job(job_id), fields)
                rows = await pipe.execute()
            for job_id, (state, result, error, category) in zip(chunk, rows):
                yield result_line(job_id, state, result, error, category)

    async def for_schedule(self, schedule_id: str, limit: int = 50) -> list[BatchRecord]:
        """The schedule's runs, newest first (runs whose record expired are dropped)."""
        key = schedule_runs_key(self.jobs, schedule_id)
        ids = await self.redis.zrevrange(key, 0, limit - 1)
        records = [await self.get(batch_id) for batch_id in ids]
        gone = [batch_id for batch_id, record in zip(ids, records) if record is None]
        if gone:
            await self.redis.zrem(key, *gone)
        return [r for r in records if r is not None]


def result_line(job_id: str, state: str | None, result: str | None, error: str | None,
                category: str | None) -> dict[str, Any]:
    parsed = json.loads(result) if result else {}
    return {
        "id": job_id,
        "status": state or "expired",
        "final_answer": parsed.get("final_answer"),
        "data": parsed.get("data"),
        "error": error or parsed.get("error") or (None if state else "the job record expired (BROWSERD_RESULT_TTL)"),
        "category": category or None,
    }
