"""The console's recipes pages (the app in process, a real redis-server): listed, shown by
version, deleted with the CSRF token only; a recipe's text is shown as text, never markup."""

from __future__ import annotations

import asyncio
import html
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from tests.frontends.console import TOKEN, console_client, login
from workers.jobs.recipes.models import Recipe, RecipeStep
from workers.jobs.recipes.store import RecipeStore
from workers.jobs.store.connection import connect
from workers.jobs.store.keys import Keys

HOSTILE = '<script>alert(1)</script>'


@pytest.fixture
def client(redis_url: str) -> Iterator[TestClient]:
    with console_client(redis_url) as c:
        yield c


def save(redis_url: str, *recipes: Recipe, tenant: str | None = None) -> None:
    async def go() -> None:
        redis = connect(redis_url)
        try:
            store = RecipeStore(redis, Keys(), tenant=tenant)
            for recipe in recipes:
                await store.save(recipe)
        finally:
            await redis.aclose()

    asyncio.run(go())


def search(version: int, button: str) -> Recipe:
    steps = [RecipeStep(action="input_text", params={"locator": {"tag": "input", "attributes": {"name": "q"}},
                                                     "text": "{{query}}"}),
             RecipeStep(action="click_element", params={"locator": {"tag": "button", "name": button}})]
    return Recipe(name="shop-search", version=version, task=f'Search the shop for "{{{{query}}}}" {HOSTILE}',
                  start_url="http://127.0.0.1:9/shop", params={"query": "mug"}, steps=steps)


def test_recipes_are_listed_shown_by_version_and_deleted(client: TestClient, redis_url: str) -> None:
    assert client.get("/ui/recipes").status_code == 303, "a session is needed"
    csrf = login(client)
    assert "No recipes" in client.get("/ui/recipes").text
    save(redis_url, search(1, "Search"), search(2, "Find"))

    listing = client.get("/ui/recipes").text
    assert 'data-recipe="shop-search"' in listing and "<td>query</td>" in listing
    page = client.get("/ui/recipes/shop-search").text
    assert "v2" in page and "click_element button 'Find'" in html.unescape(page) and "{{query}}" in page
    assert HOSTILE not in page and "&lt;script&gt;alert(1)" in page
    assert "button 'Search'" in html.unescape(client.get("/ui/recipes/shop-search?version=1").text)

    assert client.get("/ui/recipes/nope").status_code == 404
    assert client.get("/ui/recipes/..%2F..%2Fjob").status_code == 404
    assert client.get("/ui/recipes/shop-search?version=9").status_code == 404
    assert client.post("/ui/recipes/shop-search/delete").status_code == 403, "no CSRF token"
    assert client.post("/ui/recipes/shop-search/delete", data={"csrf": csrf},
                       headers={"Origin": "http://evil.example"}).status_code == 403
    assert client.get("/ui/recipes/shop-search").status_code == 200
    gone = client.post("/ui/recipes/shop-search/delete", data={"csrf": csrf})
    assert gone.status_code == 303 and gone.headers["location"] == "/ui/recipes"
    assert client.get("/ui/recipes/shop-search").status_code == 404
    assert client.post("/ui/recipes/shop-search/delete", data={"csrf": csrf}).status_code == 404


def test_the_admins_console_shows_each_tenants_recipes_under_its_name(client: TestClient, redis_url: str) -> None:
    csrf = login(client)
    made = client.post("/v1/tenants", json={"name": "acme"}, headers={"Authorization": f"Bearer {TOKEN}"})
    assert made.status_code == 201, made.text
    save(redis_url, search(1, "Search"))
    save(redis_url, search(1, "Find"), tenant="acme")  # one name, two owners
    listing = client.get("/ui/recipes").text
    assert listing.count('data-recipe="shop-search"') == 2 and 'data-tenant="acme"' in listing
    assert 'href="/ui/recipes/shop-search?tenant=acme"' in listing
    theirs = client.get("/ui/recipes/shop-search?tenant=acme").text
    assert "button 'Find'" in html.unescape(theirs) and 'id="recipe-tenant">acme<' in theirs
    assert "button 'Search'" in html.unescape(client.get("/ui/recipes/shop-search").text)
    assert client.get("/ui/recipes/shop-search?tenant=beta").status_code == 404
    assert client.get("/ui/recipes/shop-search?tenant=..%2F..").status_code == 404
    gone = client.post("/ui/recipes/shop-search/delete?tenant=acme", data={"csrf": csrf})
    assert gone.status_code == 303
    assert client.get("/ui/recipes/shop-search?tenant=acme").status_code == 404
    assert client.get("/ui/recipes/shop-search").status_code == 200  # the operator's stays
