"""Taking over a job's browser from the console: one controller at a time, input events to the worker.

An operator who takes control of a running job pauses it (the agent stops between steps) and holds
``controller`` (``SET NX`` with a TTL the console renews, so a closed tab lets go within
``CONTROL_TTL``). The controller's mouse, wheel and keyboard events are published on the job's
``control`` channel; the worker running the job (``workers.pipeline.features.takeover``) replays
them on the job's tab with CDP ``Input`` and streams the live view faster meanwhile. A viewer, or a
second operator, is refused: only the holder's events are published. Handing back releases control
(the job's events record who held it and how long) and resumes the agent, which is told what the
human did (how many clicks and keys, the URL now), never what was typed.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, Field, TypeAdapter

from workers.jobs.errors import JobsError
from workers.jobs.store.jobs import JobStore

CONTROL_TTL = 15  # seconds control lasts unless renewed (the console renews it every few seconds)
MAX_EVENTS = 64  # input events one post carries
MAX_COORD = 10_000  # CSS pixels a wheel event scrolls at most


class MouseEvent(BaseModel):
    kind: Literal["mouse"] = "mouse"
    type: Literal["mousePressed", "mouseReleased", "mouseMoved"]
    x: float = Field(ge=0, le=1, description="Where, as a fraction of the viewport's width (the live view's image).")
    y: float = Field(ge=0, le=1, description="As a fraction of the viewport's height.")
    button: Literal["left", "middle", "right", "none"] = "left"
    clicks: int = Field(1, ge=0, le=3)
    sent_at: float | None = Field(None, description="When the console sent it (epoch seconds): latency measures.")


class WheelEvent(BaseModel):
    kind: Literal["wheel"] = "wheel"
    x: float = Field(ge=0, le=1)
    y: float = Field(ge=0, le=1)
    dx: float = Field(0, ge=-MAX_COORD, le=MAX_COORD)
    dy: float = Field(0, ge=-MAX_COORD, le=MAX_COORD)
    sent_at: float | None = None


class KeyEvent(BaseModel):
    kind: Literal["key"] = "key"
    type: Literal["keyDown", "keyUp"]
    key: str = Field(min_length=1, max_length=32, description="A DOM key value: 'a', 'Enter', 'ArrowLeft'.")
    code: str = Field("", max_length=32)
    text: str = Field("", max_length=4, description="The character typed, for a printable key on keyDown.")
    modifiers: int = Field(0, ge=0, le=15)
    sent_at: float | None = None


InputEvent = Annotated[MouseEvent | WheelEvent | KeyEvent, Field(discriminator="kind")]
EVENTS = TypeAdapter(list[InputEvent])


class ControlRefused(JobsError):
    """Another operator controls the job's browser (or the caller does not): ``holder`` says who."""

    def __init__(self, holder: str) -> None:
        super().__init__(f"{holder} controls this job's browser now; only one operator may at a time")
        self.holder = holder


@dataclass(frozen=True)
class Controller:
    """Who holds a job's browser, since when (epoch seconds); ``token`` names their console session."""

    who: str
    token: str
    since: float


async def holder(store: JobStore, job_id: str) -> Controller | None:
    raw = await store.redis.get(store.keys.controller(job_id))
    if not raw:
        return None
    held = json.loads(raw)
    return Controller(held["who"], held["token"], float(held["since"]))


async def take(store: JobStore, job_id: str, who: str, token: str) -> Controller:
    """Take (or renew) control for console session ``token``; ``ControlRefused`` when another holds it."""
    key = store.keys.controller(job_id)
    mine = Controller(who, token, time.time())
    if await store.redis.set(key, json.dumps(mine.__dict__), nx=True, ex=CONTROL_TTL):
        return mine
    held = await holder(store, job_id)
    if held is None:  # it lapsed between the two calls: try once more
        return await take(store, job_id, who, token)
    if held.token != token:
        raise ControlRefused(held.who)
    await store.redis.expire(key, CONTROL_TTL)
    return held


async def release(store: JobStore, job_id: str, token: str) -> Controller | None:
    """Let go of control held by ``token``; the control released (None: it held none)."""
    held = await holder(store, job_id)
    if held is None or held.token != token:
        return None
    await store.redis.delete(store.keys.controller(job_id))
    return held


async def send(store: JobStore, job_id: str, token: str, events: list[MouseEvent | WheelEvent | KeyEvent]) -> None:
    """Publish ``events`` to the worker if ``token`` controls the job (else ``ControlRefused``); sending
    renews control, as the console's periodic renewal does."""
    held = await holder(store, job_id)
    if held is None or held.token != token:
        raise ControlRefused(held.who if held else "nobody (take control first)")
    payload = json.dumps([event.model_dump(exclude_none=True) for event in events])
    async with store.redis.pipeline(transaction=False) as pipe:
        pipe.publish(store.keys.control(job_id), payload)
        pipe.expire(store.keys.controller(job_id), CONTROL_TTL)
        await pipe.execute()
