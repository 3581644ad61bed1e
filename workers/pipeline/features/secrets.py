"""Secrets and credential sets: the values a job may type, opened just before its browser starts.

A job's own ``secrets`` arrive sealed with ``BROWSERD_SECRETS_KEY`` (or in clear, for a spec that
was never stored: ``browserd run``); a named credential set (``credentials``) lives sealed in the
shared store. Both are opened here, the set's values first and the job's own over them, into the
agent's inputs, and so are the job's TOTP seeds (``totp``); from there the agent types them and scrubs every echo (``workers.agent.secrets``).
A set that does not exist is the tenant's mistake: ``credentials_missing``.
"""

from __future__ import annotations

from workers.jobs.errors import CredentialsMissing
from workers.jobs.secrets.credentials import CredentialStore
from workers.jobs.secrets.sealing import open_secrets, open_totp
from workers.pipeline.feature import Feature
from workers.pipeline.run import JobRun


class JobSecrets(Feature):
    async def prepare(self, run: JobRun) -> None:
        spec = run.spec
        stored = None
        if spec.credentials:
            redis = self.services.redis
            if redis is None:
                raise CredentialsMissing(spec.credentials, f"the job types from credential set {spec.credentials!r}, "
                                         "but credential sets live in browserd's store, which this run does not "
                                         "reach (set BROWSERD_REDIS_URL)")
            stored = await CredentialStore(redis, self.settings, self.services.keys).values(spec.credentials)
            if stored is None:
                raise CredentialsMissing(spec.credentials)
        run.inputs.secrets = open_secrets(spec, self.settings, stored)
        run.inputs.totp = open_totp(spec, self.settings)
