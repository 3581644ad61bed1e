"""How ``browserd serve`` runs the app under uvicorn: request heads have a deadline, and the access
log never writes a token.

uvicorn (0.54, h11) waits for a request head (request line and headers) for as long as the client
keeps the connection open: its keep-alive timeout is armed only after a response and disarmed by
the next byte, so a client that sends a head one byte at a time, or nothing at all, holds a
connection for ever (slowloris). ``HeadDeadline`` closes a connection whose head is not complete
``HEAD_SECONDS`` after it opened or after its previous response, however the bytes trickle in.
Bodies are not covered (a slow body holds one request, bounded by ``BROWSERD_MAX_REQUEST_BYTES``).

At DEBUG the access log writes each request's target, and a console link carries ``?token=``:
``RedactAccessLog`` masks secret query parameters (``config.masking``) before the line is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
from typing import Any

import h11
import uvicorn
from uvicorn.main import STARTUP_FAILURE
from uvicorn.protocols.http.h11_impl import H11Protocol

from config import Settings
from config.masking import mask_url

HEAD_SECONDS = 10.0
"""A request head must be complete this long after the connection opened or its last response ended."""


class HeadDeadline(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request head is late (see the module)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # the head is in: the request runs on its own time
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
            self._arm()  # the next request's head on this keep-alive connection

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _arm(self) -> None:
        self._disarm()
        self._head_deadline = self.loop.call_later(HEAD_SECONDS, self._late)

    def _disarm(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _late(self) -> None:
        self._head_deadline = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.logger.debug("closed a connection whose request head was not complete within %gs", HEAD_SECONDS)
            self.transport.close()


class RedactAccessLog(logging.Filter):
    """Masks passwords and secret query parameters in the access log's arguments (the request target)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.args, tuple):
            record.args = tuple(mask_url(arg) if isinstance(arg, str) else arg for arg in record.args)
        return True


GC_YOUNG_OBJECTS = 50_000
"""Container allocations between two young-generation collections (CPython's default is 700).

A large batch builds ~30 tracked objects per job (a ``JobSpec`` and its option models), all alive
until the batch is written; at the default threshold the collector ran a full collection every few
thousand jobs, each walking every spec built so far and the API's own ~180,000 objects: about
half of the CPU that checking 10,000 jobs took. Reference counting frees the rest as before; only
cycles wait, for at most this many allocations (a few MB)."""


def tune_gc() -> None:
    """Freeze what startup built (modules, schemas, the app: alive for good, never worth walking
    again) and collect the young generation less often (``GC_YOUNG_OBJECTS``)."""
    gc.collect()
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_OBJECTS, middle, old)


def run(app: Any, settings: Settings) -> None:
    """Serve ``app`` on ``settings.api_host``:``settings.api_port`` until stopped."""
    tune_gc()
    config = uvicorn.Config(app, host=settings.api_host, port=settings.api_port, log_level=settings.log_level.lower(),
                            access_log=settings.log_level == "DEBUG", http=HeadDeadline)
    logging.getLogger("uvicorn.access").addFilter(RedactAccessLog())  # after Config set up uvicorn's loggers
    server = uvicorn.Server(config)
    with contextlib.suppress(KeyboardInterrupt):
        server.run()
    if not server.started:  # the port was taken, or the app's startup failed: exit as uvicorn.run does
        raise SystemExit(STARTUP_FAILURE)
