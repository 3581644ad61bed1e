"""The worker's side of recipes: which recipe a job replays, and what its run teaches the store.

Before the run: a recipe job (``spec.recipe``) replays the recipe's current version; an automatic
one (``spec.auto_recipe``) replays it when it exists and the job's task matches its template, and
runs the agent otherwise. After the run: the recipe's counters (a failure in a row too many marks
it broken), the replay metrics, and a new version when the agent healed the run (or when an
automatic job was the first to succeed).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from redis.exceptions import RedisError

import workers.jobs.metrics as metrics
from config import Settings
from workers.jobs.errors import JobsError, SpecError
from workers.jobs.model.result import JobResult
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import JobStatus
from workers.jobs.recipes.checks import check_params
from workers.jobs.recipes.models import ReplayPlan
from workers.jobs.recipes.recording import infer_params, recipe_from_run
from workers.jobs.recipes.store import RecipeStore
from workers.jobs.recipes.templates import params_from_task
from workers.jobs.store.jobs import JobStore

log = logging.getLogger("browserd.worker")


class RecipeUnavailable(JobsError):
    """The recipe a job names was deleted, broken or changed its parameters after the job was queued."""


@dataclass(frozen=True)
class RecipeRun:
    """How one job relates to a recipe: the plan it replays (None: the agent runs) and the name to save
    its run under when it is an automatic job that found no recipe yet."""

    plan: ReplayPlan | None
    record_as: str | None = None
    replace: bool = False  # record_as names a broken recipe: a successful run is its next version

    def start_url(self, spec: JobSpec) -> str | None:
        """Where the job starts: its own start URL, else the replayed recipe's (a recipe job names
        none of its own), so that it takes its domain's politeness slot like any other job."""
        if spec.start_url:
            return str(spec.start_url)
        return self.plan.recipe.start_url_for(self.plan.params) if self.plan else None


class Recipes:
    def __init__(self, store: JobStore, settings: Settings) -> None:
        self.store = RecipeStore(store.redis, store.keys, max_failures=settings.recipe_max_failures)

    async def before(self, spec: JobSpec) -> RecipeRun:
        if spec.recipe is not None:
            info = await self.store.get(spec.recipe)
            if info is None:
                raise RecipeUnavailable(f"recipe {spec.recipe!r} no longer exists (deleted after the job was queued)")
            if info.stats.broken:
                raise RecipeUnavailable(f"recipe {spec.recipe!r} is marked broken: {info.stats.broken}")
            try:
                check_params(info.recipe, spec.params)
            except SpecError as exc:
                raise RecipeUnavailable(f"recipe {spec.recipe!r} changed since the job was queued: {exc}") from None
            return RecipeRun(ReplayPlan(recipe=info.recipe, params=spec.params, heal=spec.heal))
        if spec.auto_recipe is not None:
            info = await self.store.get(spec.auto_recipe)
            params = params_from_task(info.recipe.task, spec.task or "") if info is not None else None
            if info is not None and params is not None and not info.stats.broken:
                if not info.recipe.uses_llm or spec.llm_extraction:
                    return RecipeRun(ReplayPlan(recipe=info.recipe, params=params))
                log.info("recipe %s extracts with the model (extract_content): the agent runs; set "
                         "llm_extraction to replay it", info.recipe.name)
            broken = info is not None and bool(info.stats.broken)
            return RecipeRun(None, record_as=spec.auto_recipe if info is None or broken else None, replace=broken)
        return RecipeRun(None)

    async def after(self, job_id: str, spec: JobSpec, run: RecipeRun, result: JobResult) -> None:
        """Count the run, observe the replay metrics and save what the agent learnt."""
        try:
            if run.plan is not None:
                await self._replayed(job_id, run.plan, result)
            elif run.record_as is not None and result.status is JobStatus.succeeded:
                await self._first_run(job_id, spec, run, result)
        except (JobsError, ValueError, RedisError) as exc:  # the job's result stands; the recipe is left as it was
            log.warning("job %s: recipe not updated: %s", job_id, exc)

    async def _replayed(self, job_id: str, plan: ReplayPlan, result: JobResult) -> None:
        recipe = plan.recipe
        replayed = [s for s in result.steps if s.replayed]
        healed = [s for s in result.steps if not s.replayed]
        failed = sum(1 for s in replayed if s.error)
        used = sum(s.input_tokens + s.output_tokens for s in result.steps)
        ok = result.status is JobStatus.succeeded
        metrics.observe_replay({"replayed": len(replayed) - failed, "failed": failed, "healed": len(healed) if ok else 0},
                               max(0, recipe.recorded_tokens - used) if ok else 0)
        outcome = "failed" if not ok else "healed" if healed else "replayed"
        stats = await self.store.record_run(recipe.name, outcome, result.error or "")
        if outcome == "failed" and stats.broken and stats.failing == self.store.max_failures:
            log.warning("recipe %s is marked broken: %s; jobs naming it are refused until it is saved again",
                        recipe.name, stats.broken)
        if outcome == "healed":
            spec = JobSpec(task=recipe.task_for(plan.params), start_url=recipe.start_url_for(plan.params),
                           output_schema=recipe.output_schema)
            new = recipe_from_run(recipe.name, spec, result.steps, plan.params, source_job=job_id,
                                  seconds=recipe.recorded_seconds, llm_calls=recipe.recorded_llm_calls, healed=True)
            new = new.model_copy(update={"recorded_tokens": recipe.recorded_tokens, "params": recipe.params})
            if new.same_actions(recipe):  # e.g. a search with no results: nothing to learn, the checks stay
                log.info("job %s: healed run of recipe %s did what the recipe does; no new version", job_id, recipe.name)
                return
            saved = await self.store.save(new)
            log.info("job %s healed recipe %s: now version %s", job_id, recipe.name, saved.version if saved else "?")

    async def _first_run(self, job_id: str, spec: JobSpec, run: RecipeRun, result: JobResult) -> None:
        """An automatic job's successful agent run: the recipe's first version (or the next, when the
        recipe was marked broken)."""
        name = run.record_as
        assert name is not None
        params = infer_params(spec.task or "", result.steps)
        recipe = recipe_from_run(name, spec, result.steps, params, source_job=job_id, seconds=result.totals.seconds,
                                 llm_calls=result.totals.llm_calls)
        if await self.store.save(recipe, only_if_new=not run.replace) is not None:
            log.info("job %s recorded recipe %s (automatic mode)", job_id, name)
