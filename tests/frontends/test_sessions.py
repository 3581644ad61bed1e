"""Interactive sessions against the real stack: a worker leases a context, the API relays commands
through Redis, the Python client drives a fixture form; idle expiry; a hostile page; bad input."""

from __future__ import annotations

import base64
import json
import re
import signal
from typing import Any

import httpx
import pytest

from daemon.client import Client, RequestRefused
from tests.frontends.test_mcp import error_text, http_client, stdio_client
from tests.queue.stack import TOKEN, Stack, stack, wait_until
from tests.support.llm_server import LLMServer
from tests.support.servers import StaticServer


def index_of(state: str, needle: str) -> int:
    """The [n] of the first element line of ``state`` that mentions ``needle``."""
    for line in state.splitlines():
        found = re.search(r"\[(\d+)\]", line)
        if found and needle in line:
            return int(found.group(1))
    raise AssertionError(f"no element with {needle!r} in:\n{state}")


def jpeg_size(data: bytes) -> tuple[int, int]:
    """(width, height) from a JPEG's start-of-frame segment."""
    at = 2
    while at < len(data):
        marker, length = data[at + 1], int.from_bytes(data[at + 2:at + 4], "big")
        if marker in (0xC0, 0xC1, 0xC2):
            return int.from_bytes(data[at + 7:at + 9], "big"), int.from_bytes(data[at + 5:at + 7], "big")
        at += 2 + length
    raise AssertionError("no start-of-frame segment")


def payload(result: Any) -> dict[str, Any]:
    """A session tool's answer (a JSON object)."""
    assert not result.is_error, result.content
    return result.structured_content or json.loads(result.content[0].text)


def test_a_session_drives_a_form(frontend_stack: tuple[Stack, LLMServer], site: StaticServer) -> None:
    s, _ = frontend_stack
    with Client(s.url, TOKEN, timeout=120) as client:
        session = client.open_session(site.url("/sessions/form.html"), viewport=(800, 600))
        assert session.state == "open" and session.url.endswith("/sessions/form.html")
        assert (session.viewport.width, session.viewport.height) == (800, 600)
        assert session.id in [x.id for x in client.sessions()]
        view = client.get_state(session.id)
        assert view.title == "Order a mug" and view.elements >= 3
        client.type_text(session.id, index_of(view.state, "Name"), "Ada")
        client.select(session.id, index_of(view.state, "Choose a colour"), "Blue")
        done = client.click(session.id, index_of(view.state, "Place order"))
        assert "clicked" in done.result
        after = client.get_state(session.id, text=True)
        assert "Ordered blue mug for Ada" in after.text
        jpeg = client.screenshot(session.id)
        assert jpeg[:3] == b"\xff\xd8\xff" and jpeg_size(jpeg) == (800, 600)
        assert client.scroll(session.id, text="End of the order page").result.startswith("scrolled")
        assert [t.current for t in client.tabs(session.id).tabs] == [True]
        client.close_session(session.id)
        with pytest.raises(RequestRefused) as gone:
            client.get_state(session.id)
        assert gone.value.status == 404 and "no open session" in gone.value.message


@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_an_mcp_client_drives_a_session(frontend_stack: tuple[Stack, LLMServer], site: StaticServer,
                                              transport: str) -> None:
    s, _ = frontend_stack
    async with (http_client(s) if transport == "http" else stdio_client(s)) as client:
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        assert {"browserd://sessions/{session_id}/state", "browserd://sessions/{session_id}/tabs",
                "browserd://jobs/{job_id}/result", "browserd://jobs/{job_id}/steps"} <= templates

        opened = payload(await client.call_tool("open_session", {"start_url": site.url("/sessions/form.html")}))
        sid = opened["id"]
        state = payload(await client.call_tool("get_state", {"session_id": sid}))["state"]
        assert "<untrusted_content_" in state
        await client.call_tool("type", {"session_id": sid, "index": index_of(state, "Name"), "text": transport})
        await client.call_tool("select", {"session_id": sid, "index": index_of(state, "Choose a colour"),
                                          "option": "Red"})
        assert "clicked" in payload(await client.call_tool(
            "click", {"session_id": sid, "index": index_of(state, "Place order")}))["result"]
        after = payload(await client.call_tool("get_state", {"session_id": sid, "text": True}))
        assert f"Ordered red mug for {transport}" in after["text"]

        shot = await client.call_tool("screenshot", {"session_id": sid})
        assert not shot.is_error and shot.content[0].type == "image" and shot.content[0].mime_type == "image/jpeg"
        assert base64.b64decode(shot.content[0].data)[:3] == b"\xff\xd8\xff"

        resource = json.loads((await client.read_resource(f"browserd://sessions/{sid}/state")).contents[0].text)
        assert resource["url"].endswith("/sessions/form.html") and "Place order" in resource["state"]
        tabs = json.loads((await client.read_resource(f"browserd://sessions/{sid}/tabs")).contents[0].text)
        assert [t["current"] for t in tabs["tabs"]] == [True]

        assert "element 999 no longer exists" in error_text(await client.call_tool("click", {"session_id": sid, "index": 999}))
        payload(await client.call_tool("close_session", {"session_id": sid}))
        assert "no open session" in error_text(await client.call_tool("get_state", {"session_id": sid}))


def refused(call: Any, *args: Any, **kwargs: Any) -> RequestRefused:
    with pytest.raises(RequestRefused) as caught:
        call(*args, **kwargs)
    return caught.value


def test_a_hostile_page_is_wrapped_and_its_private_links_refused(frontend_stack: tuple[Stack, LLMServer],
                                                                 site: StaticServer) -> None:
    s, _ = frontend_stack
    with Client(s.url, TOKEN, timeout=120) as client:
        session = client.open_session(site.url("/sessions/hostile.html"))
        view = client.get_state(session.id, text=True)
        tag = re.search(r"<(untrusted_content_[0-9a-f]+)>", view.state).group(1)
        inside = view.state.split(f"<{tag}>")[1].split(f"</{tag}>")[0]
        assert "flagged: text trying to change the task" in inside  # shown as data, inside the wrapper, flagged
        assert "Router admin" in inside and "‹user_request›" in inside
        for text in (view.state, view.text):
            assert "<user_request>" not in text and "</untrusted_content_0>" not in text  # cannot pose as ours
        # a link to a private address: the click is refused by the egress policy, the session goes on
        blocked = refused(client.click, session.id, index_of(view.state, "Router admin"))
        assert blocked.status == 403 and blocked.code == "url_blocked" and "private" in blocked.message
        metadata = refused(client.navigate, session.id, "http://169.254.169.254/latest/meta-data/")
        assert metadata.status == 403 and "link-local" in metadata.message
        assert client.navigate(session.id, site.url("/sessions/form.html")).url.endswith("/sessions/form.html")
        client.close_session(session.id)
        start = refused(client.open_session, "http://10.0.0.1/")
        assert start.status == 403 and "could not open the start URL" in start.message and "private" in start.message


def test_a_session_keeps_to_its_domain_lists(frontend_stack: tuple[Stack, LLMServer], site: StaticServer) -> None:
    """open_session takes a job's domain lists: a denied name is refused, saying which list refused it
    and what opens it; the allowed one works; another session (no lists) is not bound by them."""
    s, _ = frontend_stack
    elsewhere = site.url("/sessions/form.html").replace("127.0.0.1", "localhost")
    with Client(s.url, TOKEN, timeout=120) as client:
        session = client.open_session(site.url("/sessions/form.html"), denied_domains=["localhost"])
        assert client.sessions() and next(x for x in client.sessions() if x.id == session.id).denied_domains == [
            "localhost"]
        blocked = refused(client.navigate, session.id, elsewhere)
        assert blocked.status == 403 and blocked.code == "url_blocked"
        assert "localhost is on the job's denied_domains (localhost); open it by dropping --deny localhost" in \
            blocked.message
        assert client.navigate(session.id, site.url("/sessions/form.html")).url.endswith("/sessions/form.html")
        other = client.open_session(elsewhere)
        assert client.navigate(other.id, elsewhere).url.startswith("http://localhost:")
        client.close_session(other.id)
        client.close_session(session.id)


def test_bad_input_gets_clear_errors(frontend_stack: tuple[Stack, LLMServer], site: StaticServer) -> None:
    s, _ = frontend_stack
    with Client(s.url, TOKEN, timeout=120) as client:
        unknown = refused(client.get_state, "0" * 32)
        assert unknown.status == 404 and "no open session with id" in unknown.message
        assert refused(client.click, "not-an-id", 1).status == 404
        assert refused(client.open_session, "ftp://example.com/").fields[0]["field"] == "start_url"
        networks = refused(client.open_session, allowed_networks=["not-a-network"])
        assert networks.status == 422 and networks.fields[0]["field"].startswith("allowed_networks")
        domains = refused(client.open_session, denied_domains=["https://evil.test/"])
        assert domains.status == 422 and domains.fields[0]["field"].startswith("denied_domains")
        small = refused(client.open_session, viewport=(10, 600))
        assert small.status == 422 and small.fields[0]["field"] == "viewport.width"
        idle = refused(client.open_session, idle_timeout=10**6)
        assert idle.status == 422 and "BROWSERD_SESSION_IDLE_TIMEOUT" in idle.message

        session = client.open_session(site.url("/sessions/form.html"))
        client.get_state(session.id)
        gone = refused(client.click, session.id, 999)
        assert gone.status == 400 and gone.code == "action_failed" and "element 999 no longer exists" in gone.message
        assert refused(client.scroll, session.id).fields[0]["message"].startswith("give exactly one of")
        assert refused(client.scroll, session.id, "down", text="both").status == 422
        assert refused(client.select, session.id, 1, "").fields[0]["field"] == "option"
        assert refused(client.type_text, session.id, -1, "x").fields[0]["field"] == "index"
        status, body = s.call("POST", f"/v1/sessions/{session.id}/type", {"index": 1})
        assert status == 422 and body["fields"][0]["field"] == "text"
        no_option = refused(client.select, session.id, index_of(client.get_state(session.id).state, "Choose"), "Green")
        assert no_option.status == 400 and "has no option 'Green'" in no_option.message
        client.close_session(session.id)
        assert refused(client.close_session, session.id).status == 404


def test_an_idle_session_closes_and_frees_its_lease(frontend_stack: tuple[Stack, LLMServer], site: StaticServer) -> None:
    s, _ = frontend_stack
    with Client(s.url, TOKEN, timeout=120) as client:
        session = client.open_session(site.url("/sessions/form.html"), idle_timeout=2)
        assert leases_in_use(s) >= 1 and session.idle_timeout == 2
        wait_until(lambda: refused_or_none(client, session.id), 60, "the idle session to close")
        assert session.id not in [x.id for x in client.sessions()]
        wait_until(lambda: leases_in_use(s) == 0, 30, "the lease to be released")
        metrics = httpx.get(s.url + "/metrics").text
        assert "browserd_sessions_open 0.0" in metrics
        assert 'browserd_sessions_ended_total{reason="idle"} 1.0' in worker_metrics(s)


def refused_or_none(client: Client, session_id: str) -> bool:
    try:
        client.session(session_id)
    except RequestRefused as exc:
        return exc.status == 404
    return False


def worker_metrics(s: Stack) -> str:
    (worker_key,) = [k for k in s.redis.keys("browserd:worker:*")]
    return httpx.get(f"http://127.0.0.1:{s.redis.hget(worker_key, 'metrics_port')}/metrics").text


def leases_in_use(s: Stack) -> float:
    found = re.search(r"^browserd_pool_leases_in_use (\S+)$", worker_metrics(s), re.M)
    assert found, "the worker exports browserd_pool_leases_in_use"
    return float(found.group(1))


@pytest.mark.e2e  # a deployment of its own
def test_the_cap_and_a_worker_shutting_down(site: StaticServer) -> None:
    """One more session than BROWSERD_SESSION_MAX_OPEN is refused (429); a warm shutdown does not
    wait out an open session's idle timeout: the session ends (404) and the worker exits."""
    with stack(metrics_port=0, session_idle_timeout=600, session_max_open=1) as s:
        worker = s.start_worker(concurrency=1)
        with Client(s.url, TOKEN, timeout=120) as client:
            session = client.open_session(site.url("/sessions/form.html"))
            full = refused(client.open_session, site.url("/sessions/form.html"))
            assert full.status == 429 and "BROWSERD_SESSION_MAX_OPEN" in full.message
            worker.stop(grace=60)  # far less than the idle timeout: waiting it out would end in SIGKILL
            assert worker.popen.returncode != -signal.SIGKILL, "the shutdown waited for the session"
            assert "ended (worker_stopping)" in worker.log(100_000)
            assert refused_or_none(client, session.id)


def test_a_tenants_session_is_its_own(frontend_stack: tuple[Stack, LLMServer], site: StaticServer) -> None:
    s, _ = frontend_stack
    keys = {}
    for name, networks in (("sess-a", ["127.0.0.1/32"]), ("sess-b", [])):
        status, made = s.call("POST", "/v1/tenants", {"name": name, "limits": {"allowed_networks": networks}})
        assert status == 201, made
        keys[name] = made["key"]
    with Client(s.url, keys["sess-a"], timeout=120) as a, Client(s.url, keys["sess-b"], timeout=120) as b:
        session = a.open_session(site.url("/sessions/form.html"), allowed_networks=["127.0.0.1/32"])
        assert session.tenant == "sess-a"
        assert b.sessions() == [] and session.id in [x.id for x in a.sessions()]
        for call in (lambda: b.get_state(session.id), lambda: b.navigate(session.id, site.url("/")),
                     lambda: b.tabs(session.id), lambda: b.close_session(session.id)):
            gone = refused(call)
            assert gone.status == 404 and "no open session with id" in gone.message
        assert a.get_state(session.id).title == "Order a mug"  # untouched by sess-b
        with Client(s.url, TOKEN) as admin:
            assert session.id in [x.id for x in admin.sessions()]
        a.close_session(session.id)


def test_a_tenants_sessions_quota(frontend_stack: tuple[Stack, LLMServer], site: StaticServer) -> None:
    s, _ = frontend_stack
    status, made = s.call("POST", "/v1/tenants", {"name": "sess-quota", "limits": {
        "allowed_networks": ["127.0.0.1/32"], "max_sessions": 1}})
    assert status == 201, made
    status, other = s.call("POST", "/v1/tenants", {"name": "sess-other", "limits": {"allowed_networks": ["127.0.0.1/32"]}})
    assert status == 201, other
    page = site.url("/sessions/form.html")
    with Client(s.url, made["key"], timeout=120) as a, Client(s.url, other["key"], timeout=120) as b:
        first = a.open_session(page, allowed_networks=["127.0.0.1/32"])
        over = refused(lambda: a.open_session(page, allowed_networks=["127.0.0.1/32"]))
        assert over.status == 429 and over.quota == "sessions" and over.retry_after is not None
        theirs = b.open_session(page, allowed_networks=["127.0.0.1/32"])  # another tenant is not held by it
        b.close_session(theirs.id)
        a.close_session(first.id)
        again = a.open_session(page, allowed_networks=["127.0.0.1/32"])  # closing one frees the quota
        a.close_session(again.id)
