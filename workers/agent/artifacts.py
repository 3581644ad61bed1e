"""A job's artifacts: step screenshots, the final page, its logs and its downloads, kept as its
``ArtifactOptions`` ask, in its folder of the artifact store (``workers.jobs.artifacts``).

* ``every_step`` screenshots are taken as each step ends (while the next one reads the page and
  asks the model; before its first action) and stored, and the step's event links to one;
  ``on_failure`` takes none while the job runs (a screenshot costs Chromium about 24 ms of CPU, half
  its CPU at 32 jobs at once, for pictures a job that succeeds throws away): when the job does not
  succeed, one is taken of the live page then, and kept as its last step's.
* The final page (its HTML, and its text as markdown: ``page.md``, the same conversion the
  ``extract_content`` action reads, ``PageState.text``), the console log and failed requests
  (``journal``) are read when the job ends, together within ``CAPTURE_SECONDS`` (a page spinning
  in a script must not hold the worker).
* Downloads are copied from the job's download folder into the store as ``download-<name>``.

A job kept open for follow-ups runs several times in one session: each run (``begin_run``) keeps
its own files, a follow-up's named ``run-N-...`` (``run_name``), and its result lists only its own.

Text artifacts (logs, HTML, page text) are scrubbed of the job's secrets like its records; a
screenshot is an image of the user's page, kept as it is (docs/security.md). Nothing that
fails here fails the job: it is logged, and the job's result simply lists fewer artifacts.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

import cdp
import dom
from workers.agent.config import ScreenshotLimits
from workers.agent.documents import Document
from workers.agent.errors import ActionError
from workers.agent.journal import Journal
from workers.agent.secrets import Secrets
from workers.jobs.artifacts.names import link_path, name_from, run_name
from workers.jobs.artifacts.store import JobArtifacts
from workers.jobs.model.result import ArtifactLink, JobResult, StepRecord
from workers.jobs.model.spec import ArtifactOptions, KeepPolicy
from workers.jobs.model.status import JobStatus

log = logging.getLogger("browserd.agent.artifacts")
T = TypeVar("T")

SHOT_SECONDS = 2.0  # one screenshot; a page that cannot paint in this time gets none
CAPTURE_SECONDS = 2.0  # the final page's HTML and markdown and the tabs' logs, together
MAX_HTML = 5 * 1024 * 1024  # characters of the final page's HTML kept
MAX_MARKDOWN = 5 * 1024 * 1024  # characters of its markdown kept
SCALED = 0.5  # the scale of a second attempt at a screenshot that was too large
SCALED_QUALITY = 40

_HTML = f"(() => {{ const h = document.documentElement ? document.documentElement.outerHTML : ''; " \
        f"return h.length > {MAX_HTML} ? h.slice(0, {MAX_HTML}) : h; }})()"


class ArtifactRecorder:
    """Takes and stores one job's artifacts; with no ``folder`` (no store) it keeps nothing."""

    def __init__(self, folder: JobArtifacts | None, options: ArtifactOptions, screenshots: ScreenshotLimits,
                 secrets: Secrets) -> None:
        self.folder = folder
        self.options = options
        self.screenshots = screenshots
        self.secrets = secrets
        self.journal: Journal | None = None
        self.run = 1
        self.links: list[ArtifactLink] = []  # this run's files
        self.download_links: dict[str, str] = {}  # download guid -> API path of its stored copy (every run's)
        self._last_step: StepRecord | None = None  # this run's last step (an on_failure shot is its)
        self._page: Callable[[], cdp.Page] | None = None
        self._document: Callable[[], Awaitable[Document | None]] | None = None
        self._tabs: Callable[[], list[cdp.Page]] = list
        self._pending: set[asyncio.Task[None]] = set()
        self.begin_run(1)

    def begin_run(self, run: int) -> None:
        """Start run ``run`` of the job (1, then each follow-up's): its files get its own names and
        its result lists only them."""
        self.run = run
        self.links = []
        self._last_step = None
        keeps_logs = self.folder is not None and self.options.logs != "off"
        self.journal = Journal() if keeps_logs else None

    def follow(self, current: Callable[[], cdp.Page], tabs: Callable[[], list[cdp.Page]],
               document: Callable[[], Awaitable[Document | None]] | None = None) -> None:
        """How to find the tab to capture (the job's current tab, whichever it is then), the tabs
        whose logs to read, and the PDF the tab shows (read as text for ``page.md``)."""
        self._page, self._tabs = current, tabs
        self._document = document

    # --- while the job runs ----------------------------------------------------------------

    async def step_ended(self, step: StepRecord) -> None:
        """Start ``step``'s screenshot (every_step); it is taken while the next step reads the page and
        asks the model, and ``settled()`` (before any action) waits for it, so it shows this step's
        end. Its link is in the step at once: the step's event carries it."""
        self._last_step = step
        if self.folder is None or self.options.screenshots != "every_step" or self._page is None:
            return
        name = run_name(self.run, f"step-{step.step:03d}.jpg")
        step.screenshot = link_path(self.folder.job_id, name)
        task = asyncio.get_running_loop().create_task(self._keep_screenshot(step, name, self._page))
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    async def settled(self) -> None:
        """Screenshots under way are taken (called before an action changes the page)."""
        if self._pending:
            await asyncio.gather(*self._pending, return_exceptions=True)

    async def _keep_screenshot(self, step: StepRecord, name: str, current: Callable[[], cdp.Page]) -> None:
        shot = await self._screenshot(current)
        link = await self._put(name, shot) if shot is not None else None
        # the result says so when it is missing; an every_step step's event may already name the file
        step.screenshot = link.url if link is not None else None

    async def _screenshot(self, current: Callable[[], cdp.Page]) -> bytes | None:
        limit = self.screenshots.max_bytes
        try:
            async with asyncio.timeout(SHOT_SECONDS):
                page = current()
                shot = await page.screenshot(jpeg_quality=self.screenshots.quality)
                if len(shot) > limit:
                    shot = await page.screenshot(jpeg_quality=SCALED_QUALITY, scale=SCALED)
        except (cdp.CDPException, TimeoutError, KeyError) as exc:
            log.info("no screenshot: %s: %s", type(exc).__name__, exc)
            return None
        if len(shot) > limit:
            log.info("screenshot skipped: %d bytes even at half scale (BROWSERD_ARTIFACT_SCREENSHOT_MAX_KB)", len(shot))
            return None
        return shot

    # --- when it ends ----------------------------------------------------------------------

    async def finish(self, result: JobResult, downloads: list[cdp.Download]) -> None:
        """Store what the options keep for a job that ended as ``result``; list it in the result."""
        if self.folder is None:
            return
        await self.settled()
        failed = result.status != JobStatus.succeeded
        step = self._last_step
        if failed and self.options.screenshots == "on_failure" and step is not None and self._page is not None:
            await self._keep_screenshot(step, run_name(self.run, f"step-{step.step:03d}.jpg"), self._page)
        deadline = asyncio.get_running_loop().time() + CAPTURE_SECONDS
        if _keeps(self.options.page, failed) and self._page is not None:
            await self._final_page(self._page, deadline)
        if self.journal is not None and _keeps(self.options.logs, failed):
            await self._read_logs(self.journal, deadline)
            for kind in ("console", "network"):
                lines = self.journal.lines(kind, self.secrets.scrub_value)
                if lines:
                    await self._put(run_name(self.run, f"{kind}.jsonl"), lines.encode())
        for item in downloads:  # the session's: an earlier run's are stored already
            saved = item.state is cdp.DownloadState.completed and item.path is not None
            if saved and item.guid not in self.download_links:
                await self._put_download(item)
        result.artifacts = sorted(self.links, key=lambda link: link.name)

    async def _read_logs(self, journal: Journal, deadline: float) -> None:
        try:
            async with asyncio.timeout_at(deadline):
                for page in self._tabs():
                    await journal.collect(page)
        except (cdp.CDPException, TimeoutError) as exc:
            log.info("console log incomplete: %s: %s", type(exc).__name__, exc)

    async def _final_page(self, current: Callable[[], cdp.Page], deadline: float) -> None:
        """``page.html`` and ``page.md``: the markdown is the page's rendered text as the agent's
        ``extract_content`` reads it (``PageState.text``: every frame, headings, lists and links).
        Each is kept if it could be read in time, the HTML first."""
        html = await _before(deadline, lambda: current().evaluate(_HTML))
        if isinstance(html, str) and html:
            await self._put(run_name(self.run, "page.html"), self.secrets.scrub(html).encode())
        document = await _before(deadline, self._read_document) if self._document is not None else None
        if document is not None:  # a PDF: its text, not the viewer's empty page
            await self._put(run_name(self.run, "page.md"), self.secrets.scrub(document.text[:MAX_MARKDOWN]).encode())
            return
        state = await _before(deadline, lambda: dom.capture(current()))
        if state is not None:
            await self._put(run_name(self.run, "page.md"), self.secrets.scrub(state.text()[:MAX_MARKDOWN]).encode())

    async def _read_document(self) -> Document | None:
        """The PDF the final tab shows, read; None when there is none or it cannot be read."""
        assert self._document is not None
        try:
            return await self._document()
        except ActionError as exc:
            log.info("final page's PDF not read: %s", exc)
            return None

    async def _put_download(self, item: cdp.Download) -> None:
        assert self.folder is not None and item.path is not None
        name = name_from(item.name, run_name(self.run, "download-"))
        try:
            link = await asyncio.to_thread(self.folder.put_file, name, str(item.path))
        except Exception as exc:  # any filesystem's error: the job's result just lacks the copy
            log.warning("download %s not stored: %s: %s", name, type(exc).__name__, exc)
            return
        self.links.append(link)
        self.download_links[item.guid] = link.url

    async def _put(self, name: str, data: bytes) -> ArtifactLink | None:
        assert self.folder is not None
        try:
            link = await asyncio.to_thread(self.folder.put, name, data)
        except Exception as exc:  # any filesystem's error: the job's result just lacks the file
            log.warning("artifact %s not stored: %s: %s", name, type(exc).__name__, exc)
            return None
        self.links = [*(a for a in self.links if a.name != name), link]
        return link


async def _before(deadline: float, read: Callable[[], Awaitable[T]]) -> T | None:
    """What ``read()`` reads of the final page by ``deadline``; None (logged) if it could not."""
    try:
        async with asyncio.timeout_at(deadline):
            return await read()
    except (cdp.CDPException, TimeoutError) as exc:
        log.info("final page not kept whole: %s: %s", type(exc).__name__, exc)
        return None


def _keeps(policy: KeepPolicy, failed: bool) -> bool:
    return policy == "always" or (policy == "on_failure" and failed)

