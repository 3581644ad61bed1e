"""The action layer shared by the navigator and script mode.

Importing this package registers every action (each module registers its own).
"""

from workers.agent.actions import content, elements, human, navigation, scrolling, uploads  # noqa: F401  (registration)
from workers.agent.actions.registry import (
    ACTIONS,
    Action,
    BoundAction,
    actions_json_schema,
    parse_action,
)
from workers.agent.actions.runner import ActionOutcome, run_action
from workers.jobs.model.actions import ACTION_PARAMS

_unregistered = set(ACTION_PARAMS) - set(ACTIONS)
if _unregistered:  # the kernel accepts these in scripts: the agent must be able to run them
    raise ImportError(f"actions without an executor: {', '.join(sorted(_unregistered))}")

__all__ = ["ACTIONS", "Action", "ActionOutcome", "BoundAction", "actions_json_schema", "parse_action", "run_action"]
