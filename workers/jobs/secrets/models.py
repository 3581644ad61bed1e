"""A credential set as users send it and as browserd shows it (never a value). Pure pydantic."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field, SecretStr, field_validator

from workers.jobs.model.browsing import SecretName, check_domains
from workers.jobs.model.spec import MAX_SECRET_DOMAINS, MAX_SECRETS, check_secret_values


class CredentialSet(BaseModel):
    """What a user sends: a name and its secrets."""

    model_config = {"extra": "forbid"}

    name: SecretName
    secrets: dict[SecretName, SecretStr] = Field(min_length=1, max_length=MAX_SECRETS)
    domains: list[str] = Field(
        default_factory=list, max_length=MAX_SECRET_DOMAINS,
        description="Where the set's secrets may be typed: a page (top frame or iframe) whose host is one of these "
        "domains or under it (name a registrable domain, e.g. 'shop.example', for the whole site), checked at the "
        "moment of typing; elsewhere the job fails with category secret_domain_refused. Empty: anywhere (as before).")

    @field_validator("domains")
    @classmethod
    def _domains(cls, value: list[str]) -> list[str]:
        return sorted(set(check_domains(value)))

    @field_validator("secrets")
    @classmethod
    def _secret_values(cls, value: dict[str, SecretStr]) -> dict[str, SecretStr]:
        return check_secret_values(value)  # a job's bound: shorter values could not be scrubbed apart from text


class CredentialInfo(BaseModel):
    """What browserd shows of a set: never a value."""

    name: str
    secrets: list[str] = Field(description="The names a job's model may write as <secret>name</secret>.")
    domains: list[str] = Field(default_factory=list, description="Where its secrets may be typed; empty: anywhere.")
    created_at: datetime
    tenant: str | None = Field(None, description="The tenant whose key made it; null: the operator's.")


class OpenedCredentials(BaseModel):
    """A set opened for the job about to type from it (workers only): its values and where they may go."""

    values: dict[str, str]
    domains: list[str]
