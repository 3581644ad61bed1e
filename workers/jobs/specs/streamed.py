"""A batch body read as it arrives: JSONL checked line by line, so the API never holds the body.

``POST /v1/batches`` feeds the body's chunks to ``StreamedBatch`` as the client sends them (each
chunk's CPU work in a thread, so the event loop keeps answering) and keeps only the checked
specs: not the body's bytes, its text, nor a dict per line. Each line is parsed, merged over the
header's ``defaults`` and checked (``checks.check_item``) the moment it is complete.

The other forms (a JSON array, an object with ``jobs``) are one JSON value: when the first line
is not a JSONL header or job, the body is kept whole and read by ``batch_body.parse_body``, as
before. A refused batch is answered in the same order as a body read whole: its size (at most
``MAX_BATCH``, then the tenant's ``max_batch_size`` quota), then its first bad line; once a line
is refused, the lines after it are only counted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from config import Settings
from workers.jobs.errors import SpecError
from workers.jobs.model.spec import JobSpec
from workers.jobs.specs.batch_body import (
    MAX_BATCH,
    BatchRequest,
    check_count,
    checked_options,
    header_fields,
    is_header,
    json_line,
    parse_body,
)
from workers.jobs.specs.checks import batch_mode, check_item, check_webhook_url, validate_jobs
from workers.jobs.tenants.ceilings import Ceiling

SizeCheck = Callable[[int], None]  # raises when a batch of that many jobs is refused (a tenant's quota)


@dataclass(frozen=True)
class CheckedBatch:
    """A batch body read and every job checked: what submitting it needs."""

    specs: list[JobSpec]
    webhook_url: str | None
    max_cost_usd: float | None


class StreamedBatch:
    """Feed it the body's chunks in order (``feed``), then ``finish`` for the checked batch."""

    def __init__(self, settings: Settings, ceiling: Ceiling | None = None, size_check: SizeCheck | None = None,
                 max_jobs: int = MAX_BATCH) -> None:
        self.settings, self.ceiling, self.size_check = settings, ceiling, size_check
        self.max_jobs = max_jobs  # past this many jobs (the tenant's quota) lines are only counted
        self.request: BatchRequest | None = None  # the shared options, once the first line decided the form
        self.specs: list[JobSpec] = []
        self.jobs = 0
        self._pending = b""  # the last, unfinished line
        self._head: bytearray | None = bytearray()  # what came before the form was decided
        self._whole: bytearray | None = None  # not JSONL: the body, read whole at the end
        self._line = 0
        self._refusal: SpecError | None = None

    def feed(self, chunk: bytes) -> None:
        if self._whole is not None:
            self._whole += chunk
            return
        if self._head is not None:
            self._head += chunk
        *lines, self._pending = (self._pending + chunk).split(b"\n")
        for line in lines:
            self._read(line)
            if self._whole is not None:  # the first line was not JSONL: keep everything from the start
                return

    def finish(self) -> CheckedBatch:
        """The batch with its checked specs; raises the refusal if any."""
        if self._whole is None and self._pending:
            self._read(self._pending)
        if self._whole is not None or self.request is None:
            return self._read_whole()
        check_count(self.jobs)
        if self.size_check is not None:
            self.size_check(self.jobs)
        if self._refusal is not None:
            raise self._refusal
        request = self.request
        return CheckedBatch(batch_mode(self.specs, request.mode), request.webhook_url, request.max_cost_usd)

    def _read_whole(self) -> CheckedBatch:
        request = parse_body(bytes(self._whole if self._whole is not None else self._head or b""))
        if self.size_check is not None:
            self.size_check(len(request.jobs))
        return CheckedBatch(validate_jobs(request, self.settings, self.ceiling), request.webhook_url,
                            request.max_cost_usd)

    def _read(self, raw: bytes) -> None:
        self._line += 1
        if not raw.strip():
            return
        if self.request is None:
            self._first(raw)
            return
        self.jobs += 1
        if self._refusal is not None or self.jobs > self.max_jobs:
            self.specs = []  # refused either way: keep nothing
            return
        try:
            item = json_line(self._line, raw.decode("utf-8", errors="replace"))
            self.specs.append(check_item(self.jobs - 1, item, self.request.defaults, self.settings, self.ceiling))
        except SpecError as exc:
            self._refusal, self.specs = exc, []

    def _first(self, raw: bytes) -> None:
        """The first line decides the form: a JSONL header or job, or else one JSON value (read whole)."""
        try:
            first: Any = json_line(self._line, raw.decode("utf-8", errors="replace"))
        except SpecError:
            first = None
        if not isinstance(first, dict) or "jobs" in first:
            self._whole, self._head = self._head, None
            return
        self._head = None
        if is_header(first):
            fields = header_fields(first)
            fields["defaults"] = fields["defaults"] or {}
            self.request = checked_options(BatchRequest(jobs=[], **fields))
            if self.request.webhook_url is not None:
                check_webhook_url(self.request.webhook_url, self.settings)
            return
        self.request = BatchRequest(jobs=[])
        self._line -= 1
        self._read(raw)
