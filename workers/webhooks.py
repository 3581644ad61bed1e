"""Webhooks: a signed POST when a job or a batch finishes, delivered by a task of its own.

Delivery is a separate Celery task (``browserd.deliver_webhook``, published by name with
``workers.jobs.queue.publish.send_webhook``) on its own queue, ``webhooks``,
so a slow or dead receiver never holds a job slot: the job finishes, the task is queued, and any
worker consuming ``webhooks`` (every ``browserd worker`` does by default) posts it. A failure
(connection error, timeout, 408, 429 or 5xx) raises ``WebhookFailed``, and the task is retried
on ``workers.jobs.webhooks.retries``' schedule (doubling waits up to 10 minutes apart, for
``BROWSERD_WEBHOOK_RETRY_SECONDS``, two hours by default); other 4xx answers are final (the receiver refused the payload). Each
attempt is counted by outcome in ``browserd_webhook_deliveries_total`` and timed in
``browserd_webhook_delivery_seconds`` (``workers.jobs.metrics``); deliveries waiting are the
``webhooks`` queue's depth.

Where it goes: the receiver's name is resolved at each attempt, every address it resolves to is
judged by ``workers.jobs.webhooks.destinations`` (public only, unless BROWSERD_WEBHOOK_ALLOWED_NETWORKS
opens a network), and the POST connects to the address that was judged, never to a second lookup.
Redirects are not followed: a 3xx is a failed delivery (a 302 must not turn the POST into a GET
to an internal URL); a refused address is final too.

Once per delivery id: the outbox (``workers.jobs.webhooks.outbox``) may queue one notification more than
once (a crash between publishing and clearing it); each carries its ``delivery_id`` (in the body,
``webhook-id`` and ``X-Browserd-Delivery``), and ``DeliveryGuard`` posts each id once.

Signature (`Standard Webhooks <https://www.standardwebhooks.com/>`_): with
``BROWSERD_WEBHOOK_SECRET`` set, each attempt carries ``webhook-id`` (the delivery id, the same on
every retry: receivers dedupe on it), ``webhook-timestamp`` (unix seconds of this attempt) and
``webhook-signature: v1,<base64 HMAC-SHA256(secret, "<id>.<timestamp>." + body)>``. The body
carries the id too (``delivery_id``). A receiver recomputes the signature over the raw body and
refuses timestamps more than ``TOLERANCE_SECONDS`` away from its clock, which stops replays;
``verify`` does both. Without a secret the POST is unsigned.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import ipaddress
import json
import logging
import socket
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import httpx
import redis
from celery import Task

from config import bind, get_settings
from config.masking import mask_url
from config.redis_client import connect_sync
from config.networks import IPAddress, IPNetwork
from workers.jobs.metrics import observe_webhook
from workers.jobs.queue.app import app
from workers.jobs.queue.names import DELIVER_WEBHOOK
from workers.jobs.store.keys import Keys
from workers.jobs.webhooks.destinations import address_refusal, networks
from workers.jobs.webhooks.models import GivenUpDelivery
from workers.jobs.webhooks.guard import DeliveryGuard
from workers.jobs.webhooks.retries import retry_countdown

log = logging.getLogger("browserd.webhooks")

ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"
EVENT_HEADER = "X-Browserd-Event"
DELIVERY_HEADER = "X-Browserd-Delivery"  # = webhook-id; kept for receivers that read it
SIGNATURE_VERSION = "v1"
TOLERANCE_SECONDS = 300  # Standard Webhooks' recommendation: 5 minutes either way
TIMEOUT_SECONDS = 10.0
RETRYABLE = {408, 425, 429}


class WebhookFailed(Exception):
    """This attempt did not reach the receiver or the receiver failed; worth retrying."""


class ReceiverRefused(Exception):
    """The receiver's URL or address is not one browserd may post to; never retried."""


def sign(secret: str, delivery_id: str, timestamp: str, body: bytes) -> str:
    content = f"{delivery_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret.encode(), content, hashlib.sha256).digest()
    return f"{SIGNATURE_VERSION},{base64.b64encode(digest).decode()}"


def verify(secret: str, headers: Mapping[str, str], body: bytes, *, tolerance: float = TOLERANCE_SECONDS,
           now: float | None = None) -> bool:
    """What a receiver does: the timestamp is within ``tolerance`` seconds of now, and one of the
    signatures (space-separated, as key rotation sends them) matches, compared in constant time."""
    lower = {k.lower(): v for k, v in headers.items()}
    delivery_id, timestamp = lower.get(ID_HEADER), lower.get(TIMESTAMP_HEADER, "")
    if not delivery_id or not timestamp.isdigit():
        return False
    if abs((time.time() if now is None else now) - int(timestamp)) > tolerance:
        return False
    expected = sign(secret, delivery_id, timestamp, body)
    return any(hmac.compare_digest(expected, given) for given in lower.get(SIGNATURE_HEADER, "").split())


def headers_for(event: str, delivery_id: str, body: bytes, secret: str | None) -> dict[str, str]:
    headers = {"Content-Type": "application/json", "User-Agent": "browserd-webhook/2", EVENT_HEADER: event,
               ID_HEADER: delivery_id}
    if secret:
        timestamp = str(int(time.time()))
        headers[TIMESTAMP_HEADER] = timestamp
        headers[SIGNATURE_HEADER] = sign(secret, delivery_id, timestamp, body)
    return headers


@dataclass(frozen=True)
class Receiver:
    """A receiver URL with the address judged for this attempt."""

    url: str
    host: str
    port: int
    address: IPAddress

    def pinned_url(self) -> str:
        """The URL with the judged address in place of the name (IPv6 in brackets)."""
        parts = urlsplit(self.url)
        literal = f"[{self.address}]" if self.address.version == 6 else str(self.address)
        return parts._replace(netloc=f"{literal}:{self.port}").geturl()


def resolve_receiver(url: str, allowed: list[IPNetwork]) -> Receiver:
    """Resolve the receiver's name now and judge every address; ``ReceiverRefused`` if any is closed
    (a name with one public and one private address could be steered to the private one)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ReceiverRefused(f"{url!r} is not an http(s) URL")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(parts.hostname, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise WebhookFailed(f"{parts.hostname}: cannot resolve ({exc})") from None
    addresses = [ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos]
    for address in addresses:
        reason = address_refusal(address, allowed)
        if reason:
            raise ReceiverRefused(f"{parts.hostname} resolves to {address}, {reason}; webhooks go only to public "
                                  "addresses unless BROWSERD_WEBHOOK_ALLOWED_NETWORKS opens the network")
    return Receiver(url, parts.hostname, port, addresses[0])


def post(receiver: Receiver, body: bytes, headers: dict[str, str]) -> int:
    """POST to the judged address, the name kept for Host and TLS (SNI and certificate check);
    redirects are answers, not instructions."""
    host_header = receiver.host if receiver.port in (80, 443) else f"{receiver.host}:{receiver.port}"
    try:
        with httpx.Client(timeout=TIMEOUT_SECONDS, follow_redirects=False, trust_env=False) as client:
            request = client.build_request("POST", receiver.pinned_url(), content=body,
                                           headers={**headers, "Host": host_header},
                                           extensions={"sni_hostname": receiver.host})
            reply = client.send(request)
    except httpx.HTTPError as exc:
        raise WebhookFailed(f"{receiver.url}: {exc}") from None
    return reply.status_code


_guard: DeliveryGuard | None = None


def guard() -> DeliveryGuard:
    """This process's dedupe of delivery ids (one Redis connection, made on first use)."""
    global _guard
    if _guard is None:
        settings = get_settings()
        client = connect_sync(settings.redis_url or "")
        _guard = DeliveryGuard(client, Keys(), settings.result_ttl)
    return _guard


@app.task(name=DELIVER_WEBHOOK, bind=True, ignore_result=True, acks_late=True, max_retries=None)
def deliver_webhook(self: Task, url: str, event: str, payload: dict[str, Any], delivery_id: str | None = None) -> int:
    """POST ``payload`` to ``url`` once per ``delivery_id``; returns the receiver's status (0: refused before
    connecting, or sent before). A failure is retried on the schedule of ``retries`` until it is
    spent; then the delivery is given up (the failure is raised).

    Without a ``delivery_id`` (a direct call) the Celery task id serves, the same across retries,
    and no dedupe across copies is kept.

    Every line it logs carries the delivery's fields (``delivery_id``, ``event``, ``url`` masked,
    ``attempt``, and the ``job_id``, ``batch_id``, ``tenant`` its payload names)."""
    with bind(**_fields(url, event, payload, delivery_id or self.request.id, self.request.retries + 1)):
        return _attempt(self, url, event, payload, delivery_id)


def _fields(url: str, event: str, payload: dict[str, Any], delivery_id: str | None, attempt: int) -> dict[str, Any]:
    fields: dict[str, Any] = {"delivery_id": delivery_id, "event": event, "url": mask_url(url), "attempt": attempt}
    if event.startswith("job."):
        fields["job_id"] = payload.get("id")
    batch = payload.get("batch") if event.startswith("job.") else payload.get("id")
    if batch:
        fields["batch_id"] = batch
    if payload.get("tenant"):
        fields["tenant"] = payload["tenant"]
    return fields


def _attempt(self: Task, url: str, event: str, payload: dict[str, Any], delivery_id: str | None) -> int:
    try:
        return _deliver(self, url, event, payload, delivery_id)
    except WebhookFailed as exc:
        countdown = retry_countdown(get_settings().webhook_retry_seconds, self.request.retries)
        if countdown is None:
            _keep(GivenUpDelivery(delivery_id=delivery_id or self.request.id or uuid.uuid4().hex, url=url, event=event,
                                  payload=payload, given_up_at=datetime.now(UTC), attempts=self.request.retries + 1,
                                  error=str(exc)))
            raise
        raise self.retry(exc=exc, countdown=countdown) from None


def _keep(delivery: GivenUpDelivery) -> None:
    try:
        guard().given_up(delivery)
        log.error("webhook %s (%s) to %s given up after %d attempts: kept for redelivery (browserd webhooks)",
                  delivery.event, delivery.delivery_id, delivery.url, delivery.attempts)
    except (redis.RedisError, ValueError) as exc:  # Redis away, or none configured (a direct call)
        log.error("webhook %s (%s) given up, and could not be kept: %s", delivery.event, delivery.delivery_id, exc)


def _deliver(self: Task, url: str, event: str, payload: dict[str, Any], delivery_id: str | None) -> int:
    if delivery_id is None:
        return _post(self, url, event, payload, self.request.id or uuid.uuid4().hex)
    once = guard()
    try:
        if once.sent(delivery_id):
            log.info("webhook %s already delivered; not sent again", delivery_id)
            return 0
        claimed = once.claim(delivery_id, TIMEOUT_SECONDS * 3)
    except redis.RedisError as exc:  # cannot tell whether it was sent: try again later, never drop it
        raise WebhookFailed(f"webhook {delivery_id}: Redis unavailable ({exc})") from None
    if not claimed:
        raise WebhookFailed(f"webhook {delivery_id} is being sent by another copy")  # look again later
    try:
        status = _post(self, url, event, payload, delivery_id)
    except BaseException:
        with contextlib.suppress(redis.RedisError):
            once.release(delivery_id)
        raise
    try:
        once.done(delivery_id)
    except redis.RedisError as exc:  # delivered; only a later copy could repeat it
        log.warning("webhook %s delivered but not marked sent: %s", delivery_id, exc)
    return status


def _post(self: Task, url: str, event: str, payload: dict[str, Any], delivery_id: str) -> int:
    """One attempt: resolve and judge the receiver, POST to the judged address, count the outcome."""
    settings = get_settings()
    secret = settings.webhook_secret.get_secret_value() if settings.webhook_secret else None
    body = json.dumps({"event": event, "delivery_id": delivery_id, "sent_at": datetime.now(UTC).isoformat(),
                       **payload}, separators=(",", ":"), default=str).encode()
    attempt = self.request.retries + 1
    last = retry_countdown(settings.webhook_retry_seconds, self.request.retries) is None
    failed = "given_up" if last else "retrying"  # what a failure of this attempt is
    started = time.monotonic()
    try:
        receiver = resolve_receiver(url, networks(settings.webhook_allowed_networks))
        headers = {**headers_for(event, delivery_id, body, secret), DELIVERY_HEADER: delivery_id}
        status = post(receiver, body, headers)
    except ReceiverRefused as exc:
        observe_webhook("refused", time.monotonic() - started)
        log.error("webhook %s (%s) not sent: %s", event, delivery_id, exc)
        return 0
    except WebhookFailed as exc:
        observe_webhook(failed, time.monotonic() - started)
        log.warning("webhook %s (%s) failed (attempt %d): %s", event, delivery_id, attempt, exc)
        raise
    seconds = time.monotonic() - started
    shown = mask_url(url)  # a receiver URL may carry its own token (?token=, ?sig=): never in a log
    if status >= 500 or status in RETRYABLE:
        observe_webhook(failed, seconds)
        log.warning("webhook %s (%s) to %s: HTTP %d (attempt %d)", event, delivery_id, shown, status, attempt)
        raise WebhookFailed(f"{shown} answered HTTP {status}")
    if 300 <= status < 400:
        observe_webhook("refused", seconds)
        log.error("webhook %s (%s) to %s answered a redirect (HTTP %d); redirects are not followed, not retried",
                  event, delivery_id, shown, status)
    elif status >= 400:
        observe_webhook("refused", seconds)
        log.error("webhook %s (%s) to %s refused with HTTP %d; not retried", event, delivery_id, shown, status)
    else:
        observe_webhook("delivered", seconds)
    return status
