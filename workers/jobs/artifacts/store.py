"""The artifact store: files jobs leave behind, in one fsspec filesystem the workers and the API share.

Each job has a folder ``{BROWSERD_ARTIFACTS_URL}/jobs/{job_id}/`` of flat files with safe names
(``step-003.jpg``, ``page.html``, ``page.md``, ``console.jsonl``, ``download-report.pdf``,
``result.json``): a worker on any host writes them, the API on any host lists and streams them.
A job kept open for follow-ups (``options.keep_session``) runs several times in one session, each
run numbering its steps from 1: the first run's files have the names above, run N's the same
names after ``run-N-`` (``names.run_name``). Names are checked on every access
(``names.safe_name``), so no request can reach outside a job's folder. A job's folder is deleted by
the reconciler when its record expires (``BROWSERD_RESULT_TTL``).

fsspec is synchronous; callers on an event loop use ``asyncio.to_thread`` (or ``offload.ainline``).

Object stores' filesystems (s3fs, gcsfs) cache directory listings in the process, and fsspec shares
one filesystem object per URL: a listing the API made while a job ran would hide the files the
job's worker (another process, another host) wrote after it. Every read forgets the job folder's
cached listing first (``fresh``), so each answer is what the store holds now.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fsspec.core import url_to_fs

from config import ConfigError, Settings
from config.masking import mask_url
from workers.jobs.artifacts.names import (
    SAFE_NAME,
    NoSuchArtifact,
    UnsafeName,
    content_type,
    link_path,
    run_of,
    safe_name,
)
from workers.jobs.ids import is_id
from workers.jobs.model.result import ArtifactLink

CHUNK = 256 * 1024


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

    def check_writable(self, url: str) -> None:
        """Write and delete a small file at the store's root, as a worker does before its first job:
        a store it cannot write is a ``ConfigError`` naming BROWSERD_ARTIFACTS_URL, not screenshots,
        pages and downloads that go missing job after job (``url``: the setting, masked in the message)."""
        probe = f"{self.root}/.browserd-write-check-{uuid.uuid4().hex[:12]}"
        try:
            self.fs.makedirs(self.root, exist_ok=True)
            with self.fs.open(probe, "wb") as fh:
                fh.write(b"browserd")
            self.fs.rm(probe)
        except Exception as exc:  # whatever the filesystem raises: a permission, a missing bucket, no credentials
            raise ConfigError(
                f"BROWSERD_ARTIFACTS_URL={mask_url(url)!r} cannot be written by this process "
                f"({type(exc).__name__}: {exc}): jobs' screenshots, pages, downloads and large results would be "
                f"lost. Set BROWSERD_ARTIFACTS_URL to a store it can write (a folder this user owns, e.g. "
                f"file://{Path.home()}/.local/share/browserd/artifacts, or s3://bucket/prefix), the same one "
                f"for the API and every worker") from None

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

    def fresh(self) -> None:
        """Forget what this process cached of the folder's listing: another process may have written it."""
        self.fs.invalidate_cache(self.folder)

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
        self.fresh()
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
        self.fresh()
        try:
            return int(self.fs.size(self.path(name)))
        except FileNotFoundError:
            raise NoSuchArtifact(name, f"job {self.job_id} has no such artifact") from None

    def read(self, name: str) -> bytes:
        self.fresh()
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
        self.fresh()
        try:
            if not self.fs.exists(self.folder):
                return False
            self.fs.rm(self.folder, recursive=True)
        except FileNotFoundError:
            return False
        return True
