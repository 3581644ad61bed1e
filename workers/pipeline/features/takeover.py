"""Takeover: an operator's mouse, wheel and keyboard, from the console to the job's tab.

Around each run (``during``) a poller looks every ``POLL_SECONDS`` whether someone controls the job
(``workers.jobs.takeover``), but only while the job is paused (taking control pauses it first, and
the worker's ticker reads the pause flag): a running job costs Redis nothing here. While someone does, it listens on the job's ``control`` channel and
replays each event on the job's current tab with CDP ``Input.dispatchMouseEvent`` /
``dispatchKeyEvent`` (the agent is paused meanwhile: taking control pauses the job). When control
ends, the job's events record who held it and for how long, and the agent is told, before its next
step, how many clicks, scrolls and keys the human sent and the URL the tab shows now; never what
was typed. A failure here never touches the job.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Callable
from typing import Any

import cdp
from config.tasks import cancel_and_wait
from workers.jobs.model.record import EventType
from workers.jobs.store.jobs import JobStore
from workers.jobs.takeover import EVENTS, Controller, KeyEvent, MouseEvent, holder
from workers.pipeline.feature import Feature
from workers.pipeline.records import RunRecords
from workers.pipeline.run import JobRun

log = logging.getLogger("browserd.worker")

POLL_SECONDS = 0.5
WHEEL = "mouseWheel"


class Takeovers(Feature):
    def during(self, run: JobRun) -> contextlib.AbstractAsyncContextManager[object] | None:
        store, lease = self.services.store, run.lease
        if store is None or lease is None:
            return None
        return Takeover(store, self.services.records, run, lambda: lease.page)


class Takeover:
    def __init__(self, store: JobStore, records: RunRecords, run: JobRun, current: Callable[[], cdp.Page]) -> None:
        self.store, self.records, self.run, self.current = store, records, run, current
        self.held: Controller | None = None
        self.counts = {"clicks": 0, "scrolls": 0, "keys": 0}
        self._task: asyncio.Task[None] | None = None
        self._listener: asyncio.Task[None] | None = None
        self._stopping = False

    async def __aenter__(self) -> Takeover:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"takeover-{self.run.job_id}")
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stopping = True
        for task in (self._listener, self._task):
            if task is not None:
                await cancel_and_wait(task, "takeover")

    async def _run(self) -> None:
        while not self._stopping:
            if not self.run.paused and self.held is None:  # nobody can hold an unpaused job's browser
                await asyncio.sleep(POLL_SECONDS)
                continue
            try:
                held = await holder(self.store, self.run.job_id)
                if held is not None and self.held is None:
                    await self._started(held)
                elif held is None and self.held is not None:
                    await self._ended()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # Redis or the browser went away: the job's own code will notice
                log.debug("takeover of job %s: %s", self.run.job_id, exc)
            await asyncio.sleep(POLL_SECONDS)

    async def _started(self, held: Controller) -> None:
        self.held, self.counts = held, dict.fromkeys(self.counts, 0)
        ready = asyncio.Event()
        self._listener = asyncio.get_running_loop().create_task(self._listen(ready), name="takeover-listener")
        await asyncio.wait_for(ready.wait(), 5)
        await self._event({"state": "started", "who": held.who, "at": held.since})
        log.info("job %s: %s took control of the browser", self.run.job_id, held.who)

    async def _ended(self) -> None:
        held, self.held = self.held, None
        if self._listener is not None:
            await cancel_and_wait(self._listener, "takeover listener")
            self._listener = None
        assert held is not None
        seconds = round(time.time() - held.since, 1)
        url = await self.current().url()
        await self._event({"state": "ended", "who": held.who, "seconds": seconds, **self.counts})
        session = self.run.session
        if session is not None:
            session.pause.human.notes.append(
                f"A human controlled the browser for {seconds:.0f}s while you were paused ({self.counts['clicks']} "
                f"clicks, {self.counts['scrolls']} scrolls, {self.counts['keys']} keys; what they typed is not "
                f"shown). The tab now shows {session.hidden.scrub(url)}. Look at the page again before you act.")
        log.info("job %s: %s handed the browser back after %ss", self.run.job_id, held.who, seconds)

    async def _event(self, data: dict[str, Any]) -> None:
        await self.records.event(self.run.job_id, self.run.attempt, EventType.takeover, json.dumps(data))

    async def _listen(self, ready: asyncio.Event) -> None:
        pubsub = self.store.redis.pubsub()
        await pubsub.subscribe(self.store.keys.control(self.run.job_id))
        ready.set()
        try:
            while True:
                message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
                if message is None:
                    continue
                try:
                    page = self.current()
                    events = EVENTS.validate_json(message["data"])
                    size = {"clientWidth": 0, "clientHeight": 0}  # keys need no position: no round trip for it
                    if any(not isinstance(event, KeyEvent) for event in events):
                        size = (await page.session.send("Page.getLayoutMetrics"))["cssLayoutViewport"]
                    for event in events:
                        await self._dispatch(page.session, event, size["clientWidth"], size["clientHeight"])
                except Exception as exc:  # a closed tab, a bad event: the next one may do
                    log.debug("takeover of job %s: an event was not sent: %s", self.run.job_id, exc)
        finally:
            with contextlib.suppress(Exception):
                await pubsub.unsubscribe()
                await pubsub.aclose()

    async def _dispatch(self, session: cdp.CDPSession, event: Any, width: float, height: float) -> None:
        """One event on the tab; its position is a fraction of the viewport (``width`` x ``height`` CSS px)."""
        if isinstance(event, MouseEvent):
            params: dict[str, Any] = {"type": event.type, "x": event.x * width, "y": event.y * height}
            if event.type != "mouseMoved":
                params.update(button=event.button, clickCount=event.clicks, buttons=1 if event.type == "mousePressed" else 0)
                self.counts["clicks"] += event.type == "mousePressed"
            await session.send("Input.dispatchMouseEvent", params)
        elif isinstance(event, KeyEvent):
            params = {"type": event.type, "key": event.key, "code": event.code, "modifiers": event.modifiers}
            if event.text and event.type == "keyDown":
                params["text"] = event.text
            self.counts["keys"] += event.type == "keyDown"
            await session.send("Input.dispatchKeyEvent", params)
        else:
            self.counts["scrolls"] += 1
            await session.send("Input.dispatchMouseEvent", {"type": WHEEL, "x": event.x * width, "y": event.y * height,
                                                            "deltaX": event.dx, "deltaY": event.dy})
