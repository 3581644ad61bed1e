"""``Feature``: one concern of a job's run, plugged into the pipeline's named stages.

In the manner of dramatiq's middleware: a feature overrides the hooks of the stages it takes
part in and leaves the others as the no-ops below; the pipeline calls every registered feature's
hook at each stage, in the registry's order (``workers.pipeline.features.FEATURES``). A feature
never calls another one and never edits the pipeline: adding one is its module, its test and a
line in the registry.

The stages of one delivery, in order (``Stage``):

1. **claim**: the store decides whether this delivery runs the job (the pipeline's own).
2. **prepare**: no browser yet; load what the job names (secrets, an auth profile, a recipe) into
   the agent's inputs. A feature raises a typed error for what cannot be had.
3. **acquire**: ``hold`` contexts are entered in order (a politeness slot), then the lease; all of it
   within the job's time budget, all of it held until the session closes.
4. **attach**: the lease is in hand; finish the agent's inputs (a navigation gate on the lease's
   egress gate, an artifact folder).
5. **run**: ``during`` contexts are entered around the agent's run (the live view), which reports
   each ``step``.
6. **settle**: each feature may replace the result before it is recorded (limits, offloading, a
   kept session's decision).
7. **record**: the result is written (the pipeline's own; nothing waits before it).
8. **after**: the result is recorded; learn from it (recipes) or keep the session open.

``beat`` runs with the worker's heartbeat; ``stop`` when the pipeline shuts down. A follow-up
run of a kept session goes through stages 5 to 8 again with the same ``JobRun``.
"""

from __future__ import annotations

import functools
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

import redis.asyncio as aioredis

from config import Settings
from workers.agent.config import AgentConfig
from workers.agent.telemetry import SILENT, Telemetry
from workers.jobs.artifacts.store import ArtifactStore
from workers.jobs.model.result import JobResult, StepRecord
from workers.jobs.store.jobs import JobStore
from workers.jobs.store.keys import Keys
from workers.pipeline.records import RunRecords
from workers.pipeline.run import JobRun


class Reruns(Protocol):
    """What a feature may ask of the pipeline it serves: run a kept session's follow-up (``run``
    carries its number and task) through the run, settle, record and after stages."""

    async def follow_up(self, run: JobRun) -> JobResult: ...


class Stage(StrEnum):
    """The pipeline's stages, in the order a run goes through them."""

    claim = "claim"
    prepare = "prepare"
    acquire = "acquire"
    attach = "attach"
    run = "run"
    settle = "settle"
    record = "record"
    after = "after"


@dataclass(frozen=True)
class Services:
    """What features build on. ``records`` is where the job's record and events go (a feature writes
    its own events there, e.g. politeness waits). ``redis`` is the shared store's Redis where there is one (a worker;
    ``browserd run`` with ``BROWSERD_REDIS_URL``): auth profiles, credential sets, recipes and
    politeness live there. ``store`` is set only when the job records themselves live there too (a
    worker): the live view and kept sessions need a record others can watch and follow up."""

    settings: Settings
    records: RunRecords
    redis: aioredis.Redis | None = None
    store: JobStore | None = None
    keys: Keys = Keys()
    telemetry: Telemetry = SILENT
    worker_id: str = "local"
    stale_after: float = 10.0

    @functools.cached_property
    def agent(self) -> AgentConfig:
        """What the agent reads of the settings, made once for every job these services run."""
        return AgentConfig.from_settings(self.settings)

    @functools.cached_property
    def artifacts(self) -> ArtifactStore:
        """The artifact store the settings name (``BROWSERD_ARTIFACTS_URL``), opened once."""
        return ArtifactStore.from_settings(self.settings)


class Feature:
    """Base of every feature; each hook is a no-op until overridden."""

    def __init__(self, services: Services) -> None:
        self.services = services
        self.settings = services.settings
        self.pipeline: Reruns | None = None

    def started(self, pipeline: Reruns) -> None:
        """The pipeline this feature serves (a feature that runs follow-ups calls back into it)."""
        self.pipeline = pipeline

    async def prepare(self, run: JobRun) -> None:
        """Before any browser: put what the job names into ``run.inputs``."""

    def hold(self, run: JobRun) -> AbstractAsyncContextManager[object] | None:
        """A resource held from before the lease until the session closes (None: nothing to hold)."""
        return None

    async def attach(self, run: JobRun) -> None:
        """The lease is in ``run.lease``: finish ``run.inputs`` with what needs it."""

    def during(self, run: JobRun) -> AbstractAsyncContextManager[object] | None:
        """A context around one run of the agent (None: nothing)."""
        return None

    async def step(self, run: JobRun, step: StepRecord) -> None:
        """A step of the run ended (and was written to the job's record)."""

    async def settle(self, run: JobRun, result: JobResult) -> JobResult:
        """The run's result before it is recorded; return it, or the one to record instead."""
        return result

    async def after(self, run: JobRun, result: JobResult) -> None:
        """The run's result is recorded."""

    async def beat(self) -> None:
        """The worker's heartbeat (about once a second)."""

    def report(self) -> dict[str, int]:
        """Counts this feature adds to the worker's heartbeat record (e.g. sessions kept)."""
        return {}

    async def stop(self) -> None:
        """The pipeline shuts down."""
