"""``/v1/webhooks/given-up``: deliveries given up after their last retry; list them, redeliver one or all."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query
from pydantic import BaseModel

from daemon.api.deps import ERRORS, Store, admin_only
from daemon.api.errors import ApiError
from workers.jobs.webhooks.given_up import GivenUpStore
from workers.jobs.webhooks.models import LIST_MAX, GivenUpDelivery

router = APIRouter(prefix="/v1", dependencies=[Depends(admin_only)], responses=ERRORS, tags=["webhooks"])

DeliveryId = Annotated[str, Path(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9._:-]+$")]


class Redelivered(BaseModel):
    redelivered: int


@router.get("/webhooks/given-up", response_model=list[GivenUpDelivery])
async def list_given_up(store: Store, limit: Annotated[int, Query(ge=1, le=LIST_MAX)] = 100) -> list[GivenUpDelivery]:
    """Deliveries given up after their last retry (``BROWSERD_WEBHOOK_RETRY_SECONDS``), newest first."""
    return await GivenUpStore(store).list(limit)


@router.post("/webhooks/given-up/redeliver", status_code=202, response_model=Redelivered)
async def redeliver_all(store: Store) -> Redelivered:
    """Queue every given-up delivery again (same delivery ids), for a receiver that is back."""
    return Redelivered(redelivered=await GivenUpStore(store).redeliver_all())


@router.post("/webhooks/given-up/{delivery_id}/redeliver", status_code=202, response_model=GivenUpDelivery)
async def redeliver(delivery_id: DeliveryId, store: Store) -> GivenUpDelivery:
    """Queue one given-up delivery again (same delivery id)."""
    delivery = await GivenUpStore(store).redeliver(delivery_id)
    if delivery is None:
        raise ApiError(404, "not_found", f"no given-up webhook delivery with id {delivery_id!r}")
    return delivery
