"""What the pipeline tests run jobs with when no browser may be involved.

* ``NoBrowsers``: for jobs that must fail before the browser; being asked for a lease fails the test.
* ``NoneFree``: a pool with nothing free; a lease never comes (the job's budget ends the wait).
* ``BrowserGoneBrowsers``: every lease fails as a pool's would when its browser died
  (``cdp.BrowserGone``), so a job that got through prepare stops at acquire.
* ``recording``: a ``Feature`` subclass that writes each hook it sees into a shared log.
* ``LoggedRecords``: ``LocalRecords`` that also log the claim and the record.
* ``inputs_probe``: a ``Feature`` subclass that keeps the agent's inputs the features prepared.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import cdp
from workers.agent import JobInputs
from workers.jobs.model.result import JobResult
from workers.jobs.store.outcomes import Claim
from workers.pipeline import Feature, JobRun, LocalRecords


class NoBrowsers:
    """Leases for jobs that must never reach the browser: asking is a test failure (and counted)."""

    def __init__(self) -> None:
        self.asked = 0

    def lease(self, timeout: float = 60.0) -> contextlib.AbstractAsyncContextManager[cdp.Lease]:
        self.asked += 1
        raise AssertionError("the pipeline asked for a browser for a job that should have failed before it")


class NoneFree:
    """A pool whose every browser stays busy: the lease is waited for until something gives up."""

    def __init__(self) -> None:
        self.asked = 0

    @contextlib.asynccontextmanager
    async def lease(self, timeout: float = 60.0) -> AsyncIterator[cdp.Lease]:
        self.asked += 1
        await asyncio.Event().wait()  # never set
        raise AssertionError("unreachable")
        yield


class BrowserGoneBrowsers:
    """Every lease fails as it would when the pool's browser died; ``log`` hears each ask."""

    def __init__(self, log: list[str] | None = None) -> None:
        self.asked = 0
        self.log = log if log is not None else []

    @contextlib.asynccontextmanager
    async def lease(self, timeout: float = 60.0) -> AsyncIterator[cdp.Lease]:
        self.asked += 1
        self.log.append("lease")
        raise cdp.BrowserGone("no browser in the fast tier")
        yield


@dataclass
class LoggedRecords(LocalRecords):
    """``LocalRecords`` that log when a job is claimed and when its result is recorded."""

    log: list[str] = field(default_factory=list)

    async def claim(self, job_id: str, *, worker: str, max_attempts: int, stale_after: float) -> Claim:
        self.log.append("claim")
        return await super().claim(job_id, worker=worker, max_attempts=max_attempts, stale_after=stale_after)

    async def finish(self, run: JobRun, result: JobResult) -> bool:
        self.log.append("record")
        return await super().finish(run, result)


def recording(name: str, log: list[str], *, settle_note: str | None = None) -> type[Feature]:
    """A feature named ``name`` that logs ``<name>.<hook>`` at every hook it takes part in; its
    ``after`` logs whether the result it is given is the one recorded. ``settle_note`` appends to
    the result's error at settle, so the order settles compose in shows in the recorded result."""

    class Recording(Feature):
        async def prepare(self, run: JobRun) -> None:
            log.append(f"{name}.prepare")

        def hold(self, run: JobRun) -> contextlib.AbstractAsyncContextManager[object]:
            return self._held()

        @contextlib.asynccontextmanager
        async def _held(self) -> AsyncIterator[None]:
            log.append(f"{name}.hold")
            try:
                yield
            finally:
                log.append(f"{name}.release")

        async def attach(self, run: JobRun) -> None:
            log.append(f"{name}.attach")

        async def settle(self, run: JobRun, result: JobResult) -> JobResult:
            log.append(f"{name}.settle")
            if settle_note is None:
                return result
            return result.model_copy(update={"error": f"{result.error} | {settle_note}"})

        async def after(self, run: JobRun, result: JobResult) -> None:
            records = self.services.records
            recorded = isinstance(records, LocalRecords) and records.results.get(run.job_id) == result
            log.append(f"{name}.after" + ("" if recorded and run.recorded else " (result not recorded!)"))

    Recording.__name__ = Recording.__qualname__ = name
    return Recording


def inputs_probe(seen: list[JobInputs]) -> type[Feature]:
    """A feature that keeps the agent's inputs as the features before it prepared them (register it
    last: ``features=(*FEATURES, inputs_probe(seen))``)."""

    class InputsProbe(Feature):
        async def prepare(self, run: JobRun) -> None:
            seen.append(run.inputs)

    return InputsProbe
