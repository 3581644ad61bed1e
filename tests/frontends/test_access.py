"""The console over HTTP (the app in process, a real redis-server): who gets in, and what is refused."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from config import load_settings
from daemon.api import create_app
from daemon.console.auth import COOKIE
from tests.frontends.console import ORIGIN, TOKEN, console_client, login
from workers.jobs.model.result import JobResult, NavigatorBrain, StepRecord
from workers.jobs.model.status import JobStatus

@pytest.fixture
def client(redis_url: str) -> Iterator[TestClient]:
    with console_client(redis_url, llm_base_url="http://u:llm-pw@127.0.0.1:9/v1") as c:
        yield c


def test_pages_need_a_session(client: TestClient) -> None:
    for path in ("/ui/", "/ui/submit", "/ui/settings", "/ui/batches", "/ui/jobs/" + "0" * 32 + "/events"):
        resp = client.get(path)
        assert resp.status_code == 303 and resp.headers["location"].startswith("/ui/login?next="), path
    fragment = client.get("/ui/counters", headers={"HX-Request": "true"})
    assert fragment.status_code == 401 and fragment.headers["HX-Redirect"].startswith("/ui/login")
    assert client.get("/ui/static/htmx.min.js").status_code == 200  # assets are public


def test_login_form_sets_an_httponly_strict_cookie_without_the_token(client: TestClient) -> None:
    wrong = client.post("/ui/login", data={"token": "nope", "next": "/ui/"})
    assert wrong.status_code == 401 and "not the API token" in wrong.text and COOKIE not in wrong.headers.get("set-cookie", "")
    resp = client.post("/ui/login", data={"token": TOKEN, "next": "https://evil.example/"})
    assert resp.status_code == 303 and resp.headers["location"] == "/ui/"
    cookie = resp.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and "Path=/ui" in cookie and TOKEN not in cookie
    assert client.get("/ui/").status_code == 200


def test_a_token_link_is_exchanged_for_the_cookie_and_leaves_the_url(client: TestClient) -> None:
    resp = client.get(f"/ui/settings?token={TOKEN}&x=1")
    assert resp.status_code == 303 and resp.headers["location"] == "/ui/settings?x=1"
    assert COOKIE in resp.headers["set-cookie"]
    page = client.get("/ui/settings?x=1")
    assert page.status_code == 200 and TOKEN not in page.text
    bad = TestClient(client.app, base_url=ORIGIN, follow_redirects=False).get("/ui/?token=wrong")
    assert bad.status_code == 303 and "failed=1" in bad.headers["location"] and "wrong" not in bad.headers["location"]


def test_state_changes_need_the_csrf_token_and_the_same_origin(client: TestClient) -> None:
    csrf = login(client)
    body = {"kind": "task", "task": "do it"}
    assert client.post("/ui/submit", data=body).status_code == 403
    assert client.post("/ui/submit", data={**body, "csrf": "0" * 64}).status_code == 403
    assert client.post("/ui/submit", data={**body, "csrf": csrf}, headers={"Origin": "http://evil.example"}).status_code == 403
    assert client.post("/ui/submit", data={**body, "csrf": csrf}, headers={"Sec-Fetch-Site": "cross-site"}).status_code == 403
    assert client.post("/ui/submit", json={**body, "csrf": csrf}).status_code == 403  # forms only
    assert client.post("/ui/login", data={"token": TOKEN}, headers={"Origin": "http://evil.example"}).status_code == 403
    ok = client.post("/ui/submit", data={**body, "csrf": csrf}, headers={"Origin": ORIGIN})
    assert ok.status_code == 303 and ok.headers["location"].startswith("/ui/jobs/")
    job_id = ok.headers["location"].rsplit("/", 1)[1]
    assert client.post(f"/ui/jobs/{job_id}/cancel", data={"csrf": csrf}, headers={"X-CSRF-Token": "bad"}).status_code == 403
    assert client.post(f"/ui/jobs/{job_id}/cancel", headers={"X-CSRF-Token": csrf}).status_code == 303
    assert "cancelled" in client.get(f"/ui/jobs/{job_id}").text
    assert client.get("/v1/jobs/" + job_id).status_code == 401, "the console cookie is no API credential"


def test_job_text_is_shown_as_text_never_markup(client: TestClient) -> None:
    csrf = login(client)
    hostile = '<img src=x onerror="alert(1)"><script>alert(2)</script>'
    resp = client.post("/ui/submit", data={"csrf": csrf, "kind": "task", "task": hostile, "labels": "k=<b>v</b>"})
    page = client.get(resp.headers["location"])
    assert "<script>alert(2)" not in page.text and "<img src=x" not in page.text
    assert "&lt;script&gt;alert(2)" in page.text
    assert "script-src 'self'" in page.headers["content-security-policy"]
    assert "<b>v</b>" not in client.get("/ui/").text


def test_the_step_stream_carries_the_navigators_words_as_data_not_markup(client: TestClient) -> None:
    """The step view draws each step from the console's event stream: the navigator's evaluation,
    memory and next goal travel there as JSON strings (steps.js sets them as text)."""
    csrf = login(client)
    job_id = client.post("/ui/submit", data={"csrf": csrf, "kind": "task", "task": "look"}).headers["location"] \
        .rsplit("/", 1)[1]
    store = client.app.state.store
    claim = client.portal.call(lambda: store.start(job_id, worker="w", max_attempts=1, stale_after=60))
    hostile = NavigatorBrain(evaluation_previous_goal="Success", memory="<script>alert(1)</script>", next_goal="go on")
    client.portal.call(lambda: store.progress(job_id, claim.attempt, step=StepRecord(step=1, brain=hostile)))
    client.portal.call(lambda: store.finish(job_id, claim.attempt, JobResult(status=JobStatus.succeeded)))
    stream = client.get(f"/ui/jobs/{job_id}/events")
    assert stream.headers["content-type"].startswith("text/event-stream")
    steps = [json.loads(line[6:]) for line in stream.text.splitlines() if line.startswith("data: {\"step\"")]
    assert [s["brain"] for s in steps] == [hostile.model_dump()]
    assert "<script>" not in client.get(f"/ui/jobs/{job_id}").text


def test_settings_are_masked_and_unknown_things_are_404(client: TestClient) -> None:
    login(client)
    page = client.get("/ui/settings").text
    assert "BROWSERD_API_TOKEN" in page and TOKEN not in page and "llm-pw" not in page and "********" in page
    assert client.get("/ui/jobs/" + "0" * 32).status_code == 404
    assert client.get("/ui/batches/nope").status_code == 404
    assert client.get("/ui/schedules/nope").status_code == 404
    bad = client.get("/ui/?label=nokey")
    assert bad.status_code == 422 and "not key=value" in bad.text


def test_a_signed_out_cookie_is_refused_even_when_replayed(client: TestClient) -> None:
    first = login(client, "/ui/")
    kept = client.cookies.get(COOKIE)
    assert kept and client.get("/ui/").status_code == 200
    assert client.post("/ui/logout", data={"csrf": first}).status_code == 303
    client.cookies.set(COOKIE, kept)  # a copy of the cookie: another tab, a proxy's log, malware
    replayed = client.get("/ui/")
    assert replayed.status_code == 303 and replayed.headers["location"].startswith("/ui/login")
    posted = client.post("/ui/submit", data={"kind": "task", "task": "x", "csrf": first})
    assert posted.status_code == 303 and posted.headers["location"].startswith("/ui/login")
    assert client.get("/v1/jobs").status_code == 401  # the API never took the cookie
    client.cookies.clear()
    login(client, "/ui/")  # signing in again makes a new session, which works
    assert client.cookies.get(COOKIE) != kept and client.get("/ui/").status_code == 200


def test_the_settings_page_masks_secret_query_parameters(redis_url: str) -> None:
    with console_client(redis_url, llm_base_url="https://llm.example/openai?api-version=2024&api-key=llm-key-123",
                        cdp_urls="wss://chrome.example/?token=cdp-tok") as c:
        login(c)
        page = c.get("/ui/settings").text
    assert "llm-key-123" not in page and "cdp-tok" not in page
    assert "api-version=2024" in page and "llm.example/openai" in page


def test_without_a_token_the_console_is_open_but_still_checks_csrf(redis_url: str) -> None:
    app = create_app(load_settings(redis_url=redis_url))
    with TestClient(app, base_url=ORIGIN, follow_redirects=False) as c:
        page = c.get("/ui/submit")
        assert page.status_code == 200
        assert c.post("/ui/submit", data={"kind": "task", "task": "x"}).status_code == 403
        csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', page.text).group(1)
        assert c.post("/ui/submit", data={"kind": "task", "task": "x", "csrf": csrf}).status_code == 303
