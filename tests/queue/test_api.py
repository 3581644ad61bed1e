"""The HTTP API's contract: auth, health, actionable errors naming the field, and fuzzing from its schema."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error

from tests.queue.stack import TOKEN, Stack, script, stack
from tests.support.servers import StaticServer

JOB_TIMEOUT = 20


@pytest.fixture(scope="module")
def deploy() -> Iterator[Stack]:
    with stack(job_timeout=JOB_TIMEOUT, visibility_timeout=60) as s:
        s.start_worker(2)
        yield s


ROUTES = [
    ("POST", "/v1/jobs", {"task": "x"}),
    ("GET", "/v1/jobs/abc", None),
    ("GET", "/v1/jobs/abc/events", None),
    ("POST", "/v1/jobs/abc/cancel", None),
    ("GET", "/v1/jobs", None),
]


@pytest.mark.parametrize(("method", "path", "body"), ROUTES)
def test_every_v1_route_needs_the_token(deploy: Stack, method: str, path: str, body: Any) -> None:
    status, err = deploy.call(method, path, body, token=None)
    assert status == 401 and err["error"] == "unauthorized" and "Bearer" in err["message"]
    status, err = deploy.call(method, path, body, token=TOKEN + "x")
    assert status == 401


def test_health_needs_no_token_and_ready_sees_the_worker(deploy: Stack) -> None:
    assert deploy.call("GET", "/healthz", token=None) == (200, {"status": "ok", "workers": None})
    status, ready = deploy.call("GET", "/readyz", token=None)
    assert status == 200 and ready["workers"] == 1


def test_openapi_schema_is_served(deploy: Stack) -> None:
    status, schema = deploy.call("GET", "/openapi.json", token=None)
    assert status == 200
    assert {"/v1/jobs", "/v1/jobs/{job_id}", "/v1/jobs/{job_id}/events", "/v1/jobs/{job_id}/cancel",
            "/healthz", "/readyz"} <= set(schema["paths"])


MALFORMED = [
    (b"{not json", "body", "not valid JSON"),
    (b'{"start_url": "http://127.0.0.1/"}', "body", "exactly one of 'task'"),
    (b'{"task": "x", "start_url": "not a url"}', "start_url", "URL"),
    (b'{"task": "x", "options": {"max_steps": 0}}', "options.max_steps", "greater than or equal to 1"),
    (b'{"task": "x", "priority": "urgent"}', "priority", "'high', 'normal' or 'low'"),
    (b'{"task": "x", "colour": "red"}', "colour", "Extra inputs are not permitted"),
    (b'{"script": [{"fly_to_moon": {}}]}', "script", "fly_to_moon"),
    (b'{"task": "x", "timeout": 100000}', "timeout", "less than or equal"),
    (b'{"task": "x", "timeout": 3600}', "timeout", "BROWSERD_VISIBILITY_TIMEOUT"),
    (b'{"task": "x", "allowed_domains": ["http://x.com/"]}', "allowed_domains", "not a domain name"),
    (b'[1, 2]', "body", "valid dictionary"),
]


@pytest.mark.parametrize(("raw", "field", "says"), MALFORMED)
def test_malformed_bodies_get_422_naming_the_field(deploy: Stack, raw: bytes, field: str, says: str) -> None:
    status, err = deploy.call("POST", "/v1/jobs", raw=raw)
    assert status == 422, err
    assert err["error"] == "invalid_request"
    assert field in [f["field"] for f in err["fields"]], err
    assert says in err["message"], err


def test_bad_query_values_are_named(deploy: Stack) -> None:
    status, err = deploy.call("GET", "/v1/jobs?state=sleeping&limit=0")
    assert status == 422 and {f["field"] for f in err["fields"]} == {"state", "limit"}


def test_unknown_job_and_endpoint_get_json_404(deploy: Stack) -> None:
    status, err = deploy.call("GET", "/v1/jobs/nope")
    assert status == 404 and "no job with id 'nope'" in err["message"]
    status, err = deploy.call("GET", "/v2/whatever")
    assert status == 404 and err["error"] == "not_found"


def test_a_job_result_is_kept_with_steps(deploy: Stack, site: StaticServer) -> None:
    job = deploy.submit({"script": [*script(site.url("/cdp/basic.html"), waits=0)[:1],
                                    {"extract_fields": {"fields": {"heading": "h1"}}}, {"done": {"text": "read"}}]})
    done = deploy.wait_state(job["id"], {"succeeded", "failed"})
    assert done["state"] == "succeeded", done["error"]
    assert done["result"]["final_answer"] == "read" and done["result"]["data"]["heading"]
    assert [s["actions"][0]["name"] for s in done["result"]["steps"]] == ["go_to_url", "extract_fields", "done"]
    assert done["created_at"] <= done["started_at"] <= done["first_command_at"] <= done["finished_at"]


def test_fuzzing_from_the_openapi_schema_finds_no_5xx(deploy: Stack) -> None:
    """Every operation, 25 generated requests each (hypothesis, driven by the served schema)."""
    schema = schemathesis.openapi.from_url(deploy.url + "/openapi.json")
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 7
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def no_server_error(case: Any) -> None:
            if case.path.endswith("/events"):
                case.query = {**(case.query or {}), "follow": "false"}  # a live stream waits for its job
            response = case.call(base_url=deploy.url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
            case.validate_response(response, checks=[not_a_server_error])

        no_server_error()
