"""Checking recipe jobs: a recipe job names a recipe that exists and runs, with exactly its
parameters; ``mode: "auto"`` turns a batch's or schedule's agent jobs into automatic recipe jobs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from workers.jobs.errors import SpecError
from workers.jobs.model.spec import JobSpec
from workers.jobs.recipes.models import Recipe

if TYPE_CHECKING:  # the caller hands in its store; checking a spec needs no Redis of its own
    from workers.jobs.crawls.models import CrawlSpec
    from workers.jobs.recipes.store import RecipeStore


def automatic(specs: list[JobSpec], name: str, where: str = "mode") -> list[JobSpec]:
    """``mode: "auto"`` on a batch or schedule: its agent jobs record their first successful run as
    recipe ``name`` and replay it afterwards (jobs naming their own ``auto_recipe`` keep it)."""
    if not any(spec.task is not None for spec in specs):
        raise SpecError.at(where, "'auto' records agent jobs as a recipe: give jobs with a 'task'")
    return [spec.model_copy(update={"auto_recipe": name}) if spec.task is not None and spec.auto_recipe is None
            else spec for spec in specs]


def check_params(recipe: Recipe, given: dict[str, str]) -> None:
    """Every parameter given, none unknown (422 at ``params.<name>``)."""
    for name in recipe.params:
        if name not in given:
            raise SpecError.at(f"params.{name}", f"recipe {recipe.name!r} needs this parameter "
                               f"(its parameters: {', '.join(recipe.params)})")
    for name in given:
        if name not in recipe.params:
            known = ", ".join(recipe.params) or "none"
            raise SpecError.at(f"params.{name}",
                               f"recipe {recipe.name!r} has no such parameter (its parameters: {known})")


async def check_recipe_job(spec: JobSpec, recipes: RecipeStore) -> None:
    """A recipe job names a recipe that exists and runs, with exactly its parameters."""
    if spec.recipe is None:
        return
    info = await recipes.get(spec.recipe)
    if info is None:
        raise SpecError.at("recipe", f"no recipe named {spec.recipe!r}; save one with POST /v1/jobs/{{id}}/recipe")
    if info.stats.broken:
        raise SpecError.at("recipe", f"recipe {spec.recipe!r} is marked broken: {info.stats.broken}; save it again "
                           "from a succeeded job")
    check_params(info.recipe, spec.params)
    if info.recipe.uses_llm and not spec.llm_extraction:
        raise SpecError.at("llm_extraction", f"recipe {spec.recipe!r} extracts with the model (extract_content); "
                           "set llm_extraction to true to allow it, or save a recipe that uses extract_fields")


async def check_crawl_recipe(spec: CrawlSpec, recipes: RecipeStore, where: str | None = None) -> None:
    """Refuse a crawl whose pages would replay a recipe the caller's tenant does not have, a broken
    one, or with other parameters than its own (422 naming the crawl's field, inside ``where``)."""
    if spec.recipe is None:
        return
    try:
        await check_recipe_job(spec.page_spec(spec.seeds()[0], "0" * 32), recipes)
    except SpecError as error:
        raise error.within(where) if where else error from None
