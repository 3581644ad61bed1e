"""A tenant as the operator sees it, its ceilings, and the one-time answer that carries its key."""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from config.proxy_pools import PoolName
from workers.jobs.model.bounds import Networks, Seconds, Steps
from workers.jobs.errors import JobsError

TENANT_NAME = r"^[a-z0-9][a-z0-9_-]{0,62}$"
TenantName = Annotated[str, StringConstraints(pattern=TENANT_NAME)]
OPERATOR_TENANT = "operator"  # what logs and metrics call the admin token's (single-tenant browserd's) jobs
KEY_PREFIX = "bdk"  # a tenant key reads bdk_<key id>_<secret>; the key id finds its record


def is_tenant_name(value: str) -> bool:
    return re.fullmatch(TENANT_NAME, value) is not None


class TenantLimits(BaseModel):
    """What the operator lets a tenant's jobs and sessions open, at most (``ceilings``)."""

    model_config = ConfigDict(extra="forbid")

    allowed_networks: Networks = Field(
        default_factory=list,
        description="Private networks the tenant's jobs and sessions may open (CIDRs), inside the operator's "
        "(BROWSERD_ALLOWED_NETWORKS, or any with BROWSERD_ALLOW_PRIVATE_NETWORKS); default none.")
    allowed_domains: list[str] | None = Field(
        None, max_length=256, description="Domains (and subdomains) the tenant's jobs may name; null: any.")
    max_steps: Steps | None = Field(None, description="Most agent steps one job may ask for.")
    timeout: Seconds | None = Field(None, description="Most seconds one job may run.")
    max_running: int | None = Field(
        None, ge=1, le=100_000, description="Quota: most of its jobs running at once; the rest wait their turn "
        "(fair dispatch), never refused. Null: up to its fair share of the fleet.")
    max_queued: int | None = Field(
        None, ge=0, le=10_000_000, description="Quota: most of its jobs queued (waiting to start) at once; a "
        "submission past it answers 429 quota 'queued'. Null: no quota.")
    max_batch_size: int | None = Field(
        None, ge=1, le=10_000_000, description="Quota: most jobs in one batch (429 quota 'batch_size'). Null: no quota.")
    max_jobs_per_day: int | None = Field(
        None, ge=0, le=100_000_000, description="Quota: most jobs submitted per UTC day (429 quota 'jobs_per_day', "
        "Retry-After until midnight UTC). Null: no quota.")
    max_cost_usd_per_day: float | None = Field(
        None, ge=0, le=10_000_000, description="Budget: USD its jobs' LLM calls may cost per UTC day; once spent, "
        "submissions answer 429 quota 'cost_per_day' until midnight UTC (jobs already queued run). Null: none.")
    max_cost_usd_per_month: float | None = Field(
        None, ge=0, le=100_000_000, description="Budget: USD its jobs' LLM calls may cost per UTC month; once spent, "
        "submissions answer 429 quota 'cost_per_month' until the first of next month (jobs already queued run). "
        "Null: none.")
    max_artifact_bytes: int | None = Field(
        None, ge=0, le=10**15, description="Quota: bytes its jobs' artifacts may hold in the store; once reached, "
        "submissions answer 429 quota 'artifact_bytes' until expired jobs' artifacts are deleted. Null: no quota.")
    max_sessions: int | None = Field(
        None, ge=0, le=10_000, description="Quota: most interactive sessions open at once (429 quota 'sessions'). "
        "Null: only BROWSERD_SESSION_MAX_OPEN.")

    proxy_pools: list[PoolName] = Field(
        default_factory=list, max_length=64,
        description="The operator's proxy pools (BROWSERD_PROXY_POOLS) the tenant's jobs may name; default none.")


class TenantRequest(BaseModel):
    """``POST /v1/tenants``."""

    model_config = ConfigDict(extra="forbid")

    name: TenantName = Field(description="Lowercase letters, digits, '-' and '_'; at most 63 characters.")
    limits: TenantLimits = Field(default_factory=TenantLimits)


class TenantInfo(BaseModel):
    """A tenant as listed: never its key."""

    name: str
    key_id: str = Field(description="The public part of its current key (bdk_<key_id>_...), to tell keys apart.")
    created_at: datetime
    rotated_at: datetime | None = None
    revoked: bool = False
    limits: TenantLimits


class TenantList(BaseModel):
    tenants: list[TenantInfo]


class TenantKey(TenantInfo):
    """A tenant with its new key: shown once (create, rotate), kept only hashed."""

    key: str = Field(description="The tenant's bearer key; shown only now.")


class TenantStored(TenantInfo):
    """The record in Redis: the listing plus the key's hash."""

    key_sha256: str


class TenantExists(JobsError):
    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"a tenant named {name!r} already exists")


class TenantMissing(JobsError):
    def __init__(self, name: str) -> None:
        self.name = name
        super().__init__(f"no tenant named {name!r}")


class TenantLimitsTooWide(JobsError):
    """A tenant's ceiling outside the operator's."""


class Quota(StrEnum):
    """A tenant's quotas (``TenantLimits.max_*``): what a 429 names."""

    running = "running"
    queued = "queued"
    batch_size = "batch_size"
    jobs_per_day = "jobs_per_day"
    sessions = "sessions"
    cost_per_day = "cost_per_day"
    cost_per_month = "cost_per_month"
    artifact_bytes = "artifact_bytes"


class QuotaExceeded(JobsError):
    """A tenant's submission or session past one of its quotas; ``retry_after``: seconds until it
    frees (None: it never frees for this request, e.g. a batch larger than ``batch_size``). The API
    answers 429 with the quota's name and ``Retry-After``."""

    def __init__(self, tenant: str, quota: Quota, limit: float, retry_after: float | None, detail: str) -> None:
        self.tenant, self.quota, self.limit, self.retry_after = tenant, quota, limit, retry_after
        super().__init__(f"tenant {tenant!r} is over its quota {quota.value!r} ({limit}): {detail}")


class TenantUsage(BaseModel):
    """What a tenant uses now, beside its quotas."""

    queued: int = Field(description="Its jobs waiting to start.")
    running: int = Field(description="Its jobs running.")
    released: int = Field(description="Its jobs released to the broker by fair dispatch and not finished.")
    waiting_dispatch: int = Field(description="Its jobs held back by fair dispatch (its turn has not come).")
    jobs_today: int = Field(description="Jobs it submitted this UTC day.")
    cost_today_usd: float = Field(description="What its jobs' LLM calls cost this UTC day, in USD.")
    cost_month_usd: float = Field(0.0, description="What its jobs' LLM calls cost this UTC month, in USD.")
    artifact_bytes: int = Field(0, description="Bytes its jobs' artifacts hold in the store.")
    sessions: int = Field(description="Its interactive sessions open.")
