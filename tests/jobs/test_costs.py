"""The price table (``workers/jobs/costs.py``) and the cost meter (``features/costs.py``): prices by
exact name, by the longest prefix and without a provider prefix; the operator's table over the
defaults; unpriced models; a bad table refused; the metric by tenant and model; bad max_cost_usd; a
batch's cost."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

import workers.jobs.metrics as metrics
from config import ConfigError, load_settings
from workers.agent.telemetry import LlmCall, Telemetry
from workers.jobs.batches.store import BatchStore, result_line
from workers.jobs.costs import DEFAULT_PRICES, PriceTable
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.result import JobResult
from workers.jobs.model.status import JobStatus, LlmOutcome
from workers.jobs.schedules.models import ScheduleSpec
from workers.jobs.store.jobs import JobStore
from workers.jobs.webhooks.outbox import job_payload
from workers.pipeline.features.costs import CostMeter


def test_prices_by_name_prefix_and_the_operators_table() -> None:
    table = PriceTable.from_settings(load_settings(llm_prices='{"house-7b": {"input": 1, "output": 2}, '
                                                   '"gpt-4o": {"input": 5, "output": 20}}'))
    assert table.cost("gpt-4o-mini-2024-07-18", 1_000_000, 1_000_000) == pytest.approx(0.15 + 0.60)
    assert table.cost("openai/gpt-4o-mini", 1_000_000, 0) == pytest.approx(0.15)
    assert table.cost("gpt-4o", 1_000_000, 1_000_000) == pytest.approx(25.0)  # the operator's price wins
    assert table.cost("house-7b", 500_000, 500_000) == pytest.approx(1.5)
    assert table.cost("llama-3-70b", 10, 10) is None  # unpriced
    assert DEFAULT_PRICES["gpt-4o"].cost(1_000_000, 0, cached_tokens=1_000_000) == pytest.approx(1.25)


@pytest.mark.parametrize("raw", ["not json", '{"m": {"input": -1, "output": 1}}', '{"m": {"input": 1}}',
                                 '{"m": {"input": 1, "output": 1, "per": "call"}}', "[1, 2]"])
def test_a_bad_price_table_is_refused_naming_the_setting(raw: str) -> None:
    with pytest.raises(ConfigError, match="BROWSERD_LLM_PRICES"):
        PriceTable.from_settings(load_settings(llm_prices=raw))


def test_the_meter_counts_dollars_by_tenant_and_model_and_names_unpriced_models() -> None:
    meter = CostMeter(PriceTable(DEFAULT_PRICES), Telemetry(), "acme", limit=0.001)
    before = metrics.LLM_COST.labels("acme", "gpt-4o-mini")._value.get()
    meter.llm_call(LlmCall("gpt-4o-mini", LlmOutcome.ok, 0.1, 1000, 1000))
    meter.llm_call(LlmCall("house-7b", LlmOutcome.ok, 0.1, 1000, 1000))
    assert meter.usd == pytest.approx((1000 * 0.15 + 1000 * 0.60) / 1e6) and meter.unpriced == {"house-7b"}
    assert metrics.LLM_COST.labels("acme", "gpt-4o-mini")._value.get() - before == pytest.approx(meter.usd)
    assert not meter.exceeded
    meter.llm_call(LlmCall("gpt-4o", LlmOutcome.ok, 0.1, 1000, 0))
    assert meter.exceeded  # 0.00075 + 0.0025 >= 0.001
    assert meter.take() == pytest.approx(meter.usd) and meter.take() == 0


@pytest.mark.parametrize("bad", [0, -1, "cheap", 1e9])
def test_max_cost_usd_must_be_a_positive_amount(bad: object) -> None:
    with pytest.raises(ValidationError):
        JobSpec(task="x", max_cost_usd=bad)


async def test_a_batch_adds_up_its_jobs_costs(store: JobStore) -> None:
    batches = BatchStore(store)
    made = await batches.create([JobSpec(task="a"), JobSpec(task="b")], [3, 3])
    await batches.add_cost(made.batch_id, 0.0125)
    await batches.add_cost(made.batch_id, 0.0025)
    await batches.add_cost(made.batch_id, 0)
    assert (await batches.get(made.batch_id)).cost_usd == pytest.approx(0.015)  # type: ignore[union-attr]
    gone = "0" * 32
    await batches.add_cost(gone, 1.0)  # an expired batch: nothing written
    assert not await store.redis.exists(store.keys.batch(gone))


async def test_a_batch_at_its_max_cost_stops_starting_jobs_once(store: JobStore) -> None:
    batches = BatchStore(store)
    made = await batches.create([JobSpec(task=t) for t in "abc"], [3, 3, 3], max_cost_usd=0.01)
    running = made.job_ids[0]
    await store.start(running, worker="w", max_attempts=3, stale_after=30)
    assert not await batches.add_cost(made.batch_id, 0.006)
    assert await batches.add_cost(made.batch_id, 0.005)  # 0.011 >= 0.01: this call reached it
    assert not await batches.add_cost(made.batch_id, 0.001)  # reached once
    assert await batches.stop_starting(made.batch_id) == 2
    states = [(await store.get(j)).state for j in made.job_ids]  # type: ignore[union-attr]
    assert states == ["running", "cancelled", "cancelled"]  # the running job goes on
    record = await batches.get(made.batch_id)
    assert record is not None and record.budget_stopped and record.max_cost_usd == 0.01


def test_each_run_of_a_schedule_carries_its_max_cost_usd() -> None:
    one = ScheduleSpec(every=3600, job={"task": "s"}, max_cost_usd=3)
    many = ScheduleSpec(every=3600, batch={"jobs": [{"task": "s"}]}, max_cost_usd=0.5)
    assert one.request().max_cost_usd == 3 and many.request().max_cost_usd == 0.5


async def test_the_webhook_and_the_batch_results_carry_the_cost(store: JobStore) -> None:
    made = await BatchStore(store).create([JobSpec(task="a")], [3])
    job_id = made.job_ids[0]
    claim = await store.start(job_id, worker="w", max_attempts=3, stale_after=30)
    await store.finish(job_id, claim.attempt, JobResult(status=JobStatus.succeeded, final_answer="ok", cost_usd=0.0123))
    [end] = await store.ends([job_id], with_result=True)
    assert end is not None
    assert job_payload(end, None)["cost_usd"] == 0.0123
    assert result_line(job_id, end).cost_usd == 0.0123
