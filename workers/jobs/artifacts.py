"""The artifact store: files jobs leave behind, in one fsspec filesystem the workers and the API share.

Each job has a folder ``{BROWSERD_ARTIFACTS_URL}/jobs/{job_id}/`` of flat files with safe names
(``step-003.jpg``, ``page.html``, ``page.md``, ``console.jsonl``, ``download-report.pdf``,
``result.json``): a worker on any host writes them, the API on any host lists and streams them.
A job kept open for follow-ups (``options.keep_session``) runs several times in one session, each
run numbering its steps from 1: the first run's files have the names above, run N's the same
names after ``run-N-`` (``run-2-step-001.jpg``), so no run overwrites another's (``run_name``). Names are checked on
every access (``safe_name``), so no request can reach outside a job's folder. A job's folder is
deleted by the reconciler when its record expires (``BROWSERD_RESULT_TTL``).

fsspec is synchronous; callers on an event loop use ``asyncio.to_thread`` (or the ``a``-methods).
"""

from __future__ import annotations

import asyncio
import json
import logging
import mimetypes
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from fsspec.core import url_to_fs

from config import ConfigError, Settings
from workers.jobs.errors import JobsError
from workers.jobs.keys import is_id
from workers.jobs.models import ArtifactLink, JobResult

log = logging.getLogger("browserd.artifacts")

SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")
"""A letter or digit first (never ``.`` or ``..``), no slash: a name cannot leave its folder."""
RESULT_FILE = "result.json"
RUN_PREFIX = re.compile(r"^run-([1-9][0-9]*)-")
"""What names a file of a job's run after the first (``run-2-page.html``); browserd's own names
never start so (a download's is ``download-...``)."""
SCREENSHOT = re.compile(r"^(?:run-[1-9][0-9]*-)?step-[0-9]+\.jpg$")
"""A step's screenshot, of any run (the only artifacts served inline)."""
HEAVY_FIELDS = ("final_answer", "data", "steps")  # what a large result moves out of its record
CHUNK = 256 * 1024
_TYPES = {".jsonl": "application/x-ndjson", ".md": "text/markdown", ".txt": "text/plain; charset=utf-8",
          ".html": "text/html; charset=utf-8", ".json": "application/json", ".jpg": "image/jpeg"}
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class ArtifactError(JobsError):
    """An artifact name that is not allowed, or a file that is not there."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"artifact {name!r}: {reason}")
        self.name, self.reason = name, reason


class UnsafeName(ArtifactError):
    """A name that could reach outside the job's folder (``..``, a slash) or that browserd never writes."""


class NoSuchArtifact(ArtifactError):
    """The job's folder has no file of that name."""


def safe_name(name: str) -> str:
    """``name`` if it is a plain file name of the job's folder; else ``UnsafeName``."""
    if not SAFE_NAME.fullmatch(name) or ".." in name:
        raise UnsafeName(name, "names are letters, digits, '.', '_' and '-' (no '/', no '..'), "
                         "starting with a letter or digit")
    return name


def name_from(text: str, prefix: str = "") -> str:
    """A safe name made of untrusted text (a page's suggested file name)."""
    cleaned = _UNSAFE.sub("_", text).strip("._-")
    cleaned = re.sub(r"\.{2,}", ".", cleaned)[:150] or "file"
    return safe_name(f"{prefix}{cleaned}")


def content_type(name: str) -> str:
    suffix = name[name.rfind("."):].lower() if "." in name else ""
    return _TYPES.get(suffix) or mimetypes.guess_type(name)[0] or "application/octet-stream"


def run_name(run: int, name: str) -> str:
    """The name run ``run`` of a job gives its file ``name``: the first run's as it is, a follow-up's
    after ``run-N-`` (its steps are numbered from 1 again and must not overwrite the first run's)."""
    return name if run <= 1 else f"run-{run}-{name}"


def run_of(name: str) -> int:
    """Which run of its job left the file ``name`` (``run_name`` read back)."""
    found = RUN_PREFIX.match(name)
    return int(found.group(1)) if found else 1


def is_screenshot(name: str) -> bool:
    return SCREENSHOT.fullmatch(name) is not None


def by_run(links: list[ArtifactLink]) -> list[tuple[int, list[ArtifactLink]]]:
    """``links`` grouped by the run that left them, first run first (a console shows each under its run)."""
    runs: dict[int, list[ArtifactLink]] = {}
    for link in links:
        runs.setdefault(link.run, []).append(link)
    return sorted(runs.items())


def link_path(job_id: str, name: str) -> str:
    """The API path that serves one artifact (what results and step events link to)."""
    return f"/v1/jobs/{job_id}/artifacts/{name}"


@dataclass(frozen=True)
class ArtifactStore:
    """The filesystem under ``BROWSERD_ARTIFACTS_URL``."""

    fs: Any  # fsspec.AbstractFileSystem
    root: str

    @classmethod
    def open(cls, url: str) -> ArtifactStore:
        """The store at ``url``; a URL fsspec cannot open (an unknown scheme, a filesystem whose
        package is not installed) is a ``ConfigError`` naming BROWSERD_ARTIFACTS_URL."""
        try:
            fs, root = url_to_fs(url)
        except (ImportError, ValueError) as exc:
            raise ConfigError(f"BROWSERD_ARTIFACTS_URL={url!r} cannot be opened: {exc}") from None
        return cls(fs, root.rstrip("/"))

    @classmethod
    def from_settings(cls, settings: Settings) -> ArtifactStore:
        return cls.open(settings.artifacts_url)

    def job(self, job_id: str) -> JobArtifacts:
        if not is_id(job_id):
            raise UnsafeName(job_id, "not a job id")
        return JobArtifacts(self, job_id, f"{self.root}/jobs/{job_id}")

    def delete_jobs(self, job_ids: list[str]) -> int:
        """Delete the folders of these jobs (those that have one); how many were deleted."""
        deleted = 0
        for job_id in job_ids:
            if is_id(job_id) and self.job(job_id).delete():
                deleted += 1
        return deleted


@dataclass(frozen=True)
class JobArtifacts:
    """One job's folder."""

    store: ArtifactStore
    job_id: str
    folder: str

    @property
    def fs(self) -> Any:
        return self.store.fs

    def path(self, name: str) -> str:
        return f"{self.folder}/{safe_name(name)}"

    def link(self, name: str, size: int) -> ArtifactLink:
        return ArtifactLink(name=name, size=size, content_type=content_type(name), url=link_path(self.job_id, name),
                            run=run_of(name))

    def put(self, name: str, data: bytes) -> ArtifactLink:
        path = self.path(name)
        self.fs.makedirs(self.folder, exist_ok=True)
        with self.fs.open(path, "wb") as fh:
            fh.write(data)
        return self.link(name, len(data))

    def put_file(self, name: str, local: str) -> ArtifactLink:
        """Copy a local file in (a download), without reading it whole into memory."""
        path = self.path(name)
        self.fs.makedirs(self.folder, exist_ok=True)
        size = 0
        with open(local, "rb") as src, self.fs.open(path, "wb") as dst:
            while chunk := src.read(CHUNK):
                dst.write(chunk)
                size += len(chunk)
        return self.link(name, size)

    def list(self) -> list[ArtifactLink]:
        """Every file, by name (empty when the job kept none)."""
        try:
            entries = self.fs.ls(self.folder, detail=True)
        except FileNotFoundError:
            return []
        links = []
        for entry in entries:
            name = str(entry["name"]).rstrip("/").rsplit("/", 1)[-1]
            if entry.get("type") == "file" and SAFE_NAME.fullmatch(name):
                links.append(self.link(name, int(entry.get("size") or 0)))
        return sorted(links, key=lambda link: link.name)

    def size(self, name: str) -> int:
        try:
            return int(self.fs.size(self.path(name)))
        except FileNotFoundError:
            raise NoSuchArtifact(name, f"job {self.job_id} has no such artifact") from None

    def read(self, name: str) -> bytes:
        try:
            with self.fs.open(self.path(name), "rb") as fh:
                return fh.read()
        except FileNotFoundError:
            raise NoSuchArtifact(name, f"job {self.job_id} has no such artifact") from None

    def chunks(self, name: str) -> Iterator[bytes]:
        """The file in pieces (``size`` first, to learn whether it exists)."""
        with self.fs.open(self.path(name), "rb") as fh:
            while chunk := fh.read(CHUNK):
                yield chunk

    def delete(self) -> bool:
        try:
            if not self.fs.exists(self.folder):
                return False
            self.fs.rm(self.folder, recursive=True)
        except FileNotFoundError:
            return False
        return True


# --- large results: offloaded from the record, filled in again when read --------------------

def offload(result: JobResult, folder: JobArtifacts, limit: int, run: int = 1) -> JobResult:
    """``result`` with its final answer, data and steps moved to ``result.json`` (run ``run``'s:
    ``run_name``) when, as JSON, they pass ``limit`` bytes: the record keeps the rest (status,
    error, totals, downloads, artifacts) and a link, ``result_artifact``. Steps go too: a planner's
    final answer is in them."""
    heavy = result.model_dump(mode="json", include=set(HEAVY_FIELDS))
    payload = json.dumps(heavy, ensure_ascii=False).encode()
    if len(payload) <= limit:
        return result
    name = run_name(run, RESULT_FILE)
    link = folder.put(name, payload)
    log.info("job %s: result of %d bytes stored as %s", folder.job_id, link.size, name)
    return result.model_copy(update={"final_answer": None, "data": None, "steps": [], "result_artifact": link.url,
                                     "artifacts": sorted([*(a for a in result.artifacts if a.name != name), link],
                                                        key=lambda a: a.name)})


def offloaded_name(result_artifact: str) -> str:
    """The file an offloaded result is in (its run's ``result.json``), from its link."""
    return safe_name(result_artifact.rsplit("/", 1)[-1])


def inline(result: JobResult, folder: JobArtifacts) -> JobResult:
    """``result`` with an offloaded final answer, data and steps read back in (``result_artifact`` stays)."""
    if result.result_artifact is None:
        return result
    stored = json.loads(folder.read(offloaded_name(result.result_artifact)))
    return JobResult.model_validate({**result.model_dump(mode="json"), **stored})


async def ainline(result: JobResult, folder: JobArtifacts) -> JobResult:
    return await asyncio.to_thread(inline, result, folder)



def serving_headers(name: str, size: int) -> dict[str, str]:
    """Headers under which any browserd server hands out an artifact. Artifacts are untrusted page
    content (a page's HTML, a file it offered): only JPEG screenshots are shown inline; everything
    else is an attachment, and nothing may run or be sniffed into something that runs."""
    inline_ok = is_screenshot(name)
    return {
        "Content-Length": str(size),
        "Content-Disposition": f'{"inline" if inline_ok else "attachment"}; filename="{name}"',
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": "sandbox; default-src 'none'",
        "Cache-Control": "private, max-age=300",
    }
