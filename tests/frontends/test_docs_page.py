"""``/docs`` works offline: the page and every asset it loads come from the API itself (issue 29:
Swagger UI came from a CDN, so the page was blank without the internet)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from fastapi.testclient import TestClient

from config import load_settings
from daemon.api import create_app


@pytest.fixture(scope="module")
def client(redis_url: str) -> Iterator[TestClient]:
    """No token, so the Host check is on (with a token it is only with BROWSERD_ALLOWED_HOSTS)."""
    app = create_app(load_settings(redis_url=redis_url))
    with TestClient(app, base_url="http://127.0.0.1:8080", follow_redirects=False) as c:
        yield c


def test_docs_load_nothing_from_another_host(client: TestClient) -> None:
    page = client.get("/docs")
    assert page.status_code == 200 and "SwaggerUIBundle" in page.text
    urls = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']|url:\s*["']([^"']+)["']""", page.text)
    urls = [a or b for a, b in urls]
    assert urls and all(not urlsplit(u).netloc for u in urls), urls  # every one relative to the API
    for url in urls:
        assert client.get(url).status_code == 200, url  # the assets and /openapi.json are served
    assert not re.search(r"https?://(?!127\.0\.0\.1)", page.text), page.text


def test_docs_assets_serve_only_their_folder(client: TestClient) -> None:
    assert client.get("/docs/assets/..%2f..%2f..%2fconfig/settings.py").status_code == 404
    assert client.get("/docs/assets/nope.js").status_code == 404
    assert client.get("/redoc").status_code == 404  # FastAPI's ReDoc page loads from a CDN: not served


def test_docs_are_refused_to_a_rebound_host(client: TestClient) -> None:
    for path in ("/docs", "/docs/assets/swagger-ui-bundle.js"):
        assert client.get(path, headers={"Host": "evil.example:8080"}).status_code == 421
