"""The bounds a job's request shares with what may bound it: one definition each, for the job spec,
a crawl's pages, an interactive session and a tenant's ceilings (``tenants.models.TenantLimits``),
so a tenant's ceiling is always a value a job could ask for, and a change of limit reaches all."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field

from config.networks import parse_networks

MAX_STEPS = 1000  # most agent steps anything may ask for
MAX_TIMEOUT = 86_400  # most seconds one job (or a crawl's page) may run
MAX_NETWORKS = 64  # most private networks one request may name

Steps = Annotated[int, Field(ge=1, le=MAX_STEPS)]
Seconds = Annotated[float, Field(gt=0, le=MAX_TIMEOUT)]
Networks = Annotated[list[str], Field(max_length=MAX_NETWORKS), AfterValidator(parse_networks)]
