"""The docs site: its reference pages say what the code says, it builds strictly, it loads nothing
from another host, and the README stays short with links that resolve."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from docs.gen import PAGES, REGENERATE

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README_LIMIT = 15 * 1024


@pytest.mark.parametrize("name", sorted(PAGES))
def test_generated_reference_page_matches_the_code(name: str) -> None:
    committed = (DOCS / name).read_text() if (DOCS / name).exists() else ""
    assert committed == PAGES[name](), f"docs/{name} is stale: run `{REGENERATE}` and commit the result"


def test_site_builds_strictly_and_loads_nothing_from_another_host(tmp_path: Path) -> None:
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stdout + built.stderr
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 10 and (site / "reference" / "api" / "index.html").exists()
    for page in pages:
        html = page.read_text()
        loaded = []
        for tag in re.finditer(r"<(script|link|img|iframe|source)\b[^>]*>", html):
            url = re.search(r'\b(?:src|href)="([^"]*)"', tag.group(0))
            names_only = re.search(r'\brel="(?:canonical|alternate)"', tag.group(0))  # no resource is fetched
            if url and re.match(r"(?:https?:)?//", url.group(1)) and not names_only:
                loaded.append(url.group(1))
        assert not loaded, f"{page.relative_to(site)} loads {loaded}"
        assert "fonts.googleapis" not in html and "fonts.gstatic" not in html, page


def test_readme_is_short_and_its_links_resolve() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.encode()) <= README_LIMIT, f"README.md is {len(readme.encode())} bytes (at most {README_LIMIT})"
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", readme)
    local = [t for t in targets if not re.match(r"[a-z]+://", t)]
    assert local, "the README links into docs/"
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing, missing
    nav = (ROOT / "mkdocs.yml").read_text()
    unlisted = [t for t in local if t.startswith("docs/") and t.endswith(".md") and t[len("docs/"):] not in nav]
    assert not unlisted, f"README links to pages missing from mkdocs.yml's nav: {unlisted}"
