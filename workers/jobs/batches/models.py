"""A batch as users see it: its counters and progress, and one line of its results. Pure pydantic."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field


class BatchState(StrEnum):
    """Where a batch stands, from its record: every job finished, a cancel was asked, or neither."""

    running = "running"
    completed = "completed"  # every job reached a final state
    cancelling = "cancelling"  # a cancel was asked; running jobs stop before their next action


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
    state: BatchState = Field(description="running | completed (every job finished) | cancelling.")
    total: int = Field(description="Jobs in the batch.")
    counts: BatchCounts
    done: int = Field(description="Jobs that finished: succeeded + failed + cancelled.")
    progress: float = Field(description="done / total, from 0 to 1.")
    schedule_id: str | None = Field(None, description="The schedule whose run this batch is.")
    tenant: str | None = Field(None, description="The tenant whose key submitted it; null: the operator's.")
    duplicates: int = Field(0, description="Items whose idempotency key named an existing job (not counted).")
    cost_usd: float = Field(0.0, description="What its jobs' LLM calls cost so far, in USD (each job's cost_usd, "
                            "added as its result is settled; unpriced models count nothing).")
    max_cost_usd: float | None = Field(None, description="Once cost_usd reaches it, the batch stops starting jobs: "
                                       "its queued jobs are cancelled (budget_stopped).")
    budget_stopped: bool = Field(False, description="The batch reached its max_cost_usd and stopped starting jobs.")
    cancel_requested: bool = False
    webhook_url: str | None = None
    created_at: datetime
    finished_at: datetime | None = None

    @property
    def finished(self) -> bool:
        return self.finished_at is not None


class ResultLine(BaseModel):
    """One job's outcome in a batch's results (``GET /v1/batches/{id}/results``, one per line)."""

    id: str
    status: str = Field(description="The job's state, or 'expired' once its record is gone.")
    final_answer: str | None = None
    data: Any = None
    error: str | None = None
    category: str | None = None
    labels: dict[str, str] = Field(default_factory=dict, description="The job's labels, to join on.")
    cost_usd: float | None = Field(None, description="What its LLM calls cost, in USD (its result's cost_usd).")
    reused_from: str | None = Field(None, description="The page was unchanged since the schedule's last run: the "
                                    "job whose extraction it reused, with no model call.")
    result_artifact: str | None = Field(None, description="Where a result too large for the record is stored "
                                        "(final_answer and data are read back from it here).")
