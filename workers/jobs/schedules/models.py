"""What a schedule is: when it fires and what it runs (``ScheduleSpec``), and how it has run (``Schedule``).

Pure pydantic: the client and the API read these without Celery or Redis (``beat`` and ``store``
hold those).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from workers.jobs.errors import SpecError
from workers.jobs.specs.batch_body import BatchRequest


class ScheduleSpec(BaseModel):
    """What to run and when: exactly one of ``cron``/``every``, exactly one of ``job``/``batch``/``crawl``."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, max_length=200)
    cron: str | None = Field(None, description="Five fields: minute hour day-of-month month day-of-week (UTC).")
    every: float | None = Field(None, ge=1, le=366 * 86400, description="Interval in seconds.")
    job: dict[str, Any] | None = Field(None, description="A job spec run on each firing (as a batch of one).")
    batch: dict[str, Any] | None = Field(None, description='{"jobs": [...], "defaults": {...}, "webhook_url": ...}')
    crawl: dict[str, Any] | None = Field(None, description="A crawl spec (as POST /v1/crawls) run on each firing; "
                                         "its pages are the schedule's tenant's jobs.")
    policy: Literal["skip", "queue"] = Field("skip", description="When the previous run is unfinished: skip or queue.")
    mode: Literal["agent", "auto"] = Field("agent", description="auto: the first successful run of an agent job is "
                                           "recorded as recipe 'schedule-{id}'; later runs replay it with no LLM.")
    enabled: bool = True
    max_cost_usd: float | None = Field(None, gt=0, le=1_000_000, description="Each run (a batch) stops starting jobs "
                                       "once its jobs' LLM calls cost this much, in USD (its max_cost_usd).")

    @model_validator(mode="after")
    def _one_of_each(self) -> ScheduleSpec:
        if (self.cron is None) == (self.every is None):
            raise ValueError("give exactly one of 'cron' (e.g. '*/15 * * * *') or 'every' (seconds)")
        if sum(x is not None for x in (self.job, self.batch, self.crawl)) != 1:
            raise ValueError("give exactly one of 'job' (a job spec), 'batch' ({\"jobs\": [...], \"defaults\": ...}) "
                             "or 'crawl' (a crawl spec)")
        if self.crawl is not None and self.mode == "auto":
            raise ValueError("mode 'auto' records a recipe of an agent job; a crawl's pages are not one job")
        return self

    def request(self) -> BatchRequest:
        """The job or batch template (a crawl schedule has none: its pages are found as it runs)."""
        if self.crawl is not None:
            return BatchRequest(jobs=[])
        if self.job is not None:
            return BatchRequest(jobs=[self.job], max_cost_usd=self.max_cost_usd)
        batch = self.batch or {}
        unknown = set(batch) - {"jobs", "defaults", "webhook_url"}
        if unknown or not isinstance(batch.get("jobs"), list):
            raise SpecError.at("batch", "must be {\"jobs\": [...], \"defaults\": {...}, \"webhook_url\": ...}")
        return BatchRequest(jobs=batch["jobs"], defaults=batch.get("defaults") or {},
                            webhook_url=batch.get("webhook_url"), max_cost_usd=self.max_cost_usd)


class Schedule(ScheduleSpec):
    id: str
    created_at: datetime
    runs: int = Field(0, description="Runs started (batches created).")
    skipped: int = Field(0, description="Firings skipped because the previous run was unfinished.")
    last_run_at: datetime | None = None
    last_batch_id: str | None = None
    next_run_at: datetime | None = Field(None, description="When beat will fire it next (enabled schedules).")
    tenant: str | None = Field(None, description="The tenant whose key made it (its runs are that tenant's); null: "
                               "the operator's.")
