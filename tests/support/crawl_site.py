"""A generated site on 127.0.0.1 for crawls, which records every request it answers.

Its shape (``CrawlSite(Shape(...), Manners(...))``): a home page linking ``sections`` sections of ``items`` items each;
every third item has a print view declaring the item as its ``rel=canonical``; links repeated with
tracking parameters (``utm_*``, ``fbclid``, ``gclid``), fragments, a shuffled query and the host in
capitals; an endless calendar (``/calendar/{year}/{month}`` links the months before and after: a
trap only max_depth or max_pages stops); ``orphans`` pages linked from nowhere, listed by the
sitemaps only (a sitemap index naming a gzip sitemap and a plain one, named by robots.txt); a
``/private/`` tree robots.txt disallows (linked from the home page and listed in a sitemap); a
link to another site. ``crawl_delay`` adds a ``Crawl-delay`` line (seconds, fractions too; ``starts``:
when each page request arrived). ``hostile``: robots.txt also names
a sitemap on the cloud metadata address, and the home page links private addresses, script and data
URLs, and a thousand variants of one page differing only in tracking parameters and fragments.
``busy``: ``/busy`` answers 429 with ``Retry-After: {busy}`` (a page linking ``/about`` and
``/section/0``), and the home page links it; with ``busy_for``, only its first ``busy_for`` requests:
then it recovers and answers 200 (``busy_served``: the 200s it answered). ``slashes``: every page also answers with a trailing
slash (``/about/`` is ``/about``), and the home page links ``/about/``, ``/about////``,
``/section/0/?utm_source=x`` and ``/item/0/0/`` beside the slashless spellings (``slashed_visits``: the
visits of a path spelt with one).

``injection``: the home page also links an off-topic page of the site (``/about?from=promo``) and
another site (``http://example.com/evil``), both with that anchor text (a crawl's follow model is
told to score them high).

``hold`` makes each page's answer take that long, so pages visited at once overlap at the site
(``most_in_flight``: the most page requests answered at once).

``plant(changed, gone, added)`` makes the site's next version, for a second run's change feed: the
text of the ``changed`` items' pages differs, the ``gone`` orphans are dropped from the sitemaps and
answer 404, ``added`` new orphans are listed; ``planted()`` is what a comparison must then report.

``read_page`` is a scripted model (``tests.support.llm_server``) for crawls with an agent task: its
answer is the page's sentence ("Text of ..."), so a reworded page reads differently.

``pages()`` is every page a crawl with enough depth and budget must visit; ``visits`` counts the
requests per normalised URL (``workers.jobs.crawls.urls.normalise``), robots.txt and sitemaps apart.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from html import escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from tests.support.llm_server import Reply
from workers.jobs.crawls.urls import normalise

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


@dataclass(frozen=True)
class Shape:
    """What the site holds: ``sections`` of ``items``, ``orphans`` only the sitemaps list, ``slashes``."""

    sections: int = 8
    items: int = 15
    orphans: int = 20
    slashes: bool = False


@dataclass(frozen=True)
class Manners:
    """How the site answers: ``crawl_delay``, ``hold``, ``busy``/``busy_for``, ``hostile``, ``injection``."""

    crawl_delay: float = 0
    hold: float = 0.0
    busy: int = 0
    busy_for: int = 0
    hostile: bool = False
    injection: str | None = None


class CrawlSite:
    def __init__(self, shape: Shape | None = None, manners: Manners | None = None) -> None:
        shape, manners = shape or Shape(), manners or Manners()
        self.sections, self.items, self.orphans = shape.sections, shape.items, shape.orphans
        self.slashes = shape.slashes
        self.crawl_delay, self.hostile, self.injection = manners.crawl_delay, manners.hostile, manners.injection
        self.busy = manners.busy
        self.busy_for = manners.busy_for  # 429s /busy answers before it recovers (0: for ever)
        self.busy_served = 0
        self.hold = manners.hold  # seconds each page's answer takes (so visits at once overlap and show)
        self.in_flight = 0
        self.most_in_flight = 0  # the most page requests the site answered at once
        self.revised: set[tuple[int, int]] = set()  # items whose text changed
        self.gone: set[int] = set()  # orphans removed
        self.added = 0  # orphans added after the first ``orphans``
        self.visits: Counter[str] = Counter()
        self.starts: list[float] = []  # when each page request arrived (time.monotonic())
        self.fetched: Counter[str] = Counter()  # robots.txt and sitemaps
        self.lock = threading.Lock()
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def do_GET(self) -> None:  # noqa: N802
                with site.serving(self.path):
                    status, kind, body = site.answer(self.path)
                self.send_response(status)
                if status == 429:
                    self.send_header("Retry-After", str(site.busy))
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.origin = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, name=f"crawl-site-{self.port}", daemon=True)

    def __enter__(self) -> CrawlSite:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def url(self, path: str) -> str:
        return self.origin + path

    @contextlib.contextmanager
    def serving(self, path: str) -> Iterator[None]:
        """Count a page request in flight (robots.txt and sitemaps apart), held ``hold`` seconds."""
        page = not (path.startswith("/robots.txt") or path.startswith("/sitemap") or path == "/favicon.ico")
        if page:
            with self.lock:
                self.starts.append(time.monotonic())
                self.in_flight += 1
                self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            if page and self.hold:
                time.sleep(self.hold)
            yield
        finally:
            if page:
                with self.lock:
                    self.in_flight -= 1

    # --- what a full crawl must find ---------------------------------------------------------

    def pages(self, max_depth: int) -> set[str]:
        """Every normalised page (calendar aside) a crawl from ``/`` with this depth must visit."""
        out = {"/", "/about"} if max_depth >= 1 else {"/"}
        if max_depth >= 1:
            out |= {f"/section/{s}" for s in range(self.sections)}
        if max_depth >= 2:
            out |= {f"/item/{s}/{i}" for s in range(self.sections) for i in range(self.items)}
        if max_depth >= 3:
            out |= {f"/item/{s}/{i}?view=print" for s in range(self.sections) for i in range(self.items) if i % 3 == 0}
        out |= {f"/orphan/{n}" for n in self._orphans()}
        return {normalise(self.url(p)) or p for p in out}

    def plant(self, changed: int, gone: int, added: int) -> None:
        """The site's next version: ``changed`` items reworded, ``gone`` orphans removed, ``added`` new."""
        items = [(s, i) for s in range(self.sections) for i in range(self.items)]
        self.revised = set(items[1::max(1, len(items) // max(1, changed))][:changed])
        self.gone = set(range(gone))
        self.added = added

    def planted(self) -> dict[str, int]:
        """What comparing the run before ``plant`` with the one after must find (extract mode: an
        item's page is one item, keyed by its URL)."""
        return {"changed": len(self.revised), "removed": len(self.gone), "added": self.added,
                "pages_removed": len(self.gone), "pages_added": self.added}

    def _orphans(self) -> list[int]:
        return [n for n in range(self.orphans + self.added) if n not in self.gone]

    def slashed_visits(self) -> list[str]:
        """Visited URLs whose path (the root apart) ends with a slash."""
        return [url for url in self.visits if urlsplit(url).path.endswith("/") and urlsplit(url).path != "/"]

    @staticmethod
    def lastmod(orphan: int) -> str:
        """The sitemap's lastmod of orphan page ``orphan`` (one day apart, from 2026-10-01 on)."""
        return f"2026-10-{orphan % 28 + 1:02d}"

    def is_trap(self, url: str) -> bool:
        return urlsplit(url).path.startswith("/calendar/")

    # --- answering ---------------------------------------------------------------------------

    def answer(self, path: str) -> tuple[int, str, bytes]:
        parts = urlsplit(path)
        route = parts.path
        if route == "/robots.txt" or route.startswith("/sitemap"):
            with self.lock:
                self.fetched[route] += 1
            return self._meta(route)
        if route == "/favicon.ico":
            return 404, "text/plain", b""
        with self.lock:
            self.visits[normalise(self.url(path)) or path] += 1
        if self.slashes:
            route = route.rstrip("/") or "/"
        if route == "/busy" and self.busy:
            with self.lock:
                refused = not self.busy_for or self.visits[normalise(self.url(path)) or path] <= self.busy_for
                self.busy_served += not refused
            if refused:
                return 429, "text/html; charset=utf-8", _html("Too many requests", ["/about", "/section/0"]).encode()
            return 200, "text/html; charset=utf-8", _html("Busy, served", ["/about", "/section/0"]).encode()
        html = self._page(route, parse_qs(parts.query))
        if html is None:
            return 404, "text/html", b"<html><body><h1>Not found</h1></body></html>"
        return 200, "text/html; charset=utf-8", html.encode()

    def _meta(self, route: str) -> tuple[int, str, bytes]:
        if route == "/robots.txt":
            delay = f"Crawl-delay: {self.crawl_delay}\n" if self.crawl_delay else ""
            evil = "Sitemap: http://169.254.169.254/latest/sitemap.xml\n" if self.hostile else ""
            body = (f"User-agent: *\nDisallow: /private/\n{delay}\nUser-agent: otherbot\nDisallow: /\n\n"
                    f"{evil}Sitemap: {self.url('/sitemap_index.xml')}\n")
            return 200, "text/plain", body.encode()
        if route == "/sitemap_index.xml":
            body = (f"<?xml version='1.0'?><sitemapindex {NS}><sitemap><loc>{self.url('/sitemap-1.xml.gz')}</loc>"
                    f"</sitemap><sitemap><loc>{self.url('/sitemap-2.xml')}</loc></sitemap></sitemapindex>")
            return 200, "application/xml", body.encode()
        half = self.orphans // 2
        orphans = self._orphans()
        if route == "/sitemap-1.xml.gz":
            return 200, "application/gzip", gzip.compress(self._urlset([n for n in orphans if n < half],
                                                                       ["/", "/item/0/1"]))
        if route == "/sitemap-2.xml":
            return 200, "application/xml", self._urlset([n for n in orphans if n >= half],
                                                        ["/private/listed", "/item/0/1?utm_source=map"])
        return 404, "text/plain", b"no such sitemap"

    def _urlset(self, orphans: list[int], extra: list[str]) -> bytes:
        """Orphan ``n`` was last modified on 2026-10-(n+1) (``lastmod``); the ``extra`` pages say
        nothing readable: the first none, the others nonsense."""
        entries = [(self.url(f"/orphan/{n}"), f"<lastmod>{self.lastmod(n)}</lastmod>") for n in orphans]
        entries += [(self.url(p), "" if i == 0 else "<lastmod>yesterday, probably</lastmod>")
                    for i, p in enumerate(extra)]
        body = "".join(f"<url><loc>{loc}</loc>{lastmod}</url>" for loc, lastmod in entries)
        return f"<?xml version='1.0' encoding='UTF-8'?><urlset {NS}>{body}</urlset>".encode()

    def _page(self, route: str, query: dict[str, list[str]]) -> str | None:
        bits = route.strip("/").split("/")
        if route == "/":
            links = [f"/section/{s}" for s in range(self.sections)] + [
                "/about#team", "/about?utm_source=home&utm_medium=link", "/calendar/2026/1", "/private/secret",
                "http://example.com/elsewhere", "mailto:someone@example.com", "#top",
                f"http://127.0.0.1:{self.port}/section/0?fbclid=abc"]
            if self.busy:
                links.append("/busy")
            if self.slashes:
                links += ["/about/", "/about////", "/section/0/?utm_source=x", "/item/0/0/", "/item/0/0"]
            if self.hostile:
                links += ["http://10.0.0.1/admin", "http://169.254.169.254/latest/meta-data/", "javascript:alert(1)",
                          "data:text/html,<b>x</b>", f"http://localhost:{self.port}/about"]
                links += [f"/about?utm_source=s{n}&fbclid={n}#frag{n}" for n in range(1000)]
            injected = ["/about?from=promo", "http://example.com/evil"] if self.injection else []
            return _html("Home", links + injected, texts=dict.fromkeys(injected, self.injection))
        if route == "/about":
            return _html("About", ["/", "/#footer"])
        if bits[0] == "section" and len(bits) == 2 and bits[1].isdigit() and int(bits[1]) < self.sections:
            s = int(bits[1])
            links = [f"/item/{s}/{i}" for i in range(self.items)] + [
                "/", f"/item/{s}/0?gclid=x1", f"{self.origin.upper()}/item/{s}/1#reviews"]
            return _html(f"Section {s}", links)
        if bits[0] == "item" and len(bits) == 3 and all(b.isdigit() for b in bits[1:]):
            s, i = int(bits[1]), int(bits[2])
            if s >= self.sections or i >= self.items:
                return None
            if query.get("view") == ["print"]:
                return _html(f"Item {s}/{i} (print)", [f"/section/{s}"], canonical=f"/item/{s}/{i}")
            links = [f"/section/{s}", f"/item/{s}/{(i + 1) % self.items}"]
            if i % 3 == 0:
                links.append(f"/item/{s}/{i}?view=print&utm_campaign=print")
            text = f"Text of Item {s}/{i}, revised." if (s, i) in self.revised else None
            return _html(f"Item {s}/{i}", links, canonical=f"/item/{s}/{i}", text=text)
        if bits[0] == "calendar" and len(bits) == 3 and all(b.lstrip("-").isdigit() for b in bits[1:]):
            y, m = int(bits[1]), int(bits[2])
            nxt = (y + m // 12, m % 12 + 1)
            prev = (y - (m == 1), 12 if m == 1 else m - 1)
            return _html(f"Calendar {y}-{m}", [f"/calendar/{nxt[0]}/{nxt[1]}", f"/calendar/{prev[0]}/{prev[1]}"])
        if bits[0] == "orphan" and len(bits) == 2 and bits[1].isdigit() and int(bits[1]) in self._orphans():
            return _html(f"Orphan {bits[1]}", ["/"])
        if bits[0] == "private":
            return _html("Private", ["/private/deeper"])
        return None


READ_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
"""The output schema of a crawl whose model is ``read_page``."""
READ_TASK = "Read the one sentence of this page's paragraph and return it as the field text."
SENTENCE = re.compile(r"Text of [^\"<\\\n]*?\.")


def read_page(request: dict) -> Reply:
    """A model that reads the page: the navigator finishes at once with the page's sentence as JSON
    (``{"text": ...}``, the data of ``READ_SCHEMA``), the planner agrees."""
    pages = [m for m in request.get("messages") or [] if SENTENCE.search(json.dumps(m.get("content")))]
    found = SENTENCE.search(json.dumps(pages[-1].get("content"))) if pages else None
    sentence = found.group(0) if found else "no sentence"
    answer = json.dumps({"text": sentence})
    tool = (request.get("tools") or [{}])[0].get("function", {}).get("name")
    if tool == "AgentOutput":
        state = {"evaluation_previous_goal": "Unknown", "memory": "", "next_goal": "finish"}
        return Reply.tool({"current_state": state, "action": [{"done": {"text": answer, "success": True,
                                                                               "evidence": [sentence]}}]})
    return Reply.tool({"observation": "page", "challenges": "", "done": True, "next_steps": "",
                       "final_answer": answer, "reasoning": "read", "web_task": True})


FOOTER = "A page of the generated crawl test site, served on 127.0.0.1 for browserd's tests and benchmarks."
"""The same on every page: enough text that a crawler's block-page heuristics (crawl4ai's: under 50
visible characters on a small page is a block page) take the page for a page."""


def _html(title: str, links: list[str], canonical: str | None = None, text: str | None = None,
          texts: dict[str, str | None] | None = None) -> str:
    head = f'<link rel="canonical" href="{canonical}">' if canonical else ""
    body = "".join(f'<li><a href="{href}">{escape((texts or {}).get(href) or f"link {n}")}</a></li>'
                   for n, href in enumerate(links))
    return (f"<!doctype html><html><head><title>{title}</title>{head}</head>"
            f"<body><h1>{title}</h1><p>{text or f'Text of {title}.'}</p><ul>{body}</ul><footer><p>{FOOTER}</p>"
            "</footer></body></html>")
