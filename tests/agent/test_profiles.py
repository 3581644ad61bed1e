"""Auth profiles in real Chromium: a login page sets a cookie (httpOnly, from the server) and
localStorage; a job saves that state; a later job starting from it is logged in; jobs that did not
ask for it see nothing of it. Playwright-format states go in and come out.

Profiles live where a worker's jobs find them, sealed in a real redis-server's profile store; each
job runs through the pipeline (``tests.support.jobs``) with that store around it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import pytest_asyncio
from cryptography.fernet import Fernet

import cdp
from config import load_settings
from tests.support.jobs import run_job
from tests.support.redis_server import RedisServer
from workers.jobs.model.result import JobResult
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import FailureCategory, JobStatus
from workers.jobs.profiles.models import StorageState
from workers.jobs.profiles.store import ProfileStore
from workers.jobs.store.connection import connect

LOGIN = """<!doctype html><title>login</title><h1>signed in</h1>
<script>localStorage.setItem('token', 'tok-' + 41); document.cookie = 'theme=dark; path=/; max-age=3600';</script>"""
ACCOUNT = """<!doctype html><title>account</title><div id="server">SERVER</div><div id="token"></div>
<div id="theme"></div><div id="has-token"></div>
<script>document.getElementById('token').textContent = localStorage.getItem('token') || 'no token';
document.getElementById('has-token').textContent = localStorage.getItem('token') ? 'token kept' : 'no token';
document.getElementById('theme').textContent = document.cookie || 'no cookie';</script>"""


class LoginSite:
    """``/login`` answers with an httpOnly session cookie; ``/account`` says whether it came back."""

    def __init__(self) -> None:
        self.cookies: list[str] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                cookie = self.headers.get("Cookie") or ""
                site.cookies.append(cookie)
                extra: list[tuple[str, str]] = []
                if self.path == "/login":
                    body = LOGIN
                    extra.append(("Set-Cookie", "sid=s-1234; Path=/; HttpOnly; SameSite=Lax; Max-Age=3600"))
                else:
                    body = ACCOUNT.replace("SERVER", "signed in" if "sid=s-1234" in cookie else "anonymous")
                data = body.encode()
                self.send_response(200)
                for name, value in [("Content-Type", "text/html"), ("Content-Length", str(len(data))), *extra]:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.origin = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def login_site() -> Iterator[LoginSite]:
    site = LoginSite()
    yield site
    site.close()


def _account(site: LoginSite, **fields: object) -> JobSpec:
    return JobSpec(script=[{"go_to_url": {"url": f"{site.origin}/account"}},
                           {"extract_fields": {"fields": {"server": "#server", "token": "#token", "theme": "#theme"}}}],
                   **fields)


class Profiles:
    """The shared store's auth profiles, and jobs run with it around them (as on a worker)."""

    def __init__(self, url: str) -> None:
        self.redis = connect(url)
        self.settings = load_settings(secrets_key=Fernet.generate_key().decode())
        self.store = ProfileStore(self.redis, self.settings)

    async def run(self, spec: JobSpec, lease: cdp.Lease) -> JobResult:
        return await run_job(spec, lease, settings=self.settings, redis=self.redis)

    async def saved(self, name: str) -> list[StorageState]:
        """Every save of profile ``name`` (its version counts them), the latest state for each."""
        info = await self.store.info(name)
        return [] if info is None else [await self.store.state(name)] * info.version


@pytest_asyncio.fixture
async def profiles(redis: RedisServer) -> AsyncIterator[Profiles]:
    kept = Profiles(redis.url)
    await kept.redis.flushdb()
    yield kept
    await kept.redis.aclose()


async def test_a_saved_login_lets_a_later_job_start_logged_in(pool, login_site, profiles):
    login = JobSpec(save_profile="acme", script=[{"go_to_url": {"url": f"{login_site.origin}/login"}}])
    async with pool.lease() as lease:
        result = await profiles.run(login, lease)
    assert result.status == JobStatus.succeeded, result.error
    [state] = await profiles.saved("acme")
    cookies = {c.name: c for c in state.cookies}
    assert cookies["sid"].value == "s-1234" and cookies["sid"].httpOnly and cookies["sid"].sameSite == "Lax"
    assert cookies["theme"].value == "dark" and cookies["theme"].expires > 0
    assert [(o.origin, [(i.name, i.value) for i in o.localStorage]) for o in state.origins] == [
        (login_site.origin, [("token", "tok-41")])]
    assert "s-1234" not in result.model_dump_json() and "tok-41" not in result.model_dump_json()

    async with pool.lease() as lease:
        later = await profiles.run(_account(login_site, profile="acme"), lease)
    assert later.status == JobStatus.succeeded, later.error
    assert later.data == {"server": "signed in", "token": "tok-41", "theme": "theme=dark"}
    assert "sid=s-1234" in login_site.cookies[-1]  # the first request already carried it

    async with pool.lease() as lease:  # isolation: a job that did not ask for the profile
        other = await profiles.run(_account(login_site), lease)
    assert other.data == {"server": "anonymous", "token": "no token", "theme": "no cookie"}


async def test_a_playwright_storage_state_goes_in_and_comes_back_out(pool, login_site, profiles):
    host = login_site.origin.split("//")[1].split(":")[0]
    brought = StorageState.model_validate({
        "cookies": [{"name": "sid", "value": "s-1234", "domain": host, "path": "/", "expires": -1,
                     "httpOnly": True, "secure": False, "sameSite": "Lax"},
                    {"name": "theme", "value": "light", "domain": host, "path": "/", "expires": 4102444800,
                     "httpOnly": False, "secure": False, "sameSite": "Lax"}],
        "origins": [{"origin": login_site.origin, "localStorage": [{"name": "token", "value": "from-playwright"}]}],
    })
    await profiles.store.put("pw", brought)
    spec = _account(login_site, profile="pw", save_profile="pw")
    async with pool.lease() as lease:
        result = await profiles.run(spec, lease)
    assert result.status == JobStatus.succeeded, result.error
    assert result.data == {"server": "signed in", "token": "from-playwright", "theme": "theme=light"}
    [_, out] = await profiles.saved("pw")  # the one put, then the job's save
    assert {(c.name, c.value, c.httpOnly, c.expires == -1) for c in out.cookies} == {
        ("sid", "s-1234", True, True), ("theme", "light", False, False)}
    assert out.origins == brought.origins


async def test_a_failed_job_does_not_save_its_state(pool, login_site, profiles):
    spec = JobSpec(save_profile="acme", script=[{"go_to_url": {"url": f"{login_site.origin}/login"}},
                                                {"scroll_to_text": {"text": "no such text anywhere"}}])
    async with pool.lease() as lease:
        result = await profiles.run(spec, lease)
    assert result.status == JobStatus.failed and await profiles.saved("acme") == []


async def test_a_job_naming_a_profile_it_was_not_given_fails_instead_of_running_without(pool, login_site, profiles):
    """A profile that does not exist is the tenant's mistake (issue 21): its own category, not internal."""
    async with pool.lease() as lease:
        result = await profiles.run(_account(login_site, profile="acme"), lease)
    assert result.status == JobStatus.failed and result.category == FailureCategory.profile_missing
    assert "auth profile 'acme'" in result.error and login_site.cookies == []
    async with pool.lease() as lease:  # a run with no store at all says where profiles live
        result = await run_job(_account(login_site, profile="acme"), lease)
    assert result.status == JobStatus.failed and result.category == FailureCategory.profile_missing
    assert "auth profile 'acme'" in result.error and "BROWSERD_REDIS_URL" in result.error
    assert login_site.cookies == []


async def test_a_hostile_page_cannot_reach_other_origins_storage_through_the_profile(pool, login_site, other_site,
                                                                                     profiles):
    """The profile's localStorage is written per origin: a page of another origin sees none of it."""
    state = StorageState.model_validate({"origins": [{"origin": login_site.origin,
                                                      "localStorage": [{"name": "token", "value": "secret-tok"}]}]})
    spec = JobSpec(profile="acme", script=[{"go_to_url": {"url": other_site.url("agent/catalog.html")}},
                                           {"extract_fields": {"fields": {"title": "h1"}}}])
    await profiles.store.put("acme", state)
    async with pool.lease() as lease:
        result = await profiles.run(spec, lease)
        seen = await lease.page.evaluate("JSON.stringify(Object.assign({}, localStorage))")
    assert result.status == JobStatus.succeeded, result.error
    assert seen == "{}"


async def test_a_profile_chrome_cannot_take_fails_the_job_clearly(pool, login_site, profiles):
    """A cookie Chrome refuses (a ``__Host-`` cookie that is not Secure) fails the job before it browses."""
    host = login_site.origin.split("//")[1].split(":")[0]
    state = StorageState.model_validate({"cookies": [{"name": "__Host-sid", "value": "v-9876", "domain": host,
                                                      "secure": False, "expires": -1}]})
    await profiles.store.put("acme", state)
    async with pool.lease() as lease:
        result = await profiles.run(_account(login_site, profile="acme"), lease)
    assert result.status == JobStatus.failed and result.category == FailureCategory.internal
    assert "auth profile 'acme' could not be loaded" in result.error and "v-9876" not in result.error
    assert login_site.cookies == []


async def test_jobs_running_beside_a_profiled_job_see_nothing_of_it(pool, login_site, profiles):
    """Same browser, same moment: only the job that asked for the profile is logged in."""
    host = login_site.origin.split("//")[1].split(":")[0]
    state = StorageState.model_validate({
        "cookies": [{"name": "sid", "value": "s-1234", "domain": host, "path": "/", "expires": -1}],
        "origins": [{"origin": login_site.origin, "localStorage": [{"name": "token", "value": "tok-41"}]}]})

    await profiles.store.put("acme", state)

    async def one(with_profile: bool) -> dict:
        async with pool.lease() as lease:
            spec = _account(login_site, profile="acme") if with_profile else _account(login_site)
            result = await profiles.run(spec, lease)
        assert result.status == JobStatus.succeeded, result.error
        return result.data

    results = await asyncio.gather(one(True), one(False), one(False))
    assert results[0] == {"server": "signed in", "token": "tok-41", "theme": "sid=s-1234"}
    assert results[1] == results[2] == {"server": "anonymous", "token": "no token", "theme": "no cookie"}
