"""What a job may open is bounded by the operator: ``0.0.0.0/0`` or the cloud metadata address on
a job, a batch, a schedule or an interactive session is refused at submission with 422 naming the
ceiling, while what the operator opened (the tests' loopback) still goes through."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from tests.frontends.tenancy import api_client

@pytest.fixture
def api(redis_url: str) -> Iterator[TestClient]:
    with api_client(redis_url) as c:
        yield c


WIDE = [["0.0.0.0/0"], ["::/0"], ["169.254.169.254/32"], ["10.0.0.0/8"], ["0.0.0.0/0", "::/0"]]


def refusal(response: object) -> str:
    assert response.status_code == 422, response.text  # type: ignore[attr-defined]
    body = response.json()  # type: ignore[attr-defined]
    assert any(f["field"].endswith("allowed_networks") for f in body["fields"]), body
    return body["message"]


@pytest.mark.parametrize("networks", WIDE)
def test_a_job_asking_past_the_operator_is_refused_at_submission(api: TestClient, networks: list[str]) -> None:
    message = refusal(api.post("/v1/jobs", json={"task": "read /metrics", "allowed_networks": networks}))
    assert "BROWSERD_ALLOWED_NETWORKS" in message and networks[0] in message
    assert api.get("/v1/jobs").json()["jobs"] == []  # nothing was queued


@pytest.mark.parametrize("networks", WIDE[:3])
def test_batches_schedules_and_sessions_too(api: TestClient, networks: list[str]) -> None:
    batch = api.post("/v1/batches", json={"jobs": [{"task": "a"}, {"task": "b", "allowed_networks": networks}]})
    assert batch.status_code == 422 and batch.json()["fields"][0]["field"] == "jobs[1].allowed_networks"
    defaults = api.post("/v1/batches", json={"jobs": [{"task": "a"}], "defaults": {"allowed_networks": networks}})
    assert defaults.status_code == 422
    schedule = api.post("/v1/schedules", json={"cron": "0 * * * *", "job": {"task": "a", "allowed_networks": networks}})
    assert schedule.status_code == 422 and "BROWSERD_ALLOWED_NETWORKS" in schedule.json()["message"], schedule.text
    assert "BROWSERD_ALLOWED_NETWORKS" in refusal(api.post("/v1/sessions", json={"allowed_networks": networks}))


def test_what_the_operator_opened_is_accepted(api: TestClient) -> None:
    job = api.post("/v1/jobs", json={"task": "shop", "allowed_networks": ["127.0.0.1/32"]})
    assert job.status_code == 201 and job.json()["spec"]["allowed_networks"] == ["127.0.0.1/32"]
