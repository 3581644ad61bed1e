"""The action registry: one executor (and its description for the model) per action name.

Names and parameter schemas are the job kernel's (``workers.jobs.model.actions``), so the API can
validate a script without the agent; registering a name the kernel does not know, or with other
parameters, fails at import.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from workers.agent.context import ActionResult, JobContext
from workers.jobs.model.actions import (
    ACTION_PARAMS,
    ActionParams,
    ElementRef,
    params_schema,
    parse_action as parse_params,
)

Executor = Callable[[JobContext, Any], Awaitable[ActionResult]]


@dataclass(frozen=True)
class Action:
    name: str
    params: type[ActionParams]
    run: Executor
    description: str

    @staticmethod
    def targets_element(params: ActionParams) -> bool:
        """Whether these params name an element, by index or locator (so the page state must be known)."""
        return isinstance(params, ElementRef) and bool(params.ways())

    def schema(self) -> dict[str, Any]:
        schema = params_schema(self.params, for_model=True)
        schema["description"] = self.description
        return schema


ACTIONS: dict[str, Action] = {}


def action(name: str, params: type[ActionParams], description: str) -> Callable[[Executor], Executor]:
    """Register ``fn(ctx, params) -> ActionResult`` as the action ``name``."""

    if ACTION_PARAMS.get(name) is not params:
        raise TypeError(f"action {name!r}: the job kernel's ACTION_PARAMS names other parameters (or none)")

    def register(fn: Executor) -> Executor:
        ACTIONS[name] = Action(name, params, fn, description)
        return fn

    return register


@dataclass(frozen=True)
class BoundAction:
    """An action to run: the registered action and its validated parameters."""

    action: Action
    params: ActionParams


def parse_action(item: Any, where: str = "action") -> BoundAction:
    """``{"name": {params}}`` -> the action and its validated params; ValueError names what is wrong."""
    parsed = parse_params(item, where)
    return BoundAction(ACTIONS[parsed.name], parsed.params)


def actions_json_schema() -> dict[str, Any]:
    """One item of the navigator's ``action`` list: an object naming exactly one action."""
    return {
        "type": "object",
        "description": "exactly one action name with its parameters",
        "properties": {name: a.schema() for name, a in ACTIONS.items()},
        "minProperties": 1,
        "maxProperties": 1,
    }
