"""Asking a human for help: the ``request_human`` action marks the request; the job waits for the
human between steps, where a pause waits (``PauseGate.hold``), never inside a step (a step has its
own time limit, a human does not keep to it).

Waiting is bounded by the job's ``human_timeout``, spent across all of its requests, and counted
outside the job's own time limit: before the wait the job's limits move out by what is left of the
allowance, after it they move back by what was not used (``HumanLink.extend``), so the job keeps
its own time for its own steps. A job nobody hands back in time fails ``human_timeout``.

Values pushed to the job (``POST /v1/jobs/{id}/input``: a code sent by SMS or e-mail) join the job's
secrets under their names: the model is told the placeholders, never the values, and the scrubber
keeps every echo of them out of prompts, records and logs (``workers.agent.secrets``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Protocol

from workers.agent.cancel import CancelToken
from workers.agent.errors import HumanTimeout
from workers.agent.events import Actor, Events, ExecutionState
from workers.agent.secrets import Secrets
from workers.jobs.secrets.scrubber import placeholder

POLL_SECONDS = 0.25  # how often a waiting job looks whether it was handed back (one Redis read)


class HumanLink(Protocol):
    """What the pipeline gives a job that may ask a human (``options.allow_human``)."""

    allowance: float  # seconds the job may wait for humans, all requests together

    async def ask(self, reason: str, seconds: float) -> None:
        """Record the job as waiting for a human (at most ``seconds``), tell the operators."""

    async def waiting(self) -> bool:
        """Whether the job still waits (nobody handed it back yet)."""

    async def inputs(self) -> Mapping[str, str]:
        """The values pushed to the job so far, opened: name -> value."""

    def extend(self, seconds: float) -> None:
        """Move the job's time limits by ``seconds`` (negative: back)."""


class HumanGate:
    """A job's requests for help; ``link`` None: the job may not ask (the action says so)."""

    def __init__(self, link: HumanLink | None = None, secrets: Secrets | None = None,
                 where: Callable[[], Awaitable[str]] | None = None) -> None:
        self.link = link
        self.secrets = secrets
        self.where = where  # the URL of the job's tab now, told to the agent after a hand-back
        self.requested: str | None = None
        self.spent = 0.0
        self.notes: list[str] = []  # for the agent's next state message, with the page's text (the URL is the page's)
        self.notices: list[str] = []  # browserd's own words (the inputs' names, given by the job's owner)
        self._inputs: dict[str, str] = {}

    @property
    def allowed(self) -> bool:
        return self.link is not None

    def request(self, reason: str) -> None:
        self.requested = reason

    def take_notes(self) -> list[str]:
        notes, self.notes = self.notes, []
        return notes

    def take_notices(self) -> list[str]:
        notices, self.notices = self.notices, []
        return notices

    async def hold(self, cancel: CancelToken, events: Events) -> None:
        """Between steps: wait for the human the last step asked for (if any); then take what was pushed."""
        link = self.link
        if link is None:
            return
        reason, self.requested = self.requested, None
        if reason is not None:
            await self._wait(link, reason, cancel, events)
        await self._take_inputs(link)

    async def _wait(self, link: HumanLink, reason: str, cancel: CancelToken, events: Events) -> None:
        left = link.allowance - self.spent
        if left <= 0:
            raise HumanTimeout(reason, link.allowance)
        loop = asyncio.get_running_loop()
        started = loop.time()
        link.extend(left)  # the job's own limit must not end the wait: it is counted outside it
        try:
            await link.ask(reason, left)
            await events.emit(Actor.system, ExecutionState.TASK_PAUSE, f"waiting for a human: {reason}")
            while await link.waiting():
                cancel.check("while waiting for a human")
                if loop.time() - started >= left:
                    raise HumanTimeout(reason, link.allowance)
                await asyncio.sleep(POLL_SECONDS)
            cancel.check("while waiting for a human")
        finally:
            waited = loop.time() - started
            self.spent += waited
            link.extend(waited - left)
        await events.emit(Actor.system, ExecutionState.TASK_RESUME, f"handed back by a human after {waited:.1f}s")
        url = await self.where() if self.where is not None else ""
        self.notes.append(f"A human handed the job back after {waited:.0f}s (you asked: {reason})."
                          + (f" The tab now shows {url}." if url else "")
                          + " Look at the page again before you act: it may have changed.")

    async def _take_inputs(self, link: HumanLink) -> None:
        pushed = await link.inputs()
        new = {name: value for name, value in pushed.items() if self._inputs.get(name) != value}
        if not new or self.secrets is None:
            return
        self._inputs.update(new)
        for name, value in new.items():
            self.secrets.add(name, value)
        names = ", ".join(placeholder(name) for name in sorted(new))
        self.notices.append(f"A human sent the job these values: {names}. To type one, write its placeholder "
                          "exactly as shown as (part of) the text of input_text; the browser receives the value, "
                          "you never see it.")
