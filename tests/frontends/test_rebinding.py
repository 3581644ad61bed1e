"""DNS rebinding: a page that points its own name at the API's address must not drive it.

The browser then sends ``Host: evil.example:PORT``; the API (``/v1``, the console, ``/mcp``) answers
421 unless the name is the address it binds or one BROWSERD_ALLOWED_HOSTS lists. The app runs in
process against a real redis-server; ``serve`` itself is checked in tests/queue/test_exposure.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from config import ConfigError, load_settings
from daemon.api import create_app

EVIL = "evil.example:8080"
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
TASK = {"task": "read the page", "start_url": "https://example.com/"}


def tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}}


def mcp_result(text: str) -> dict[str, Any]:
    """The JSON-RPC answer inside an SSE or JSON reply of the streamable HTTP transport."""
    found = re.search(r"^data: (.*)$", text, re.M)
    return json.loads(found.group(1) if found else text)


@pytest.fixture
def app_for(redis_url: str) -> Iterator[Any]:
    clients: list[TestClient] = []

    def make(base_url: str = "http://127.0.0.1:8080", **settings: Any) -> TestClient:
        client = TestClient(create_app(load_settings(redis_url=redis_url, **settings)), base_url=base_url,
                            follow_redirects=False)
        clients.append(client.__enter__())
        return client

    yield make
    for client in clients:
        client.__exit__(None, None, None)


def refused(resp: Any) -> bool:
    return resp.status_code == 421 and "BROWSERD_ALLOWED_HOSTS" in resp.json()["message"] \
        and "DNS rebinding" in resp.json()["message"]


def test_a_rebound_host_is_refused_on_the_api_the_console_and_mcp_without_a_token(app_for: Any) -> None:
    c = app_for()
    evil = {"Host": EVIL}
    before = c.get("/v1/jobs").json()["jobs"]
    assert refused(c.post("/v1/jobs", json=TASK, headers=evil))
    assert refused(c.get("/v1/jobs", headers=evil))
    assert refused(c.get("/ui/", headers=evil))
    assert refused(c.get("/ui/submit", headers=evil))
    assert refused(c.post("/ui/submit", data={"kind": "task", "task": "x"}, headers={**evil, "Origin": f"http://{EVIL}"}))
    assert refused(c.post("/mcp", json=tool_call("submit_job", TASK), headers={**MCP_HEADERS, **evil}))
    assert refused(c.get("/docs", headers=evil)) and refused(c.get("/openapi.json", headers=evil))
    # nothing was created by any of them
    assert c.get("/v1/jobs").json()["jobs"] == before


@pytest.mark.parametrize("host", ["127.0.0.1:8080", "localhost:8080", "LOCALHOST:8080", "[::1]:8080"])
def test_the_bound_address_and_its_loopback_spellings_are_answered(app_for: Any, host: str) -> None:
    c = app_for()
    assert c.get("/v1/jobs", headers={"Host": host}).status_code == 200
    assert c.get("/ui/", headers={"Host": host}).status_code == 200


@pytest.mark.parametrize("host", ["127.0.0.1:8081", "127.0.0.1", "localhost", "10.0.0.5:8080", "", "evil.example"])
def test_another_port_or_name_is_not_the_bound_address(app_for: Any, host: str) -> None:
    assert refused(app_for().get("/v1/jobs", headers={"Host": host}))


def test_an_allowed_host_submits_and_mcp_tools_call_the_api_in_process(app_for: Any) -> None:
    c = app_for()
    job = c.post("/v1/jobs", json=TASK)
    assert job.status_code == 201, job.text
    answer = mcp_result(c.post("/mcp", json=tool_call("get_job", {"job_id": job.json()["id"]}), headers=MCP_HEADERS).text)
    assert answer["result"].get("isError") is not True, answer
    assert job.json()["id"] in json.dumps(answer["result"])


def test_probes_and_scrapes_answer_any_host(app_for: Any) -> None:
    """What never takes a token (health checks, /metrics) is asked by a pod's address or a service name."""
    c = app_for(api_token="tok-123", allowed_hosts="browserd.lan")
    assert c.get("/healthz", headers={"Host": "10.1.2.3:8080"}).status_code == 200
    assert c.get("/metrics", headers={"Host": "10.1.2.3:8080"}).status_code == 200
    assert refused(c.get("/v1/jobs", headers={"Host": "10.1.2.3:8080", "Authorization": "Bearer tok-123"}))


def test_the_setting_adds_hosts_and_a_port_if_given(app_for: Any) -> None:
    c = app_for(allowed_hosts="Browserd.LAN, api.example:9000")
    for host in ("browserd.lan:1234", "browserd.lan", "api.example:9000", "127.0.0.1:8080"):
        assert c.get("/v1/jobs", headers={"Host": host}).status_code == 200, host
    for host in ("api.example:9001", "api.example", EVIL):
        assert refused(c.get("/v1/jobs", headers={"Host": host})), host


def test_a_wildcard_bind_answers_loopback_and_the_listed_names_and_mcp_still_reaches_the_api(app_for: Any) -> None:
    c = app_for("http://browserd.lan:8080", api_host="0.0.0.0", api_insecure=True, allowed_hosts="browserd.lan")
    assert c.get("/v1/jobs", headers={"Host": "127.0.0.1:8080"}).status_code == 200
    assert refused(c.get("/v1/jobs", headers={"Host": "0.0.0.0:8080"}))
    assert refused(c.get("/ui/", headers={"Host": EVIL}))
    answer = mcp_result(c.post("/mcp", json=tool_call("submit_job", TASK), headers=MCP_HEADERS).text)
    assert answer["result"].get("isError") is not True, answer
    job_id = answer["result"]["structuredContent"]["job_id"]
    assert c.get(f"/v1/jobs/{job_id}").json()["state"] == "queued"


def test_with_a_token_the_host_is_checked_only_when_listed(app_for: Any) -> None:
    open_names = app_for(api_token="tok-123")  # a proxy in front may pass any name: the token keeps pages out
    assert open_names.get("/v1/jobs", headers={"Host": EVIL}).status_code == 401
    listed = app_for(api_token="tok-123", allowed_hosts="browserd.lan")
    assert refused(listed.get("/v1/jobs", headers={"Host": EVIL, "Authorization": "Bearer tok-123"}))
    assert listed.get("/v1/jobs", headers={"Host": "browserd.lan", "Authorization": "Bearer tok-123"}).status_code == 200
    mcp = listed.post("/mcp", json=tool_call("list_jobs", {}), headers={**MCP_HEADERS, "Host": EVIL,
                                                                       "Authorization": "Bearer tok-123"})
    assert refused(mcp)


@pytest.mark.parametrize("value", ["http://browserd.lan/", "*", "a b", "host:99999", "user@host", "[::1"])
def test_bad_allowed_hosts_are_refused_naming_the_setting(value: str) -> None:
    with pytest.raises(ConfigError, match="BROWSERD_ALLOWED_HOSTS"):
        load_settings(allowed_hosts=value)
