"""Auth profiles: the storage state a job starts from (``profile``), and where its end state goes
when it succeeds (``save_profile``).

Profiles live sealed in the shared store; this feature opens the one the job starts from before
its browser exists and gives the agent a way to save the end state (``ProfileIO``). The agent
writes the state into the job's fresh context and reads it back out (``workers.agent.profiles``),
so profile data passes through no prompt, log or record. A profile that does not exist is the
tenant's mistake: ``profile_missing``; profiles are looked up (and saved) among the job's own
tenant's only (``JobRun.tenant``), so another tenant's profile of the same name is as absent as none.
"""

from __future__ import annotations

from workers.agent import ProfileIO
from workers.jobs.profiles.models import ProfileMissing, StorageState
from workers.jobs.profiles.store import ProfileStore
from workers.pipeline.feature import Feature
from workers.pipeline.run import JobRun


class AuthProfiles(Feature):
    async def prepare(self, run: JobRun) -> None:
        spec = run.spec
        if not spec.profile and not spec.save_profile:
            return
        store = self._store(spec.profile or spec.save_profile or "", run.tenant)
        io = ProfileIO()
        if spec.profile:
            try:
                io.start = await store.state(spec.profile)
            except ProfileMissing:
                raise ProfileMissing(spec.profile, f"the job starts from auth profile {spec.profile!r}, which does "
                                     "not exist (deleted after the job was submitted?)") from None
        if spec.save_profile:
            name = spec.save_profile

            async def save(state: StorageState) -> int:
                return (await store.put(name, state)).version

            io.save = save
        run.inputs.profiles = io

    def _store(self, name: str, tenant: str | None) -> ProfileStore:
        if self.services.redis is None:
            raise ProfileMissing(name, f"the job uses auth profile {name!r}, but auth profiles live in browserd's "
                                 "store, which this run does not reach (set BROWSERD_REDIS_URL)")
        return ProfileStore(self.services.redis, self.settings, self.services.keys, tenant=tenant)
