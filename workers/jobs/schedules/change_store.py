"""The change feed of a schedule, in Redis: each completed run compared with the one before it.

When a scheduled run's batch completes, the process that counts its completion (``Finisher``,
once per batch) calls ``ChangeFeed.record``: it reads the run's pages (a crawl's results lines,
else the batch's jobs with their template's start URL and output schema), compares them with the
snapshot the previous run left (``changes.compare``), keeps the new snapshot and pushes the run's
changes on the schedule's list (the newest ``MAX_RUNS_KEPT``). When something changed and the run
has a webhook URL, an ``items.changed`` delivery is owed in the outbox, in the same transaction.
"""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

import workers.jobs.metrics as metrics
from workers.jobs.batches.store import BatchStore
from workers.jobs.crawls.store import CrawlStore
from workers.jobs.ids import is_id
from workers.jobs.schedules.changes import PageData, RunChanges, Snapshot, compare
from workers.jobs.schedules.models import ScheduleSpec
from workers.jobs.store.jobs import JobStore

log = logging.getLogger("browserd.changes")

MAX_RUNS_KEPT = 100  # change entries kept per schedule (newest first)
ITEMS_CHANGED = "items.changed"  # the webhook event a run that changed something sends
CHANGES_KIND = "changes"  # the outbox entry's kind: its ref is "{schedule id}:{run's batch id}"
SUCCEEDED = "succeeded"


def changes_delivery(schedule_id: str, run: str) -> str:
    return f"{ITEMS_CHANGED}:{schedule_id}:{run}"


class ChangeFeed:
    def __init__(self, store: JobStore) -> None:
        self.store = store
        self.redis = store.redis
        self.keys = store.keys
        self.batches = BatchStore(store)

    async def record(self, batch_id: str) -> str | None:
        """Compare a completed scheduled run with the previous one and keep the changes; the delivery
        id of the ``items.changed`` webhook it owes (to run from the outbox), or None."""
        batch = await self.batches.get(batch_id)
        if batch is None or batch.schedule_id is None or not is_id(batch.schedule_id) or batch.cancel_requested:
            return None  # not a schedule's run, or a cancelled one (what it did not visit is not gone)
        schedule_id = batch.schedule_id
        raw = await self.redis.hget(self.keys.schedule(schedule_id), "spec")
        if not raw:
            return None  # the schedule was deleted
        spec = ScheduleSpec.model_validate_json(raw)
        previous = await self._snapshot(schedule_id)
        if previous is not None and previous.run == batch_id:
            return None  # compared already
        pages = await self._pages(batch_id, spec)
        done = compare(previous, pages, schedule_id, batch_id, datetime.now(UTC))
        url = batch.webhook_url or (str(spec.job.get("webhook_url")) if spec.job and spec.job.get("webhook_url")
                                    else None)
        delivery = changes_delivery(schedule_id, batch_id) if url and done.changes.anything else None
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.set(self.keys.schedule_snapshot(schedule_id), done.snapshot.model_dump_json())
            pipe.lpush(self.keys.schedule_changes(schedule_id), done.changes.model_dump_json())
            pipe.ltrim(self.keys.schedule_changes(schedule_id), 0, MAX_RUNS_KEPT - 1)
            if delivery is not None:
                pipe.hset(self.keys.outbox, delivery, json.dumps({"url": url, "event": ITEMS_CHANGED,
                                                                  "kind": CHANGES_KIND,
                                                                  "ref": f"{schedule_id}:{batch_id}"}))
                pipe.zadd(self.keys.outbox_due, {delivery: datetime.now(UTC).timestamp()})
            await pipe.execute()
        c = done.changes.counts
        metrics.observe_changes(c.added, c.changed, c.removed)
        log.info("schedule %s: run %s against %s: %d added, %d changed, %d removed, %d pages gone", schedule_id,
                 batch_id, done.changes.previous_run, c.added, c.changed, c.removed, c.pages_removed)
        return delivery

    async def _snapshot(self, schedule_id: str) -> Snapshot | None:
        raw = await self.redis.get(self.keys.schedule_snapshot(schedule_id))
        return Snapshot.model_validate_json(raw) if raw else None

    async def _pages(self, batch_id: str, spec: ScheduleSpec) -> list[PageData]:
        """The run's pages: a crawl's lines (URL, data, the crawl's schema), else the batch's jobs."""
        crawl_id = await self.redis.hget(self.keys.batch(batch_id), "crawl")
        if crawl_id:
            crawls = CrawlStore(self.store)
            held = await crawls.spec(crawl_id)
            schema = held.spec.output_schema if held is not None else None
            return [PageData(line.url, line.status == SUCCEEDED, line.data, schema)
                    async for line in crawls.results(crawl_id, batch_id)]
        request = spec.request()
        templates = [{**request.defaults, **job} if isinstance(job, dict) else {} for job in request.jobs]
        pages: list[PageData] = []
        seen: set[str] = set()
        n = 0
        async for line in self.batches.results(batch_id):
            template = templates[n] if n < len(templates) else {}
            name = str(template.get("start_url") or f"job {n}")
            if name in seen:
                name = f"{name} (job {n})"
            seen.add(name)
            schema = template.get("output_schema")
            pages.append(PageData(name, line.status == SUCCEEDED, line.data, schema if isinstance(schema, dict)
                                  else None))
            n += 1
        return pages

    async def entries(self, schedule_id: str, since: datetime | None = None, limit: int = MAX_RUNS_KEPT
                      ) -> list[RunChanges]:
        """The schedule's runs' changes, oldest first, those after ``since`` when given."""
        raw = await self.redis.lrange(self.keys.schedule_changes(schedule_id), 0, MAX_RUNS_KEPT - 1)
        found = [RunChanges.model_validate_json(r) for r in reversed(raw)]
        if since is not None:
            after = since if since.tzinfo is not None else since.replace(tzinfo=UTC)
            found = [c for c in found if c.at > after]
        return found[-limit:]

    async def entry(self, schedule_id: str, run: str) -> RunChanges | None:
        for changes in await self.entries(schedule_id):
            if changes.run == run:
                return changes
        return None

    async def forget(self, schedule_id: str) -> None:
        """The schedule is deleted: its snapshot, changes and page reads (``read_store``) go with it."""
        await self.redis.delete(self.keys.schedule_snapshot(schedule_id), self.keys.schedule_changes(schedule_id),
                                self.keys.schedule_reads(schedule_id))
