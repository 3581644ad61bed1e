"""Secrets: a job types a password it never shows. The model sees only <secret>name</secret>; the
values reach the fixture form, and nowhere else: not the LLM's requests, not any Redis key, not the
job's events, the worker's log, the job record or its webhook."""

from __future__ import annotations

import contextlib
import html
import json
import threading
import urllib.parse
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.batches.conftest import finish_at_once
from tests.batches.test_cli import browserd
from tests.batches.test_webhook_rules import Sink
from tests.support.secret_echoes import PASSWORD as ECHO_PASSWORD
from tests.support.secret_echoes import USER as ECHO_USER
from tests.support.secret_echoes import leaks
from tests.queue.stack import TOKEN, Stack, wait_until
from tests.support.llm_server import LLMServer, Reply, offered_tool

USER = "ada.lovelace@example.org"
PASSWORD = "Tr0ub4dor&3-horse"  # an ampersand and quotes-free: JSON and form encodings both differ from it
FORM = """<!doctype html><html><head><title>Sign in</title></head><body>
<form method="post" action="/login"><label>Email <input name="user"></label>
<label>Password <input name="password" type="password"></label><button>Sign in</button></form></body></html>"""


class _HtmlPages(BaseHTTPRequestHandler):
    """A fixture site's handler: answers whole HTML pages, logs nothing."""

    def _send(self, status: int, page: str) -> None:
        data = page.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_: Any) -> None:
        pass


class Shop:
    """A sign-in form on 127.0.0.1; the signed-in page echoes both values back, as sites do."""

    def __init__(self) -> None:
        self.logins: list[dict[str, str]] = []
        shop = self

        class Handler(_HtmlPages):
            def do_GET(self) -> None:  # noqa: N802
                self._send(200, FORM)

            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers["Content-Length"])).decode()
                form = {k: v[0] for k, v in urllib.parse.parse_qs(body).items()}
                shop.logins.append(form)
                self._send(200, f"<title>Welcome {form.get('user')}</title><h1>Signed in as {form.get('user')}</h1>"
                           f"<p>Your password {form.get('password')} was accepted.</p><a href='/orders'>Orders</a>")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"


class EchoingShop:
    """A GET sign-in form on 127.0.0.1: the values travel in the URL, and the signed-in page echoes
    them back in every ordinary encoding: the user name upper-cased by CSS, the password
    HTML-escaped, both URL-encoded in a link, a failing image (network log) and the console, and
    base64 as a Basic credential in the console; a tracker on a private address (which jobs may not
    reach) asks for the same query: the firewall's refusal is logged."""

    def __init__(self) -> None:
        self.logins: list[dict[str, str]] = []
        shop = self

        class Handler(_HtmlPages):
            def do_GET(self) -> None:  # noqa: N802
                url = urllib.parse.urlsplit(self.path)
                if url.path == "/login":
                    self._signed_in(url, {k: v[0] for k, v in urllib.parse.parse_qs(url.query).items()})
                elif url.path == "/":
                    self._send(200, FORM.replace('method="post"', 'method="get"'))
                else:
                    self._send(404, "not here")

            def _signed_in(self, url: urllib.parse.SplitResult, form: dict[str, str]) -> None:
                shop.logins.append(form)
                user, password = form.get("user", ""), form.get("password", "")
                basic = json.dumps(f"{user}:{password}")
                self._send(200, f"""<!doctype html><html><head><title>Welcome</title></head><body>
<h1 style="text-transform: uppercase">Signed in as {html.escape(user)}</h1>
<p>Your password {html.escape(password)} was accepted.</p>
<a href="/orders?user={urllib.parse.quote_plus(user)}">Your orders</a>
<img src="/pixel.gif?from={urllib.parse.quote(url.geturl(), safe='')}" alt="">
<img src="http://10.255.255.1/track?{url.query}" alt="">
<script>console.log("signed in at " + location.href);
console.log("Authorization: Basic " + btoa({basic}));</script></body></html>""")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"


@contextlib.contextmanager
def serving(*servers: Any) -> Iterator[None]:
    threads = [threading.Thread(target=s.httpd.serve_forever, daemon=True) for s in servers]
    for t in threads:
        t.start()
    try:
        yield
    finally:
        for s in servers:
            s.httpd.shutdown()
            s.httpd.server_close()


def sign_in_script() -> Any:
    """The scripted model: type both placeholders and submit, then finish; the planner agrees at the end."""
    navigator_turns = iter([
        [{"input_text": {"index": 1, "text": "<secret>user</secret>"}},
         {"input_text": {"index": 2, "text": "<secret>password</secret>"}},
         {"click_element": {"index": 3}}],
        [{"done": {"text": "signed in", "success": True}}],
    ])

    def respond(request: dict[str, Any]) -> Reply:
        if offered_tool(request) == "AgentOutput":
            state = {"evaluation_previous_goal": "ok", "memory": "", "next_goal": "sign in"}
            return Reply.tool({"current_state": state, "action": next(navigator_turns)})
        done = any("signed in" in json.dumps(m) for m in request["messages"] if m["role"] == "assistant")
        return Reply.tool({"observation": "form", "challenges": "", "done": done, "next_steps": "",
                           "final_answer": "signed in" if done else "", "reasoning": "test", "web_task": True})

    return respond


def redis_dump(s: Stack) -> str:
    """Every key's every value, whatever its type."""
    out = []
    for key in s.redis.scan_iter("*"):
        kind = s.redis.type(key)
        value: Any = {"string": s.redis.get, "hash": s.redis.hgetall, "list": lambda k: s.redis.lrange(k, 0, -1),
                      "set": s.redis.smembers, "zset": lambda k: s.redis.zrange(k, 0, -1),
                      "stream": lambda k: s.redis.xrange(k)}.get(kind, lambda k: "")(key)
        out.append(f"{key} {value}")
    return "\n".join(out)


@pytest.fixture
def scripted(llm: LLMServer) -> Iterator[LLMServer]:
    llm.responder = sign_in_script()
    start = len(llm.requests)
    try:
        yield llm
    finally:
        llm.responder = finish_at_once
        del llm.requests[:start]  # keep only this test's requests


def test_a_secret_is_typed_and_never_seen_or_kept(ops: Stack, scripted: LLMServer) -> None:
    shop, hook = Shop(), Sink()
    with serving(shop, hook):
        status, created = ops.call("POST", "/v1/credentials", {"name": "shop", "secrets": {"user": USER}})
        assert status == 201 and created["secrets"] == ["user"], created
        job = ops.submit({"task": "Sign in to the shop", "start_url": shop.url, "credentials": "shop",
                          "secrets": {"password": PASSWORD}, "webhook_url": hook.url})
        done = ops.wait_state(job["id"], {"succeeded", "failed"}, timeout=180)
        assert done["state"] == "succeeded", done["error"]
        wait_until(lambda: hook.bodies, 60, "the webhook")

    assert shop.logins == [{"user": USER, "password": PASSWORD}]  # the browser got the values

    seen = json.dumps(scripted.requests)
    assert "<secret>password</secret>" in seen and "<secret>user</secret>" in seen  # named in the task
    places = {
        "the LLM's requests": seen,
        "Redis": redis_dump(ops),
        "the job's events": json.dumps(ops.events(job["id"])),
        "the job record": json.dumps(ops.job(job["id"])),
        "the credential list": json.dumps(ops.call("GET", "/v1/credentials")[1]),
        "the worker log": "".join(w.log(10_000_000) for w in ops.workers),
        "the API log": ops.api.log(10_000_000) if ops.api else "",
        "the webhook": b"".join(hook.bodies).decode(),
        "the metrics": urllib.request.urlopen(ops.url + "/metrics", timeout=30).read().decode(),
    }
    for value in (PASSWORD, USER, urllib.parse.quote_plus(PASSWORD), urllib.parse.quote_plus(USER)):
        for where, text in places.items():
            assert value not in text, f"{value!r} found in {where}"
    record = ops.job(job["id"])
    assert record["spec"]["secrets"] == {"password": "**********"} and record["spec"]["credentials"] == "shop"
    assert record["spec"]["sealed_secrets"].startswith("gAAAAA")  # a Fernet token


def artifacts(s: Stack, job: dict[str, Any]) -> dict[str, str]:
    """Every text artifact the job kept, by name, as its owner downloads it."""
    out = {}
    for link in job["result"]["artifacts"]:
        request = urllib.request.Request(s.url + link["url"], headers={"Authorization": f"Bearer {TOKEN}"})
        if not link["name"].endswith((".jpg", ".png")):
            out[link["name"]] = urllib.request.urlopen(request, timeout=30).read().decode()
    return out


def test_secrets_echoed_in_any_encoding_reach_no_prompt_record_log_or_artifact(ops: Stack, scripted: LLMServer) -> None:
    shop, hook = EchoingShop(), Sink()
    with serving(shop, hook):
        job = ops.submit({"task": "Sign in to the shop", "start_url": shop.url, "webhook_url": hook.url,
                          "secrets": {"user": ECHO_USER, "password": ECHO_PASSWORD},
                          "artifacts": {"page": "always", "logs": "always", "screenshots": "off"}})
        done = ops.wait_state(job["id"], {"succeeded", "failed"}, timeout=180)
        assert done["state"] == "succeeded", done["error"]
        wait_until(lambda: hook.bodies, 60, "the webhook")

    assert shop.logins == [{"user": ECHO_USER, "password": ECHO_PASSWORD}]  # the browser sent them, in the URL
    kept = artifacts(ops, done)
    assert {"page.html", "page.md", "console.jsonl", "network.jsonl"} <= set(kept), sorted(kept)
    assert "<secret>password</secret>" in kept["page.html"] and "<secret>user</secret>" in kept["page.md"]
    assert "Authorization: Basic <secret>user</secret>" in kept["console.jsonl"]
    assert "pixel.gif" in kept["network.jsonl"]
    worker_log = "".join(w.log(10_000_000) for w in ops.workers)
    assert "egress refused GET 10.255.255.1:80" in worker_log  # the tracker was asked for, and refused
    places = {
        "the LLM's requests": json.dumps(scripted.requests),
        "Redis": redis_dump(ops),
        "the job's events": json.dumps(ops.events(job["id"])),
        "the job record": json.dumps(ops.job(job["id"])),
        "the worker log": worker_log,
        "the API log": ops.api.log(10_000_000) if ops.api else "",
        "the webhook": b"".join(hook.bodies).decode(),
        **{f"artifact {name}": text for name, text in kept.items()},
    }
    assert leaks(places) == []


def test_secret_and_credential_inputs_are_checked(ops: Stack) -> None:
    bad = [
        ({"secrets": {"pass word": "abcd"}}, "secrets.pass word"),
        ({"secrets": {"p": "abc"}}, "secrets"),
        ({"secrets": {f"s{i}": "abcd" for i in range(21)}}, "secrets"),
        ({"sealed_secrets": "gAAAAAforged"}, "sealed_secrets"),
        ({"credentials": "nope"}, "credentials"),
        ({"credentials": "bad name"}, "credentials"),
    ]
    for extra, field in bad:
        status, err = ops.call("POST", "/v1/jobs", {"script": [{"done": {"text": "x"}}], **extra})
        assert status == 422 and any(f["field"].startswith(field) for f in err["fields"]), (extra, err)
    status, err = ops.call("POST", "/v1/batches", {"jobs": [{"task": "x"}, {"task": "y", "credentials": "nope"}]})
    assert status == 422 and err["fields"][0]["field"] == "jobs[1].credentials", err
    status, err = ops.call("POST", "/v1/schedules", {"every": 60, "job": {"task": "x", "secrets": {"pw": "abcd"}}})
    assert status == 422 and err["fields"][0]["field"] == "job.secrets", err
    for body in ({"name": "x"}, {"name": "x", "secrets": {}}, {"name": "bad name", "secrets": {"a": "abcd"}},
                 {"name": "x", "secrets": {"a": "abcd"}, "extra": 1}, {"name": "x", "secrets": {"a": "abc"}},
                 {"name": "x", "secrets": {"a": "abcd", "b": "x" * 4097}}):
        assert ops.call("POST", "/v1/credentials", body)[0] == 422, body
    assert ops.call("DELETE", "/v1/credentials/never-made")[0] == 404
    assert ops.call("POST", "/v1/credentials", {"name": "gone", "secrets": {"pw": "abcd"}})[0] == 201
    assert ops.call("DELETE", "/v1/credentials/gone")[0] == 204
    assert "gone" not in [c["name"] for c in ops.call("GET", "/v1/credentials")[1]]


def test_submit_names_a_credential_set(ops: Stack) -> None:
    refused = browserd(ops, "submit", "sign in", "--credentials", "missing")
    assert refused.returncode != 0 and "no credential set named 'missing'" in refused.stderr.decode()
    assert ops.call("POST", "/v1/credentials", {"name": "cli", "secrets": {"pw": "abcd1234"}})[0] == 201
    made = browserd(ops, "submit", "--script", "/dev/stdin", "--credentials", "cli", stdin=b'[{"done": {"text": "x"}}]')
    assert made.returncode == 0, made.stderr
    assert ops.job(made.stdout.decode().strip())["spec"]["credentials"] == "cli"
