"""What a job may ask for, at most: the operator's bound (settings) and, for a tenant, its own.

A job's ``allowed_networks`` opens private networks for its browser; without a bound anyone who
may submit could open ``0.0.0.0/0`` or the cloud metadata address for itself. So every request is
checked at submission against a ``Ceiling``: in single-tenant mode the operator's settings
(``BROWSERD_ALLOW_PRIVATE_NETWORKS`` opens all, else ``BROWSERD_ALLOWED_NETWORKS``); for a tenant
its own networks (default none), steps, timeout and domains, each inside the operator's bound. A
request past a ceiling is a ``SpecError`` naming the ceiling (422 at the API).
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass

from config import Settings
from config.networks import IPNetwork, networks
from workers.jobs.errors import SpecError
from workers.jobs.tenants.models import TenantLimits
from workers.jobs.tenants.principal import Principal

OPERATOR_NETWORKS = "BROWSERD_ALLOWED_NETWORKS"


@dataclass(frozen=True)
class Ceiling:
    """The most a job may ask for. ``networks`` None: any (the operator allows private networks);
    ``domains`` None: any; ``source`` names who set it, for the refusal's message."""

    source: str
    networks: tuple[str, ...] | None
    domains: tuple[str, ...] | None = None
    max_steps: int | None = None
    timeout: float | None = None
    proxy_pools: tuple[str, ...] | None = None  # the operator's pools it may name; None: any


def tenant_ceiling(who: Principal, settings: Settings) -> Ceiling | None:
    """A tenant's own ceiling (inside the operator's, which ``check_spec`` applies too); None for the admin."""
    if who.tenant is None:
        return None
    limits = who.limits or TenantLimits()
    return Ceiling(source=f"tenant {who.tenant!r}", networks=tuple(limits.allowed_networks),
                   domains=tuple(limits.allowed_domains) if limits.allowed_domains is not None else None,
                   max_steps=limits.max_steps, timeout=limits.timeout, proxy_pools=tuple(limits.proxy_pools))


def operator_ceiling(settings: Settings) -> Ceiling:
    """The operator's bound, which is also single-tenant mode's ceiling."""
    opened = None if settings.allow_private_networks else tuple(settings.allowed_networks)
    return Ceiling(source=OPERATOR_NETWORKS, networks=opened)


@functools.lru_cache(maxsize=1024)
def _bound(cidrs: tuple[str, ...]) -> tuple[IPNetwork, ...]:
    """A ceiling's networks parsed once, not once per job of a batch (a tenant's or the operator's)."""
    return tuple(networks(cidrs))


def _within(net: IPNetwork, ceiling: Sequence[IPNetwork]) -> bool:
    return any(net.version == bound.version and net.subnet_of(bound) for bound in ceiling)  # type: ignore[arg-type]


def check_networks(requested: Sequence[str], ceiling: Ceiling, where: str = "allowed_networks") -> None:
    """Refuse a requested network that does not lie inside the ceiling's (``0.0.0.0/0``,
    ``169.254.169.254/32`` when the operator did not open them)."""
    if ceiling.networks is None:
        return
    bound = _bound(ceiling.networks)
    for cidr in requested:
        if not _within(ipaddress.ip_network(cidr, strict=False), bound):
            opened = ", ".join(ceiling.networks) or "none"
            raise SpecError.at(where, f"{cidr} is outside the networks {ceiling.source} allows ({opened}); "
                               "ask the operator to open it")


@dataclass(frozen=True)
class JobLimits:
    """What one submission asks for, as the ceiling judges it."""

    networks: Sequence[str]
    domains: Sequence[str] = ()
    max_steps: int | None = None
    timeout: float | None = None


def _domain_inside(domain: str, allowed: Sequence[str]) -> bool:
    name = domain.lower().strip(".")
    return any(name == a or name.endswith("." + a) for a in (d.lower().strip(".") for d in allowed))


def check_limits(request: JobLimits, ceiling: Ceiling) -> None:
    """Refuse steps, a timeout or domains past the ceiling (networks: ``check_networks``); what the
    request leaves open the caller fills in from the ceiling (``check_spec``)."""
    check_networks(request.networks, ceiling)
    if ceiling.max_steps is not None and request.max_steps is not None and request.max_steps > ceiling.max_steps:
        raise SpecError.at("options.max_steps", f"{request.max_steps} steps; at most {ceiling.max_steps} "
                           f"({ceiling.source}'s max_steps)")
    if ceiling.timeout is not None and request.timeout is not None and request.timeout > ceiling.timeout:
        raise SpecError.at("timeout", f"{request.timeout:g} seconds; at most {ceiling.timeout:g} seconds "
                           f"({ceiling.source}'s timeout)")
    if ceiling.domains is not None:
        if not request.domains:
            raise SpecError.at("allowed_domains", f"{ceiling.source} may visit only {', '.join(ceiling.domains)}: "
                               "name the job's allowed_domains inside them")
        for domain in request.domains:
            if not _domain_inside(domain, ceiling.domains):
                raise SpecError.at("allowed_domains", f"{domain!r} is outside the domains {ceiling.source} allows "
                                   f"({', '.join(ceiling.domains)})")


def check_proxy_pool(pool: str | None, ceiling: Ceiling | None, settings: Settings) -> None:
    """Refuse a pool the operator has not configured, or one the tenant was not granted: the same
    message for both to a tenant (it learns nothing of the operator's other pools)."""
    if pool is None:
        return
    granted = ceiling.proxy_pools if ceiling is not None else None
    if granted is not None and pool not in granted:
        mine = ", ".join(sorted(p for p in granted if p in settings.proxy_pools)) or "none"
        raise SpecError.at("proxy_pool", f"{pool!r} is not a proxy pool {ceiling.source} may use (its pools: {mine}); "
                           "ask the operator to grant it")
    if pool not in settings.proxy_pools:
        known = ", ".join(sorted(settings.proxy_pools)) or "none"
        raise SpecError.at("proxy_pool", f"{pool!r} is not one of the operator's proxy pools (BROWSERD_PROXY_POOLS: "
                           f"{known})")
