"""Structured worker logs: with BROWSERD_LOG_JSON, every line of a job names its job, attempt, step and URL."""

from __future__ import annotations

import json

import pytest

from tests.queue.stack import stack, wait_until
from tests.support.servers import StaticServer

pytestmark = pytest.mark.e2e  # a deployment (tests/queue/stack.py) started in the test


def test_a_workers_json_log_carries_job_attempt_step_and_url(site: StaticServer) -> None:
    with stack(log_json=1, job_timeout=60, visibility_timeout=120) as s:
        worker = s.start_worker(1)
        url = site.url("/cdp/basic.html")
        job = s.submit({"script": [{"go_to_url": {"url": url}}, {"wait": {"seconds": 0}}, {"done": {"text": "ok"}}]})
        assert s.wait_state(job["id"], {"succeeded", "failed", "cancelled"}, timeout=90)["state"] == "succeeded"
        wait_until(lambda: job["id"] in worker.log(tail=200_000), 10, "the worker to log the job")
        lines = [json.loads(line) for line in worker.log(tail=200_000).splitlines() if line.startswith("{")]

    assert lines, "the worker wrote no JSON log lines"
    mine = [entry for entry in lines if entry.get("job_id") == job["id"]]
    assert mine and all(entry["attempt"] == 1 for entry in mine)
    steps = [entry for entry in mine if "step" in entry]
    assert {entry["step"] for entry in steps} >= {2, 3}, mine
    assert all(entry["url"] == url for entry in steps if entry["step"] >= 2), steps
    assert all({"ts", "level", "logger", "msg"} <= entry.keys() for entry in lines)


def test_a_failed_job_logs_no_error_and_no_traceback(site: StaticServer) -> None:
    """Issue 25, item 4: a job that ends failed raises ``JobFailed`` so Celery's view agrees with the
    store; it must come back from Celery's pickle check as itself (listed in ``throws``), never as an
    ``UnpickleableExceptionWrapper`` logged as an unexpected ERROR with a traceback."""
    with stack(job_timeout=60, visibility_timeout=120) as s:
        worker = s.start_worker(1)
        job = s.submit({"script": [{"go_to_url": {"url": site.url("/cdp/basic.html")}},
                                   *[{"wait": {"seconds": 1}}] * 10, {"done": {"text": "too late"}}],
                        "timeout": 1})
        assert s.wait_state(job["id"], {"succeeded", "failed", "cancelled"}, timeout=90)["state"] == "failed"
        wait_until(lambda: "JobFailed" in worker.log(tail=200_000), 30, "Celery to log how the task ended")
        text = worker.log(tail=200_000)

    assert "raised expected: JobFailed" in text, text[-3000:]
    assert "UnpickleableExceptionWrapper" not in text and "Traceback" not in text, text[-3000:]
    assert not [line for line in text.splitlines() if " ERROR " in line or '"level": "ERROR"' in line], text[-3000:]
