"""Per-job browser settings on real pages in real Chromium, and a job's upstream proxy as a real
pproxy process on 127.0.0.1 chained behind the egress proxy."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from pydantic import ValidationError

from tests.agent.scripted import NAVIGATOR, PLANNER, act, plan
from tests.support.jobs import run_job
from tests.support.proxies import (
    PASSWORD,
    USERNAME,
    ProxyProcess,
    free_port,
    running_proxy,
)
from workers.jobs.model.spec import JobSpec
from workers.jobs.model.status import FailureCategory, JobStatus

PROBE = """<!doctype html><html><head><title>probe</title>
<style>@font-face { font-family: probe; src: url(/probe.woff2); } body { font-family: probe; }</style></head>
<body><h1>probe</h1><img src="/pixel.png" alt="pixel"><img src="LEAK" alt="elsewhere">
<div id="ua"></div><div id="lang"></div><div id="tz"></div><div id="size"></div><div id="geo">waiting</div>
<script>
document.getElementById('ua').textContent = navigator.userAgent;
document.getElementById('lang').textContent = navigator.language;
document.getElementById('tz').textContent = Intl.DateTimeFormat().resolvedOptions().timeZone;
document.getElementById('size').textContent = innerWidth + 'x' + innerHeight;
navigator.geolocation.getCurrentPosition(
  p => { document.getElementById('geo').textContent = p.coords.latitude + ',' + p.coords.longitude; },
  e => { document.getElementById('geo').textContent = 'error ' + e.code; });
</script></body></html>"""
PIXEL = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000"
                      "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")


class Site:
    """Serves the probe page on ``host`` and records each request's path and headers."""

    def __init__(self, host: str = "127.0.0.1", leak_to: str = "") -> None:
        self.requests: list[tuple[str, dict[str, str]]] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                site.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                body, kind = (PROBE.replace("LEAK", leak_to).encode(), "text/html") if self.path == "/probe.html" \
                    else (PIXEL, "image/png") if self.path.endswith(".png") else (b"", "font/woff2")
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer((host, 0), functools.partial(Handler))
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.origin = f"http://{host}:{self.port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def paths(self) -> list[str]:
        return [path for path, _ in self.requests]

    def headers_of(self, path: str) -> dict[str, str]:
        return next(h for p, h in self.requests if p == path)

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def elsewhere() -> Iterator[Site]:
    """A server on 127.0.0.2: loopback, but not in the networks the test run opens (127.0.0.1/32)."""
    site = Site("127.0.0.2")
    yield site
    site.close()


@pytest.fixture
def probe(elsewhere: Site) -> Iterator[Site]:
    site = Site(leak_to=f"{elsewhere.origin}/leak.png")
    yield site
    site.close()


@pytest.fixture(scope="module")
def upstream() -> Iterator[ProxyProcess]:
    with running_proxy() as p:
        yield p


def _read(probe: Site, **settings: object) -> JobSpec:
    return JobSpec(script=[{"go_to_url": {"url": f"{probe.origin}/probe.html"}}, {"wait": {"seconds": 0.5}},
                           {"extract_fields": {"fields": {"ua": "#ua", "lang": "#lang", "tz": "#tz",
                                                          "size": "#size", "geo": "#geo"}}}], **settings)


async def test_the_page_sees_the_jobs_browser_settings(pool, probe):
    spec = _read(probe, user_agent="browserd-test/1.0 (crawler)", locale="de-DE", timezone="Asia/Tokyo",
                 viewport={"width": 1024, "height": 700}, geolocation={"latitude": 48.85, "longitude": 2.35},
                 extra_http_headers={"X-Crawl": "nightly"})
    async with pool.lease() as lease:
        result = await run_job(spec, lease)
    assert result.status == JobStatus.succeeded, result.error
    assert result.data == {"ua": "browserd-test/1.0 (crawler)", "lang": "de-DE", "tz": "Asia/Tokyo",
                           "size": "1024x700", "geo": "48.85,2.35"}
    seen = probe.headers_of("/probe.html")
    assert seen["user-agent"] == "browserd-test/1.0 (crawler)"
    assert seen["accept-language"].startswith("de-DE")
    assert seen["x-crawl"] == "nightly"
    assert probe.headers_of("/pixel.png")["x-crawl"] == "nightly"  # subresources too


async def test_without_settings_the_page_sees_the_browsers_own(pool, probe):
    async with pool.lease() as lease:
        result = await run_job(_read(probe), lease)
    assert result.status == JobStatus.succeeded, result.error
    assert "browserd-test" not in result.data["ua"] and result.data["tz"] != "Asia/Tokyo"
    assert "x-crawl" not in probe.headers_of("/probe.html")
    assert "/pixel.png" in probe.paths() and "/probe.woff2" in probe.paths()


async def test_block_resources_stops_images_and_fonts(pool, probe):
    async with pool.lease() as lease:
        result = await run_job(_read(probe, block_resources=["images", "fonts"]), lease)
    assert result.status == JobStatus.succeeded, result.error
    assert "/probe.html" in probe.paths()
    assert "/pixel.png" not in probe.paths() and "/probe.woff2" not in probe.paths()
    assert not any("blocked" in (a.result or "") for s in result.steps for a in s.actions)  # not told to the model


@pytest.mark.parametrize("scheme", ["http", "socks5"])
async def test_traffic_goes_through_the_jobs_proxy_with_its_credentials(pool, probe, elsewhere, upstream, scheme):
    spec = _read(probe, proxy={"server": upstream.server(scheme), "username": USERNAME, "password": PASSWORD})
    before = len(upstream.passed(probe.port))
    async with pool.lease() as lease:
        result = await run_job(spec, lease)
    assert result.status == JobStatus.succeeded, result.error
    assert len(upstream.passed_at_least(probe.port, before + 2)) >= before + 2, upstream.lines  # the page and its pixel
    # The egress policy still judges every destination: 127.0.0.2 is not opened, so the page's
    # image there never reached the proxy, let alone the server.
    assert elsewhere.requests == [] and upstream.passed(elsewhere.port) == []
    assert PASSWORD not in result.model_dump_json()
    # The site (a hostile one would try) never sees the proxy's credentials: the gate speaks to the proxy.
    seen = repr(probe.requests)
    assert "proxy-authorization" not in seen and PASSWORD not in seen and USERNAME not in seen


async def test_wrong_proxy_credentials_fail_the_job_as_proxy_error(pool, probe, upstream):
    spec = _read(probe, proxy={"server": upstream.server("http"), "username": USERNAME, "password": "not-the-one"})
    async with pool.lease() as lease:
        result = await run_job(spec, lease)
    assert result.status == JobStatus.failed
    assert result.category == FailureCategory.proxy_error, result.error
    assert "refused the credentials" in result.error and "not-the-one" not in result.model_dump_json()
    assert probe.requests == []


async def test_an_unreachable_proxy_fails_the_job_as_proxy_error(pool, probe):
    spec = _read(probe, proxy={"server": f"socks5://127.0.0.1:{free_port()}"})
    async with pool.lease() as lease:
        result = await run_job(spec, lease)
    assert result.category == FailureCategory.proxy_error, result.error
    assert "cannot connect" in result.error


@pytest.mark.parametrize("field, value, message", [
    ("proxy", {"server": "ftp://p:21"}, "give the proxy as http://host:port"),
    ("proxy", {"server": "http://u:p@p:8080"}, "not in the address"),
    ("proxy", {"server": "http://p:8080", "password": "x"}, "needs a 'username'"),
    ("proxy", {"server": "http://p:8080", "password_secret": "pw"}, "needs a 'username'"),
    ("proxy", {"server": "http://p:8080", "username": "u", "password": "x", "password_secret": "pw"}, "not both"),
    ("proxy", {"server": "http://p:8080", "username": "u", "password_secret": "not a name"}, "should match pattern"),
    ("proxy", {"server": "http://p:99999"}, "port must be a number"),
    ("extra_http_headers", {"Host": "evil"}, "set by the browser or the proxy"),
    ("extra_http_headers", {"Referer": "https://x.test/"}, "set by the browser or the proxy"),
    ("extra_http_headers", {"X-A": "a\r\nB: c"}, "no line breaks"),
    ("extra_http_headers", {"bad name": "v"}, "is not a header name"),
    ("locale", "not a locale!", "is not a locale"),
    ("timezone", "Mars/Olympus", "is not an IANA time zone"),
    ("timezone", "../../etc/passwd", "is not an IANA time zone"),
    ("viewport", {"width": 10, "height": 700}, "greater than or equal to 200"),
    ("geolocation", {"latitude": 91, "longitude": 0}, "less than or equal to 90"),
    ("block_resources", ["images", "scripts"], "'images', 'media' or 'fonts'"),
    ("user_agent", "a\nb", "should match pattern"),
])
def test_bad_settings_are_refused_naming_the_field(field, value, message):
    with pytest.raises(ValidationError) as caught:
        JobSpec(task="x", **{field: value})
    error = caught.value.errors()[0]
    assert error["loc"][0] == field and message in error["msg"], caught.value


async def test_an_agent_job_through_a_proxy_shows_the_model_nothing_of_it(pool, probe, upstream, llm, settings):
    """The model reads the page, never the proxy's address book: no password, no username, no Proxy-*."""
    llm.add(PLANNER, plan(), plan(done=True, final_answer="read the probe"))
    llm.add(NAVIGATOR, act({"done": {"text": "read the probe", "success": True}}))
    spec = JobSpec(task="Read the probe page", start_url=f"{probe.origin}/probe.html", user_agent="browserd-agent/2",
                   proxy={"server": upstream.server("socks5"), "username": USERNAME, "password": PASSWORD})
    async with pool.lease() as lease:
        result = await run_job(spec, lease, settings=settings)
    assert result.status == JobStatus.succeeded, result.error
    assert upstream.passed_at_least(probe.port, 1) and probe.headers_of("/probe.html")["user-agent"] == "browserd-agent/2"
    prompts = repr(llm.requests)
    assert "probe" in prompts  # the model did read the page
    assert PASSWORD not in prompts and USERNAME not in prompts and "socks5" not in prompts
