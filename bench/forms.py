"""Form-control recall: of the controls Chromium shows and lets a user use, how many the index offers.

``python -m bench.forms [--pages DIR ...] [--limit N] [--misses]``

For each page (the real pages in ../shared/pages, the form fixtures in tests/fixtures/site/forms,
MiniWoB++'s form tasks, and any ``--pages`` folder of saved pages), the window is scrolled one
viewport at a time from the top; at each position an in-page walk (this benchmark's own yardstick,
never part of the index, which stays DOMSnapshot-based) lists every form control that is:

- a native control (input other than hidden, select, textarea, button) or a contenteditable host;
- enabled (not ``:disabled``, not ``aria-disabled=true``);
- visible: its visibility is ``visible``, no ancestor has opacity 0, and ``elementFromPoint`` at
  one of nine points of its on-screen box hits it, something inside it, or one of its labels (a
  floating label over a field is that field's). A control with opacity 0 of its own counts when
  it is hit there and its wrapper is visible: a styled checkbox or file button shows the wrapper
  and takes the click itself.

Two figures: ``form_controls_offered_ratio``, every control seen at any position against one
whole-page capture (``viewport_expansion=-1``) taken at the top, the way the issue's held-out check
read the page; and ``viewport_offered_ratio``, at each position the controls seen there against a
capture of the viewport (``viewport_expansion=0``). A control counts as offered when the index
offers it, one of its labels (the label stands in for an input hidden under its styling), or the
link, button or label around it (a checkbox drawn inside a filter link is clicked through the link).
Prints one JSON line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import dom
from bench.dom import OFFLINE, SHARED, load, miniwob_dir, start_miniwob
from bench.support import serve_path
from cdp import BrowserPool, CDPException, EvaluationError, Page, PoolConfig

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "site"
FORM_TASKS = ["enter-text", "login-user", "book-flight", "click-checkboxes", "choose-list", "enter-date"]
MAX_POSITIONS = 12  # viewports walked down from the top on a long page
MISSES_SHOWN = 100

# The yardstick. Returns [[control, stand-in, ...], ...] for the controls usable at this scroll
# position; stand-ins are the control's labels and the link, button or label it sits inside.
VISIBLE_CONTROLS = r"""
(() => {
  const W = innerWidth, H = innerHeight;
  const deepest = (x, y) => {
    let hit = document.elementFromPoint(x, y);
    while (hit && hit.shadowRoot) {
      const inner = hit.shadowRoot.elementFromPoint(x, y);
      if (!inner || inner === hit) break;
      hit = inner;
    }
    return hit;
  };
  const up = (n) => n.parentElement || (n.parentNode && n.parentNode.host) || null;
  const faded = (el) => { for (let a = up(el); a; a = up(a)) if (getComputedStyle(a).opacity === '0') return true; return false; };
  const OUTER = 'a[href], button, label, [role=button], [role=link], [role=checkbox], [role=option], [role=menuitem], [role=tab]';
  const all = [];
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) walk(el.shadowRoot);
      const tag = el.tagName;
      const native = tag === 'INPUT' || tag === 'SELECT' || tag === 'TEXTAREA' || tag === 'BUTTON';
      const host = el.isContentEditable && !(up(el) && up(el).isContentEditable);
      if (native && !(tag === 'INPUT' && el.type === 'hidden')) all.push(el);
      else if (host) all.push(el);
    }
  };
  walk(document);
  const out = [];
  for (const el of all) {
    if (el.matches(':disabled') || (el.getAttribute('aria-disabled') || '').toLowerCase() === 'true') continue;
    const st = getComputedStyle(el);
    if (st.visibility !== 'visible' || faded(el)) continue;
    const r = el.getBoundingClientRect();
    const x1 = Math.max(r.left, 0), y1 = Math.max(r.top, 0), x2 = Math.min(r.right, W), y2 = Math.min(r.bottom, H);
    if (x2 - x1 < 1 || y2 - y1 < 1) continue;
    const labels = el.labels ? Array.from(el.labels) : [];
    let hit = false;
    for (const fx of [0.5, 0.2, 0.8]) for (const fy of [0.5, 0.2, 0.8]) {
      if (hit) break;
      const h = deepest(x1 + (x2 - x1) * fx, y1 + (y2 - y1) * fy);
      if (!h) continue;
      if (h === el || el.contains(h) || labels.some((l) => l === h || l.contains(h))) hit = true;
    }
    if (!hit) continue;
    if (st.opacity === '0') {  // styled: the wrapper must show and hold the control's centre
      const w = up(el);
      if (!w) continue;
      const b = w.getBoundingClientRect(), cx = (r.left + r.right) / 2, cy = (r.top + r.bottom) / 2;
      if (b.width < 1 || b.height < 1 || cx < b.left || cx > b.right || cy < b.top || cy > b.bottom) continue;
    }
    // the control inside another one (a checkbox drawn inside a filter link) acts through it
    const outer = up(el) && up(el).closest(OUTER);
    out.push([el, ...labels, ...(outer ? [outer] : [])]);
  }
  return out;
})()
"""


async def _backend_ids(page: Page, object_id: str) -> list[int]:
    props = await page.session.send("Runtime.getProperties", {"objectId": object_id, "ownProperties": True})
    ids: list[int] = []
    for p in props.get("result", []):
        oid = (p.get("value") or {}).get("objectId")
        if p.get("name", "").isdigit() and oid:
            node = await page.session.send("DOM.describeNode", {"objectId": oid})
            ids.append(node["node"]["backendNodeId"])
    return ids


async def visible_controls(page: Page) -> list[tuple[int, ...]]:
    """Backend node ids of each usable control at this position, followed by its labels'."""
    reply = await page.session.send("Runtime.evaluate", {"expression": VISIBLE_CONTROLS, "returnByValue": False})
    array = reply["result"].get("objectId")
    if array is None:
        return []
    props = await page.session.send("Runtime.getProperties", {"objectId": array, "ownProperties": True})
    out = []
    for p in props.get("result", []):
        oid = (p.get("value") or {}).get("objectId")
        if p.get("name", "").isdigit() and oid:
            out.append(tuple(await _backend_ids(page, oid)))
    await page.session.send("Runtime.releaseObject", {"objectId": array})
    return out


async def describe(page: Page, backend_id: int) -> dict[str, Any]:
    node = (await page.session.send("DOM.describeNode", {"backendNodeId": backend_id}))["node"]
    attrs = node.get("attributes", [])
    a = dict(zip(attrs[0::2], attrs[1::2]))
    return {"tag": node["nodeName"].lower(), **{k: a[k] for k in ("type", "id", "name", "class") if a.get(k)}}


def _offered(state: dom.PageState) -> set[int]:
    return {el.backend_node_id for el in state.elements.values()}


async def measure(page: Page) -> dict[str, Any]:
    """Walk the page down a viewport at a time; compare what shows with what the index offers."""
    await page.evaluate("scrollTo(0, 0); true")
    height, step = await page.evaluate("[document.documentElement.scrollHeight, innerHeight]")
    seen: dict[int, tuple[int, ...]] = {}
    where: dict[int, int] = {}
    shown = offered_here = 0
    missing_here: list[int] = []
    for n in range(MAX_POSITIONS):
        y = n * step
        if n and y >= height:
            break
        await page.evaluate(f"scrollTo(0, {y}); true")
        controls = await visible_controls(page)
        state = await dom.capture(page, viewport_expansion=0)
        offered = _offered(state)
        for c in controls:
            seen.setdefault(c[0], c)
            where.setdefault(c[0], y)
            shown += 1
            if offered & set(c):
                offered_here += 1
            else:
                missing_here.append(c[0])
    await page.evaluate("scrollTo(0, 0); true")
    whole = _offered(await dom.capture(page, viewport_expansion=-1))
    missing = [b for b, c in seen.items() if not whole & set(c)]
    return {
        "controls": len(seen),
        "offered": len(seen) - len(missing),
        "viewport_controls": shown,
        "viewport_offered": offered_here,
        "missing": [{**(await describe(page, b)), "y": where[b]} for b in missing],
        "missing_viewport": [{**(await describe(page, b)), "y": where[b]} for b in dict.fromkeys(missing_here)],
    }


def _ratio(a: int, b: int) -> float | None:
    return round(a / b, 4) if b else None


def summary(pages: dict[str, dict[str, Any]]) -> dict[str, Any]:
    controls = sum(p["controls"] for p in pages.values())
    offered = sum(p["offered"] for p in pages.values())
    vc = sum(p["viewport_controls"] for p in pages.values())
    vo = sum(p["viewport_offered"] for p in pages.values())
    return {
        "pages": len(pages),
        "pages_with_controls": sum(1 for p in pages.values() if p["controls"]),
        "controls": controls,
        "form_controls_offered_ratio": _ratio(offered, controls),
        "viewport_offered_ratio": _ratio(vo, vc),
    }


async def run_group(page: Page, root: Path, names: list[str], miniwob: bool = False) -> dict[str, dict[str, Any]]:
    pages: dict[str, dict[str, Any]] = {}
    with serve_path(root) as origin:
        for name in names:
            await load(page, f"{origin}/{name}")
            try:
                if miniwob:
                    await start_miniwob(page)
                pages[name] = await measure(page)
            except (CDPException, EvaluationError) as exc:  # a page that breaks the yardstick is reported, not fatal
                print(f"bench.forms: {name}: {exc}", file=sys.stderr)
    return pages


async def bench(extra: list[Path], limit: int | None) -> dict[str, Any]:
    groups: list[tuple[str, Path, list[str], bool]] = []
    if SHARED.is_dir():
        groups.append(("shared", SHARED, sorted(p.relative_to(SHARED).as_posix() for p in SHARED.rglob("*.html")), False))
    forms = FIXTURES / "forms"
    if forms.is_dir():
        groups.append(("fixtures", FIXTURES, sorted(f"forms/{p.name}" for p in forms.glob("*.html")), False))
    mw = miniwob_dir()
    if mw is not None:
        groups.append(("miniwob", mw, [f"miniwob/{t}.html" for t in FORM_TASKS], True))
    for d in extra:
        names = sorted(p.relative_to(d).as_posix() for p in d.rglob("*.html"))
        groups.append((d.name, d, names[:limit] if limit else names, False))
    config = PoolConfig(browsers=1, warm=0, chrome_args=[OFFLINE])
    results: dict[str, dict[str, dict[str, Any]]] = {}
    async with BrowserPool(config) as pool, pool.lease() as lease:
        for label, root, names, miniwob in groups:
            results[label] = await run_group(lease.page, root, names, miniwob)
    everything = {f"{g}/{k}": v for g, pages in results.items() for k, v in pages.items()}
    missing = [{"page": k, **m} for k, v in everything.items() for m in v["missing"]]
    missing_vp = [{"page": k, **m} for k, v in everything.items() for m in v["missing_viewport"]]
    return {
        **summary(everything),
        "groups": {g: summary(pages) for g, pages in results.items()},
        "missing": missing[:MISSES_SHOWN],
        "missing_viewport": missing_vp[:MISSES_SHOWN],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=Path, action="append", default=[], help="another folder of saved pages")
    parser.add_argument("--limit", type=int, default=None, help="pages taken from each --pages folder")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(bench(args.pages, args.limit))))


if __name__ == "__main__":
    main()
