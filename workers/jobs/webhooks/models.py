"""The webhooks' pure models (no Redis, no Celery): what the API answers and the client reads."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

LIST_MAX = 500  # deliveries one listing returns at most (newest first)


class GivenUpDelivery(BaseModel):
    """One notification a receiver never took: where it went, what it said, and why it stopped."""

    delivery_id: str
    url: str
    event: str
    payload: dict[str, Any] = Field(description="The notification's body (its job or batch), as it was sent.")
    given_up_at: datetime
    attempts: int = Field(description="Attempts made, the last one included.")
    error: str = Field(description="What the last attempt met (the receiver's status or the connection error).")
