"""The action registry: names, parameter schemas, executors, and the script validator."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from workers.agent.actions.schemas import ActionParams, params_schema
from workers.agent.context import ActionResult, JobContext

Executor = Callable[[JobContext, Any], Awaitable[ActionResult]]


@dataclass(frozen=True)
class Action:
    name: str
    params: type[ActionParams]
    run: Executor
    description: str

    @staticmethod
    def targets_element(params: ActionParams) -> bool:
        """Whether these params address an element by index (so the page state must be known)."""
        return getattr(params, "index", None) is not None

    def schema(self) -> dict[str, Any]:
        schema = params_schema(self.params)
        schema["description"] = self.description
        return schema


ACTIONS: dict[str, Action] = {}


def action(name: str, params: type[ActionParams], description: str) -> Callable[[Executor], Executor]:
    """Register ``fn(ctx, params) -> ActionResult`` as the action ``name``."""

    def register(fn: Executor) -> Executor:
        ACTIONS[name] = Action(name, params, fn, description)
        return fn

    return register


def parse_action(item: Any, where: str = "action") -> tuple[Action, ActionParams]:
    """``{"name": {params}}`` -> the action and its validated params; ValueError names what is wrong."""
    if not isinstance(item, dict) or len(item) != 1:
        raise ValueError(f"{where}: must be an object with exactly one action name, like {{\"click_element\": {{...}}}}")
    name, raw = next(iter(item.items()))
    found = ACTIONS.get(name)
    if found is None:
        raise ValueError(f"{where}: unknown action {name!r} (known: {', '.join(sorted(ACTIONS))})")
    try:
        params = found.params.model_validate(raw if raw is not None else {})
    except ValidationError as exc:
        problems = "; ".join(f"field {'.'.join(map(str, e['loc'])) or '(params)'}: {e['msg']}" for e in exc.errors())
        raise ValueError(f"{where}.{name}: {problems}") from None
    return found, params


def validate_script(script: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The script with every action's params validated and defaults filled in."""
    if not isinstance(script, list) or not script:
        raise ValueError("script: must be a non-empty list of actions")
    normalised = []
    for i, item in enumerate(script):
        found, params = parse_action(item, f"script[{i}]")
        normalised.append({found.name: params.model_dump(exclude_none=True)})
    return normalised


def actions_json_schema() -> dict[str, Any]:
    """One item of the navigator's ``action`` list: an object naming exactly one action."""
    return {
        "type": "object",
        "description": "exactly one action name with its parameters",
        "properties": {name: a.schema() for name, a in ACTIONS.items()},
        "minProperties": 1,
        "maxProperties": 1,
    }
