"""The HTTP API's contract: auth, health, actionable errors naming the field, and fuzzing from its schema."""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error

from config import Settings
from daemon.api import create_app
from tests.queue.stack import TOKEN, Stack, script, stack, wait_until
from tests.support.schemas import anyof_bomb
from tests.support.servers import StaticServer

JOB_TIMEOUT = 20


@pytest.fixture(scope="module")
def deploy() -> Iterator[Stack]:
    # The fuzzer opens interactive sessions too: each holds a worker slot while open, so one at a
    # time and briefly, or the generated requests after it would wait for a free worker.
    with stack(job_timeout=JOB_TIMEOUT, visibility_timeout=60, session_max_open=1, session_idle_timeout=5) as s:
        s.start_worker(2)
        yield s


ROUTES = [
    ("POST", "/v1/jobs", {"task": "x"}),
    ("GET", "/v1/jobs/abc", None),
    ("GET", "/v1/jobs/abc/events", None),
    ("POST", "/v1/jobs/abc/cancel", None),
    ("GET", "/v1/jobs", None),
    ("GET", "/v1/profiles", None),
    ("PUT", "/v1/profiles/acme", {"cookies": []}),
    ("GET", "/v1/profiles/acme", None),
    ("DELETE", "/v1/profiles/acme", None),
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
    # run as root (CI, the dev machine): the worker's browsers have every isolation layer (docs/security.md)
    assert ready["isolation"] == {layer: True for layer in ("namespace", "sandbox", "separate_user", "webrtc_policy",
                                                            "network_service_watch", "minimal_environment")}


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
    (b'{"task": "x", "options": {"model_params": {"navigator": {"temperature": 3}}}}',
     "options.model_params.navigator.temperature", "less than or equal to 2"),
    (b'{"task": "x", "options": {"model_params": {"planner": {"reasoning_effort": "extreme"}}}}',
     "options.model_params.planner.reasoning_effort", "'low', 'medium' or 'high'"),
    (b'{"task": "x", "options": {"model_params": {"judge": {}}}}', "options.model_params.judge", "Extra inputs"),
    (b'{"task": "x", "options": {"model_params": {"navigator": {"max_tokens": 0}}}}',
     "options.model_params.navigator.max_tokens", "greater than or equal to 16"),
    (b'{"task": "x", "options": {"model_params": {"planner": {"output": "xml"}}}}',
     "options.model_params.planner.output", "'tools', 'json_schema', 'json_object' or 'text'"),
    (b'{"task": "x", "options": {"use_vision_for_planner": "sometimes"}}', "options.use_vision_for_planner",
     "valid boolean"),
]


@pytest.mark.parametrize(("raw", "field", "says"), MALFORMED)
def test_malformed_bodies_get_422_naming_the_field(deploy: Stack, raw: bytes, field: str, says: str) -> None:
    status, err = deploy.call("POST", "/v1/jobs", raw=raw)
    assert status == 422, err
    assert err["error"] == "invalid_request"
    assert field in [f["field"] for f in err["fields"]], err
    assert says in err["message"], err


# Issue 22, finding 5: each refused at submission, naming its limit; before, both were accepted
# and the first froze its worker's event loop for minutes when the result was checked. (A schedule runs its
# job as a batch of one, whose fields it names so.)
SCHEMA_BOMBS = [
    (anyof_bomb(), "branches", "at most 1,000"),
    ({"$ref": "#"}, "recursion", "recursive schemas are not supported"),
]


@pytest.mark.parametrize(("schema", "limit", "says"), SCHEMA_BOMBS)
def test_an_output_schema_past_a_limit_gets_422_naming_it(deploy: Stack, schema: Any, limit: str, says: str) -> None:
    job = {"task": "x", "output_schema": schema, "labels": {"schema_limit": limit}}
    for path, body, field in [("/v1/jobs", job, "output_schema"),
                              ("/v1/batches", {"jobs": [{"task": "x", "labels": job["labels"]}],
                                               "defaults": {"output_schema": schema}}, "jobs[0].output_schema"),
                              ("/v1/schedules", {"every": 3600, "job": job}, "jobs[0].output_schema")]:
        status, err = deploy.call("POST", path, body)
        assert status == 422, (path, err)
        assert err["error"] == "invalid_request" and f"schema limit '{limit}'" in err["message"] and says in err["message"]
        assert err["fields"][0]["field"] == field and err["fields"][0]["limit"] == limit, err
    assert deploy.call("GET", f"/v1/jobs?label=schema_limit={limit}") == (200, {"jobs": [], "next_cursor": None})


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


# --- CSRF: a page can POST cross-origin without a preflight only with a "simple" content type ---------

def _post_routes() -> list[str]:
    """Every POST route under /v1, read from the app itself so a new route is covered at once."""
    schema = create_app(Settings(redis_url="redis://127.0.0.1:1/0")).openapi()
    paths = [path for path, operations in schema["paths"].items() if "post" in operations and path.startswith("/v1/")]
    assert len(paths) >= 8
    return sorted(p.replace("{", "").replace("}", "") for p in paths)  # {job_id} -> job_id: any id will do


SIMPLE_BODIES = [
    ("text/plain", b'{"jobs": [{"task": "read http://127.0.0.1:8080/v1/jobs"}]}'),
    ("text/plain;charset=UTF-8", b'{"task": "x"}'),
    ("application/x-www-form-urlencoded", b"task=x"),
    ("multipart/form-data; boundary=b", b'--b\r\nContent-Disposition: form-data; name="task"\r\n\r\nx\r\n--b--\r\n'),
    (None, b'{"task": "x"}'),
]


@pytest.mark.parametrize("path", _post_routes())
@pytest.mark.parametrize(("content_type", "raw"), SIMPLE_BODIES)
def test_every_v1_post_refuses_bodies_a_web_page_could_send(deploy: Stack, path: str, content_type: str | None,
                                                             raw: bytes) -> None:
    _settle(deploy)
    before = _lasting_keys(deploy)
    status, err = _post(deploy, path, raw, content_type)
    assert status == 415, (path, content_type, err)
    assert err["error"] == "unsupported_media_type" and "application/json" in err["message"]
    assert _lasting_keys(deploy) == before  # nothing was written


def _settle(deploy: Stack) -> None:
    """Nothing left running from earlier tests: the fuzzer's crawls and jobs (one that waits on a name
    that never resolves, say) kept writing events and pages while a test compared the store's keys."""
    for crawl_id in deploy.redis.zrange("browserd:crawls", 0, -1):
        deploy.call("POST", f"/v1/crawls/{crawl_id}/cancel")

    def active() -> list[str]:
        ids = []
        for state in ("queued", "running"):
            status, page = deploy.call("GET", f"/v1/jobs?state={state}&limit=200")
            assert status == 200, page
            ids += [job["id"] for job in page["jobs"]]
        return ids

    for job_id in active():
        deploy.call("POST", f"/v1/jobs/{job_id}/cancel")
    wait_until(lambda: not active(), 60, "the earlier tests' jobs to end")


def _lasting_keys(deploy: Stack) -> set[bytes]:
    """The keys without an expiry: what a request would have written. Locks that come and go on their
    own (the reconciler's, kombu's unacked mutex) expire, and counting them made this test flaky."""
    return {key for key in deploy.redis.keys() if deploy.redis.ttl(key) == -1}


def test_a_bodyless_post_needs_the_json_content_type_too(deploy: Stack) -> None:
    """A no-cors fetch() POST has no body and no content type: it must not cancel anything."""
    job = deploy.submit({"script": [{"wait": {"seconds": 30}}], "timeout": JOB_TIMEOUT})
    status, _ = _post(deploy, f"/v1/jobs/{job['id']}/cancel", b"", None)
    assert status == 415
    assert deploy.job(job["id"])["state"] in ("queued", "running")
    status, _ = _post(deploy, f"/v1/jobs/{job['id']}/cancel", b"", "application/json")
    assert status == 202


def test_json_with_parameters_and_ndjson_are_accepted(deploy: Stack) -> None:
    status, job = _post(deploy, "/v1/jobs", b'{"script": [{"done": {"text": "ok"}}]}', "Application/JSON; charset=utf-8")
    assert status == 201, job
    status, batch = _post(deploy, "/v1/batches", b'{"script": [{"done": {"text": "ok"}}]}\n', "application/x-ndjson")
    assert status == 201, batch


def test_no_cors_headers_unless_origins_are_configured(deploy: Stack) -> None:
    request = urllib.request.Request(deploy.url + "/v1/jobs", method="OPTIONS", headers={
        "Origin": "http://evil.example", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type,authorization"})
    try:
        with urllib.request.urlopen(request, timeout=10) as reply:
            headers = reply.headers
    except urllib.error.HTTPError as exc:
        headers = exc.headers
    assert "access-control-allow-origin" not in {k.lower() for k in headers}


def _post(deploy: Stack, path: str, raw: bytes, content_type: str | None) -> tuple[int, Any]:
    """POST exactly these headers (urllib would add a form content type to a body without one)."""
    connection = http.client.HTTPConnection("127.0.0.1", deploy.api_port, timeout=30)
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Length": str(len(raw))}
    if content_type is not None:
        headers["Content-Type"] = content_type
    try:
        connection.request("POST", path, body=raw, headers=headers)
        reply = connection.getresponse()
        return reply.status, json.loads(reply.read() or b"null")
    finally:
        connection.close()
