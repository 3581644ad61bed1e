"""The job store: job records, their event streams, indexes and worker heartbeats in Redis.

Every state change goes through a Lua script (``daemon.lua``), so the API, any number of workers
and a redelivered message can race freely: exactly one of them wins each transition.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis

from daemon import lua
from daemon.keys import Keys
from daemon.records import JobEvent, JobRecord, now
from workers.models import JobResult, JobSpec, StepRecord

LIST_LIMIT_MAX = 200
JOB_ID = re.compile(r"^[0-9a-f]{32}$")  # uuid4().hex; anything else names no job (and no other key)


@dataclass(frozen=True)
class Claim:
    """What a delivery may do with a job: ``run`` it (as attempt ``attempt``) or leave it."""

    outcome: str  # run | missing | finished | busy | cancelled | lost
    attempt: int


@dataclass(frozen=True)
class Page:
    jobs: list[JobRecord]
    next_cursor: int | None


def connect(url: str) -> aioredis.Redis:
    """An asyncio Redis client returning text, as the store expects."""
    return aioredis.from_url(url, decode_responses=True, health_check_interval=30)


class JobStore:
    """Job records in one Redis (``client`` must decode responses to ``str``)."""

    def __init__(self, client: aioredis.Redis, *, result_ttl: int, keys: Keys | None = None) -> None:
        self.redis = client
        self.keys = keys or Keys()
        self.result_ttl = result_ttl
        self._create = client.register_script(lua.CREATE)
        self._start = client.register_script(lua.START)
        self._progress = client.register_script(lua.PROGRESS)
        self._finish = client.register_script(lua.FINISH)
        self._cancel = client.register_script(lua.CANCEL)

    def _argv(self, job_id: str, *rest: Any) -> list[Any]:
        return [self.keys.prefix, job_id, repr(now()), *rest]

    # --- writes ----------------------------------------------------------------------------

    async def create(self, spec: JobSpec, *, max_steps: int, extra: dict[str, str] | None = None) -> tuple[str, bool]:
        """Record a queued job; with an idempotency key already in use, the existing job's id.

        Returns (job id, created). ``extra`` adds hash fields (e.g. ``batch``).
        """
        job_id, created = await self._create(keys=[], args=self._create_args(spec, max_steps, extra))
        return job_id, bool(int(created))

    async def create_in(self, pipe: Any, spec: JobSpec, *, max_steps: int, extra: dict[str, str] | None = None) -> None:
        """Queue a create on a pipeline; its ``execute()`` yields ``[job id, 1 if created else 0]``."""
        await self._create(keys=[], args=self._create_args(spec, max_steps, extra), client=pipe)

    def create_args(self, spec: JobSpec, *, max_steps: int, extra: dict[str, str] | None = None) -> list[Any]:
        """The ``ARGV`` of one ``lua.CREATE`` call (``daemon.batches`` runs many in one script)."""
        return self._create_args(spec, max_steps, extra)

    def _create_args(self, spec: JobSpec, max_steps: int, extra: dict[str, str] | None) -> list[Any]:
        fields: dict[str, Any] = {
            "spec": spec.model_dump_json(exclude_none=True),
            "priority": spec.priority.value,
            "labels": json.dumps(spec.labels),
            "idempotency_key": spec.idempotency_key or "",
            "max_steps": max_steps,
            **(extra or {}),
        }
        flat = [str(x) for pair in fields.items() for x in pair]
        label_keys = [self.keys.label_index(k, v) for k, v in spec.labels.items()]
        key = spec.idempotency_key or ""
        return self._argv(uuid.uuid4().hex, json.dumps(flat), key, self.result_ttl, *label_keys)

    async def start(self, job_id: str, *, worker: str, max_attempts: int, stale_after: float) -> Claim:
        outcome, attempt = await self._start(
            keys=[], args=self._argv(job_id, worker, max_attempts, stale_after, self.result_ttl)
        )
        return Claim(outcome, int(attempt))

    async def progress(self, job_id: str, attempt: int, *, step: StepRecord | None = None,
                       first_command_at: float | None = None) -> bool:
        """Heartbeat, and optionally a step event or the first-command time; False once the run lost the job."""
        args = self._argv(
            job_id,
            attempt,
            step.step if step else "",
            step.model_dump_json() if step else "",
            repr(first_command_at) if first_command_at else "",
        )
        return bool(await self._progress(keys=[], args=args))

    async def heartbeat_many(self, runs: Iterable[tuple[str, int]]) -> None:
        """One round trip refreshing every running job of a worker."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for job_id, attempt in runs:
                await self._progress(keys=[], args=self._argv(job_id, attempt, "", "", ""), client=pipe)
            await pipe.execute()

    async def finish(self, job_id: str, attempt: int, result: JobResult) -> bool:
        args = self._argv(
            job_id,
            attempt,
            result.status.value,
            result.category.value if result.category else "",
            result.error or "",
            result.model_dump_json(),
            self.result_ttl,
        )
        return bool(await self._finish(keys=[], args=args))

    async def cancel(self, job_id: str) -> tuple[str, str]:
        """(outcome, state): missing | finished | cancelled | requested."""
        if not JOB_ID.match(job_id):
            return "missing", ""
        outcome, state = await self._cancel(keys=[], args=self._argv(job_id, self.result_ttl))
        return outcome, state

    async def cancel_in(self, pipe: Any, job_id: str) -> None:
        """Queue a cancel on a pipeline; its ``execute()`` yields ``[outcome, state]`` as ``cancel``."""
        await self._cancel(keys=[], args=self._argv(job_id, self.result_ttl), client=pipe)

    # --- reads -----------------------------------------------------------------------------

    async def get(self, job_id: str) -> JobRecord | None:
        if not JOB_ID.match(job_id):
            return None
        raw = await self.redis.hgetall(self.keys.job(job_id))
        return JobRecord.from_hash(raw) if raw.get("state") else None

    async def cancel_flags(self, job_ids: list[str]) -> set[str]:
        """The ids among ``job_ids`` whose cancel was requested."""
        if not job_ids:
            return set()
        async with self.redis.pipeline(transaction=False) as pipe:
            for job_id in job_ids:
                pipe.hget(self.keys.job(job_id), "cancel_requested")
            flags = await pipe.execute()
        return {job_id for job_id, flag in zip(job_ids, flags) if flag == "1"}

    async def events(self, job_id: str, after: str = "0-0", *, block_ms: int | None = None,
                     count: int = 500) -> list[JobEvent]:
        """Entries after ``after``; with ``block_ms``, waits that long for the first new one."""
        key = self.keys.events(job_id)
        if block_ms is None:
            entries = await self.redis.xrange(key, min=f"({after}" if after != "0-0" else "-", count=count)
        else:
            reply = await self.redis.xread({key: after}, count=count, block=block_ms)
            entries = reply[0][1] if reply else []
        return [JobEvent.from_entry(entry_id, fields) for entry_id, fields in entries]

    async def list(self, *, state: str | None = None, labels: dict[str, str] | None = None,
                   limit: int = 50, cursor: int | None = None) -> Page:
        """Newest first; ``cursor`` (from the previous page) continues below that ``seq``."""
        labels = labels or {}
        limit = max(1, min(limit, LIST_LIMIT_MAX))
        if labels:
            first = next(iter(labels.items()))
            index = self.keys.label_index(*first)
        else:
            index = self.keys.state_index(state) if state else self.keys.all_jobs
        found: list[JobRecord] = []
        top = f"({cursor}" if cursor is not None else "+inf"
        while len(found) < limit:
            batch = await self.redis.zrevrangebyscore(index, top, "-inf", start=0, num=limit * 2, withscores=True)
            if not batch:
                return Page(found, None)
            records = await self._records([job_id for job_id, _ in batch], index)
            for (job_id, score), record in zip(batch, records):
                top = f"({int(score)}"
                if record is None or (state and record.state != state):
                    continue
                if any(record.labels.get(k) != v for k, v in labels.items()):
                    continue
                found.append(record)
                if len(found) == limit:
                    return Page(found, int(score))
        return Page(found, None)

    async def _records(self, job_ids: list[str], index: str) -> list[JobRecord | None]:
        async with self.redis.pipeline(transaction=False) as pipe:
            for job_id in job_ids:
                pipe.hgetall(self.keys.job(job_id))
            raws = await pipe.execute()
        gone = [job_id for job_id, raw in zip(job_ids, raws) if not raw.get("state")]
        if gone:  # the record expired; its index entries linger until someone notices
            await self.redis.zrem(index, *gone)
            await self.redis.zrem(self.keys.all_jobs, *gone)
        return [JobRecord.from_hash(raw, with_result=False) if raw.get("state") else None for raw in raws]

    # --- workers ---------------------------------------------------------------------------

    async def worker_heartbeat(self, worker_id: str, info: dict[str, Any], ttl: float) -> None:
        async with self.redis.pipeline(transaction=False) as pipe:
            pipe.zadd(self.keys.workers, {worker_id: now()})
            pipe.hset(self.keys.worker(worker_id), mapping={k: str(v) for k, v in info.items()})
            pipe.expire(self.keys.worker(worker_id), max(1, int(ttl)))
            await pipe.execute()

    async def worker_gone(self, worker_id: str) -> None:
        await self.redis.zrem(self.keys.workers, worker_id)
        await self.redis.delete(self.keys.worker(worker_id))

    async def live_workers(self, within: float) -> list[str]:
        """Workers that sent a heartbeat in the last ``within`` seconds."""
        cutoff = now() - within
        await self.redis.zremrangebyscore(self.keys.workers, "-inf", f"({cutoff - 3600}")
        return await self.redis.zrangebyscore(self.keys.workers, cutoff, "+inf")
