"""The Celery app: Redis broker, three priority queues, settings that lose nothing and run nothing twice.

This is the job kernel's side of Celery: the configuration, and (``publish``) a publisher that
sends tasks **by name** (``names``), so the API publishes without importing the code that runs
them. The tasks themselves are registered by the worker modules (``workers.tasks``,
``workers.webhooks``, ``workers.scheduled``), which the app ``include``s when a worker starts.

Run a worker with ``browserd worker`` (or ``python -m celery -A workers.celery_app worker``).
Celery's prefork pool works too (a runtime per child), but ``-P prefork`` cannot be told apart from
Celery's default and so yields to ``worker_pool`` below: ask for it by its other name,
``-P processes``.
Results are not kept by Celery: the job store (``workers.jobs.store``) holds each job's state and
result. The result backend holds only the state of each job's task, as the store has it
(``results``), so Flower, ``celery result`` and ``AsyncResult`` agree with browserd.

Time limits. A job's *soft* limit is its own timeout (``JobSpec.timeout`` or BROWSERD_JOB_TIMEOUT):
when it passes, the job's coroutine is cancelled, its browser context closes and the job is
recorded as failed/timeout. The *hard* limit is the soft one plus ``limits.HARD_LIMIT_GRACE``: the
worker stops waiting for a coroutine that ignored its cancellation. Celery enforces its own
``time_limit``/``soft_time_limit`` only in the prefork pool; browserd runs the ``threads`` pool
(one event loop shared by all jobs of a process), so the worker runtime applies the same two
limits itself, and the values are still sent with each message for tools that display them.
"""

from __future__ import annotations

import os
import socket
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit, urlunsplit

from celery import Celery
from kombu import Connection, Exchange, Queue

from config import ConfigError, Settings, get_settings
from config.masking import mask_url
from config.redis_url import Sentinels, is_sentinel_url, parse_redis_url
from workers.jobs.queue.limits import hard_limit
from workers.jobs.queue.names import (
    DELIVER_WEBHOOK,
    MAINTENANCE_QUEUE,
    QUEUES,
    RECONCILE,
    RUN_SESSION,
    SESSIONS_QUEUE,
    SIDE_QUEUES,
    TASK_MODULES,
    WEBHOOK_QUEUE,
)


def default_node_name() -> str:
    """The Celery node name ``browserd worker`` gives a worker unless ``--name`` says otherwise; also the
    name a worker runtime started outside Celery goes by in its heartbeat and metrics."""
    return f"browserd-{os.getpid()}@{socket.gethostname()}"


URL_ONLY_PARAMS = ("username", "password", "db")


def kombu_url(url: str | None) -> str | None:
    """The Redis URL as Celery's transport (kombu) can read it.

    redis-py, which the store and RedBeat use, takes ``?username=``, ``?password=`` and ``?db=``; kombu
    passes every query parameter on as a keyword argument of its connection and fails on these
    (``TypeError: ... multiple values for keyword argument 'password'``), so with such a URL every
    publish failed and every submission answered 503. They move into the URL's user-info and path,
    where both libraries read them (a query value wins over the user-info, as in redis-py).
    A Sentinel URL becomes kombu's own form without ``master_name`` (``broker_transport_options`` carry it).
    """
    found = sentinels_of(url)
    if found is not None:
        return found.kombu_url
    if not url or not url.startswith(("redis://", "rediss://")):
        return url
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    moved = {name: value for name, value in query if name in URL_ONLY_PARAMS}
    if not moved:
        return url
    user = moved.get("username", unquote(parts.username or ""))
    password = moved.get("password", None if parts.password is None else unquote(parts.password))
    userinfo = quote(user, safe="") + (f":{quote(password, safe='')}" if password is not None else "")
    host = parts.netloc.rpartition("@")[2]
    path = f"/{moved['db']}" if "db" in moved else parts.path
    rest = urlencode([(name, value) for name, value in query if name not in URL_ONLY_PARAMS])
    return urlunsplit(parts._replace(netloc=f"{userinfo}@{host}" if userinfo else host, path=path, query=rest))


def sentinels_of(url: str | None) -> Sentinels | None:
    """The sentinels ``BROWSERD_REDIS_URL`` names, or None for one server (or an unreadable URL, which
    ``broker_url`` reports at start)."""
    if not url or not is_sentinel_url(url):
        return None
    try:
        return parse_redis_url(url).sentinels
    except ValueError:
        return None


def sentinel_transport_options(url: str | None) -> dict[str, Any]:
    """kombu's Sentinel options: the master's name, and the sentinels' own password when they need one."""
    found = sentinels_of(url)
    if found is None:
        return {}
    return {"master_name": found.master_name,
            **({"sentinel_kwargs": {"password": found.sentinel_password}} if found.sentinel_password else {})}


def redbeat_config(url: str | None) -> dict[str, Any]:
    """RedBeat's Redis: the URL itself, or its Sentinel form (``redis-sentinel://`` and the sentinels in
    ``redbeat_redis_options``, which RedBeat reads for that scheme)."""
    found = sentinels_of(url)
    if found is None:
        return {"redbeat_redis_url": kombu_url(url)}
    return {"redbeat_redis_url": f"redis-sentinel://{found.hosts[0][0]}:{found.hosts[0][1]}/{found.db}",
            "redbeat_redis_options": redbeat_sentinel_options(found)}


def redbeat_sentinel_options(found: Sentinels) -> dict[str, Any]:
    return {"sentinels": [list(host) for host in found.hosts], "service_name": found.master_name, "db": found.db,
            "socket_timeout": 10,
            **({"username": found.username} if found.username else {}),
            **({"password": found.password} if found.password is not None else {}),
            **({"sentinel_kwargs": {"password": found.sentinel_password}} if found.sentinel_password else {})}
RESULT_BACKEND = "workers.jobs.queue.results:StatesBackend"  # Celery's Redis backend, subscribing to nothing
SENTINEL_RESULT_BACKEND = "workers.jobs.queue.results:SentinelStatesBackend"  # the same behind Sentinel


def result_backend_url(settings: Settings) -> str | None:
    """``result_backend``: Celery's view of each job's task (``results``) on browserd's Redis; a
    ``rediss://`` URL verifies the server's certificate, as the store's connection does, unless it
    says otherwise (Celery's backend refuses a ``rediss://`` URL that does not say)."""
    url = kombu_url(settings.redis_url)
    if not url:
        return None
    if sentinels_of(settings.redis_url) is not None:  # master_name: result_backend_transport_options
        return f"{SENTINEL_RESULT_BACKEND}+{url}"
    if url.startswith("rediss://") and "ssl_cert_reqs=" not in url:
        url += ("&" if "?" in url else "?") + "ssl_cert_reqs=required"
    return f"{RESULT_BACKEND}+{url}"


def broker_url(settings: Settings) -> str:
    """The broker's URL, checked at start: one the transport cannot read fails here with its name, not
    later as a 503 at every submission."""
    if not settings.redis_url:
        raise ConfigError("BROWSERD_REDIS_URL is not set; point it at the Redis that holds the queue and job state")
    try:
        parse_redis_url(settings.redis_url)
    except ValueError as exc:
        raise ConfigError(f"BROWSERD_REDIS_URL={mask_url(settings.redis_url)!r} {exc}") from None
    url = kombu_url(settings.redis_url) or ""
    if url.startswith(("redis://", "rediss://")):
        try:
            Connection(url)  # parses only; connects on first use
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"BROWSERD_REDIS_URL={mask_url(settings.redis_url)!r} cannot be used as Celery's "
                              f"broker ({exc}); move that query parameter out of the URL") from None
    return url


def celery_config(settings: Settings) -> dict[str, Any]:
    """Celery settings derived from browserd's; each choice says why.

    Importing the app never fails: ``browserd worker`` and the API call ``broker_url`` and
    ``check_limits`` first, so a missing or inconsistent setting is reported by name.
    """
    soft = settings.job_timeout
    return {
        "broker_url": kombu_url(settings.redis_url),
        "broker_connection_retry_on_startup": True,
        "broker_transport_options": {
            # A message delivered but not acknowledged within this time goes back to its queue:
            # that is how a job whose worker died (even by SIGKILL) is redelivered. It must exceed
            # the hard limit, or a job still running would be delivered a second time.
            "visibility_timeout": settings.visibility_timeout,
            # Sweep for such messages often enough that redelivery follows the timeout closely.
            "unacked_restore_interval": max(1, min(10, int(settings.visibility_timeout / 4))),
            "unacked_restore_throttle": 1,
            # Poll the queues in the listed order every time (high, normal, low), not round robin.
            "queue_order_strategy": "priority",
            # With Sentinel: the master's name (and the sentinels' password), which kombu reads from here.
            **sentinel_transport_options(settings.redis_url),
        },
        # Job results live in the job store. Celery's backend holds only each job task's state
        # (results.py: SUCCESS, FAILURE, REVOKED, RETRY as the store says), for Flower and
        # AsyncResult, as long as the job's record; every other task keeps no result.
        "result_backend": result_backend_url(settings),
        "result_backend_transport_options": sentinel_transport_options(settings.redis_url),
        "result_expires": int(settings.result_ttl),
        "result_extended": True,  # the state names the worker (its Celery node) and the retries, as Flower does
        "task_ignore_result": True,
        # Acknowledge after the task ran, not when it was received: a worker that dies mid-job
        # leaves the message unacknowledged, so the broker redelivers it.
        "task_acks_late": True,
        # ...while a task that raised is acknowledged: a job that ended failed raises JobFailed
        # after its result was recorded (so Celery's view shows FAILURE), and must not run again.
        "task_acks_on_failure": True,
        # ...and if a pool child dies (prefork), reject the message so it is requeued, not acked.
        "task_reject_on_worker_lost": True,
        # Reserve one message per free slot only, so a busy worker does not hoard queued jobs
        # that an idle worker could run (and a crash returns as few messages as possible).
        "worker_prefetch_multiplier": 1,
        "worker_pool": "threads",
        "worker_concurrency": settings.worker_concurrency,
        # Soft limit below the hard one: the soft one lets the job close its context and record
        # its state; the hard one is the backstop. (Enforced by workers.runtime; see above.)
        "task_soft_time_limit": soft,
        "task_time_limit": hard_limit(soft),
        # Task events on, so Flower and celery-exporter see tasks the way users expect.
        "worker_send_task_events": True,
        "task_send_sent_event": True,
        # Separate queues per priority; a worker consumes all three, high first.
        # ...and one for webhook deliveries (workers.webhooks), so retries never wait behind jobs.
        "task_queues": [Queue(name, Exchange(name, type="direct"), routing_key=name)
                        for name in (*QUEUES, *SIDE_QUEUES, SESSIONS_QUEUE)],
        "task_routes": {RECONCILE: {"queue": MAINTENANCE_QUEUE}, DELIVER_WEBHOOK: {"queue": WEBHOOK_QUEUE},
                        RUN_SESSION: {"queue": SESSIONS_QUEUE}},
        # No static beat entry: every worker runs the reconciler itself (workers.runtime), so beat
        # is for the tenants' schedules only (the browserd.reconcile task still runs when sent).
        "beat_schedule": {},
        "task_default_queue": "normal",
        "task_create_missing_queues": False,
        "worker_hijack_root_logger": False,
        "worker_redirect_stdouts": False,
        # Scheduled crawls: RedBeat keeps schedules in this Redis; beat wakes at least every few
        # seconds so a schedule created through the API fires on time (daemon/schedules.py).
        **redbeat_config(settings.redis_url),
        "redbeat_key_prefix": "browserd:redbeat:",
        "beat_max_loop_interval": 5,
        "accept_content": ["json"],
        "task_serializer": "json",
    }


def create_app(settings: Settings | None = None) -> Celery:
    """The app; its configuration is read from the settings when first needed, not at import, so
    importing the kernel never fails on a bad environment (the command that needs it reports it)."""
    app = Celery("browserd", include=TASK_MODULES)
    app.add_defaults(lambda: celery_config(settings or get_settings()))
    return app


app = create_app()
_bound: str | None = None  # the broker URL ``bind`` last made the app's connections for


def bind(settings: Settings) -> None:
    """Publish to ``settings``' Redis from now on in this process. The app reads its configuration
    once, from the environment (``get_settings``): an API made in process with other settings (a
    test's) published wherever that first read pointed, another module's stopped Redis or Celery's
    default broker. A no-op when they agree and it was bound to it already. The broker's connection pool,
    the producers on it and this thread's result backend were made from the old URL: dropped."""
    global _bound
    url = kombu_url(settings.redis_url)
    if app.conf.broker_url == url and _bound == url:
        return
    app.conf.update(celery_config(settings))
    _bound = url
    pool, app._pool = app._pool, None  # Celery keeps no public way to re-point an app's broker
    if pool is not None:
        pool.force_close_all()
    app.amqp._producer_pool = None
    app._local.__dict__.pop("backend", None)
