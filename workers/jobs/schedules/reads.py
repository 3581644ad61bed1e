"""Incremental runs: what a schedule's run read on each page, so its next run can skip the model on
a page that did not change. Pure: the store is ``read_store``.

A page's **read** is the extraction a successful agent job made there (its data and final answer)
and the page's ``fingerprint`` as the job first opened it, before any model call: a digest of what
the agent reads of it (``workers.agent.unchanged.content_fingerprint``). The next run's job for the
same page and the same work (``read_key``: the start URL, the task, the output schema and the
models) opens the page, fingerprints it, and when the fingerprint is the same reuses the read (no
LLM call), the way a recipe replays steps. A read is only ever made by an agent task: a script, a
recipe or a crawl's extract mode asks no model, so there is nothing to save.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, Field

from workers.jobs.model.spec import JobSpec


class PageRead(BaseModel):
    """What a run read on one page, and the digest of the page it read it from."""

    fingerprint: str = Field(description="The page as the job first opened it, before any model call (a digest).")
    data: Any = None
    final_answer: str | None = None
    job_id: str = Field(description="The job whose model made this extraction (a reuse names the original).")
    run: str | None = Field(None, description="The run (batch) of the job that last saw the page so.")


def read_key(spec: JobSpec) -> str | None:
    """The key of ``spec``'s read in its schedule: the same page and the same work (task, output
    schema, models) share one; None for a job that asks no model on a page of its own (a script, a
    recipe, no start URL): it has nothing to reuse."""
    if spec.task is None or spec.script is not None or spec.start_url is None or spec.recipe is not None:
        return None
    work = {"url": str(spec.start_url), "task": spec.task, "schema": spec.output_schema,
            "models": spec.models.model_dump(mode="json")}
    return hashlib.sha256(json.dumps(work, sort_keys=True, default=str).encode()).hexdigest()[:40]
