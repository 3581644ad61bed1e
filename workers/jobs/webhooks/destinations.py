"""Where browserd itself may send data on a tenant's word: webhook receivers.

A webhook URL comes from whoever submitted the job, and the worker that POSTs it sits next to
Redis, the API, the browsers' debuggers and the cloud's metadata service. So a receiver must be a
public address: loopback, private (RFC 1918, IPv6 ULA), link-local (169.254.169.254, the metadata
service, among them), CGNAT, multicast and reserved ranges are refused unless an operator opens a
network with ``BROWSERD_WEBHOOK_ALLOWED_NETWORKS``. What counts as closed is ``config.networks``,
the same definition the job browsers' egress proxy uses.

This module judges addresses; ``workers.webhooks`` resolves the name at delivery time, judges
every address it resolves to, and connects to the one it judged (no second lookup a DNS rebinding
could answer differently). At submission only what needs no DNS is judged: an IP literal, or a
``localhost`` name.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import urlsplit

from config.hosts import canonical_name, parse_address
from config.networks import IPAddress, IPNetwork, closed_kind, networks

__all__ = ["address_refusal", "networks", "url_refusal"]


def address_refusal(address: IPAddress, allowed: Iterable[IPNetwork] = ()) -> str | None:
    """Why a receiver at ``address`` is refused (its kind of network), or None when it may be used.
    An IPv6 address carrying an IPv4 one (``::ffff:127.0.0.1``, NAT64 ``64:ff9b::a9fe:a9fe``) is
    judged as that IPv4 address (``config.networks``)."""
    kind = closed_kind(address, allowed)
    return f"a {kind} address" if kind else None


def url_refusal(url: str, allowed: Iterable[IPNetwork] = ()) -> str | None:
    """What can be judged of a receiver URL without DNS: an IP literal (in any spelling:
    ``2130706433`` is 127.0.0.1) or a localhost name."""
    host = urlsplit(url).hostname or ""
    address = parse_address(host)
    name = canonical_name(host)
    if address is None and (name == "localhost" or name.endswith(".localhost")):
        address = parse_address("127.0.0.1")
    if address is None:
        return None  # a name: judged on the addresses it resolves to, when delivering
    reason = address_refusal(address, allowed)
    if reason:
        return (f"{host} is {reason}; webhooks go only to public addresses unless "
                "BROWSERD_WEBHOOK_ALLOWED_NETWORKS opens the network")
    return None
