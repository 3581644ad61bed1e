"""``browserd beat``: Celery beat with RedBeat's scheduler, firing the schedules kept in Redis."""

from __future__ import annotations

import argparse

from config import load_settings


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("beat", help="run the scheduler that fires scheduled crawls (run any number; one is active)")
    p.add_argument("--max-interval", type=float, default=5.0,
                   help="longest sleep between looks at the schedules, in seconds (new schedules are seen this fast)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    settings = load_settings()
    from workers.celery_app import app, broker_url

    broker_url(settings)
    # RedBeat's lock (held in Redis, refreshed every tick) lets only one beat send tasks; a second
    # one waits for the lock and takes over when the first stops or dies.
    app.conf.beat_max_loop_interval = args.max_interval
    app.conf.redbeat_lock_timeout = max(10, int(args.max_interval * 5))
    app.start(["beat", "--scheduler=redbeat.RedBeatScheduler", f"--loglevel={settings.log_level}",
               f"--max-interval={args.max_interval:g}", "--pidfile="])
    return 0
