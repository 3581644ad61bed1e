"""Downloads of one browser context: saved into a folder under a size and a count cap, or refused.

Chrome reports downloads on the browser session for every context, so each lease's ``Downloads``
keeps only those started by one of its frames. A download past a cap is cancelled as soon as its
size is known (``Content-Length``) or its bytes pass the cap; its partial file is deleted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import mimetypes
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from cdp.confinement import ChromeUser
from cdp.errors import CDPException
from cdp.session import CDPSession

log = logging.getLogger("browserd.cdp")

class DownloadState(StrEnum):
    """Where one download stands: running, saved whole, or refused (by a limit, the page or the server)."""

    in_progress = "in_progress"
    completed = "completed"
    refused = "refused"

_UNSAFE = re.compile(r"[^\w.\- ()+,=@]+")
PARTIAL_SUFFIX = ".crdownload"  # Chrome's file while a download is in progress, next to its final name
CANCEL_GRACE = 2.0  # seconds Chrome is given to report a cancelled download's end (and drop its file)


@dataclass
class Download:
    """One download the page started. ``name`` is page-chosen text (untrusted), made safe as a file name."""

    guid: str
    url: str
    name: str
    frame_id: str
    state: DownloadState = DownloadState.in_progress
    size: int = 0
    path: Path | None = None
    reason: str | None = None  # why it was refused
    done: asyncio.Event = field(default_factory=asyncio.Event, repr=False)
    # Chrome reported the end of it (completed or canceled): after a cancel, its partial file is gone
    ended: asyncio.Event = field(default_factory=asyncio.Event, repr=False)

    @property
    def mime(self) -> str:
        """Guessed from the file name (Chrome's download events carry no content type)."""
        return mimetypes.guess_type(self.name)[0] or "application/octet-stream"


@dataclass(frozen=True)
class DownloadLimits:
    """``folder`` None refuses every download."""

    folder: Path | None
    max_bytes: int = 50 * 1024 * 1024
    max_files: int = 10


class Downloads:
    """Watches one context's downloads; ``owns_frame(frame_id)`` says whether a frame is the context's."""

    def __init__(self, root: CDPSession, context_id: str, owns_frame: Callable[[str], bool],
                 owner: ChromeUser | None = None) -> None:
        self.root = root
        self.owner = owner  # the user Chrome runs as, who must be able to write the folder
        self.context_id = context_id
        self.owns_frame = owns_frame
        self.limits = DownloadLimits(folder=None)
        self.items: list[Download] = []
        self._by_guid: dict[str, Download] = {}
        self._offs: list[Callable[[], None]] = []
        self._started = asyncio.Event()

    async def enable(self, limits: DownloadLimits) -> None:
        self.limits = limits
        if not self._offs:
            self._offs = [self.root.on("Browser.downloadWillBegin", self._on_begin),
                          self.root.on("Browser.downloadProgress", self._on_progress)]
        params: dict[str, Any] = {"browserContextId": self.context_id, "eventsEnabled": True}
        if limits.folder is None:
            params["behavior"] = "deny"
        else:
            limits.folder.mkdir(parents=True, exist_ok=True)
            if self.owner is not None:
                self.owner.give(limits.folder)
            params.update(behavior="allowAndName", downloadPath=str(limits.folder))
        await self.root.send("Browser.setDownloadBehavior", params)

    def close(self) -> None:
        for off in self._offs:
            off()
        self._offs = []
        for item in self.items:
            item.done.set()
            item.ended.set()

    # --- waiting ---------------------------------------------------------------------------

    async def began_from(self, frame_id: str, since: int, timeout: float) -> Download | None:
        """A download started by ``frame_id`` (as item number ``since`` or later), waiting up to ``timeout``."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            for item in self.items[since:]:
                if item.frame_id == frame_id:
                    return item
            remaining = deadline - loop.time()
            if remaining <= 0:
                return None
            self._started.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._started.wait(), remaining)

    async def settle(self, timeout: float) -> None:
        """Wait until no download is in progress; those still running after ``timeout`` are cancelled."""
        pending = [item for item in self.items if item.state is DownloadState.in_progress]
        if pending:
            _, late = await asyncio.wait([asyncio.ensure_future(i.done.wait()) for i in pending], timeout=timeout)
            for task in late:
                task.cancel()
            for item in pending:
                if item.state is DownloadState.in_progress:
                    await self._refuse(item, f"it did not finish within {timeout:g}s")
        if self.limits.folder is not None:
            refused = [item for item in self.items if item.state is DownloadState.refused]
            unended = [asyncio.ensure_future(i.ended.wait()) for i in refused if not i.ended.is_set()]
            if unended:  # Chrome drops (or finishes) its file on its own thread after a cancel
                _, late = await asyncio.wait(unended, timeout=min(timeout, CANCEL_GRACE))
                for task in late:
                    task.cancel()
            for item in refused:
                self._discard(item)  # Chrome may finish writing a file after its cancel was sent

    # --- events ----------------------------------------------------------------------------

    def _on_begin(self, params: dict[str, Any]) -> Any:
        if not self.owns_frame(params.get("frameId", "")):
            return None
        item = Download(params["guid"], params.get("url", ""), _safe_name(params.get("suggestedFilename", "")),
                        params.get("frameId", ""))
        self.items.append(item)
        self._by_guid[item.guid] = item
        self._started.set()
        if self.limits.folder is None:
            item.state, item.reason = DownloadState.refused, "downloads are not allowed for this job"
            item.done.set()
            return None  # Chrome cancels it itself (behavior deny)
        accepted = sum(1 for i in self.items if i.state is not DownloadState.refused)
        if accepted > self.limits.max_files:
            return self._refuse(item, f"the job may download at most {self.limits.max_files} files")
        return None

    def _on_progress(self, params: dict[str, Any]) -> Any:
        item = self._by_guid.get(params.get("guid", ""))
        if item is None:
            return None
        if params.get("state") in ("completed", "canceled"):
            item.ended.set()
        refused = item.state is DownloadState.refused
        if refused and self.limits.folder is not None and params.get("state") != "inProgress":
            self._discard(item)  # it finished while its cancel was on the way
            return None
        if item.state is not DownloadState.in_progress:
            return None
        state = params.get("state")
        size = max(int(params.get("totalBytes") or 0), int(params.get("receivedBytes") or 0))
        if size > self.limits.max_bytes:
            return self._refuse(item, f"it is larger than the {_mib(self.limits.max_bytes)} limit")
        if state == "completed":
            item.size = int(params.get("receivedBytes") or size)
            item.path = self._keep(Path(params.get("filePath") or self._partial(item)), item.name)
            item.name = item.path.name
            item.state = DownloadState.completed
            item.done.set()
        elif state == "canceled":
            item.state, item.reason = DownloadState.refused, "it was cancelled by the page or the server"
            item.done.set()
        return None

    async def _refuse(self, item: Download, reason: str) -> None:
        item.state, item.reason = DownloadState.refused, reason
        item.done.set()
        log.info("download of %s refused: %s", item.url, reason)
        with contextlib.suppress(CDPException):
            await self.root.send("Browser.cancelDownload", {"guid": item.guid, "browserContextId": self.context_id},
                                 timeout=5)
        self._discard(item)

    def _discard(self, item: Download) -> None:
        partial = self._partial(item)
        for path in (partial, partial.with_name(partial.name + PARTIAL_SUFFIX)):
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)

    def _partial(self, item: Download) -> Path:
        assert self.limits.folder is not None
        return self.limits.folder / item.guid  # allowAndName saves under the guid

    def _keep(self, saved: Path, name: str) -> Path:
        """Give the saved file its (safe, unique) name."""
        target = saved.with_name(name)
        stem, suffix, n = target.stem, target.suffix, 1
        while target.exists():
            n += 1
            target = saved.with_name(f"{stem} ({n}){suffix}")
        with contextlib.suppress(OSError):
            saved.rename(target)
            return target
        return saved


def _safe_name(suggested: str) -> str:
    name = _UNSAFE.sub("_", suggested.replace("/", "_").replace("\\", "_")).strip(" .")[:120]
    return name or "download"


def _mib(size: int) -> str:
    return f"{size / 1024 / 1024:g} MiB"
