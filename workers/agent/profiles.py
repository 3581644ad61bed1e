"""A job's auth profiles: the storage state it starts from (``profile``) and where its end state
goes when it succeeds (``save_profile``). The worker opens and stores profiles (it holds Redis and
the key); the agent only writes the state into the job's fresh context and reads it back out
(``cdp.storage``), so profile data passes through no prompt, log or record."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import cdp
from workers.agent.errors import AgentError
from workers.jobs.model.spec import JobSpec
from workers.jobs.profiles.models import StorageState

SaveProfile = Callable[[StorageState], Awaitable[int]]


class ProfileUnavailable(AgentError):
    """The job names a profile but was given no way to load or save it (e.g. run without a store)."""


@dataclass
class ProfileIO:
    """``start``: the opened state of ``spec.profile``; ``save``: stores ``spec.save_profile``'s new
    state and answers its version."""

    start: StorageState | None = None
    save: SaveProfile | None = None


@dataclass
class JobProfiles:
    """One job's use of its profiles on one lease."""

    spec: JobSpec
    io: ProfileIO
    lease: cdp.Lease
    origins: cdp.OriginLog | None = None
    saved_version: int | None = None

    @classmethod
    def of(cls, spec: JobSpec, io: ProfileIO | None, lease: cdp.Lease) -> JobProfiles:
        io = io or ProfileIO()
        if spec.profile and io.start is None:
            raise ProfileUnavailable(f"the job starts from auth profile {spec.profile!r}, but it was not loaded "
                                     "(profiles live in a browserd server's store)")
        if spec.save_profile and io.save is None:
            raise ProfileUnavailable(f"the job saves auth profile {spec.save_profile!r}, but has nowhere to save it "
                                     "(profiles live in a browserd server's store)")
        return cls(spec, io, lease)

    async def load(self) -> None:
        """Before the job's first navigation: the profile's cookies and localStorage into the context."""
        if self.io.start is not None:
            state = self.io.start.model_dump(mode="json", exclude_none=True)
            try:
                await cdp.write_state(self.lease.browser, self.lease.context_id, state)
            except (cdp.CDPError, cdp.CDPTimeout, cdp.NavigationError, TimeoutError) as exc:  # a cookie Chrome refused
                raise ProfileUnavailable(f"auth profile {self.spec.profile!r} could not be loaded into the browser: "
                                         f"{exc}") from exc
        if self.spec.save_profile:
            self.origins = cdp.OriginLog(self.lease.browser, self.lease.context_id)
            self.origins.origins.update(o.origin for o in (self.io.start.origins if self.io.start else []))

    async def save(self) -> None:
        """After a successful job: the context's state, over the profile (last writer wins)."""
        if self.io.save is None or self.origins is None:
            return
        self.origins.close()
        raw = await cdp.read_state(self.lease.browser, self.lease.context_id, self.origins.origins)
        self.saved_version = await self.io.save(StorageState.model_validate(raw))

    def close(self) -> None:
        if self.origins is not None:
            self.origins.close()
