"""The agent: Nanobrowser's planner/navigator executor, server-side, on langchain.

``run_job(spec, lease, ...)`` runs one job (a task with the LLM agents, or a script of actions
with no LLM) and returns its ``JobResult``; ``validate_script`` checks a script up front.
"""

from workers.agent.actions import ACTIONS, validate_script
from workers.agent.errors import (
    ActionError,
    AgentError,
    Cancelled,
    ElementGone,
    InvalidOutput,
    JobTimeout,
    LLMAuthError,
    LLMBadRequestError,
    LLMError,
    LLMForbiddenError,
    LLMOutputError,
    MaxFailuresReached,
    MaxStepsReached,
    StepTimeout,
    URLBlocked,
)
from workers.agent.firewall import UrlPolicy
from workers.agent.job import run_job
from workers.agent.llm import Llms, RetryPolicy, chat_openai

__all__ = [
    "ACTIONS", "ActionError", "AgentError", "Cancelled", "ElementGone", "InvalidOutput", "JobTimeout",
    "LLMAuthError", "LLMBadRequestError", "LLMError", "LLMForbiddenError", "LLMOutputError", "Llms",
    "MaxFailuresReached", "MaxStepsReached", "RetryPolicy", "StepTimeout", "URLBlocked", "UrlPolicy",
    "chat_openai", "run_job", "validate_script",
]
