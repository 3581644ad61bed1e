"""The egress proxy: the one door between a browser context and the network.

Why a proxy, and not only CDP interception: ``Fetch`` interception is per target and has to be
switched on, before the first request, in every page, out-of-process frame, and dedicated,
shared and service worker, with any gap leaking (a service worker's install fetches, a shared
worker, an iframe's subresources: issue 13). A context created with
``Target.createBrowserContext(proxyServer=…)`` sends *everything* through the proxy, whatever
target makes the request: navigations, redirects, subresources, workers of all kinds,
WebSockets, prefetch. ``proxyBypassList="<-loopback>"`` removes Chrome's implicit bypass of
loopback, so nothing goes direct. The rules apply to the connection, so a page cannot route around
them: if CDP missed a target, the proxy still sees its traffic.

Each context gets its own **gate**: a listening port of this in-process asyncio proxy on
127.0.0.1. The port *is* the context's identity (no credentials to leak or to answer through
``Fetch.authRequired``, which needs interception again), and a gate refuses everything until
a rule is admitted for the job that holds the context. Each request is judged twice: its host
name against the rule (the job's domain lists), then every address the name resolves to
against the rule (private networks). The proxy then connects to the address it judged, never
resolving again, so DNS rebinding cannot slip a private address in between.

HTTP goes through as forwarded requests (one per connection: a reused proxy connection could
otherwise carry a second request to another host past the judge), HTTPS and WebSockets as
``CONNECT`` tunnels. A refused request fails in the page as a network error (a refused tunnel is
answered 403, which Chrome reports as a failed tunnel; a refused HTTP request is closed
unanswered, since any answer would be shown as the page); the reason is in the gate's log.

``_dial`` is the one place that opens the outbound connection. A job's own upstream proxy
(``cdp.upstream``, admitted with the job's rule) is chained there: the destination is judged as
always and the upstream proxy is asked for the judged address. The proxy's own address is judged
by the job's *network* rule (a proxy on a private network must be opened like any private
destination; the domain lists speak of destinations, not of the proxy), once per gate, and kept.
A failure of the proxy itself is kept on the gate (``upstream_failure``): the job fails ``proxy_error``,
unless the job's proxy comes from a pool, whose ``fallback`` gives the gate another proxy to dial
through (``replace_failed``); a pool also moves the job to another proxy when a site blocks it
(``switch_upstream``). Every destination is judged the same whichever proxy carries it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import socket
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import urlsplit

from cdp.upstream import DestinationUnreachable, Fallback, UpstreamFailure, UpstreamProxy
from config.hosts import canonical_host
from config.logs import bind, current
from config.networks import IPAddress, IPNetwork, closed_kind, networks, unmapped
from config.tasks import cancel_and_wait

log = logging.getLogger("browserd.egress")

Resolver = Callable[[str, int], Awaitable[list[IPAddress]]]
Listen = Callable[[str], Awaitable[socket.socket]]
"""Makes a gate's listening socket on a host (``cdp.netns.BrowserNetwork.listen``: inside the browsers'
network namespace, so the gate is the one thing on their loopback)."""

MAX_KEPT_NAMES = 10_000  # past this, expired answers are dropped from the DNS cache
HEAD_TIMEOUT = 30.0
CONNECT_TIMEOUT = 15.0
MAX_HEAD = 64 * 1024
CHUNK = 64 * 1024
MAX_UPSTREAM_TRIES = 8  # dials of one connection through replacements of a failed upstream proxy
_HOP_BY_HOP = frozenset({b"connection", b"keep-alive", b"proxy-connection", b"proxy-authorization",
                         b"proxy-authenticate", b"te", b"trailer", b"upgrade"})


class EgressRule(Protocol):
    """What a gate asks about each connection a context wants to open."""

    def host_refusal(self, host: str, port: int) -> str | None:
        """Why ``host`` (in its one spelling, ``config.hosts.canonical_host``: an IP literal as its
        address, a name as lowercase ASCII without trailing dots) is refused, before resolving; None: go on."""
        ...

    def address_refusal(self, address: IPAddress) -> str | None:
        """Why a resolved address is refused; None when it may be reached."""
        ...


@dataclass(frozen=True)
class NetworkPolicy:
    """Private networks closed unless opened: ``allow_private`` opens all, ``allowed`` some."""

    allow_private: bool = False
    allowed: tuple[IPNetwork, ...] = ()

    def host_refusal(self, host: str, port: int) -> str | None:
        return None

    def address_refusal(self, address: IPAddress) -> str | None:
        kind = None if self.allow_private else closed_kind(address, self.allowed)
        if kind is None:
            return None
        return closed_network(address, kind)

    @classmethod
    def build(cls, allow_private: bool, cidrs: Iterable[str]) -> NetworkPolicy:
        """From validated CIDR strings (settings, a job spec)."""
        return cls(allow_private, tuple(networks(cidrs)))


def closed_network(address: IPAddress, kind: str) -> str:
    """The one wording of a refused private address: the rule, and the flag, job field and setting
    that open it (the smallest network: the address itself)."""
    plain = unmapped(address)
    single = f"{plain}/{plain.max_prefixlen}"
    return (f"address {address} is {kind}, a private network the job has not opened; open it with "
            f"--allow-network {single} (job field allowed_networks), within what the operator allows: "
            "BROWSERD_ALLOWED_NETWORKS, opened for every job of the operator's own, and a tenant's allowed_networks "
            "for its jobs")


@dataclass(frozen=True)
class DenyAll:
    """The rule of a gate no job has claimed."""

    reason: str = "no job holds this browser context"

    def host_refusal(self, host: str, port: int) -> str | None:
        return self.reason

    def address_refusal(self, address: IPAddress) -> str | None:
        return self.reason


@dataclass
class Decision:
    """One connection a context asked for, and what the gate made of it."""

    method: str
    host: str
    port: int
    address: str | None
    refusal: str | None
    unresolved: bool = False  # refused because the name has no address (DNS), not by a rule

    @property
    def allowed(self) -> bool:
        return self.refusal is None


class Gate:
    """One browser context's door: its own port on the proxy, and the rule the proxy applies."""

    def __init__(self, proxy: EgressProxy, rule: EgressRule, keep: int = 500) -> None:
        self.proxy = proxy
        self.rule = rule
        self.port = 0
        self.decisions: deque[Decision] = deque(maxlen=keep)
        self.refused = 0
        self._unreported: deque[Decision] = deque(maxlen=keep)
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.upstream: UpstreamProxy | None = None
        self.upstream_failure: str | None = None  # the first failure of the upstream proxy itself
        self._upstream_address: tuple[UpstreamProxy, str] | None = None  # the proxy's judged address, kept
        self._fallback: Fallback | None = None
        self._notices: deque[str] = deque(maxlen=20)  # for the agent: the proxy was switched
        self._log_fields: dict[str, object] = {}  # the holding job's log fields (job_id, attempt...)

    def __repr__(self) -> str:
        return f"<Gate port={self.port} refused={self.refused}>"

    @property
    def proxy_server(self) -> str:
        """What ``Target.createBrowserContext(proxyServer=…)`` is given."""
        return f"http://{self.proxy.host}:{self.port}"

    def admit(self, rule: EgressRule, upstream: UpstreamProxy | None = None, fallback: Fallback | None = None) -> None:
        """The rule of the job that now holds the context (until the gate closes), and the job's
        own proxy, through which every allowed connection is then opened. ``fallback``: who to ask
        for another proxy when that one fails (a pool), instead of failing the job at once."""
        self.rule = rule
        self.upstream, self.upstream_failure, self._upstream_address = upstream, None, None
        self._fallback = fallback
        self._notices.clear()
        # the job's fields, bound where it leased the context: the refusals logged later, from the
        # proxy's own tasks, carry its job_id and attempt as fields, not only in the message
        self._log_fields = current()

    def switch_upstream(self, upstream: UpstreamProxy, notice: str, cut_after: float = 1.0) -> None:
        """Go on through ``upstream`` (a pool's rotation): new connections dial it at once; those
        already open (Chrome keeps tunnels alive and would reuse them through the old proxy) are cut
        ``cut_after`` seconds later, once the answer that caused the switch has been read. ``notice``
        is told to the agent (``new_notices``)."""
        self.upstream, self._upstream_address = upstream, None
        self._notices.append(notice)
        before = list(self._tasks)
        if before:
            asyncio.get_running_loop().call_later(cut_after, lambda: [t.cancel() for t in before if not t.done()])

    def new_notices(self) -> list[str]:
        """What the gate did that the agent should know (a switch of proxy), since the last call."""
        fresh = list(self._notices)
        self._notices.clear()
        return fresh

    def replace_failed(self, failed: UpstreamProxy, failure: UpstreamFailure) -> bool:
        """The proxy ``failed`` failed: whether to dial again (through its replacement, or through
        the one another connection already switched to). Without one, the failure is the job's."""
        if self.upstream is not failed:
            return self.upstream is not None
        replacement = self._fallback(failed, failure.reason) if self._fallback is not None else None
        if replacement is None:
            self.upstream_failed(failure)
            return False
        self.upstream, self._upstream_address = replacement, None
        with bind(**self._log_fields):
            log.warning("egress gate %s: upstream %s failed (%s); going on through %s", self.port, failed.display,
                        failure.reason, replacement.display)
        return True

    def upstream_failed(self, failure: UpstreamFailure) -> None:
        if self.upstream_failure is None:
            self.upstream_failure = str(failure)
        with bind(**self._log_fields):
            log.warning("egress gate %s: upstream %s", self.port, failure)

    def unreported(self) -> list[Decision]:
        """Refused connections not yet reported (``new_refusals`` reports them)."""
        return list(self._unreported)

    def refusal_for(self, url: str) -> Decision | None:
        """The unreported refusal of the connection ``url`` opens (host and port), if the gate refused it:
        why a navigation failed, where Chrome only says ``net::ERR_EMPTY_RESPONSE`` or a failed tunnel."""
        where = _destination(url)
        return next((d for d in self.unreported() if (d.host, d.port) == where), None)

    def new_refusals(self) -> list[Decision]:
        """Refused connections since the last call (the agent tells the model about them)."""
        fresh = list(self._unreported)
        self._unreported.clear()
        return fresh

    async def open(self) -> Gate:
        if self.proxy.listen is not None:
            sock = await self.proxy.listen(self.proxy.host)
            self._server = await asyncio.start_server(self._accept, sock=sock, limit=MAX_HEAD)
        else:
            self._server = await asyncio.start_server(self._accept, self.proxy.host, 0, limit=MAX_HEAD)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    @contextlib.asynccontextmanager
    async def side_door(self) -> AsyncIterator[str]:
        """A proxy address into this gate on the worker's own loopback, for what browserd fetches on
        the job's behalf (robots.txt), judged by the job's rule like the browser's own requests.

        Why not the gate's port: with browsers in their own network namespace that port is on *their*
        loopback, which the worker cannot reach. The door listens only while the fetch runs, and the
        proxy refuses any request that would come back into it (``EgressProxy._is_own_port``)."""
        server = await asyncio.start_server(self._accept, self.proxy.host, 0, limit=MAX_HEAD)
        port = server.sockets[0].getsockname()[1]
        self.proxy.doors.add(port)
        try:
            yield f"http://{self.proxy.host}:{port}"
        finally:
            self.proxy.doors.discard(port)
            server.close()
            await server.wait_closed()

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.get_running_loop().create_task(self.proxy.serve(self, reader, writer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def record(self, decision: Decision) -> None:
        self.decisions.append(decision)
        if not decision.allowed:
            self.refused += 1
            self._unreported.append(decision)
            with bind(**self._log_fields, host=decision.host, port=decision.port):
                log.info("egress refused %s %s:%s (%s): %s", decision.method, decision.host, decision.port,
                         decision.address or "unresolved", decision.refusal)

    async def close(self) -> None:
        """Stop listening and cut every connection the context still has open."""
        self.rule = DenyAll("the job's browser context is closed")
        if self._server is not None:
            self._server.close()
        await cancel_and_wait(list(self._tasks), "egress connection")
        self.proxy.forget(self)


def _destination(url: str) -> tuple[str, int] | None:
    """(host, port) a URL connects to, as the proxy names it in its decisions."""
    try:
        parts = urlsplit(url)
        port = parts.port or {"http": 80, "https": 443, "ws": 80, "wss": 443}.get(parts.scheme)
    except ValueError:
        return None
    return ((parts.hostname or "").lower(), port) if parts.hostname and port else None


def lookup(host: str) -> list[IPAddress]:
    """Every address the system resolver gives for ``host`` (blocking: ``socket.getaddrinfo``)."""
    infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return [ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos]


class DnsCache:
    """The system's answers for names, kept a short while, looked up on threads of its own.

    The gate judges every connection, and a page opens many to the same few names: without a cache
    each one was a ``getaddrinfo`` on asyncio's default thread pool (six threads on two cores), so
    names that do not resolve quickly (five seconds per try of the system resolver) queued behind
    each other and pages waited 5-25 s for them. Here a name is looked up once at a time (callers
    asking meanwhile wait for that lookup), on up to ``threads`` threads, and its answer is kept
    ``ttl`` seconds, a failure (no such name, or none in time) ``failure_ttl``. Keeping an answer
    does not weaken the gate: the address connected to is still the one judged, never re-resolved.
    """

    def __init__(self, resolve: Callable[[str], list[IPAddress]] = lookup, *, ttl: float = 30.0,
                 failure_ttl: float = 15.0, threads: int = 32, clock: Callable[[], float] = time.monotonic) -> None:
        self.resolve = resolve
        self.ttl, self.failure_ttl = ttl, failure_ttl
        self.clock = clock
        self.threads = threads
        self.lookups = 0  # names looked up (cache misses)
        self._pool: ThreadPoolExecutor | None = None
        self._kept: dict[str, tuple[float, list[IPAddress] | OSError]] = {}  # name -> (until, answer)
        self._running: dict[str, asyncio.Future[list[IPAddress]]] = {}

    async def __call__(self, host: str, port: int) -> list[IPAddress]:
        with contextlib.suppress(ValueError):
            return [ipaddress.ip_address(host)]  # an IP literal is its own answer
        kept = self._kept.get(host)
        if kept is not None and kept[0] > self.clock():
            return _answer_or_raise(kept[1])
        running = self._running.get(host)
        if running is None or running.get_loop() is not asyncio.get_running_loop():  # one lookup per loop
            running = asyncio.ensure_future(self._look_up(host))
            self._running[host] = running
            running.add_done_callback(lambda f, h=host: self._running.get(h) is f and self._running.pop(h))
        return list(await asyncio.shield(running))

    async def _look_up(self, host: str) -> list[IPAddress]:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="browserd-dns")
        self.lookups += 1
        try:
            answer: list[IPAddress] | OSError = await asyncio.get_running_loop().run_in_executor(
                self._pool, self.resolve, host)
        except OSError as exc:
            answer = exc
        ttl = self.failure_ttl if isinstance(answer, OSError) else self.ttl
        self._kept[host] = (self.clock() + ttl, answer)
        if len(self._kept) > MAX_KEPT_NAMES:
            now = self.clock()
            self._kept = {h: k for h, k in self._kept.items() if k[0] > now}
        return _answer_or_raise(answer)


def _answer_or_raise(answer: list[IPAddress] | OSError) -> list[IPAddress]:
    if isinstance(answer, OSError):  # a new exception each time: a kept one would grow its traceback
        raise type(answer)(answer.errno, answer.strerror) if answer.errno is not None else type(answer)(*answer.args)
    return list(answer)


system_resolver: Resolver = DnsCache()
"""Every address the system resolver gives for a name (an IP literal is its own answer), through
the process's one ``DnsCache``."""


def suffix_resolver(suffix: str, address: str) -> Resolver:
    """A resolver answering ``address`` for every name ending in ``suffix``, the system's answer
    otherwise (as Chrome's ``--host-resolver-rules "MAP *.test 127.0.0.1"``; trailing dots ignored, as
    DNS ignores them): distinct origins on one machine, for tests and benchmarks."""
    fixed = [ipaddress.ip_address(address)]

    async def resolve(host: str, port: int) -> list[IPAddress]:
        return list(fixed) if host.rstrip(".").endswith(suffix) else await system_resolver(host, port)

    return resolve


@dataclass
class _Head:
    method: str
    target: str
    version: str
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)

    def header(self, name: bytes) -> bytes | None:
        return next((v for k, v in self.headers if k.lower() == name), None)


class BadRequest(Exception):
    """A request the proxy cannot make sense of; answered with ``status``."""

    def __init__(self, status: int, reason: str) -> None:
        self.status, self.reason = status, reason
        super().__init__(reason)


class EgressProxy:
    """The per-process proxy: ``gate = await proxy.open_gate()`` per browser context."""

    def __init__(self, *, default_rule: EgressRule | None = None, resolver: Resolver | None = None,
                 host: str = "127.0.0.1", listen: Listen | None = None) -> None:
        self.host = host
        self.listen = listen  # None: gates listen on this process's own loopback
        self.default_rule: EgressRule = default_rule or DenyAll()
        self.resolve = resolver or system_resolver
        self.gates: set[Gate] = set()
        self.doors: set[int] = set()  # ports of open side doors (Gate.side_door), on this process's loopback
        self.refused = 0

    async def open_gate(self, rule: EgressRule | None = None) -> Gate:
        gate = await Gate(self, rule or self.default_rule).open()
        self.gates.add(gate)
        return gate

    def forget(self, gate: Gate) -> None:
        self.gates.discard(gate)

    async def close(self) -> None:
        await asyncio.gather(*(g.close() for g in list(self.gates)), return_exceptions=True)

    def _is_own_port(self, address: IPAddress, port: int) -> bool:
        """Whether an outbound connection would come back into this proxy: into a side door, or into
        a gate when gates listen on this process's own loopback. Gates made inside the browsers'
        network namespace have port numbers of *that* loopback, which the proxy's outbound connections
        (made from the host's namespace) never reach: a host service on the same number is not the proxy."""
        if not unmapped(address).is_loopback:
            return False
        return port in self.doors or (self.listen is None and any(g.port == port for g in self.gates))

    # --- one client connection ---------------------------------------------------------------

    async def serve(self, gate: Gate, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await _read_head(reader)
            if head.method == "CONNECT":
                await self._tunnel(gate, head, reader, writer)
            else:
                await self._forward(gate, head, reader, writer)
        except BadRequest as exc:
            await _answer(writer, exc.status, exc.reason)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            pass
        except Exception:  # a bug here must cost one connection, never the gate
            log.exception("egress proxy failed on a connection of gate %s", gate.port)
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def judge(self, gate: Gate, method: str, host: str, port: int) -> Decision:
        """Resolve and judge one destination; the decision names the address to connect to. The
        host is judged, resolved and recorded in its one spelling (``config.hosts``): ``EVIL.example.``
        is ``evil.example`` to the domain lists, ``2130706433`` is 127.0.0.1 to them and to the resolver."""
        host = canonical_host(host)
        decision = Decision(method, host, port, None, gate.rule.host_refusal(host, port))
        if decision.refusal is None:
            try:
                addresses = await self.resolve(host, port)
            except OSError as exc:
                addresses, decision.refusal = [], f"cannot resolve {host}: {exc.strerror or exc}"
                decision.unresolved = True
            for address in addresses:
                refusal = ("it is browserd's egress proxy" if self._is_own_port(address, port)
                           else gate.rule.address_refusal(address))
                if refusal is None:
                    decision.address, decision.refusal = str(address), None
                    break
                decision.refusal = decision.refusal or refusal
            if decision.address is None and decision.refusal is None:
                decision.refusal, decision.unresolved = f"cannot resolve {host}: it has no address", True
        if not decision.allowed:
            self.refused += 1
        gate.record(decision)
        return decision

    async def _dial(self, gate: Gate, decision: Decision) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """Open the outbound connection to the address that was judged (never re-resolved), through
        the job's upstream proxy when it has one."""
        assert decision.address is not None
        for _ in range(MAX_UPSTREAM_TRIES):
            upstream = gate.upstream
            if upstream is None:
                break
            try:
                proxy_address = await self._upstream_address(gate, upstream)
                return await upstream.open(decision.address, proxy_address, decision.port)
            except UpstreamFailure as exc:
                if not gate.replace_failed(upstream, exc):
                    raise BadRequest(502, str(exc)) from exc
            except DestinationUnreachable as exc:
                raise BadRequest(502, str(exc)) from exc
        else:
            raise BadRequest(502, f"no upstream proxy could open {decision.host}:{decision.port}")
        try:
            return await asyncio.wait_for(asyncio.open_connection(decision.address, decision.port), CONNECT_TIMEOUT)
        except (OSError, TimeoutError) as exc:
            raise BadRequest(502, f"cannot connect to {decision.host}:{decision.port}: {exc}") from exc

    async def _upstream_address(self, gate: Gate, upstream: UpstreamProxy) -> str:
        """The proxy's address, judged once per gate by the job's network rule (and kept: no rebinding)."""
        if gate._upstream_address is not None and gate._upstream_address[0] is upstream:
            return gate._upstream_address[1]
        try:
            addresses = await self.resolve(upstream.host.lower(), upstream.port)
        except OSError as exc:
            raise UpstreamFailure(upstream, f"cannot resolve {upstream.host}: {exc.strerror or exc}") from exc
        refusal = f"{upstream.host} has no address"
        for address in addresses:
            refusal = ("it is browserd's egress proxy" if self._is_own_port(address, upstream.port)
                       else gate.rule.address_refusal(address))
            if refusal is None:
                if gate.upstream is upstream:
                    gate._upstream_address = (upstream, str(address))
                return str(address)
        raise UpstreamFailure(upstream, f"its address is refused by the job's network policy: {refusal}")

    async def _tunnel(self, gate: Gate, head: _Head, reader: asyncio.StreamReader,
                      writer: asyncio.StreamWriter) -> None:
        host, port = _authority(head.target, default_port=443)
        decision = await self.judge(gate, "CONNECT", host, port)
        if not decision.allowed:
            raise BadRequest(403, f"refused by browserd's egress policy: {decision.refusal}")
        up_reader, up_writer = await self._dial(gate, decision)
        writer.write(b"HTTP/1.1 200 Connection Established\r\n\r\n")
        await writer.drain()
        try:
            await asyncio.gather(_copy(reader, up_writer), _copy(up_reader, writer))
        finally:
            up_writer.close()

    async def _forward(self, gate: Gate, head: _Head, reader: asyncio.StreamReader,
                       writer: asyncio.StreamWriter) -> None:
        url = urlsplit(head.target)
        if url.scheme != "http" or not url.hostname:
            raise BadRequest(400, "this is a forward proxy: only absolute http:// requests and CONNECT")
        decision = await self.judge(gate, head.method, url.hostname, url.port or 80)
        if not decision.allowed:
            return  # closed unanswered: the page sees a network error, as a refused tunnel gives
        try:
            up_reader, up_writer = await self._dial(gate, decision)
        except BadRequest:
            return  # an unreachable host, to the page as without a proxy
        try:
            path = (url.path or "/") + (f"?{url.query}" if url.query else "")
            up_writer.write(_head_bytes(f"{head.method} {path} {head.version}", head.headers))
            await _copy_body(head, reader, up_writer)
            response = await _read_head(up_reader, response=True)
            writer.write(_head_bytes(f"{response.method} {response.target} {response.version}".rstrip(),
                                     response.headers))
            await _copy(up_reader, writer)
        finally:
            up_writer.close()


# --- HTTP/1.1 framing (just enough for a forward proxy) ---------------------------------------


async def _read_head(reader: asyncio.StreamReader, *, response: bool = False) -> _Head:
    try:
        raw = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT)
    except asyncio.LimitOverrunError:
        raise BadRequest(431, "request head too large") from None
    lines = raw[:-4].split(b"\r\n")
    parts = lines[0].decode("latin-1").split(" ", 2)
    if len(parts) < 2 or (not response and len(parts) != 3):
        raise BadRequest(400, "malformed request line")
    headers = []
    for line in lines[1:]:
        name, sep, value = line.partition(b":")
        if not sep or not name.strip():
            raise BadRequest(400, "malformed header")
        headers.append((name.strip(), value.strip()))
    if response:  # "HTTP/1.1 200 OK": keep the shape method/target/version = version/status/reason
        return _Head(parts[0], parts[1], parts[2] if len(parts) > 2 else "", headers)
    return _Head(parts[0].upper(), parts[1], parts[2], headers)


def _head_bytes(first_line: str, headers: list[tuple[bytes, bytes]]) -> bytes:
    """A head with hop-by-hop headers dropped and ``Connection: close`` (one request per connection)."""
    kept = [f"{first_line}\r\n".encode("latin-1")]
    kept += [k + b": " + v + b"\r\n" for k, v in headers if k.lower() not in _HOP_BY_HOP]
    kept.append(b"Connection: close\r\n\r\n")
    return b"".join(kept)


async def _copy_body(head: _Head, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Forward exactly the request's body: by Content-Length, or chunk by chunk."""
    if (head.header(b"transfer-encoding") or b"").lower().endswith(b"chunked"):
        while True:
            size_line = await reader.readuntil(b"\r\n")
            writer.write(size_line)
            try:
                size = int(size_line.split(b";")[0].strip(), 16)
            except ValueError:
                raise BadRequest(400, "bad chunk size") from None
            if size == 0:
                while (trailer := await reader.readuntil(b"\r\n")) != b"\r\n":
                    writer.write(trailer)
                writer.write(b"\r\n")
                break
            writer.write(await reader.readexactly(size + 2))
            await writer.drain()
    else:
        try:
            remaining = int(head.header(b"content-length") or b"0")
        except ValueError:
            raise BadRequest(400, "bad Content-Length") from None
        while remaining > 0:
            data = await reader.read(min(CHUNK, remaining))
            if not data:
                raise asyncio.IncompleteReadError(b"", remaining)
            remaining -= len(data)
            writer.write(data)
            await writer.drain()
    await writer.drain()


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until end of stream, then pass the end on (half-close) so the other side sees it."""
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (ConnectionError, OSError):
        writer.close()


def _authority(target: str, *, default_port: int) -> tuple[str, int]:
    """``host:port`` (``[v6]:port``) of a CONNECT request."""
    host, sep, port = target.rpartition(":")
    if not sep or "]" in port:
        host, port = target, str(default_port)
    if not port.isdigit() or not host:
        raise BadRequest(400, f"bad CONNECT target {target!r}")
    return host.strip("[]"), int(port)


async def _answer(writer: asyncio.StreamWriter, status: int, reason: str) -> None:
    body = (reason + "\n").encode()
    phrase = {400: "Bad Request", 403: "Forbidden", 431: "Request Header Fields Too Large",
              502: "Bad Gateway"}.get(status, "Error")
    writer.write(f"HTTP/1.1 {status} {phrase}\r\nContent-Type: text/plain; charset=utf-8\r\n"
                 f"X-Browserd-Egress: {'refused' if status == 403 else 'error'}\r\n"
                 f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
    with contextlib.suppress(ConnectionError):
        await writer.drain()
