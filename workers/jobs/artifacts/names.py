"""Artifact names: which names a job's folder may hold, what each is, and how they are served.

Names are checked on every access (``safe_name``), so no request can reach outside a job's folder.
A job kept open for follow-ups (``options.keep_session``) runs several times in one session, each
run numbering its steps from 1: the first run's files have plain names, run N's the same names
after ``run-N-`` (``run-2-step-001.jpg``), so no run overwrites another's (``run_name``). Pure: the
API and the console check names and build headers without opening the store.
"""

from __future__ import annotations

import mimetypes
import re
from dataclasses import dataclass

from workers.jobs.errors import JobsError
from workers.jobs.model.result import ArtifactLink

SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$")
"""A letter or digit first (never ``.`` or ``..``), no slash: a name cannot leave its folder."""
RESULT_FILE = "result.json"
RUN_PREFIX = re.compile(r"^run-([1-9][0-9]*)-")
"""What names a file of a job's run after the first (``run-2-page.html``); browserd's own names
never start so (a download's is ``download-...``)."""
SCREENSHOT = re.compile(r"^(?:run-[1-9][0-9]*-)?step-[0-9]+\.jpg$")
"""A step's screenshot, of any run (the only artifacts served inline)."""
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


@dataclass(frozen=True)
class RunArtifacts:
    """The files one run of a job left (1: its own task; 2, 3...: follow-ups)."""

    run: int
    links: list[ArtifactLink]


def by_run(links: list[ArtifactLink]) -> list[RunArtifacts]:
    """``links`` grouped by the run that left them, first run first (a console shows each under its run)."""
    runs: dict[int, list[ArtifactLink]] = {}
    for link in links:
        runs.setdefault(link.run, []).append(link)
    return [RunArtifacts(run, found) for run, found in sorted(runs.items())]


def link_path(job_id: str, name: str) -> str:
    """The API path that serves one artifact (what results and step events link to)."""
    return f"/v1/jobs/{job_id}/artifacts/{name}"


def offloaded_name(result_artifact: str) -> str:
    """The file an offloaded result is in (its run's ``result.json``), from its link."""
    return safe_name(result_artifact.rsplit("/", 1)[-1])


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
