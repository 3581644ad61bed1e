"""``browserd serve``'s collector settings (``daemon.api.server.tune_gc``): checking a large batch
keeps every checked spec alive, and at CPython's default threshold the collector walked all of
them (and the API's own objects) again and again, about half the CPU of the check."""

from __future__ import annotations

import gc
import json
from collections.abc import Iterator

import pytest

from config import Settings
from daemon.api.server import GC_YOUNG_OBJECTS, tune_gc
from workers.jobs.specs.streamed import StreamedBatch

JOBS = 3_000


def jsonl(jobs: int) -> bytes:
    lines = [json.dumps({"defaults": {"labels": {"t": "gc"}, "timeout": 60}})]
    lines += [json.dumps({"script": [{"go_to_url": {"url": f"http://127.0.0.1:9/{n}"}}, {"done": {"text": str(n)}}]})
              for n in range(jobs)]
    return ("\n".join(lines) + "\n").encode()


@pytest.fixture
def collector() -> Iterator[None]:
    """The test process's collector as it was, afterwards (``tune_gc`` changes it for the process)."""
    before = gc.get_threshold()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)


def full_collections_checking(body: bytes) -> int:
    reader = StreamedBatch(Settings(_env_file=None))
    before = gc.get_stats()[2]["collections"]
    reader.feed(body)
    checked = reader.finish()
    assert len(checked.specs) == JOBS
    return gc.get_stats()[2]["collections"] - before


def test_a_large_batch_is_checked_without_walking_the_heap_again(collector: None) -> None:
    body = jsonl(JOBS)
    tune_gc()
    assert gc.get_threshold()[0] == GC_YOUNG_OBJECTS and gc.get_freeze_count() > 0
    assert full_collections_checking(body) == 0
