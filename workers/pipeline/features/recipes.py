"""Recipes: which recipe a job replays, and what its run teaches the recipe store.

Before the run (prepare): a recipe job (``spec.recipe``) replays the recipe's current version; an
automatic one (``spec.auto_recipe``) replays it when it exists and the job's task matches its
template, and lets the agent run otherwise. The agent gets the plan and the job as the recipe
would have the agent run it (``replay_spec``), so politeness, artifacts and healing all see the
recipe's start URL and task.

Once the run ended, before its result is recorded (settle): the recipe's counters (a failure in a
row too many marks it broken), the replay metrics, and a new version when the agent healed the
run (or when an automatic job was the first to succeed). Learning never changes the result. A
recipe that is gone, broken or changed since the job was queued is the tenant's to fix:
``recipe_unavailable``. Recipes are read and written among the job's own tenant's only
(``JobRun.tenant``): another tenant's recipe of the same name is as absent as none.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from redis.exceptions import RedisError

import workers.jobs.metrics as metrics
from workers.agent import replay_spec
from workers.jobs.errors import JobsError, RecipeUnavailable, SpecError
from workers.jobs.model.result import JobResult
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import JobStatus
from workers.jobs.recipes.checks import check_params
from workers.jobs.recipes.models import ReplayOutcome, ReplayPlan
from workers.jobs.recipes.recording import infer_params, recipe_from_run
from workers.jobs.recipes.store import RecipeStore
from workers.jobs.recipes.templates import params_from_task
from workers.pipeline.feature import Feature, Services
from workers.pipeline.run import JobRun

log = logging.getLogger("browserd.worker")


@dataclass(frozen=True)
class RecipeRun:
    """How one job relates to a recipe: the plan it replays (None: the agent runs) and the name to save
    its run under when it is an automatic job that found no recipe yet."""

    plan: ReplayPlan | None
    record_as: str | None = None
    replace: bool = False  # record_as names a broken recipe: a successful run is its next version
    store: RecipeStore | None = None  # the job's tenant's recipes


class RecipeReplay(Feature):
    def store(self, tenant: str | None) -> RecipeStore | None:
        """``tenant``'s recipes (None: the operator's); None when this run reaches no store."""
        redis = self.services.redis
        return None if redis is None else RecipeStore.configured(redis, self.services.keys, self.settings, tenant)

    async def prepare(self, run: JobRun) -> None:
        recipe = await self.choose(run.spec, run.tenant)
        run.put(recipe)
        if recipe.plan is not None:
            run.inputs.replay = recipe.plan
            run.inputs.spec = replay_spec(run.spec, recipe.plan)

    async def settle(self, run: JobRun, result: JobResult) -> JobResult:
        recipe = run.get(RecipeRun)
        if recipe is None or run.number != 1 or recipe.store is None:  # a follow-up is the agent's own
            return result
        if not result.steps:  # it never reached the page (no browser free, a crash): nothing to learn
            return result
        try:
            if recipe.plan is not None:
                await self._replayed(recipe.store, run.job_id, recipe.plan, result)
            elif recipe.record_as is not None and result.status is JobStatus.succeeded:
                await self._first_run(recipe.store, run.job_id, run.spec, recipe, result)
        except (JobsError, ValueError, RedisError) as exc:  # the job's result stands; the recipe is left as it was
            log.warning("job %s: recipe not updated: %s", run.job_id, exc)
        return result

    async def choose(self, spec: JobSpec, tenant: str | None = None) -> RecipeRun:
        """Which recipe ``spec`` (``tenant``'s job) replays, or why the agent runs (and whether to record its run)."""
        if spec.recipe is None and spec.auto_recipe is None:
            return RecipeRun(None)
        store = self.store(tenant)
        if store is None:
            if spec.recipe is not None:
                raise RecipeUnavailable(f"recipe {spec.recipe!r}: recipes live in browserd's store, which this run "
                                        "does not reach (set BROWSERD_REDIS_URL)")
            log.info("automatic recipe %s: no store to keep it in; the agent runs", spec.auto_recipe)
            return RecipeRun(None)
        if spec.recipe is not None:
            info = await store.get(spec.recipe)
            if info is None:
                raise RecipeUnavailable(f"recipe {spec.recipe!r} no longer exists (deleted after the job was queued)")
            if info.stats.broken:
                raise RecipeUnavailable(f"recipe {spec.recipe!r} is marked broken: {info.stats.broken}")
            try:
                check_params(info.recipe, spec.params)
            except SpecError as exc:
                raise RecipeUnavailable(f"recipe {spec.recipe!r} changed since the job was queued: {exc}") from None
            return RecipeRun(ReplayPlan(recipe=info.recipe, params=spec.params, heal=spec.heal), store=store)
        assert spec.auto_recipe is not None
        info = await store.get(spec.auto_recipe)
        params = params_from_task(info.recipe.task, spec.task or "") if info is not None else None
        if info is not None and params is not None and not info.stats.broken:
            if not info.recipe.uses_llm or spec.llm_extraction:
                return RecipeRun(ReplayPlan(recipe=info.recipe, params=params), store=store)
            log.info("recipe %s extracts with the model (extract_content): the agent runs; set "
                     "llm_extraction to replay it", info.recipe.name)
        broken = info is not None and bool(info.stats.broken)
        return RecipeRun(None, record_as=spec.auto_recipe if info is None or broken else None, replace=broken,
                         store=store)

    async def _replayed(self, store: RecipeStore, job_id: str, plan: ReplayPlan, result: JobResult) -> None:
        recipe = plan.recipe
        replayed = [s for s in result.steps if s.replayed]
        healed = [s for s in result.steps if not s.replayed]
        failed = sum(1 for s in replayed if s.error)
        used = sum(s.input_tokens + s.output_tokens for s in result.steps)
        ok = result.status is JobStatus.succeeded
        metrics.observe_replay({"replayed": len(replayed) - failed, "failed": failed, "healed": len(healed) if ok else 0},
                               max(0, recipe.recorded_tokens - used) if ok else 0)
        outcome = ReplayOutcome.failed if not ok else ReplayOutcome.healed if healed else ReplayOutcome.replayed
        stats = await store.record_run(recipe.name, outcome, result.error or "")
        if outcome is ReplayOutcome.failed and stats.broken and stats.failing == store.max_failures:
            log.warning("recipe %s is marked broken: %s; jobs naming it are refused until it is saved again",
                        recipe.name, stats.broken)
        if outcome is ReplayOutcome.healed:
            spec = JobSpec(task=recipe.task_for(plan.params), start_url=recipe.start_url_for(plan.params),
                           output_schema=recipe.output_schema)
            new = recipe_from_run(recipe.name, spec, result.steps, plan.params, source_job=job_id,
                                  seconds=recipe.recorded_seconds, llm_calls=recipe.recorded_llm_calls, healed=True)
            new = new.model_copy(update={"recorded_tokens": recipe.recorded_tokens, "params": recipe.params})
            if new.same_actions(recipe):  # e.g. a search with no results: nothing to learn, the checks stay
                log.info("job %s: healed run of recipe %s did what the recipe does; no new version", job_id, recipe.name)
                return
            saved = await store.save(new)
            log.info("job %s healed recipe %s: now version %s", job_id, recipe.name, saved.version if saved else "?")

    async def _first_run(self, store: RecipeStore, job_id: str, spec: JobSpec, recipe: RecipeRun,
                         result: JobResult) -> None:
        """An automatic job's successful agent run: the recipe's first version (or the next, when the
        recipe was marked broken)."""
        assert recipe.record_as is not None
        params = infer_params(spec.task or "", result.steps)
        saved = recipe_from_run(recipe.record_as, spec, result.steps, params, source_job=job_id,
                                seconds=result.totals.seconds, llm_calls=result.totals.llm_calls)
        if await store.save(saved, only_if_new=not recipe.replace) is not None:
            log.info("job %s recorded recipe %s (automatic mode)", job_id, recipe.record_as)
