"""Auth profiles and a per-job proxy through the whole deployment: API, CLI, client, a real worker,
Redis and a real pproxy process. A login job saves its state, a later job starts logged in; the
profile's contents and the proxy's password stay out of Redis in clear, the records, the events,
the logs and the metrics."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest

from daemon.client import Client, RequestRefused
from tests.agent.test_profiles import LoginSite, login_site  # noqa: F401  (the fixture)
from tests.batches.test_cli import browserd
from tests.batches.test_secrets import redis_dump
from tests.queue.stack import TOKEN, Stack
from tests.support.proxies import PASSWORD, USERNAME, running_proxy


def _account(site: LoginSite, **fields: object) -> dict:
    return {"script": [{"go_to_url": {"url": f"{site.origin}/account"}},
                       {"extract_fields": {"fields": {"server": "#server", "token": "#has-token"}}}], **fields}


def _places(ops: Stack, job_ids: list[str]) -> dict[str, str]:
    return {
        "Redis": redis_dump(ops),
        "the job records": json.dumps([ops.job(j) for j in job_ids]),
        "the job events": json.dumps([ops.events(j) for j in job_ids]),
        "the worker log": "".join(w.log(10_000_000) for w in ops.workers),
        "the API log": ops.api.log(10_000_000) if ops.api else "",
        "the metrics": urllib.request.urlopen(ops.url + "/metrics", timeout=30).read().decode(),
    }


def test_a_login_saved_by_one_job_is_used_by_the_next(ops: Stack, login_site: LoginSite, tmp_path: Path) -> None:
    login = ops.submit({"save_profile": "shop", "script": [{"go_to_url": {"url": f"{login_site.origin}/login"}}]})
    assert ops.wait_state(login["id"], {"succeeded", "failed"}, 180)["state"] == "succeeded"
    api = Client(ops.url, TOKEN)
    [info] = [p for p in api.profiles() if p.name == "shop"]
    assert (info.version, info.cookies, info.origins) == (1, 2, 1)

    later = ops.submit(_account(login_site, profile="shop", save_profile="shop"))
    done = ops.wait_state(later["id"], {"succeeded", "failed"}, 180)
    assert done["state"] == "succeeded", done["error"]
    assert done["result"]["data"] == {"server": "signed in", "token": "token kept"}
    assert api.export_profile("shop").origins[0].localStorage[0].value == "tok-41"
    assert [p.version for p in api.profiles() if p.name == "shop"] == [2]  # its save bumped the version

    other = ops.submit(_account(login_site))  # isolation: no profile asked for, none seen
    assert ops.wait_state(other["id"], {"succeeded"}, 180)["result"]["data"] == {"server": "anonymous",
                                                                                "token": "no token"}
    for where, text in _places(ops, [login["id"], later["id"], other["id"]]).items():
        for value in ("s-1234", "tok-41"):
            assert value not in text, f"profile data {value!r} found in {where}"

    exported = tmp_path / "shop.json"
    out = browserd(ops, "profile", "export", "shop", "--out", str(exported))
    assert out.returncode == 0, out.stderr
    assert exported.stat().st_mode & 0o077 == 0
    assert browserd(ops, "profile", "import", "copy", str(exported)).returncode == 0
    assert api.export_profile("copy") == api.export_profile("shop")
    assert "copy  version 1  2 cookies  1 origins" in browserd(ops, "profile", "list").stdout.decode()
    assert browserd(ops, "profile", "delete", "copy").returncode == 0
    refused = browserd(ops, "profile", "export", "copy")
    assert refused.returncode == 1 and "no auth profile named 'copy'" in refused.stderr.decode()
    refused = browserd(ops, "submit", "read my account", "--profile", "copy")
    assert refused.returncode == 1 and "no auth profile named 'copy'" in refused.stderr.decode()
    made = browserd(ops, "submit", "--script", "/dev/stdin", "--profile", "shop", "--save-profile", "shop",
                    stdin=b'[{"done": {"text": "x"}}]')
    assert made.returncode == 0, made.stderr
    spec = ops.job(made.stdout.decode().strip())["spec"]
    assert (spec["profile"], spec["save_profile"]) == ("shop", "shop")


def test_profile_inputs_are_checked(ops: Stack) -> None:
    ok_state = {"cookies": [], "origins": [{"origin": "https://a.test", "localStorage": [{"name": "k", "value": "v"}]}]}
    status, err = ops.call("PUT", "/v1/profiles/p1", {"origins": [{"origin": "nope", "localStorage": []}]})
    assert status == 422 and err["fields"][0]["field"] == "origins.0.origin", err
    status, err = ops.call("PUT", "/v1/profiles/p1", {"cookies": [{"name": "a", "value": "b"}]})
    assert status == 422 and err["fields"][0]["field"] == "cookies.0.domain", err
    assert ops.call("PUT", "/v1/profiles/bad%20name", ok_state)[0] == 422
    assert ops.call("PUT", "/v1/profiles/p1", ok_state)[0] == 200
    status, err = ops.call("PUT", "/v1/profiles/p1?if_version=0", ok_state)
    assert status == 409 and "no longer at version 0" in err["message"], err
    assert ops.call("PUT", "/v1/profiles/p1?if_version=1", ok_state)[1]["version"] == 2
    assert ops.call("GET", "/v1/profiles/never")[0] == 404
    assert ops.call("DELETE", "/v1/profiles/never")[0] == 404
    status, err = ops.call("POST", "/v1/jobs", {"task": "x", "profile": "never"})
    assert status == 422 and err["fields"][0]["field"] == "profile" and "PUT /v1/profiles/never" in err["message"]
    status, err = ops.call("POST", "/v1/batches", {"jobs": [{"task": "x"}, {"task": "y", "profile": "never"}]})
    assert status == 422 and err["fields"][0]["field"] == "jobs[1].profile", err
    status, err = ops.call("POST", "/v1/jobs", {"task": "x", "save_profile": "bad name"})
    assert status == 422 and err["fields"][0]["field"] == "save_profile", err
    status, err = ops.call("POST", "/v1/jobs", {"task": "x", "proxy": {"server": "gopher://p:70"}})
    assert status == 422 and err["fields"][0]["field"] == "proxy.server", err
    status, err = ops.call("POST", "/v1/jobs", {"task": "x", "viewport": {"width": 5, "height": 5}})
    assert status == 422 and err["fields"][0]["field"].startswith("viewport."), err
    status, err = ops.call("POST", "/v1/schedules", {"every": 60, "job": {
        "task": "x", "proxy": {"server": "http://p.test:8080", "username": "u", "password": "in-clear"}}})
    assert status == 422 and err["fields"][0]["field"] == "job.proxy.password", err
    with pytest.raises(RequestRefused) as caught:
        Client(ops.url, TOKEN).put_profile("p2", {"origins": "no"})
    assert caught.value.status == 422


def test_a_job_goes_through_its_proxy_and_the_password_is_kept_secret(ops: Stack, login_site: LoginSite) -> None:
    with running_proxy() as upstream:
        proxy = {"server": upstream.server("socks5"), "username": USERNAME, "password": PASSWORD}
        good = ops.submit(_account(login_site, proxy=proxy))
        bad = ops.submit(_account(login_site, proxy={**proxy, "server": upstream.server("http"),
                                                     "password": "wrong-pass"}))
        done = ops.wait_state(good["id"], {"succeeded", "failed"}, 180)
        failed = ops.wait_state(bad["id"], {"succeeded", "failed"}, 180)
    assert done["state"] == "succeeded", done["error"]
    port = int(login_site.origin.rsplit(":", 1)[1])
    assert upstream.passed(port), upstream.lines
    assert failed["state"] == "failed" and failed["category"] == "proxy_error", failed
    assert "refused the credentials" in failed["error"]
    assert done["spec"]["proxy"]["password"] == "**********"
    assert done["spec"]["proxy"]["sealed_password"].startswith("gAAAAA")
    places = _places(ops, [good["id"], bad["id"]])
    assert 'category="proxy_error"' in places["the metrics"]
    for where, text in places.items():
        for value in (PASSWORD, "wrong-pass"):
            assert value not in text, f"proxy password found in {where}"


@pytest.mark.e2e  # a deployment of its own
def test_without_a_key_profiles_and_proxy_passwords_are_refused() -> None:
    s = Stack()
    try:
        s.start_api()
        status, err = s.call("GET", "/v1/profiles")
        assert status == 409 and err["error"] == "profiles_unavailable" and "BROWSERD_SECRETS_KEY" in err["message"]
        status, err = s.call("POST", "/v1/jobs", {"task": "x", "save_profile": "shop"})
        assert status == 422 and err["fields"][0]["field"] == "save_profile" and "BROWSERD_SECRETS_KEY" in err["message"]
        status, err = s.call("POST", "/v1/jobs", {"task": "x", "proxy": {"server": "http://p.test:1",
                                                                          "username": "u", "password": "pw"}})
        assert status == 422 and err["fields"][0]["field"] == "proxy.password", err
        assert s.call("POST", "/v1/jobs", {"task": "x", "proxy": {"server": "http://p.test:1"}})[0] == 201
    finally:
        s.close()


def test_a_schedule_uses_a_proxy_whose_password_is_in_a_credential_set(ops: Stack, login_site: LoginSite) -> None:
    """A schedule keeps its template as written, so its jobs name the password (``password_secret``)
    in a credential set instead of carrying it."""
    status, _ = ops.call("POST", "/v1/credentials", {"name": "proxyauth", "secrets": {"proxy_pw": PASSWORD}})
    assert status in (200, 201)
    with running_proxy() as upstream:
        proxy = {"server": upstream.server("http"), "username": USERNAME, "password_secret": "proxy_pw"}
        status, schedule = ops.call("POST", "/v1/schedules", {"every": 3600, "job": _account(
            login_site, credentials="proxyauth", proxy=proxy)})
        assert status == 201, schedule
        status, missing = ops.call("POST", "/v1/jobs", _account(login_site, proxy={**proxy, "password_secret": "nope"},
                                                               secrets={"proxy_pw": PASSWORD}))
        assert status == 422 and missing["fields"][0]["field"] == "proxy.password_secret", missing
        good = ops.submit(_account(login_site, credentials="proxyauth", proxy=proxy))  # what each run submits
        wrong = ops.submit(_account(login_site, credentials="proxyauth", proxy={**proxy, "password_secret": "other"}))
        done = ops.wait_state(good["id"], {"succeeded", "failed"}, 180)
        failed = ops.wait_state(wrong["id"], {"succeeded", "failed"}, 180)
    assert done["state"] == "succeeded", done["error"]
    assert upstream.passed(int(login_site.origin.rsplit(":", 1)[1])), upstream.lines
    assert failed["category"] == "proxy_error" and "'other' is not one of the job's secrets" in failed["error"], failed
    for where, text in _places(ops, [good["id"], wrong["id"]]).items():
        assert PASSWORD not in text, f"proxy password found in {where}"
    assert ops.call("DELETE", f"/v1/schedules/{schedule['id']}")[0] in (200, 204)
