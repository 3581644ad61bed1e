"""Building a recipe from a run: a succeeded agent job's step records (``recipe_from_job``), or a
healed replay's (``recipe_from_run``), with the values it typed turned into parameters."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from workers.jobs.errors import SpecError
from workers.jobs.model.actions import replay_action
from workers.jobs.model.record import JobRecord
from workers.jobs.model.result import StepRecord
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import JobStatus
from workers.jobs.recipes.models import Recipe, RecipeStep, SaveRecipe
from workers.jobs.recipes.templates import template_of, templated

QUOTED = re.compile(r"\"([^\"\n]{1,200})\"|'([^'\n]{1,200})'|“([^”\n]{1,200})”|‘([^’\n]{1,200})’")
UNREPLAYABLE = frozenset({"done", "cache_content"})
"""Actions a recipe leaves out: ``done`` carries the recorded run's answer (a replay answers with its
own data), ``cache_content`` the recorded run's notes."""
READS = frozenset({"extract_fields", "extract_content", "get_dropdown_options", "cache_content"})


def _typed_values(steps: list[StepRecord]) -> list[tuple[str, dict[str, Any]]]:
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
    for text, locator in _typed_values(steps):
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
    typed = [text for text, _ in _typed_values(steps)]
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
                                  expect_path=templated(urlsplit(path).path, params, url=True) if path else None))
    return out


def recipe_from_run(name: str, spec: JobSpec, steps: list[StepRecord], params: dict[str, str], *,
                    source_job: str | None, seconds: float, llm_calls: int, healed: bool = False) -> Recipe:
    """A recipe from a succeeded run's step records (the task and start URL as templates)."""
    built = recipe_steps(steps, params)
    if not built:
        raise SpecError.at("job", "the job ran no action a recipe could replay")
    goals = [s.params.get("goal") for s in built if s.action == "extract_content" and s.params.get("goal")]
    return Recipe(
        name=name, source_job=source_job, healed=healed, task=templated(spec.task or "", params),
        start_url=templated(str(spec.start_url), params, url=True) if spec.start_url else None,
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
