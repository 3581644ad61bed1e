"""The operator's proxy pools (``BROWSERD_PROXY_POOLS``): named sets of upstream proxies a job may
ask for by name (``proxy_pool``) instead of giving its own ``proxy``.

Why in ``config``: the pools are operator settings, read by the API (is the name known, may this
tenant use it) and by the workers (which proxy, with which credentials). A pool's credentials live
only here, in the operator's environment: a job names the pool, never a proxy, so its record, its
events, the logs and the metrics carry the pool's name and a proxy's label, never an address with
credentials (``PoolProxy.label``).

The address rule is the one every proxy of browserd obeys (``parse_proxy_server``), also used by
a job's own ``proxy`` (``workers.jobs.model.browsing.ProxySettings``).
"""

from __future__ import annotations

import re
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, StringConstraints, field_validator, model_validator

PROXY_DEFAULT_PORTS: dict[str, int] = {"http": 80, "https": 443, "socks5": 1080}
POOL_NAME = r"^[a-z0-9][a-z0-9_-]{0,62}$"
PoolName = Annotated[str, StringConstraints(pattern=POOL_NAME)]
ProxyLabel = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$")]
MAX_POOL_PROXIES = 100
ROTATE_STATUSES = frozenset({403, 429})
"""A main-frame document answered one of these moves the job to another proxy of its pool."""


def parse_proxy_server(value: str) -> str:
    """``scheme://host[:port]`` of a proxy in its one spelling (port filled in), or ``ValueError``
    saying what is wrong; credentials are refused in the address (they would show wherever it does)."""
    parts = urlsplit(value.strip())
    if parts.scheme not in PROXY_DEFAULT_PORTS:
        raise ValueError("give the proxy as http://host:port, https://host:port or socks5://host:port")
    if parts.username is not None or parts.password is not None:
        raise ValueError("give the proxy's credentials in 'username' and 'password', not in the address")
    try:
        port = parts.port
    except ValueError:
        raise ValueError("the proxy's port must be a number from 1 to 65535") from None
    if not parts.hostname or parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError("a proxy address is scheme://host[:port], nothing more")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}:{port or PROXY_DEFAULT_PORTS[parts.scheme]}"


class ProxyAddress(BaseModel):
    """Where a proxy is and who logs in: what a job's own ``proxy`` and a pool's proxies share."""

    model_config = ConfigDict(extra="forbid")

    server: str = Field(description="http://, https:// or socks5:// host[:port] of the proxy (no credentials in it).")
    username: str | None = Field(None, min_length=1, max_length=255)

    @field_validator("server")
    @classmethod
    def _server(cls, value: str) -> str:
        return parse_proxy_server(value)

    @property
    def scheme(self) -> str:
        return urlsplit(self.server).scheme

    @property
    def host(self) -> str:
        return urlsplit(self.server).hostname or ""

    @property
    def port(self) -> int:
        return urlsplit(self.server).port or PROXY_DEFAULT_PORTS[self.scheme]


class PoolProxy(ProxyAddress):
    """One proxy of a pool. ``label`` is what metrics, logs and the job's events call it (default:
    its position in the pool, ``0``, ``1``...): never the address, never the credentials."""

    password: SecretStr | None = None
    label: ProxyLabel | None = None

    @model_validator(mode="after")
    def _pair(self) -> PoolProxy:
        if self.password is not None and self.username is None:
            raise ValueError("a proxy password needs a 'username'")
        return self


class ProxyPool(BaseModel):
    """A named pool: its proxies, how often one job may move to another (``max_rotations``), and how
    long a proxy that failed (unreachable, credentials refused) is left out (``cooldown``)."""

    model_config = ConfigDict(extra="forbid")

    proxies: list[PoolProxy] = Field(min_length=1, max_length=MAX_POOL_PROXIES)
    max_rotations: int = Field(3, ge=0, le=20, description="Moves to another proxy one job may make.")
    cooldown: float = Field(60.0, ge=0, le=86_400, description="Seconds a failed proxy is left out.")

    @model_validator(mode="after")
    def _labels(self) -> ProxyPool:
        labels = [self.label(i) for i in range(len(self.proxies))]
        if len(set(labels)) != len(labels):
            raise ValueError("each proxy's label once in a pool")
        return self

    def label(self, index: int) -> str:
        return self.proxies[index].label or str(index)


def check_pool_names(pools: dict[str, ProxyPool]) -> dict[str, ProxyPool]:
    for name in pools:
        if not re.fullmatch(POOL_NAME, name):
            raise ValueError(f"{name!r} is not a pool name (lowercase letters, digits, '_' and '-', at most 63)")
    return pools


def describe_pools(pools: dict[str, ProxyPool]) -> str:
    """The pools as a masked summary (``Settings.masked``): names, sizes, labels; no address, no credentials."""
    return "; ".join(f"{name}: {len(pool.proxies)} proxies ({', '.join(pool.label(i) for i in range(len(pool.proxies)))})"
                     for name, pool in sorted(pools.items()))
