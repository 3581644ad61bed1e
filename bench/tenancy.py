"""Tenant B against tenant A's (and the operator's) objects: every route of the OpenAPI schema,
every MCP tool and every console page, with B's key; prints what leaked.

    python -m bench.tenancy        # one JSON line; exit 1 on a leak

The API runs in process on a real redis-server (no worker: jobs stay queued). Tenant A submits a
job, a batch and a schedule, and makes a credential set, a profile and a recipe; the operator makes
one of each of those three (under other names) and a job of its own. Every route naming a credential
set, profile or recipe is walked with A's name and with the operator's, and with ``?tenant=acme``
(the admin's filter, which a tenant's key must not honour); every console form naming one object
(cancel a job, batch or crawl) is posted by B's session with its CSRF token. (No interactive session is opened: that
needs a worker; the session routes are walked with an id that names none.) A leak is any answer to B that is not a
refusal (2xx/3xx) on a route naming one of those objects, or any answer that carries one of their
ids or names.

Then fair share, on a real stack (redis-server, ``browserd serve``, one worker running
``--slots`` jobs at once, Chromium): tenant A floods ``--flood`` script jobs (each a page and a
wait of ``--job-seconds``), and once A's jobs fill every slot, tenant B submits one.
``first_job_wait_s_under_flood`` is B's job's wait from submission to its start; the target is
one job's run time (``job_run_s``, A's jobs' mean) per free slot: B's job takes the first slot that
frees, so ``flood_jobs_started_ahead`` (A's jobs that started while B's waited) is 0. ``--flood 0``
skips it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from cryptography.fernet import Fernet
from fastapi.testclient import TestClient
from redbeat.schedulers import REDBEAT_REDIS_KEY

import daemon.console.pages as console_pages
from daemon.mcp.http import CALLER
from tests.frontends.tenancy import api_client
from tests.queue.stack import TOKEN, Stack, script, stack, wait_until
from tests.support.servers import serve
from tests.support.redis_server import RedisServer
from workers.jobs.queue.app import app as celery_app
from workers.jobs.recipes.models import Recipe, RecipeStep
from workers.jobs.recipes.store import RecipeStore
from workers.jobs.store.connection import connect
from workers.jobs.store.keys import Keys

SITE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "site"
REFUSED = {401, 404, 405, 409, 415, 422}  # 409/422: refused before reading anything (e.g. a bad body)
SECRET_VALUE = "victim-password-9f8e7d"
SECRET_A = "acme-password-1a2b3c"
CRAWL_START = "https://shop.example/acme-crawl-start"  # A's crawl: its start URL must show on none of B's pages


@dataclass
class Victims:
    """What B must never see: path parameter -> the value naming A's (or the operator's) object."""

    params: dict[str, str]
    markers: set[str] = field(default_factory=set)  # ids, names and values that must not appear
    owned: dict[str, str] = field(default_factory=dict)  # A's own named objects: path segment -> its name


@dataclass
class Report:
    routes_checked: int = 0
    mcp_tools_checked: int = 0
    console_pages_checked: int = 0
    console_actions_checked: int = 0
    cross_tenant_leaks: list[str] = field(default_factory=list)


def _key(c: TestClient, name: str) -> str:
    made = c.post("/v1/tenants", json={"name": name})
    assert made.status_code == 201, made.text
    return made.json()["key"]


def _as(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


def seed(c: TestClient, redis_url: str) -> tuple[str, Victims]:
    """Tenants acme (A) and beta (B), A's job and the operator's objects; B's key and what to hide."""
    key_a, key_b = _key(c, "acme"), _key(c, "beta")
    job_a = c.post("/v1/jobs", json={"task": "A's task", "labels": {"team": "acme"}, "idempotency_key": "same"},
                   headers=_as(key_a))
    assert job_a.status_code == 201, job_a.text
    job_op = c.post("/v1/jobs", json={"task": "the operator's task", "idempotency_key": "same"}).json()["id"]
    batch = c.post("/v1/batches", json={"jobs": [{"task": "batch job"}]}, headers=_as(key_a)).json()
    assert batch.get("tenant") == "acme", batch
    schedule = c.post("/v1/schedules", json={"every": 3600, "job": {"task": "scheduled"}}, headers=_as(key_a)).json()
    assert schedule.get("tenant") == "acme", schedule
    credentials = c.post("/v1/credentials", json={"name": "victim_shop", "secrets": {"password": SECRET_VALUE}})
    assert credentials.status_code in (200, 201), credentials.text
    profile = c.put("/v1/profiles/victim-profile", json={"cookies": [], "origins": []})
    assert profile.status_code in (200, 201), profile.text
    owned = c.post("/v1/credentials", json={"name": "acme_shop", "secrets": {"password": SECRET_A},
                                            "domains": ["shop.example"]}, headers=_as(key_a))
    assert owned.status_code == 201 and owned.json()["tenant"] == "acme", owned.text
    owned = c.put("/v1/profiles/acme-profile", json={"cookies": [], "origins": []}, headers=_as(key_a))
    assert owned.status_code == 200 and owned.json()["tenant"] == "acme", owned.text

    async def recipe() -> None:
        redis = connect(redis_url)
        try:
            for owner, name in ((None, "victim-recipe"), ("acme", "acme-recipe")):
                await RecipeStore(redis, Keys(), tenant=owner).save(Recipe(
                    name=name, version=1, task="open {{x}}",
                    steps=[RecipeStep(action="go_to_url", params={"url": "{{x}}"})]))
        finally:
            await redis.aclose()

    asyncio.run(recipe())
    crawl = c.post("/v1/crawls", json={"start_urls": [CRAWL_START], "max_pages": 1}, headers=_as(key_a))
    assert crawl.status_code == 201 and crawl.json()["tenant"] == "acme", crawl.text
    ids = {"job_id": job_a.json()["id"], "batch_id": batch["id"], "schedule_id": schedule["id"],
           "session_id": "0" * 32, "crawl_id": crawl.json()["id"], "delivery_id": "0" * 32}
    names = {"/credentials/": "victim_shop", "/profiles/": "victim-profile", "/recipes/": "victim-recipe",
             "/tenants/": "acme", "/artifacts/": "result.json"}
    owned_names = {"/credentials/": "acme_shop", "/profiles/": "acme-profile", "/recipes/": "acme-recipe"}
    markers = {*ids.values(), job_op, *names.values(), *owned_names.values(), SECRET_VALUE, SECRET_A,
               CRAWL_START.removeprefix("https://")} - {
        "0" * 32, "result.json"}
    return key_b, Victims({**ids, **{f"name{k}": v for k, v in names.items()}, "job_op": job_op}, markers,
                          owned_names)


def _fill(path: str, victims: Victims, job_key: str, owned: bool = False) -> str:
    """``path`` naming the victims' objects (``owned``: A's own named objects, not the operator's)."""
    def value(match: re.Match[str]) -> str:
        param = match.group(1)
        if param == "name":
            if owned:
                return next(v for k, v in victims.owned.items() if k in path)
            prefix = next(k for k in victims.params if k.startswith("name") and k[4:] in path)
            return victims.params[prefix]
        return victims.params[job_key] if param == "job_id" else victims.params[param]

    return re.sub(r"\{(\w+)\}", value, path)


def _leaks(text: str, victims: Victims, sent: str = "") -> list[str]:
    """Their ids, names or values in an answer, besides those the caller sent itself (a 404 names
    the id it was asked for)."""
    return sorted(m for m in victims.markers if m in text and m not in sent)


def walk_routes(c: TestClient, key_b: str, victims: Victims, report: Report, under: str = "/v1/") -> None:
    """Every operation of the schema under ``under``, as ``key_b``, naming the victims' objects."""
    for path, methods in c.app.openapi()["paths"].items():  # type: ignore[attr-defined]
        if not path.startswith(under):
            continue
        owns = "{name}" in path and any(k in path for k in victims.owned)
        for method in methods:
            for job_key, owned in ((("job_id", False), ("job_op", False)) if "{job_id}" in path else
                                   (("job_id", False), ("job_id", True)) if owns else (("job_id", False),)):
                url = _fill(path, victims, job_key, owned)
                queries = ["?follow=false"] if path.endswith("/events") else [""]
                if method == "put" and path.startswith("/v1/profiles/"):
                    # a write over version 1: a tenant's own name is its own (409: it has none), while
                    # reaching A's or the operator's (version 1 each) would answer 200
                    queries = ["?if_version=1"]
                if ("{" not in path and method == "get") or owned:
                    queries.append(queries[0] + ("&" if queries[0] else "?") + "tenant=acme")
                for query in queries:
                    report.routes_checked += 1
                    kwargs: dict[str, Any] = {"headers": _as(key_b)}
                    if method in ("post", "put"):  # a create (no id in the path) is refused, never waits on a worker
                        kwargs["json"] = {} if "{" in path else {"probe": True}
                    answer = c.request(method.upper(), url + query, **kwargs)
                    named = "{" in path
                    leaked = _leaks(answer.text, victims, url)
                    if (named and answer.status_code not in REFUSED) or leaked:
                        report.cross_tenant_leaks.append(f"{method.upper()} {url}{query} -> {answer.status_code} {leaked}")


def walk_mcp(c: TestClient, key_b: str, victims: Victims, report: Report) -> None:
    """Every MCP tool, called as B (its calls reach the API with B's key), naming A's objects."""
    server = c.app.state.mcp.server  # type: ignore[attr-defined]
    arguments = {"job_id": victims.params["job_id"], "batch_id": victims.params["batch_id"],
                 "session_id": victims.params["session_id"], "task": "x",
                 # a submission naming A's credential set or profile: refused as if none existed
                 "spec": {"task": "x", "credentials": victims.owned.get("/credentials/", "x")},
                 "jobs": [{"task": "x", "profile": victims.owned.get("/profiles/", "x")}], "url": "https://example.com/", "index": 0, "text": "x", "option": "x",
                 "direction": "down", "wait_seconds": 0, "name": "sms", "value": "482913",
                 "allowed_networks": ["169.254.169.254/32"]}  # open_session: refused, never waits on a worker

    async def go() -> None:
        token = CALLER.set(key_b)
        try:
            for tool in await server.list_tools():
                report.mcp_tools_checked += 1
                wanted = set(tool.input_schema.get("properties", {}))
                args = {k: v for k, v in arguments.items() if k in wanted}
                try:
                    answer = json.dumps(await server.call_tool(tool.name, args), default=str)
                except Exception as exc:  # a refusal (the API's 404) surfaces as the tool's error
                    answer = str(exc)
                leaked = _leaks(answer, victims, json.dumps(args))
                if leaked:
                    report.cross_tenant_leaks.append(f"mcp {tool.name} -> {leaked}")
            for template in await server.list_resource_templates():
                report.mcp_tools_checked += 1
                uri = _fill(template.uri_template, victims, "job_id")
                try:
                    answer = json.dumps([str(part) for part in await server.read_resource(uri)])
                except Exception as exc:
                    answer = str(exc)
                leaked = _leaks(answer, victims, uri)
                if leaked:
                    report.cross_tenant_leaks.append(f"mcp resource {uri} -> {leaked}")
        finally:
            CALLER.reset(token)

    c.portal.call(go)  # type: ignore[union-attr]  (on the app's own event loop)


def walk_console(c: TestClient, key_b: str, victims: Victims, report: Report) -> None:
    """Every console page, signed in with B's key: a page naming one of A's (or the operator's)
    objects must be refused, and no page may carry their ids, names or values."""
    c.cookies.clear()
    login = c.post("/ui/login", data={"token": key_b, "next": "/ui/"}, headers={"Origin": str(c.base_url)})
    if login.status_code != 303:
        report.cross_tenant_leaks.append(f"console login with a tenant key answered {login.status_code}")
    try:
        for route in console_pages.router.routes:
            path = getattr(route, "path", "")
            if "GET" not in (getattr(route, "methods", None) or ()):
                continue
            report.console_pages_checked += 1
            url = _fill(path, victims, "job_id")
            answer = c.get(url, headers={"Accept": "text/html"})
            named = "{" in path
            leaked = _leaks(answer.text, victims, url)
            if (named and answer.status_code not in REFUSED) or leaked:
                report.cross_tenant_leaks.append(f"console GET {url} -> {answer.status_code} {leaked}")
        _console_actions(c, victims, report)
    finally:
        c.cookies.clear()


def _console_actions(c: TestClient, victims: Victims, report: Report) -> None:
    """Every console form naming one object (cancel a job, a batch, a crawl, ...), posted by B's
    signed-in session with its own CSRF token: each must be refused, and A's crawl must run on."""
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', c.get("/ui/submit").text)
    csrf = found.group(1) if found else ""
    for route in console_pages.router.routes:
        path = getattr(route, "path", "")
        params = re.findall(r"\{(\w+)\}", path)
        if "POST" not in (getattr(route, "methods", None) or ()) or not params or \
                any(p not in victims.params for p in params):
            continue  # a create (no object named), or a route whose other parts name no victim
        report.console_actions_checked += 1
        url = _fill(path, victims, "job_id")
        answer = c.post(url, data={"csrf": csrf}, headers={"Accept": "text/html", "Origin": str(c.base_url)})
        leaked = _leaks(answer.text, victims, url)
        if answer.status_code not in REFUSED or leaked:
            report.cross_tenant_leaks.append(f"console POST {url} -> {answer.status_code} {leaked}")
    state = c.get(f"/v1/crawls/{victims.params['crawl_id']}").json().get("state")  # the admin's bearer header
    if state != "running":
        report.cross_tenant_leaks.append(f"A's crawl is {state} after B's console walk")


def _fresh_redbeat() -> None:
    """RedBeat keeps its configuration and client on the app: read them again from the conf."""
    for cached in ("redbeat_conf", REDBEAT_REDIS_KEY):
        if hasattr(celery_app, cached):
            delattr(celery_app, cached)


@contextmanager
def deployed() -> Iterator[tuple[TestClient, str]]:
    server = RedisServer().start()
    # the Celery app (its queue, RedBeat's schedules) is configured once per process: point it here
    before = {name: celery_app.conf.get(name) for name in ("broker_url", "redbeat_redis_url")}
    celery_app.conf.update(broker_url=server.url, redbeat_redis_url=server.url)
    _fresh_redbeat()
    try:
        with api_client(server.url, secrets_key=Fernet.generate_key().decode()) as c:
            yield c, server.url
    finally:
        celery_app.conf.update(before)
        _fresh_redbeat()
        server.stop()


def walk(c: TestClient, key: str, victims: Victims) -> Report:
    """Routes, MCP tools and console pages, as ``key``."""
    report = Report()
    walk_routes(c, key, victims, report)
    walk_mcp(c, key, victims, report)
    walk_console(c, key, victims, report)
    return report


def run() -> Report:
    with deployed() as (c, redis_url):
        key_b, victims = seed(c, redis_url)
        return walk(c, key_b, victims)


@dataclass
class Flood:
    flood_jobs: int = 0
    first_job_wait_s_under_flood: float | None = None
    job_run_s: float | None = None
    slots: int = 0
    flood_submit_s: float | None = None
    flood_jobs_started_ahead: int | None = None


def flood(jobs: int, slots: int, job_seconds: int) -> Flood:
    """Tenant A's ``jobs`` queued, tenant B's first job: how long B waits for a slot."""
    out = Flood(flood_jobs=jobs, slots=slots)
    if not jobs:
        return out
    with serve(SITE) as site, stack(log_level="WARNING", job_timeout=120) as s:
        page = site.url("/cdp/basic.html")
        keys = {name: _ok(s, "POST", "/v1/tenants", {"name": name, "limits": {"allowed_networks": ["127.0.0.1/32"]}})
                ["key"] for name in ("acme", "beta")}
        s.start_worker(slots)
        loopback = {"allowed_networks": ["127.0.0.1/32"]}  # a tenant's job opens only what it names
        body = [{"script": script(page, waits=job_seconds, text=f"A{n}"), **loopback} for n in range(jobs)]
        started = time.perf_counter()
        batch = _ok(s, "POST", "/v1/batches", body, token=keys["acme"])
        out.flood_submit_s = round(time.perf_counter() - started, 3)
        wait_until(lambda: _ok(s, "GET", f"/v1/batches/{batch['id']}")["counts"]["running"] >= slots, 120,
                   "tenant A's jobs to fill every slot")
        b = _ok(s, "POST", "/v1/jobs", {"script": script(page, waits=job_seconds, text="B"), **loopback},
                token=keys["beta"])
        done = s.wait_state(b["id"], {"succeeded", "failed"}, timeout=60 + 10 * job_seconds)
        submitted, began = _at(done["created_at"]), _at(done["started_at"])
        out.first_job_wait_s_under_flood = round(began - submitted, 2)
        _ok(s, "POST", f"/v1/batches/{batch['id']}/cancel", {})
        ahead = [j for j in _ok(s, "GET", "/v1/jobs?tenant=acme&limit=200")["jobs"]
                 if j.get("started_at") and submitted < _at(j["started_at"]) < began]
        out.flood_jobs_started_ahead = len(ahead)  # A's jobs that took a slot while B's waited: the fair answer is 0
        runs = [_at(j["finished_at"]) - _at(j["started_at"]) for j in
                _ok(s, "GET", "/v1/jobs?state=succeeded&tenant=acme&limit=50")["jobs"] if j.get("started_at")]
        out.job_run_s = round(sum(runs) / len(runs), 2) if runs else None
    return out


def _ok(s: Stack, method: str, path: str, body: Any = None, token: str | None = TOKEN) -> Any:
    status, answer = s.call(method, path, body, token=token)
    assert 200 <= status < 300, (method, path, status, answer)
    return answer


def _at(value: str) -> float:
    return datetime.fromisoformat(value).timestamp()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flood", type=int, default=2000, help="tenant A's queued jobs (0: no fair-share run)")
    parser.add_argument("--slots", type=int, default=2, help="jobs the worker runs at once")
    parser.add_argument("--job-seconds", type=int, default=2, help="seconds each flood job waits on its page")
    args = parser.parse_args()
    report = run()
    fair = flood(args.flood, args.slots, args.job_seconds)
    print(json.dumps({**report.__dict__, **fair.__dict__}))
    return 1 if report.cross_tenant_leaks else 0


if __name__ == "__main__":
    sys.exit(main())
