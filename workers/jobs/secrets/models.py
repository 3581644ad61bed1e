"""A credential set as users send it and as browserd shows it (never a value). Pure pydantic."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field, SecretStr, field_validator

from workers.jobs.model.browsing import SecretName
from workers.jobs.model.spec import MAX_SECRETS, check_secret_values


class CredentialSet(BaseModel):
    """What a user sends: a name and its secrets."""

    model_config = {"extra": "forbid"}

    name: SecretName
    secrets: dict[SecretName, SecretStr] = Field(min_length=1, max_length=MAX_SECRETS)

    @field_validator("secrets")
    @classmethod
    def _secret_values(cls, value: dict[str, SecretStr]) -> dict[str, SecretStr]:
        return check_secret_values(value)  # a job's bound: shorter values could not be scrubbed apart from text


class CredentialInfo(BaseModel):
    """What browserd shows of a set: never a value."""

    name: str
    secrets: list[str] = Field(description="The names a job's model may write as <secret>name</secret>.")
    created_at: datetime
