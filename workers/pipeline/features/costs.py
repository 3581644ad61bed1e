"""Cost in dollars: what each run's LLM calls cost, its metric, and the job's ``max_cost_usd``.

prepare: the agent's ``Telemetry`` is wrapped in a ``CostMeter`` that prices every LLM request it
reports (``workers.jobs.costs``: the price table, ``BROWSERD_LLM_PRICES`` over the defaults),
counts ``browserd_llm_cost_usd_total{tenant,model}``, and remembers unpriced models. With
``max_cost_usd``, the job's cancel check also answers true once the cost reached it: the agent checks
it before every LLM call (and between actions), so the job stops before its next call.
settle: the result gets ``cost_usd`` (this run's calls; a follow-up's its own) and
``unpriced_models``, and the job's batch's ``cost_usd`` and its tenant's cost today grow by it; a run the budget stopped ends ``failed``, category ``budget_exceeded``, not
``cancelled``.
"""

from __future__ import annotations

import logging

import workers.jobs.metrics as metrics
from config.logs import current
from workers.agent.telemetry import DomCapture, LlmCall, Telemetry
from workers.jobs.batches.store import BatchStore
from workers.jobs.costs import PriceTable
from workers.jobs.model.result import JobResult
from workers.jobs.model.status import FailureCategory, JobStatus
from workers.jobs.tenants.quotas import Quotas
from workers.pipeline.feature import Feature, Services
from workers.pipeline.run import JobRun

log = logging.getLogger("browserd.worker")


class CostMeter(Telemetry):
    """The agent's telemetry, passed on, with each LLM request priced."""

    def __init__(self, prices: PriceTable, inner: Telemetry, tenant: str | None, limit: float | None) -> None:
        self.prices, self.inner, self.tenant, self.limit = prices, inner, tenant, limit
        self.usd = 0.0  # the job's, across its runs: what max_cost_usd bounds
        self.settled = 0.0  # the part earlier runs' results already reported
        self.unpriced: set[str] = set()

    @property
    def exceeded(self) -> bool:
        return self.limit is not None and self.usd >= self.limit

    def llm_call(self, call: LlmCall) -> None:
        self.inner.llm_call(call)
        if not (call.input_tokens or call.output_tokens):
            return
        usd = self.prices.cost(call.model, call.input_tokens, call.output_tokens)
        if usd is None:
            self.unpriced.add(call.model)
            return
        self.usd += usd
        metrics.observe_llm_cost(self.tenant, call.model, usd)

    def dom_capture(self, capture: DomCapture) -> None:
        self.inner.dom_capture(capture)

    def take(self) -> float:
        """This run's cost (since the last result reported one)."""
        run, self.settled = self.usd - self.settled, self.usd
        return run


class Costs(Feature):
    def __init__(self, services: Services) -> None:
        super().__init__(services)
        self.prices = PriceTable.from_settings(self.settings)

    async def prepare(self, run: JobRun) -> None:
        meter = CostMeter(self.prices, run.inputs.telemetry, current().get("tenant"), run.spec.max_cost_usd)
        run.inputs.telemetry = meter
        if meter.limit is not None:
            asked = run.inputs.is_cancelled
            run.inputs.is_cancelled = lambda: meter.exceeded or bool(asked and asked())
        run.put(meter)

    async def settle(self, run: JobRun, result: JobResult) -> JobResult:
        meter = run.get(CostMeter)
        if meter is None:
            return result
        usd = meter.take()
        changes: dict[str, object] = {"cost_usd": round(usd, 6), "unpriced_models": sorted(meter.unpriced)}
        await self._account(run, meter.tenant, usd)
        if meter.exceeded and result.status is JobStatus.cancelled and not run.is_cancelled():
            log.info("job %s: its LLM calls cost $%.4f, max_cost_usd $%g: stopped", run.job_id, meter.usd, meter.limit)
            changes.update(status=JobStatus.failed, category=FailureCategory.budget_exceeded,
                           error=f"the job's LLM calls cost ${meter.usd:.4f}, its max_cost_usd is ${meter.limit:g}: "
                           "stopped before its next LLM call")
        return result.model_copy(update=changes)

    async def _account(self, run: JobRun, tenant: str | None, usd: float) -> None:
        """The run's cost joins its tenant's day and its batch's (a worker's job: its record is in
        the store). Spent is spent: counted before the result is recorded, so the batch has it
        when it completes."""
        store = self.services.store
        if store is None or usd <= 0:
            return
        if tenant is not None:  # its day's budget (max_cost_usd_per_day)
            await Quotas(store.redis, store.keys).add_cost(tenant, usd)
        record = await store.get(run.job_id)
        if record is None or not record.batch:
            return
        batches = BatchStore(store)
        if await batches.add_cost(record.batch, usd):  # the batch's max_cost_usd: it starts no more jobs
            stopped = await batches.stop_starting(record.batch)
            log.info("batch %s reached its max_cost_usd: %d queued jobs cancelled", record.batch, stopped)
