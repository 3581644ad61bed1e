"""Recipes: a succeeded agent job's actions, saved so the same kind of task replays with no LLM.

A recipe holds what the replayer needs and nothing of the page's content: the task and start URL
(as templates), its parameters (values the recorded run typed that should vary, written
``{{name}}`` in the templates), one ``RecipeStep`` per action (its locator instead of its index,
and the outcome expected after it), and the output schema. ``recording.recipe_from_run`` builds
one from a job's step records: a saved job, or a healed replay (the agent took over part-way).

Storage (``Keys.recipe``): one hash per recipe with every version kept (``v:{n}``), the current
version and its run counters; a recipe failing ``recipe_max_failures`` times in a row is marked
``broken`` and refused until it is saved again or healed.
"""

from __future__ import annotations

import time

from redis.asyncio import Redis

from config import Settings
from workers.jobs.recipes.models import Recipe, RecipeInfo, RecipeStats, ReplayOutcome
from workers.jobs.store.keys import Keys


class RecipeStore:
    """Recipes in the job store's Redis: every version kept, run counters beside them."""

    def __init__(self, redis: Redis, keys: Keys | None = None, *, max_failures: int = 3,
                 tenant: str | None = None) -> None:
        """One owner's recipes: ``tenant``'s (None: the operator's), under its own keys (``Keys.owned_by``)."""
        self.redis, self.max_failures, self.tenant = redis, max_failures, tenant
        self.keys = (keys or Keys()).owned_by(tenant)

    @classmethod
    def configured(cls, redis: Redis, keys: Keys, settings: Settings, tenant: str | None) -> RecipeStore:
        """``tenant``'s recipes as the operator set them up (``BROWSERD_RECIPE_MAX_FAILURES``): the one
        way the API, the console and a run's replay open them, so they agree on when a recipe breaks."""
        return cls(redis, keys, max_failures=settings.recipe_max_failures, tenant=tenant)

    async def save(self, recipe: Recipe, *, only_if_new: bool = False) -> Recipe | None:
        """Store ``recipe`` as the next version (the old ones are kept) and clear a ``broken`` mark.

        With ``only_if_new``, only when no recipe has that name yet (automatic mode: the first
        successful run wins); None when one had.
        """
        key = self.keys.recipe(recipe.name)
        if only_if_new:
            recipe = recipe.model_copy(update={"version": 1})
            if not await self.redis.hsetnx(key, "v:1", recipe.model_dump_json()):
                return None
            await self.redis.hset(key, mapping={"version": 1, "broken": "", "failing": 0})
        else:
            version = await self.redis.hincrby(key, "next", 1)
            recipe = recipe.model_copy(update={"version": version})
            await self.redis.hset(key, mapping={f"v:{version}": recipe.model_dump_json(), "version": version,
                                                "broken": "", "failing": 0})
        await self.redis.hsetnx(key, "next", 1)
        await self.redis.zadd(self.keys.recipes, {recipe.name: time.time()}, nx=True)
        return recipe

    async def get(self, name: str, version: int | None = None) -> RecipeInfo | None:
        raw = await self.redis.hgetall(self.keys.recipe(name))
        current = version or int(raw.get("version") or 0)
        if not raw.get(f"v:{current}"):
            return None
        return RecipeInfo(recipe=Recipe.model_validate_json(raw[f"v:{current}"]), stats=_stats(raw),
                          versions=sorted(int(k[2:]) for k in raw if k.startswith("v:")), tenant=self.tenant)

    async def list(self) -> list[RecipeInfo]:
        names = await self.redis.zrange(self.keys.recipes, 0, -1)
        found = [await self.get(name) for name in names]
        return [info for info in found if info is not None]

    async def delete(self, name: str) -> bool:
        removed = await self.redis.delete(self.keys.recipe(name))
        await self.redis.zrem(self.keys.recipes, name)
        return bool(removed)

    async def record_run(self, name: str, outcome: ReplayOutcome, error: str = "") -> RecipeStats:
        """Count one run; the ``max_failures``-th failure in a row marks the recipe broken."""
        outcome = ReplayOutcome(outcome)
        key = self.keys.recipe(name)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hincrby(key, "runs", 1)
            pipe.hincrby(key, outcome.value, 1)
            if outcome is ReplayOutcome.failed:
                pipe.hincrby(key, "failing", 1)
                pipe.hset(key, "last_error", error[:500])
            else:
                pipe.hset(key, "failing", 0)
            replies = await pipe.execute()
        if outcome is ReplayOutcome.failed and replies[2] >= self.max_failures:
            await self.redis.hset(key, "broken", f"{replies[2]} failures in a row; the last: {error[:300]}")
        return _stats(await self.redis.hgetall(key))


def _stats(raw: dict[str, str]) -> RecipeStats:
    counts = {k: int(raw.get(k) or 0) for k in ("runs", *(o.value for o in ReplayOutcome), "failing")}
    rate = (counts["replayed"] + counts["healed"]) / counts["runs"] if counts["runs"] else None
    return RecipeStats(**counts, success_rate=rate, broken=raw.get("broken", ""), last_error=raw.get("last_error", ""))
