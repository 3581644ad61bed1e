"""What a recipe is: its steps, its versions' record, a replay plan, its statistics, and the bodies
that save one. Pure pydantic: the client shows ``RecipeInfo`` without Redis.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from workers.jobs.model.spec import RecipeName
from workers.jobs.recipes.templates import fill

ParamName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z][A-Za-z0-9_]{0,31}$")]
MAX_PARAMS = 20
LLM_ACTIONS = frozenset({"extract_content"})


class ReplayOutcome(StrEnum):
    """How one run of a recipe went (``RecipeStore.record_run``; also the replay metrics' label)."""

    replayed = "replayed"  # every step ran from the recipe, with no LLM
    healed = "healed"  # the agent finished it after a step no longer matched
    failed = "failed"


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
    tenant: str | None = Field(None, description="The tenant whose key made it; null: the operator's.")


class SaveRecipe(BaseModel):
    """``POST /v1/jobs/{id}/recipe``: the recipe's name and, optionally, its parameters.

    ``params`` maps a parameter's name to the value the job used (e.g. ``{"query": "mug"}``);
    without it, quoted strings of the task that the job typed into a field become parameters.
    """

    model_config = ConfigDict(extra="forbid")

    name: RecipeName
    params: dict[ParamName, str] | None = Field(None, max_length=MAX_PARAMS)
