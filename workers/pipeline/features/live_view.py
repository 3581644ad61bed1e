"""The live view: Chromium's screencast of a job's tab, streamed only while someone watches.

Around each run (``during``) a poller asks the store every second whether someone watches
(``workers.jobs.live``); when so it starts ``Page.startScreencast`` on the job's current tab, acks
every frame (Chrome sends no more until acked) and publishes at most ``MAX_FPS`` of them
(``CONTROLLED_FPS`` while an operator controls the tab); when the
job switches to another tab (or opens one, or closes the one shown) the screencast follows it
within a second; when nobody watches any more, or the run ends, it stops. A failure here never
touches the job, and its cleanup never holds the job's result back: the pipeline records the
result first, and the poller's end is bounded (``config.tasks.cancel_and_wait``) even if a library swallows its
cancel. A run without a shared store has no live view.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from typing import Any

import cdp
from config.tasks import cancel_and_wait
from workers.jobs.live import publish_frame, watched
from workers.jobs.takeover import holder
from workers.jobs.store.jobs import JobStore
from workers.pipeline.feature import Feature
from workers.pipeline.run import JobRun

log = logging.getLogger("browserd.worker")

POLL_SECONDS = 1.0
MAX_FPS = 4.0
CONTROLLED_FPS = 12.0  # while an operator controls the tab (a takeover), who needs to see what they do
SCREENCAST = {"format": "jpeg", "quality": 60, "maxWidth": 1024, "maxHeight": 768, "everyNthFrame": 1}


class LiveViews(Feature):
    def during(self, run: JobRun) -> contextlib.AbstractAsyncContextManager[object] | None:
        store, lease = self.services.store, run.lease
        if store is None or lease is None:
            return None
        return LiveView(store, run.job_id, lambda: lease.page)


class LiveView:
    """``current`` says which tab the job is on now (``lambda: lease.page``): the one shown."""

    def __init__(self, store: JobStore, job_id: str, current: Callable[[], cdp.Page]) -> None:
        self.store, self.job_id, self.current = store, job_id, current
        self.page: cdp.Page | None = None  # the tab being streamed
        self._task: asyncio.Task[None] | None = None
        self._off: Callable[[], None] | None = None
        self._last = 0.0
        self.fps = MAX_FPS
        self._stopping = False

    async def __aenter__(self) -> LiveView:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"live-view-{self.job_id}")
        return self

    async def __aexit__(self, *exc: object) -> None:
        self._stopping = True  # the poller's loop ends at its next turn even if a cancel is swallowed
        if self._task is not None:
            await cancel_and_wait(self._task, "live view poller")
        if self._off is not None:  # the lease is being released: no stop command needed
            self._off()
            self._off = None

    async def _run(self) -> None:
        while not self._stopping:
            try:
                wanted = await watched(self.store, self.job_id)
                self.fps = CONTROLLED_FPS if wanted and await holder(self.store, self.job_id) else MAX_FPS
                if wanted and self._off is None:
                    await self._start()
                elif wanted and self.page is not self.current():  # the job moved to another tab
                    await self._stop()
                    await self._start()
                elif not wanted and self._off is not None:
                    await self._stop()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the browser or Redis went away: the job's own code will notice
                log.debug("live view of job %s: %s", self.job_id, exc)
            await asyncio.sleep(POLL_SECONDS)

    async def _start(self) -> None:
        page = self.page = self.current()
        self._off = page.session.on("Page.screencastFrame", lambda params: self._frame(page, params))
        await page.session.send("Page.startScreencast", SCREENCAST)
        log.info("live view of job %s: streaming %s", self.job_id, page.target_id)

    async def _stop(self) -> None:
        if self._off is not None:
            self._off()
            self._off = None
        page, self.page = self.page, None
        if page is not None and page.session.failure is None:  # a closed tab has nothing to stop
            with contextlib.suppress(cdp.CDPException):
                await page.session.send("Page.stopScreencast")
        log.info("live view of job %s: stopped", self.job_id)

    async def _frame(self, page: cdp.Page, params: dict[str, Any]) -> None:
        with contextlib.suppress(Exception):
            await page.session.send("Page.screencastFrameAck", {"sessionId": params["sessionId"]})
        now = time.monotonic()
        if now - self._last >= 1 / self.fps:
            self._last = now
            await publish_frame(self.store, self.job_id, params["data"])
