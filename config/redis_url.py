"""What ``BROWSERD_REDIS_URL`` names: one Redis server, or a master found through Redis Sentinel.

Two forms (pure parsing here; ``config.redis_client`` builds the clients, ``workers.jobs.queue.app``
Celery's broker and RedBeat settings from the same ``RedisTarget``):

* one server: ``redis://[user:password@]host:port/db``, ``rediss://...``, ``unix:///path.sock`` (redis-py's forms);
* Sentinel: kombu's (Celery's) broker form, the sentinels separated by ``;``, with the master's name as
  ``master_name``, the one option kombu takes from its transport options instead of the URL::

      sentinel://[user:password@]host1:26379;sentinel://host2:26379;sentinel://host3:26379/0?master_name=mymaster

  The user and password (of the first sentinel URL, as kombu reads them) are the *master's* (and its
  replicas'), as in kombu; ``sentinel_password`` (a query parameter) is the sentinels' own, when they
  require one. The database is the path of any part (``/0`` when none). This form was chosen over
  ``redis+sentinel://`` because Celery's documentation and kombu already read it: the same URL (minus
  ``master_name``, which browserd moves into ``broker_transport_options``) is the broker's.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from urllib.parse import parse_qsl, quote, unquote, urlsplit

SENTINEL_SCHEME = "sentinel"
SENTINEL_PORT = 26379
SERVER_SCHEMES = ("redis", "rediss", "unix")
SENTINEL_PARAMS = ("master_name", "sentinel_password")


class RedisKind(str, Enum):
    SERVER = "server"
    SENTINEL = "sentinel"


@dataclass(frozen=True)
class Sentinels:
    """A master named ``master_name``, found by asking ``hosts`` (host, port)."""

    hosts: tuple[tuple[str, int], ...]
    master_name: str
    db: int = 0
    username: str | None = None
    password: str | None = None  # the master's and replicas'
    sentinel_password: str | None = None  # the sentinels' own

    @property
    def kombu_url(self) -> str:
        """kombu's form: every sentinel as its own ``sentinel://`` URL, the master's credentials and the
        database on each (kombu reads them from the first; the others are its fail-over alternates)."""
        user = f"{_quote(self.username or '')}:{_quote(self.password)}@" if self.password is not None else (
            f"{_quote(self.username)}@" if self.username else "")
        return ";".join(f"{SENTINEL_SCHEME}://{user}{_host(host)}:{port}/{self.db}" for host, port in self.hosts)


@dataclass(frozen=True)
class RedisTarget:
    """``BROWSERD_REDIS_URL`` read: ``url`` for one server (redis-py reads it), ``sentinels`` for Sentinel."""

    kind: RedisKind
    url: str
    sentinels: Sentinels | None = None


def _quote(value: str) -> str:
    return quote(value, safe="")


def _host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def is_sentinel_url(url: str) -> bool:
    return url.strip().lower().startswith(f"{SENTINEL_SCHEME}://")


def parse_redis_url(url: str) -> RedisTarget:
    """The target ``url`` names; ``ValueError`` (its message says what is wrong) for any other form."""
    scheme = url.partition("://")[0].lower() if "://" in url else ""
    if scheme in SERVER_SCHEMES:
        return RedisTarget(RedisKind.SERVER, url)
    if scheme != SENTINEL_SCHEME:
        raise ValueError("is not a redis://, rediss://, unix:// or sentinel://host:port;sentinel://...?master_name= URL")
    hosts: list[tuple[str, int]] = []
    params: dict[str, str] = {}
    db: int | None = None
    username = password = None
    for n, part in enumerate(p for p in url.split(";") if p.strip()):
        try:
            parts = urlsplit(part.strip())
            port = parts.port or SENTINEL_PORT
        except ValueError as exc:
            raise ValueError(f"sentinel {n + 1}: {exc}") from None
        if parts.scheme.lower() != SENTINEL_SCHEME or not parts.hostname:
            raise ValueError(f"sentinel {n + 1} is not sentinel://host:port (every part between ';' is one sentinel)")
        hosts.append((parts.hostname, port))
        if n == 0 and (parts.username or parts.password is not None):
            username, password = unquote(parts.username or "") or None, _unquoted(parts.password)
        path = parts.path.strip("/")
        if path:
            if not path.isdigit():
                raise ValueError(f"the database {path!r} is not a number")
            db = int(path) if db is None else db
        for name, value in parse_qsl(parts.query, keep_blank_values=True):
            if name not in SENTINEL_PARAMS:
                raise ValueError(f"takes only {', '.join(SENTINEL_PARAMS)} as query parameters, not {name!r}")
            params[name] = value
    if not params.get("master_name"):
        raise ValueError("names no master: add ?master_name=NAME (the name the sentinels monitor)")
    return RedisTarget(RedisKind.SENTINEL, url, Sentinels(
        tuple(hosts), params["master_name"], db or 0, username, password, params.get("sentinel_password") or None))


def _unquoted(value: str | None) -> str | None:
    return None if value is None else unquote(value)
