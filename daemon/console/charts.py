"""Numbers the console draws: outcomes per failure category, and a step's phases as bars.

Plain data for the templates, which draw it as inline SVG: no chart library, no script.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from workers.jobs.model.record import JobRecord
from workers.jobs.model.status import JobStatus


@dataclass(frozen=True)
class Bar:
    label: str
    count: int
    share: float  # of every finished job counted, 0..1
    ok: bool  # the succeeded bar


@dataclass(frozen=True)
class Outcomes:
    finished: int
    bars: list[Bar]

    @property
    def success_rate(self) -> float:
        ok = next((b for b in self.bars if b.ok), None)
        return ok.share if ok else 0.0


def outcomes(jobs: list[JobRecord]) -> Outcomes:
    """Of the finished jobs given: the share that succeeded, was cancelled, and failed per category."""
    counts: Counter[str] = Counter()
    for job in jobs:
        if job.state == JobStatus.failed:
            counts[f"failed: {job.category.value if job.category else 'unknown'}"] += 1
        elif job.state.finished:
            counts[job.state.value] += 1
    total = sum(counts.values())
    if not total:
        return Outcomes(0, [])
    ordered = sorted(counts.items(), key=lambda kv: (kv[0] != "succeeded", -kv[1], kv[0]))
    return Outcomes(total, [Bar(label, n, n / total, label == "succeeded") for label, n in ordered])
