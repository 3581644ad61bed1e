"""Prompts of the agents, as plain text in their own modules."""

from workers.agent.prompts.extractor import extractor_system
from workers.agent.prompts.follow import follow_system
from workers.agent.prompts.followup import follow_up_task
from workers.agent.prompts.horizon import horizon_system
from workers.agent.prompts.human import human_note
from workers.agent.prompts.loops import loop_nudge
from workers.agent.prompts.memory import memory_system
from workers.agent.prompts.navigator import navigator_system
from workers.agent.prompts.planner import planner_system
from workers.agent.prompts.replay import heal_plan
from workers.agent.prompts.security import SECURITY_RULES
from workers.agent.prompts.validator import validator_system

__all__ = ["SECURITY_RULES", "extractor_system", "follow_system", "follow_up_task", "heal_plan", "horizon_system", "human_note", "loop_nudge",
           "memory_system", "navigator_system", "planner_system", "validator_system"]
