"""Webhooks: a signed POST when a job or a batch finishes, delivered by a task of its own.

Delivery is a separate Celery task (``browserd.deliver_webhook``) on its own queue, ``webhooks``,
so a slow or dead receiver never holds a job slot: the job finishes, the task is queued, and any
worker consuming ``webhooks`` (every ``browserd worker`` does by default) posts it. A failure
(connection error, timeout, 408, 429 or 5xx) raises ``WebhookFailed``, and Celery's own retry
machinery (``autoretry_for`` with exponential backoff and jitter) tries again, up to
``MAX_RETRIES`` times; other 4xx answers are final (the receiver refused the payload).

Signature: with ``BROWSERD_WEBHOOK_SECRET`` set, each attempt carries
``X-Browserd-Timestamp: <unix seconds>`` and
``X-Browserd-Signature: sha256=<hex HMAC-SHA256(secret, "<timestamp>." + body)>``. A receiver
recomputes it over the raw body (``verify`` does exactly that) and rejects old timestamps to stop
replays. Without a secret the POST is unsigned.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime
from typing import Any

from celery import Task

from config import get_settings
from workers.celery_app import app

log = logging.getLogger("browserd.webhooks")

TASK_NAME = "browserd.deliver_webhook"
QUEUE = "webhooks"
SIGNATURE_HEADER = "X-Browserd-Signature"
TIMESTAMP_HEADER = "X-Browserd-Timestamp"
EVENT_HEADER = "X-Browserd-Event"
TIMEOUT_SECONDS = 10.0
MAX_RETRIES = 8  # with backoff 1, 2, 4, ... capped at 10 minutes: about 20 minutes of trying
RETRYABLE = {408, 425, 429}


class WebhookFailed(Exception):
    """This attempt did not reach the receiver or the receiver failed; worth retrying."""


def sign(secret: str, timestamp: str, body: bytes) -> str:
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def verify(secret: str, timestamp: str, body: bytes, signature: str) -> bool:
    """What a receiver does: recompute the signature over the raw body, compare in constant time."""
    return hmac.compare_digest(sign(secret, timestamp, body), signature)


def headers_for(event: str, body: bytes, secret: str | None) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "User-Agent": "browserd-webhook/1", EVENT_HEADER: event}
    if secret:
        timestamp = str(int(time.time()))
        headers[TIMESTAMP_HEADER] = timestamp
        headers[SIGNATURE_HEADER] = sign(secret, timestamp, body)
    return headers


@app.task(name=TASK_NAME, bind=True, ignore_result=True, acks_late=True, autoretry_for=(WebhookFailed,),
          retry_backoff=1, retry_backoff_max=600, retry_jitter=True, max_retries=MAX_RETRIES)
def deliver_webhook(self: Task, url: str, event: str, payload: dict[str, Any]) -> int:
    """POST ``payload`` to ``url``; returns the receiver's status."""
    settings = get_settings()
    secret = settings.webhook_secret.get_secret_value() if settings.webhook_secret else None
    body = json.dumps({"event": event, "sent_at": datetime.now(UTC).isoformat(), **payload},
                      separators=(",", ":"), default=str).encode()
    request = urllib.request.Request(url, data=body, method="POST", headers=headers_for(event, body, secret))
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as reply:
            status = reply.status
    except urllib.error.HTTPError as exc:
        status = exc.code
    except (urllib.error.URLError, OSError) as exc:
        log.warning("webhook %s to %s failed (attempt %d): %s", event, url, self.request.retries + 1, exc)
        raise WebhookFailed(f"{url}: {exc}") from None
    if status >= 500 or status in RETRYABLE:
        log.warning("webhook %s to %s: HTTP %d (attempt %d)", event, url, status, self.request.retries + 1)
        raise WebhookFailed(f"{url} answered HTTP {status}")
    if status >= 400:
        log.error("webhook %s to %s refused with HTTP %d; not retried", event, url, status)
    return status


def send_webhook(url: str, event: str, payload: dict[str, Any]) -> None:
    """Queue one delivery (a publish to Redis; call it off the event loop)."""
    deliver_webhook.apply_async((url, event, payload), queue=QUEUE)
