"""The agent: Nanobrowser's planner/navigator executor, server-side, on langchain.

``run_job(spec, lease, ...)`` runs one job (a task with the LLM agents, or a script of actions
with no LLM) and returns its ``JobResult``, reporting steps (``on_step``) and execution events
(``on_event``) as they happen. Scripts are checked up front by the job kernel's
``workers.jobs.model.actions.validate_script``, against the same parameter schemas the actions here run.
``SessionBrowser`` runs the same actions one command at a time for an interactive session.
Given an ``artifacts`` folder, it keeps there the screenshots, final page, logs and downloads the
spec's ``artifacts`` option asks for (``workers.agent.artifacts``).
"""

from workers.agent.actions import ACTIONS
from workers.agent.errors import (
    ActionError,
    AgentError,
    Cancelled,
    ElementGone,
    ElementNotFound,
    InvalidOutput,
    JobTimeout,
    LLMAuthError,
    LLMBadRequestError,
    LLMError,
    LLMForbiddenError,
    LLMOutputError,
    LLMProviderError,
    MaxFailuresReached,
    MaxStepsReached,
    ProxyFailed,
    StepTimeout,
    URLBlocked,
)
from workers.agent.events import Actor, AgentEvent, ExecutionState, OnEvent
from workers.agent.firewall import UrlPolicy
from workers.agent.job import Around, JobSession, run_job
from workers.agent.llm import Llms, RetryPolicy
from workers.agent.pacing import NavigationGate, OpenGate
from workers.agent.profiles import ProfileIO
from workers.agent.provider import provider_class
from workers.agent.session import SessionBrowser

__all__ = [
    "ACTIONS", "ActionError", "Actor", "AgentEvent", "ExecutionState", "OnEvent", "AgentError", "Cancelled", "ElementGone",
    "ElementNotFound", "InvalidOutput", "Around", "JobSession", "JobTimeout",
    "LLMAuthError", "LLMBadRequestError", "LLMError", "LLMForbiddenError", "LLMOutputError", "LLMProviderError", "Llms",
    "MaxFailuresReached", "MaxStepsReached", "NavigationGate", "OpenGate", "ProfileIO", "ProxyFailed", "RetryPolicy",
    "SessionBrowser", "StepTimeout", "URLBlocked", "UrlPolicy", "provider_class", "run_job",
]
