"""A job's LLM budget: the tokens and the seconds of model calls one job may spend (runaway protection).

Each answer is capped by its role's ``max_tokens`` and each step by its time limit, but a job that
goes round in circles still spends steps times calls. ``options.max_tokens_total`` (else
``BROWSERD_MAX_TOKENS_TOTAL``) bounds the tokens, in and out, of every call the job makes, usable or
not; ``options.max_llm_seconds`` (else ``BROWSERD_MAX_LLM_SECONDS``) the seconds spent waiting for
model answers. A job may lower either, never raise it past the setting (refused at submission).

``workers.agent.llm.call_structured`` reads the job's allowance (``allowance_of``, set for the
run by ``use_allowance``), as it reads the step's clock: no call starts once the tokens are spent
(a call may overrun by its own usage: its size is not known before it is answered), and a call
still waiting when the seconds run out is cancelled, which closes its HTTP connection so the
server can stop generating. Either way the job ends at once with ``llm_budget``
(``LLMBudgetSpent``), naming which limit, its number and where it was set.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from workers.agent.config import LlmConfig
from workers.agent.errors import LLMBudgetSpent
from workers.jobs.model.spec import AgentOptions


@dataclass
class LlmAllowance:
    """One job's budget and what its calls spent so far; a limit of None is no limit."""

    max_tokens: int | None = None
    max_seconds: float | None = None
    tokens: int = 0
    seconds: float = 0.0
    tokens_from: str = "BROWSERD_MAX_TOKENS_TOTAL"  # where each limit was set, for the messages
    seconds_from: str = "BROWSERD_MAX_LLM_SECONDS"

    @classmethod
    def for_job(cls, options: AgentOptions, llm: LlmConfig) -> LlmAllowance:
        """The job's own limits, else the settings' (a job's is never above the setting's: ``check_spec``)."""
        tokens, seconds = options.max_tokens_total, options.max_llm_seconds
        return cls(max_tokens=llm.max_tokens_total if tokens is None else tokens,
                   max_seconds=llm.max_llm_seconds if seconds is None else seconds,
                   tokens_from="BROWSERD_MAX_TOKENS_TOTAL" if tokens is None else "options.max_tokens_total",
                   seconds_from="BROWSERD_MAX_LLM_SECONDS" if seconds is None else "options.max_llm_seconds")

    def check(self, role: str) -> None:
        """Raise ``LLMBudgetSpent`` when no call may start any more."""
        if self.max_tokens is not None and self.tokens >= self.max_tokens:
            raise LLMBudgetSpent(f"the job's LLM token budget is spent: {self.tokens} tokens used of "
                                 f"{self.max_tokens} ({self.tokens_from}); the {role} call was "
                                 "not made", role=role)
        if self.max_seconds is not None and self.seconds >= self.max_seconds:
            raise LLMBudgetSpent(self._time_message(role, "was not made"), role=role)

    def timeout(self) -> asyncio.Timeout:
        """The time the next call may take: what is left of the seconds (no limit: none)."""
        if self.max_seconds is None:
            return asyncio.timeout(None)
        return asyncio.timeout(max(0.0, self.max_seconds - self.seconds))

    def spend(self, tokens: int, seconds: float) -> None:
        self.tokens += max(0, tokens)
        self.seconds += max(0.0, seconds)

    def ran_out(self, role: str) -> LLMBudgetSpent:
        """The error of a call the time budget stopped while it waited for its answer."""
        return LLMBudgetSpent(self._time_message(role, "was stopped waiting for its answer"), role=role)

    def _time_message(self, role: str, what: str) -> str:
        return (f"the job's LLM time budget is spent: {self.seconds:.1f}s of model calls of {self.max_seconds:g}s "
                f"({self.seconds_from}); the {role} call {what}")


_ALLOWANCE: ContextVar[LlmAllowance | None] = ContextVar("browserd_llm_allowance", default=None)


@contextmanager
def use_allowance(allowance: LlmAllowance | None) -> Iterator[None]:
    """The calls made inside the block spend ``allowance`` (None: no budget)."""
    token = _ALLOWANCE.set(allowance)
    try:
        yield
    finally:
        _ALLOWANCE.reset(token)


def allowance_of() -> LlmAllowance:
    """The budget of the run under way; outside a run (a test's direct call) one with no limit,
    fresh each time."""
    return _ALLOWANCE.get() or LlmAllowance()


__all__ = ["LlmAllowance", "allowance_of", "use_allowance"]
