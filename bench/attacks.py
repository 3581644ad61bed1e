"""Attack vectors against a job's browser (issue 13), run on the real stack; prints one JSON line.

    python -m bench.attacks            {"vectors": N, "blocked": N, "leaked": [names]}

Each vector is a named async check in ``VECTORS``: it gets the ``Stage`` (a pool whose contexts go
through the egress proxy, fixture pages on 127.0.0.1, a recording "denied" server, a websocket
server) and returns True when the attack was blocked. Add a vector by adding a function to the
table. Everything stays on loopback: ``*.test`` names resolve to 127.0.0.1 in the proxy, and the
private-address vectors are refused by the proxy before it dials (checked in its decision log).
The isolation vectors (issue 22: WebRTC, a killed network service, Chrome's own traffic) need root:
WebRTC's runs on a test host of its own, a network namespace with a veth pair (198.18.0.1/.2) that
nothing leaves (tests/support/testhost.py).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import re
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote

from bench import tenancy
from cdp import BrowserPool, PoolConfig, process_tree
from cdp.egress import Decision, NetworkPolicy, suffix_resolver
from config import Settings, get_settings, load_settings
from dom.guard import OVERRIDE_MARK
from tests.support import isolation_attacks
from tests.support.jobs import run_job
from tests.support.llm_server import LLMServer, Reply
from tests.support.schemas import anyof_bomb
from tests.support.secret_echoes import SECRETS, leaks
from tests.support.servers import (
    SITE,
    RecordingServer,
    StaticServer,
    WebSocketRecorder,
    serve,
)
from tests.support.sockets import listening_pids
from workers.jobs.artifacts.store import ArtifactStore
from workers.jobs.errors import SpecError
from workers.jobs.ids import new_id
from workers.jobs.model.result import JobResult
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import FailureCategory
from workers.jobs.specs.checks import check_spec
from workers.jobs.specs.schema_limits import SchemaLimit, SchemaTooComplex
from workers.jobs.tenants.ceilings import OPERATOR_NETWORKS

PAGES = ["127.0.0.1/32"]  # the fixture pages' own address, opened per job like a user would
ALLOWED = ["allowed.test", "other.test", "127.0.0.1"]


@dataclass
class Stage:
    pool: BrowserPool
    site: StaticServer
    other: StaticServer
    denied: RecordingServer
    sockets: WebSocketRecorder
    settings: Settings

    def evil(self, path: str = "agent/secret.html") -> str:
        return quote(self.denied.url(path, host="evil.test"), safe="")

    async def run(self, spec: JobSpec) -> tuple[JobResult, list[Decision]]:
        self.denied.paths.clear()
        async with self.pool.lease() as lease:
            result = await run_job(spec, lease, settings=self.settings)
            assert lease.egress is not None
            return result, list(lease.egress.decisions)


Check = Callable[[Stage], Awaitable[bool]]


def _visit(url: str, seconds: float = 1.5, *, networks: list[str] = PAGES, **spec: object) -> JobSpec:
    return JobSpec(script=[{"go_to_url": {"url": url}}, {"wait": {"seconds": seconds}}],
                   allowed_networks=networks, **spec)  # type: ignore[arg-type]


async def iframe_subresource(stage: Stage) -> bool:
    inner = f"http://other.test:{stage.other.port}/egress/frame-leak.html?target={stage.evil()}"
    page = f"http://allowed.test:{stage.site.port}/egress/frame-host.html?frame={quote(inner, safe='')}"
    await stage.run(_visit(page, allowed_domains=ALLOWED))
    return stage.denied.paths == []


async def service_worker(stage: Stage) -> bool:
    await stage.run(_visit(stage.site.url(f"egress/workers.html?sw=1&target={stage.evil()}"), 2.0,
                           allowed_domains=ALLOWED))
    return stage.denied.paths == []


async def shared_worker(stage: Stage) -> bool:
    await stage.run(_visit(stage.site.url(f"egress/workers.html?shared=1&target={stage.evil()}"),
                           allowed_domains=ALLOWED))
    return stage.denied.paths == []


async def websocket(stage: Stage) -> bool:
    before = stage.sockets.connections
    ws = quote(f"ws://evil.test:{stage.sockets.port}/", safe="")
    await stage.run(_visit(stage.site.url(f"egress/workers.html?ws={ws}"), allowed_domains=ALLOWED))
    return stage.sockets.connections == before


async def redirect(stage: Stage) -> bool:
    start = stage.denied.url(f"redirect?to={stage.evil()}", host="allowed.test")
    await stage.run(_visit(start, 0.5, allowed_domains=ALLOWED))
    return all(p.startswith("/redirect") for p in stage.denied.paths)


async def popup(stage: Stage) -> bool:
    spec = JobSpec(allowed_domains=ALLOWED, allowed_networks=PAGES, script=[
        {"go_to_url": {"url": stage.site.url(f"egress/workers.html?popup=1&target={stage.evil()}")}},
        {"click_element": {"index": 1}},
        {"wait": {"seconds": 1}},
    ])
    await stage.run(spec)
    return stage.denied.paths == []


async def _refused_before_dialling(stage: Stage, url: str) -> bool:
    """The job's start URL is refused and the proxy never chose an address to dial."""
    result, decisions = await stage.run(_visit(url, 0.2, networks=[]))
    refused = [d for d in decisions if not d.allowed]
    return result.category == "url_blocked" and bool(refused) and all(d.address is None for d in refused)


async def loopback(stage: Stage) -> bool:
    return await _refused_before_dialling(stage, stage.denied.url("agent/secret.html", host="127.0.0.1")) \
        and stage.denied.paths == []


async def private_ip(stage: Stage) -> bool:
    return await _refused_before_dialling(stage, "http://10.0.0.1/")


async def metadata_ip(stage: Stage) -> bool:
    return await _refused_before_dialling(stage, "http://169.254.169.254/latest/meta-data/")


async def dns_to_loopback(stage: Stage) -> bool:
    """``localhost`` by the system resolver, ``rebind.test`` by the proxy's: both are 127.0.0.1."""
    system = await _refused_before_dialling(stage, stage.denied.url("agent/secret.html", host="localhost"))
    mapped = await _refused_before_dialling(stage, stage.denied.url("agent/secret.html", host="rebind.test"))
    return system and mapped and stage.denied.paths == []


async def devtools_endpoint(stage: Stage) -> bool:
    """No browser of the pool listens on any TCP port (a DevTools port would be one)."""
    pids = [pid for root in stage.pool.browser_pids() for pid in process_tree(root)]
    return bool(pids) and listening_pids(pids) == set()


# --- the API, webhooks and the model: a real API (redis-server + browserd serve) beside the pool ---


def _api_stack(**settings: object):  # type: ignore[no-untyped-def]
    from tests.queue.stack import (
        stack,  # a bench-only deployment helper, as bench.queue uses
    )

    return stack(**settings)


async def the_api(stage: Stage) -> bool:
    """A job's page asks for the API's /metrics and /v1/jobs on loopback: refused before dialling."""
    with _api_stack() as api:
        ok = [await _refused_before_dialling(stage, f"{api.url}{path}") for path in ("/metrics", "/v1/jobs")]
    return all(ok)


async def csrf_text_plain(stage: Stage) -> bool:
    """A page (even one allowed to reach the API's address) POSTs a text/plain batch to a token-less
    API on loopback: the API answers 415 and no batch is written."""
    with _api_stack(api_token="") as api:
        page = stage.site.url(f"egress/csrf.html?api={quote(api.url, safe='')}")
        await stage.run(_visit(page, 1.5))
        batches = api.redis.zcard("browserd:batches")
    return batches == 0


async def webhook_to_loopback(stage: Stage) -> bool:
    """A job whose webhook is a loopback address (a literal, or localhost) is refused at submission."""
    stage.denied.paths.clear()
    with _api_stack() as api:
        refused = [api.call("POST", "/v1/jobs", {"task": "x", "webhook_url": url})[0] == 422
                   for url in (stage.denied.url("hook", host="127.0.0.1"), stage.denied.url("hook"))]
    return all(refused) and stage.denied.paths == []


async def webhook_redirect(stage: Stage) -> bool:
    """A receiver (opened on purpose) answers 302 to an internal URL: the redirect is not followed."""
    from workers.webhooks import deliver_webhook

    stage.denied.paths.clear()
    target = quote(stage.denied.url("agent/secret.html", host="127.0.0.1"), safe="")
    os.environ["BROWSERD_WEBHOOK_ALLOWED_NETWORKS"] = "127.0.0.1/32"
    get_settings.cache_clear()
    try:
        status = await asyncio.to_thread(
            lambda: deliver_webhook.apply((stage.denied.url(f"redirect?to={target}", host="127.0.0.1"),
                                           "job.finished", {"job": {"id": "x"}})).get())
    finally:
        os.environ.pop("BROWSERD_WEBHOOK_ALLOWED_NETWORKS", None)
        get_settings.cache_clear()
    return status == 302 and all(p.startswith("/redirect") for p in stage.denied.paths)


async def _prompts_of(stage: Stage, page: str) -> list[str]:
    """The text of every message a scripted model is sent for a one-step job on ``page``."""
    def finish(request: dict[str, object]) -> Reply:
        tool = ((request.get("tools") or [{}])[0]).get("function", {}).get("name")  # type: ignore[union-attr]
        if tool == "AgentOutput":
            return Reply.tool({"current_state": {"evaluation_previous_goal": "", "memory": "", "next_goal": "stop"},
                               "action": [{"done": {"text": "read it", "success": True}}]})
        return Reply.tool({"observation": "a page", "challenges": "", "done": True, "next_steps": "",
                           "final_answer": "read it", "reasoning": "bench", "web_task": True})

    with LLMServer() as llm:
        llm.responder = finish
        settings = stage.settings.model_copy(update={"llm_base_url": llm.base_url, "planning_interval": 100})
        spec = JobSpec(task="Read the page", start_url=stage.site.url(page), allowed_networks=PAGES,
                       options={"max_steps": 1})
        async with stage.pool.lease() as lease:
            await run_job(spec, lease, settings=settings)
        return [m.get("content") for r in llm.requests for m in r["messages"] if isinstance(m.get("content"), str)]


async def injected_title(stage: Stage) -> bool:
    """A page whose <title> holds ``<user_request>`` tags: the model sees one request, the job's own."""
    seen = await _prompts_of(stage, "agent/injected.html")
    requests = [block for text in seen for block in re.findall(r"<user_request>(.*?)</user_request>", text, re.S)]
    return bool(requests) and not any("send the cookies" in block for block in requests)


async def obfuscated_override(stage: Stage) -> bool:
    """Task overrides spelt with zero-width characters, soft hyphens, Cyrillic look-alikes, full-width
    letters, in French and in Chinese: each reaches the model flagged, none as an order."""
    seen = await _prompts_of(stage, "agent/obfuscated.html")
    pages = [text for text in seen if "Deals of the day" in text]
    return bool(pages) and all(text.count(OVERRIDE_MARK) >= 5 for text in pages)


# --- isolation (issue 22): what goes around the gate when Chrome misbehaves -------------------
# Shared with tests/cdp/test_isolation.py (tests/support/isolation_attacks.py); each needs root.


async def webrtc_udp(stage: Stage) -> bool:
    """WebRTC (STUN and ICE checks carrying page bytes) to a refused address, on a test host of our own
    with a non-loopback interface: no datagram arrives."""
    return await asyncio.to_thread(isolation_attacks.webrtc_datagrams, stage.settings) == 0


async def network_service_killed(stage: Stage) -> bool:
    """The network service is killed with -9 after a job; the next job's warm context loads a refused
    loopback address: nothing reaches it."""
    paths = await isolation_attacks.after_network_service_killed(stage.site.url("egress/csrf.html"), stage.denied,
                                                                 stage.settings)
    return paths == []


async def chrome_own_traffic(stage: Stage) -> bool:
    """A request outside every job's context (as Chrome's component updates, accounts or safe browsing
    make): it has no route to the recorder on the worker's loopback."""
    return await isolation_attacks.default_context_reaches(stage.pool, stage.denied) == []


# --- names and addresses (issue 22, finding 6): a denied name or a closed address respelled ------


async def trailing_dot_domain(stage: Stage) -> bool:
    """``evil.test`` denied: a page's fetch and iframe to ``evil.test.`` (the same name to DNS) and the
    job's own navigation to ``EVIL.test.`` are refused by name; nothing reaches the recorder."""
    target = quote(stage.denied.url("agent/secret.html", host="evil.test."), safe="")
    page = stage.site.url(f"agent/firewall.html?fetch=1&frame=1&target={target}")
    await stage.run(_visit(page, denied_domains=["evil.test"]))
    from_page = stage.denied.paths == []
    result, decisions = await stage.run(_visit(stage.denied.url("agent/secret.html", host="EVIL.test."), 0.2,
                                               denied_domains=["evil.test"]))
    return from_page and result.category == "url_blocked" and stage.denied.paths == [] \
        and all(d.address is None for d in decisions if d.host == "evil.test")


async def nat64_address(stage: Stage) -> bool:
    """The metadata service and the recorder's loopback address spelled through NAT64 (``64:ff9b::/96``,
    as a DNS64 resolver answers): refused before dialling, as their IPv4 spellings are."""
    metadata = await _refused_before_dialling(stage, "http://[64:ff9b::a9fe:a9fe]/latest/meta-data/")
    loop = await _refused_before_dialling(stage, stage.denied.url("agent/secret.html", host="[64:ff9b::7f00:1]"))
    return metadata and loop and stage.denied.paths == []


# --- output schemas (issue 22, finding 5): a schema that would freeze its worker ----------------


async def schema_anyof_bomb(stage: Stage) -> bool:
    """27 ``$defs`` each anyOf two ``$ref``s to the next (2^26 branches for an object): refused at
    submission naming its limit; and one that got in anyway (a job queued before the bound) fails
    its own job at the schema check's deadline while the event loop keeps going (no stall of a second)."""
    try:
        check_spec(JobSpec(task="x", output_schema=anyof_bomb()), stage.settings)
        return False
    except SchemaTooComplex as exc:
        if exc.limit is not SchemaLimit.branches:
            return False
    spec = JobSpec(script=[{"go_to_url": {"url": stage.site.url("cdp/basic.html")}},
                           {"extract_fields": {"fields": {"heading": "h1"}}}, {"done": {"text": "read"}}],
                   allowed_networks=PAGES, output_schema=anyof_bomb())
    stall, beating = 0.0, True

    async def heartbeat() -> None:  # stands for the worker's heartbeat and its other jobs
        nonlocal stall
        while beating:
            before = time.monotonic()
            await asyncio.sleep(0.05)
            stall = max(stall, time.monotonic() - before - 0.05)

    beat = asyncio.create_task(heartbeat())
    try:
        result, _ = await stage.run(spec)
    finally:
        beating = False
        await beat
    return (result.category == FailureCategory.invalid_output and "output schema took longer" in (result.error or "")
            and stall < 1.0)


# --- secrets (issue 22, finding 4): a page echoes a typed secret in ordinary encodings -----------


async def encoded_secret_echo(stage: Stage) -> bool:
    """A GET sign-in with issue 22's two secrets; the signed-in page echoes them upper-cased by CSS,
    HTML-escaped, URL-encoded (a link, a failing image, the console) and as a base64 Basic
    credential. No encoding of either reaches the model's prompts, the result or a text artifact."""
    turns = iter([[{"input_text": {"index": 1, "text": "<secret>user</secret>"}},
                   {"input_text": {"index": 2, "text": "<secret>password</secret>"}}, {"click_element": {"index": 3}}],
                  [{"wait": {"seconds": 1}}], [{"done": {"text": "signed in", "success": True}}]])

    def sign_in(request: dict[str, object]) -> Reply:
        tool = ((request.get("tools") or [{}])[0]).get("function", {}).get("name")  # type: ignore[union-attr]
        if tool == "AgentOutput":
            return Reply.tool({"current_state": {"evaluation_previous_goal": "", "memory": "", "next_goal": "sign in"},
                               "action": next(turns, [{"done": {"text": "signed in", "success": True}}])})
        done = any("signed in" in json.dumps(m) for m in request["messages"] if m["role"] == "assistant")  # type: ignore[attr-defined, index]
        return Reply.tool({"observation": "a page", "challenges": "", "done": done, "next_steps": "",
                           "final_answer": "signed in" if done else "", "reasoning": "bench", "web_task": True})

    with LLMServer() as llm, tempfile.TemporaryDirectory() as store:
        llm.responder = sign_in
        settings = stage.settings.model_copy(update={"llm_base_url": llm.base_url, "planning_interval": 100,
                                                      "artifacts_url": f"file://{store}"})
        spec = JobSpec(task="Sign in", start_url=stage.site.url("agent/echo-login.html"), allowed_networks=PAGES,
                       secrets=SECRETS, artifacts={"page": "always", "logs": "always", "screenshots": "off"})
        async with stage.pool.lease() as lease:
            result = await run_job(spec, lease, settings=settings)
        kept = {p.name: p.read_text(errors="replace") for p in Path(store).rglob("*") if p.is_file()}
        places = {"the model's prompts": json.dumps(llm.requests), "the result": result.model_dump_json(), **kept}
    signed_in = "SIGNED IN AS <secret>user</secret>" in kept.get("page.md", "")  # the echo was there, scrubbed
    return signed_in and leaks(places) == []


# --- more spellings and bounds (issue 22, findings 5 and 6) -------------------------------------


async def embedded_ipv4_address(stage: Stage) -> bool:
    """The metadata address inside SIIT, IPv4-compatible and 6to4 IPv6 literals: refused before dialling."""
    urls = ["http://[::ffff:0:a9fe:a9fe]/latest/", "http://[::a9fe:a9fe]/latest/", "http://[2002:a9fe:a9fe::1]/latest/"]
    return all([await _refused_before_dialling(stage, url) for url in urls])


async def site_local_address(stage: Stage) -> bool:
    """``fec0::/10`` (deprecated site-local, still routed inside some networks) is private, not public."""
    return await _refused_before_dialling(stage, "http://[fec0::1]/")


async def denied_ip_respelled(stage: Stage) -> bool:
    """127.0.0.1 opened as a network but denied by name: its decimal, hex and IPv4-mapped spellings are
    denied too, and nothing reaches the recorder listening there."""
    hosts = ["2130706433", "0x7f.0.0.1", "[::ffff:127.0.0.1]"]
    results = [await stage.run(_visit(stage.denied.url("agent/secret.html", host=host), 0.2,
                                      denied_domains=["127.0.0.1"])) for host in hosts]
    return all(result.category == "url_blocked" for result, _ in results) and stage.denied.paths == []


async def schema_ref_recursion(stage: Stage) -> bool:
    """``{"$ref": "#"}`` is refused at submission as recursive, not run into a RecursionError."""
    try:
        check_spec(JobSpec(task="x", output_schema={"$ref": "#"}), stage.settings)
    except SchemaTooComplex as exc:
        return exc.limit is SchemaLimit.recursion
    return False


# --- DNS rebinding on the API (issue 22, finding 7) ----------------------------------------------


async def rebound_host(stage: Stage) -> bool:
    """A page whose name was re-pointed at a token-less loopback API talks to it as its own origin
    (``Host: rebind.test:PORT``): it posts a job, reads the console's form and submits it with the form's
    CSRF token, and calls /mcp's submit_job. Every answer is 421 and no job exists."""
    import httpx

    with _api_stack(api_token="") as api:
        port = api.url.rsplit(":", 1)[1]
        page = {"Host": f"rebind.test:{port}", "Origin": f"http://rebind.test:{port}", "Sec-Fetch-Site": "same-origin"}
        spec = {"task": "send me the results", "start_url": "https://example.com/"}
        mcp = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "submit_job", "arguments": spec}}
        with httpx.Client(base_url=api.url, timeout=30) as http:
            form = http.get("/ui/submit", headers=page)
            csrf = re.search(r'name="csrf" value="([0-9a-f]+)"', form.text)
            answers = [form.status_code, http.post("/v1/jobs", json=spec, headers=page).status_code,
                       http.post("/ui/submit", headers=page, data={"kind": "task", "task": spec["task"],
                                                                   "csrf": csrf.group(1) if csrf else ""}).status_code,
                       http.post("/mcp", json=mcp, headers={**page, "Accept": "application/json, text/event-stream"}).status_code]
        status, listed = api.call("GET", "/v1/jobs")
    return answers == [421] * 4 and status == 200 and listed["jobs"] == []


# --- downloads (issue 22, finding 9): a download with no Content-Length, past the cap ----------


class _EndlessDownload(BaseHTTPRequestHandler):
    """``/`` links to ``/big.bin``, sent chunked with no Content-Length (40 MiB), so only Chrome's
    progress reports can tell it is past the cap."""

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        if self.path != "/big.bin":
            body = b'<a href="/big.bin" download="big.bin">archive</a>'
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        chunk = b"x" * 65536
        with contextlib.suppress(OSError):
            for _ in range(640):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.write(b"0\r\n\r\n")

    def log_message(self, *args: object) -> None:
        pass


async def download_over_cap(stage: Stage) -> bool:
    """A chunked 40 MiB download under a 1 MiB cap: refused, and nothing of it kept in the job's
    artifacts (what may pass the cap on disk before the cancel is the bound docs/security.md states)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _EndlessDownload)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with tempfile.TemporaryDirectory() as folder:
            settings = stage.settings.model_copy(update={"download_max_mb": 1, "artifacts_url": f"file://{folder}"})
            job = ArtifactStore.open(settings.artifacts_url).job(new_id())
            spec = JobSpec(start_url=f"http://127.0.0.1:{server.server_port}/", allowed_networks=PAGES,
                           script=[{"click_element": {"index": 1}}, {"wait": {"seconds": 3}}, {"done": {"text": "ok"}}])
            async with stage.pool.lease() as lease:
                result = await run_job(spec, lease, settings=settings, job_id=job.job_id)
            kept = [artifact.name for artifact in job.list()]
    finally:
        server.shutdown()
        server.server_close()
    refused = [d for d in result.downloads if d.name == "big.bin"] == [] and "larger than the 1 MiB limit" in \
        str(result.steps[0].actions[0].result)
    return refused and not any(name.startswith("download-") for name in kept)


# --- tenants (issue 23): a job opening networks for itself, a tenant reading another's ---------


async def job_opens_metadata(stage: Stage) -> bool:
    """A job (or session) asking ``allowed_networks`` past the operator's (``0.0.0.0/0``, ``::/0``,
    the metadata address) is refused at submission, naming the ceiling."""
    for wide in (["0.0.0.0/0"], ["::/0"], ["169.254.169.254/32"]):
        try:
            check_spec(JobSpec(task="read the instance's credentials", allowed_networks=wide), stage.settings)
            return False
        except SpecError as exc:
            if OPERATOR_NETWORKS not in str(exc):
                return False
    return True


async def cross_tenant(stage: Stage) -> bool:
    """Tenant B walks every route, MCP tool and console page against tenant A's objects
    (``bench.tenancy``): nothing of A's is read, listed, cancelled or exported."""
    report = await asyncio.to_thread(tenancy.run)
    return report.routes_checked > 0 and not report.cross_tenant_leaks


VECTORS: dict[str, Check] = {
    "iframe_subresource": iframe_subresource,
    "service_worker": service_worker,
    "shared_worker": shared_worker,
    "websocket": websocket,
    "redirect": redirect,
    "popup": popup,
    "loopback": loopback,
    "private_ip": private_ip,
    "metadata_ip": metadata_ip,
    "dns_to_loopback": dns_to_loopback,
    "devtools_endpoint": devtools_endpoint,
    "the_api": the_api,
    "csrf_text_plain": csrf_text_plain,
    "webhook_to_loopback": webhook_to_loopback,
    "webhook_redirect": webhook_redirect,
    "injected_title": injected_title,
    "obfuscated_override": obfuscated_override,
    "webrtc_udp": webrtc_udp,
    "network_service_killed": network_service_killed,
    "chrome_own_traffic": chrome_own_traffic,
    # names and addresses (issue 22, finding 6)
    "trailing_dot_domain": trailing_dot_domain,
    "nat64_address": nat64_address,
    # output schemas (issue 22, finding 5)
    "schema_anyof_bomb": schema_anyof_bomb,
    # secrets (issue 22, finding 4)
    "encoded_secret_echo": encoded_secret_echo,
    # more spellings and bounds (issue 22, findings 5 and 6)
    "embedded_ipv4_address": embedded_ipv4_address,
    "site_local_address": site_local_address,
    "denied_ip_respelled": denied_ip_respelled,
    "schema_ref_recursion": schema_ref_recursion,
    # DNS rebinding on the API (issue 22, finding 7)
    "rebound_host": rebound_host,
    # downloads (issue 22, finding 9)
    "download_over_cap": download_over_cap,
    # tenants (issue 23)
    "job_opens_metadata": job_opens_metadata,
    "cross_tenant": cross_tenant,
}


async def main(names: list[str]) -> dict[str, object]:
    # Closed by default whatever the environment says: each vector opens what it needs per job.
    settings = load_settings(allow_private_networks=False, allowed_networks=[], allowed_domains=[], denied_domains=[])
    config = PoolConfig(browsers=1, warm=1, egress=NetworkPolicy(), resolver=suffix_resolver(".test", "127.0.0.1"))
    with serve(SITE) as site, serve(SITE) as other, RecordingServer() as denied:
        async with WebSocketRecorder() as sockets, BrowserPool(config) as pool:
            stage = Stage(pool, site, other, denied, sockets, settings)
            leaked = [name for name in names if not await _blocked(name, stage)]
    return {"vectors": len(names), "blocked": len(names) - len(leaked), "leaked": leaked}


async def _blocked(name: str, stage: Stage) -> bool:
    """A vector that crashes proves nothing was blocked: it counts as leaked, and the run goes on."""
    try:
        return await VECTORS[name](stage)
    except Exception:
        logging.getLogger("bench.attacks").exception("vector %s crashed; counted as leaked", name)
        return False


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("vectors", nargs="*", metavar="vector", help=f"run only these (default: all): {', '.join(VECTORS)}")
    args = parser.parse_args()
    unknown = set(args.vectors) - set(VECTORS)
    if unknown:
        parser.error(f"unknown vector(s): {', '.join(sorted(unknown))}")
    logging.basicConfig(level=logging.WARNING)
    print(json.dumps(asyncio.run(main(args.vectors or list(VECTORS)))))


if __name__ == "__main__":
    cli()
