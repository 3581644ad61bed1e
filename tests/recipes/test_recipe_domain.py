"""A recipe job takes its domain's politeness slot like any other job (it names no start URL)."""

from __future__ import annotations

from tests.jobs.test_recipes import TASK, run_steps
from workers.jobs.models import JobSpec
from workers.jobs.politeness import job_domain
from workers.jobs.recipes import ReplayPlan, recipe_from_run
from workers.recipes import RecipeRun


def test_a_recipe_job_is_on_its_recipes_domain():
    recipe = recipe_from_run("shop", JobSpec(task=TASK, start_url="http://www.shop.test/?q=blue+mug"), run_steps(),
                             {"q": "blue mug"}, source_job=None, seconds=12.0, llm_calls=4)
    job = JobSpec(recipe="shop", params={"q": "tea"})
    run = RecipeRun(ReplayPlan(recipe=recipe, params={"q": "tea"}))
    assert job_domain(run.start_url(job), job.script) == "shop.test"
    assert RecipeRun(None).start_url(job) is None, "no recipe to replay and no start URL: no domain"
    own = JobSpec(task="look", start_url="http://other.test/")
    assert run.start_url(own) == "http://other.test/", "a job's own start URL comes first"
