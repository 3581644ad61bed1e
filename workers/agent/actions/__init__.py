"""The action layer shared by the navigator and script mode.

Importing this package registers every action (each module registers its own).
"""

from workers.agent.actions import content, elements, navigation, scrolling  # noqa: F401  (registration)
from workers.agent.actions.registry import ACTIONS, Action, actions_json_schema, parse_action, validate_script
from workers.agent.actions.runner import Outcome, run_action

__all__ = ["ACTIONS", "Action", "Outcome", "actions_json_schema", "parse_action", "run_action", "validate_script"]
