"""``browserd beat``: Celery beat with RedBeat's scheduler, firing the schedules kept in Redis."""

from __future__ import annotations

import argparse
import logging
import time

from redis.exceptions import RedisError

from config import load_settings

log = logging.getLogger("browserd.beat")

REDIS_PATIENCE = 60  # seconds RedBeat keeps retrying a Redis call
RESTART_SECONDS = 2.0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("beat", help="run the scheduler that fires scheduled crawls (run any number; one is active)")
    p.add_argument("--max-interval", type=float, default=5.0,
                   help="longest sleep between looks at the schedules, in seconds (new schedules are seen this fast)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    settings = load_settings()
    from workers.jobs.queue.app import app, broker_url
    from workers.jobs.schedules.stopping import QuietRedisFailure, StoppableBeat, take_signals

    take_signals()  # the first SIGTERM stops beat, within its grace period, even while it restarts
    app.Beat = app.subclass_with_self(StoppableBeat)
    logging.getLogger("celery.beat").addFilter(QuietRedisFailure())

    broker_url(settings)
    # RedBeat's lock (held in Redis, refreshed every tick) lets only one beat send tasks; a second
    # one waits for the lock and takes over when the first stops or dies.
    app.conf.beat_max_loop_interval = args.max_interval
    app.conf.redbeat_lock_timeout = max(10, int(args.max_interval * 5))
    # RedBeat retries its Redis calls for this long (a restart of Redis is a pause, not an exit)...
    app.conf.redbeat_redis_options = {**(app.conf.get("redbeat_redis_options") or {}), "retry_period": REDIS_PATIENCE}
    argv = ["beat", "--scheduler=redbeat.RedBeatScheduler", f"--loglevel={settings.log_level}",
            f"--max-interval={args.max_interval:g}", "--pidfile="]
    while True:  # ...and what escapes it anyway (its lock's own calls) restarts beat, not the operator
        try:
            app.start(argv)
            return 0
        except RedisError as exc:
            log.warning("beat stopped: %s: %s; starting again in %gs", type(exc).__name__, exc, RESTART_SECONDS)
            time.sleep(RESTART_SECONDS)
