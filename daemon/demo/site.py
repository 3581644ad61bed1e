"""The demo shop: a catalogue with pagination, product pages and a search form.

Generated from one product list by a stdlib HTTP server on 127.0.0.1, so the demo needs no
network and no files: it is the "find the price of X on these product pages" job in miniature.
"""

from __future__ import annotations

import html
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

PAGE_SIZE = 8


@dataclass(frozen=True)
class Product:
    slug: str
    name: str
    price: float
    stock: int
    rating: float
    blurb: str


def _catalogue() -> list[Product]:
    rows = [
        ("trail-runner-2", "Trail Runner 2", 89.0, 14, 4.5, "Light trail shoes with a rock plate."),
        ("city-commuter", "City Commuter Backpack", 59.5, 3, 4.2, "20 litres, laptop sleeve, rain cover."),
        ("alpine-shell", "Alpine Shell Jacket", 219.0, 0, 4.8, "Three-layer waterproof shell."),
        ("camp-mug", "Enamel Camp Mug", 12.0, 120, 4.1, "Holds 350 ml; survives campfires."),
        ("headlamp-400", "Headlamp 400", 34.99, 42, 4.6, "400 lumens, USB-C charging."),
        ("down-vest", "Down Vest", 129.0, 7, 4.3, "650-fill down, packs into its pocket."),
        ("trek-poles", "Carbon Trekking Poles", 99.0, 11, 4.4, "Pair, 240 g each, flick locks."),
        ("water-filter", "Squeeze Water Filter", 39.0, 0, 4.7, "0.1 micron hollow fibre."),
        ("sleeping-pad", "Insulated Sleeping Pad", 149.0, 9, 4.5, "R-value 4.2, 7 cm thick."),
        ("bivy-sack", "Bivy Sack", 179.0, 2, 3.9, "Waterproof-breathable, 480 g."),
        ("stove-mini", "Mini Gas Stove", 45.0, 30, 4.2, "Boils a litre in 3.5 minutes."),
        ("merino-tee", "Merino T-Shirt", 65.0, 55, 4.6, "150 g/m² merino, odour resistant."),
        ("rain-pants", "Rain Pants", 79.0, 0, 4.0, "Full side zips over boots."),
        ("gaiters", "Trail Gaiters", 25.0, 18, 4.1, "Stretch fabric, hook to laces."),
        ("map-case", "Map Case", 15.5, 64, 3.8, "Clear window, neck strap."),
        ("first-aid", "First Aid Kit", 29.0, 22, 4.9, "Blister care and the basics."),
        ("tent-2p", "Two-Person Tent", 349.0, 5, 4.7, "Freestanding, 1.6 kg."),
        ("sun-hoody", "Sun Hoody", 55.0, 16, 4.4, "UPF 50, thumb loops."),
    ]
    return [Product(*row) for row in rows]


PRODUCTS = _catalogue()
BY_SLUG = {p.slug: p for p in PRODUCTS}


def _layout(title: str, body: str) -> str:
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)} · Demo Outfitters</title>
<style>body{{font-family:sans-serif;max-width:760px;margin:2em auto}} .card{{border:1px solid #ccc;padding:.6em;margin:.4em 0}}
nav a{{margin-right:1em}} .price{{font-weight:bold}}</style></head>
<body><header><a href="/">Demo Outfitters</a>
<form action="/search" method="get" role="search"><label>Search <input name="q" type="search"
 placeholder="e.g. jacket"></label> <button type="submit">Search</button></form></header>
<main>{body}</main></body></html>"""


def _card(p: Product) -> str:
    return (
        f'<div class="card product"><a class="name" href="/product/{p.slug}">{html.escape(p.name)}</a> '
        f'<span class="price">${p.price:.2f}</span></div>'
    )


def catalogue_page(page: int) -> str:
    pages = (len(PRODUCTS) + PAGE_SIZE - 1) // PAGE_SIZE
    items = PRODUCTS[(page - 1) * PAGE_SIZE : page * PAGE_SIZE]
    nav = []
    if page > 1:
        nav.append(f'<a rel="prev" href="/catalogue?page={page - 1}">Previous</a>')
    nav.append(f"<span>Page {page} of {pages}</span>")
    if page < pages:
        nav.append(f'<a rel="next" class="next" href="/catalogue?page={page + 1}">Next</a>')
    body = f"<h1>Catalogue</h1>{''.join(_card(p) for p in items)}<nav>{' '.join(nav)}</nav>"
    return _layout(f"Catalogue page {page}", body)


def product_page(p: Product) -> str:
    stock = f"In stock ({p.stock})" if p.stock else "Out of stock"
    body = (
        f'<article><h1 class="name">{html.escape(p.name)}</h1>'
        f'<p class="price">${p.price:.2f}</p><p class="stock">{stock}</p>'
        f'<p class="rating">Rated {p.rating} of 5</p><p class="blurb">{html.escape(p.blurb)}</p>'
        f'<button type="button" onclick="this.textContent=\'Added\'">Add to cart</button></article>'
        f'<p><a href="/catalogue">Back to the catalogue</a></p>'
    )
    return _layout(p.name, body)


def search_page(query: str) -> str:
    found = [p for p in PRODUCTS if query.lower() in (p.name + " " + p.blurb).lower()] if query else []
    listing = "".join(_card(p) for p in found) or "<p>No products match.</p>"
    return _layout(f"Search: {query}", f"<h1>Results for “{html.escape(query)}”</h1>{listing}")


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        status, text = 200, ""
        if url.path in ("/", "/catalogue"):
            try:
                page = max(1, int(query.get("page", ["1"])[0]))
            except ValueError:
                page = 1
            text = catalogue_page(page)
        elif url.path == "/search":
            text = search_page(query.get("q", [""])[0])
        elif url.path.startswith("/product/") and url.path[9:] in BY_SLUG:
            text = product_page(BY_SLUG[url.path[9:]])
        else:
            status, text = 404, _layout("Not found", "<h1>Not found</h1>")
        data = self.server.transform(text).encode()  # type: ignore[attr-defined]
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


SHOP_HOST = "127.0.0.1"
SHOP_NETWORK = f"{SHOP_HOST}/32"  # the runner opens it for the demo's worker


class DemoSite:
    """The shop on a free port of 127.0.0.1: ``with DemoSite() as site: site.url("/catalogue")``.

    ``transform`` rewrites every page before it is sent (tests serve a changed shop with it)."""

    def __init__(self, host: str = SHOP_HOST, port: int = 0, transform: Callable[[str], str] | None = None) -> None:
        self.httpd = ThreadingHTTPServer((host, port), _Handler)
        self.httpd.transform = transform or (lambda page: page)  # type: ignore[attr-defined]
        self.httpd.daemon_threads = True
        self.origin = f"http://{host}:{self.httpd.server_address[1]}"
        # The shop is on a private address, which jobs may not reach unless they open it.
        self.network = f"{host}/32"
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="demo-site", daemon=True)

    def url(self, path: str = "/") -> str:
        return self.origin + path

    def __enter__(self) -> DemoSite:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
