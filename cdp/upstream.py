"""A job's own upstream proxy, chained behind browserd's egress proxy.

The egress gate judges every destination first (``cdp.egress``); only then does ``_dial`` open
the connection, and with an upstream proxy it opens it *through* that proxy: an HTTP(S)
``CONNECT`` or a SOCKS5 ``CONNECT`` (RFC 1928, username/password per RFC 1929) to the address the
gate judged, never to the name again, so the policy and the DNS-rebinding guard hold through the
proxy. Plain-HTTP requests go through a tunnel too (one request per connection, as without a proxy).

Failures are told apart: ``UpstreamFailure`` is the proxy's own fault (unreachable, credentials
refused, not speaking its protocol) and fails the job as ``proxy_error``; a proxy that is fine but
cannot reach the destination answers like a direct connection would (the page sees a network error).
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import ssl
from collections.abc import Callable
from dataclasses import dataclass, field

CONNECT_TIMEOUT = 15.0
REPLY_TIMEOUT = 30.0
MAX_REPLY_HEAD = 16 * 1024

_SOCKS_REPLIES = {1: "general failure", 2: "not allowed by its rules", 3: "network unreachable",
                  4: "host unreachable", 5: "connection refused", 6: "TTL expired", 7: "command not supported",
                  8: "address type not supported"}

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]
Fallback = Callable[["UpstreamProxy", str], "UpstreamProxy | None"]
"""What a gate asks when its upstream proxy failed (``reason``): the proxy to go on through (a pool's
next one), or None when there is none (the job then fails ``proxy_error``)."""


class UpstreamFailure(Exception):
    """The upstream proxy itself failed: the job's ``proxy_error``. ``reason`` never holds the password."""

    def __init__(self, proxy: UpstreamProxy, reason: str) -> None:
        self.reason = reason
        super().__init__(f"proxy {proxy.display}: {reason}")


class DestinationUnreachable(Exception):
    """The proxy works but could not reach the destination (as a direct connection would fail)."""


@dataclass(frozen=True)
class UpstreamProxy:
    """Where and how to reach the proxy; ``repr`` and ``display`` hide the password."""

    scheme: str  # http, https, socks5
    host: str
    port: int
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    label: str | None = None  # a pool's proxy: how messages and logs name it (no address, no username)

    @property
    def display(self) -> str:
        if self.label is not None:
            return self.label
        who = f"{self.username}:***@" if self.username else ""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{who}{host}:{self.port}"

    async def open(self, address: str, proxy_address: str, port: int) -> Streams:
        """A connection to ``address:port`` (an IP the gate judged) through this proxy, which is
        reached at ``proxy_address`` (also judged)."""
        try:
            reader, writer = await asyncio.wait_for(self._connect(proxy_address), CONNECT_TIMEOUT)
        except (OSError, TimeoutError, ssl.SSLError) as exc:
            raise UpstreamFailure(self, f"cannot connect: {exc or type(exc).__name__}") from exc
        try:
            async with asyncio.timeout(REPLY_TIMEOUT):
                if self.scheme == "socks5":
                    await self._socks5(reader, writer, address, port)
                else:
                    await self._http_connect(reader, writer, address, port)
        except BaseException as exc:
            writer.close()
            if isinstance(exc, (asyncio.IncompleteReadError, ConnectionError, TimeoutError, asyncio.LimitOverrunError)):
                raise UpstreamFailure(self, f"the proxy broke off the handshake ({type(exc).__name__})") from exc
            raise
        return reader, writer

    async def _connect(self, proxy_address: str) -> Streams:
        if self.scheme == "https":
            context = ssl.create_default_context()
            return await asyncio.open_connection(proxy_address, self.port, ssl=context, server_hostname=self.host,
                                                 limit=MAX_REPLY_HEAD * 4)
        return await asyncio.open_connection(proxy_address, self.port, limit=MAX_REPLY_HEAD * 4)

    # --- HTTP CONNECT ----------------------------------------------------------------------

    async def _http_connect(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                            address: str, port: int) -> None:
        authority = f"[{address}]:{port}" if ":" in address else f"{address}:{port}"
        head = f"CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n"
        if self.username is not None:
            token = base64.b64encode(f"{self.username}:{self.password or ''}".encode()).decode()
            head += f"Proxy-Authorization: Basic {token}\r\n"
        writer.write((head + "\r\n").encode("latin-1"))
        await writer.drain()
        reply = await reader.readuntil(b"\r\n\r\n")
        status_line = reply.split(b"\r\n", 1)[0].decode("latin-1")
        parts = status_line.split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
            raise UpstreamFailure(self, "it did not answer CONNECT like an HTTP proxy")
        status = int(parts[1])
        if status == 407:
            raise UpstreamFailure(self, "it refused the credentials (407 Proxy Authentication Required)"
                                  if self.username else "it requires credentials (407 Proxy Authentication Required)")
        if 200 <= status < 300:
            return
        if status in (502, 503, 504, 403):
            raise DestinationUnreachable(f"the proxy could not open {authority}: {status_line}")
        raise UpstreamFailure(self, f"it answered CONNECT with {status_line!r}")

    # --- SOCKS5 ----------------------------------------------------------------------------

    async def _socks5(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                      address: str, port: int) -> None:
        methods = b"\x00\x02" if self.username is not None else b"\x00"
        writer.write(b"\x05" + bytes([len(methods)]) + methods)
        await writer.drain()
        version, method = await reader.readexactly(2)
        if version != 5:
            raise UpstreamFailure(self, "it does not speak SOCKS5")
        if method == 0xFF:
            raise UpstreamFailure(self, "it accepts none of our authentication methods"
                                  + ("" if self.username else " (it requires credentials)"))
        if method == 2:
            if self.username is None:
                raise UpstreamFailure(self, "it asked for credentials the job does not give")
            user, password = self.username.encode(), (self.password or "").encode()
            writer.write(b"\x01" + bytes([len(user)]) + user + bytes([len(password)]) + password)
            await writer.drain()
            try:
                _, status = await reader.readexactly(2)
            except (asyncio.IncompleteReadError, ConnectionError):
                status = -1  # some proxies hang up on a wrong login instead of answering it
            if status != 0:
                raise UpstreamFailure(self, "it refused the credentials")
        elif method != 0:
            raise UpstreamFailure(self, f"it chose an authentication method we did not offer ({method})")
        ip = ipaddress.ip_address(address)
        kind = b"\x01" if ip.version == 4 else b"\x04"
        writer.write(b"\x05\x01\x00" + kind + ip.packed + port.to_bytes(2, "big"))
        await writer.drain()
        version, reply, _, bound = await reader.readexactly(4)
        if version != 5:
            raise UpstreamFailure(self, "it answered CONNECT outside SOCKS5")
        skip = {1: 4, 4: 16}.get(bound)
        if skip is None and bound == 3:
            skip = (await reader.readexactly(1))[0]
        if skip is None:
            raise UpstreamFailure(self, f"it answered with an unknown address type {bound}")
        await reader.readexactly(skip + 2)
        if reply == 0:
            return
        why = _SOCKS_REPLIES.get(reply, f"reply {reply}")
        if reply in (2, 3, 4, 5, 6):
            raise DestinationUnreachable(f"the proxy could not open {address}:{port}: {why}")
        raise UpstreamFailure(self, f"it refused CONNECT: {why}")
