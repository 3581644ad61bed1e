"""Readable page text (light markdown) and the page's links, from the same snapshot.

Only rendered text counts (text without a layout object is hidden). Block structure comes from
tag names, since ``display`` is not among the requested styles; headings, list items and links are
marked the markdown way so an extraction prompt keeps the page's shape.
"""

from __future__ import annotations

from urllib.parse import urljoin

from dom.frames import Frame
from dom.model import Link
from dom.tree import TEXT, VISIBILITY, DocTree

BLOCKS = {
    "p", "div", "section", "article", "main", "aside", "header", "footer", "nav", "ul", "ol", "li", "dl", "dt",
    "dd", "table", "tr", "td", "th", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "form",
    "fieldset", "figure", "figcaption", "br", "hr", "label", "option", "details", "summary", "body", "button",
}
HEADINGS = {f"h{n}": "#" * n + " " for n in range(1, 7)}
SKIP_LINKS = ("javascript:", "mailto:", "tel:", "data:")


class _Context:
    """Nearest block and link ancestors of each parent, memoized: many text nodes share parents."""

    def __init__(self, doc: DocTree) -> None:
        self.doc = doc
        self.memo: dict[int, tuple[int, int]] = {}
        self.a = doc.s.id("A")

    def of(self, p: int) -> tuple[int, int]:
        hit = self.memo.get(p)
        if hit is not None:
            return hit
        doc, block, link, chain, i = self.doc, -1, -1, [], p
        while i >= 0 and (block < 0 or link < 0):
            if i in self.memo and block < 0:
                b, a = self.memo[i]
                block, link = b, link if link >= 0 else a
                break
            if doc.name[i] == self.a and link < 0:
                link = i
            if block < 0 and doc.tag(i) in BLOCKS:
                block = i
            chain.append(i)
            i = doc.parent[i]
        self.memo[p] = (block, link)
        return block, link


def _visible_texts(frame: Frame) -> list[tuple[int, str]]:
    """Rendered text nodes that are not hidden by an ancestor (opacity, aria-hidden, a clip)."""
    doc, context = frame.doc, frame.context
    visible = doc.s.id("visible")
    table, out = doc.s.table, []
    for k, i in enumerate(doc.lay_nodes):
        t = doc.lay_text[k]
        if doc.node_type[i] != TEXT or t < 0 or doc.styles[k][VISIBILITY] != visible:
            continue
        if context is not None:
            hidden, _, clip, _ = context[doc.parent[i]]
            if hidden or (clip is not None and _outside(doc.bounds[k], clip)):
                continue
        text = " ".join(table[t].split())
        if text:
            out.append((i, text))
    return out


def _outside(box: list[float], clip: tuple[float, float, float, float]) -> bool:
    return (
        box[0] >= clip[0] + clip[2] or box[1] >= clip[1] + clip[3]
        or box[0] + box[2] <= clip[0] or box[1] + box[3] <= clip[1]
    )


def frame_markdown(frame: Frame) -> str:
    doc = frame.doc
    ctx = _Context(doc)
    lines: list[str] = []
    current: list[str] = []
    block_now, link_now, link_text = -2, -1, []

    def flush_link() -> None:
        nonlocal link_now, link_text
        if link_now >= 0 and link_text:
            text = " ".join(link_text)
            href = doc.attributes(link_now).get("href", "")
            if href and not href.startswith(SKIP_LINKS) and not href.startswith("#"):
                current.append(f"[{text}]({urljoin(doc.base_url, href)})")
            else:
                current.append(text)
        link_now, link_text = -1, []

    def flush_block() -> None:
        flush_link()
        if current:
            prefix = ""
            if block_now >= 0:
                tag = doc.tag(block_now)
                prefix = HEADINGS.get(tag) or ("- " if tag == "li" else "")
            lines.append(prefix + " ".join(current))
            current.clear()

    for i, text in _visible_texts(frame):
        block, link = ctx.of(doc.parent[i])
        if block != block_now:
            flush_block()
            block_now = block
        if link != link_now:
            flush_link()
            link_now = link
        if link >= 0:
            link_text.append(text)
        else:
            current.append(text)
    flush_block()
    return "\n".join(lines)


def markdown(frames: list[Frame]) -> str:
    parts = [frame_markdown(f) for f in frames]
    return "\n\n".join(p for p in parts if p)


def links(frames: list[Frame]) -> list[Link]:
    """Every rendered ``<a href>`` of every frame, with absolute URLs, in document order."""
    out: list[Link] = []
    seen: set[tuple[str, str]] = set()
    for frame in frames:
        doc = frame.doc
        a, href_name = doc.s.id("A"), doc.s.id("href")
        for i in (i for i, t in enumerate(doc.name) if t == a):
            href = doc.attr(i, href_name)
            if not href or href.startswith(SKIP_LINKS) or doc.lay[i] < 0:
                continue
            attrs = doc.attributes(i)
            text = _link_text(doc, i) or attrs.get("aria-label", "") or attrs.get("title", "")
            link = Link(text=" ".join(text.split()), href=urljoin(doc.base_url, href))
            if (link.text, link.href) not in seen:
                seen.add((link.text, link.href))
                out.append(link)
    return out


def _link_text(doc: DocTree, i: int) -> str:
    parts = []
    for j in range(i + 1, doc.subtree_end(i, limit=200)):
        k = doc.lay[j]
        if doc.node_type[j] == TEXT and k >= 0 and doc.lay_text[k] >= 0:
            parts.append(doc.s(doc.lay_text[k]))
    return " ".join(" ".join(parts).split())


def canonical(frames: list[Frame]) -> str | None:
    """The top document's ``<link rel="canonical" href>``, absolute; None when it declares none."""
    if not frames:
        return None
    doc = frames[0].doc
    link, rel, href = doc.s.id("LINK"), doc.s.id("rel"), doc.s.id("href")
    for i in (i for i, t in enumerate(doc.name) if t == link):
        value = doc.attr(i, href)
        if value and "canonical" in (doc.attr(i, rel) or "").lower().split():
            return urljoin(doc.base_url, value.strip())
    return None
