"""Per-job browser settings: what a job's browser context looks like and how it reaches the web.

These are the ``JobSpec`` fields a crawl needs around the agent (``proxy``, ``extra_http_headers``,
``user_agent``, ``locale``, ``timezone``, ``viewport``, ``geolocation``, ``block_resources``),
validated here so the API refuses bad values with the field named (422), long before a worker.

A ``proxy`` is the user's own upstream proxy. It never replaces browserd's egress proxy: the
context still goes through its gate (``cdp.egress``), which judges every destination and then
connects *through* the upstream proxy instead of directly. Its password is a secret: sealed into
``sealed_password`` at submission (``secrets.sealing.seal_spec``), shown masked in the record.
"""

from __future__ import annotations

import re
import zoneinfo
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, StringConstraints, field_validator, model_validator

from config.hosts import normalise_entries
from config.proxy_pools import ProxyAddress

ProxyScheme = Literal["http", "https", "socks5"]
ResourceKind = Literal["images", "media", "fonts"]
MAX_HEADERS = 50
MAX_HEADER_VALUE = 8192

_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$")  # RFC 9110 field-name
_LOCALE = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8}){0,3}$")
# Headers the browser or the proxies own: setting them per job would break framing or the proxy chain
# (and Chrome fails every request given a Referer this way, net::ERR_BLOCKED_BY_CLIENT).
FORBIDDEN_HEADERS = frozenset({"host", "content-length", "connection", "keep-alive", "transfer-encoding", "te",
                               "trailer", "upgrade", "proxy-authorization", "proxy-connection", "expect", "referer"})
SecretName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z][A-Za-z0-9_]{0,63}$")]
UserAgent = Annotated[str, StringConstraints(min_length=1, max_length=512, pattern=r"^[^\x00-\x1f\x7f]+$")]


class ProxySettings(ProxyAddress):
    """A job's upstream proxy (Playwright's shape): ``{"server": "socks5://host:1080", "username", "password"}``."""

    password: SecretStr | None = Field(None, description="Stored encrypted (BROWSERD_SECRETS_KEY); shown masked.")
    sealed_password: str | None = Field(None, description="Set by browserd: the password, encrypted.")
    password_secret: SecretName | None = Field(
        None, description="Name of one of the job's secrets (its own, or its credential set's) holding the password: "
        "how a schedule, which keeps its template as written, uses a proxy that needs one.")

    @field_validator("password")
    @classmethod
    def _password(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not 1 <= len(value.get_secret_value()) <= 255:
            raise ValueError("1 to 255 characters")
        return value

    @model_validator(mode="after")
    def _pair(self) -> ProxySettings:
        given = self.password is not None or self.sealed_password is not None
        if (given or self.password_secret is not None) and self.username is None:
            raise ValueError("a proxy password needs a 'username'")
        if given and self.password_secret is not None:
            raise ValueError("give the proxy's password in 'password' or name a secret in 'password_secret', not both")
        return self


# The one type of a requested tab size, for jobs and interactive sessions alike (what a capture
# measures is dom.snapshot.LayoutViewport). Its bounds are the ones jobs always had; sessions had a
# narrower range (320-3840 x 240-2160) until they shared this type, so nothing either accepted is
# refused now.
class Viewport(BaseModel):
    """The size of a job's or a session's tabs, in CSS pixels: from a small pop-up (200) to 8K UHD
    (7680 x 4320)."""

    model_config = ConfigDict(extra="forbid")

    width: int = Field(ge=200, le=7680)
    height: int = Field(ge=200, le=4320)


class Geolocation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    latitude: float = Field(ge=-90, le=90)
    longitude: float = Field(ge=-180, le=180)
    accuracy: float = Field(10.0, ge=0, le=100_000, description="Metres.")


def check_headers(value: dict[str, str]) -> dict[str, str]:
    if len(value) > MAX_HEADERS:
        raise ValueError(f"at most {MAX_HEADERS} headers")
    for name, val in value.items():
        if not _TOKEN.match(name):
            raise ValueError(f"{name!r} is not a header name")
        if name.lower() in FORBIDDEN_HEADERS:
            raise ValueError(f"{name!r} is set by the browser or the proxy, not per job")
        if len(val) > MAX_HEADER_VALUE or any(c in val for c in "\r\n\x00"):
            raise ValueError(f"header {name!r}: at most {MAX_HEADER_VALUE} characters, no line breaks")
    return value


def check_locale(value: str | None) -> str | None:
    if value is not None and not _LOCALE.match(value):
        raise ValueError(f"{value!r} is not a locale (give a BCP 47 tag such as 'de-DE' or 'fr')")
    return value


def check_timezone(value: str | None) -> str | None:
    if value is None:
        return None
    try:
        zoneinfo.ZoneInfo(value)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"{value!r} is not an IANA time zone (e.g. 'Europe/Berlin')") from None
    return value


def check_domains(value: list[str]) -> list[str]:
    """Entries of an allow- or deny-list (a job's, a session's) in their one spelling (``config.hosts``):
    ``EVIL.example.`` is kept as ``evil.example``, ``bücher.example`` as its punycode, ``2130706433``
    as 127.0.0.1; anything that is not a name or an address is refused naming it."""
    return normalise_entries(value)


def check_block(value: list[str]) -> list[str]:
    return sorted(set(value))
