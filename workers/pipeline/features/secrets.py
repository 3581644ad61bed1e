"""Secrets and credential sets: the values a job may type, opened just before its browser starts.

A job's own ``secrets`` arrive sealed with ``BROWSERD_SECRETS_KEY`` (or in clear, for a spec that
was never stored: ``browserd run``); a named credential set (``credentials``) lives sealed in the
shared store. Both are opened here, the set's values first and the job's own over them, into the
agent's inputs, and so are the job's TOTP seeds (``totp``); from there the agent types them and scrubs every echo (``workers.agent.secrets``).
A set that does not exist is the tenant's mistake: ``credentials_missing``; a set is looked up
among the sets of the job's own tenant only (``JobRun.tenant``), so another tenant's set of the
same name is as absent as none.

Where each secret may be typed goes with it (``secret_domains``): a set's secrets are bound to the
set's ``domains``, the job's own secrets and second factors to its ``secret_domains``; the agent
checks them at the moment of typing (``workers.agent.secrets``).
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
            stored = await CredentialStore(redis, self.settings, self.services.keys,
                                           tenant=run.tenant).opened(spec.credentials)
            if stored is None:
                raise CredentialsMissing(spec.credentials)
        run.inputs.secrets = open_secrets(spec, self.settings, stored.values if stored else None)
        run.inputs.totp = open_totp(spec, self.settings)
        own = set(spec.secrets) | set(run.inputs.totp)  # the stored spec keeps its secrets' names (masked)
        bound = {name: stored.domains for name in stored.values} if stored and stored.domains else {}
        if spec.secret_domains:  # the job's own over the set's, as their values are
            bound.update({name: spec.secret_domains for name in own})
        else:
            bound = {name: domains for name, domains in bound.items() if name not in own}
        run.inputs.secret_domains = bound
