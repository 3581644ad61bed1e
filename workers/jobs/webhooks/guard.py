"""The webhook task's side of the outbox: each delivery id is sent once, however often it is queued.

A crash between publishing an outbox entry and removing it publishes it twice (``outbox``); the
receiver still gets it once, because the task checks here (blocking Redis calls: Celery's thread).
"""

from __future__ import annotations

import redis

from workers.jobs.store.keys import Keys
from workers.jobs.webhooks.models import GivenUpDelivery


class DeliveryGuard:
    """Sends each delivery id once (the webhook task's side of the outbox; blocking Redis calls).

    ``sent`` is marked after the receiver answered (kept ``ttl`` seconds); ``claim`` keeps two
    copies of one delivery from posting at the same moment.
    """

    def __init__(self, client: redis.Redis, keys: Keys, ttl: int) -> None:
        self.redis = client
        self.keys = keys
        self.ttl = ttl

    def sent(self, delivery_id: str) -> bool:
        return bool(self.redis.exists(self.keys.webhook_sent(delivery_id)))

    def claim(self, delivery_id: str, seconds: float) -> bool:
        return bool(self.redis.set(self.keys.webhook_trying(delivery_id), "1", nx=True, ex=max(1, int(seconds))))

    def done(self, delivery_id: str) -> None:
        with self.redis.pipeline(transaction=False) as pipe:
            pipe.set(self.keys.webhook_sent(delivery_id), "sent", ex=self.ttl)
            pipe.delete(self.keys.webhook_trying(delivery_id))
            pipe.execute()

    def release(self, delivery_id: str) -> None:
        self.redis.delete(self.keys.webhook_trying(delivery_id))

    def given_up(self, delivery: GivenUpDelivery) -> None:
        """Keep a delivery given up after its last retry, for an operator to redeliver (``given_up``)."""
        with self.redis.pipeline(transaction=True) as pipe:
            pipe.hset(self.keys.webhooks_given_up, delivery.delivery_id, delivery.model_dump_json())
            pipe.zadd(self.keys.webhooks_given_up_order, {delivery.delivery_id: delivery.given_up_at.timestamp()})
            pipe.execute()
