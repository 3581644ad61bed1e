"""Recipes in the job kernel: templates and parameters, building one from step records, the store."""

from __future__ import annotations

import pytest

from workers.jobs.errors import SpecError
from workers.jobs.model.locators import Locator
from workers.jobs.model.result import ActionRecord, StepRecord
from workers.jobs.model.spec import JobSpec
from workers.jobs.recipes.checks import check_params, check_recipe_job
from workers.jobs.recipes.models import Recipe, RecipeStep
from workers.jobs.recipes.recording import check_named_params, infer_params, recipe_from_run
from workers.jobs.recipes.store import RecipeStore
from workers.jobs.recipes.templates import fill, params_from_task

BOX = Locator(tag="input", role="searchbox", attributes={"name": "q", "placeholder": "e.g. jacket"})
BUTTON = Locator(tag="button", role="button", name="Search", text="Search")
TASK = 'Search the shop for "blue mug" and list the prices'


def run_steps(text: str = "blue mug") -> list[StepRecord]:
    """An agent run: type, submit, read, done (step URLs are where each step began)."""
    return [
        StepRecord(step=1, url="http://shop.test/", actions=[
            ActionRecord(name="input_text", params={"index": 2, "text": text, "intent": "type"}, index=2, locator=BOX),
            ActionRecord(name="click_element", params={"index": 3}, index=3, locator=BUTTON)]),
        StepRecord(step=2, url=f"http://shop.test/search?q={text.replace(' ', '+')}", actions=[
            ActionRecord(name="extract_fields", params={"fields": {"p": ".price"}}, result="read 1 of 1 fields: ..."),
            ActionRecord(name="done", params={"text": "blue mug costs $8"})]),
    ]


def test_parameters_are_inferred_from_the_values_the_run_typed_that_the_task_spells():
    assert infer_params(TASK, run_steps()) == {"q": "blue mug"}
    assert infer_params("Search the shop for blue mug", run_steps()) == {"q": "blue mug"}  # whole words, once
    assert infer_params(TASK, run_steps("<secret>pw</secret>")) == {}
    assert infer_params("Search the shop for the blue mug and the blue mug lid", run_steps()) == {}  # twice
    assert infer_params("Search the shop for blue mugs", run_steps()) == {}  # part of a word
    assert infer_params("Search the shop for a mug", run_steps("a")) == {}  # one letter: a coincidence


def test_a_recipe_is_a_template_of_the_run():
    recipe = recipe_from_run("shop", JobSpec(task=TASK, start_url="http://shop.test/?q=blue+mug"), run_steps(),
                             {"q": "blue mug"}, source_job=None, seconds=12.0, llm_calls=4)
    assert recipe.task == 'Search the shop for "{{q}}" and list the prices'
    assert recipe.start_url == "http://shop.test/?q={{q}}"
    assert [s.action for s in recipe.steps] == ["input_text", "click_element", "extract_fields"]  # no done
    typed, clicked, read = recipe.steps
    assert typed.params == {"text": "{{q}}", "intent": "type", "locator": BOX.model_dump(exclude_none=True)}
    assert typed.expect_path == "/" and clicked.expect_path == "/search" == read.expect_path
    assert read.expect_data and not typed.expect_data
    assert recipe.start_url_for({"q": "tea & cake"}) == "http://shop.test/?q=tea+%26+cake"
    assert typed.as_action({"q": "tea & cake"})["input_text"]["text"] == "tea & cake"


def test_an_element_action_without_a_locator_cannot_be_saved():
    steps = run_steps()
    steps[0].actions[1].locator = None
    with pytest.raises(SpecError, match="holds no locator"):
        recipe_from_run("shop", JobSpec(task=TASK), steps, {}, source_job=None, seconds=1, llm_calls=1)


def test_named_parameters_must_be_values_the_job_used():
    check_named_params({"q": "blue mug"}, TASK, run_steps())
    with pytest.raises(SpecError) as refused:
        check_named_params({"q": "green tea"}, TASK, run_steps())
    assert refused.value.problems[0].field == "params.q"


def test_a_recipe_job_gives_exactly_its_parameters():
    recipe = Recipe(name="shop", task="find {{q}}", params={"q": "mug"}, steps=[RecipeStep(action="wait")])
    check_params(recipe, {"q": "tent"})
    for given, field in (({}, "params.q"), ({"q": "a", "x": "b"}, "params.x")):
        with pytest.raises(SpecError) as refused:
            check_params(recipe, given)
        assert refused.value.problems[0].field == field


def test_a_task_matching_a_template_gives_its_parameters():
    template = 'Search the shop for "{{q}}" and list the prices'
    assert params_from_task(template, 'Search the shop for "tent" and list the prices') == {"q": "tent"}
    assert params_from_task(template, "Something else entirely") is None
    assert fill({"url": "http://x.test/?q={{q}}", "text": "{{q}}"}, {"q": "a b"}) == {
        "url": "http://x.test/?q=a+b", "text": "a b"}


async def test_the_store_keeps_every_version_and_marks_a_failing_recipe(store):
    recipes = RecipeStore(store.redis, store.keys, max_failures=2)
    first = Recipe(name="shop", task="t", steps=[RecipeStep(action="wait")])
    assert (await recipes.save(first)).version == 1
    assert (await recipes.save(first.model_copy(update={"task": "t2"}))).version == 2
    info = await recipes.get("shop")
    assert info.recipe.version == 2 and info.versions == [1, 2]
    assert (await recipes.get("shop", 1)).recipe.task == "t"
    assert await recipes.save(first, only_if_new=True) is None  # automatic mode: the first one wins

    await recipes.record_run("shop", "replayed")
    await recipes.record_run("shop", "failed", "step 2: no match")
    assert not (await recipes.get("shop")).stats.broken
    stats = await recipes.record_run("shop", "failed", "step 2: no match")
    assert stats.broken.startswith("2 failures in a row") and stats.runs == 3 and stats.success_rate == 1 / 3
    await recipes.save(first)  # saving again clears the mark
    assert (await recipes.get("shop")).stats.broken == ""

    assert [i.recipe.name for i in await recipes.list()] == ["shop"]
    assert await recipes.delete("shop") and await recipes.get("shop") is None and not await recipes.delete("shop")


async def test_a_recipe_that_extracts_with_the_model_runs_only_when_the_job_allows_it(store):
    recipes = RecipeStore(store.redis, store.keys)
    await recipes.save(Recipe(name="read", task="read {{q}}", params={"q": "x"},
                              steps=[RecipeStep(action="extract_content", params={"goal": "prices"})]))
    with pytest.raises(SpecError) as refused:
        await check_recipe_job(JobSpec(recipe="read", params={"q": "y"}), recipes)
    assert refused.value.problems[0].field == "llm_extraction"
    await check_recipe_job(JobSpec(recipe="read", params={"q": "y"}, llm_extraction=True), recipes)
    with pytest.raises(SpecError) as unknown:
        await check_recipe_job(JobSpec(recipe="nothing-here"), recipes)
    assert unknown.value.problems[0].field == "recipe"


def test_a_recipe_job_refuses_a_strategy_its_healing_would_not_use():
    with pytest.raises(ValueError, match="planner_navigator"):
        JobSpec(recipe="shop", options={"strategy": "rolling_horizon"})
