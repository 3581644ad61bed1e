"""The console for tenants (the app in process, a real redis-server, no worker): a tenant's key logs
in and its pages show only its own jobs, batches and schedules (tenant B's pages never show A's
objects; A's ids are 404 pages to B, its forms too); its submissions are its jobs, within its
ceilings; revoking or rotating its key ends its console session at once; the operator's pages
(recipes, settings, tenants) are 404 to it; the admin's Tenants page creates, rotates and revokes
keys, each new key shown once."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from bench.tenancy import deployed
from tests.frontends.tenancy import ADMIN, tenant

PAGES = ("/ui/", "/ui/batches", "/ui/schedules", "/ui/submit", "/ui/counters")


@pytest.fixture
def api() -> Iterator[TestClient]:
    with deployed() as (c, _):  # RedBeat pointed at its Redis: schedules can be made
        yield c


def browser(api: TestClient) -> TestClient:
    """A fresh browser on the same app (on the app's own event loop): no console cookie yet. The
    API calls the tests make beside it carry their bearer header, which the console never reads."""
    api.cookies.clear()
    return api


def sign_in(b: TestClient, token: str) -> str:
    """Log in through the form; the CSRF token of its pages."""
    answer = b.post("/ui/login", data={"token": token, "next": "/ui/"})
    assert answer.status_code == 303 and answer.headers["location"] == "/ui/", answer.text
    return re.search(r'name="csrf" value="([0-9a-f]+)"', b.get("/ui/submit").text).group(1)


def key_of(headers: dict[str, str]) -> str:
    return headers["Authorization"].removeprefix("Bearer ")


def objects(api: TestClient, headers: dict[str, str], name: str) -> set[str]:
    """A job, a batch and a schedule of the tenant's; their ids and the texts they carry."""
    job = api.post("/v1/jobs", json={"task": f"{name}-secret-task", "labels": {"team": name}}, headers=headers).json()
    batch = api.post("/v1/batches", json={"jobs": [{"task": f"{name}-batch-task"}]}, headers=headers).json()
    schedule = api.post("/v1/schedules", json={"every": 3600, "name": f"{name}-schedule", "job": {"task": "s"}},
                        headers=headers).json()
    return {job["id"], batch["id"], schedule["id"], f"{name}-secret-task", f"{name}-schedule", f"team={name}"}


def test_tenant_b_console_never_shows_as_objects(api: TestClient) -> None:
    a, b = tenant(api, "acme"), tenant(api, "beta")
    theirs = objects(api, a, "acme") | objects(api, {}, "operator")
    mine = objects(api, b, "beta")
    job_a = api.get("/v1/jobs", headers=a).json()["jobs"][0]["id"]
    batch_a = api.get("/v1/batches", headers=a).json()[0]["id"]
    schedule_a = api.get("/v1/schedules", headers=a).json()[0]["id"]
    console = browser(api)
    csrf = sign_in(console, key_of(b))
    for path in PAGES:
        page = console.get(path)
        assert page.status_code == 200, path
        assert not [m for m in theirs if m in page.text], (path, [m for m in theirs if m in page.text])
    listing = console.get("/ui/").text
    assert "beta-secret-task" in listing or [m for m in mine if m in listing]
    assert "tenant beta" in listing and "/ui/settings" not in listing and "/ui/tenants" not in listing
    for path in (f"/ui/jobs/{job_a}", f"/ui/jobs/{job_a}/summary", f"/ui/jobs/{job_a}/events",
                 f"/ui/jobs/{job_a}/live", f"/ui/jobs/{job_a}/artifacts/page.html", f"/ui/batches/{batch_a}",
                 f"/ui/batches/{batch_a}/summary", f"/ui/batches/{batch_a}/results", f"/ui/schedules/{schedule_a}",
                 f"/ui/?batch={batch_a}", "/ui/recipes", "/ui/settings", "/ui/tenants"):
        page = console.get(path)
        assert page.status_code == 404, (path, page.status_code)
        assert not [m for m in theirs - {job_a, batch_a, schedule_a} if m in page.text], path
    for path in (f"/ui/jobs/{job_a}/cancel", f"/ui/jobs/{job_a}/pause", f"/ui/batches/{batch_a}/cancel",
                 f"/ui/schedules/{schedule_a}/run", f"/ui/schedules/{schedule_a}/pause", "/ui/tenants",
                 "/ui/tenants/acme/revoke"):
        assert console.post(path, data={"csrf": csrf, "name": "x"}).status_code == 404, path
    assert api.get(f"/v1/jobs/{job_a}", headers=a).json()["state"] == "queued"  # nothing of A's was touched
    assert api.get("/v1/tenants/acme").json()["revoked"] is False


def test_a_tenants_console_submission_is_its_job_within_its_ceiling(api: TestClient) -> None:
    a = tenant(api, "acme", max_steps=5)
    console = browser(api)
    csrf = sign_in(console, key_of(a))
    too_many = console.post("/ui/submit", data={"csrf": csrf, "kind": "task", "task": "x", "options.max_steps": "9"})
    assert too_many.status_code == 422 and "tenant &#39;acme&#39;" in too_many.text, too_many.text[-800:]
    made = console.post("/ui/submit", data={"csrf": csrf, "kind": "task", "task": "mine"})
    assert made.status_code == 303, made.text[-800:]
    job_id = made.headers["location"].rsplit("/", 1)[1]
    assert api.get(f"/v1/jobs/{job_id}").json()["tenant"] == "acme"
    assert console.get(made.headers["location"]).status_code == 200
    api.put("/v1/tenants/acme/limits", json={"max_queued": 1})
    over = console.post("/ui/submit", data={"csrf": csrf, "kind": "task", "task": "more"})
    assert over.status_code == 429 and "queued" in over.text


@pytest.mark.parametrize("action", ["revoke", "rotate"])
def test_revoking_or_rotating_a_key_ends_its_console_session_at_once(api: TestClient, action: str) -> None:
    a = tenant(api, "acme")
    console = browser(api)
    sign_in(console, key_of(a))
    assert console.get("/ui/").status_code == 200
    api.post(f"/v1/tenants/acme/{action}", json={})
    gone = console.get("/ui/")
    assert gone.status_code == 303 and gone.headers["location"].startswith("/ui/login"), action
    refused = browser(api).post("/ui/login", data={"token": key_of(a), "next": "/ui/"})
    assert refused.status_code == 401 and "tenant key" in refused.text  # the old key logs in no more
    assert browser(api).get(f"/ui/?token={key_of(a)}").headers["location"].startswith("/ui/login?")


def test_the_admins_tenants_page_creates_rotates_and_revokes_keys(api: TestClient) -> None:
    admin = browser(api)
    csrf = sign_in(admin, ADMIN)
    assert "No tenants" in admin.get("/ui/tenants").text
    made = admin.post("/ui/tenants", data={"csrf": csrf, "name": "acme"})
    assert made.status_code == 201
    key = re.search(r"<code data-key>(bdk_[^<]+)</code>", made.text).group(1)
    assert api.get("/v1/jobs", headers={"Authorization": f"Bearer {key}"}).status_code == 200  # a working key
    listing = admin.get("/ui/tenants")
    assert "acme" in listing.text and key not in listing.text and "data-key" not in listing.text  # shown once
    assert listing.headers["cache-control"] == "no-store"
    for bad, status in (("Acme!", 422), ("", 422), ("acme", 409)):
        answer = admin.post("/ui/tenants", data={"csrf": csrf, "name": bad})
        assert answer.status_code == status and "data-key" not in answer.text, bad
    assert admin.post("/ui/tenants", data={"name": "nocsrf"}).status_code == 403
    rotated = admin.post("/ui/tenants/acme/rotate", data={"csrf": csrf})
    new_key = re.search(r"<code data-key>(bdk_[^<]+)</code>", rotated.text).group(1)
    assert new_key != key and api.get("/v1/jobs", headers={"Authorization": f"Bearer {key}"}).status_code == 401
    assert admin.post("/ui/tenants/acme/revoke", data={"csrf": csrf}).status_code == 200
    assert api.get("/v1/jobs", headers={"Authorization": f"Bearer {new_key}"}).status_code == 401
    assert "revoked" in admin.get("/ui/tenants").text
    assert admin.post("/ui/tenants/nobody/rotate", data={"csrf": csrf}).status_code == 404
    assert admin.post("/ui/tenants/acme/delete", data={"csrf": csrf}).status_code == 404
