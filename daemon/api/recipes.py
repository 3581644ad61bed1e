"""``/v1/recipes``: succeeded agent jobs saved as recipes, replayed later with no LLM.

``POST /v1/jobs/{id}/recipe`` saves (a new version when the name exists: old versions are kept);
a job runs one with ``{"recipe": name, "params": {...}}``. A recipe is its job's tenant's: a
tenant's key reaches only its own (another tenant's name answers 404, and a job naming it is refused
as if it did not exist); the admin's reaches the operator's, and any tenant's with ``?tenant=``.
"""

from __future__ import annotations

import re

from fastapi import APIRouter, Depends, Request

from daemon.api.deps import ERRORS, Caller, Owner, Store, TenantQuery, caller, owners
from daemon.api.errors import ApiError
from workers.jobs.errors import SpecError
from workers.jobs.model.spec import STORED_NAME, JobSpec
from workers.jobs.recipes.checks import check_recipe_job
from workers.jobs.recipes.models import RecipeInfo, SaveRecipe
from workers.jobs.recipes.recording import recipe_from_job
from workers.jobs.recipes.store import RecipeStore
from workers.jobs.store.jobs import JobStore

router = APIRouter(prefix="/v1", dependencies=[Depends(caller)], responses=ERRORS, tags=["recipes"])
NAME = re.compile(STORED_NAME)


def recipe_store(request: Request, store: JobStore, tenant: str | None) -> RecipeStore:
    """``tenant``'s recipes (None: the operator's)."""
    return RecipeStore.configured(store.redis, store.keys, request.app.state.settings, tenant)


async def check_recipes(specs: list[JobSpec], recipes: RecipeStore, *, batch: bool) -> None:
    """Refuse recipe jobs naming no recipe, a broken one, or other parameters than its own (422)."""
    for index, spec in enumerate(specs):
        try:
            await check_recipe_job(spec, recipes)
        except SpecError as error:
            raise error.within(f"jobs[{index}]") if batch else error from None


def _not_found(name: str) -> ApiError:
    return ApiError(404, "not_found", f"no recipe named {name!r}")


@router.post("/jobs/{job_id}/recipe", status_code=201, response_model=RecipeInfo)
async def save_recipe(job_id: str, body: SaveRecipe, request: Request, store: Store, who: Caller) -> RecipeInfo:
    """Save a succeeded agent job as a recipe (its actions with locators, start URL, parameters,
    schema); the recipe is the job's tenant's, as the job is."""
    record = await store.get(job_id)
    if record is None or not who.sees(record.tenant):
        raise ApiError(404, "not_found", f"no job with id {job_id!r}")
    recipes = recipe_store(request, store, record.tenant)
    saved = await recipes.save(recipe_from_job(record, body))
    assert saved is not None
    found = await recipes.get(saved.name)
    assert found is not None
    return found


@router.get("/recipes", response_model=list[RecipeInfo])
async def list_recipes(request: Request, store: Store, who: Caller, tenant: TenantQuery = None) -> list[RecipeInfo]:
    """Every recipe's current version, with its run statistics (success rate, broken): a tenant's own;
    the admin's all, or ``?tenant=``'s."""
    found: list[RecipeInfo] = []
    for owner in await owners(who, tenant, store):
        found += await recipe_store(request, store, owner).list()
    return found


@router.get("/recipes/{name}", response_model=RecipeInfo)
async def get_recipe(name: str, request: Request, store: Store, tenant: Owner, version: int | None = None
                     ) -> RecipeInfo:
    """One recipe: its current version (or ``?version=n``), statistics and the versions kept."""
    found = await recipe_store(request, store, tenant).get(name, version) if NAME.match(name) else None
    if found is None:
        raise _not_found(name if version is None else f"{name} v{version}")
    return found


@router.delete("/recipes/{name}", status_code=204)
async def delete_recipe(name: str, request: Request, store: Store, tenant: Owner) -> None:
    """Forget a recipe and every version; queued jobs naming it fail instead of running."""
    if not NAME.match(name) or not await recipe_store(request, store, tenant).delete(name):
        raise _not_found(name)
