"""The job's data at every boundary: what a user submits and what a job produces.

These models are shared by the API (validation of bodies), the Redis job record, the Celery task
and the agent, so that a job means the same thing everywhere it travels.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, HttpUrl, field_validator, model_validator


class JobStatus(StrEnum):
    queued = "queued"
    running = "running"
    retrying = "retrying"
    succeeded = "succeeded"
    failed = "failed"
    cancelled = "cancelled"

    @property
    def finished(self) -> bool:
        return self in (JobStatus.succeeded, JobStatus.failed, JobStatus.cancelled)


class FailureCategory(StrEnum):
    """Why a job failed; bounded, so it can be a metrics label."""

    max_steps = "max_steps"
    max_failures = "max_failures"
    llm_auth = "llm_auth"
    llm_error = "llm_error"
    llm_bad_request = "llm_bad_request"
    url_blocked = "url_blocked"
    browser_crash = "browser_crash"
    timeout = "timeout"
    worker_lost = "worker_lost"
    invalid_output = "invalid_output"
    action_error = "action_error"
    internal = "internal"


class Priority(StrEnum):
    high = "high"
    normal = "normal"
    low = "low"


class AgentOptions(BaseModel):
    """Nanobrowser's executor options, with its defaults (None: take the setting's value)."""

    model_config = ConfigDict(extra="forbid")

    max_steps: int | None = Field(None, ge=1, le=1000)
    planning_interval: int | None = Field(None, ge=1, le=100)
    max_failures: int | None = Field(None, ge=1, le=100)
    max_actions_per_step: int | None = Field(None, ge=1, le=50)
    max_input_tokens: int | None = Field(None, ge=1000)
    use_vision: bool = False
    viewport_expansion: int | None = Field(None, ge=-1)


class ModelOverrides(BaseModel):
    """Per-job model names; None keeps the configured model of that role."""

    model_config = ConfigDict(extra="forbid")

    planner: str | None = None
    navigator: str | None = None
    extractor: str | None = None


class JobSpec(BaseModel):
    """One job: an agent task in words, or a script of actions run with no LLM."""

    model_config = ConfigDict(extra="forbid")

    task: str | None = Field(None, min_length=1, max_length=20_000, description="What the agent should do.")
    script: list[dict[str, Any]] | None = Field(
        None, description='Actions to run instead of an agent, e.g. [{"go_to_url": {"url": "…"}}].'
    )
    start_url: HttpUrl | None = Field(None, description="Page opened before the first step.")
    output_schema: dict[str, Any] | None = Field(None, description="JSON schema the job's data must satisfy.")
    allowed_domains: list[str] = Field(default_factory=list, description="Only these domains (and subdomains).")
    denied_domains: list[str] = Field(default_factory=list, description="Never these domains (and subdomains).")
    options: AgentOptions = Field(default_factory=AgentOptions)
    models: ModelOverrides = Field(default_factory=ModelOverrides)
    timeout: float | None = Field(None, gt=0, le=86_400, description="Wall-clock limit in seconds.")
    priority: Priority = Priority.normal
    labels: dict[str, str] = Field(default_factory=dict, description="Free-form key/value tags for filtering.")
    idempotency_key: str | None = Field(None, min_length=1, max_length=200)
    webhook_url: HttpUrl | None = Field(None, description="POSTed the result when the job finishes.")

    @model_validator(mode="after")
    def _task_or_script(self) -> JobSpec:
        if (self.task is None) == (self.script is None):
            raise ValueError("give exactly one of 'task' (an agent job) or 'script' (a list of actions)")
        if self.script is not None and not self.script:
            raise ValueError("'script' must hold at least one action")
        return self

    @field_validator("allowed_domains", "denied_domains")
    @classmethod
    def _domains(cls, value: list[str]) -> list[str]:
        cleaned = []
        for domain in value:
            d = domain.strip().lower().lstrip(".")
            if not d or "/" in d or " " in d:
                raise ValueError(f"{domain!r} is not a domain name (give e.g. 'example.com', no scheme or path)")
            cleaned.append(d)
        return cleaned

    @field_validator("labels")
    @classmethod
    def _labels(cls, value: dict[str, str]) -> dict[str, str]:
        if len(value) > 20:
            raise ValueError("at most 20 labels")
        for key, val in value.items():
            if not key or len(key) > 64 or len(val) > 256:
                raise ValueError(f"label {key!r}: keys are 1-64 characters, values at most 256")
        return value


class ActionRecord(BaseModel):
    """One action the agent (or the script) ran, and what came of it."""

    name: str
    params: dict[str, Any] = Field(default_factory=dict)
    ok: bool = True
    result: str | None = None
    error: str | None = None
    seconds: float = 0.0


class StepRecord(BaseModel):
    """One executor step; also the payload of a step event in the job's stream."""

    step: int
    url: str | None = None
    actions: list[ActionRecord] = Field(default_factory=list)
    dom_seconds: float = 0.0
    llm_seconds: float = 0.0
    action_seconds: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    elements: int | None = None
    plan: dict[str, Any] | None = None
    error: str | None = None


class JobTotals(BaseModel):
    steps: int = 0
    actions: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    llm_calls: int = 0
    seconds: float = 0.0


class JobResult(BaseModel):
    """What a finished job produced."""

    status: JobStatus
    category: FailureCategory | None = None
    error: str | None = None
    final_answer: str | None = None
    data: Any = None
    steps: list[StepRecord] = Field(default_factory=list)
    totals: JobTotals = Field(default_factory=JobTotals)
    started_at: datetime | None = None
    finished_at: datetime | None = None
