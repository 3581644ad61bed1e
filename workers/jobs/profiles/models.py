"""An auth profile as users bring and take it (Playwright's ``storageState``), what browserd shows of
it, its limits, and its errors. Pure pydantic: storage and sealing are ``store``'s.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator

from workers.jobs.errors import JobsError

MAX_COOKIES = 3000
MAX_ORIGINS = 200
MAX_ITEMS_PER_ORIGIN = 2000
MAX_STATE_BYTES = 2 * 1024 * 1024
NO_PROFILE_KEY = ("this server has no BROWSERD_SECRETS_KEY, so it cannot keep auth profiles (they are stored "
                  "encrypted); ask its operator to set one")


class ProfileMissing(JobsError):
    """No profile of that name (``detail`` says more where a job named it)."""

    def __init__(self, name: str, detail: str | None = None) -> None:
        self.name = name
        super().__init__(detail or f"no auth profile named {name!r}")


class ProfileConflict(JobsError):
    """``if_version`` was given and the profile has moved on."""

    def __init__(self, name: str, expected: int) -> None:
        self.name, self.expected = name, expected
        super().__init__(f"auth profile {name!r} is no longer at version {expected} (another write came first)")


class Cookie(BaseModel):
    """A cookie as Playwright writes it; ``expires`` -1 is a session cookie."""

    model_config = ConfigDict(extra="ignore")

    name: str = Field(max_length=4096)
    value: str = Field(max_length=16384)
    domain: str = Field(min_length=1, max_length=255)
    path: str = Field("/", max_length=1024)
    expires: float = -1
    httpOnly: bool = False  # noqa: N815  (Playwright's names)
    secure: bool = False
    sameSite: Literal["Strict", "Lax", "None"] | None = None  # noqa: N815


class StorageItem(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str
    value: str


class OriginState(BaseModel):
    model_config = ConfigDict(extra="ignore")

    origin: str
    localStorage: list[StorageItem] = Field(default_factory=list, max_length=MAX_ITEMS_PER_ORIGIN)  # noqa: N815

    @field_validator("origin")
    @classmethod
    def _origin(cls, value: str) -> str:
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.path not in ("", "/") \
                or parts.query or parts.fragment or parts.username:
            raise ValueError(f"{value!r} is not an origin (scheme://host[:port])")
        return value.rstrip("/")


class StorageState(BaseModel):
    """Playwright's ``storageState``: ``{"cookies": [...], "origins": [{"origin", "localStorage"}]}``."""

    model_config = ConfigDict(extra="ignore")

    cookies: list[Cookie] = Field(default_factory=list, max_length=MAX_COOKIES)
    origins: list[OriginState] = Field(default_factory=list, max_length=MAX_ORIGINS)

    @field_validator("origins")
    @classmethod
    def _unique(cls, value: list[OriginState]) -> list[OriginState]:
        seen = [o.origin for o in value]
        if len(set(seen)) != len(seen):
            raise ValueError("each origin at most once")
        return value


class ProfileInfo(BaseModel):
    """What browserd shows of a profile without opening it."""

    name: str
    version: int
    cookies: int
    origins: int
    updated_at: datetime
    tenant: str | None = Field(None, description="The tenant whose key made it; null: the operator's.")


def check_size(state: StorageState) -> str:
    """The state as compact JSON, refused above ``MAX_STATE_BYTES``."""
    raw = state.model_dump_json(exclude_none=True)
    if len(raw) > MAX_STATE_BYTES:
        raise ValueError(f"the storage state is {len(raw)} bytes; at most {MAX_STATE_BYTES}")
    return raw
