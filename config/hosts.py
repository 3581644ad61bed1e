"""How a host is spelled, and whether a domain list names it: one reading for every list browserd
matches hosts against (a job's ``allowed_domains``/``denied_domains``, BROWSERD_ALLOWED_DOMAINS /
BROWSERD_DENIED_DOMAINS, the politeness limits' sites), wherever the host comes from (a URL the
model wrote, a request Chrome made, a CONNECT line a page's socket sent).

Why normalise: one host has many spellings, and a list that compares strings is bypassed by any
spelling it did not list. ``EVIL.example.`` (a trailing dot makes a name absolute, it resolves the
same), ``bücher.example`` and ``xn--bcher-kva.example`` (IDNA: what goes to DNS is the punycode),
``evil%2Eexample`` (Chrome decodes a host's percent escapes) are one name; ``2130706433``,
``0x7f.1``, ``0177.0.0.1`` and ``[::ffff:127.0.0.1]`` are one address (the WHATWG URL standard's
IPv4 parser, which Chrome and glibc's ``inet_aton`` follow, and IPv4-mapped IPv6). So a host and
every list entry are brought to one canonical form before they are compared: a name to lowercase
ASCII (punycode, UTS 46) without trailing dots, an IP literal to the address it means, and an IPv6
address carrying an IPv4 one (``config.networks.unmapped``) to that IPv4 address.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import unquote

import idna

from config.networks import IPAddress, unmapped


class BadHost(ValueError):
    """A list entry that is not a domain name or an IP address (the message names it)."""


def _ipv4_part(text: str) -> int | None:
    """One dot-separated part of a WHATWG IPv4 host: decimal, ``0x`` hex or ``0`` octal."""
    if text[:2] in ("0x", "0X"):
        digits, base = text[2:], 16
    elif len(text) > 1 and text.startswith("0"):
        digits, base = text[1:], 8
    else:
        digits, base = text, 10
    if digits == "":
        return 0 if base != 10 else None
    try:
        return int(digits, base) if digits.isalnum() and digits.isascii() else None
    except ValueError:
        return None


def _ipv4(text: str) -> ipaddress.IPv4Address | None:
    """The address of an IPv4 host in any spelling the URL standard accepts (``2130706433``,
    ``127.1``, ``0x7f.0.0.1``, ``0177.0.0.01``), or None when ``text`` is not one."""
    parts = text.split(".")
    if len(parts) > 4 or any(p == "" for p in parts):
        return None
    numbers = [_ipv4_part(p) for p in parts]
    if any(n is None for n in numbers):
        return None
    *head, last = [n for n in numbers if n is not None]
    if any(n > 255 for n in head) or last >= 256 ** (5 - len(parts)):
        return None
    value = last
    for i, n in enumerate(head):
        value += n << (8 * (3 - i))
    return ipaddress.IPv4Address(value)


def parse_address(host: str) -> IPAddress | None:
    """The IP address a host spells, in any spelling (brackets, a zone, a trailing dot, decimal,
    octal or hex IPv4 parts), or None for a name."""
    text = unquote(host.strip()).rstrip(".")
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    text = text.split("%", 1)[0] if ":" in text else text
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    return _ipv4(text) if text and text[-1].isalnum() else None


def canonical_name(name: str) -> str:
    """A domain name as DNS gets it: lowercase ASCII (punycode labels for unicode ones, UTS 46
    mapping as browsers do), no trailing dot. A name IDNA refuses (an underscore, a label too
    long) stays as it is, lowercased: it can still match an entry spelled the same."""
    text = unquote(name.strip()).rstrip(".").rstrip("\u3002\uff0e\uff61")
    try:
        text = idna.encode(text, uts46=True).decode("ascii")
    except (idna.IDNAError, UnicodeError, ValueError):
        try:
            text = text.encode("idna").decode("ascii")  # IDNA 2003, for what 2008 refuses
        except UnicodeError:
            pass
    return text.lower().rstrip(".")


def canonical_host(host: str) -> str:
    """``host`` in its one spelling: an IP literal as the address it means (IPv6 without brackets),
    a name as ``canonical_name``. What the egress proxy resolves and every list is compared with."""
    address = parse_address(host)
    return str(address) if address is not None else canonical_name(host)


@dataclass(frozen=True)
class HostEntry:
    """One entry of a domain list: a name (covering its subdomains) or an IP address, and a port
    when the entry names one (``example.com:8443``, ``[::1]:8080``)."""

    name: str | None
    address: IPAddress | None
    port: int | None = None

    def __str__(self) -> str:
        host = self.name if self.name is not None else _literal(self.address)
        return host if self.port is None else f"{host}:{self.port}"

    def matches(self, host: str, port: int | None = None) -> bool:
        """Whether ``host`` (any spelling) on ``port`` is this entry (or, for a name, under it)."""
        if self.port is not None and port != self.port:
            return False
        address = parse_address(host)
        if self.address is not None:
            return address is not None and unmapped(address) == unmapped(self.address)
        if address is not None or self.name is None:
            return False
        name = canonical_name(host)
        return name == self.name or name.endswith("." + self.name)


def _literal(address: IPAddress | None) -> str:
    return f"[{address}]" if isinstance(address, ipaddress.IPv6Address) else str(address)


def parse_entry(entry: str) -> HostEntry:
    """A domain list entry (``example.com``, ``*.example.com``, ``.example.com``,
    ``EXAMPLE.com.``, ``bücher.example``, ``example.com:8443``, ``127.0.0.1``, ``[::1]:8080``) in
    canonical form; ``BadHost`` names an entry that is none of these."""
    text = entry.strip()
    port: int | None = None
    head, sep, tail = text.rpartition(":")
    if sep and tail.isdigit() and (not head.count(":") or head.endswith("]")):
        text, port = head, int(tail)
    address = parse_address(text)
    if address is not None:
        return HostEntry(None, address, port)
    name = text.lower()
    name = name[2:] if name.startswith("*.") else name
    name = canonical_name(name.lstrip("."))
    if not name or any(c in name for c in "/ \\@?#[]:*") or not name.isascii():
        raise BadHost(f"{entry!r} is not a domain name (give e.g. 'example.com', no scheme or path)")
    return HostEntry(name, None, port)


def normalise_entries(entries: Iterable[str]) -> list[str]:
    """Domain list entries in canonical form (for a spec or the settings to store); ``BadHost``
    names a bad one."""
    return [str(parse_entry(e)) for e in entries]


def listed(entries: Iterable[HostEntry], host: str, port: int | None = None) -> bool:
    """Whether any entry names ``host`` on ``port``."""
    return any(e.matches(host, port) for e in entries)
