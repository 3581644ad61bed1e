"""The job store: job records, their event streams, indexes and worker heartbeats in Redis.

Every state change goes through a Lua script (``scripts``, ``lua/*.lua``), so the API, any number
of workers and a redelivered message can race freely: exactly one of them wins each transition.
The record's fields are read and written only here, through ``codec``; other modules get typed
views (``JobRecord``, ``JobEnd``, ``JobLiveness``) and typed outcomes (``outcomes``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis

from config.isolation import HEARTBEAT_FIELD, IsolationLayer, decode_layers

from workers.jobs.ids import is_id, new_id
from workers.jobs.model.record import EventType, JobEvent, JobRecord
from workers.jobs.model.result import EncodedResult, JobResult, RunRecord, StepRecord
from workers.jobs.model.spec import FollowUpRequest, JobSpec
from workers.jobs.model.status import JobStatus
from workers.jobs.store import codec
from workers.jobs.store.codec import JobEnd, JobLiveness, RunFlags, now
from workers.jobs.store.connection import SOCKET_TIMEOUT
from workers.jobs.store.keys import Keys
from workers.jobs.store.outcomes import (
    CancelOutcome,
    CancelResult,
    Claim,
    ClaimOutcome,
    FollowUpClaim,
    FollowUpOutcome,
    PauseOutcome,
    PauseResult,
    ResumeOutcome,
    ResumeResult,
    state_of,
)
from workers.jobs.store.scripts import source

LIST_LIMIT_MAX = 200
READ_CHUNK = 500  # records read per round trip by the views over many jobs
WORKER_FRESH_SECONDS = 10.0  # a worker heartbeats every second: one silent this long counts as gone
ID_ARG = 1  # where ``create_args`` puts the new job's id (``ARGV[2]`` of ``job_create.lua``)
FIELDS_ARG = 3  # where ``create_args`` puts the new hash's fields (``ARGV[4]`` of ``job_create.lua``)


@dataclass(frozen=True)
class FollowUp:
    """A follow-up task the worker holding the session popped (run number ``run``), or ``close``: a
    cancel closed the session."""

    run: int = 0
    task: str = ""
    close: bool = False


@dataclass(frozen=True)
class JobAttempt:
    """A job and the attempt that owns it now: what fences every write of a run."""

    job_id: str
    attempt: int


@dataclass(frozen=True)
class Created:
    """What ``JobStore.create`` did: the job's id, and False when an idempotency key named an existing job."""

    job_id: str
    created: bool


@dataclass(frozen=True)
class JobListing:
    """One page of a job listing, newest first; ``next_cursor`` continues below it."""

    jobs: list[JobRecord]
    next_cursor: int | None


class JobStore:
    """Job records in one Redis (``client`` must decode responses to ``str``)."""

    def __init__(self, client: aioredis.Redis, *, result_ttl: int, keys: Keys | None = None) -> None:
        self.redis = client
        self.keys = keys or Keys()
        self.result_ttl = result_ttl
        self._create = client.register_script(source("job_create"))
        self._start = client.register_script(source("job_start"))
        self._progress = client.register_script(source("job_progress"))
        self._finish = client.register_script(source("job_finish"))
        self._event = client.register_script(source("job_event"))
        self._cancel = client.register_script(source("job_cancel"))
        self._follow_up = client.register_script(source("job_follow_up"))
        self._end_session = client.register_script(source("job_end_kept_session"))
        self._session_beat = client.register_script(source("job_kept_session_beat"))
        self._pause = client.register_script(source("job_pause"))
        self._resume = client.register_script(source("job_resume"))

    def _argv(self, job_id: str, *rest: Any) -> list[Any]:
        return [self.keys.prefix, job_id, repr(now()), *rest]

    # --- writes ----------------------------------------------------------------------------

    async def create(self, spec: JobSpec, *, max_steps: int, tenant: str | None = None,
                     admission: str | None = None) -> Created:
        """Record a queued job (``tenant``'s, or the operator's; ``admission``: its quota
        reservation's token); with an idempotency key already in use (by the same tenant), the
        existing job's id."""
        args = self.create_args(spec, max_steps=max_steps, tenant=tenant, admission=admission)
        args[FIELDS_ARG] = json.dumps(args[FIELDS_ARG])  # a script's own ARGV holds strings only
        job_id, created = await self._create(keys=[], args=args)
        return Created(job_id, bool(int(created)))

    def create_args(self, spec: JobSpec, *, max_steps: int, batch: str | None = None,
                    schedule: str | None = None, tenant: str | None = None,
                    admission: str | None = None) -> list[Any]:
        """The ``ARGV`` of one ``job_create.lua`` call (``batches.store`` runs many in one script): a
        job of ``batch`` counts in it; a job of ``schedule`` also joins that schedule's index, for
        ``list(schedule=...)``; a ``tenant``'s idempotency keys are its own (another tenant's same
        key names another job); a job of ``admission`` (a quota reservation's token,
        ``tenants.quotas``) counts itself off that reservation as it is recorded.

        The hash's fields (``ARGV[FIELDS_ARG]``) are a list, not yet JSON: the batch and crawl
        scripts get each job's arguments as one JSON value, which holds the list as it is (the spec's
        JSON escaped once, decoded once by Lua; issue 27: encoding the fields on their own first
        tripled a batch's bytes and doubled its encoding); ``create`` encodes them for a single call."""
        fields = codec.create_fields(spec, max_steps, batch=batch, schedule=schedule, tenant=tenant,
                                     admission=admission)
        flat = [str(x) for pair in fields.items() for x in pair]
        indexes = [self.keys.label_index(k, v) for k, v in spec.labels.items()]
        if schedule:
            indexes.append(self.keys.schedule_jobs(schedule))
        key = spec.idempotency_key or ""
        if key and tenant:
            key = f"tenant:{tenant}:{key}"
        return self._argv(new_id(), flat, key, self.result_ttl, *indexes)

    async def start(self, job_id: str, *, worker: str, max_attempts: int, stale_after: float) -> Claim:
        outcome, attempt = await self._start(
            keys=[], args=self._argv(job_id, worker, max_attempts, stale_after, self.result_ttl)
        )
        return Claim(ClaimOutcome(outcome), int(attempt))

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

    async def event(self, job_id: str, attempt: int, kind: EventType, data_json: str) -> bool:
        """Append an event the run reports (``agent``: Nanobrowser's execution events) to the job's
        stream; False once the run no longer owns the job."""
        return bool(await self._event(keys=[], args=self._argv(job_id, attempt, kind.value, data_json)))

    async def heartbeat_many(self, runs: Iterable[JobAttempt]) -> None:
        """One round trip refreshing every running job of a worker."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for run in runs:
                await self._progress(keys=[], args=self._argv(run.job_id, run.attempt, "", "", ""), client=pipe)
            await pipe.execute()

    async def finish(self, job_id: str, attempt: int, result: JobResult | EncodedResult, *,
                     run: RunRecord | None = None, session_until: float | None = None,
                     session_closed: str | None = None) -> bool:
        """Record the run's result (given ``EncodedResult``, its JSON as it is); for a job that keeps
        its session, also its ``run`` record and whether the session stays open (``session_until``)
        or closes (``session_closed``: why)."""
        encoded = result if isinstance(result, EncodedResult) else EncodedResult.of(result)
        done = encoded.result
        args = self._argv(
            job_id,
            attempt,
            done.status.value,
            done.category.value if done.category else "",
            done.error or "",
            encoded.json,
            self.result_ttl,
        )
        if run is not None:
            session = repr(session_until) if session_until is not None else "closed"
            args += [session, run.run, run.model_dump_json(), session_closed or ""]
        return bool(await self._finish(keys=[], args=args))

    # --- follow-ups and pause ------------------------------------------------------------------

    async def follow_up(self, job_id: str, request: FollowUpRequest, *, fresh_within: float) -> FollowUpClaim:
        """Accept a follow-up task for a finished job whose session is kept by a live worker."""
        if not is_id(job_id):
            return FollowUpClaim(FollowUpOutcome.missing)
        outcome, run, event_id = await self._follow_up(
            keys=[], args=self._argv(job_id, request.model_dump_json(), fresh_within))
        return FollowUpClaim(FollowUpOutcome(outcome), int(run), event_id or "")

    async def next_follow_up(self, job_id: str, wait: float) -> FollowUp | None:
        """The next follow-up task, waiting up to ``wait`` seconds (BLPOP; at most ``SOCKET_TIMEOUT``)."""
        reply = await self.redis.blpop([self.keys.follow_ups(job_id)], timeout=max(0.01, min(wait, SOCKET_TIMEOUT / 2)))
        if reply is None:
            return None
        item = json.loads(reply[1])
        if item.get("close"):
            return FollowUp(close=True)
        return FollowUp(run=int(item["run"]), task=str(item["task"]))

    async def end_session(self, job_id: str, attempt: int, reason: str) -> bool:
        """Close an idle kept session; False when a follow-up is waiting (run it) or the run lost the job."""
        return bool(await self._end_session(keys=[], args=self._argv(job_id, attempt, reason)))

    async def session_beats(self, sessions: Iterable[JobAttempt]) -> None:
        """One round trip refreshing the heartbeat of every idle session a worker holds."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for held in sessions:
                await self._session_beat(keys=[], args=self._argv(held.job_id, held.attempt), client=pipe)
            await pipe.execute()

    async def pause(self, job_id: str) -> PauseResult:
        """Ask a running job to stop before its next step."""
        if not is_id(job_id):
            return PauseResult(PauseOutcome.missing, "")
        outcome, state = await self._pause(keys=[], args=self._argv(job_id))
        return PauseResult(PauseOutcome(outcome), state_of(state))

    async def resume(self, job_id: str) -> ResumeResult:
        """Let a paused job go on."""
        if not is_id(job_id):
            return ResumeResult(ResumeOutcome.missing, "")
        outcome, state = await self._resume(keys=[], args=self._argv(job_id))
        return ResumeResult(ResumeOutcome(outcome), state_of(state))

    async def cancel(self, job_id: str) -> CancelResult:
        """Cancel a queued job, ask a running one to stop, or close a finished job's kept session."""
        if not is_id(job_id):
            return CancelResult(CancelOutcome.missing, "")
        outcome, state = await self._cancel(keys=[], args=self._argv(job_id, self.result_ttl))
        return CancelResult(CancelOutcome(outcome), state_of(state))

    async def cancel_many(self, job_ids: list[str]) -> list[CancelResult]:
        """``cancel`` for each of ``job_ids`` (ids, as a batch's list holds them), in one round trip."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for job_id in job_ids:
                await self._cancel(keys=[], args=self._argv(job_id, self.result_ttl), client=pipe)
            replies = await pipe.execute()
        return [CancelResult(CancelOutcome(outcome), state_of(state)) for outcome, state in replies]

    # --- reads -----------------------------------------------------------------------------

    async def get(self, job_id: str) -> JobRecord | None:
        if not is_id(job_id):
            return None
        return codec.record_of(await self.redis.hgetall(self.keys.job(job_id)))

    async def run_flags(self, job_ids: list[str]) -> dict[str, RunFlags]:
        """Cancel and pause flags of ``job_ids``, in one round trip."""
        if not job_ids:
            return {}
        async with self.redis.pipeline(transaction=False) as pipe:
            for job_id in job_ids:
                pipe.hmget(self.keys.job(job_id), codec.FLAG_FIELDS)
            rows = await pipe.execute()
        return {job_id: codec.flags_of(row) for job_id, row in zip(job_ids, rows)}

    async def session_note(self, job_id: str) -> str | None:
        """Why the job's kept session closed, if it did."""
        return await self.redis.hget(self.keys.job(job_id), "session_note") or None

    async def ends(self, job_ids: list[str], *, with_result: bool = False) -> list[JobEnd | None]:
        """How each job ended (or stands), None where the record is gone; ``with_result`` also reads
        its result's final answer, data and error (``JobEnd.head``)."""
        fields = [*codec.END_FIELDS, "result"] if with_result else list(codec.END_FIELDS)
        rows = await self._rows(job_ids, fields)
        return [codec.end_of(job_id, row[:len(codec.END_FIELDS)], row[-1] if with_result else None)
                for job_id, row in zip(job_ids, rows)]

    async def liveness(self, job_ids: list[str]) -> list[JobLiveness | None]:
        """Whether each job moves (state, heartbeat, when it was queued or sent again); None where gone."""
        rows = await self._rows(job_ids, list(codec.LIVENESS_FIELDS))
        return [codec.liveness_of(job_id, row) for job_id, row in zip(job_ids, rows)]

    async def _rows(self, job_ids: list[str], fields: list[str]) -> list[list[str | None]]:
        rows: list[list[str | None]] = []
        for start in range(0, len(job_ids), READ_CHUNK):
            async with self.redis.pipeline(transaction=False) as pipe:
                for job_id in job_ids[start:start + READ_CHUNK]:
                    pipe.hmget(self.keys.job(job_id), fields)
                rows += await pipe.execute()
        return rows

    async def ids_in_state(self, state: JobStatus, start: int = 0, stop: int = -1) -> list[str]:
        """Job ids in ``state``'s index, oldest first (positions ``start`` to ``stop``, inclusive);
        an id whose record expired may linger there until the reconciler trims it."""
        return await self.redis.zrange(self.keys.state_index(state.value), start, stop)

    async def mark_resent(self, job_id: str, at: float) -> None:
        """The reconciler sent the job's message again at ``at`` (``JobLiveness.reconciled_at``)."""
        await self.redis.hset(self.keys.job(job_id), "reconciled_at", repr(at))

    async def events(self, job_id: str, after: str = "0-0", *, block_ms: int | None = None,
                     count: int = 500) -> list[JobEvent]:
        """Entries after ``after``; with ``block_ms``, waits that long for the first new one."""
        key = self.keys.events(job_id)
        if block_ms is None:
            entries = await self.redis.xrange(key, min=f"({after}" if after != "0-0" else "-", count=count)
        else:
            reply = await self.redis.xread({key: after}, count=count, block=block_ms)
            entries = reply[0][1] if reply else []
        return [codec.event_of(entry_id, fields) for entry_id, fields in entries]

    async def list(self, *, state: str | None = None, labels: dict[str, str] | None = None,
                   schedule: str | None = None, limit: int = 50, cursor: int | None = None,
                   tenant: str | None = None) -> JobListing:
        """Newest first; ``cursor`` (from the previous page) continues below that ``seq``. The walk
        follows the narrowest index at hand (a schedule's, a label's, a state's) and checks the rest;
        ``tenant``: only that tenant's jobs (None: everyone's)."""
        labels = labels or {}
        limit = max(1, min(limit, LIST_LIMIT_MAX))
        if schedule is not None and not is_id(schedule):
            return JobListing([], None)  # names no schedule (nor any key)
        if schedule:
            index = self.keys.schedule_jobs(schedule)
        elif labels:
            first = next(iter(labels.items()))
            index = self.keys.label_index(*first)
        else:
            index = self.keys.state_index(state) if state else self.keys.all_jobs
        found: list[JobRecord] = []
        top = f"({cursor}" if cursor is not None else "+inf"
        while len(found) < limit:
            batch = await self.redis.zrevrangebyscore(index, top, "-inf", start=0, num=limit * 2, withscores=True)
            if not batch:
                return JobListing(found, None)
            records = await self._records([job_id for job_id, _ in batch], index)
            for (job_id, score), record in zip(batch, records):
                top = f"({int(score)}"
                if record is None or (state and record.state != state):
                    continue
                if schedule and record.schedule != schedule:
                    continue
                if tenant is not None and record.tenant != tenant:
                    continue
                if any(record.labels.get(k) != v for k, v in labels.items()):
                    continue
                found.append(record)
                if len(found) == limit:
                    return JobListing(found, int(score))
        return JobListing(found, None)

    async def counts(self) -> dict[str, int]:
        """Jobs in the store by state (each state's index size)."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for state in JobStatus:
                pipe.zcard(self.keys.state_index(state.value))
            sizes = await pipe.execute()
        return {state.value: int(size) for state, size in zip(JobStatus, sizes)}

    async def _records(self, job_ids: list[str], index: str) -> list[JobRecord | None]:
        async with self.redis.pipeline(transaction=False) as pipe:
            for job_id in job_ids:
                pipe.hgetall(self.keys.job(job_id))
            raws = await pipe.execute()
        gone = [job_id for job_id, raw in zip(job_ids, raws) if not raw.get("state")]
        if gone:  # the record expired; its index entries linger until someone notices
            await self.redis.zrem(index, *gone)
            await self.redis.zrem(self.keys.all_jobs, *gone)
        return [codec.record_of(raw, with_result=False) for raw in raws]

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

    async def worker_isolation(self, worker_ids: list[str]) -> dict[IsolationLayer, bool] | None:
        """Each isolation layer, true when every one of these workers reports it active (None: none reports)."""
        async with self.redis.pipeline(transaction=False) as pipe:
            for worker_id in worker_ids:
                pipe.hget(self.keys.worker(worker_id), HEARTBEAT_FIELD)
            fields = await pipe.execute()
        reports = [decode_layers(field) for field in fields if field]
        if not reports:
            return None
        return {layer: all(report.get(layer, False) for report in reports) for layer in IsolationLayer}

    async def live_workers(self, within: float = WORKER_FRESH_SECONDS) -> list[str]:
        """Workers that sent a heartbeat in the last ``within`` seconds."""
        cutoff = now() - within
        await self.redis.zremrangebyscore(self.keys.workers, "-inf", f"({cutoff - 3600}")
        return await self.redis.zrangebyscore(self.keys.workers, cutoff, "+inf")
