"""Recipes: a succeeded agent job's actions, saved so the same kind of task replays with no LLM.

A recipe holds what the replayer needs and nothing of the page's content: the task and start URL
(as templates), its parameters (values the recorded run typed that should vary, written
``{{name}}`` in the templates), one ``RecipeStep`` per action (its locator instead of its index,
and the outcome expected after it), and the output schema. ``recipe_from_run`` builds one from a
job's step records: a saved job, or a healed replay (the agent took over part-way).

Storage (``Keys.recipe``): one hash per recipe with every version kept (``v:{n}``), the current
version and its run counters; a recipe failing ``recipe_max_failures`` times in a row is marked
``broken`` and refused until it is saved again or healed.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from typing import Annotated, Any, Literal
from urllib.parse import quote_plus, urlsplit

from pydantic import BaseModel, ConfigDict, Field, StringConstraints
from redis.asyncio import Redis

from workers.jobs.actions import replay_action
from workers.jobs.errors import SpecError
from workers.jobs.keys import Keys
from workers.jobs.models import JobSpec, JobStatus, RecipeName, StepRecord
from workers.jobs.records import JobRecord

ParamName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z][A-Za-z0-9_]{0,31}$")]
MAX_PARAMS = 20
PLACEHOLDER = re.compile(r"\{\{([A-Za-z][A-Za-z0-9_]{0,31})\}\}")
QUOTED = re.compile(r"\"([^\"\n]{1,200})\"|'([^'\n]{1,200})'|“([^”\n]{1,200})”|‘([^’\n]{1,200})’")
UNREPLAYABLE = frozenset({"done", "cache_content"})
"""Actions a recipe leaves out: ``done`` carries the recorded run's answer (a replay answers with its
own data), ``cache_content`` the recorded run's notes."""
LLM_ACTIONS = frozenset({"extract_content"})
READS = frozenset({"extract_fields", "extract_content", "get_dropdown_options", "cache_content"})
RunOutcome = Literal["replayed", "healed", "failed"]


class RecipeStep(BaseModel):
    """One recorded action: its parameters (a locator instead of an index) and what should follow."""

    action: str
    params: dict[str, Any] = Field(default_factory=dict, description="The action's parameters; strings may "
                                   "hold {{param}} placeholders; element actions name a 'locator'.")
    expect_path: str | None = Field(None, description="The URL path the page should be on after the action "
                                    "(a template); a replay whose page went elsewhere hands over to the agent.")
    expect_data: bool = Field(False, description="extract_fields: the recorded run read something, so a replay "
                              "whose selectors read nothing hands over to the agent.")

    def as_action(self, params: dict[str, str]) -> dict[str, Any]:
        """``{"name": {params}}`` with the job's parameter values filled in (a script action)."""
        return {self.action: fill(self.params, params)}


class Recipe(BaseModel):
    """One version of a recipe."""

    model_config = ConfigDict(extra="forbid")

    name: RecipeName
    version: int = 1
    created_at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    source_job: str | None = Field(None, description="The job this version was saved (or healed) from.")
    healed: bool = Field(False, description="Saved by a replay the agent finished (self-healing).")
    task: str = Field(description="The task, with {{param}} placeholders; the agent's task when it heals a replay.")
    start_url: str | None = None
    params: dict[ParamName, str] = Field(default_factory=dict, description="Parameter -> the recorded run's value.")
    steps: list[RecipeStep] = Field(default_factory=list)
    output_schema: dict[str, Any] | None = None
    extraction_goal: str | None = Field(None, description="What the run extracted (extract_content's goal).")
    recorded_llm_calls: int = 0
    recorded_tokens: int = Field(0, description="Input + output tokens of the recorded run: what a replay saves.")
    recorded_seconds: float = 0.0

    def same_actions(self, other: Recipe) -> bool:
        """Whether both versions run the same actions on the same elements (expectations aside)."""
        return [(s.action, s.params) for s in self.steps] == [(s.action, s.params) for s in other.steps]

    @property
    def uses_llm(self) -> bool:
        """Whether a replay needs the extractor model (an ``extract_content`` step)."""
        return any(step.action in LLM_ACTIONS for step in self.steps)

    def task_for(self, params: dict[str, str]) -> str:
        return fill(self.task, params)

    def start_url_for(self, params: dict[str, str]) -> str | None:
        return fill(self.start_url, params, url=True) if self.start_url else None


class ReplayPlan(BaseModel):
    """What a worker hands the agent for a recipe job: the version to replay and the job's values."""

    recipe: Recipe
    params: dict[str, str] = Field(default_factory=dict)
    heal: bool = True


def describe_step(step: RecipeStep) -> str:
    """``click_element button 'Search' (submit the search)``: for logs, errors and the healing plan."""
    locator = step.params.get("locator") if isinstance(step.params.get("locator"), dict) else {}
    attributes = locator.get("attributes") if isinstance(locator.get("attributes"), dict) else {}
    label = (locator.get("name") or locator.get("text") or attributes.get("placeholder")
             or attributes.get("aria-label") or attributes.get("name") or locator.get("css") or "")
    target = f" {locator.get('tag') or locator.get('role') or 'element'} {str(label)[:60]!r}" if locator else ""
    detail = "".join(f" {k}={step.params[k]!r}" for k in ("text", "url", "keys", "fields", "goal") if k in step.params)
    intent = step.params.get("intent")
    return f"{step.action}{target}{detail}" + (f" ({intent})" if intent else "")


class RecipeStats(BaseModel):
    """How a recipe has fared; ``broken`` says why it is refused now (empty: it runs)."""

    runs: int = 0
    replayed: int = Field(0, description="Runs that replayed every step with no LLM.")
    healed: int = Field(0, description="Runs the agent finished after a step no longer matched.")
    failed: int = 0
    failing: int = Field(0, description="Failures in a row.")
    success_rate: float | None = None
    broken: str = ""
    last_error: str = ""


class RecipeInfo(BaseModel):
    """What the API shows: the current version, its statistics and the versions kept."""

    recipe: Recipe
    stats: RecipeStats
    versions: list[int]


class SaveRecipe(BaseModel):
    """``POST /v1/jobs/{id}/recipe``: the recipe's name and, optionally, its parameters.

    ``params`` maps a parameter's name to the value the job used (e.g. ``{"query": "mug"}``);
    without it, quoted strings of the task that the job typed into a field become parameters.
    """

    model_config = ConfigDict(extra="forbid")

    name: RecipeName
    params: dict[ParamName, str] | None = Field(None, max_length=MAX_PARAMS)


# --- templates -------------------------------------------------------------------------------


def fill(value: Any, params: dict[str, str], *, url: bool = False) -> Any:
    """``value`` with every ``{{name}}`` replaced by its parameter (URL-encoded in a URL), recursively."""
    if isinstance(value, str):
        return PLACEHOLDER.sub(lambda m: quote_plus(params[m[1]]) if url else params[m[1]], value)
    if isinstance(value, dict):
        return {k: fill(v, params, url=url or k == "url") for k, v in value.items()}
    if isinstance(value, list):
        return [fill(v, params, url=url) for v in value]
    return value


def _templated(text: str, params: dict[str, str], *, url: bool = False) -> str:
    """``text`` with each parameter's value written as its placeholder (longest values first)."""
    for name, value in sorted(params.items(), key=lambda kv: -len(kv[1])):
        if value:
            text = text.replace(quote_plus(value) if url else value, "{{" + name + "}}")
            if url:
                text = text.replace(value, "{{" + name + "}}")
    return text


def template_of(value: Any, params: dict[str, str], key: str = "") -> Any:
    if isinstance(value, str):
        return _templated(value, params, url=key == "url")
    if isinstance(value, dict):
        return {k: template_of(v, params, k) for k, v in value.items()}
    if isinstance(value, list):
        return [template_of(v, params, key) for v in value]
    return value


def params_from_task(template: str, task: str) -> dict[str, str] | None:
    """The parameter values that make ``template`` read as ``task``; None when it does not match."""
    parts = PLACEHOLDER.split(template)
    pattern, names = "", []
    for i, part in enumerate(parts):
        if i % 2:
            pattern += f"(?P<{part}>.+?)" if part not in names else f"(?P={part})"
            names.append(part)
        else:
            pattern += re.escape(part)
    found = re.fullmatch(pattern, task, flags=re.DOTALL)
    return {name: found[name] for name in dict.fromkeys(names)} if found else None


# --- building a recipe from a run ------------------------------------------------------------


def typed_values(steps: list[StepRecord]) -> list[tuple[str, dict[str, Any]]]:
    """(text, locator) of every ``input_text`` the run did, in order."""
    found = []
    for step in steps:
        for action in step.actions:
            if action.name == "input_text" and action.ok and isinstance(action.params.get("text"), str):
                found.append((action.params["text"], action.locator.model_dump() if action.locator else {}))
    return found


def infer_params(task: str, steps: list[StepRecord]) -> dict[str, str]:
    """Values the run typed into a field that the task spells out, named for the field (its ``name``,
    else ``param1``, ``param2``...): a quoted string of the task, or words it holds exactly once
    (``Search for blue mug`` typed ``blue mug``), so that the next task with other words replays."""
    quoted = {next(g for g in m.groups() if g) for m in QUOTED.finditer(task)}
    params: dict[str, str] = {}
    for text, locator in typed_values(steps):
        if text in params.values() or "<secret>" in text:
            continue
        if text not in quoted and not _spelled_once(text, task):
            continue
        name = _param_name(locator, len(params) + 1)
        params[name if name not in params else f"param{len(params) + 1}"] = text
    return params


MIN_UNQUOTED_PARAM = 2  # characters: a one-letter value in a task is too likely a coincidence


def _spelled_once(text: str, task: str) -> bool:
    """``text`` stands in ``task`` as whole words, exactly once (so a template of it is unambiguous)."""
    if len(text.strip()) < MIN_UNQUOTED_PARAM or text != text.strip():
        return False
    return len(re.findall(rf"(?<!\w){re.escape(text)}(?!\w)", task)) == 1 and task.count(text) == 1


def _param_name(locator: dict[str, Any], number: int) -> str:
    attributes = locator.get("attributes") if isinstance(locator.get("attributes"), dict) else {}
    for candidate in (attributes.get("name"), locator.get("name")):
        if isinstance(candidate, str) and re.fullmatch(r"[A-Za-z][A-Za-z0-9_]{0,31}", candidate):
            return candidate
    return f"param{number}"


def check_named_params(params: dict[str, str], task: str, steps: list[StepRecord]) -> None:
    """A parameter the user named must be a value the job typed (or a part of its task)."""
    typed = [text for text, _ in typed_values(steps)]
    for name, value in params.items():
        if not value or not any(value in text for text in typed) and value not in task:
            raise SpecError.at(f"params.{name}", f"{value!r} is not a value this job typed or a part of its task; "
                               f"it typed: {typed or 'nothing'}")


def _url_after(steps: list[StepRecord], n: int) -> str | None:
    """Where the page was after step ``n``'s last action. A replayed step records the URL after its
    action; an agent step the URL it began on, so its page after is where the next step began (the
    agent never runs an action on a page it did not see)."""
    if steps[n].replayed:
        return steps[n].url
    return steps[n + 1].url if n + 1 < len(steps) else None


def recipe_steps(steps: list[StepRecord], params: dict[str, str]) -> list[RecipeStep]:
    """Every successful action (but ``done`` and notes) as a recipe step, its index replaced by its locator.

    A replayed step that did not match is kept when its action changed the page (the agent went on
    from there), left out when it only read it (the agent read again).
    """
    out: list[RecipeStep] = []
    for n, step in enumerate(steps):
        after = _url_after(steps, n)
        ok = [a for a in step.actions if a.ok]
        for i, action in enumerate(ok):
            if action.name in UNREPLAYABLE or (step.replayed and step.error and action.name in READS):
                continue
            try:
                params_ = replay_action(action)[action.name]
            except ValueError as exc:
                raise SpecError.at("job", f"step {step.step}: {exc}, so its element cannot be found again on a "
                                   "new page") from None
            path = (step.url if i + 1 < len(ok) else after) or None
            read = action.name == "extract_fields" and not (action.result or "").startswith("read 0 of")
            out.append(RecipeStep(action=action.name, params=template_of(params_, params), expect_data=read,
                                  expect_path=_templated(urlsplit(path).path, params, url=True) if path else None))
    return out


def recipe_from_run(name: str, spec: JobSpec, steps: list[StepRecord], params: dict[str, str], *,
                    source_job: str | None, seconds: float, llm_calls: int, healed: bool = False) -> Recipe:
    """A recipe from a succeeded run's step records (the task and start URL as templates)."""
    built = recipe_steps(steps, params)
    if not built:
        raise SpecError.at("job", "the job ran no action a recipe could replay")
    goals = [s.params.get("goal") for s in built if s.action == "extract_content" and s.params.get("goal")]
    return Recipe(
        name=name, source_job=source_job, healed=healed, task=_templated(spec.task or "", params),
        start_url=_templated(str(spec.start_url), params, url=True) if spec.start_url else None,
        params=params, steps=built, output_schema=spec.output_schema, extraction_goal=goals[-1] if goals else None,
        recorded_llm_calls=llm_calls, recorded_tokens=sum(s.input_tokens + s.output_tokens for s in steps),
        recorded_seconds=round(seconds, 3),
    )


def recipe_from_job(record: JobRecord, request: SaveRecipe) -> Recipe:
    """``POST /v1/jobs/{id}/recipe``: a succeeded agent job as a recipe (refusals name the field)."""
    spec, result = record.spec, record.result
    if record.state is not JobStatus.succeeded or result is None or spec is None:
        raise SpecError.at("job", f"job {record.id} is {record.state.value}; only a succeeded job can be saved")
    if spec.task is None:
        raise SpecError.at("job", f"job {record.id} is not an agent task (a script or a recipe replay); "
                           "save the agent job it came from")
    if request.params is None:
        params = infer_params(spec.task, result.steps)
    else:
        check_named_params(request.params, spec.task, result.steps)
        params = request.params
    return recipe_from_run(request.name, spec, result.steps, params, source_job=record.id,
                           seconds=result.totals.seconds, llm_calls=result.totals.llm_calls)


def automatic(specs: list[JobSpec], name: str, where: str = "mode") -> list[JobSpec]:
    """``mode: "auto"`` on a batch or schedule: its agent jobs record their first successful run as
    recipe ``name`` and replay it afterwards (jobs naming their own ``auto_recipe`` keep it)."""
    if not any(spec.task is not None for spec in specs):
        raise SpecError.at(where, "'auto' records agent jobs as a recipe: give jobs with a 'task'")
    return [spec.model_copy(update={"auto_recipe": name}) if spec.task is not None and spec.auto_recipe is None
            else spec for spec in specs]


# --- checking a recipe job ---------------------------------------------------------------------


def check_params(recipe: Recipe, given: dict[str, str]) -> None:
    """Every parameter given, none unknown (422 at ``params.<name>``)."""
    for name in recipe.params:
        if name not in given:
            raise SpecError.at(f"params.{name}", f"recipe {recipe.name!r} needs this parameter "
                               f"(its parameters: {', '.join(recipe.params)})")
    for name in given:
        if name not in recipe.params:
            known = ", ".join(recipe.params) or "none"
            raise SpecError.at(f"params.{name}", f"recipe {recipe.name!r} has no such parameter (its parameters: {known})")


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


# --- the store ----------------------------------------------------------------------------------


class RecipeStore:
    """Recipes in the job store's Redis: every version kept, run counters beside them."""

    def __init__(self, redis: Redis, keys: Keys | None = None, *, max_failures: int = 3) -> None:
        self.redis, self.keys, self.max_failures = redis, keys or Keys(), max_failures

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
                          versions=sorted(int(k[2:]) for k in raw if k.startswith("v:")))

    async def list(self) -> list[RecipeInfo]:
        names = await self.redis.zrange(self.keys.recipes, 0, -1)
        found = [await self.get(name) for name in names]
        return [info for info in found if info is not None]

    async def delete(self, name: str) -> bool:
        removed = await self.redis.delete(self.keys.recipe(name))
        await self.redis.zrem(self.keys.recipes, name)
        return bool(removed)

    async def record_run(self, name: str, outcome: RunOutcome, error: str = "") -> RecipeStats:
        """Count one run; the ``max_failures``-th failure in a row marks the recipe broken."""
        key = self.keys.recipe(name)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hincrby(key, "runs", 1)
            pipe.hincrby(key, outcome, 1)
            if outcome == "failed":
                pipe.hincrby(key, "failing", 1)
                pipe.hset(key, "last_error", error[:500])
            else:
                pipe.hset(key, "failing", 0)
            replies = await pipe.execute()
        if outcome == "failed" and replies[2] >= self.max_failures:
            await self.redis.hset(key, "broken", f"{replies[2]} failures in a row; the last: {error[:300]}")
        return _stats(await self.redis.hgetall(key))


def _stats(raw: dict[str, str]) -> RecipeStats:
    counts = {k: int(raw.get(k) or 0) for k in ("runs", "replayed", "healed", "failed", "failing")}
    rate = (counts["replayed"] + counts["healed"]) / counts["runs"] if counts["runs"] else None
    return RecipeStats(**counts, success_rate=rate, broken=raw.get("broken", ""), last_error=raw.get("last_error", ""))
