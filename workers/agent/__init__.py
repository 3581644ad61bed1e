"""The agent: Nanobrowser's planner/navigator executor, server-side, on langchain.

``JobSession(JobInputs(...))`` runs one job (a task with the LLM agents, a script of actions with
no LLM, or a recipe replayed) in a lease and returns its ``JobResult``, reporting steps
(``on_step``) and execution events (``on_event``) as they happen; the pipeline
(``workers.pipeline``) is what builds it, for every job wherever it runs. ``workers.agent.failures``
is the one table of which error is which failure category. Scripts are checked up front by the job kernel's
``workers.jobs.actions.validate_script``, against the same parameter schemas the actions here run.
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
from workers.agent.job import JobInputs, JobSession, replay_spec
from workers.agent.proxies import BlockReason, ProxyRotation
from workers.agent.llm import Llms, RetryPolicy
from workers.agent.pacing import NavigationGate, OpenGate
from workers.agent.profiles import ProfileIO
from workers.agent.provider import provider_class
from workers.agent.session import SessionBrowser

__all__ = [
    "ACTIONS", "ActionError", "Actor", "AgentEvent", "ExecutionState", "OnEvent", "AgentError", "Cancelled", "ElementGone",
    "ElementNotFound", "InvalidOutput", "JobInputs", "BlockReason", "ProxyRotation", "JobSession", "JobTimeout",
    "LLMAuthError", "LLMBadRequestError", "LLMError", "LLMForbiddenError", "LLMOutputError", "LLMProviderError", "Llms",
    "MaxFailuresReached", "MaxStepsReached", "NavigationGate", "OpenGate", "ProfileIO", "ProxyFailed", "RetryPolicy",
    "SessionBrowser", "StepTimeout", "URLBlocked", "UrlPolicy", "provider_class", "replay_spec",
]
