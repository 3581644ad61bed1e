"""Lines about a job carry its id as a structured field, not only inside the message (issue 25,
item 8): an egress refusal (logged from the proxy's own task, long after the job bound its fields)
and every line of a webhook delivery (its job, batch, delivery id, attempt and masked URL)."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from typing import Any

import pytest

from cdp.egress import Decision, DenyAll, EgressProxy, Gate
from config import bind, setup_logging
from workers.webhooks import deliver_webhook

JOB = "a" * 32


@pytest.fixture
def json_logs() -> Iterator[Any]:
    root = logging.getLogger()
    saved, level = root.handlers[:], root.level
    setup_logging("INFO", json_lines=True)
    stream = io.StringIO()
    root.handlers[0].setStream(stream)  # type: ignore[attr-defined]
    try:
        yield lambda: [json.loads(line) for line in stream.getvalue().splitlines() if line.startswith("{")]
    finally:
        root.handlers[:], root.level = saved, level


def test_an_egress_refusal_names_the_job_that_held_the_context(json_logs: Any) -> None:
    gate = Gate(EgressProxy(), DenyAll())
    with bind(job_id=JOB, attempt=2):
        gate.admit(DenyAll("not for this job"))
    gate.record(Decision("CONNECT", "evil.test", 443, None, "domain not allowed: evil.test"))  # outside the job's block
    (line,) = [line for line in json_logs() if line["msg"].startswith("egress refused")]
    assert (line["job_id"], line["attempt"], line["host"], line["port"]) == (JOB, 2, "evil.test", 443)


def test_webhook_lines_carry_the_job_and_the_masked_url(json_logs: Any) -> None:
    url = "http://127.0.0.1:9/hook?token=receiver-secret-4411"  # loopback: refused before connecting
    deliver_webhook.apply(args=(url, "job.finished", {"id": JOB, "batch": "b" * 32, "status": "succeeded"}),
                          kwargs={"delivery_id": None}, task_id="d" * 32)
    (line,) = [line for line in json_logs() if line["logger"] == "browserd.webhooks" and "not sent" in line["msg"]]
    assert line["job_id"] == JOB and line["batch_id"] == "b" * 32 and line["event"] == "job.finished"
    assert line["attempt"] == 1 and line["delivery_id"] == "d" * 32
    assert "receiver-secret-4411" not in json.dumps(line) and line["url"].startswith("http://127.0.0.1:9/hook")
