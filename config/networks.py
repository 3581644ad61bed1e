"""Which addresses count as private: one definition for everything browserd connects to on a
stranger's word (a job's browser through the egress proxy, a webhook receiver).

It lives in ``config`` because both the browser layer (``cdp.egress``) and the job kernel
(``workers.jobs.webhooks.destinations``) judge addresses, and neither may import the other.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

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
    ("fc00::/7", "unique local"),
    ("fe80::/10", "link-local"),
)
_PRIVATE = tuple((ipaddress.ip_network(net), kind) for net, kind in PRIVATE_NETWORKS)

def unmapped(address: IPAddress) -> IPAddress:
    """The IPv4 address inside an IPv4-mapped (``::ffff:a.b.c.d``) or 6to4 IPv6 address."""
    if isinstance(address, ipaddress.IPv6Address):
        return address.ipv4_mapped or address.sixtofour or address
    return address


def network_kind(address: IPAddress) -> str | None:
    """Which closed network ``address`` is in ("loopback", ...), or None for a public address."""
    address = unmapped(address)
    for net, kind in _PRIVATE:
        if address.version == net.version and address in net:
            return kind
    if address.is_multicast:
        return "multicast"
    return None if address.is_global else "reserved"


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
