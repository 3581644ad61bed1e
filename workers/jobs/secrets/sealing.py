"""Job secrets at rest: sealed with Fernet under ``BROWSERD_SECRETS_KEY`` before anything is stored.

A job's ``secrets`` arrive in the submission in clear and leave it sealed: ``seal_spec`` encrypts
them into ``sealed_secrets`` (one Fernet token of the whole mapping), and the record keeps only
their names (pydantic writes a ``SecretStr`` as asterisks). A stored credential set
(``credentials``) and an auth profile (``profiles.store``) are sealed the same way. Only a process
holding the key, the worker about to run the job, opens them (``open_secrets``), and hands the
values to the agent, which types them in the browser and keeps them out of every prompt, record,
event and log.

Fernet (AES-128-CBC + HMAC-SHA256, from ``cryptography``) rather than anything of our own: a
tampered or foreign token fails to open instead of yielding garbage.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from cryptography.fernet import Fernet, InvalidToken
from pydantic import SecretStr

from config import Settings
from workers.jobs.errors import JobsError, SpecError
from workers.jobs.model.browsing import ProxySettings
from workers.jobs.model.spec import MASKED, JobSpec

NO_KEY = "this server has no BROWSERD_SECRETS_KEY, so it cannot keep secrets; ask its operator to set one"


class HoldsKey(Protocol):
    """What opens a sealed value: the settings, or the agent's narrow config, both carrying the key."""

    @property
    def secrets_key(self) -> SecretStr | None: ...


class SecretsUnavailable(JobsError):
    """Sealed secrets cannot be opened here: no key, another key, or a damaged token."""


def fernet(settings: HoldsKey) -> Fernet | None:
    key = settings.secrets_key
    return Fernet(key.get_secret_value().encode()) if key else None


def seal(values: dict[str, str], settings: Settings) -> str:
    return seal_json(values, settings)


def unseal(token: str, settings: HoldsKey) -> dict[str, str]:
    return unseal_json(token, settings, "the job's secrets")


def seal_json(value: Any, settings: Settings) -> str:
    """Any JSON value as one Fernet token (secrets, a proxy password, an auth profile's storage state)."""
    box = fernet(settings)
    if box is None:
        raise SecretsUnavailable(NO_KEY)
    return box.encrypt(json.dumps(value, separators=(",", ":")).encode()).decode()


def unseal_json(token: str, settings: HoldsKey, what: str) -> Any:
    box = fernet(settings)
    if box is None:
        raise SecretsUnavailable(NO_KEY)
    try:
        return json.loads(box.decrypt(token.encode()))
    except InvalidToken:
        raise SecretsUnavailable(f"{what} do not open with this BROWSERD_SECRETS_KEY (another key, "
                                 "or a damaged record)") from None


def seal_spec(spec: JobSpec, settings: Settings) -> JobSpec:
    """Seal a submitted spec's secrets; a ``sealed_secrets`` in a submission is refused."""
    if spec.sealed_secrets is not None:
        raise SpecError.at("sealed_secrets", "set by browserd; give the values in 'secrets'")
    if spec.sealed_totp is not None:
        raise SpecError.at("sealed_totp", "set by browserd; give the seeds in 'totp'")
    if spec.secrets or spec.credentials or spec.totp:
        if settings.secrets_key is None:
            field = "totp" if spec.totp else "credentials" if spec.credentials and not spec.secrets else "secrets"
            raise SpecError.at(field, NO_KEY)
    if spec.secrets:
        spec.sealed_secrets = seal({k: v.get_secret_value() for k, v in spec.secrets.items()}, settings)
    if masked := sorted(k for k, v in spec.totp.items() if v.get_secret_value() == MASKED):
        raise SpecError.at(f"totp.{masked[0]}", "give the seed itself, not its mask")
    if spec.totp:
        spec.sealed_totp = seal({k: v.get_secret_value() for k, v in spec.totp.items()}, settings)
    if spec.proxy is not None:
        _seal_proxy(spec.proxy, settings)
    return spec


def _seal_proxy(proxy: ProxySettings, settings: Settings) -> None:
    if proxy.sealed_password is not None:
        raise SpecError.at("proxy.sealed_password", "set by browserd; give the value in 'password'")
    if proxy.password is None:
        return
    if settings.secrets_key is None:
        raise SpecError.at("proxy.password", NO_KEY)
    proxy.sealed_password = seal({"password": proxy.password.get_secret_value()}, settings)


def proxy_password(proxy: ProxySettings, settings: HoldsKey) -> str | None:
    """The proxy's password, opened (workers only); a spec never stored carries it in clear."""
    if proxy.sealed_password is not None:
        return unseal(proxy.sealed_password, settings)["password"]
    return proxy.password.get_secret_value() if proxy.password is not None else None


def open_totp(spec: JobSpec, settings: HoldsKey) -> dict[str, str]:
    """The job's TOTP seeds (base32), opened; a spec that was never stored carries them in clear."""
    if spec.sealed_totp is not None:
        return unseal_json(spec.sealed_totp, settings, "the job's TOTP seeds")
    return {k: v.get_secret_value() for k, v in spec.totp.items()}


def open_secrets(spec: JobSpec, settings: Settings, stored: dict[str, str] | None = None) -> dict[str, str]:
    """The values a job may type: its credential set's (``stored``), then its own over them.

    A spec that was never stored (``browserd run``) carries its values in clear."""
    own = (unseal(spec.sealed_secrets, settings) if spec.sealed_secrets is not None
           else {k: v.get_secret_value() for k, v in spec.secrets.items()})
    return {**(stored or {}), **own}
