"""Which addresses count as private: one definition for everything browserd connects to on a
stranger's word (a job's browser through the egress proxy, a webhook receiver).

It lives in ``config`` because both the browser layer (``cdp.egress``) and the job kernel
(``workers.jobs.webhooks.destinations``) judge addresses, and neither may import the other.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from typing import NamedTuple

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Closed unless opened (BROWSERD_ALLOW_PRIVATE_NETWORKS, BROWSERD_ALLOWED_NETWORKS, a job's
# allowed_networks). Anything else Python does not call global is refused as "reserved".
PRIVATE_NETWORKS: tuple[tuple[str, str], ...] = (
    ("0.0.0.0/8", "unspecified"),
    ("127.0.0.0/8", "loopback"),
    ("10.0.0.0/8", "private (RFC 1918)"),
    ("172.16.0.0/12", "private (RFC 1918)"),
    ("192.168.0.0/16", "private (RFC 1918)"),
    ("169.254.0.0/16", "link-local (cloud metadata)"),
    ("100.64.0.0/10", "carrier-grade NAT"),
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("::/96", "IPv4-compatible (deprecated)"),
    ("64:ff9b:1::/48", "local-use NAT64"),
    ("2001::/32", "Teredo"),
    ("fc00::/7", "unique local"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local (deprecated)"),
)
_PRIVATE = tuple((ipaddress.ip_network(net), kind) for net, kind in PRIVATE_NETWORKS)

# IPv6 prefixes that carry an IPv4 address and reach it: an address in them *is* its IPv4 address,
# judged (and opened) as that. IPv4-mapped (``::ffff:0:0/96``) is Python's ``ipv4_mapped``, 6to4
# (``2002::/16``) its ``sixtofour``.
_TRANSPARENT = (ipaddress.ip_network("::ffff:0:0:0/96"),  # SIIT, IPv4-translated (RFC 6145)
                ipaddress.ip_network("64:ff9b::/96"))  # NAT64, well-known prefix (RFC 6052)
# IPv6 prefixes that carry an IPv4 address but are closed themselves (in PRIVATE_NETWORKS): the
# embedded address only names the kind when it is closed too (``::a9fe:a9fe`` is link-local).
_OPAQUE = (ipaddress.ip_network("::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_UNWRAPPED_NEVER = (ipaddress.ip_address("::"), ipaddress.ip_address("::1"))


def _low32(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)


class _Carried(NamedTuple):
    """The IPv4 address an IPv6 address carries; ``transparent``: the IPv6 address simply is it
    (rather than being closed in its own right)."""

    address: ipaddress.IPv4Address
    transparent: bool


def _embedded(address: IPAddress) -> _Carried | None:
    """What an IPv6 address carries; None when it carries no IPv4 address."""
    if not isinstance(address, ipaddress.IPv6Address) or address in _UNWRAPPED_NEVER:
        return None
    if address.ipv4_mapped is not None:
        return _Carried(address.ipv4_mapped, True)
    if address.sixtofour is not None:
        return _Carried(address.sixtofour, True)
    if any(address in net for net in _TRANSPARENT):
        return _Carried(_low32(address), True)
    if address.teredo is not None:
        return _Carried(address.teredo[1], False)  # the client behind the relay
    if any(address in net for net in _OPAQUE):
        return _Carried(_low32(address), False)
    return None


def unmapped(address: IPAddress) -> IPAddress:
    """The IPv4 address an IPv6 address carries (IPv4-mapped ``::ffff:a.b.c.d``, SIIT
    ``::ffff:0:a.b.c.d``, NAT64 ``64:ff9b::/96`` and ``64:ff9b:1::/48``, IPv4-compatible
    ``::a.b.c.d``, 6to4 ``2002::/16``, Teredo's client), else ``address`` itself. A gateway on the
    path may turn such an address into the IPv4 one, so it is judged as (at least) that."""
    inner = _embedded(address)
    return address if inner is None else inner.address


def _own_kind(address: IPAddress) -> str | None:
    for net, kind in _PRIVATE:
        if address.version == net.version and address in net:
            return kind
    if address.is_multicast:
        return "multicast"
    return None if address.is_global else "reserved"


def network_kind(address: IPAddress) -> str | None:
    """Which closed network ``address`` is in ("loopback", ...), or None for a public address.

    An IPv6 address carrying an IPv4 one is judged as that IPv4 address; the prefixes that are
    closed in their own right (IPv4-compatible ``::/96``, local-use NAT64, Teredo) stay closed when
    the IPv4 address inside is public."""
    inner = _embedded(address)
    if inner is None:
        return _own_kind(address)
    kind = _own_kind(inner.address)
    if kind is not None or inner.transparent:
        return kind
    return _own_kind(address)


def is_opened(address: IPAddress, opened: Iterable[IPNetwork]) -> bool:
    """Whether one of the ``opened`` networks holds ``address`` (or the IPv4 address it simply is)."""
    inner = _embedded(address)
    candidates = [address] if inner is None or not inner.transparent else [address, inner.address]
    return any(a.version == net.version and a in net for net in opened for a in candidates)


def closed_kind(address: IPAddress, opened: Iterable[IPNetwork] = ()) -> str | None:
    """The closed network ``address`` is in, unless one of the ``opened`` networks holds it; None:
    it may be reached. The one judge of a destination's address (egress proxy, webhook receivers)."""
    kind = network_kind(address)
    if kind is None or is_opened(address, opened):
        return None
    return kind


def networks(cidrs: Iterable[str]) -> list[IPNetwork]:
    """Validated CIDR strings (``parse_networks``) as networks."""
    return [ipaddress.ip_network(c, strict=False) for c in cidrs]


def parse_networks(values: Iterable[str]) -> list[str]:
    """CIDRs (``10.1.0.0/16``; a bare address is its /32 or /128), normalised; ``ValueError`` names
    a bad one. Used for BROWSERD_ALLOWED_NETWORKS, BROWSERD_WEBHOOK_ALLOWED_NETWORKS and a job's
    ``allowed_networks``."""
    out = []
    for value in values:
        try:
            out.append(str(ipaddress.ip_network(value.strip(), strict=False)))
        except ValueError:
            raise ValueError(f"{value!r} is not an IP network (give a CIDR such as '10.1.0.0/16' or "
                             "'127.0.0.1/32')") from None
    return out
