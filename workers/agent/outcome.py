"""How a task ended, as the models report it: complete, or one of the bounded reasons it is not.

The navigator says it in ``done`` (``success`` false with a ``reason``), the planner in its
``outcome`` field when it marks the task done; the executor turns a reason into a failed job of
the same category, keeping what was found so far.
"""

from __future__ import annotations

from workers.jobs.model.status import Outcome

__all__ = ["EXPLANATIONS", "REASONS", "Outcome"]

REASONS = [o.value for o in Outcome if o is not Outcome.complete]

EXPLANATIONS = {
    Outcome.incomplete: "the task was not completed",
    Outcome.login_required: "the site asks to sign in and the task gives no credentials",
    Outcome.refused: "the agent refused the task as harmful or disallowed",
    Outcome.blocked_by_site: "the site blocked the agent (captcha or bot wall)",
}
