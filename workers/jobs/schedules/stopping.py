"""How ``browserd beat`` stops: on the first SIGTERM/SIGINT, within ``STOP_GRACE_SECONDS``, whatever Redis does.

Celery's own handler syncs the schedule with Redis before exiting; with Redis away RedBeat retries
that call for ``redbeat_redis_options.retry_period``, and what escapes it restarted beat, so the signal
was ignored for minutes (issue 29) and docker stop or systemd waited for their SIGKILL.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from types import FrameType

from celery.apps.beat import Beat
from redis.exceptions import RedisError

log = logging.getLogger("browserd.beat")

# Time to sync and release RedBeat's lock when Redis answers; with it away, the process ends anyway.
STOP_GRACE_SECONDS = 3.0


def stop(signum: int, _frame: FrameType | None) -> None:
    """A graceful exit (SystemExit), cut short after ``STOP_GRACE_SECONDS``."""
    log.warning("beat: %s received, stopping (at most %gs)", signal.Signals(signum).name, STOP_GRACE_SECONDS)
    timer = threading.Timer(STOP_GRACE_SECONDS, os._exit, args=(0,))
    timer.daemon = True
    timer.start()
    raise SystemExit(0)


def take_signals() -> None:
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)


class StoppableBeat(Beat):
    """Celery's beat with our signal handlers in place of its Redis-bound sync handler."""

    def install_sync_handler(self, service: object) -> None:
        take_signals()


class QuietRedisFailure(logging.Filter):
    """Celery logs beat's Redis failure as a CRITICAL with a 100-line traceback; ``browserd beat`` says
    it in one line (``beat stopped: ...; starting again``), so the traceback is dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, RedisError)
