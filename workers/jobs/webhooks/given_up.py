"""Webhook deliveries given up after their last retry: kept until an operator redelivers them.

A receiver down longer than ``BROWSERD_WEBHOOK_RETRY_SECONDS`` used to lose every notification
sent meanwhile, with nothing to say what was dropped (issue 25). The webhook task records each
delivery it gives up here (``DeliveryGuard.given_up``, a blocking call from Celery's thread); the
API lists them (``GET /v1/webhooks/given-up``) and queues them again, one or all, once the
receiver is back (``browserd webhooks``). A redelivery keeps its delivery id, so a receiver that
did get an earlier attempt dedupes it.
"""

from __future__ import annotations

import asyncio
from workers.jobs.queue.publish import send_webhook
from workers.jobs.store.jobs import JobStore
from workers.jobs.webhooks.models import LIST_MAX, GivenUpDelivery

class GivenUpStore:
    """The API's side: list and redeliver (async Redis)."""

    def __init__(self, store: JobStore) -> None:
        self.redis, self.keys = store.redis, store.keys

    async def list(self, limit: int = LIST_MAX) -> list[GivenUpDelivery]:
        ids = await self.redis.zrevrange(self.keys.webhooks_given_up_order, 0, max(1, min(limit, LIST_MAX)) - 1)
        raw = await self.redis.hmget(self.keys.webhooks_given_up, ids) if ids else []
        return [GivenUpDelivery.model_validate_json(item) for item in raw if item]

    async def redeliver(self, delivery_id: str) -> GivenUpDelivery | None:
        """Queue ``delivery_id`` again and forget it (it is recorded anew if it fails again); None
        when no such delivery was given up."""
        raw = await self.redis.hget(self.keys.webhooks_given_up, delivery_id)
        if raw is None:
            return None
        delivery = GivenUpDelivery.model_validate_json(raw)
        await asyncio.to_thread(send_webhook, delivery.url, delivery.event, delivery.payload, delivery.delivery_id)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.hdel(self.keys.webhooks_given_up, delivery_id)
            pipe.zrem(self.keys.webhooks_given_up_order, delivery_id)
            await pipe.execute()
        return delivery

    async def redeliver_all(self) -> int:
        done = 0
        for delivery_id in await self.redis.zrange(self.keys.webhooks_given_up_order, 0, -1):
            done += await self.redeliver(delivery_id) is not None
        return done
