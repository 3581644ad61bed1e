"""DOM index benchmark: our capture against the bare snapshot and browser-use's in-page script.

``python -m bench.dom [--rounds N] [--viewport-expansion N]``

For each page (the real pages in ../shared/pages and a dozen MiniWoB++ tasks), in ONE Chromium,
side by side on the same loaded page, interleaved round by round:
  (a) the bare ``DOMSnapshot.captureSnapshot`` call with our parameters,
  (b) our full ``dom.capture`` + ``to_prompt``,
  (c) browser-use 0.5.11's in-page ``buildDomTree`` script (``Runtime.evaluate``, result by value),
      read at run time from the PyPI wheel (``pip download`` into bench/.cache, never committed).
Prompt characters compare element lists: ours (``elements_text``) against a Nanobrowser-format
rendering of (c)'s tree (``clickableElementsToString``: its default attributes, values cut at 15,
text of every visible top text node); the untrusted wrapper and scroll lines are left out of both.
Form controls (input/select/textarea/button) that (c) highlights must all be in ours.
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import time
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import dom
from bench.support import serve_path
from cdp import BrowserPool, CDPTimeout, Page, PoolConfig
from dom import snapshot

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "bench" / ".cache"


def shared_pages() -> Path:
    """``../shared/pages`` beside the checkout; from a git worktree, beside its main checkout (a
    worktree elsewhere found none and measured only the MiniWoB pages, 12 of the 36)."""
    mine = ROOT.parent / "shared" / "pages"
    if mine.is_dir():
        return mine
    found = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--path-format=absolute", "--git-common-dir"],
                           capture_output=True, text=True, check=False)
    common = Path(found.stdout.strip()) if found.returncode == 0 and found.stdout.strip() else None
    return common.parent.parent / "shared" / "pages" if common is not None else mine


SHARED = shared_pages()
WHEEL = "browser_use-0.5.11-py3-none-any.whl"
SCRIPT_PATH = "browser_use/dom/dom_tree/index.js"
MINIWOB_TASKS = [
    "click-button", "click-link", "click-dialog", "click-tab-2", "click-checkboxes", "click-option",
    "enter-text", "login-user", "choose-list", "social-media", "email-inbox", "book-flight",
]
OFFLINE = "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1"
NANO_ATTRIBUTES = [
    "title", "type", "checked", "name", "role", "value", "placeholder", "data-date-format", "alt", "aria-label",
    "aria-expanded", "data-state", "aria-checked",
]
FORM_TAGS = {"input", "select", "textarea", "button"}


# --- browser-use's script, from its wheel ----------------------------------------------------------

def browser_use_script() -> str:
    wheel = CACHE / WHEEL
    if not wheel.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "browser-use==0.5.11", "-d", str(CACHE)],
            check=True, capture_output=True,
        )
    with zipfile.ZipFile(wheel) as zf:
        return zf.read(SCRIPT_PATH).decode().strip().rstrip(";")


async def run_browser_use(page: Page, script: str, expansion: int) -> dict[str, Any]:
    args = {"doHighlightElements": False, "focusHighlightIndex": -1, "viewportExpansion": expansion, "debugMode": False}
    return await page.evaluate(f"({script})({json.dumps(args)})")


# --- Nanobrowser's rendering of browser-use's tree ---------------------------------------------------

def _cap(text: str, n: int) -> str:
    return text[:n] + "..." if len(text) > n else text


class NanoTree:
    """browser-use's node map as a tree, rendered the way Nanobrowser's clickableElementsToString does."""

    def __init__(self, result: dict[str, Any]) -> None:
        self.map: dict[str, dict[str, Any]] = result.get("map") or {}
        self.root = str(result.get("rootId"))

    def highlighted(self) -> list[dict[str, Any]]:
        return [n for n in self.map.values() if n.get("highlightIndex") is not None]

    def _text_till_next(self, node: dict[str, Any]) -> str:
        parts: list[str] = []

        def walk(n: dict[str, Any], top: bool) -> None:
            if not top and n.get("highlightIndex") is not None:
                return
            if n.get("type") == "TEXT_NODE":
                parts.append(n.get("text", ""))
                return
            for c in n.get("children", []):
                if c in self.map:
                    walk(self.map[c], False)

        walk(node, True)
        return "\n".join(parts).strip()

    def render(self) -> str:
        out: list[str] = []

        def process(nid: str, depth: int, parent: dict[str, Any] | None, under_highlight: bool) -> None:
            node = self.map.get(nid)
            if node is None:
                return
            if node.get("type") == "TEXT_NODE":
                if not under_highlight and parent and parent.get("isVisible") and parent.get("isTopElement"):
                    out.append("\t" * depth + node.get("text", ""))
                return
            nxt = depth
            if node.get("highlightIndex") is not None:
                nxt += 1
                out.append("\t" * depth + self._line(node))
            highlighted = under_highlight or node.get("highlightIndex") is not None
            for c in node.get("children", []):
                process(c, nxt, node, highlighted)

        process(self.root, 0, None, False)
        return "\n".join(out)

    def _line(self, node: dict[str, Any]) -> str:
        text = self._text_till_next(node)
        attrs = {k: str(v).strip() for k, v in (node.get("attributes") or {}).items() if k in NANO_ATTRIBUTES and str(v).strip()}
        ordered = [k for k in NANO_ATTRIBUTES if k in attrs]
        seen: dict[str, str] = {}
        for k in ordered:
            v = attrs[k]
            if len(v) > 5:
                if v in seen:
                    del attrs[k]
                else:
                    seen[v] = k
        if attrs.get("role") == node.get("tagName"):
            del attrs["role"]
        for k in ("aria-label", "placeholder", "title"):
            if k in attrs and attrs[k].lower() == text.lower():
                del attrs[k]
        attr_str = " ".join(f"{k}={_cap(v, 15)}" for k, v in attrs.items())
        line = f"[{node['highlightIndex']}]<{node.get('tagName')}"
        if attr_str:
            line += f" {attr_str}"
        if text:
            line += ("" if attr_str else " ") + f">{text}"
        elif not attr_str:
            line += " "
        return line + " />"


def form_signature(tag: str, attrs: dict[str, Any]) -> tuple[str, str, str, str]:
    return (tag, str(attrs.get("id", "")), str(attrs.get("name", "")), str(attrs.get("type", "")).lower())


# --- measuring one page ------------------------------------------------------------------------------

async def timed(coro: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = await coro
    return time.perf_counter() - started, result


async def ours(page: Page, expansion: int) -> tuple[dom.PageState, str]:
    state = await dom.capture(page, viewport_expansion=expansion)
    return state, state.to_prompt()


async def measure(page: Page, script: str, rounds: int, expansion: int) -> dict[str, Any]:
    times: dict[str, list[float]] = {"a": [], "b": [], "c": []}
    state = bu = None
    for _ in range(rounds):
        t, _snap = await timed(snapshot.take(page.session))
        times["a"].append(t)
        t, (state, _prompt) = await timed(ours(page, expansion))
        times["b"].append(t)
        t, bu = await timed(run_browser_use(page, script, expansion))
        times["c"].append(t)
    assert state is not None and bu is not None
    nodes = sum(len(d["nodes"]["parentIndex"]) for d in _snap["documents"])
    tree = NanoTree(bu)
    theirs_text = tree.render()
    ours_text = state.elements_text()
    theirs_forms = Counter(
        form_signature(n.get("tagName", ""), n.get("attributes") or {})
        for n in tree.highlighted() if n.get("tagName") in FORM_TAGS
    )
    ours_forms = Counter(form_signature(el.tag, el.attributes) for el in state.elements.values() if el.tag in FORM_TAGS)
    missing = theirs_forms - ours_forms
    med = {k: statistics.median(v) for k, v in times.items()}
    return {
        "nodes": nodes,
        "ms": {k: round(v * 1000, 1) for k, v in med.items()},
        "ours_over_snapshot": med["b"] / med["a"],
        "ours_over_browser_use": med["b"] / med["c"],
        "interactive": {"ours": len(state.elements), "browser_use": len(tree.highlighted())},
        "chars": {"ours": len(ours_text), "nanobrowser": len(theirs_text)},
        "chars_ratio": len(ours_text) / max(1, len(theirs_text)),
        "form_controls_missing": sum(missing.values()),
        "missing": [list(m) for m in missing],
    }


# --- pages ---------------------------------------------------------------------------------------------

def miniwob_dir() -> Path | None:
    import importlib.util

    spec = importlib.util.find_spec("miniwob")
    if spec is None or not spec.submodule_search_locations:
        return None
    html = Path(list(spec.submodule_search_locations)[0]) / "html"
    return html if html.is_dir() else None


async def load(page: Page, url: str) -> None:
    """Navigate; a page whose load event never comes (a hung subresource) is measured as it is."""
    print(f"bench.dom: {url}", file=sys.stderr)
    try:
        await page.goto(url, wait_until="load", timeout=15)
    except CDPTimeout:
        print(f"bench.dom: {url} did not finish loading; measuring it as it is", file=sys.stderr)


async def start_miniwob(page: Page) -> None:
    await page.evaluate("Math.seedrandom && Math.seedrandom('bench'); core.startEpisodeReal(); true")
    await asyncio.sleep(0.2)


async def bench(rounds: int, expansion: int) -> dict[str, Any]:
    script = browser_use_script()
    pages: dict[str, dict[str, Any]] = {}
    shared = sorted(p.relative_to(SHARED).as_posix() for p in SHARED.rglob("*.html")) if SHARED.is_dir() else []
    mw = miniwob_dir()
    config = PoolConfig(browsers=1, warm=0, chrome_args=[OFFLINE])
    async with BrowserPool(config) as pool, pool.lease() as lease:
        page = lease.page
        if shared:
            with serve_path(SHARED) as origin:
                for name in shared:
                    await load(page, f"{origin}/{name}")
                    pages[name] = await measure(page, script, rounds, expansion)
        if mw is not None:
            with serve_path(mw) as origin:
                for task in MINIWOB_TASKS:
                    await load(page, f"{origin}/miniwob/{task}.html")
                    await start_miniwob(page)
                    pages[f"miniwob/{task}"] = await measure(page, script, rounds, expansion)
    big = [p for p in pages.values() if p["nodes"] > 10_000]
    return {
        "pages": len(pages),
        "median_ours_over_snapshot": round(statistics.median(p["ours_over_snapshot"] for p in pages.values()), 3),
        "median_ours_over_browser_use": round(statistics.median(p["ours_over_browser_use"] for p in pages.values()), 3),
        "median_ours_over_browser_use_10k": round(statistics.median(p["ours_over_browser_use"] for p in big), 3) if big else None,
        "median_chars_ours_over_nanobrowser": round(statistics.median(p["chars_ratio"] for p in pages.values()), 3),
        "pages_over_10k": len(big),
        "form_controls_missing": sum(p["form_controls_missing"] for p in pages.values()),
        "viewport_expansion": expansion,
        "rounds": rounds,
        "per_page": {
            k: {kk: (round(vv, 3) if isinstance(vv, float) else vv) for kk, vv in v.items() if kk != "missing" or vv}
            for k, v in pages.items()
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--viewport-expansion", type=int, default=0)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(bench(args.rounds, args.viewport_expansion))))


if __name__ == "__main__":
    main()
